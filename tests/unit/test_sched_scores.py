"""Scores in decisions, sortBy and scoreRateLimit."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.meta import format_time
from ocm_rollout.controllers.placement.decisions import desired_decisions, plan_decision_writes
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, score_rate_limit
from tests.unit.test_sched_builders import NOW, cluster, placement, run, score, world

# Exact mode with one AddOn prioritizer: a cluster's total is its "usage/value" score.
POLICY = {
    "mode": "Exact",
    "configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "usage", "scoreName": "value"}}}],
}


def scored(values: Mapping[str, int], **spec: Any) -> tuple[Placement, list[Any]]:
    p = placement(prioritizerPolicy=POLICY, **spec)
    return p, [score(name, "usage", {"value": v}) for name, v in values.items()]


def existing(
    p: Placement, recorded: Mapping[str, int | None], name: str = "p-decision-1"
) -> PlacementDecision:
    decisions = []
    for cluster_name, value in recorded.items():
        entry: dict[str, Any] = {"clusterName": cluster_name, "reason": ""}
        if value is not None:
            entry["score"] = value
        decisions.append(entry)
    return PlacementDecision.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": p.namespace,
                "labels": {
                    "cluster.open-cluster-management.io/placement": p.name,
                    "cluster.open-cluster-management.io/decision-group-index": "0",
                    "cluster.open-cluster-management.io/decision-group-name": "",
                },
            },
            "status": {"decisions": decisions},
        }
    )


def last_update(p: Placement, ago: timedelta | None) -> Placement:
    status = {} if ago is None else {"lastScoreUpdateTime": format_time(NOW - ago)}
    return Placement.model_validate({**p.to_wire(), "status": status})


def schedule_with(
    values: Mapping[str, int], recorded: Mapping[str, int | None], ago: timedelta | None, **spec: Any
) -> ScheduleResult:
    p, scores = scored(values, **spec)
    p = last_update(p, ago)
    clusters = [cluster(name) for name in values]
    return run(p, world(clusters, decisions=[existing(p, recorded)], scores=scores))


def entries(result: ScheduleResult) -> list[dict[str, Any]]:
    pages = desired_decisions(result.placement, result.pages, result.decision_scores)
    return [d for page in pages for d in page["status"]["decisions"]]


# --------------------------------------------------------------------------------------------
# Scores in decisions
# --------------------------------------------------------------------------------------------


def test_every_decision_carries_its_prioritizer_total() -> None:
    p, scores = scored({"a": 7, "b": -3, "c": 0})
    result = run(p, world([cluster(n) for n in "abc"], scores=scores))
    assert entries(result) == [
        {"clusterName": "a", "reason": "", "score": 7},
        {"clusterName": "b", "reason": "", "score": -3},
        {"clusterName": "c", "reason": "", "score": 0},
    ]


def test_default_additive_scores_are_written_too() -> None:
    result = run(placement(), world([cluster("a")]))
    assert entries(result) == [{"clusterName": "a", "reason": "", "score": result.scores["a"]}]


# --------------------------------------------------------------------------------------------
# sortBy
# --------------------------------------------------------------------------------------------


def test_sort_by_cluster_name_is_the_default_order() -> None:
    p, scores = scored({"a": 1, "b": 9, "c": 5})
    result = run(p, world([cluster(n) for n in "abc"], scores=scores))
    assert [e["clusterName"] for e in entries(result)] == ["a", "b", "c"]


def test_sort_by_score_orders_by_score_then_name() -> None:
    p, scores = scored({"a": 1, "b": 9, "c": 5, "d": 9}, sortBy="Score")
    result = run(p, world([cluster(n) for n in "abcd"], scores=scores))
    assert [e["clusterName"] for e in entries(result)] == ["b", "d", "c", "a"]


def test_sort_by_score_orders_remaining_clusters_before_they_are_cut_into_groups() -> None:
    values = {f"c{i}": i for i in range(6)}
    p, scores = scored(values, sortBy="Score", decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": 2}})
    result = run(p, world([cluster(n) for n in values], scores=scores))
    assert [g.clusters for g in result.groups] == [("c5", "c4"), ("c3", "c2"), ("c1", "c0")]


def test_sort_by_score_orders_within_each_named_group() -> None:
    values = {"a": 1, "b": 2, "x": 3, "y": 4}
    canary = {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}}}}
    p, scores = scored(values, sortBy="Score", decisionStrategy={"groupStrategy": {"decisionGroups": [canary]}})
    clusters = [cluster(n, {"canary": "true"} if n in "ab" else {}) for n in values]
    result = run(p, world(clusters, scores=scores))
    assert [(g.name, g.clusters) for g in result.groups] == [("canary", ("b", "a")), ("", ("y", "x"))]


def test_sort_by_score_pages_keep_the_score_order() -> None:
    values = {f"c{i:03d}": i - 75 for i in range(150)}
    p, scores = scored(values, sortBy="Score")
    result = run(p, world([cluster(n) for n in values], scores=scores))
    assert [len(page.clusters) for page in result.pages] == [100, 50]
    assert result.pages[0].clusters[0] == "c149"
    assert result.pages[1].clusters[-1] == "c000"


# --------------------------------------------------------------------------------------------
# scoreRateLimit
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("1m", 60), ("30s", 30), ("2h", 7200), ("0s", 0), ("", 60), ("5x", 60)]
)
def test_score_rate_limit_durations(text: str, seconds: int) -> None:
    assert score_rate_limit(text) == timedelta(seconds=seconds)


def test_a_score_only_change_within_the_limit_keeps_the_recorded_scores() -> None:
    result = schedule_with({"a": 5, "b": 6}, {"a": 1, "b": 2}, timedelta(seconds=30))
    assert result.decision_scores == {"a": 1, "b": 2}
    assert result.scores_held_until == NOW + timedelta(seconds=30)
    assert result.requeue_at() == NOW + timedelta(seconds=30)
    assert not result.scores_written
    assert result.new_status is not None
    assert result.new_status.last_score_update_time == NOW - timedelta(seconds=30)
    p = result.placement
    stored = desired_decisions(p, result.pages, {"a": 1, "b": 2})
    assert plan_decision_writes(desired_decisions(p, result.pages, result.decision_scores), {"p-decision-1": stored[0]}) == []


def test_a_score_only_change_after_the_limit_is_written_and_recorded() -> None:
    result = schedule_with({"a": 5, "b": 6}, {"a": 1, "b": 2}, timedelta(seconds=60))
    assert result.decision_scores == {"a": 5, "b": 6}
    assert result.scores_held_until is None
    assert result.scores_written
    assert result.new_status is not None and result.new_status.last_score_update_time == NOW


def test_a_change_of_the_selected_set_is_written_at_once_with_every_new_score() -> None:
    result = schedule_with({"a": 5, "b": 6, "c": 7}, {"a": 1, "b": 2}, timedelta(seconds=1))
    assert result.decision_scores == {"a": 5, "b": 6, "c": 7}
    assert result.scores_held_until is None
    assert result.new_status is not None and result.new_status.last_score_update_time == NOW


def test_without_a_recorded_update_time_new_scores_are_written_at_once() -> None:
    result = schedule_with({"a": 5}, {"a": 1}, None)
    assert result.decision_scores == {"a": 5}
    assert result.new_status is not None and result.new_status.last_score_update_time == NOW


def test_unchanged_scores_leave_the_update_time_alone() -> None:
    result = schedule_with({"a": 5}, {"a": 5}, timedelta(hours=3))
    assert result.decision_scores == {"a": 5}
    assert not result.scores_written and result.scores_held_until is None
    assert result.new_status is not None
    assert result.new_status.last_score_update_time == NOW - timedelta(hours=3)


def test_decisions_without_a_score_get_one_even_within_the_limit() -> None:
    result = schedule_with({"a": 5, "b": 6}, {"a": 1, "b": None}, timedelta(seconds=10))
    assert result.decision_scores == {"a": 1, "b": 6}
    assert result.scores_written


def test_the_limit_is_the_placements_own() -> None:
    held = schedule_with({"a": 5}, {"a": 1}, timedelta(minutes=5), scoreRateLimit="10m")
    assert held.decision_scores == {"a": 1}
    assert held.scores_held_until == NOW + timedelta(minutes=5)
    free = schedule_with({"a": 5}, {"a": 1}, timedelta(seconds=1), scoreRateLimit="0s")
    assert free.decision_scores == {"a": 5}


def test_held_scores_also_hold_the_score_order() -> None:
    # Recorded: a above b. New scores would swap them; within the limit nothing moves.
    result = schedule_with(
        {"a": 1, "b": 9},
        {"a": 9, "b": 1},
        timedelta(seconds=5),
        sortBy="Score",
        decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": 1}},
    )
    assert [g.clusters for g in result.groups] == [("a",), ("b",)]
