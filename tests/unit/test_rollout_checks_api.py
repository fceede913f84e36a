"""The verified-rollout fields of RolloutStrategy (plugin, validation, promotion): accepted and
rejected by the models and, through the generated CRD (its CEL rules included), by the hub."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from ocm_rollout.api.cluster_v1alpha1 import RolloutStrategy
from ocm_rollout.api.crdgen import crd_errors, generate_crds
from ocm_rollout.api.kinds import parse_object
from ocm_rollout.api.meta import InvalidObject
from ocm_rollout.api.rollout_checks import MetricCheck, RolloutValidation
from ocm_rollout.controllers.rollout.checks import compile_checks
from ocm_rollout.controllers.rollout.checks.promql import render_query
from ocm_rollout.sandbox.schema import CompiledSchema

Obj = dict[str, Any]


def metric(**overrides: Any) -> Obj:
    base: Obj = {
        "provider": {"address": "http://prometheus.monitoring:9090"},
        "query": "sum(rate(http_requests_total{cluster={{cluster}},code=~\"5..\"}[5m]))",
        "successCondition": "size(result) == 0 || result[0] < 0.05",
        "interval": "1m",
        "count": 3,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def strategy(**extra: Any) -> Obj:
    return {
        "type": "ProgressivePerGroup",
        "plugin": "my-rollout",
        "validation": {
            "checks": [
                {"name": "web-ready", "feedback": {"successCondition": 'feedback["apps/Deployment/default/web"].ReadyReplicas >= 1'}},
                {"name": "error-rate", "metric": metric()},
            ]
        },
        "promotion": {"type": "Manual", "decisionGroups": [{"groupName": "prod"}, {"groupIndex": 2}]},
        **extra,
    }


def mwrs(rollout: Obj) -> Obj:
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "cascadeDeletionPolicy": "Background",
            "manifestWorkTemplate": {"workload": {"manifests": []}},
            "placementRefs": [{"name": "p", "rolloutStrategy": rollout}],
        },
    }


def cma(rollout: Obj, version: str = "v1alpha1") -> Obj:
    return {
        "apiVersion": f"addon.open-cluster-management.io/{version}",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "hello"},
        "spec": {
            "installStrategy": {
                "type": "Placements",
                "placements": [{"name": "p", "namespace": "default", "rolloutStrategy": rollout}],
            }
        },
    }


def _schema(kind: str, version: str) -> CompiledSchema:
    crd = next(c for c in generate_crds() if c["spec"]["names"]["kind"] == kind)
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return CompiledSchema(served["schema"]["openAPIV3Schema"])


MWRS_SCHEMA = _schema("ManifestWorkReplicaSet", "v1alpha1")


def hub_errors(obj: Obj) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in MWRS_SCHEMA.validate(MWRS_SCHEMA.normalize(obj).obj)]


# -- accepted ---------------------------------------------------------------------------------


def test_a_full_strategy_round_trips_through_the_models_and_the_crd() -> None:
    parsed = RolloutStrategy.model_validate(strategy())
    assert parsed.plugin == "my-rollout"
    assert parsed.validation is not None and [c.name for c in parsed.validation.checks] == ["web-ready", "error-rate"]
    assert parsed.promotion is not None and parsed.promotion.type == "Manual"
    assert parsed.to_wire() == strategy()
    for obj in (mwrs(strategy()), cma(strategy()), cma(strategy(), "v1beta1")):
        parse_object(obj)
        assert crd_errors(obj, strict=True) == []
    assert hub_errors(mwrs(strategy())) == []


def test_every_field_is_optional_and_an_old_strategy_is_unchanged() -> None:
    old = RolloutStrategy.model_validate({"type": "Progressive", "progressive": {"maxConcurrency": 1}})
    assert (old.plugin, old.validation, old.promotion) == (None, None, None)
    assert not {"plugin", "validation", "promotion"} & set(old.to_wire())
    assert RolloutStrategy.model_validate({"type": "All", "plugin": "p"}).plugin == "p"
    assert RolloutStrategy.model_validate({"promotion": {"type": "Manual"}}).promotion is not None


def test_metric_defaults_are_unset_and_a_single_measurement_needs_no_interval() -> None:
    check = MetricCheck.model_validate(metric(interval=None, count=None))
    assert (check.count, check.interval, check.failure_limit, check.consecutive_error_limit) == (None, None, None, None)
    MetricCheck.model_validate(metric(interval=None, count=1))
    MetricCheck.model_validate(metric(provider={"name": "fleet-prometheus"}))
    MetricCheck.model_validate(metric(successCondition=None, failureCondition="result[0] > 0.1"))
    MetricCheck.model_validate(metric(query="up{cluster=~{{ clusterRegex }}, job={{name}}, ns={{namespace}}}"))


# -- rejected by the models and by the hub ------------------------------------------------------

BAD_METRICS: list[tuple[str, Obj, str]] = [
    ("no condition", metric(successCondition=None), "set successCondition, failureCondition or both"),
    ("count 0", metric(count=0), "greater than or equal to 1"),
    ("count without interval", metric(interval=None, count=2), "interval is required when count > 1"),
    ("failureLimit above count", metric(failureLimit=4), "count must be >= failureLimit"),
    ("inconclusiveLimit above count", metric(inconclusiveLimit=5), "count must be >= inconclusiveLimit"),
    ("negative failureLimit", metric(failureLimit=-1), "greater than or equal to 0"),
    ("interval not a duration", metric(interval="1 minute"), "interval"),
    ("interval zero", metric(interval="0s"), "longer than 0s"),
    ("interval negative", metric(interval="-1m"), "interval"),
    ("both providers", metric(provider={"address": "http://p:9090", "name": "p"}), "exactly one of address and name"),
    ("no provider", metric(provider={}), "exactly one of address and name"),
    ("provider not http", metric(provider={"address": "file:///etc/passwd"}), "address"),
    ("unknown placeholder", metric(query="up{x={{clusterName}}}"), "unknown placeholder"),
    ("quoted placeholder", metric(query='up{cluster="{{cluster}}"}'), "not cluster=\"{{cluster}}\""),
    ("empty query", metric(query="  "), "query"),
]


@pytest.mark.parametrize(("case", "body", "message"), BAD_METRICS, ids=[c for c, _, _ in BAD_METRICS])
def test_bad_metric_checks_are_rejected_by_the_models(case: str, body: Obj, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        MetricCheck.model_validate(body)
    assert message in str(caught.value)
    with pytest.raises(InvalidObject):
        parse_object(mwrs(strategy(validation={"checks": [{"name": "m", "metric": body}]})))


HUB_REJECTS = [c for c in BAD_METRICS if c[0] not in ("unknown placeholder", "quoted placeholder", "interval zero")]


@pytest.mark.parametrize(("case", "body", "message"), HUB_REJECTS, ids=[c for c, _, _ in HUB_REJECTS])
def test_bad_metric_checks_are_rejected_by_the_hub(case: str, body: Obj, message: str) -> None:
    assert hub_errors(mwrs(strategy(validation={"checks": [{"name": "m", "metric": body}]}))) != []


BAD_VALIDATIONS: list[tuple[str, Obj, str]] = [
    ("no checks", {"checks": []}, "at least 1"),
    ("neither feedback nor metric", {"checks": [{"name": "a"}]}, "exactly one of feedback and metric"),
    (
        "both feedback and metric",
        {"checks": [{"name": "a", "feedback": {"successCondition": "true"}, "metric": metric()}]},
        "exactly one of feedback and metric",
    ),
    ("feedback without condition", {"checks": [{"name": "a", "feedback": {}}]}, "successCondition, failureCondition"),
    (
        "duplicate names",
        {"checks": [{"name": "a", "feedback": {"successCondition": "true"}}] * 2},
        "duplicate check name 'a'",
    ),
    ("bad name", {"checks": [{"name": "Web_Ready", "feedback": {"successCondition": "true"}}]}, "pattern"),
]


@pytest.mark.parametrize(("case", "body", "message"), BAD_VALIDATIONS, ids=[c for c, _, _ in BAD_VALIDATIONS])
def test_bad_validations_are_rejected_by_the_models_and_the_hub(case: str, body: Obj, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RolloutValidation.model_validate(body)
    assert message in str(caught.value)
    assert hub_errors(mwrs(strategy(validation=body))) != []


@pytest.mark.parametrize(
    "promotion",
    [{}, {"type": "Automatic"}, {"type": "Manual", "decisionGroups": [{}]}, {"type": "Manual", "decisionGroups": [{"groupIndex": -1}]}],
)
def test_bad_promotions_are_rejected(promotion: Obj) -> None:
    with pytest.raises(ValidationError):
        RolloutStrategy.model_validate(strategy(promotion=promotion))
    assert hub_errors(mwrs(strategy(promotion=promotion))) != []


@pytest.mark.parametrize("plugin", ["", 5])
def test_bad_plugin_names_are_rejected(plugin: Any) -> None:
    with pytest.raises(ValidationError):
        RolloutStrategy.model_validate(strategy(plugin=plugin))
    assert hub_errors(mwrs(strategy(plugin=plugin))) != []


def test_the_hub_rejects_duplicate_check_names_as_a_list_map() -> None:
    body = strategy()
    body["validation"]["checks"].append(copy.deepcopy(body["validation"]["checks"][0]))
    assert any("Duplicate" in e or "duplicate" in e for e in hub_errors(mwrs(body)))


def test_the_example_verified_rollout_compiles_and_renders() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "work" / "manifestworkreplicaset-verified-rollout.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    (ref,) = doc["spec"]["placementRefs"]
    compiled = compile_checks(ref["rolloutStrategy"])
    assert compiled is not None and compiled.names == ("replicas-ready", "error-rate")
    (metric_check,) = compiled.metrics
    assert 'cluster="cluster1",job="web"' in render_query(metric_check.query, cluster="cluster1")
    assert ref["rolloutStrategy"]["plugin"] == "safe-rollout"
