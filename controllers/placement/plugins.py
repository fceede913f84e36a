"""The scheduler's plugins behind one interface, as OCM's are (``pkg/placement/plugins``).

Every filter and every prioritizer is a ``Plugin`` with a name and one ``run`` of the same
signature: it gets the Placement, the snapshot, the clusters still in play, the current
decisions and ``now``, and returns a ``PluginResult``: the clusters it keeps (a filter) or the
score of each (a prioritizer), a status, and when the result stops being true (a toleration that
runs out, an AddOn score that expires: OCM's ``RequeueAfter``). ``FILTERS`` is the filter
pipeline in order; ``scorer(prioritizer)`` gives the plugin of one weighted prioritizer, so the
scheduler loops over plugins instead of dispatching on kinds.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.constants import SCORE_COORDINATE_ADDON
from ocm_rollout.controllers.placement.filters import (
    OK,
    PREDICATE,
    TAINT_TOLERATION,
    Status,
    predicate_filter,
    taint_toleration_filter,
    toleration_requeue_time,
)
from ocm_rollout.controllers.placement.prioritizers import (
    BALANCE,
    STEADY,
    Prioritizer,
    addon_scores,
    balance_scores,
    resource_of,
    resource_scores,
    steady_scores,
)
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot


@dataclass(frozen=True)
class PluginInput:
    placement: Placement
    snapshot: Snapshot
    clusters: Sequence[ClusterView]
    current: set[str]
    now: datetime


@dataclass
class PluginResult:
    """A filter's kept clusters or a prioritizer's scores, its status, and when to look again."""

    status: Status = OK
    clusters: list[ClusterView] = field(default_factory=list)
    scores: dict[str, int] = field(default_factory=dict)
    requeue_at: datetime | None = None


class Plugin(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, given: PluginInput) -> PluginResult: ...


@dataclass(frozen=True)
class PredicateFilter:
    name: str = PREDICATE

    def run(self, given: PluginInput) -> PluginResult:
        kept, status = predicate_filter(given.placement, given.clusters, given.snapshot)
        return PluginResult(status, clusters=kept)


@dataclass(frozen=True)
class TaintTolerationFilter:
    """Also says when a toleration that keeps a current decision runs out."""

    name: str = TAINT_TOLERATION

    def run(self, given: PluginInput) -> PluginResult:
        kept, status = taint_toleration_filter(given.placement, given.clusters, given.current, given.now)
        requeue_at = toleration_requeue_time(given.placement, given.snapshot, given.current, given.now)
        return PluginResult(status, clusters=kept, requeue_at=requeue_at)


FILTERS: tuple[Plugin, ...] = (PredicateFilter(), TaintTolerationFilter())


@dataclass(frozen=True)
class Balance:
    name: str

    def run(self, given: PluginInput) -> PluginResult:
        placement = given.placement
        return PluginResult(scores=balance_scores(given.clusters, given.snapshot, placement.namespace, placement.name))


@dataclass(frozen=True)
class Steady:
    name: str

    def run(self, given: PluginInput) -> PluginResult:
        return PluginResult(scores=steady_scores(given.clusters, given.current))


@dataclass(frozen=True)
class ResourceAllocatable:
    name: str
    resource: str

    def run(self, given: PluginInput) -> PluginResult:
        return PluginResult(scores=resource_scores(given.clusters, self.resource))


@dataclass(frozen=True)
class AddOnScore:
    """Scores from AddOnPlacementScores; a Warning names the expired ones."""

    name: str
    prioritizer: Prioritizer

    def run(self, given: PluginInput) -> PluginResult:
        scores, status, expiry = addon_scores(given.clusters, given.snapshot, self.prioritizer, given.now)
        return PluginResult(status, scores=scores, requeue_at=expiry)


def scorer(prioritizer: Prioritizer) -> Plugin:
    """The plugin that scores for one configured prioritizer."""
    if prioritizer.kind == BALANCE:
        return Balance(prioritizer.name)
    if prioritizer.kind == STEADY:
        return Steady(prioritizer.name)
    if prioritizer.kind == SCORE_COORDINATE_ADDON:
        return AddOnScore(prioritizer.name, prioritizer)
    return ResourceAllocatable(prioritizer.name, resource_of(prioritizer.kind))
