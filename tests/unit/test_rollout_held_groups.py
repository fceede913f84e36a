"""The planner's held decision groups (manual promotion): nothing new starts in a held group or
after it, clusters that already reported are judged as usual, and the walk says it stopped there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ocm_rollout.controllers.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    RolloutStatus,
    plan_rollout,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
GROUPS = [
    DecisionGroup(group_name="canary", group_index=0, clusters=["a1", "a2"]),
    DecisionGroup(group_name="prod", group_index=1, clusters=["b1", "b2", "b3"]),
    DecisionGroup(group_name="prod", group_index=2, clusters=["c1"]),
]
HELD = frozenset({GroupKey("prod", 1), GroupKey("prod", 2)})


def names(plan: object) -> list[str]:
    return sorted(e.cluster_name for e in plan.clusters_to_rollout)  # type: ignore[attr-defined]


def done(*clusters: str) -> list[ClusterRolloutStatus]:
    return [ClusterRolloutStatus(c, RolloutStatus.SUCCEEDED, NOW - timedelta(minutes=5)) for c in clusters]


def test_progressive_per_group_stops_at_the_held_group() -> None:
    strategy = {"type": "ProgressivePerGroup"}
    first = plan_rollout(strategy, GROUPS, [], NOW, held=HELD)
    assert names(first) == ["a1", "a2"]
    after = plan_rollout(strategy, GROUPS, done("a1", "a2"), NOW, held=HELD)
    assert names(after) == [] and after.trace.stop == "promotion"
    assert after.trace.stop_group == GroupKey("prod", 1)
    # Without the hold the same input goes on to group 1.
    assert names(plan_rollout(strategy, GROUPS, done("a1", "a2"), NOW)) == ["b1", "b2", "b3"]


def test_progressive_never_picks_a_held_cluster_and_says_it_waits() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 4}}
    first = plan_rollout(strategy, GROUPS, [], NOW, held=HELD)
    assert names(first) == ["a1", "a2"]
    after = plan_rollout(strategy, GROUPS, done("a1", "a2"), NOW, held=HELD)
    assert names(after) == [] and after.trace.stop == "promotion"


def test_all_rolls_out_the_open_groups_only() -> None:
    out = plan_rollout({"type": "All"}, GROUPS, [], NOW, held=HELD)
    assert names(out) == ["a1", "a2"]


def test_a_reported_cluster_of_a_held_group_is_still_judged() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 4, "progressDeadline": "1m"}}
    existing = [
        *done("a1", "a2"),
        ClusterRolloutStatus("b1", RolloutStatus.PROGRESSING, NOW - timedelta(minutes=5)),
    ]
    out = plan_rollout(strategy, GROUPS, existing, NOW, held=HELD)
    assert [e.cluster_name for e in out.clusters_timeout] == ["b1"]
    assert names(out) == []


def test_a_held_mandatory_group_holds_everything() -> None:
    strategy = {"type": "Progressive", "progressive": {"mandatoryDecisionGroups": [{"groupName": "canary"}]}}
    out = plan_rollout(strategy, GROUPS, [], NOW, held=frozenset({GroupKey("canary", 0)}))
    assert names(out) == [] and out.trace.stop == "promotion" and out.trace.phase == "mandatory"
