"""The typed input of a scheduling pass: one consistent snapshot of the hub's objects.

Every Placement is scheduled against a ``Snapshot`` built from the parsed models (api/). The
snapshot precomputes what many passes share (per-cluster labels, claims, taints and allocatable
values; decision counts for Balance) and caches it, so a full pass over many Placements stays
cheap. A snapshot is immutable once built: the controller builds a new one when the world
changes, the offline command builds one from its input files.

Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
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
        decisions: Iterable[PlacementDecision] = (),
        scores: Iterable[AddOnPlacementScore] = (),
    ) -> None:
        self.clusters: dict[str, ClusterView] = {c.name: c for c in clusters}
        self.cluster_sets: dict[str, ManagedClusterSet] = {s.name: s for s in cluster_sets}
        self._bindings: dict[str, list[ManagedClusterSetBinding]] = defaultdict(list)
        for binding in bindings:
            self._bindings[binding.namespace].append(binding)
        for items in self._bindings.values():
            items.sort(key=lambda b: b.name)
        self.decisions: list[PlacementDecision] = sorted(decisions, key=lambda d: (d.namespace, d.name))
        self._decisions_by_placement: dict[tuple[str, str], list[PlacementDecision]] = defaultdict(list)
        for pd in self.decisions:
            label = pd.metadata.labels.get(PLACEMENT_LABEL)
            if label is not None:
                self._decisions_by_placement[(pd.namespace, label)].append(pd)
        self.scores: dict[tuple[str, str], ScoreView] = {}
        for score in scores:
            self.scores[(score.namespace, score.name)] = ScoreView(
                score.status.valid_until, tuple((item.name, item.value) for item in score.status.scores)
            )
        self._balance_counts: Counter[str] | None = None
        self._members: dict[str, frozenset[str]] = {}

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

    # -- decisions --------------------------------------------------------------------------
    def decisions_of(self, namespace: str, placement: str) -> list[PlacementDecision]:
        """The PlacementDecisions labelled with this placement in its namespace, by name."""
        return list(self._decisions_by_placement.get((namespace, placement), ()))

    def current_decisions(self, namespace: str, placement: str) -> set[str]:
        """Cluster names in this placement's existing PlacementDecisions."""
        out: set[str] = set()
        for pd in self._decisions_by_placement.get((namespace, placement), ()):
            out.update(d.cluster_name for d in pd.status.decisions)
        return out

    def recorded_scores(self, namespace: str, placement: str) -> dict[str, int | None]:
        """The score each cluster of this placement's existing decisions carries (None: none)."""
        out: dict[str, int | None] = {}
        for pd in self._decisions_by_placement.get((namespace, placement), ()):
            for decision in pd.status.decisions:
                out[decision.cluster_name] = decision.score
        return out

    def balance_counts(self, namespace: str, placement: str) -> Counter[str]:
        """Decisions per cluster over every PlacementDecision except this placement's own."""
        if self._balance_counts is None:
            total: Counter[str] = Counter()
            for pd in self.decisions:
                for decision in pd.status.decisions:
                    total[decision.cluster_name] += 1
            self._balance_counts = total
        own: Counter[str] = Counter()
        for pd in self._decisions_by_placement.get((namespace, placement), ()):
            for decision in pd.status.decisions:
                own[decision.cluster_name] += 1
        if not own:
            return self._balance_counts
        counts = Counter(self._balance_counts)
        counts.subtract(own)
        return +counts

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
