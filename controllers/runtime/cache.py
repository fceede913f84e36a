"""The caches a controller reads: one ``Cache`` per watched kind, with its own writes laid over.

Where the objects come from is the declaration's ``source`` (``shell.Watch``):

- ``KOPF``: a kopf index, for kinds with few objects that change rarely (Placements, decisions,
  MWRSs, CMAs). kopf runs no event handler before every indexed resource is fully listed, so
  once any kopf event of the controller arrived, every kopf-fed cache is complete;
- ``LIST_WATCH``: ``client.watchcache.WatchCache`` (one per watched namespace for a namespaced
  kind when the controller is scoped to namespaces), for kinds with one object per cluster or
  many changes (ManagedClusters, ManifestWorks, MCAs): kopf spends about as much CPU per event
  as on a write, which at 10,000 clusters cost each controller minutes.

Either way a ``Cache`` answers ``get``, iteration and ``select`` through its ``Overlay``
(``overlay.py``): the controller's own writes (``wrote``), objects it learnt from the API
(``learnt``) and deletes it requested (``delete_requested``) are seen at once, by every reader,
until the watch catches up. The controller's ``index`` callback hears the source's events and
its own writes alike, so an index never misses a create it made; its ``triggers`` hear only the
source's events (a controller's own write does not wake it again), and a trigger declared with
``own_writes=False`` not even the watch's echo of such a write: the very version the API returned
to the controller (a later version, anyone's, is an event like any other).

Only the runtime imports kopf: ``KopfSource.bind`` is called from ``shell``'s kopf handlers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ocm_rollout.client.kube import JSON, Kube, Resource
from ocm_rollout.client.watchcache import WatchCache
from ocm_rollout.controllers.runtime.overlay import (
    DeletePolicy,
    Key,
    Overlay,
    key_of,
    strictly_newer,
    uid_of,
    version_of,
)

Listener = Callable[[str, JSON, JSON | None], None]
"""Called with the event type ("" for the first listing, ADDED, MODIFIED, DELETED), the object
and the previous object when the source knows it."""


def _latest(bodies: Iterable[Any]) -> JSON | None:
    """The latest of the bodies kopf holds under one name: the highest integer resourceVersion
    (the last stored on a tie; with opaque resourceVersions, the first stored)."""
    found: JSON | None = None
    for body in bodies:
        if found is None or not strictly_newer(found, body):
            found = dict(body)
    return found


class KopfSource:
    """A kopf index of ``(namespace, name) -> [body]``, bound when kopf first calls us.

    kopf indexes each object (uid) in a worker of its own, so an object deleted and created
    again under the same name can be held twice for a moment (the new one indexed before the
    old one's DELETED): the later version is the one shown."""

    def __init__(self, index_id: str) -> None:
        self.index_id = index_id
        self._index: Mapping[Key, Any] | None = None

    def bind(self, index: Mapping[Key, Any]) -> None:
        self._index = index

    def get(self, key: Key) -> JSON | None:
        if self._index is None or key not in self._index:
            return None
        return _latest(self._index[key])

    def values(self) -> Iterator[JSON]:
        if self._index is None:
            return
        for key in list(self._index):
            found = _latest(self._index.get(key, ()))
            if found is not None:
                yield found

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def ready(self) -> bool:
        return self._index is not None

    def versioned(self) -> bool:
        """kopf does not tell how far its watch has read."""
        return False

    async def reached(self, _version: str, _timeout: float) -> bool:
        return False


class WatchSource:
    """One ``WatchCache`` per namespace watched (one for all namespaces when unscoped)."""

    def __init__(
        self, kube: Kube, resource: Resource, namespaces: list[str] | None, label_selector: str | None,
        transform: Callable[[JSON], JSON] | None = None,
    ) -> None:
        scoped = namespaces if namespaces and resource.namespaced else [None]
        self.caches: dict[str | None, WatchCache] = {
            ns: WatchCache(kube, resource, namespace=ns, label_selector=label_selector, transform=transform)
            for ns in scoped
        }

    def get(self, key: Key) -> JSON | None:
        cache = self.caches.get(None) or self.caches.get(key[0])
        return None if cache is None else cache.objects.get(key)

    def values(self) -> Iterator[JSON]:
        for cache in self.caches.values():
            yield from list(cache.objects.values())

    def __len__(self) -> int:
        return sum(len(cache.objects) for cache in self.caches.values())

    def ready(self) -> bool:
        return all(cache.synced.is_set() for cache in self.caches.values())

    def versioned(self) -> bool:
        """Whether every watch knows the resourceVersion it has caught up with (once listed)."""
        return all(cache.version for cache in self.caches.values())

    async def reached(self, version: str, timeout: float) -> bool:
        """Whether every watch catches up with ``version`` within ``timeout`` seconds."""
        answers = await asyncio.gather(*(cache.reached(version, timeout) for cache in self.caches.values()))
        return all(answers)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(cache.run(stop) for cache in self.caches.values()))


