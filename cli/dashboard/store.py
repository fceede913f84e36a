"""What the dashboard knows of the hub: one list-and-watch cache per kind it shows, the indexes
its pages read, and a generation counter per part that moves on every change.

The pages never ask the hub: they are computed from these caches (``client.watchcache``), so a
page costs no request and a change reaches the open pages as soon as its watch event does. The
generations let the server keep a computed page until something it reads has changed
(``Generations.of``), and tell the open pages when to fetch again (``changed``).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT
from ocm_rollout.cli.view.view_state import WorkIndex
from ocm_rollout.client.kube import (
    ADDON_PLACEMENT_SCORES,
    CLUSTER_MANAGEMENT_ADDONS,
    CONTROLLER_REVISIONS,
    EVENTS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
    Resource,
)
from ocm_rollout.client.watchcache import WatchCache
from ocm_rollout.controllers.common.wire import meta
from ocm_rollout.controllers.workset.indexes import Forms

# The parts a page may depend on; each has its own generation.
KINDS: dict[str, Resource] = {
    "replicasets": MANIFEST_WORK_REPLICA_SETS,
    "works": MANIFEST_WORKS,
    "placements": PLACEMENTS,
    "decisions": PLACEMENT_DECISIONS,
    "clusters": MANAGED_CLUSTERS,
    "sets": MANAGED_CLUSTER_SETS,
    "bindings": MANAGED_CLUSTER_SET_BINDINGS,
    "scores": ADDON_PLACEMENT_SCORES,
    "addons": CLUSTER_MANAGEMENT_ADDONS,
    "mcas": MANAGED_CLUSTER_ADDONS,
    "events": EVENTS,
    "revisions": CONTROLLER_REVISIONS,
}
EventKey = tuple[str, str, str]
"""(involvedObject kind, namespace, name)."""


@dataclass
class Generations:
    """A counter per part: the kind's (``kind``), a namespace's (``("ns", kind, namespace)``), a
    rollout owner label's (``("owner", label)``), an involved object's events
    (``("events", kind, namespace, name)``)."""

    counters: dict[object, int] = field(default_factory=lambda: defaultdict(int))
    total: int = 0

    def bump(self, *parts: object) -> None:
        self.total += 1
        for part in parts:
            self.counters[part] += 1

    def of(self, parts: Iterable[object]) -> tuple[int, ...]:
        """The generations of ``parts``: equal tuples mean nothing they name has changed."""
        return tuple(self.counters.get(p, 0) for p in parts)


class Store:
    """See the module docstring. ``run`` lists and watches every kind until ``stop``."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.caches: dict[str, WatchCache] = {name: WatchCache(kube, resource) for name, resource in KINDS.items()}
        self.generations = Generations()
        self.works = WorkIndex()
        # The works' canonical specs, kept between pages (forgotten with the work).
        self.forms = Forms()
        self.events: dict[EventKey, dict[str, JSON]] = defaultdict(dict)
        self.decisions_by_placement: dict[tuple[str, str], dict[str, JSON]] = defaultdict(dict)
        self.mcas_by_addon: dict[str, dict[str, JSON]] = defaultdict(dict)
        self._waiters: list[asyncio.Event] = []
        for name, cache in self.caches.items():
            cache.callbacks.append(self._callback(name))

    # -- reading --------------------------------------------------------------------------------
    def __getitem__(self, kind: str) -> WatchCache:
        return self.caches[kind]

    def items(self, kind: str, namespace: str | None = None) -> list[JSON]:
        objects = self.caches[kind].objects
        if namespace is None:
            return list(objects.values())
        return [obj for (ns, _), obj in objects.items() if ns == namespace]

    def get(self, kind: str, name: str, namespace: str | None = None) -> JSON | None:
        return self.caches[kind].get(name, namespace)

    def decisions_of(self, namespace: str, placement: str) -> list[JSON]:
        return list(self.decisions_by_placement.get((namespace, placement), {}).values())

    def events_of(self, kind: str, namespace: str, name: str) -> list[JSON]:
        return list(self.events.get((kind, namespace, name), {}).values())

    def unsynced(self) -> list[str]:
        """The kinds not listed yet (the hub has not answered, or refuses to: RBAC)."""
        return [KINDS[name].plural for name, cache in self.caches.items() if not cache.synced.is_set()]

    # -- following ------------------------------------------------------------------------------
    def subscribe(self) -> asyncio.Event:
        """An event set at every change from now on (``unsubscribe`` it when done)."""
        flag = asyncio.Event()
        self._waiters.append(flag)
        return flag

    def unsubscribe(self, flag: asyncio.Event) -> None:
        if flag in self._waiters:
            self._waiters.remove(flag)

    def wake_all(self) -> None:
        for flag in self._waiters:
            flag.set()

    def _callback(self, kind: str) -> Callable[[str, JSON, JSON | None], None]:
        def changed(event_type: str, obj: JSON, previous: JSON | None) -> None:
            self._index(kind, event_type, obj, previous)
            for flag in self._waiters:
                flag.set()

        return changed

    def _index(self, kind: str, event_type: str, obj: JSON, previous: JSON | None) -> None:
        found = meta(obj)
        namespace, name = str(found.get("namespace") or ""), str(found.get("name") or "")
        deleted = event_type == "DELETED"
        parts: list[object] = [kind, ("ns", kind, namespace)]
        if kind == "works":
            _, owners = self.works.update("DELETED" if deleted else "MODIFIED", obj, previous)
            if deleted:
                self.forms.works.pop(str(found.get("uid") or ""), None)
            parts.extend(("owner", owner) for owner in owners)
        elif kind == "events":
            involved = obj.get("involvedObject") or obj.get("regarding") or {}
            key = (str(involved.get("kind") or ""), str(involved.get("namespace") or ""), str(involved.get("name") or ""))
            bucket = self.events[key]
            if deleted:
                bucket.pop(f"{namespace}/{name}", None)
            else:
                bucket[f"{namespace}/{name}"] = obj
            parts.append(("events", *key))
        elif kind == "decisions":
            for version in (previous, obj):
                if version is None:
                    continue
                placement = str((meta(version).get("labels") or {}).get(LABEL_PLACEMENT) or "")
                self.decisions_by_placement[(namespace, placement)].pop(name, None)
            placement = str((found.get("labels") or {}).get(LABEL_PLACEMENT) or "")
            if not deleted:
                self.decisions_by_placement[(namespace, placement)][name] = obj
            parts.append(("placement", namespace, placement))
        elif kind == "mcas":
            if deleted:
                self.mcas_by_addon[name].pop(namespace, None)
            else:
                self.mcas_by_addon[name][namespace] = obj
            parts.append(("addon", name))
        elif kind == "revisions":
            owner = str((found.get("labels") or {}).get(LABEL_MANIFESTWORK_REPLICASET) or "")
            parts.append(("owner", owner))
        elif kind == "placements":
            parts.append(("placement", namespace, name))
        elif kind == "addons":
            parts.append(("addon", name))
        elif kind == "replicasets":
            parts.append(("replicaset", namespace, name))
        self.generations.bump(*parts)

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(cache.run(stop), name=f"dashboard-{name}") for name, cache in self.caches.items()]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def synced(self, timeout: float) -> bool:
        """Whether every kind is listed within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(asyncio.gather(*(c.synced.wait() for c in self.caches.values())), timeout)
        except TimeoutError:
            return False
        return True
