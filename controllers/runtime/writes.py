"""The writes every controller makes, each one recorded in the cache it reads (read your writes).

- ``patch_fenced``: a merge patch carrying the object's resourceVersion as read, so the API
  server applies it only to that version (409 Conflict otherwise: the rollout fence of
  docs/architecture.md); ``None`` on a conflict or when the object is gone;
- ``create`` and ``delete``: the answer, or the delete request, goes into the overlay.

Writes go through ``Kube`` (the lease fence admits each one and bounds its timeout), or through
a ``ConcurrentWriter`` for one-write-per-cluster passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.client.kube import JSON, Conflict, Kube, NotFound
from ocm_rollout.controllers.common.wire import fenced
from ocm_rollout.controllers.runtime.cache import Cache


def _name(obj: Mapping[str, Any]) -> tuple[str, str | None]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("name") or ""), (str(metadata.get("namespace")) if metadata.get("namespace") else None)


class Writes:
    """Fenced and recorded writes through one client (``kube``) or a writer pool per call."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    async def patch_fenced(
        self, cache: Cache, obj: JSON, patch: JSON, *, subresource: str | None = None, via: Any = None
    ) -> JSON | None:
        """Patch ``obj`` as read (its resourceVersion as precondition); the new object, or None
        on a conflict or when it is gone (the watch brings the newer state, which re-queues)."""
        name, namespace = _name(obj)
        sender = via if via is not None else self.kube
        try:
            updated: JSON = await sender.patch(
                cache.resource, name, fenced(patch, obj), namespace, subresource=subresource
            )
        except (Conflict, NotFound):
            return None
        cache.wrote(updated)
        return updated

    async def patch(self, cache: Cache, obj: JSON, patch: JSON | list[JSON], *, subresource: str | None = None) -> JSON:
        """An unfenced patch (labels of a decision page, a status that owns no rollout state)."""
        name, namespace = _name(obj)
        updated = await self.kube.patch(cache.resource, name, patch, namespace, subresource=subresource)
        cache.wrote(updated)
        return updated

    async def replace(self, cache: Cache, body: JSON) -> JSON:
        """An update (PUT) of ``body`` as a whole, fenced on the resourceVersion it carries."""
        _, namespace = _name(body)
        whole = {**body, "apiVersion": cache.resource.api_version, "kind": cache.resource.kind}
        updated: JSON = await self.kube.replace(cache.resource, whole, namespace)
        cache.wrote(updated)
        return updated

    async def create(self, cache: Cache, body: JSON, namespace: str | None, *, via: Any = None) -> JSON:
        """Create; AlreadyExists (``Conflict``) and every other error are the caller's."""
        sender = via if via is not None else self.kube
        created: JSON = await sender.create(cache.resource, body, namespace)
        cache.wrote(created, created=True)
        return created

    async def delete(self, cache: Cache, obj: JSON, *, via: Any = None, uid: str | None = None) -> None:
        """Delete (NotFound is fine); the cache hides or marks it at once (its delete policy)."""
        name, namespace = _name(obj)
        if via is not None:
            await via.delete(cache.resource, name, namespace, uid=uid)
        else:
            await self.kube.delete(cache.resource, name, namespace, preconditions={"uid": uid} if uid else None)
        cache.delete_requested(obj)
