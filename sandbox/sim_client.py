"""The few writes the simulated agents make, over the official client.

Each returns the stored object, for ``WatchCache.remember`` (ocm_rollout.client.watchcache: the
list-and-watch caches the agents and the live view read from).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ocm_rollout.client.kube import JSON, Conflict, Kube, Resource
from ocm_rollout.client.watchcache import resource_version


class Writer:
    """The writes the agents make, each returning the stored object (for ``WatchCache.remember``)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    async def create_if_absent(self, resource: Resource, body: JSON, namespace: str | None = None) -> JSON | None:
        """Create ``body``; an existing object of that name is left as it is (returns None)."""
        try:
            return await self.kube.create(resource, body, namespace)
        except Conflict:
            return None

    async def replace_status(self, resource: Resource, obj: Mapping[str, Any], status: JSON) -> JSON:
        """PUT the status subresource with ``obj``'s resourceVersion (409 on a stale copy)."""
        meta = obj.get("metadata") or {}
        body = dict(obj)
        body["status"] = status
        path = resource.path(meta.get("namespace") or None, str(meta["name"]), "status")
        return await self.kube.request("PUT", path, body=body, query={"fieldManager": self.kube.field_manager})

    async def merge_patch(self, resource: Resource, obj: Mapping[str, Any], patch: JSON) -> JSON:
        """A merge patch of the main resource, guarded by ``obj``'s resourceVersion."""
        meta = obj.get("metadata") or {}
        guarded = json.loads(json.dumps(patch))
        guarded.setdefault("metadata", {})["resourceVersion"] = resource_version(obj)
        return await self.kube.patch(resource, str(meta["name"]), guarded, meta.get("namespace") or None)
