"""What the placement controller knows of the fleet, built from its caches and kept between passes.

- ``Memo``: every object parsed once per resourceVersion (an invalid one is logged and skipped);
- ``World.snapshot()``: one ``Snapshot`` shared by every pass; its fleet part is rebuilt only
  after a cluster, set, binding or score changed (``changed()``), clusters as ``ClusterView``s
  that keep the stored JSON; its decision pages are one ``DecisionIndex`` updated page by page:
  every decision event and every write of this controller marks its page (``decision_changed``),
  and the next ``snapshot()`` reads each marked page again from the cache (its own writes laid
  over), so the index always equals one built from the cache as it reads then;
- ``World.topology()`` (sets and bindings) and ``World.placement_index()`` (Placements by
  namespace): what the triggers walk, rebuilt only after one of their inputs changed.

The caches are the runtime's (``controllers/runtime/cache.py``): decision pages are read with
this controller's own writes laid over them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.constants import LABEL_PLACEMENT
from ocm_rollout.api.meta import InvalidObject, OCMObject
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.common.wire import meta
from ocm_rollout.controllers.placement.decision_index import DecisionIndex, PageEntry
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot
from ocm_rollout.controllers.placement.triggers import PlacementIndex, PlacementRef, Topology
from ocm_rollout.controllers.runtime.cache import Cache
from ocm_rollout.controllers.runtime.overlay import Key, key_of

log = logging.getLogger(__name__)

T = TypeVar("T", bound=OCMObject)


class Memo:
    """Parsed models by object key, re-parsed only when the resourceVersion changes."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, Key], tuple[str, Any]] = {}

    def get(self, kind: str, body: JSON, build: Callable[[JSON], Any]) -> Any:
        key = (kind, key_of(body))
        version = str(meta(body).get("resourceVersion") or "")
        cached = self.entries.get(key)
        if cached is not None and cached[0] == version and version:
            return cached[1]
        try:
            value = build(body)
        except InvalidObject as exc:
            log.warning("ignoring an invalid object", extra={"kind": kind, "key": "/".join(key[1]), "error": str(exc)})
            value = None
        self.entries[key] = (version, value)
        return value

    def forget(self, kind: str, body: JSON) -> None:
        self.entries.pop((kind, key_of(body)), None)


def _cluster_view(obj: JSON) -> ClusterView:
    return ClusterView.of(ManagedCluster.parse(obj), source=obj)


class World:
    """The placement controller's parsed view of its caches."""

    def __init__(self, clusters: Cache, sets: Cache, bindings: Cache, placements: Cache, decisions: Cache, scores: Cache) -> None:
        self.clusters = clusters
        self.sets = sets
        self.bindings = bindings
        self.placements = placements
        self.decisions = decisions
        self.scores = scores
        self.memo = Memo()
        self._snapshot: Snapshot | None = None
        self.decision_index = DecisionIndex()
        # Pages whose entry may differ from the cache; None: read every page again.
        self._stale_pages: set[Key] | None = None
        # The (uid, resourceVersion) each indexed page was read at.
        self._page_versions: dict[Key, tuple[str, str]] = {}
        # Page names by (namespace, Placement label), as the cache shows them (a page the model
        # rejects included): what the binder compares its wanted pages with.
        self._labelled: dict[Key, set[str]] = {}
        self._page_labels: dict[Key, str] = {}
        self._topology: Topology | None = None
        self._index: PlacementIndex | None = None

    def parse(self, model: type[T], body: JSON) -> T | None:
        result: T | None = self.memo.get(model.KIND.kind, body, model.parse)
        return result

    def _all(self, model: type[T], cache: Cache) -> list[T]:
        return [obj for obj in (self.parse(model, body) for body in cache) if obj is not None]

    def snapshot(self) -> Snapshot:
        """The current world (its fleet part rebuilt only after a change)."""
        self._refresh_pages()
        if self._snapshot is None:
            views = (self.memo.get("ClusterView", body, _cluster_view) for body in self.clusters)
            self._snapshot = Snapshot(
                [view for view in views if view is not None],
                self._all(ManagedClusterSet, self.sets),
                self._all(ManagedClusterSetBinding, self.bindings),
                self.decision_index,
                self._all(AddOnPlacementScore, self.scores),
            )
        return self._snapshot

    def decision_changed(self, key: Key | None = None) -> None:
        """The page at ``key`` (None: any page) may differ from what the index holds."""
        if key is None:
            self._stale_pages = None
        elif self._stale_pages is not None:
            self._stale_pages.add(key)

    def _refresh_pages(self) -> None:
        stale = self._stale_pages
        if stale is not None and not stale:
            return
        if stale is None:
            keys = set(self._page_versions) | {key_of(body) for body in self.decisions}
        else:
            keys = stale
        self._stale_pages = set()
        for key in keys:
            self._read_page(key)

    def pages_labelled(self, namespace: str, placement: str) -> list[JSON]:
        """The pages labelled with this Placement in its namespace, by name, as the cache shows
        them now (the same as ``decisions.select(namespace, labels=...)``, without reading
        every page)."""
        self._refresh_pages()
        found = []
        for name in sorted(self._labelled.get((namespace, placement), ())):
            body = self.decisions.get(name, namespace)
            if body is not None:
                found.append(body)
        return found

    def _label_page(self, key: Key, body: JSON | None) -> None:
        labels = None if body is None else meta(body).get("labels")
        label = labels.get(LABEL_PLACEMENT) if isinstance(labels, dict) else None
        if not isinstance(label, str):
            label = None
        old = self._page_labels.get(key)
        if old == label:
            return
        if old is not None:
            names = self._labelled[(key[0], old)]
            names.discard(key[1])
            if not names:
                del self._labelled[(key[0], old)]
            del self._page_labels[key]
        if label is not None:
            self._labelled.setdefault((key[0], label), set()).add(key[1])
            self._page_labels[key] = label

    def _read_page(self, key: Key) -> None:
        body = self.decisions.get(key[1], key[0])
        self._label_page(key, body)
        if body is None:
            self._page_versions.pop(key, None)
            self.decision_index.put(key, None)
            return
        metadata = meta(body)
        version = (str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or ""))
        if version[1] and self._page_versions.get(key) == version:
            return
        try:
            entry: PageEntry | None = PageEntry.of(PlacementDecision.parse(body))
        except InvalidObject as exc:
            log.warning("ignoring an invalid object", extra={"kind": "PlacementDecision", "key": "/".join(key), "error": str(exc)})
            entry = None
        self._page_versions[key] = version
        self.decision_index.put(key, entry)

    def topology(self) -> Topology:
        if self._topology is None:
            self._topology = Topology(self._all(ManagedClusterSet, self.sets), self._all(ManagedClusterSetBinding, self.bindings))
        return self._topology

    def placement_index(self) -> PlacementIndex:
        if self._index is None:
            self._index = PlacementIndex(PlacementRef.of(p) for p in self._all(Placement, self.placements))
        return self._index

    def changed(self, *, topology: bool = False) -> None:
        """A cluster, set, binding or score changed (``topology``: a set or a binding)."""
        self._snapshot = None
        if topology:
            self._topology = None

    def placements_changed(self) -> None:
        """A Placement changed: only the triggers' index reads them (a pass is handed its own,
        the snapshot holds none)."""
        self._index = None
