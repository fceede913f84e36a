"""The Helm chart: lint (strict), render, values schema, Kubernetes schemas, hardening, CRDs.

Rendering and linting use PyPI ``helm-python-sdk`` (Helm's own Go SDK behind a C ABI, no helm
binary). Rendered objects are validated with PyPI ``kubernetes-validate``, which ships the JSON
schemas generated from Kubernetes' OpenAPI for every minor release from 1.25 on, in a *strict*
flavour that also rejects unknown fields (what kubeconform/kubeval do, offline). The
kubernetes client's OpenAPI models were the alternative, but they accept unknown fields and
do not check required ones, so they would miss the mistakes that matter in a chart.
"""

from __future__ import annotations

import argparse
import filecmp
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

from ocm_rollout.controllers.runtime.leader import LeaseTimings
from tests.unit.helpers import CHART, REPO, template_objects

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest with schemas.
KUBE_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())

NON_DEFAULT: dict[str, Any] = {
    "controllers": {"addon": {"enabled": True}},
    "deploymentMode": "perController",
    "replicaCount": 3,
    "watchNamespaces": ["team-a", "team-b"],
    "leaderElection": {"leaseName": "ocm-leader", "leaseDuration": 30, "renewDeadline": 20, "retryPeriod": 4},
    "logging": {"format": "text", "level": "debug"},
    "metrics": {"port": 9090, "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
    "placementDebug": {"port": 9443},
    "podDisruptionBudget": {"enabled": True, "minAvailable": None, "maxUnavailable": "50%"},
    "serviceAccount": {"annotations": {"example.com/role": "x"}},
    "argocd": {"placementConfigMap": {"enabled": True, "namespace": "gitops"}},
    "image": {"repository": "registry.local/ocm-rollout", "tag": "v9", "pullPolicy": "Always"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "extraArgs": ["--log-level=warning"],
    "extraEnv": [{"name": "TZ", "value": "UTC"}],
    "priorityClassName": "system-cluster-critical",
}

# The fields of monitoring.coreos.com/v1 ServiceMonitor the chart renders (the Prometheus
# Operator CRD is not among the Kubernetes schemas).
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchNames": {"type": "array", "items": {"type": "string"}}},
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": {"type": "string", "pattern": "^(0|(([0-9]+)(ms|s|m|h))+)$"},
                            "scrapeTimeout": {"type": "string", "pattern": "^(0|(([0-9]+)(ms|s|m|h))+)$"},
                        },
                    },
                },
            },
        },
    },
}


# The fields of the cert-manager.io/v1 kinds the chart renders (not among the Kubernetes schemas).
CERT_MANAGER_SCHEMAS: dict[str, dict[str, Any]] = {
    "Issuer": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {"apiVersion": {"const": "cert-manager.io/v1"}, "spec": {"type": "object", "required": ["selfSigned"]}},
    },
    "Certificate": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "cert-manager.io/v1"},
            "spec": {
                "type": "object",
                "required": ["secretName", "dnsNames", "issuerRef"],
                "properties": {
                    "dnsNames": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "issuerRef": {"type": "object", "required": ["name"]},
                },
            },
        },
    },
}


