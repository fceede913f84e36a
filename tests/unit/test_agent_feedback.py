"""Status feedback values (ocm_rollout.sandbox.agents.feedback) as docs/behaviour/work-agent.md describes them."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.sandbox.agents.feedback import (
    FeedbackError,
    feedback_values,
    translate_path,
    value_by_path,
    values_by_rule,
)

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"replicas": 3, "paused": False},
    "status": {
        "replicas": 3,
        "readyReplicas": 2,
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}],
    },
}


def paths(*entries: tuple[str, str]) -> dict[str, Any]:
    return {"type": "JSONPaths", "jsonPaths": [{"name": n, "path": p} for n, p in entries]}


def test_well_known_deployment_values_in_order_with_missing_fields_omitted() -> None:
    result = values_by_rule({"type": "WellKnownStatus"}, DEPLOYMENT)
    assert result.errors == []
    assert result.values == [
        {"name": "ReadyReplicas", "fieldValue": {"type": "Integer", "integer": 2}},
        {"name": "Replicas", "fieldValue": {"type": "Integer", "integer": 3}},
    ]


def test_well_known_job_reads_the_complete_condition() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
    }
    assert values_by_rule({"type": "WellKnownStatus"}, job).values == [
        {"name": "JobComplete", "fieldValue": {"type": "String", "string": "True"}},
        {"name": "JobSucceeded", "fieldValue": {"type": "Integer", "integer": 1}},
    ]


def test_well_known_status_of_an_unsupported_kind_is_an_error() -> None:
    result = values_by_rule({"type": "WellKnownStatus"}, {"apiVersion": "v1", "kind": "Service"})
    assert result.values == []
    assert result.errors == ["cannot find the wellknown statuses for resource with gvk /v1, Kind=Service"]


def test_well_known_status_needs_the_exact_version() -> None:
    old = dict(DEPLOYMENT, apiVersion="apps/v1beta1")
    assert values_by_rule({"type": "WellKnownStatus"}, old).errors


def test_json_path_values_are_typed() -> None:
    result = values_by_rule(
        paths(("replicas", ".spec.replicas"), ("paused", ".spec.paused"), ("name", ".metadata.name")), DEPLOYMENT
    )
    assert [v["fieldValue"] for v in result.values] == [
        {"type": "Integer", "integer": 3},
        {"type": "Boolean", "boolean": False},
        {"type": "String", "string": "web"},
    ]


def test_json_path_filter_expression() -> None:
    found = value_by_path("avail", '.status.conditions[?(@.type=="Available")].status', DEPLOYMENT)
    assert found == {"name": "avail", "fieldValue": {"type": "String", "string": "True"}}


def test_json_path_without_a_match_gives_no_value_and_no_error() -> None:
    result = values_by_rule(paths(("missing", ".status.nothing.here")), DEPLOYMENT)
    assert (result.values, result.errors) == ([], [])


def test_json_path_object_value_is_an_error_without_the_gate() -> None:
    result = values_by_rule(paths(("spec", ".spec")), DEPLOYMENT)
    assert result.values == []
    assert result.errors == ["the type map[string]interface {} of the value for spec is not found"]


def test_json_path_object_value_is_compact_sorted_json_with_the_gate() -> None:
    found = value_by_path("spec", ".spec", DEPLOYMENT, raw_json=True)
    assert found == {"name": "spec", "fieldValue": {"type": "JsonRaw", "jsonRaw": '{"paused":false,"replicas":3}'}}


def test_json_raw_longer_than_1024_bytes_is_an_error() -> None:
    big = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "x" * 1100}}
    with pytest.raises(FeedbackError, match="larger than the maximum length 1024"):
        value_by_path("data", ".data", big, raw_json=True)


def test_non_integral_number_is_an_error() -> None:
    obj = {"apiVersion": "v1", "kind": "X", "status": {"ratio": 0.5}}
    with pytest.raises(FeedbackError, match="float64"):
        value_by_path("ratio", ".status.ratio", obj)


def test_several_matches_report_the_first_without_the_gate() -> None:
    found = value_by_path("types", ".status.conditions[*].type", DEPLOYMENT)
    assert found == {"name": "types", "fieldValue": {"type": "String", "string": "Available"}}


def test_several_matches_report_a_json_list_with_the_gate() -> None:
    found = value_by_path("types", ".status.conditions[*].type", DEPLOYMENT, raw_json=True)
    assert found == {"name": "types", "fieldValue": {"type": "JsonRaw", "jsonRaw": '["Available","Progressing"]'}}


def test_json_path_version_mismatch_is_an_error() -> None:
    rule = {"type": "JSONPaths", "jsonPaths": [{"name": "r", "path": ".spec.replicas", "version": "v2"}]}
    result = values_by_rule(rule, DEPLOYMENT)
    assert result.errors == ["version set in the path r is not matched for the related resource"]


def test_escaped_dots_address_a_label_key() -> None:
    found = value_by_path("app", ".metadata.labels.app\\.kubernetes\\.io/name", DEPLOYMENT)
    assert found == {"name": "app", "fieldValue": {"type": "String", "string": "web"}}


def test_translate_path_prefixes_the_root() -> None:
    assert translate_path(".status.x") == "$.status.x"
    assert translate_path("{.status.x}") == "$.status.x"


def test_values_are_ordered_rule_by_rule_and_errors_aggregated() -> None:
    rules = [paths(("b", ".spec.replicas")), {"type": "WellKnownStatus"}, paths(("bad", ".spec"), ("bad2", ".status"))]
    result = feedback_values(rules, DEPLOYMENT)
    assert [v["name"] for v in result.values] == ["b", "ReadyReplicas", "Replicas"]
    assert result.error_text.startswith("[the type map[string]interface {} of the value for bad is not found, ")