class Cache:
    """One watched kind as the controller sees it: stored objects and its own writes."""

    def __init__(self, resource: Resource, source: KopfSource | WatchSource, policy: DeletePolicy) -> None:
        self.resource = resource
        self.source = source
        self.overlay = Overlay(policy)
        self.index_listeners: list[Listener] = []
        self.trigger_listeners: list[Listener] = []
        # Trigger listeners that the echo of the controller's own write does not concern.
        self.not_own_listeners: list[Listener] = []
        # key -> the object as this controller's latest write of it returned it, until the watch
        # brings that version (its echo) or a later one.
        self._own: dict[Key, JSON] = {}

    # -- reading -------------------------------------------------------------------------------
    def get(self, name: str, namespace: str | None = None) -> JSON | None:
        key = (namespace or "", name)
        return self.overlay.view(self.source.get(key), key)

    def shown(self, obj: JSON) -> JSON | None:
        """What to believe about ``obj`` (an object an index kept from an event)."""
        return self.overlay.view(obj, key_of(obj))

    def shown_at(self, obj: JSON, key: Key) -> JSON | None:
        """``shown(obj)`` when its (namespace, name) ``key`` is known already."""
        return self.overlay.view(obj, key)

    def stored(self, name: str, namespace: str | None = None) -> JSON | None:
        """The object as the watch last delivered it, without the overlay."""
        return self.source.get((namespace or "", name))

    def __iter__(self) -> Iterator[JSON]:
        seen: set[Key] = set()
        for cached in self.source.values():
            key = key_of(cached)
            seen.add(key)
            shown = self.overlay.view(cached, key)
            if shown is not None:
                yield shown
        for key, body in self.overlay.pending():
            if key not in seen and self.overlay.view(None, key) is not None:
                yield body

    def __len__(self) -> int:
        return len(self.source)

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
        result.sort(key=key_of)
        return result

    @property
    def ready(self) -> bool:
        return self.source.ready()

    def versioned(self) -> bool:
        """Whether the source can tell how far it has read (``reached``): a list+watch source
        once listed, never a kopf one."""
        return self.source.versioned()

    async def reached(self, version: str, timeout: float) -> bool:
        """Whether the source catches up with ``version`` (a resourceVersion of this kind read from
        the API) within ``timeout`` seconds: it then holds every change up to that version."""
        return await self.source.reached(version, timeout)

    # -- the controller's own writes -----------------------------------------------------------
    def wrote(self, obj: JSON, *, created: bool = False) -> None:
        """The API's answer to a create or an update of this controller's. An answer handled after
        the cache showed that version or a later one (the watch can bring the write, and someone
        else's write made on it, before the writing coroutine resumes) changes nothing: told to
        the index, it would put the older version back, and a pass reading the index would plan
        from it after the event that could have re-queued it was already handled."""
        previous = self.get(*reversed(key_of(obj)))
        if previous is not None and uid_of(previous) == uid_of(obj) and not strictly_newer(obj, previous):
            return
        self.overlay.wrote(obj, created=created)
        if self.not_own_listeners:  # only a trigger without own writes asks which event is the echo
            self._own[key_of(obj)] = obj
        self._tell(self.index_listeners, "ADDED" if previous is None else "MODIFIED", obj, previous)

    def learnt(self, obj: JSON) -> bool:
        """An object listed from the API while confirming a plan; kept (and told to the index)
        only if newer than what the cache shows. True if it was."""
        key = key_of(obj)
        previous = self.get(key[1], key[0])
        if not self.overlay.learnt(obj, self.source.get(key)):
            return False
        self._tell(self.index_listeners, "MODIFIED" if previous is not None else "ADDED", obj, previous)
        return True

    def delete_requested(self, obj: JSON) -> None:
        self.overlay.delete_requested(obj)

    def forget(self, name: str, namespace: str | None = None) -> None:
        self.overlay.forget((namespace or "", name))

    # -- events from the source ----------------------------------------------------------------
    def on_source(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self._tell(self.index_listeners, event_type, obj, previous)
        self._tell(self.trigger_listeners, event_type, obj, previous)
        if not self._is_own_echo(event_type, obj):
            self._tell(self.not_own_listeners, event_type, obj, previous)

    def _is_own_echo(self, event_type: str, obj: JSON) -> bool:
        """Is ``obj`` the very version a write of this controller's returned (not a deletion)?
        The record of that write goes with its echo, or with any later version."""
        key = key_of(obj)
        own = self._own.get(key)
        if own is None:
            return False
        if event_type != "DELETED" and uid_of(own) == uid_of(obj) and version_of(own) == version_of(obj):
            del self._own[key]
            return True
        if event_type == "DELETED" or uid_of(own) != uid_of(obj) or strictly_newer(obj, own):
            del self._own[key]
        return False

    @staticmethod
    def _tell(listeners: list[Listener], event_type: str, obj: JSON, previous: JSON | None) -> None:
        for listener in listeners:
            listener(event_type, obj, previous)
