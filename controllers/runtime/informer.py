"""Live caches of watched resources, fed by kopf.

Which cache for which kind, in a kopf controller: kopf-fed informers for kinds with few objects
that change rarely (Placements, PlacementDecisions, ManifestWorkReplicaSets, ...), where kopf's
per-event cost does not matter; ``InformerSet.watch(..., kube=...)`` for kinds with one object
per cluster (ManagedClusters, AddOnPlacementScores), an informer with the same interface fed by a
``watchcache.WatchCache`` instead of kopf: kopf's per-event CPU cost (about that of one write)
times ten thousand clusters made a fleet's registration cost each controller minutes of CPU;
``watchcache.WatchCache`` directly for high-churn kinds such as ManifestWorks. Code that runs
without kopf (the simulated agents) uses ``WatchCache`` for every kind.

kopf runs no event handler before every resource that has an index handler has been fully
listed, so once any handler of an ``InformerSet`` has run, every kopf-fed cache of the set is
complete; ``synced`` is set once that happened and every WatchCache-fed one has listed too.
The controllers' workers read from these caches and never reconcile before that moment: a
reconcile never sees a half-listed world (which could, for example, drop decisions of clusters
not listed yet).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterator
from typing import Any

import kopf

from ocm_rollout.client.kube import JSON, Kube, Resource
from ocm_rollout.client.watchcache import WatchCache

EventCallback = Callable[[str, JSON], None]
"""Called with the event type ("ADDED", "MODIFIED", "DELETED", or "" for the initial listing)
and the object, after the cache has been updated."""

_Key = tuple[str, str]  # (namespace or "", name)


class Informer:
    """The cache of one resource kind. Read it only after ``InformerSet.synced`` is set."""

    def __init__(self, resource: Resource, index_id: str) -> None:
        self.resource = resource
        self.index_id = index_id
        self._index: kopf.Index[_Key, JSON] | None = None
        self.callbacks: list[EventCallback] = []

    def _bind(self, index: kopf.Index[_Key, JSON]) -> None:
        self._index = index

    @property
    def bound(self) -> bool:
        return self._index is not None

    def get(self, name: str, namespace: str | None = None) -> JSON | None:
        if self._index is None:
            return None
        key = (namespace or "", name)
        if key not in self._index:
            return None
        for body in self._index[key]:
            return body
        return None

    def __iter__(self) -> Iterator[JSON]:
        if self._index is None:
            return
        for key in list(self._index):
            yield from self._index[key]

    def select(self, namespace: str | None = None, *, labels: dict[str, str] | None = None) -> list[JSON]:
        """Objects (optionally of one namespace, optionally with these exact labels), by name."""
        result = []
        for body in self:
            meta = body.get("metadata") or {}
            if namespace is not None and (meta.get("namespace") or "") != namespace:
                continue
            if labels:
                have = meta.get("labels") or {}
                if any(have.get(k) != v for k, v in labels.items()):
                    continue
            result.append(body)
        result.sort(key=lambda b: ((b["metadata"].get("namespace") or ""), b["metadata"]["name"]))
        return result

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)


class CachedInformer(Informer):
    """An informer fed by a ``WatchCache`` (list and watch without kopf), same interface."""

    def __init__(self, resource: Resource, cache: WatchCache) -> None:
        super().__init__(resource, index_id="")
        self.cache = cache
        cache.callbacks.append(self._relay)

    def _relay(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        for callback in self.callbacks:
            callback(event_type, obj)

    @property
    def bound(self) -> bool:
        return self.cache.synced.is_set()

    def get(self, name: str, namespace: str | None = None) -> JSON | None:
        return self.cache.get(name, namespace)

    def __iter__(self) -> Iterator[JSON]:
        yield from list(self.cache.objects.values())

    def __len__(self) -> int:
        return len(self.cache.objects)


class InformerSet:
    """The informers of one controller, registered on one kopf registry."""

    def __init__(self, registry: kopf.OperatorRegistry, prefix: str) -> None:
        self.registry = registry
        self.prefix = prefix
        self.informers: dict[Resource, Informer] = {}
        self.cached: list[CachedInformer] = []
        self.synced = asyncio.Event()
        self._kopf_bound = False
        self._tasks: list[asyncio.Task[None]] = []
        self._stop: asyncio.Event | None = None

    def watch(self, resource: Resource, callback: EventCallback | None = None, *, kube: Kube | None = None) -> Informer:
        """Cache ``resource`` and call ``callback`` on each of its events; with ``kube``, through
        a WatchCache on that client instead of kopf (for kinds with one object per cluster)."""
        informer = self.informers.get(resource)
        if informer is None:
            if kube is not None:
                cached = CachedInformer(resource, WatchCache(kube, resource))
                if not self.cached:
                    self._register_lifecycle()
                self.cached.append(cached)
                informer = cached
            else:
                index_id = f"{self.prefix}_{resource.plural}_{resource.version}".replace("-", "_")
                informer = Informer(resource, index_id)
                self._register(informer)
            self.informers[resource] = informer
        if callback is not None:
            informer.callbacks.append(callback)
        return informer

    def _bind_all(self, kwargs: dict[str, Any]) -> None:
        if self._kopf_bound:
            return
        for informer in self.informers.values():
            if not isinstance(informer, CachedInformer):
                informer._bind(kwargs[informer.index_id])
        self._kopf_bound = True
        self._check_synced()

    def _check_synced(self) -> None:
        kopf_fed = any(not isinstance(i, CachedInformer) for i in self.informers.values())
        if (self._kopf_bound or not kopf_fed) and all(c.bound for c in self.cached):
            self.synced.set()

    def _register_lifecycle(self) -> None:
        """Run the WatchCache-fed informers for as long as kopf runs the controller."""

        @kopf.on.startup(registry=self.registry, id=f"{self.prefix}_start_caches")
        async def start(**_: Any) -> None:
            self._stop = asyncio.Event()
            stop = self._stop
            for cached in self.cached:
                self._tasks.append(
                    asyncio.create_task(cached.cache.run(stop), name=f"{self.prefix}-{cached.resource.plural}")
                )
            self._tasks.append(asyncio.create_task(self._await_caches(), name=f"{self.prefix}-caches-synced"))

        @kopf.on.cleanup(registry=self.registry, id=f"{self.prefix}_stop_caches")
        async def stop(**_: Any) -> None:
            if self._stop is not None:
                self._stop.set()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _await_caches(self) -> None:
        for cached in self.cached:
            await cached.cache.synced.wait()
        self._check_synced()

    def _register(self, informer: Informer) -> None:
        res = informer.resource

        def index_fn(name: str, namespace: str | None, body: kopf.Body, **_: Any) -> dict[_Key, JSON]:
            return {(namespace or "", name): _plain(body)}

        def event_fn(event: kopf.RawEvent, body: kopf.Body, **kwargs: Any) -> None:
            self._bind_all(kwargs)
            event_type = str(event.get("type") or "")
            obj = _plain(body)
            for callback in informer.callbacks:
                callback(event_type, obj)

        kopf.index(res.group, res.version, res.plural, id=informer.index_id, registry=self.registry)(index_fn)
        kopf.on.event(
            res.group, res.version, res.plural, id=f"{informer.index_id}_events", registry=self.registry
        )(event_fn)

    async def wait_synced(self) -> None:
        await self.synced.wait()


def _plain(body: kopf.Body) -> JSON:
    """A private deep copy of the object: kopf's bodies are views over its own memory."""
    raw = getattr(body, "_src", None)
    return copy.deepcopy(raw if isinstance(raw, dict) else dict(body))
