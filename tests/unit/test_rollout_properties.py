"""Property tests of the rollout planner over random groups, statuses, times and strategies.

Each test names the invariant of docs/behaviour/rollout.md it checks. The expected values are computed here from
the specification's definitions (visibility, mandatory selection, window ends, thresholds), not
from the planner's internals.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ocm_rollout.controllers.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    PlannedCluster,
    RolloutPlan,
    RolloutStatus,
    plan_rollout,
)

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NOW_NS = int((NOW - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 1_000_000_000
CLUSTERS = [f"c{number:02d}" for number in range(10)]
GROUP_NAMES = ["canary", "prod", "", "edge"]
DEADLINES: dict[str | None, int | None] = {None: None, "None": None, "": None, "0s": 0, "5m": 300, "10m": 600}
SOAKS: dict[str | None, int] = {None: 0, "0s": 0, "3m": 180, "5m": 300, "-1m": -60}
OFFSETS = [None, -7200, -3600, -1200, -600, -300, -180, -1, 0, 1, 60]  # seconds relative to NOW
THRESHOLDS: list[Any] = [None, 0, 1, 2, 3, 5, "0%", "7%", "25%", "50%", "150%"]
REFERENCES: list[dict[str, Any]] = [
    {"groupName": "canary"},
    {"groupName": "edge", "groupIndex": 0},
    {"groupIndex": 0},
    {"groupIndex": 1},
    {"groupIndex": 4},
    {},
    {"groupName": "nope"},
]


@dataclass(frozen=True)
class Scenario:
    strategy: dict[str, Any]
    groups: list[DecisionGroup]
    existing: list[ClusterRolloutStatus]

    def plan(self) -> RolloutPlan:
        return plan_rollout(self.strategy, self.groups, self.existing, NOW)

    @property
    def body(self) -> dict[str, Any]:
        key = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}
        body: dict[str, Any] = self.strategy.get(key[self.strategy["type"]]) or {}
        return body

    # --- the specification's definitions, computed independently of the planner ---

    def visible(self) -> set[GroupKey]:
        keys = {GroupKey(g.group_name, g.group_index) for g in self.groups}
        count = len({key.group_index for key in keys})
        return {key for key in keys if 0 <= key.group_index < count}

    def mandatory(self) -> set[GroupKey]:
        if self.strategy["type"] == "All":
            return set()
        keys = {GroupKey(g.group_name, g.group_index) for g in self.groups}
        chosen: set[GroupKey] = set()
        for ref in self.body.get("mandatoryDecisionGroups") or []:
            if ref.get("groupName"):
                chosen |= {key for key in keys if key.group_name == ref["groupName"]}
            else:
                chosen |= {key for key in keys if key.group_index == ref.get("groupIndex", 0)}
        return chosen

    def members(self, keys: set[GroupKey]) -> set[str]:
        return {c for g in self.groups if GroupKey(g.group_name, g.group_index) in keys for c in g.clusters}

    def current(self) -> dict[str, ClusterRolloutStatus]:
        universe = self.members(self.visible())
        return {entry.cluster_name: entry for entry in self.existing if entry.cluster_name in universe}

    def soak_ns(self) -> int:
        if self.strategy["type"] == "All":
            return 0
        return SOAKS[self.body.get("minSuccessTime")] * 1_000_000_000

    def deadline_ns(self) -> int | None:
        seconds = DEADLINES[self.body.get("progressDeadline")]
        return None if seconds is None else seconds * 1_000_000_000

    def window_end(self, entry: ClusterRolloutStatus | PlannedCluster) -> int | None:
        """Section 6: the soak end of a Succeeded cluster, the deadline of one in flight."""
        if isinstance(entry, PlannedCluster):
            status, ltt = entry.status, entry.last_transition_time_ns
        else:
            status, raw = entry.status, entry.last_transition_time
            assert raw is None or isinstance(raw, datetime)
            ltt = None if raw is None else NOW_NS + int((raw - NOW).total_seconds()) * 1_000_000_000
        start = NOW_NS if ltt is None else ltt
        if status is RolloutStatus.SUCCEEDED:
            return start + self.soak_ns()
        if status in (RolloutStatus.PROGRESSING, RolloutStatus.FAILED):
            deadline = self.deadline_ns()
            return None if deadline is None else start + deadline
        return None

    def is_done(self, cluster: str) -> bool:
        """Reported and finished: Succeeded after its soak, TimeOut or Skip."""
        entry = self.current().get(cluster)
        if entry is None:
            return False
        if entry.status in (RolloutStatus.TIME_OUT, RolloutStatus.SKIP):
            return True
        if entry.status is RolloutStatus.SUCCEEDED:
            end = self.window_end(entry)
            return end is None or not NOW_NS < end
        return False


# A reported state: (status, transition time in seconds relative to NOW or None), or None for a
# cluster that has not reported. Meaningful states first, then any combination.
STATES: list[tuple[RolloutStatus, int | None] | None] = [
    None,
    (RolloutStatus.SUCCEEDED, -7200),
    (RolloutStatus.SUCCEEDED, -60),
    (RolloutStatus.SUCCEEDED, 60),
    (RolloutStatus.SUCCEEDED, None),
    (RolloutStatus.PROGRESSING, -60),
    (RolloutStatus.PROGRESSING, -1200),
    (RolloutStatus.PROGRESSING, None),
    (RolloutStatus.FAILED, -60),
    (RolloutStatus.FAILED, -1200),
    (RolloutStatus.TO_APPLY, -60),
    (RolloutStatus.TIME_OUT, None),
    (RolloutStatus.SKIP, None),
]


CALM_STATES = [
    None,
    (RolloutStatus.SUCCEEDED, -7200),
    (RolloutStatus.TIME_OUT, None),
    (RolloutStatus.SKIP, None),
]


@st.composite
def reported_states(draw: st.DrawFn) -> tuple[RolloutStatus, int | None] | None:
    if draw(st.integers(0, 3)) == 0:
        return (draw(st.sampled_from(list(RolloutStatus))), draw(st.sampled_from(OFFSETS)))
    return draw(st.sampled_from(STATES))


@st.composite
def scenarios(
    draw: st.DrawFn,
    kinds: tuple[str, ...] = ("Progressive", "ProgressivePerGroup", "All"),
    with_mandatory: bool = False,
) -> Scenario:
    group_count = draw(st.integers(2 if with_mandatory else 0, 4))
    if draw(st.booleans()):
        indexes = list(range(group_count))
    else:
        indexes = draw(st.lists(st.integers(0, 5), min_size=group_count, max_size=group_count, unique=True))
    names = [draw(st.sampled_from(GROUP_NAMES)) for _ in indexes]
    # Some groups are finished (every cluster Succeeded long ago), so later phases are reached.
    finished = [draw(st.booleans()) for _ in indexes]
    if with_mandatory:  # the first group is the mandatory one: mostly finished, the others mostly not
        finished = [
            draw(st.integers(0, 3)) > 0 if n == 0 else draw(st.integers(0, 3)) == 0
            for n in range(len(indexes))
        ]
    placement = [draw(st.integers(-1, group_count - 1)) for _ in CLUSTERS]
    groups = [
        DecisionGroup(
            group_name=names[position],
            group_index=index,
            clusters=[c for c, where in zip(CLUSTERS, placement, strict=True) if where == position],
        )
        for position, index in enumerate(indexes)
    ]
    # Between two waves nothing is in flight: reported clusters are finished or not there yet.
    calm = draw(st.booleans())
    existing = []
    for cluster, where in zip([*CLUSTERS, "gone1", "gone2"], [*placement, -1, -1], strict=True):
        if where >= 0 and finished[where]:
            state: tuple[RolloutStatus, int | None] | None = (RolloutStatus.SUCCEEDED, -7200)
        elif calm:
            state = draw(st.sampled_from(CALM_STATES))
        else:
            state = draw(reported_states())
        if state is not None:
            status, offset = state
            ltt = None if offset is None else NOW + timedelta(seconds=offset)
            existing.append(ClusterRolloutStatus(cluster, status, ltt))
    kind = draw(st.sampled_from(kinds))
    body: dict[str, Any] = {}
    for name, choices in (
        ("progressDeadline", list(DEADLINES)),
        ("minSuccessTime", list(SOAKS)),
        ("maxFailures", THRESHOLDS),
        ("maxConcurrency", THRESHOLDS),
    ):
        value = draw(st.sampled_from(choices))
        if value is not None:
            body[name] = value
    if kind != "All" and (with_mandatory or draw(st.integers(0, 3)) > 0):
        references = draw(st.lists(st.sampled_from(REFERENCES), min_size=1, max_size=3))
        if with_mandatory:
            references.append({"groupIndex": indexes[0]})
        body["mandatoryDecisionGroups"] = references
    key = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}[kind]
    return Scenario({"type": kind, key: body}, groups, existing)


def size(value: Any, total: int, fallback: int) -> int:
    """Section 7, for the simple values generated here."""
    if value is None:
        value = 0
    if isinstance(value, str):
        length = math.ceil(float(value[:-1]) / 100 * total)
    else:
        length = value
    return fallback if length <= 0 or length > total else length


def as_sets(result: RolloutPlan) -> tuple[Any, ...]:
    return (
        frozenset(result.clusters_to_rollout),
        frozenset(result.clusters_timeout),
        frozenset(result.clusters_removed),
        result.max_failure_breach,
        result.recheck_after_ns,
        repr(result.strategy.to_dict()),
    )


@SETTINGS
@given(scenarios(kinds=("Progressive",)))
def test_invariant_progressive_rest_phase_never_exceeds_max_concurrency(scenario: Scenario) -> None:
    """Outside the mandatory groups, Progressive never has more clusters in the rollout list than
    maxConcurrency (resolved over the non-mandatory clusters) allows."""
    result = scenario.plan()
    if result.trace.phase != "rest":
        return
    rest = scenario.visible() - scenario.mandatory()
    rest_size = len(scenario.members(rest))
    batch = size(scenario.body.get("maxConcurrency"), rest_size, rest_size)
    assert len(result.clusters_to_rollout) <= batch


@SETTINGS
@given(scenarios())
def test_invariant_a_breach_never_adds_a_to_apply_cluster(scenario: Scenario) -> None:
    """Once maxFailures is breached no further ToApply cluster is added: the cluster walk adds no
    new cluster at all, and the group walk adds none from a group after the breaching one."""
    result = scenario.plan()
    if not result.max_failure_breach:
        return
    current = scenario.current()
    new = [
        entry
        for entry in result.clusters_to_rollout
        if entry.status is RolloutStatus.TO_APPLY and entry.cluster_name not in current
    ]
    if result.trace.walk == "cluster":
        assert new == []
        for entry in result.clusters_to_rollout:
            if entry.status is RolloutStatus.TO_APPLY:
                assert current[entry.cluster_name].status is RolloutStatus.TO_APPLY
    else:
        breaching = result.trace.stop_group
        assert breaching is not None
        assert all(entry.group_index <= breaching.group_index for entry in new)


@SETTINGS
@given(scenarios(kinds=("Progressive", "ProgressivePerGroup"), with_mandatory=True))
def test_invariant_mandatory_groups_always_go_first(scenario: Scenario) -> None:
    """A cluster of a non-mandatory group is only planned (ToApply) once the mandatory groups are
    finished: walking them by index, every cluster is reported and finished (Succeeded after its
    soak, TimeOut or Skip) up to and including the first group holding a reported TimeOut. (That
    failure breaches the mandatory walk with nothing to list, which ends the mandatory phase: the
    specification's rules make later mandatory groups wait no longer, see the appendix tests.)"""
    result = scenario.plan()
    mandatory_clusters = scenario.members(scenario.mandatory())
    rest_planned = [
        entry
        for entry in result.clusters_to_rollout
        if entry.status is RolloutStatus.TO_APPLY and entry.cluster_name not in mandatory_clusters
    ]
    if not rest_planned:
        return
    current = scenario.current()
    for key in sorted(scenario.mandatory(), key=lambda k: (k.group_index, k.group_name)):
        members = scenario.members({key})
        assert all(scenario.is_done(cluster) for cluster in members)
        if any(current[cluster].status is RolloutStatus.TIME_OUT for cluster in members):
            break


@SETTINGS
@given(scenarios(), st.randoms(use_true_random=False))
def test_invariant_result_is_deterministic_and_independent_of_input_order(
    scenario: Scenario, rng: random.Random
) -> None:
    """The same inputs give the same plan, whatever the order of the groups, of the clusters in
    each group and of the reported statuses (the lists compare as sets)."""
    first = scenario.plan()
    assert as_sets(scenario.plan()) == as_sets(first)
    groups = [
        DecisionGroup(
            group_name=g.group_name,
            group_index=g.group_index,
            clusters=rng.sample(list(g.clusters), len(g.clusters)),
        )
        for g in scenario.groups
    ]
    rng.shuffle(groups)
    existing = list(scenario.existing)
    rng.shuffle(existing)
    shuffled = Scenario(scenario.strategy, groups, existing).plan()
    assert as_sets(shuffled) == as_sets(first)


@SETTINGS
@given(scenarios())
def test_invariant_recheck_after_is_the_earliest_future_soak_end_or_deadline(scenario: Scenario) -> None:
    """recheckAfter is the earliest soak end or deadline after now among the rollout list, and every
    listed recheck time is that cluster's window end (timed-out clusters never count)."""
    result = scenario.plan()
    ends = []
    for entry in result.clusters_to_rollout:
        end = scenario.window_end(entry)
        assert entry.recheck_time_ns == end
        if end is not None and end > NOW_NS:
            ends.append(end - NOW_NS)
    assert result.recheck_after_ns == (min(ends) if ends else None)
