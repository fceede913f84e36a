"""The chart's work configuration (``workConfig``): OCM's work-controller-config ConfigMap, its
mount and ``--work-config`` flag in the pods that roll out, the checksum that restarts them, and
the rendered file as ``ocm-rollout run`` reads it."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from ocm_rollout.cli.commands import run
from ocm_rollout.cli.main import build_parser
from ocm_rollout.sandbox import tls
from tests.unit.helpers import CHART
from tests.unit.test_chart import assert_valid, of_kind, render

CA_B64 = base64.b64encode(tls.generate(["127.0.0.1"]).ca_pem).decode()
FLAG = "--work-config=/var/run/config/work/config.yaml"
WORK_CONFIG: dict[str, Any] = {
    "plugins": [{"name": "my-rollout", "endpoint": "my-rollout.plugins:10843", "caCertificate": {"caBundle": CA_B64}}],
    "metricProviders": [
        {
            "name": "thanos",
            "address": "https://thanos-query.monitoring.svc:9090",
            "caCertificate": {"caBundle": CA_B64},
            "bearerTokenFile": "/var/run/secrets/prom/token",
            "headers": {"X-Scope-OrgID": "team-a"},
            "timeout": "30s",
        },
        {"name": "local", "address": "http://prometheus.monitoring:9090"},
    ],
    "extraVolumes": [{"name": "prom-token", "secret": {"secretName": "prom-token"}}],
    "extraVolumeMounts": [{"name": "prom-token", "mountPath": "/var/run/secrets/prom", "readOnly": True}],
}


def _pod(deployment: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _args(deployment: dict[str, Any]) -> list[str]:
    return list(_pod(deployment)["containers"][0]["args"])


def _annotations(deployment: dict[str, Any]) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"].get("annotations") or {})


def _config_map(objects: list[dict[str, Any]], name: str = "work-controller-config") -> dict[str, Any] | None:
    return next((c for c in of_kind(objects, "ConfigMap") if c["metadata"]["name"] == name), None)


def _by_component(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in of_kind(objects, "Deployment")}


def test_without_plugins_or_providers_there_is_no_work_config(chart: Any) -> None:
    objects = render(chart, {"workConfig": {"extraVolumes": WORK_CONFIG["extraVolumes"]}})
    assert _config_map(objects) is None
    deployment = of_kind(objects, "Deployment")[0]
    assert not any(a.startswith("--work-config") for a in _args(deployment))
    assert "checksum/work-config" not in _annotations(deployment)
    assert "work-config" not in {v["name"] for v in _pod(deployment)["volumes"]}


def test_the_configmap_holds_the_lists_and_the_pods_mount_it(chart: Any) -> None:
    objects = render(chart, {"workConfig": WORK_CONFIG, "podAnnotations": {"team": "rollouts"}})
    assert_valid(objects)
    config_map = _config_map(objects)
    assert config_map is not None and config_map["metadata"]["namespace"] == "ocm-system"
    assert list(config_map["data"]) == ["config.yaml"]
    text = config_map["data"]["config.yaml"]
    assert yaml.safe_load(text) == {"plugins": WORK_CONFIG["plugins"], "metricProviders": WORK_CONFIG["metricProviders"]}
    [deployment] = of_kind(objects, "Deployment")
    assert FLAG in _args(deployment)
    pod = _pod(deployment)
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "work-config", "mountPath": "/var/run/config/work", "readOnly": True} in mounts
    assert WORK_CONFIG["extraVolumeMounts"][0] in mounts
    assert {"name": "work-config", "configMap": {"name": "work-controller-config"}} in pod["volumes"]
    assert WORK_CONFIG["extraVolumes"][0] in pod["volumes"]
    annotations = _annotations(deployment)
    assert annotations["checksum/work-config"] == hashlib.sha256(text.rstrip("\n").encode()).hexdigest()
    assert annotations["team"] == "rollouts"


def test_a_change_of_the_configuration_changes_the_checksum(chart: Any) -> None:
    changed = {**WORK_CONFIG, "metricProviders": [{"name": "local", "address": "http://prometheus.monitoring:9091"}]}
    sums = [
        _annotations(of_kind(render(chart, {"workConfig": values}), "Deployment")[0])["checksum/work-config"]
        for values in (WORK_CONFIG, changed, WORK_CONFIG)
    ]
    assert sums[0] == sums[2] != sums[1]


def test_only_the_controllers_that_roll_out_get_it(chart: Any) -> None:
    objects = render(chart, {"deploymentMode": "perController", "workConfig": WORK_CONFIG})
    assert_valid(objects)
    deployments = _by_component(objects)
    assert sorted(deployments) == ["addon", "placement", "workset"]
    for name in ("workset", "addon"):
        assert FLAG in _args(deployments[name])
        assert "checksum/work-config" in _annotations(deployments[name])
        assert "prom-token" in {v["name"] for v in _pod(deployments[name])["volumes"]}
    placement = deployments["placement"]
    assert not any(a.startswith("--work-config") for a in _args(placement))
    assert _annotations(placement) == {}
    assert {v["name"] for v in _pod(placement)["volumes"]} == {"tmp"}


def test_a_placement_only_release_renders_no_configmap(chart: Any) -> None:
    values = {"controllers": {"workset": {"enabled": False}, "addon": {"enabled": False}}, "workConfig": WORK_CONFIG}
    objects = render(chart, values)
    assert _config_map(objects) is None
    assert FLAG not in _args(of_kind(objects, "Deployment")[0])


def test_the_configmap_name_can_be_changed(chart: Any) -> None:
    objects = render(chart, {"workConfig": {**WORK_CONFIG, "configMapName": "ocm-rollout-work-config"}})
    assert _config_map(objects) is None and _config_map(objects, "ocm-rollout-work-config") is not None
    volumes = _pod(of_kind(objects, "Deployment")[0])["volumes"]
    assert {"name": "work-config", "configMap": {"name": "ocm-rollout-work-config"}} in volumes


def test_the_chart_lints_clean_with_a_work_config() -> None:
    report = helm.lint(CHART, {"workConfig": WORK_CONFIG}, strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


@pytest.mark.usefixtures("restore_logging")
def test_ocm_rollout_run_accepts_the_rendered_file(chart: Any, tmp_path: Path, kubeconfig: str) -> None:
    objects = render(chart, {"workConfig": WORK_CONFIG})
    config_map = _config_map(objects)
    assert config_map is not None
    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"])
    certs = tmp_path / "webhook"
    certs.mkdir()
    for name in ("tls.crt", "tls.key"):
        (certs / name).write_text("")
    local = {FLAG: f"--work-config={path}", "--webhook-cert-dir=/var/run/ocm-rollout/webhook": f"--webhook-cert-dir={certs}"}
    args = [local.get(a, a) for a in _args(of_kind(objects, "Deployment")[0])]
    assert f"--work-config={path}" in args
    config = run.build_config(build_parser().parse_args(["run", *args, f"--kubeconfig={kubeconfig}"]))
    assert [p.name for p in config.plugins] == ["my-rollout"]
    assert list(config.metric_providers) == ["thanos", "local"]
    thanos = config.metric_providers["thanos"]
    assert (thanos.bearer_token_file, dict(thanos.headers)) == ("/var/run/secrets/prom/token", {"X-Scope-OrgID": "team-a"})


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"metricProviders": [{"name": "thanos"}]}, "/workConfig/metricProviders/0"),
        ({"metricProviders": [{"name": "thanos", "address": "thanos:9090"}]}, "/workConfig/metricProviders/0/address"),
        ({"metricProviders": [{"name": "Thanos", "address": "http://t:1"}]}, "/workConfig/metricProviders/0/name"),
        ({"metricProviders": [{"name": "t", "address": "http://t:1", "url": "x"}]}, "/workConfig/metricProviders/0"),
        ({"metricProviders": [{"name": "t", "address": "http://t:1", "timeout": "30"}]}, "/workConfig/metricProviders/0/timeout"),
        ({"metricProviders": [{"name": "t", "address": "http://t:1", "bearerTokenFile": "token"}]}, "/workConfig/metricProviders/0/bearerTokenFile"),
        ({"plugins": [{"name": "p", "endpoint": "p:1", "caBundle": "x"}]}, "/workConfig/plugins/0"),
        ({"plugins": {"name": "p"}}, "/workConfig/plugins"),
        ({"extraVolumeMounts": [{"name": "x"}]}, "/workConfig/extraVolumeMounts/0"),
        ({"config": {}}, "/workConfig"),
    ],
)
def test_schema_rejects_bad_work_config_values(chart: Any, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(chart.merge_values({"workConfig": values}))
