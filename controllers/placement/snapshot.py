"""The typed input of a scheduling pass: one consistent snapshot of the hub's objects.

Every Placement is scheduled against a ``Snapshot`` built from the parsed models (api/). The
snapshot precomputes what many passes share (per-cluster labels, claims, taints and allocatable
values, set members) and caches it, so a full pass over many Placements stays cheap. Its fleet
part (clusters, sets, bindings, scores) is immutable once built: the controller builds a new one
when one of those changes, the offline command builds one from its input files. The decision
pages are a ``DecisionIndex`` (``decision_index.py``): built from the given pages, or the
controller's own, which it updates page by page as pages change (a pass runs without awaiting,
so it reads one consistent state).

Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.constants import (
    LABEL_CLUSTER_SET,
    LABEL_PLACEMENT,
    SELECTOR_TYPE_EXCLUSIVE_CLUSTER_SET_LABEL,
    SELECTOR_TYPE_LABEL_SELECTOR,
)
from ocm_rollout.api.meta import LabelSelector
from ocm_rollout.controllers.common.quantity import QuantityError, approximate_float
from ocm_rollout.controllers.placement.decision_index import DecisionIndex
from ocm_rollout.controllers.placement.selectors import (
    CompiledSelector,
    SelectorError,
    compile_label_selector,
)

PLACEMENT_LABEL = LABEL_PLACEMENT
CLUSTER_SET_LABEL = LABEL_CLUSTER_SET
# A taint without timeAdded counts as added at Go's zero time.
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class TaintView:
    key: str
    value: str
    effect: str
    time_added: datetime


@dataclass(eq=False)
class ClusterView:
    """What scheduling reads from one ManagedCluster, computed once per cluster version.

    ``model`` is the parsed cluster, or None when the view was built with ``source`` (the stored
    JSON it was parsed from, which the caller's cache holds anyway): a parsed model costs about
    10 KB, which at 10,000 clusters was a third of the placement controller's memory, and only
    CEL selectors need the whole object (``cel_value``, built on first use from either)."""

    model: ManagedCluster | None
    name: str
    labels: Mapping[str, str]
    claims: Mapping[str, str]
    taints: tuple[TaintView, ...]
    deleting: bool
    # allocatable as an approximate float, only when both allocatable and capacity have it
    resources: Mapping[str, float]
    _cel_value: Any = field(default=None, repr=False)
    source: Mapping[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, cluster: ManagedCluster, source: Mapping[str, Any] | None = None) -> ClusterView:
        status = cluster.status
        resources: dict[str, float] = {}
        for resource in ("cpu", "memory"):
            if resource in status.allocatable and resource in status.capacity:
                try:
                    resources[resource] = approximate_float(str(status.allocatable[resource]))
                except QuantityError:
                    continue
        taints = tuple(
            TaintView(t.key, t.value or "", t.effect, t.time_added or ZERO_TIME) for t in cluster.spec.taints
        )
        return cls(
            model=None if source is not None else cluster,
            source=source,
            name=cluster.name,
            labels=dict(cluster.metadata.labels),
            claims=status.claims(),
            taints=taints,
            deleting=cluster.metadata.deletion_timestamp is not None,
            resources=resources,
        )

    def cel_value(self) -> Any:
        """The cluster's JSON form as a CEL value (built on first use)."""
        if self._cel_value is None:
            from ocm_rollout.controllers.placement.cel import to_cel

            model = self.model if self.model is not None else ManagedCluster.parse(dict(self.source or {}))
            self._cel_value = to_cel(model.to_wire())
        return self._cel_value


class SetResolutionError(Exception):
    """An eligible ManagedClusterSet whose members cannot be computed (the pass is aborted)."""


@dataclass(frozen=True)
class ScoreView:
    valid_until: datetime | None
    items: tuple[tuple[str, int], ...]


class Snapshot:
    """Every object one scheduling pass may read."""

    def __init__(
        self,
        clusters: Iterable[ClusterView],
        cluster_sets: Iterable[ManagedClusterSet] = (),
        bindings: Iterable[ManagedClusterSetBinding] = (),
        decisions: Iterable[PlacementDecision] | DecisionIndex = (),
        scores: Iterable[AddOnPlacementScore] = (),
    ) -> None:
        self.clusters: dict[str, ClusterView] = {c.name: c for c in clusters}
        self.cluster_sets: dict[str, ManagedClusterSet] = {s.name: s for s in cluster_sets}
        self._bindings: dict[str, list[ManagedClusterSetBinding]] = defaultdict(list)
        for binding in bindings:
            self._bindings[binding.namespace].append(binding)
        for items in self._bindings.values():
            items.sort(key=lambda b: b.name)
        # The pages as models, kept only when given as models (``decisions_of``, offline).
        self._decision_models: dict[tuple[str, str], list[PlacementDecision]] = defaultdict(list)
        if isinstance(decisions, DecisionIndex):
            self.decision_index = decisions
        else:
            models = sorted(decisions, key=lambda d: (d.namespace, d.name))
            self.decision_index = DecisionIndex.of(models)
            for pd in models:
                label = pd.metadata.labels.get(PLACEMENT_LABEL)
                if label is not None:
                    self._decision_models[(pd.namespace, label)].append(pd)
        self.scores: dict[tuple[str, str], ScoreView] = {}
        for score in scores:
            self.scores[(score.namespace, score.name)] = ScoreView(
                score.status.valid_until, tuple((item.name, item.value) for item in score.status.scores)
            )
        self._members: dict[str, frozenset[str]] = {}
        self._matching: dict[Hashable, frozenset[str]] = {}

    # -- bindings and sets ------------------------------------------------------------------
    def bindings_in(self, namespace: str) -> list[ManagedClusterSetBinding]:
        return list(self._bindings.get(namespace, ()))

    def set_members(self, set_name: str) -> frozenset[str]:
        """Names of the member clusters of a set (terminating ones included)."""
        cached = self._members.get(set_name)
        if cached is not None:
            return cached
        cluster_set = self.cluster_sets[set_name]
        selector = cluster_set.spec.cluster_selector
        if selector.selector_type in (SELECTOR_TYPE_EXCLUSIVE_CLUSTER_SET_LABEL, ""):
            members = frozenset(
                c.name for c in self.clusters.values() if c.labels.get(CLUSTER_SET_LABEL) == set_name
            )
        elif selector.selector_type == SELECTOR_TYPE_LABEL_SELECTOR:
            if selector.label_selector is None:
                members = frozenset()
            else:
                compiled = _compile_set_selector(set_name, selector.label_selector)
                members = frozenset(c.name for c in self.clusters.values() if compiled.matches(c.labels))
        else:
            raise SetResolutionError(f"invalid cluster selector type {selector.selector_type!r} of set {set_name}")
        self._members[set_name] = members
        return members

    def matching(self, key: Hashable, matches: Callable[[ClusterView], bool]) -> frozenset[str]:
        """Names of the clusters ``matches`` accepts; memoised by ``key`` (a selector's
        signature: the same key must mean the same test)."""
        found = self._matching.get(key)
        if found is None:
            found = self._matching[key] = frozenset(c.name for c in self.clusters.values() if matches(c))
        return found

    # -- decisions --------------------------------------------------------------------------
    def decisions_of(self, namespace: str, placement: str) -> list[PlacementDecision]:
        """The PlacementDecisions labelled with this placement in its namespace, by name (only
        for a snapshot built from models: the controller's keeps ``PageEntry``s)."""
        return list(self._decision_models.get((namespace, placement), ()))

    def current_decisions(self, namespace: str, placement: str) -> set[str]:
        """Cluster names in this placement's existing PlacementDecisions."""
        return self.decision_index.current_decisions(namespace, placement)

    def recorded_scores(self, namespace: str, placement: str) -> dict[str, int | None]:
        """The score each cluster of this placement's existing decisions carries (None: none)."""
        return self.decision_index.recorded_scores(namespace, placement)

    def balance_counts(self, namespace: str, placement: str) -> Counter[str]:
        """Decisions per cluster over every PlacementDecision except this placement's own."""
        return self.decision_index.balance_counts(namespace, placement)

    # -- scores -----------------------------------------------------------------------------
    def score(self, cluster: str, resource: str) -> ScoreView | None:
        return self.scores.get((cluster, resource))

    def score_items(self, cluster: str, resource: str) -> tuple[tuple[str, int], ...] | None:
        view = self.scores.get((cluster, resource))
        return None if view is None else view.items


def _compile_set_selector(set_name: str, selector: LabelSelector) -> CompiledSelector:
    try:
        return compile_label_selector(selector)
    except SelectorError as exc:
        raise SetResolutionError(f"invalid label selector of ManagedClusterSet {set_name}: {exc}") from None
