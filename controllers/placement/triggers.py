"""Which Placements a change can affect (docs/behaviour/scheduling.md §9, "Other triggers").

- a ManagedCluster: the Placements reached through the cluster's sets (its old and new labels
  both count), then the bindings of those sets, then the Placements in the bindings'
  namespaces that list the set or list no set;
- a ManagedClusterSet or a ManagedClusterSetBinding: the same chain from that point;
- an AddOnPlacementScore: the Placements whose AddOn configurations name that resource and
  whose namespace binds a set that contains the score's cluster;
- a PlacementDecision: the Placement its label names (the shell handles that one directly).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.controllers.placement.prioritizers import uses_addon_scores
from ocm_rollout.controllers.placement.selectors import (
    CompiledSelector,
    SelectorError,
    compile_label_selector,
)
from ocm_rollout.controllers.placement.snapshot import CLUSTER_SET_LABEL


@dataclass(frozen=True)
class PlacementRef:
    """What the triggers need to know about one Placement."""

    namespace: str
    name: str
    cluster_sets: frozenset[str]
    addon_resources: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, placement: Placement) -> PlacementRef:
        return cls(
            placement.namespace,
            placement.name,
            frozenset(placement.spec.cluster_sets),
            frozenset(uses_addon_scores(placement)),
        )


class PlacementIndex:
    """Placements by namespace, for the trigger chains."""

    def __init__(self, refs: Iterable[PlacementRef]) -> None:
        self.by_namespace: dict[str, list[PlacementRef]] = {}
        for ref in refs:
            self.by_namespace.setdefault(ref.namespace, []).append(ref)

    def for_binding(self, namespace: str, set_name: str) -> set[str]:
        """Placements of ``namespace`` that list ``set_name`` or list no set."""
        return {
            ref.key
            for ref in self.by_namespace.get(namespace, ())
            if not ref.cluster_sets or set_name in ref.cluster_sets
        }


class Topology:
    """The cluster sets and bindings, with compiled set selectors: what maps a cluster or a set
    to the namespaces (and so the Placements) that can see it."""

    def __init__(self, sets: Iterable[ManagedClusterSet], bindings: Iterable[ManagedClusterSetBinding]) -> None:
        self.sets = sorted(sets, key=lambda s: s.name)
        self.bindings = sorted(bindings, key=lambda b: (b.namespace, b.name))
        self._selectors: dict[str, CompiledSelector | None] = {}
        for cluster_set in self.sets:
            selector = cluster_set.spec.cluster_selector
            if selector.selector_type == constants.SELECTOR_TYPE_LABEL_SELECTOR and selector.label_selector is not None:
                try:
                    self._selectors[cluster_set.name] = compile_label_selector(selector.label_selector)
                except SelectorError:
                    self._selectors[cluster_set.name] = None

    def sets_of_cluster(self, labels: Mapping[str, str]) -> list[str]:
        """Names of the sets a cluster with these labels belongs to (invalid sets skipped)."""
        out = []
        for cluster_set in self.sets:
            selector_type = cluster_set.spec.cluster_selector.selector_type
            if selector_type in (constants.SELECTOR_TYPE_EXCLUSIVE_CLUSTER_SET_LABEL, ""):
                if labels.get(CLUSTER_SET_LABEL) == cluster_set.name:
                    out.append(cluster_set.name)
            else:
                compiled = self._selectors.get(cluster_set.name)
                if compiled is not None and compiled.matches(labels):
                    out.append(cluster_set.name)
        return out

    def binding_targets(self, set_names: Iterable[str]) -> list[tuple[str, str]]:
        """(namespace, binding name) of every binding of one of these sets."""
        wanted = set(set_names)
        return [
            (b.namespace, b.name)
            for b in self.bindings
            if b.name in wanted or (b.spec.cluster_set or "") in wanted
        ]


def placements_for_sets(topology: Topology, index: PlacementIndex, set_names: Iterable[str]) -> set[str]:
    keys: set[str] = set()
    for namespace, name in topology.binding_targets(set_names):
        keys |= index.for_binding(namespace, name)
    return keys


def placements_for_binding(index: PlacementIndex, namespace: str, name: str) -> set[str]:
    return index.for_binding(namespace, name)


def placements_for_cluster(
    topology: Topology, index: PlacementIndex, old_labels: Mapping[str, str] | None, new_labels: Mapping[str, str] | None
) -> set[str]:
    sets: set[str] = set()
    for labels in (old_labels, new_labels):
        if labels is not None:
            sets.update(topology.sets_of_cluster(labels))
    return placements_for_sets(topology, index, sets)


def placements_for_score(
    topology: Topology, index: PlacementIndex, cluster_labels: Mapping[str, str] | None, resource: str
) -> set[str]:
    """Placements naming ``resource`` in an AddOn configuration, in a namespace binding a set
    of the score's cluster (``cluster_labels`` None: the cluster does not exist)."""
    if cluster_labels is None:
        return set()
    namespaces = {ns for ns, _ in topology.binding_targets(topology.sets_of_cluster(cluster_labels))}
    return {
        ref.key
        for namespace in namespaces
        for ref in index.by_namespace.get(namespace, ())
        if resource in ref.addon_resources
    }