def render(chart: Any, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    merged = chart.merge_values(values or {})
    chart.validate_schema(merged)
    objects = template_objects(chart.render(merged, name="ocm", namespace="ocm-system", is_install=True))
    for crd in chart.crds:
        objects.extend(doc for doc in yaml.safe_load_all(crd["data"]) if doc)
    return objects


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def assert_valid(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["kind"] == "ServiceMonitor":
            jsonschema.validate(obj, SERVICE_MONITOR_SCHEMA)
            continue
        if obj["kind"] in CERT_MANAGER_SCHEMAS:
            jsonschema.validate(obj, CERT_MANAGER_SCHEMAS[obj["kind"]])
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                where = ".".join(str(p) for p in exc.path)
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for {version} at {where}: {exc.message}")


def test_chart_lints_clean_in_strict_mode() -> None:
    report = helm.lint(CHART, strict=True)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


def test_chart_lints_clean_with_non_default_values() -> None:
    report = helm.lint(CHART, NON_DEFAULT, strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


def test_default_render_has_one_deployment_and_the_objects_it_needs(chart: Any) -> None:
    objects = render(chart)
    kinds = sorted({o["kind"] for o in objects} - {"CustomResourceDefinition"})
    assert kinds == [
        "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount",
    ]
    assert len(of_kind(objects, "Deployment")) == 1
    # one per controller: placement, workset and the add-on manager
    assert len(of_kind(objects, "ClusterRole")) == 3


def test_default_render_validates_against_the_kubernetes_schemas(chart: Any) -> None:
    assert_valid(render(chart))


def test_non_default_render_validates_against_the_kubernetes_schemas(chart: Any) -> None:
    objects = render(chart, NON_DEFAULT)
    assert {"ServiceMonitor", "PodDisruptionBudget", "ConfigMap"} <= {o["kind"] for o in objects}
    assert_valid(objects)


def test_the_kubernetes_schemas_do_reject_an_unknown_field(chart: Any) -> None:
    deployment = of_kind(render(chart), "Deployment")[0]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSIONS[0], strict=True)


def test_per_controller_mode_renders_one_deployment_per_controller(chart: Any) -> None:
    deployments = of_kind(render(chart, NON_DEFAULT), "Deployment")
    args = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["args"] for d in deployments}
    assert sorted(args) == ["ocm-ocm-rollout-addon", "ocm-ocm-rollout-placement", "ocm-ocm-rollout-workset"]
    assert "--controllers=placement" in args["ocm-ocm-rollout-placement"]
    assert "--lease-name=ocm-leader-placement" in args["ocm-ocm-rollout-placement"]
    assert "--debug-bind-address=:9443" in args["ocm-ocm-rollout-placement"]
    assert not any(a.startswith("--debug-bind-address") for a in args["ocm-ocm-rollout-workset"])


def test_disabled_controllers_get_no_deployment_and_no_cluster_role(chart: Any) -> None:
    objects = render(chart, {"controllers": {"addon": {"enabled": False}, "workset": {"enabled": False}}})
    args = of_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--controllers=placement" in args
    assert [r["metadata"]["name"] for r in of_kind(objects, "ClusterRole")] == ["ocm-ocm-rollout-placement"]


def test_deployment_args_are_valid_run_flags(chart: Any) -> None:
    from ocm_rollout.cli.main import build_parser

    for values in ({}, NON_DEFAULT):
        for deployment in of_kind(render(chart, values), "Deployment"):
            args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            parsed = build_parser().parse_args(["run", *args])
            assert isinstance(parsed, argparse.Namespace)
            LeaseTimings(parsed.lease_duration, parsed.renew_deadline, parsed.retry_period).validate()


def test_without_leader_election_there_is_no_lease_role(chart: Any) -> None:
    objects = render(chart, {"leaderElection": {"enabled": False}})
    assert of_kind(objects, "Role") == []
    args = of_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--no-leader-elect" in args


def test_every_container_is_hardened(chart: Any) -> None:
    for values in ({}, NON_DEFAULT):
        for deployment in of_kind(render(chart, values), "Deployment"):
            pod = deployment["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            for container in pod["containers"]:
                sc = container["securityContext"]
                assert sc["runAsNonRoot"] is True
                assert sc["readOnlyRootFilesystem"] is True
                assert sc["allowPrivilegeEscalation"] is False
                assert sc["capabilities"]["drop"] == ["ALL"]
                assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
                assert container["resources"]["requests"] and container["resources"]["limits"]
                assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
                assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_argocd_configmap_matches_the_clusterdecisionresource_contract(chart: Any) -> None:
    configmap = of_kind(render(chart, NON_DEFAULT), "ConfigMap")[0]
    assert configmap["metadata"] == {**configmap["metadata"], "name": "ocm-placement", "namespace": "gitops"}
    assert configmap["data"] == {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "placementdecisions",
        "statusListKey": "decisions",
        "matchKey": "clusterName",
    }


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"deploymentMode": "both"}, "/deploymentMode"),
        ({"replicaCount": -1}, "/replicaCount"),
        ({"replicaCount": "two"}, "/replicaCount"),
        ({"leaderElection": {"retryPeriod": 0}}, "/leaderElection/retryPeriod"),
        ({"logging": {"format": "xml"}}, "/logging/format"),
        ({"metrics": {"port": 70000}}, "/metrics/port"),
        ({"watchNamespaces": ["Not_A_Namespace"]}, "/watchNamespaces/0"),
        ({"securityContext": {"runAsNonRoot": False}}, "/securityContext"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"extraArgs": ["run"]}, "/extraArgs/0"),
        ({"unknownKey": 1}, "unknownKey"),
    ],
)
def test_schema_rejects_bad_values(chart: Any, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(chart.merge_values(values))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"leaderElection": {"leaseDuration": 10, "renewDeadline": 10}}, "leaseDuration must be greater"),
        ({"leaderElection": {"renewDeadline": 2, "retryPeriod": 2}}, "renewDeadline must be greater"),
        (
            {"controllers": {"placement": {"enabled": False}, "workset": {"enabled": False}, "addon": {"enabled": False}}},
            "at least one controller",
        ),
    ],
)
def test_render_refuses_values_that_cannot_work(chart: Any, values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        chart.render(chart.merge_values(values), name="ocm", namespace="ocm-system")


def test_chart_crds_are_identical_to_the_generated_ones() -> None:
    """crds/ holds the CRDs Helm installs as they are; files/crds the webhook-converted ones that
    templates/webhook.yaml installs; together, every generated CRD, byte for byte."""
    generated = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    places = (CHART / "crds", CHART / "files" / "crds")
    shipped = sorted(p.name for place in places for p in place.glob("*.yaml"))
    hint = "run `ocm-rollout crds generate --chart charts/ocm-rollout` to sync the chart"
    assert shipped == generated, hint
    for place in places:
        names = sorted(p.name for p in place.glob("*.yaml"))
        _, mismatch, errors = filecmp.cmpfiles(REPO / "crds", place, names, shallow=False)
        assert mismatch == [] and errors == [], hint
    converted = sorted(p.name for p in places[1].glob("*.yaml"))
    assert converted == sorted(n for n in generated if "conversion:" in (REPO / "crds" / n).read_text()), hint


def test_notes_explain_how_to_find_the_leader_and_the_metrics(chart: Any) -> None:
    notes = chart.render(chart.merge_values({}), name="ocm", namespace="ocm-system")["ocm-rollout/templates/NOTES.txt"]
    assert "kubectl -n ocm-system get leases" in notes
    assert "/metrics" in notes and "/debug/placements/" in notes


def _leaves(values: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in ("resources", "podSecurityContext", "securityContext"):
            out.extend(_leaves(value, path + "."))
        else:
            out.append(path)
    return out


def test_readme_documents_every_value() -> None:
    readme = (CHART / "README.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    missing = [path for path in _leaves(values) if path.rsplit(".", 1)[-1] not in readme]
    assert missing == []
    for key in values:
        assert f"`{key}" in readme, key
