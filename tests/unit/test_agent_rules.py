"""Condition rules and their work-level aggregation (ocm_rollout.sandbox.agents.rules / work)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.agents.resources import Health, simulate_object
from ocm_rollout.sandbox.agents.rules import evaluate_rules
from ocm_rollout.sandbox.agents.work import aggregate_rule_conditions

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"restartPolicy": "Never"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}}

WELL_KNOWN = [{"type": "WellKnownConditions", "condition": "Complete"}]


def cel(*expressions: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"type": "CEL", "condition": "Ready", "celExpressions": list(expressions), **extra}]


def summary(conditions: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions]


def test_finished_job_is_complete() -> None:
    out = evaluate_rules(WELL_KNOWN, simulate_object(JOB, Health.READY))
    assert summary(out) == [("Complete", "True", "ConditionRuleEvaluated", "Job is finished")]


def test_failed_job_is_complete_too() -> None:
    out = evaluate_rules(WELL_KNOWN, simulate_object(JOB, Health.BROKEN))
    assert out[0]["status"] == "True"


def test_running_job_is_not_complete() -> None:
    out = evaluate_rules(WELL_KNOWN, simulate_object(JOB, Health.PROGRESSING))
    assert summary(out) == [("Complete", "False", "ConditionRuleEvaluated", "Job is not finished")]


def test_succeeded_pod_is_complete_with_its_phase_in_the_message() -> None:
    out = evaluate_rules(WELL_KNOWN, simulate_object(POD, Health.READY))
    assert summary(out) == [("Complete", "True", "ConditionRuleEvaluated", "Pod is in phase Succeeded")]


def test_well_known_conditions_of_other_kinds_produce_nothing() -> None:
    assert evaluate_rules(WELL_KNOWN, simulate_object(DEPLOYMENT, Health.READY)) == []


def test_cel_rule_default_messages() -> None:
    obj = simulate_object(DEPLOYMENT, Health.READY)
    assert evaluate_rules(cel("object.status.readyReplicas == 2"), obj)[0]["message"] == "Manifest is Ready"
    assert evaluate_rules(cel("object.spec.replicas == 5"), obj)[0]["message"] == "Manifest is not Ready"


def test_cel_rule_needs_every_expression_true() -> None:
    obj = simulate_object(DEPLOYMENT, Health.READY)
    out = evaluate_rules(cel("object.spec.replicas == 2", "object.spec.replicas == 3"), obj)
    assert out[0]["status"] == "False"


def test_cel_rule_message_overrides_the_default() -> None:
    obj = simulate_object(DEPLOYMENT, Health.READY)
    out = evaluate_rules(cel("true", message="all good"), obj)
    assert out[0]["message"] == "all good"


def test_cel_message_expression_sees_the_result() -> None:
    obj = simulate_object(DEPLOYMENT, Health.READY)
    out = evaluate_rules(cel("false", messageExpression='result ? "yes" : "no"'), obj)
    assert out[0]["message"] == "no"


def test_cel_evaluation_error_is_false_expression_error() -> None:
    out = evaluate_rules(cel("object.status.nothing == 1"), simulate_object(DEPLOYMENT, Health.READY))
    assert (out[0]["status"], out[0]["reason"]) == ("False", "ConditionRuleExpressionError")


def test_cel_syntax_error_is_false_expression_error() -> None:
    out = evaluate_rules(cel("object.("), simulate_object(DEPLOYMENT, Health.READY))
    assert (out[0]["status"], out[0]["reason"]) == ("False", "ConditionRuleExpressionError")


def test_cel_non_boolean_result_is_an_expression_error() -> None:
    out = evaluate_rules(cel("object.spec.replicas"), simulate_object(DEPLOYMENT, Health.READY))
    assert (out[0]["status"], out[0]["reason"]) == ("False", "ConditionRuleExpressionError")
    assert out[0]["message"].startswith("expected bool result")


def test_unknown_rule_type_is_invalid() -> None:
    out = evaluate_rules([{"type": "Magic", "condition": "X"}], simulate_object(DEPLOYMENT, Health.READY))
    assert summary(out) == [("X", "Unknown", "ConditionRuleInvalid", "unrecognized condition rule type Magic")]


def entry(*conds: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": t, "status": s, "reason": "ConditionRuleEvaluated", "message": m, "lastTransitionTime": "x"}
            for t, s, m in conds
        ]
    }


def test_aggregated_progressing_is_true_when_any_manifest_is() -> None:
    out = aggregate_rule_conditions([entry(("Progressing", "False", "a")), entry(("Progressing", "True", "b"))], 3)
    assert (out[0]["status"], out[0]["reason"], out[0]["observedGeneration"]) == ("True", "ConditionRulesAggregated", 3)


def test_aggregated_progressing_is_unknown_before_false() -> None:
    out = aggregate_rule_conditions([entry(("Progressing", "False", "a")), entry(("Progressing", "Unknown", "b"))], 1)
    assert out[0]["status"] == "Unknown"


def test_aggregated_other_types_are_false_when_any_manifest_is() -> None:
    out = aggregate_rule_conditions([entry(("Complete", "True", "a")), entry(("Complete", "False", "b"))], 1)
    assert out[0]["status"] == "False"


def test_aggregated_other_types_are_true_only_when_all_are() -> None:
    out = aggregate_rule_conditions([entry(("Complete", "True", "a")), entry(("Complete", "True", "b"))], 1)
    assert out[0]["status"] == "True"


def test_aggregated_message_of_a_single_contributor_is_its_message() -> None:
    out = aggregate_rule_conditions([entry(("Complete", "True", "Job is finished")), entry()], 1)
    assert out[0]["message"] == "Job is finished"


def test_aggregated_message_of_several_contributors_counts_them() -> None:
    out = aggregate_rule_conditions([entry(("Complete", "True", "a")), entry(("Complete", "True", "b"))], 1)
    assert out[0]["message"] == "Aggregated from 2 manifest conditions"


def test_the_live_object_shares_nothing_with_its_manifest() -> None:
    """The cluster's object is a copy: changing it (or the status the simulation adds) leaves the
    manifest, which the work in the watch cache holds, as it was."""
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"a": "b"}},
        "data": {"items": ["x", {"y": 1}]},
    }
    obj = simulate_object(manifest, Health.READY)
    assert obj == {**manifest, "metadata": {**manifest["metadata"], "generation": 1}}
    obj["metadata"]["labels"]["a"] = "changed"
    obj["data"]["items"][1]["y"] = 2
    obj["data"]["items"].append("z")
    assert manifest["metadata"] == {"name": "c", "namespace": "default", "labels": {"a": "b"}}
    assert manifest["data"] == {"items": ["x", {"y": 1}]}
