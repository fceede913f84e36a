"""One scheduling pass of one Placement at an explicit ``now`` (spec §1-§8).

``schedule(placement, snapshot, now)`` returns a ``ScheduleResult`` that carries everything the
controller writes (status, decision pages, when to look again) and everything that explains it
(the cluster-set resolution, every filter's output, every prioritizer's scores, the totals), for
events, the debug endpoint and ``ocm-rollout schedule --explain``.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementStatus
from ocm_rollout.api.constants import (
    ANNOTATION_EXPERIMENTAL_SCHEDULING_DISABLE,
    SORT_BY_SCORE,
)
from ocm_rollout.controllers.placement.filters import (
    MISCONFIGURED,
    OK,
    WARNING,
    Status,
)
from ocm_rollout.controllers.placement.groups import (
    DecisionGroupResult,
    DecisionPage,
    decision_groups,
    decision_pages,
)
from ocm_rollout.controllers.placement.plugins import FILTERS, PluginInput, scorer
from ocm_rollout.controllers.placement.prioritizers import (
    PrioritizerResult,
    build_prioritizers,
    prioritizer_weights,
)
from ocm_rollout.controllers.placement.snapshot import ClusterView, SetResolutionError, Snapshot
from ocm_rollout.controllers.placement.spread import SpreadResult, spread_terms
from ocm_rollout.controllers.placement.spread import select as select_clusters
from ocm_rollout.controllers.placement.status import (
    ConditionSpec,
    misconfigured_condition,
    misconfigured_status,
    new_status,
    satisfied_condition,
)
from ocm_rollout.controllers.placement.warnings import SpecWarning, spec_warnings

DISABLE_ANNOTATION = ANNOTATION_EXPERIMENTAL_SCHEDULING_DISABLE


@dataclass(frozen=True)
class FilterResult:
    name: str
    clusters: tuple[str, ...]


@dataclass
class ScheduleResult:
    """The outcome of one pass. ``skipped``/``aborted`` passes change nothing."""

    placement: Placement
    skipped: str | None = None  # why the Placement is left alone (§1)
    # what ends the pass before any decision is written (an eligible set whose members cannot
    # be computed); the status then only says so in PlacementMisconfigured (OCM writes nothing)
    aborted: str | None = None
    # the parts of the spec the scheduler ignores, as OCM does (``warnings``)
    warnings: list[SpecWarning] = field(default_factory=list)
    valid_bindings: list[str] = field(default_factory=list)
    eligible_sets: list[str] = field(default_factory=list)
    available: list[str] = field(default_factory=list)
    filter_results: list[FilterResult] = field(default_factory=list)
    prioritizer_results: list[PrioritizerResult] = field(default_factory=list)
    # total score of every cluster that passed the filters
    scores: dict[str, int] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)  # filtered clusters in score order
    selected: list[str] = field(default_factory=list)
    unscheduled: int = 0
    # the scheduling status (Success, Warning or Misconfigured) after §6 may have replaced it
    status: Status = OK
    groups: list[DecisionGroupResult] = field(default_factory=list)
    pages: list[DecisionPage] = field(default_factory=list)
    conditions: list[ConditionSpec] = field(default_factory=list)
    # how spreadPolicy chose the selection (None without spread terms)
    spread: SpreadResult | None = None
    # the score each decision carries: the totals, or the recorded ones while scoreRateLimit holds
    decision_scores: dict[str, int] = field(default_factory=dict)
    # when the held-back scores may be written (scoreRateLimit), and whether this pass writes new ones
    scores_held_until: datetime | None = None
    scores_written: bool = False
    # when the result can change by itself: a toleration running out, a score expiring
    toleration_requeue_at: datetime | None = None
    score_expiry_at: datetime | None = None
    new_status: PlacementStatus | None = None

    @property
    def acts(self) -> bool:
        """Whether the controller writes anything for this pass."""
        return self.skipped is None and self.aborted is None

    def requeue_at(self) -> datetime | None:
        times = [t for t in (self.toleration_requeue_at, self.score_expiry_at, self.scores_held_until) if t is not None]
        return min(times) if times else None


def skip_reason(placement: Placement) -> str | None:
    if placement.metadata.deletion_timestamp is not None:
        return "the Placement is being deleted"
    if placement.metadata.annotations.get(DISABLE_ANNOTATION) == "true":
        return f"scheduling is disabled by the annotation {DISABLE_ANNOTATION}"
    return None


def resolve_clusters(
    placement: Placement, snapshot: Snapshot
) -> tuple[list[str], list[str], list[ClusterView]]:
    """(valid bindings, eligible sets, available clusters by name) of §2.

    Raises SetResolutionError for an eligible set whose members cannot be computed.
    """
    valid = sorted(b.name for b in snapshot.bindings_in(placement.namespace) if b.name in snapshot.cluster_sets)
    eligible = sorted(set(valid))
    if placement.spec.cluster_sets:
        wanted = set(placement.spec.cluster_sets)
        eligible = [name for name in eligible if name in wanted]
    names: set[str] = set()
    for set_name in eligible:
        names.update(snapshot.set_members(set_name))
    available = [snapshot.clusters[n] for n in sorted(names) if not snapshot.clusters[n].deleting]
    return valid, eligible, available


def schedule(placement: Placement, snapshot: Snapshot, now: datetime, *, honour_skip: bool = True) -> ScheduleResult:
    """Schedule one Placement against one snapshot at ``now``.

    ``honour_skip=False`` schedules even a deleting or disabled Placement (the debug endpoint
    does, as OCM's debugger calls the scheduler directly).
    """
    result = ScheduleResult(placement=placement)
    result.skipped = skip_reason(placement) if honour_skip else None
    if result.skipped is not None:
        return result
    result.warnings = spec_warnings(placement)
    try:
        valid, eligible, available = resolve_clusters(placement, snapshot)
    except SetResolutionError as exc:
        result.aborted = str(exc)
        result.status = Status(MISCONFIGURED, "", result.aborted)
        result.conditions = [misconfigured_condition(result.status)]
        result.new_status = misconfigured_status(placement, result.conditions[0], now)
        return result
    result.valid_bindings, result.eligible_sets = valid, eligible
    result.available = [c.name for c in available]

    status = _run_plugins(placement, snapshot, available, result, now)
    if result.aborted is not None:
        return result

    by_name = {c.name: c for c in available}
    last_update = _decision_scores(placement, snapshot, result, now)
    by_score = result.decision_scores if placement.spec.sort_by == SORT_BY_SCORE else None
    groups, group_status = decision_groups(
        placement.spec.effective_group_strategy(), [by_name[n] for n in result.selected], by_score
    )
    if group_status.is_error:
        status = group_status
    result.status = status
    result.groups = groups
    result.pages = decision_pages(placement.name, groups)
    result.conditions = [
        misconfigured_condition(status),
        satisfied_condition(
            placement.spec.cluster_sets,
            eligible,
            len(valid),
            len(available),
            len(result.selected),
            result.unscheduled,
            status,
            "" if result.spread is None else result.spread.held_back_text(),
        ),
    ]
    result.new_status = new_status(
        placement,
        selected=len(result.selected),
        groups=groups,
        pages=result.pages,
        conditions=result.conditions,
        now=now,
        last_score_update=last_update,
    )
    return result


def _decision_scores(placement: Placement, snapshot: Snapshot, result: ScheduleResult, now: datetime) -> datetime | None:
    """Fill ``result.decision_scores`` under ``scoreRateLimit``; return the next
    ``lastScoreUpdateTime``.

    A pass that keeps the selected set and changes scores within the limit since the last
    score write keeps the recorded scores (and asks to run again when the limit ends); any
    other pass writes the new totals at once.
    """
    fresh = {name: result.scores[name] for name in result.selected}
    recorded = snapshot.recorded_scores(placement.namespace, placement.name)
    last = placement.status.last_score_update_time
    held_until = None if last is None else last + score_rate_limit(placement.spec.score_rate_limit)
    same_set = set(recorded) == set(fresh)
    if same_set and held_until is not None and now < held_until:
        kept = {name: recorded[name] for name in fresh}
        if kept != fresh:
            result.decision_scores = {name: fresh[name] if score is None else score for name, score in kept.items()}
            result.scores_held_until = held_until
            result.scores_written = any(recorded[n] is None for n in fresh)
            return now if result.scores_written else last
    result.decision_scores = fresh
    result.scores_written = any(recorded.get(name) != score for name, score in fresh.items())
    return now if result.scores_written else last


def score_rate_limit(text: str) -> timedelta:
    """``scoreRateLimit`` (``^[0-9]+[hms]$``, the CRD's pattern) as a duration."""
    unit = {"h": 3600, "m": 60, "s": 1}.get(text[-1:]) if text else None
    if unit is None or not text[:-1].isdigit():
        return timedelta(minutes=1)
    return timedelta(seconds=int(text[:-1]) * unit)


def _run_plugins(
    placement: Placement,
    snapshot: Snapshot,
    available: list[ClusterView],
    result: ScheduleResult,
    now: datetime,
) -> Status:
    """§3-§5: the filters, then the weighted prioritizers (``plugins``), then selection."""
    final = OK
    current = snapshot.current_decisions(placement.namespace, placement.name)
    filtered = list(available)
    toleration_requeue_at: datetime | None = None
    names: list[str] = []
    for plugin in FILTERS:
        out = plugin.run(PluginInput(placement, snapshot, filtered, current, now))
        if out.status.is_error:
            return out.status
        filtered = out.clusters
        toleration_requeue_at = out.requeue_at or toleration_requeue_at
        names.append(plugin.name)
        result.filter_results.append(FilterResult(",".join(names), tuple(c.name for c in filtered)))
    pipeline_index = len(result.filter_results) - 1

    weights, status = prioritizer_weights(placement.spec.prioritizer_policy)
    if status.is_error:
        return status
    prioritizers, status = build_prioritizers(weights)
    if status.is_error:
        return status

    totals = {c.name: 0 for c in filtered}
    for prioritizer in prioritizers:
        out = scorer(prioritizer).run(PluginInput(placement, snapshot, filtered, current, now))
        if out.status.code == WARNING:
            final = out.status
        if out.requeue_at is not None and (result.score_expiry_at is None or out.requeue_at < result.score_expiry_at):
            result.score_expiry_at = out.requeue_at
        result.prioritizer_results.append(PrioritizerResult(prioritizer.name, prioritizer.weight, out.scores))
        for name, value in out.scores.items():
            totals[name] = totals.get(name, 0) + value * prioritizer.weight

    ordered = sorted(filtered, key=lambda c: (-totals[c.name], c.name))
    result.scores = totals
    result.feasible = [c.name for c in ordered]
    result.filter_results[pipeline_index] = FilterResult(",".join(names), tuple(result.feasible))

    wanted = placement.spec.number_of_clusters
    if wanted is not None and wanted < 0:
        # OCM's scheduler panics here and the Placement never gets a status; ours says why.
        return Status(MISCONFIGURED, "", f"numberOfClusters must not be negative (got {wanted})")
    policy = placement.spec.spread_policy
    terms = spread_terms(policy.spread_constraints) if policy is not None else []
    spread = select_clusters(ordered, totals, terms, wanted)
    result.spread = spread if terms else None
    result.selected = spread.selected
    result.unscheduled = 0 if wanted is None else wanted - len(spread.selected)
    result.toleration_requeue_at = toleration_requeue_at
    return final

