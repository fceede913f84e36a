"""The spec's appendix: OCM behaviours that surprise, one test each (numbered as there)."""

from __future__ import annotations

from tests.unit.test_sched_builders import (
    BAD_PREDICATE,
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
    taint,
    world,
)


def test_1_zero_clusters_and_misconfigured_report_no_match_with_one_empty_page() -> None:
    for p in (placement(numberOfClusters=0), placement(predicates=BAD_PREDICATE)):
        result = run(p, world(plain(2)))
        assert satisfied(result)[:2] == ("False", "NoManagedClusterMatched")
        assert [(page.name, page.clusters) for page in result.pages] == [("p-decision-1", ())]


def test_2_filters_validate_only_with_clusters_but_prioritizers_always() -> None:
    bad_filters = placement(predicates=BAD_PREDICATE, tolerations=[{"operator": "Equal"}])
    assert misconfigured(run(bad_filters, world([], sets=[], bindings=[])))[0] == "False"
    bad_mode = placement(prioritizerPolicy={"mode": "X"})
    assert misconfigured(run(bad_mode, world([], sets=[], bindings=[])))[0] == "True"


def test_3_unknown_builtin_with_weight_zero_is_fine() -> None:
    p = placement(prioritizerPolicy={"configurations": [{"scoreCoordinate": {"builtIn": "Nope"}, "weight": 0}]})
    assert misconfigured(run(p, world(plain(1))))[0] == "False"


def test_4_duplicate_builtins_override_duplicate_addons_add_up() -> None:
    steady = {"scoreCoordinate": {"builtIn": "Steady"}}
    addon = {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "r", "scoreName": "s"}}}
    p = placement(prioritizerPolicy={"mode": "Exact", "configurations": [
        {**steady, "weight": 5}, {**steady, "weight": 2}, addon, addon]})  # fmt: skip
    snapshot = world(plain(1), decisions=[decision("p-decision-1", ["c1"])], scores=[score("c1", "r", {"s": 7})])
    result = run(p, snapshot)
    assert result.scores == {"c1": 2 * 100 + 7 + 7}


def test_5_addon_coordinate_without_type_is_misconfigured() -> None:
    p = placement(prioritizerPolicy={"configurations": [{"scoreCoordinate": {"addOn": {"resourceName": "r", "scoreName": "s"}}}]})
    assert misconfigured(run(p, world(plain(1)))) == ("True", "Misconfigured", ":incorrect builtin prioritizer: ")


def test_6_group_percentages_in_floating_point() -> None:
    seven = run(placement(decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": "7%"}}), world(plain(100)))
    assert len(seven.groups[0].clusters) == 8
    third = run(placement(decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": "33%"}}), world(plain(10)))
    assert [len(g.clusters) for g in third.groups] == [4, 4, 2]


def test_7_group_size_string_without_percent_deletes_everything_yet_satisfied() -> None:
    result = run(placement(decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": "25"}}), world(plain(3)))
    assert result.pages == []
    assert misconfigured(result)[0] == "True"
    assert satisfied(result)[0] == "True"


def test_8_invalid_group_selector_and_skipped_empty_group() -> None:
    empty = {"groupName": "none", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zz": "1"}}}}
    good = {"groupName": "all", "groupClusterSelector": {}}
    bad = {"groupName": "bad", "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "k", "operator": "?"}]}}}
    result = run(placement(decisionStrategy={"groupStrategy": {"decisionGroups": [empty, good, bad]}}), world(plain(2)))
    assert [(g.index, g.name) for g in result.groups] == [(0, "all")]


def test_9_cluster_without_resource_ranks_above_least_allocatable() -> None:
    p = placement(prioritizerPolicy={"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]})
    clusters = [memory_cluster("small", "1Gi"), memory_cluster("big", "4Gi"), cluster("none"),
                cluster("nocap", allocatable={"memory": "8Gi"}, capacity={"cpu": "1"})]  # fmt: skip
    assert run(p, world(clusters)).feasible == ["big", "nocap", "none", "small"]


def test_10_balance_counts_everything_and_truncates_before_doubling() -> None:
    decisions = [decision("x", ["a", "b"], placement_name=None), decision("y", ["a", "b"], placement_name="q"),
                 decision("z", ["a"], placement_name="q", namespace="elsewhere")]  # fmt: skip
    result = run(placement(), world([cluster("a"), cluster("b")], decisions=decisions))
    assert result.prioritizer_results[0].scores == {"a": -100, "b": -32}


def test_11_not_in_matches_clusters_without_the_key() -> None:
    p = placement(predicates=[{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [
        {"key": "env", "operator": "NotIn", "values": ["prod"]}]}}}])  # fmt: skip
    assert run(p, world([cluster("nokey"), cluster("prod", {"env": "prod"})])).selected == ["nokey"]


def test_12_cel_scores_ignore_valid_until_but_prioritizer_honours_it() -> None:
    expired = score("c1", "r", {"s": 50}, valid_until="2000-01-01T00:00:00Z")
    p = placement(
        predicates=[{"requiredClusterSelector": {"celSelector": {"celExpressions": ['managedCluster.scores("r")[0].value == 50']}}}],
        prioritizerPolicy={"mode": "Exact", "configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "r", "scoreName": "s"}}}]},
    )
    result = run(p, world(plain(1), scores=[expired]))
    assert result.selected == ["c1"]
    assert result.scores == {"c1": 0}


def test_13_toleration_expired_at_instant_score_valid_at_instant_no_time_added_never() -> None:
    tol = [{"key": "k", "operator": "Exists", "tolerationSeconds": 3600}]
    at_expiry = cluster("t", taints=[taint("k", added="2026-01-01T11:00:00Z")])
    assert run(placement(tolerations=tol), world([at_expiry])).selected == []
    no_time = cluster("t", taints=[taint("k")])
    assert run(placement(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 10**10}]), world([no_time])).selected == []
    valid = score("c1", "r", {"s": 9}, valid_until=NOW.strftime("%Y-%m-%dT%H:%M:%SZ"))
    p = placement(prioritizerPolicy={"mode": "Exact", "configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "r", "scoreName": "s"}}}]})
    assert run(p, world(plain(1), scores=[valid])).scores == {"c1": 9}


def test_14_decisions_in_group_by_name_not_score() -> None:
    p = placement(prioritizerPolicy={"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]})
    clusters = [memory_cluster("a", "1Gi"), memory_cluster("b", "9Gi")]
    result = run(p, world(clusters))
    assert result.feasible == ["b", "a"]
    assert result.pages[0].clusters == ("a", "b")
