"""Caches of the configuration objects add-ons name (AddOnDeploymentConfigs and any other kind).

A ClusterManagementAddOn or a ManagedClusterAddOn may name configurations of any (group,
resource). ``ConfigCaches`` keeps one list-and-watch cache (``ocm_rollout.client.watchcache``)
per configuration type in use: AddOnDeploymentConfigs from the start, any other type once a
reconcile asks for it and the API server's discovery says it serves it. Each cache calls
``on_change(group, resource, object)`` for every change, so the controller re-queues what
depends on that object.

``spec_hash`` answers the hash of a stored configuration (docs/behaviour/addons.md 5.4), memoised per object
version: ``""`` for an object that does not exist, None for a type the API server does not
serve (or that is still being listed), which the core reads as "keep the hash already recorded".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.api.constants import ADDON_DEPLOYMENT_CONFIG_RESOURCE, ADDON_GROUP
from ocm_rollout.client.kube import ADDON_DEPLOYMENT_CONFIGS, JSON, Kube, KubeError, Resource
from ocm_rollout.client.watchcache import WatchCache

log = logging.getLogger(__name__)

GroupResource = tuple[str, str]
OnConfigChange = Callable[[str, str, JSON], None]
# How long an unanswered discovery is remembered before it is asked again.
DISCOVERY_RETRY_SECONDS = 60.0


class ConfigCaches:
    """See the module docstring. Start with ``start()``; stop with ``stop()``."""

    def __init__(self, kube: Kube, on_change: OnConfigChange, clock: Callable[[], float]) -> None:
        self.kube = kube
        self.on_change = on_change
        self.clock = clock
        self.caches: dict[GroupResource, WatchCache] = {}
        self.tasks: dict[GroupResource, asyncio.Task[None]] = {}
        # Types the API server does not serve (or discovery failed), with when that was learnt.
        self.unserved: dict[GroupResource, float] = {}
        self.pending: set[GroupResource] = set()
        self._hashes: dict[tuple[str, str], str] = {}  # (uid, resourceVersion) -> hash
        # Configurations whose spec cannot be hashed as Go would (e.g. an integer beyond float64):
        # (group, resource, namespace, name) -> why. Their recorded hash is kept.
        self.unhashable: dict[tuple[str, str, str, str], str] = {}
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        self._started = True
        self._add((ADDON_GROUP, ADDON_DEPLOYMENT_CONFIG_RESOURCE), ADDON_DEPLOYMENT_CONFIGS)

    def close(self) -> None:
        """Stop the caches' watches (the tasks end at their next await)."""
        for task in self.tasks.values():
            task.cancel()
        self.tasks.clear()

    async def stop(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        for task in self.tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()

    async def wait_synced(self) -> None:
        await asyncio.gather(*(cache.synced.wait() for cache in self.caches.values()))

    def _add(self, key: GroupResource, resource: Resource) -> None:
        group, plural = key

        def changed(_event: str, obj: JSON, _previous: JSON | None) -> None:
            self.on_change(group, plural, obj)

        cache = WatchCache(self.kube, resource, on_change=changed)
        self.caches[key] = cache
        self.tasks[key] = asyncio.create_task(cache.run(), name=f"addon-config-cache-{plural}")

    # -- discovery ------------------------------------------------------------------------------
    def want(self, group: str, resource: str) -> None:
        """Make sure the type is cached if the API server serves it (discovery runs in the
        background; its answer re-queues the dependants through ``on_change``)."""
        key = (group, resource)
        if not self._started or key in self.caches or key in self.pending:
            return
        learnt = self.unserved.get(key)
        if learnt is not None and self.clock() - learnt < DISCOVERY_RETRY_SECONDS:
            return
        self.pending.add(key)
        asyncio.get_running_loop().create_task(self._discover(key), name=f"addon-discover-{resource}")

    async def _discover(self, key: GroupResource) -> None:
        group, plural = key
        try:
            resource = await self._find(group, plural)
        except KubeError as exc:
            log.warning("cannot discover a configuration type", extra={"group": group, "resource": plural, "error": exc.message})
            resource = None
        finally:
            self.pending.discard(key)
        if resource is None:
            self.unserved[key] = self.clock()
            return
        self.unserved.pop(key, None)
        if key not in self.caches:
            self._add(key, resource)

    async def _find(self, group: str, plural: str) -> Resource | None:
        if group:
            try:
                info = await self.kube.request("GET", f"/apis/{group}")
            except KubeError as exc:
                if exc.status == 404:
                    return None
                raise
            preferred = (info.get("preferredVersion") or {}).get("version")
            versions = [str(v.get("version")) for v in info.get("versions") or [] if v.get("version")]
            if preferred:
                versions = [str(preferred)] + [v for v in versions if v != preferred]
        else:
            versions = ["v1"]
        for version in versions:
            path = f"/apis/{group}/{version}" if group else "/api/v1"
            listing = await self.kube.request("GET", path)
            for item in listing.get("resources") or []:
                if item.get("name") == plural:
                    return Resource(group, version, plural, str(item.get("kind") or ""), namespaced=bool(item.get("namespaced")))
        return None

    # -- reading --------------------------------------------------------------------------------
    def served(self, group: str, resource: str) -> bool:
        """Is this type cached and fully listed (so a missing object really is missing)?"""
        cache = self.caches.get((group, resource))
        return cache is not None and cache.synced.is_set()

    def get(self, group: str, resource: str, namespace: str, name: str) -> JSON | None:
        cache = self.caches.get((group, resource))
        if cache is None:
            self.want(group, resource)
            return None
        return cache.get(name, namespace or None)

    def spec_hash(self, group: str, resource: str, namespace: str, name: str) -> str | None:
        if not self.served(group, resource):
            self.want(group, resource)
            return None
        obj = self.get(group, resource, namespace, name)
        if obj is None:
            return ""
        meta = obj.get("metadata") or {}
        memo = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if memo[1]:
            known = self._hashes.get(memo)
            if known is not None:
                return known
        key = (group, resource, namespace, name)
        try:
            value = spec_hash(obj)
        except (ValueError, TypeError) as exc:
            self.unhashable[key] = str(exc)
            return None
        self.unhashable.pop(key, None)
        if memo[1]:
            if len(self._hashes) > 100_000:
                self._hashes.clear()
            self._hashes[memo] = value
        return value
