"""Spec §4 (prioritizers and scores) and §5 (selection)."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.controllers.placement.prioritizers import PrioritizerKey, prioritizer_weights
from tests.unit.test_sched_builders import (
    NOW,
    cluster,
    decision,
    memory_cluster,
    misconfigured,
    placement,
    plain,
    run,
    satisfied,
    score,
    world,
)


def policy(mode: str | None = None, *configs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"configurations": list(configs)}
    if mode is not None:
        out["mode"] = mode
    return out


def builtin(name: str, weight: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}}
    if weight is not None:
        out["weight"] = weight
    return out


def addon(resource: str, score_name: str, weight: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": resource, "scoreName": score_name}}}
    if weight is not None:
        out["weight"] = weight
    return out


def results(p: Any, snapshot: Any) -> dict[str, tuple[int, dict[str, int]]]:
    return {r.name: (r.weight, r.scores) for r in run(p, snapshot).prioritizer_results}


# -- weights ---------------------------------------------------------------------------------


def test_additive_mode_starts_with_balance_and_steady() -> None:
    assert list(results(placement(), world(plain(1)))) == ["Balance", "Steady"]


def test_empty_mode_is_additive() -> None:
    assert list(results(placement(prioritizerPolicy=policy("")), world(plain(1)))) == ["Balance", "Steady"]


def test_exact_mode_starts_from_no_weights() -> None:
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableCPU")))
    assert list(results(p, world(plain(1)))) == ["ResourceAllocatableCPU"]


def test_unknown_mode_is_misconfigured() -> None:
    result = run(placement(prioritizerPolicy=policy("Fancy")), world(plain(1)))
    assert misconfigured(result) == ("True", "Misconfigured", ":incorrect prioritizer policy mode: Fancy")


def test_mode_checked_even_without_bindings() -> None:
    result = run(placement(prioritizerPolicy=policy("Fancy")), world(plain(1), sets=[], bindings=[]))
    assert misconfigured(result)[0] == "True"
    assert satisfied(result)[1] == "NoManagedClusterSetBindings"


def test_configuration_overrides_default_weight() -> None:
    p = placement(prioritizerPolicy=policy(None, builtin("Steady", 3)))
    assert results(p, world(plain(1)))["Steady"][0] == 3


def test_duplicate_builtin_entries_last_wins() -> None:
    p = placement(prioritizerPolicy=policy("Exact", builtin("Steady", 2), builtin("Steady", 5)))
    assert results(p, world(plain(1))) == {"Steady": (5, {"c1": 0})}


def test_duplicate_addon_entries_both_count() -> None:
    p = placement(prioritizerPolicy=policy("Exact", addon("res", "s"), addon("res", "s")))
    snapshot = world(plain(1), scores=[score("c1", "res", {"s": 10})])
    result = run(p, snapshot)
    assert [r.name for r in result.prioritizer_results] == ["AddOn/res/s", "AddOn/res/s"]
    assert result.scores == {"c1": 20}


def test_zero_weight_drops_prioritizer() -> None:
    p = placement(prioritizerPolicy=policy(None, builtin("Balance", 0)))
    assert list(results(p, world(plain(1)))) == ["Steady"]


def test_unknown_builtin_is_misconfigured() -> None:
    result = run(placement(prioritizerPolicy=policy(None, builtin("Spread"))), world(plain(1)))
    assert misconfigured(result)[2] == ":incorrect builtin prioritizer: Spread"


def test_unknown_builtin_with_zero_weight_is_fine() -> None:
    result = run(placement(prioritizerPolicy=policy(None, builtin("Spread", 0))), world(plain(1)))
    assert misconfigured(result)[0] == "False"


def test_addon_coordinate_without_type_is_builtin_with_empty_name() -> None:
    config = {"scoreCoordinate": {"addOn": {"resourceName": "r", "scoreName": "s"}}}
    result = run(placement(prioritizerPolicy=policy(None, config)), world(plain(1)))
    assert misconfigured(result)[2] == ":incorrect builtin prioritizer: "


def test_addon_type_without_addon_is_misconfigured() -> None:
    config = {"scoreCoordinate": {"type": "AddOn"}}
    result = run(placement(prioritizerPolicy=policy(None, config)), world(plain(1)))
    assert misconfigured(result)[2] == ":addOn should not be empty"


def test_missing_score_coordinate_is_misconfigured() -> None:
    p = placement(prioritizerPolicy=policy(None, builtin("Steady")))
    object.__setattr__(p.spec.prioritizer_policy.configurations[0], "score_coordinate", None)  # type: ignore[union-attr]
    assert misconfigured(run(p, world(plain(1))))[2] == ":scoreCoordinate field is required"


def test_weights_keep_first_position_and_last_value() -> None:
    weights, _ = prioritizer_weights(
        placement(prioritizerPolicy=policy(None, builtin("Steady", 4), builtin("Balance", 2))).spec.prioritizer_policy
    )
    assert weights == [(PrioritizerKey("BuiltIn", "Balance"), 2), (PrioritizerKey("BuiltIn", "Steady"), 4)]


def test_prioritizers_checked_without_clusters() -> None:
    result = run(placement(prioritizerPolicy=policy(None, builtin("Nope"))), world([]))
    assert misconfigured(result)[0] == "True"


# -- scores ----------------------------------------------------------------------------------


def test_steady_scores_current_decisions_100() -> None:
    snapshot = world(plain(2), decisions=[decision("p-decision-1", ["c2"])])
    assert results(placement(), snapshot)["Steady"] == (1, {"c1": 0, "c2": 100})


def test_balance_without_other_decisions_scores_100() -> None:
    assert results(placement(), world(plain(2)))["Balance"] == (1, {"c1": 100, "c2": 100})


def test_balance_counts_other_placements_decisions() -> None:
    decisions = [
        decision("a-1", ["c1", "c2"], placement_name="a"),
        decision("b-1", ["c1"], placement_name="b"),
        decision("x-1", ["c1", "c2"], placement_name="x", namespace="other"),
    ]
    # counts: c1 = 3 (max), c2 = 2, c3 = none
    scores = results(placement(), world(plain(3), decisions=decisions))["Balance"][1]
    assert scores == {"c1": -100, "c2": -32, "c3": 100}


def test_balance_one_of_three_scores_32() -> None:
    decisions = [decision("a-1", ["c1", "c2"], placement_name="a"), decision("b-1", ["c1"], placement_name="b"),
                 decision("c-1", ["c1"], placement_name="c")]  # fmt: skip
    assert results(placement(), world(plain(2), decisions=decisions))["Balance"][1] == {"c1": -100, "c2": 32}


def test_balance_ignores_own_decisions() -> None:
    decisions = [decision("p-decision-1", ["c1"]), decision("a-1", ["c2"], placement_name="a")]
    assert results(placement(), world(plain(2), decisions=decisions))["Balance"][1] == {"c1": 100, "c2": -100}


def test_balance_counts_same_named_placement_in_other_namespace() -> None:
    decisions = [decision("p-decision-1", ["c1"], namespace="other")]
    assert results(placement(), world(plain(2), decisions=decisions))["Balance"][1] == {"c1": -100, "c2": 100}


def test_balance_counts_unlabelled_decisions_and_repeats() -> None:
    decisions = [decision("loose", ["c1", "c1", "c2"], placement_name=None)]
    assert results(placement(), world(plain(2), decisions=decisions))["Balance"][1] == {"c1": -100, "c2": 0}


def test_balance_max_is_taken_over_all_clusters() -> None:
    decisions = [decision("a-1", ["c1", "zz"], placement_name="a"), decision("b-1", ["zz"], placement_name="b")]
    assert results(placement(), world(plain(1), decisions=decisions))["Balance"][1] == {"c1": 0}


def test_resource_scores_scale_between_min_and_max() -> None:
    clusters = [memory_cluster("c1", "60Mi"), memory_cluster("c2", "80Mi"), memory_cluster("c3", "100Mi")]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableMemory")))
    assert results(p, world(clusters))["ResourceAllocatableMemory"][1] == {"c1": -100, "c2": 0, "c3": 100}


def test_resource_score_truncates_toward_zero() -> None:
    clusters = [memory_cluster("c1", "60Mi"), memory_cluster("c2", "80Mi"), memory_cluster("c3", "150Mi")]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableMemory")))
    assert results(p, world(clusters))["ResourceAllocatableMemory"][1] == {"c1": -100, "c2": -55, "c3": 100}


def test_resource_equal_values_all_score_100() -> None:
    clusters = [memory_cluster("c1", "1Gi"), memory_cluster("c2", "1024Mi")]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableMemory")))
    assert results(p, world(clusters))["ResourceAllocatableMemory"][1] == {"c1": 100, "c2": 100}


def test_cluster_without_resource_gets_no_score_and_ranks_above_minimum() -> None:
    clusters = [memory_cluster("c1", "1Gi"), memory_cluster("c2", "2Gi"), cluster("c3")]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableMemory")))
    result = run(p, world(clusters))
    assert result.prioritizer_results[0].scores == {"c1": -100, "c2": 100}
    assert result.feasible == ["c2", "c3", "c1"]


def test_allocatable_counts_only_with_capacity() -> None:
    clusters = [cluster("c1", allocatable={"cpu": "2"}, capacity={"memory": "1Gi"}), cluster("c2", allocatable={"cpu": "4"})]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableCPU")))
    assert results(p, world(clusters))["ResourceAllocatableCPU"][1] == {"c2": 100}


def test_cpu_prioritizer_reads_cpu() -> None:
    clusters = [cluster("c1", allocatable={"cpu": "500m"}), cluster("c2", allocatable={"cpu": "2"})]
    p = placement(prioritizerPolicy=policy("Exact", builtin("ResourceAllocatableCPU")))
    assert results(p, world(clusters))["ResourceAllocatableCPU"][1] == {"c1": -100, "c2": 100}


def test_addon_score_uses_named_score_value() -> None:
    snapshot = world(plain(2), scores=[score("c1", "res", {"a": 5, "b": 70})])
    p = placement(prioritizerPolicy=policy("Exact", addon("res", "b")))
    assert results(p, snapshot)["AddOn/res/b"] == (1, {"c1": 70, "c2": 0})


def test_addon_score_missing_name_is_zero() -> None:
    snapshot = world(plain(1), scores=[score("c1", "res", {"a": 5})])
    assert results(placement(prioritizerPolicy=policy("Exact", addon("res", "b"))), snapshot)["AddOn/res/b"][1] == {"c1": 0}


def test_addon_score_expired_is_zero_with_warning() -> None:
    snapshot = world(plain(2), scores=[score("c1", "res", {"s": 50}, valid_until="2026-01-01T11:59:59Z")])
    result = run(placement(prioritizerPolicy=policy("Exact", addon("res", "s"))), snapshot)
    assert result.prioritizer_results[0].scores == {"c1": 0, "c2": 0}
    assert (result.status.code, result.status.plugin) == ("Warning", "AddOn/res/s")
    assert result.status.message == "AddOnPlacementScores c1/res expired"


def test_addon_score_valid_at_exact_valid_until() -> None:
    snapshot = world(plain(1), scores=[score("c1", "res", {"s": 50}, valid_until="2026-01-01T12:00:00Z")])
    result = run(placement(prioritizerPolicy=policy("Exact", addon("res", "s"))), snapshot)
    assert result.scores == {"c1": 50}
    assert result.status.code == "Success"


def test_addon_score_requeues_at_valid_until() -> None:
    snapshot = world(plain(1), scores=[score("c1", "res", {"s": 50}, valid_until="2026-01-01T13:00:00Z")])
    result = run(placement(prioritizerPolicy=policy("Exact", addon("res", "s"))), snapshot)
    assert result.score_expiry_at == NOW.replace(hour=13)


def test_addon_scores_used_without_normalization() -> None:
    snapshot = world(plain(1), scores=[score("c1", "res", {"s": -100})])
    assert run(placement(prioritizerPolicy=policy("Exact", addon("res", "s", 10))), snapshot).scores == {"c1": -1000}


def test_total_is_weighted_sum() -> None:
    clusters = [memory_cluster("c1", "60Mi"), memory_cluster("c2", "100Mi")]
    p = placement(prioritizerPolicy=policy(None, builtin("ResourceAllocatableMemory", -2)))
    assert run(p, world(clusters)).scores == {"c1": 300, "c2": -100}


# -- selection ---------------------------------------------------------------------------------


def test_selection_sorts_by_score_then_name_bytes() -> None:
    clusters = [cluster(n) for n in ("b", "a", "Z", "c-1", "c1")]
    assert run(placement(), world(clusters)).feasible == ["Z", "a", "b", "c-1", "c1"]


def test_number_of_clusters_takes_top() -> None:
    clusters = [memory_cluster("c1", "1Gi"), memory_cluster("c2", "3Gi"), memory_cluster("c3", "2Gi")]
    p = placement(numberOfClusters=2, prioritizerPolicy=policy(None, builtin("ResourceAllocatableMemory")))
    assert run(p, world(clusters)).selected == ["c2", "c3"]


def test_number_of_clusters_larger_than_feasible_leaves_unscheduled() -> None:
    result = run(placement(numberOfClusters=5), world(plain(3)))
    assert (result.selected, result.unscheduled) == (["c1", "c2", "c3"], 2)
    assert satisfied(result) == ("False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled")


def test_number_of_clusters_zero_selects_nothing() -> None:
    result = run(placement(numberOfClusters=0), world(plain(3)))
    assert result.selected == []
    assert satisfied(result)[1] == "NoManagedClusterMatched"


def test_negative_number_of_clusters_is_misconfigured_and_selects_nothing() -> None:
    result = run(placement(numberOfClusters=-3), world(plain(3)))
    assert result.acts and result.selected == []
    assert misconfigured(result) == ("True", "Misconfigured", ":numberOfClusters must not be negative (got -3)")
    assert satisfied(result)[1] == "NoManagedClusterMatched"
    assert [p.clusters for p in result.pages] == [()]


@pytest.mark.parametrize("count", [0, 1, 7])
def test_unset_number_of_clusters_selects_all(count: int) -> None:
    assert len(run(placement(), world(plain(count))).selected) == count
