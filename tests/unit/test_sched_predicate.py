"""Spec §0 (label and claim selectors) and §3 (the Predicate filter, CEL included)."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.api.cluster_v1 import ManagedClusterClaim, ManagedClusterVersion
from tests.unit.test_sched_builders import (
    cluster,
    misconfigured,
    placement,
    plain,
    run,
    satisfied,
    score,
    world,
)


def pred(label: dict[str, Any] | None = None, claim: list[dict[str, Any]] | None = None,
         cel: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    selector: dict[str, Any] = {}
    if label is not None:
        selector["labelSelector"] = label
    if claim is not None:
        selector["claimSelector"] = {"matchExpressions": claim}
    if cel is not None:
        selector["celSelector"] = {"celExpressions": cel}
    return {"requiredClusterSelector": selector}


def selected(predicates: list[dict[str, Any]], clusters: list[Any]) -> list[str]:
    return run(placement(predicates=predicates), world(clusters)).selected


LABELLED = [cluster("a", {"env": "prod", "tier": "1"}), cluster("b", {"env": "dev"}), cluster("c")]


def test_no_predicates_every_cluster_passes() -> None:
    assert selected([], LABELLED) == ["a", "b", "c"]


def test_match_labels_requires_equal_value() -> None:
    assert selected([pred({"matchLabels": {"env": "prod"}})], LABELLED) == ["a"]


def test_empty_label_selector_matches_everything() -> None:
    assert selected([pred({})], LABELLED) == ["a", "b", "c"]


def test_missing_selectors_match_everything() -> None:
    assert selected([{"requiredClusterSelector": {}}, ], LABELLED) == ["a", "b", "c"]


def test_predicate_without_required_selector_matches_everything() -> None:
    assert selected([{}], LABELLED) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ["prod", "qa"], ["a"]),
        ("NotIn", ["prod"], ["b", "c"]),
        ("Exists", [], ["a", "b"]),
        ("DoesNotExist", [], ["c"]),
    ],
)
def test_match_expression_operators(operator: str, values: list[str], expected: list[str]) -> None:
    expr = {"key": "env", "operator": operator, "values": values}
    assert selected([pred({"matchExpressions": [expr]})], LABELLED) == expected


def test_not_in_matches_clusters_without_the_key() -> None:
    expr = {"key": "env", "operator": "NotIn", "values": ["prod"]}
    assert "c" in selected([pred({"matchExpressions": [expr]})], LABELLED)


def test_match_labels_and_expressions_are_anded() -> None:
    label = {"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["2"]}]}
    assert selected([pred(label)], LABELLED) == []


def test_predicates_are_ored() -> None:
    preds = [pred({"matchLabels": {"env": "prod"}}), pred({"matchLabels": {"env": "dev"}})]
    assert selected(preds, LABELLED) == ["a", "b"]


def test_label_and_claim_selector_are_anded() -> None:
    clusters = [cluster("a", {"env": "prod"}, claims={"platform": "aws"}), cluster("b", {"env": "prod"})]
    p = pred({"matchLabels": {"env": "prod"}}, [{"key": "platform", "operator": "In", "values": ["aws"]}])
    assert selected([p], clusters) == ["a"]


def test_claim_selector_reads_cluster_claims_not_labels() -> None:
    clusters = [cluster("a", {"platform": "aws"}), cluster("b", claims={"platform": "aws"})]
    assert selected([pred(claim=[{"key": "platform", "operator": "Exists"}])], clusters) == ["b"]


def test_repeated_claim_name_last_entry_wins() -> None:
    c = cluster("a")
    c.status.cluster_claims = [ManagedClusterClaim(name="k", value="first"), ManagedClusterClaim(name="k", value="last")]
    assert selected([pred(claim=[{"key": "k", "operator": "In", "values": ["last"]}])], [c]) == ["a"]


@pytest.mark.parametrize(
    "label",
    [
        {"matchExpressions": [{"key": "env", "operator": "Foo"}]},
        {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["not valid!"]}]},
        {"matchLabels": {"env": "x" * 64}},
        {"matchLabels": {"a" * 64: "x"}},
        {"matchLabels": {("a" * 254) + "/b": "x"}},
    ],
)
def test_invalid_label_selector_is_misconfigured(label: dict[str, Any]) -> None:
    result = run(placement(predicates=[pred(label)]), world(plain(1)))
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith("Predicate:")
    assert result.selected == []


def test_invalid_claim_selector_is_misconfigured() -> None:
    result = run(placement(predicates=[pred(claim=[{"key": "k", "operator": "Bad"}])]), world(plain(1)))
    assert misconfigured(result)[0] == "True"


def test_invalid_predicate_is_not_validated_without_clusters() -> None:
    bad = pred({"matchExpressions": [{"key": "env", "operator": "Foo"}]})
    result = run(placement(predicates=[bad]), world([]))
    assert misconfigured(result)[0] == "False"


def test_any_invalid_predicate_fails_even_if_another_matches() -> None:
    good, bad = pred({}), pred({"matchExpressions": [{"key": "env", "operator": "Foo"}]})
    assert misconfigured(run(placement(predicates=[good, bad]), world(plain(1))))[0] == "True"


def test_misconfigured_predicate_reports_no_managed_cluster_matched() -> None:
    bad = pred({"matchExpressions": [{"key": "env", "operator": "Foo"}]})
    assert satisfied(run(placement(predicates=[bad]), world(plain(1))))[1] == "NoManagedClusterMatched"


# -- CEL ---------------------------------------------------------------------------------------


def test_cel_expression_selects_by_label() -> None:
    expr = 'managedCluster.metadata.labels["env"] == "prod"'
    assert selected([pred(cel=[expr])], LABELLED) == ["a"]


def test_cel_expressions_are_anded() -> None:
    exprs = ['managedCluster.metadata.labels["env"] == "prod"', 'managedCluster.metadata.labels["tier"] == "2"']
    assert selected([pred(cel=exprs)], LABELLED) == []


def test_cel_and_label_selector_are_anded() -> None:
    p = pred({"matchLabels": {"env": "dev"}}, cel=['managedCluster.metadata.name == "a"'])
    assert selected([p], LABELLED) == []


def test_empty_cel_expression_list_imposes_nothing() -> None:
    assert selected([pred(cel=[])], LABELLED) == ["a", "b", "c"]


def test_cel_missing_key_is_no_match() -> None:
    assert selected([pred(cel=['managedCluster.metadata.labels["env"] != "x"'])], LABELLED) == ["a", "b"]


def test_cel_labels_absent_when_cluster_has_none() -> None:
    assert selected([pred(cel=["has(managedCluster.metadata.labels)"])], LABELLED) == ["a", "b"]


def test_cel_non_boolean_result_is_no_match() -> None:
    assert selected([pred(cel=["managedCluster.metadata.name"])], LABELLED) == []


def test_cel_or_absorbs_error_when_other_side_is_true() -> None:
    assert selected([pred(cel=['managedCluster.metadata.labels["zz"] == "x" || true'])], LABELLED) == ["a", "b", "c"]


def test_cel_and_absorbs_error_when_other_side_is_false() -> None:
    expr = '!(managedCluster.metadata.labels["zz"] == "x" && false)'
    assert selected([pred(cel=[expr])], LABELLED) == ["a", "b", "c"]


def test_cel_exists_absorbs_error_when_decided() -> None:
    assert selected([pred(cel=["[0, 1].exists(x, 1 / x == 1)"])], LABELLED) == ["a", "b", "c"]


def test_cel_filter_propagates_errors() -> None:
    assert selected([pred(cel=["[0, 1].filter(x, 1 / x == 1).size() >= 0"])], LABELLED) == []


def test_cel_exists_one_propagates_errors() -> None:
    assert selected([pred(cel=["[0, 1].exists_one(x, 1 / x == 1)"])], LABELLED) == []


@pytest.mark.parametrize(
    "expr",
    ["foo == 1", "managedCluster.nope()", "undefined(1)", "managedCluster.metadata.(", "[1].all(x, y)"],
)
def test_cel_compile_errors_are_misconfigured(expr: str) -> None:
    result = run(placement(predicates=[pred(cel=[expr])]), world(plain(1)))
    status, _, message = misconfigured(result)
    assert status == "True"
    assert message.startswith("Predicate:compilation failed: ERROR: <input>:")


def test_cel_undeclared_reference_message_names_it() -> None:
    result = run(placement(predicates=[pred(cel=["foo == 1"])]), world(plain(1)))
    assert "undeclared reference to 'foo'" in misconfigured(result)[2]


def test_cel_scores_reads_addon_placement_score() -> None:
    scores = [score("a", "usage", {"cpu": 80}), score("b", "usage", {"cpu": 10})]
    expr = 'managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 50)'
    result = run(placement(predicates=[pred(cel=[expr])]), world(LABELLED, scores=scores))
    assert result.selected == ["a"]


def test_cel_scores_missing_object_is_no_match() -> None:
    expr = 'managedCluster.scores("usage").size() >= 0'
    assert selected([pred(cel=[expr])], LABELLED) == []


def test_cel_scores_ignores_valid_until() -> None:
    scores = [score("a", "usage", {"cpu": 80}, valid_until="2000-01-01T00:00:00Z")]
    expr = 'managedCluster.scores("usage")[0].value == 80'
    result = run(placement(predicates=[pred(cel=[expr])]), world(LABELLED, scores=scores))
    assert result.selected == ["a"]


def test_cel_parse_json_numbers_are_doubles() -> None:
    c = cluster("a", {"cfg": "x"})
    c.metadata.annotations = {"cfg": '{"replicas": 3}'}
    expr = 'type(managedCluster.metadata.annotations["cfg"].parseJSON().replicas) == double'
    assert selected([pred(cel=[expr])], [c]) == ["a"]


def test_cel_cross_type_numeric_comparison() -> None:
    c = cluster("a")
    c.metadata.annotations = {"cfg": '{"replicas": 3}'}
    expr = 'managedCluster.metadata.annotations["cfg"].parseJSON().replicas > 2'
    assert selected([pred(cel=[expr])], [c]) == ["a"]


def test_cel_semver_library() -> None:
    c = cluster("a")
    c.status.version = ManagedClusterVersion(kubernetes="v1.28.3")
    expr = 'semver(managedCluster.status.version.kubernetes, true).isGreaterThan(semver("1.27.0"))'
    assert selected([pred(cel=[expr])], [c, cluster("b")]) == ["a"]


def test_cel_quantity_library() -> None:
    clusters = [cluster("a", allocatable={"memory": "64Gi"}), cluster("b", allocatable={"memory": "2Gi"})]
    expr = 'quantity(managedCluster.status.allocatable.memory).compareTo(quantity("8Gi")) > 0'
    assert selected([pred(cel=[expr])], clusters) == ["a"]
