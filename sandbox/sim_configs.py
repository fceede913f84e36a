"""The simulation's config objects of kinds other than AddOnDeploymentConfig and AddOnTemplate
(those two have their own caches): one list-and-watch cache per (group, resource) some
ClusterManagementAddOn names as a config type and the hub serves (``follow``), through the
resource discovery found for it (its group's preferred version). A cache stops, forgetting its
objects, when its type is no longer wanted or served."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Set

from ocm_rollout.client.kube import JSON, Kube, NotFound, Resource
from ocm_rollout.client.watchcache import WatchCache

log = logging.getLogger(__name__)

GroupResource = tuple[str, str]
ConfigChange = Callable[[GroupResource, str, JSON, JSON | None], None]
"""(config type, event type, object, previous object)."""


class ConfigSource:
    """See the module docstring."""

    def __init__(self, kube: Kube, on_change: ConfigChange) -> None:
        self.kube = kube
        self.on_change = on_change
        self.caches: dict[GroupResource, WatchCache] = {}
        self._tasks: dict[GroupResource, asyncio.Task[None]] = {}

    def follow(
        self, wanted: Set[GroupResource], served: Mapping[GroupResource, Resource], stop: asyncio.Event
    ) -> list[tuple[GroupResource, JSON]]:
        """Start the caches of the wanted served types, stop the others; the objects of the
        stopped caches (what depends on them is to be looked at again)."""
        gone: list[tuple[GroupResource, JSON]] = []
        for pair in [p for p in self.caches if p not in wanted or p not in served]:
            cache = self.caches.pop(pair)
            task = self._tasks.pop(pair, None)
            if task is not None:
                task.cancel()
            gone.extend((pair, obj) for obj in cache.items())
            log.info("stopped watching config type", extra={"group": pair[0], "resource": pair[1]})
        for pair in sorted(wanted):
            resource = served.get(pair)
            if resource is None or pair in self.caches:
                continue
            cache = WatchCache(self.kube, resource, on_change=self._callback(pair))
            self.caches[pair] = cache
            self._tasks[pair] = asyncio.create_task(cache.run(stop), name=f"sim-informer-config-{resource.plural}")
            log.info("watching config type", extra={"group": pair[0], "resource": pair[1]})
        return gone

    def _callback(self, pair: GroupResource) -> Callable[[str, JSON, JSON | None], None]:
        def changed(event_type: str, obj: JSON, previous: JSON | None) -> None:
            self.on_change(pair, event_type, obj, previous)

        return changed

    def get(self, pair: GroupResource, namespace: str, name: str) -> JSON | None:
        cache = self.caches.get(pair)
        return None if cache is None else cache.get(name, namespace or None)

    async def read(self, resource: Resource, pair: GroupResource, namespace: str, name: str) -> JSON | None:
        """The object as stored now (None: none, or no such API any more)."""
        try:
            obj = await self.kube.get_or_none(resource, name, (namespace or None) if resource.namespaced else None)
        except NotFound:
            return None
        cache = self.caches.get(pair)
        if obj is not None and cache is not None:
            cache.remember(obj)
        return obj

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
