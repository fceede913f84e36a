"""Spec §6: decision groups and PlacementDecision pages."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.controllers.placement.groups import group_length
from tests.unit.test_sched_builders import cluster, misconfigured, placement, plain, run, satisfied, world


def strategy(per_group: int | str | None = None, *groups: dict[str, Any]) -> dict[str, Any]:
    group_strategy: dict[str, Any] = {"decisionGroups": list(groups)}
    if per_group is not None:
        group_strategy["clustersPerDecisionGroup"] = per_group
    return {"groupStrategy": group_strategy}


def named(name: str, key: str) -> dict[str, Any]:
    return {"groupName": name, "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}}}


def groups_of(result: Any) -> list[tuple[int, str, int]]:
    return [(g.index, g.name, len(g.clusters)) for g in result.groups]


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [(3, 10, 3), (0, 10, 10), (-4, 10, 10), (11, 10, 10), ("25%", 10, 3), ("100%", 10, 10), ("7%", 100, 8),
     ("33%", 10, 4), ("1%", 0, 0), ("50%", 1, 1)],
)  # fmt: skip
def test_group_length(value: int | str, total: int, expected: int) -> None:
    assert group_length(value, total) == (expected, group_length(1, 1)[1])


@pytest.mark.parametrize("value", ["25", "x%", "%"])
def test_group_length_non_percentage_string_is_misconfigured(value: str) -> None:
    _, status = group_length(value, 10)
    assert status.code == "Misconfigured"
    assert status.message == f"{value} invalid type: string is not a percentage"


def test_default_is_one_group_of_everything() -> None:
    assert groups_of(run(placement(), world(plain(5)))) == [(0, "", 5)]


def test_no_selected_cluster_gives_one_empty_group_and_page() -> None:
    result = run(placement(), world([]))
    assert groups_of(result) == [(0, "", 0)]
    assert [(p.name, p.clusters) for p in result.pages] == [("p-decision-1", ())]


def test_remaining_clusters_cut_by_length_in_name_order() -> None:
    result = run(placement(decisionStrategy=strategy(2)), world(plain(5)))
    assert [g.clusters for g in result.groups] == [("c1", "c2"), ("c3", "c4"), ("c5",)]


def test_named_group_takes_matching_selected_clusters() -> None:
    clusters = [cluster("a", {"canary": "1"}), cluster("b"), cluster("c", {"canary": "1"})]
    result = run(placement(decisionStrategy=strategy(None, named("canary", "canary"))), world(clusters))
    assert [(g.name, g.clusters) for g in result.groups] == [("canary", ("a", "c")), ("", ("b",))]


def test_later_group_does_not_retake_clusters() -> None:
    clusters = [cluster("a", {"x": "1", "y": "1"}), cluster("b", {"y": "1"})]
    result = run(placement(decisionStrategy=strategy(None, named("gx", "x"), named("gy", "y"))), world(clusters))
    assert [(g.name, g.clusters) for g in result.groups] == [("gx", ("a",)), ("gy", ("b",))]


def test_group_matching_nothing_is_skipped_and_indexes_move_up() -> None:
    clusters = [cluster("a", {"y": "1"}), cluster("b")]
    result = run(placement(decisionStrategy=strategy(None, named("gx", "x"), named("gy", "y"))), world(clusters))
    assert groups_of(result) == [(0, "gy", 1), (1, "", 1)]


def test_groups_only_use_selected_clusters() -> None:
    clusters = [cluster("a", {"x": "1"}), cluster("b", {"x": "1"}), cluster("c")]
    p = placement(numberOfClusters=1, decisionStrategy=strategy(None, named("gx", "x")))
    assert groups_of(run(p, world(clusters))) == [(0, "gx", 1)]


def test_named_group_cut_into_chunks_of_length() -> None:
    clusters = [cluster(f"c{i}", {"x": "1"}) for i in range(5)]
    result = run(placement(decisionStrategy=strategy(2, named("gx", "x"))), world(clusters))
    assert groups_of(result) == [(0, "gx", 2), (1, "gx", 2), (2, "gx", 1)]


def test_group_selector_uses_claims() -> None:
    clusters = [cluster("a", claims={"region": "eu"}), cluster("b")]
    group = {"groupName": "eu", "groupClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}}}
    assert groups_of(run(placement(decisionStrategy=strategy(None, group)), world(clusters))) == [(0, "eu", 1), (1, "", 1)]


def test_group_with_empty_selector_takes_everything() -> None:
    group = {"groupName": "all", "groupClusterSelector": {}}
    assert groups_of(run(placement(decisionStrategy=strategy(None, group)), world(plain(3)))) == [(0, "all", 3)]


def test_percentage_string_not_a_percentage_drops_all_groups() -> None:
    result = run(placement(decisionStrategy=strategy("25")), world(plain(4)))
    assert result.groups == [] and result.pages == []
    assert misconfigured(result) == ("True", "Misconfigured", ":25 invalid type: string is not a percentage")
    assert satisfied(result)[0] == "True"
    assert result.new_status is not None and result.new_status.number_of_selected_clusters == 4


def test_invalid_group_selector_keeps_earlier_groups_only() -> None:
    bad = {"groupName": "bad", "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "x", "operator": "Nope"}]}}}
    clusters = [cluster("a", {"g": "1"}), cluster("b")]
    result = run(placement(decisionStrategy=strategy(None, named("g1", "g"), bad)), world(clusters))
    assert groups_of(result) == [(0, "g1", 1)]
    assert misconfigured(result)[0] == "True"


def test_invalid_first_group_selector_gives_no_groups() -> None:
    bad = {"groupName": "bad", "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "x", "operator": "Nope"}]}}}
    result = run(placement(decisionStrategy=strategy(None, bad)), world(plain(2)))
    assert result.groups == [] and result.pages == []


def test_pages_hold_at_most_100_clusters() -> None:
    result = run(placement(), world(plain(250)))
    assert [len(p.clusters) for p in result.pages] == [100, 100, 50]
    assert [p.name for p in result.pages] == ["p-decision-1", "p-decision-2", "p-decision-3"]


def test_page_numbers_continue_across_groups() -> None:
    result = run(placement(decisionStrategy=strategy(150)), world(plain(310)))
    assert [(p.name, p.group_index, len(p.clusters)) for p in result.pages] == [
        ("p-decision-1", 0, 100), ("p-decision-2", 0, 50), ("p-decision-3", 1, 100), ("p-decision-4", 1, 50),
        ("p-decision-5", 2, 10),
    ]  # fmt: skip


def test_decisions_within_group_in_byte_order_not_score() -> None:
    clusters = [cluster("b"), cluster("a"), cluster("B")]
    assert run(placement(), world(clusters)).groups[0].clusters == ("B", "a", "b")


def test_status_lists_groups_with_page_names() -> None:
    result = run(placement(decisionStrategy=strategy(120)), world(plain(130)))
    assert result.new_status is not None
    assert [g.to_wire() for g in result.new_status.decision_groups] == [
        {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["p-decision-1", "p-decision-2"], "clusterCount": 120},
        {"decisionGroupIndex": 1, "decisionGroupName": "", "decisions": ["p-decision-3"], "clusterCount": 10},
    ]
