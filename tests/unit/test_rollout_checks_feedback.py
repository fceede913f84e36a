"""Check CEL (compile errors naming the check, evaluation errors) and feedback checks over a
ManifestWork's status (OCM's statusFeedback shape) and an add-on's."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.api.rollout_checks import FeedbackCheck, RolloutValidation
from ocm_rollout.controllers.rollout.checks import InvalidChecks, Phase, combine, compile_checks
from ocm_rollout.controllers.rollout.checks.cel import (
    FEEDBACK_VARIABLES,
    METRIC_VARIABLES,
    CheckCompileError,
    ConditionError,
    compile_condition,
    evaluate,
)
from ocm_rollout.controllers.rollout.checks.feedback import (
    FeedbackSettings,
    addon_variables,
    evaluate_feedback,
    feedback_key,
    field_value,
    work_variables,
)

Obj = dict[str, Any]


def value(name: str, kind: str, raw: Any) -> Obj:
    key = {"Integer": "integer", "String": "string", "Boolean": "boolean", "JsonRaw": "jsonRaw"}[kind]
    return {"name": name, "fieldValue": {"type": kind, key: raw}}


def manifest(group: str, kind: str, namespace: str, name: str, values: list[Obj], available: str = "True") -> Obj:
    return {
        "resourceMeta": {"ordinal": 0, "group": group, "version": "v1", "kind": kind, "resource": kind.lower() + "s",
                         "namespace": namespace, "name": name},
        "statusFeedback": {"values": values},
        "conditions": [{"type": "Available", "status": available, "reason": "R", "message": "m"}],
    }  # fmt: skip


def work(*manifests: Obj, name: str = "web", conditions: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "cluster1"},
        "status": {
            "conditions": conditions if conditions is not None else [
                {"type": "Applied", "status": "True", "reason": "AppliedManifestWorkComplete", "message": ""},
                {"type": "Available", "status": "True", "reason": "ResourcesAvailable", "message": ""},
            ],
            "resourceStatus": {"manifests": list(manifests)},
        },
    }  # fmt: skip


DEPLOYMENT = manifest(
    "apps", "Deployment", "default", "web",
    [value("ReadyReplicas", "Integer", 2), value("Replicas", "Integer", 3), value("Image", "String", "web:2"),
     value("Paused", "Boolean", False), value("Spec", "JsonRaw", '{"strategy": {"type": "RollingUpdate"}}')],
)  # fmt: skip
CONFIGMAP = manifest("", "ConfigMap", "default", "cfg", [value("Raw", "JsonRaw", "not json")])
NAMESPACE = manifest("", "Namespace", "", "team-a", [])


def settings(success: str | None = None, failure: str | None = None, name: str = "web-ready") -> FeedbackSettings:
    return FeedbackSettings.compile(name, FeedbackCheck(success_condition=success, failure_condition=failure))


# -- variables ----------------------------------------------------------------------------------


def test_feedback_values_are_typed_and_keyed_by_group_kind_namespace_name() -> None:
    variables = work_variables(work(DEPLOYMENT, CONFIGMAP, NAMESPACE), "cluster1")
    assert set(variables["feedback"]) == {"apps/Deployment/default/web", "/ConfigMap/default/cfg", "/Namespace//team-a"}
    web = variables["feedback"]["apps/Deployment/default/web"]
    assert web == {"ReadyReplicas": 2, "Replicas": 3, "Image": "web:2", "Paused": False,
                   "Spec": {"strategy": {"type": "RollingUpdate"}}}  # fmt: skip
    assert variables["feedback"]["/ConfigMap/default/cfg"] == {"Raw": "not json"}
    assert variables["conditions"]["Available"]["status"] == "True"
    assert variables["manifests"][0]["conditions"]["Available"]["reason"] == "R"
    assert variables["cluster"] == "cluster1"


def test_field_values_whose_type_and_content_disagree_are_left_out() -> None:
    assert field_value({"type": "Integer", "string": "3"}) is None
    assert field_value({"type": "Integer", "integer": True}) is None
    assert field_value({"type": "Boolean", "boolean": "true"}) is None
    assert field_value({"type": "Other", "integer": 1}) is None
    assert feedback_key({"kind": "Deployment", "name": "x"}) == "/Deployment//x"


def test_a_work_without_status_gives_empty_variables() -> None:
    variables = work_variables({"metadata": {"name": "w"}}, "c")
    assert variables == {"feedback": {}, "manifests": [], "conditions": {}, "cluster": "c"}
    garbage = work_variables({"status": {"conditions": "x", "resourceStatus": {"manifests": [3, {"statusFeedback": 1}]}}}, "c")
    assert garbage["feedback"] == {"///": {}} and garbage["conditions"] == {}


def test_addon_variables_take_the_addon_conditions_and_every_agent_work() -> None:
    addon = {"status": {"conditions": [{"type": "Available", "status": "False", "reason": "Probe", "message": "down"}]}}
    works = [work(CONFIGMAP, name="addon-hello-deploy-1"), work(DEPLOYMENT, name="addon-hello-deploy-0")]
    variables = addon_variables(addon, works, "cluster1")
    assert variables["conditions"]["Available"]["message"] == "down"
    assert [m["name"] for m in variables["manifests"]] == ["web", "cfg"]
    assert "apps/Deployment/default/web" in variables["feedback"]


# -- compile ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "detail"),
    [
        ("feedback[", "Syntax error"),
        ("managedCluster.metadata.name == 'a'", "undeclared reference to 'managedCluster'"),
        ("result[0] > 1", "undeclared reference to 'result'"),
        ("feedback.foo(1)", "undeclared reference to 'foo'"),
    ],
)
def test_a_condition_that_does_not_compile_names_the_check_and_field(source: str, detail: str) -> None:
    with pytest.raises(CheckCompileError) as caught:
        settings(success=source)
    assert str(caught.value).startswith("check 'web-ready': feedback.successCondition does not compile: ERROR: <input>:")
    assert detail in str(caught.value)
    assert caught.value.check == "web-ready" and caught.value.field == "feedback.successCondition"


def test_metric_variables_are_not_feedback_variables() -> None:
    compile_condition("m", "metric.successCondition", "result[0] < 1 && resultType == 'vector'", METRIC_VARIABLES)
    with pytest.raises(CheckCompileError, match="undeclared reference to 'feedback'"):
        compile_condition("m", "metric.successCondition", "feedback.x == 1", METRIC_VARIABLES)


def test_compile_checks_lists_every_bad_condition() -> None:
    strategy = {
        "validation": {
            "checks": [
                {"name": "a", "feedback": {"successCondition": "conditions[", "failureCondition": "true"}},
                {"name": "ok", "feedback": {"successCondition": "true"}},
                {"name": "b", "metric": {"provider": {"name": "p"}, "query": "up", "failureCondition": "nope > 1"}},
            ]
        }
    }
    with pytest.raises(InvalidChecks) as caught:
        compile_checks(strategy)
    assert [e.split(":")[0] for e in caught.value.errors] == [
        "check 'a'", "check 'b'"
    ]
    assert "feedback.successCondition" in caught.value.errors[0] and "metric.failureCondition" in caught.value.errors[1]


def test_compile_checks_of_a_good_validation_and_of_none() -> None:
    assert compile_checks({"type": "All"}) is None
    compiled = compile_checks(
        {"validation": {"checks": [{"name": "f", "feedback": {"successCondition": "true"}},
                                   {"name": "m", "metric": {"provider": {"name": "p"}, "query": "up", "successCondition": "true"}}]}}
    )  # fmt: skip
    assert compiled is not None and compiled.names == ("f", "m")
    with pytest.raises(InvalidChecks, match=r"validation.checks: .*at least 1"):
        compile_checks({"validation": {"checks": []}})
    RolloutValidation.model_validate({"checks": [{"name": "f", "feedback": {"successCondition": "x"}}]})


# -- evaluate -----------------------------------------------------------------------------------


def test_evaluation_needs_a_boolean() -> None:
    condition = compile_condition("c", "f", "feedback", FEEDBACK_VARIABLES)
    with pytest.raises(ConditionError, match="returned map, not a bool"):
        evaluate(condition, {"feedback": {}})
    condition = compile_condition("c", "f", "1 / 0 == 1", FEEDBACK_VARIABLES)
    with pytest.raises(ConditionError):
        evaluate(condition, {})


def test_the_documented_example_passes_once_ready_replicas_reach_replicas() -> None:
    check = settings('feedback["apps/Deployment/default/web"].ReadyReplicas >= feedback["apps/Deployment/default/web"].Replicas')
    rolling = evaluate_feedback(check, work_variables(work(DEPLOYMENT), "cluster1"))
    assert rolling.phase is Phase.RUNNING and rolling.message == "successCondition is false"
    ready = manifest("apps", "Deployment", "default", "web", [value("ReadyReplicas", "Integer", 3), value("Replicas", "Integer", 3)])
    assert evaluate_feedback(check, work_variables(work(ready), "cluster1")).phase is Phase.SUCCESSFUL


def test_feedback_not_synced_yet_keeps_the_check_running_with_the_reason() -> None:
    check = settings('feedback["apps/Deployment/default/web"].ReadyReplicas >= 3')
    verdict = evaluate_feedback(check, work_variables(work(), "cluster1"))
    assert verdict.phase is Phase.RUNNING
    assert verdict.message == "successCondition: no such key: 'apps/Deployment/default/web'"


def test_failure_condition_wins_and_alone_passes_when_false() -> None:
    both = settings(success="true", failure='conditions["Available"].status == "False"')
    down = work(DEPLOYMENT, conditions=[{"type": "Available", "status": "False"}])
    assert evaluate_feedback(both, work_variables(down, "c")).phase is Phase.FAILED
    assert evaluate_feedback(both, work_variables(work(DEPLOYMENT), "c")).phase is Phase.SUCCESSFUL
    alone = settings(failure='feedback["apps/Deployment/default/web"].Paused')
    assert evaluate_feedback(alone, work_variables(work(DEPLOYMENT), "c")).phase is Phase.SUCCESSFUL
    assert evaluate_feedback(alone, work_variables(work(), "c")).phase is Phase.RUNNING


def test_macros_json_values_and_optionals_work() -> None:
    variables = work_variables(work(DEPLOYMENT, CONFIGMAP), "cluster1")
    for source in (
        'manifests.all(m, m.conditions["Available"].status == "True")',
        'feedback["apps/Deployment/default/web"].Spec.strategy.type == "RollingUpdate"',
        'feedback[?"apps/Deployment/default/missing"].orValue({}).size() == 0',
        'feedback["apps/Deployment/default/web"].Image.startsWith("web:") && cluster == "cluster1"',
        'double(feedback["apps/Deployment/default/web"].ReadyReplicas) / 3.0 > 0.5',
    ):
        assert evaluate_feedback(settings(source), variables).phase is Phase.SUCCESSFUL, source


def test_combine() -> None:
    assert combine([]) is Phase.SUCCESSFUL
    assert combine([Phase.SUCCESSFUL, Phase.RUNNING]) is Phase.RUNNING
    assert combine([Phase.RUNNING, Phase.INCONCLUSIVE]) is Phase.INCONCLUSIVE
    assert combine([Phase.INCONCLUSIVE, Phase.ERROR]) is Phase.FAILED
    assert combine([Phase.FAILED, Phase.SUCCESSFUL]) is Phase.FAILED
