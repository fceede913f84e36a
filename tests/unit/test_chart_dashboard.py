"""The chart's dashboard (``dashboard.*``): off by default; when on, one Deployment running
``ocm-rollout dashboard`` on the pod's loopback (read-only unless ``dashboard.readOnly=false``), its
own ServiceAccount and a ClusterRole that lists and watches what the pages show, and patches only
when it may act; its exec probes, run against a real dashboard server."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import helm_python as helm
import pytest
from kubernetes.client import ApiClient, Configuration

from ocm_rollout.cli.dashboard.server import Dashboard
from ocm_rollout.cli.dashboard.store import KINDS
from ocm_rollout.cli.main import build_parser
from ocm_rollout.client.kube import Kube
from ocm_rollout.controllers.runtime.rbac import Request, load_catalog, rules_from_objects
from tests.unit.helpers import CHART
from tests.unit.test_chart import NON_DEFAULT, assert_valid, of_kind, render
from tests.unit.test_chart_rbac import CATALOG, FORBIDDEN_VERBS

ON: dict[str, Any] = {"dashboard": {"enabled": True}}
WRITABLE: dict[str, Any] = {"dashboard": {"enabled": True, "readOnly": False}}
NAME = "ocm-ocm-rollout-dashboard"
COMPONENT = "app.kubernetes.io/component"


def dashboard_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["metadata"].get("labels", {}).get(COMPONENT) == "dashboard"]


def the(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in dashboard_objects(objects) if o["kind"] == kind]
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def granted(role: dict[str, Any]) -> set[Request]:
    return {t for rule in rules_from_objects([role]) for t in rule.triples()}


def catalog_triples(*parts: str) -> set[Request]:
    catalog = load_catalog(CATALOG)
    return {t for part in parts for entry in catalog[part] for t in entry.rule.triples()}


# -- off by default ---------------------------------------------------------------------------


def test_the_dashboard_is_off_by_default_and_renders_nothing(chart: Any) -> None:
    manifests = chart.render(chart.merge_values({}), name="ocm", namespace="ocm-system")
    objects = render(chart)
    assert dashboard_objects(objects) == []
    assert not [o for o in objects if "dashboard" in o["metadata"]["name"]]
    assert "dashboard" not in manifests["ocm-rollout/templates/NOTES.txt"].lower()


# -- on: read-only by default -----------------------------------------------------------------


def test_enabled_it_renders_one_deployment_of_the_controllers_image_running_the_dashboard(chart: Any) -> None:
    objects = render(chart, ON)
    deployment = the(objects, "Deployment")
    assert deployment["metadata"]["name"] == NAME
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == NAME
    # Its own selector: the controllers' Deployment and PDBs never count its pod, nor it theirs.
    assert deployment["spec"]["selector"]["matchLabels"][COMPONENT] == "dashboard"
    controllers = [d for d in of_kind(objects, "Deployment") if d is not deployment]
    assert controllers and all(d["spec"]["selector"]["matchLabels"][COMPONENT] != "dashboard" for d in controllers)
    found = container(objects)
    assert found["image"] == controllers[0]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert found["command"] == ["ocm-rollout"]
    assert found["args"] == ["dashboard", "--address=127.0.0.1", "--port=3100", "--read-only", "--log-level=info"]


def test_its_arguments_are_valid_dashboard_flags(chart: Any) -> None:
    for values in (ON, WRITABLE, {"dashboard": {"enabled": True, "port": 8000}, "logging": {"level": "debug"}}):
        args = container(render(chart, values))["args"]
        parsed = build_parser().parse_args(args)
        assert parsed.address == "127.0.0.1"
        assert parsed.port == values["dashboard"].get("port", 3100)
        assert parsed.read_only is values["dashboard"].get("readOnly", True)


def test_it_listens_on_loopback_only_so_it_has_no_service_and_no_container_port(chart: Any) -> None:
    objects = render(chart, ON)
    assert "ports" not in container(objects)
    assert not [o for o in dashboard_objects(objects) if o["kind"] in ("Service", "Ingress")]
    # Every Service names a port the dashboard's pod does not have, so none sends it traffic.
    for service in of_kind(objects, "Service"):
        assert all(isinstance(p["targetPort"], str) for p in service["spec"]["ports"]), service["metadata"]["name"]


def test_it_is_hardened_like_the_controllers(chart: Any) -> None:
    for values in (ON, {**NON_DEFAULT, **WRITABLE}):
        objects = render(chart, values)
        pod = the(objects, "Deployment")["spec"]["template"]["spec"]
        first = next(d for d in of_kind(objects, "Deployment") if d["metadata"]["name"] != NAME)
        controller = first["spec"]["template"]["spec"]
        assert pod["securityContext"] == controller["securityContext"]
        for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "imagePullSecrets"):
            assert pod.get(key) == controller.get(key), key
        found = container(objects)
        assert found["securityContext"] == controller["containers"][0]["securityContext"]
        assert found["securityContext"]["readOnlyRootFilesystem"] is True
        assert found["resources"]["requests"] and found["resources"]["limits"]
        assert {"name": "tmp", "mountPath": "/tmp"} in found["volumeMounts"]


def test_its_objects_validate_against_the_kubernetes_schemas(chart: Any) -> None:
    for values in (ON, WRITABLE, {**NON_DEFAULT, **WRITABLE}):
        objects = render(chart, values)
        assert {o["kind"] for o in dashboard_objects(objects)} == {
            "Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
        }  # fmt: skip
        assert_valid(dashboard_objects(objects))


def test_the_chart_lints_clean_with_the_dashboard_on() -> None:
    report = helm.lint(CHART, {**NON_DEFAULT, **WRITABLE}, strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


def test_read_only_its_cluster_role_lists_and_watches_exactly_what_the_pages_show(chart: Any) -> None:
    role = the(render(chart, ON), "ClusterRole")
    assert role["metadata"]["name"] == NAME
    shown = {(r.group, r.plural) for r in KINDS.values()}
    assert granted(role) == {Request(verb, g, p) for g, p in shown for verb in ("list", "watch")}
    assert granted(role) == catalog_triples("dashboard")


def test_writable_it_may_also_get_and_patch_exactly_the_two_kinds_it_acts_on(chart: Any) -> None:
    role = the(render(chart, WRITABLE), "ClusterRole")
    added = granted(role) - granted(the(render(chart, ON), "ClusterRole"))
    assert added == {
        Request(verb, group, plural)
        for group, plural in (
            ("work.open-cluster-management.io", "manifestworkreplicasets"),
            ("addon.open-cluster-management.io", "clustermanagementaddons"),
        )
        for verb in ("get", "patch")
    }
    assert granted(role) == catalog_triples("dashboard", "dashboardActions")
    assert "--read-only" not in container(render(chart, WRITABLE))["args"]


def test_its_rules_say_why_and_grant_nothing_dangerous(chart: Any) -> None:
    for entry in load_catalog(CATALOG)["dashboard"] + load_catalog(CATALOG)["dashboardActions"]:
        assert len(entry.why) > 20 and entry.measured, entry.rule
    for rule in the(render(chart, WRITABLE), "ClusterRole")["rules"]:
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule
        assert not FORBIDDEN_VERBS & set(rule["verbs"]), rule
        assert not {"create", "update", "delete"} & set(rule["verbs"]), rule
        assert not {"secrets", "pods", "serviceaccounts"} & set(rule["resources"]), rule
        assert not [r for r in rule["resources"] if "/" in r], rule


def test_its_binding_gives_its_role_to_its_own_service_account_only(chart: Any) -> None:
    objects = render(chart, {**ON, "serviceAccount": {"name": "hub-ops"}})
    binding = the(objects, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "hub-ops-dashboard", "namespace": "ocm-system"}]
    assert the(objects, "ServiceAccount")["metadata"]["name"] == "hub-ops-dashboard"
    assert the(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "hub-ops-dashboard"
    # The controllers' bindings do not name it.
    others = [b for b in of_kind(objects, "ClusterRoleBinding") if b is not binding]
    assert others and all(s["name"] != "hub-ops-dashboard" for b in others for s in b["subjects"])


def test_rbac_create_and_service_account_create_apply_to_it(chart: Any) -> None:
    objects = render(chart, {**ON, "rbac": {"create": False}, "serviceAccount": {"create": False}})
    kinds = {o["kind"] for o in dashboard_objects(objects)}
    assert kinds == {"Deployment"}
    assert the(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == NAME


def test_notes_say_how_to_open_it(chart: Any) -> None:
    def notes(values: dict[str, Any]) -> str:
        return str(chart.render(chart.merge_values(values), name="ocm", namespace="ocm-system")["ocm-rollout/templates/NOTES.txt"])

    read_only = notes({"dashboard": {"enabled": True, "port": 8000}})
    assert f"kubectl -n ocm-system port-forward deploy/{NAME} 8000" in read_only
    assert "http://127.0.0.1:8000/" in read_only and "read-only" in read_only
    writable = notes(WRITABLE)
    assert "read-only" not in writable and f"as ServiceAccount {NAME}" in writable


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"dashboard": {"port": "abc"}}, "/dashboard/port"),
        ({"dashboard": {"port": 0}}, "/dashboard/port"),
        ({"dashboard": {"port": 70000}}, "/dashboard/port"),
        ({"dashboard": {"readOnly": "yes"}}, "/dashboard/readOnly"),
        ({"dashboard": {"enabled": "true"}}, "/dashboard/enabled"),
        ({"dashboard": {"resources": {"requets": {}}}}, "requets"),
        ({"dashboard": {"address": "0.0.0.0"}}, "address"),
    ],
)
def test_schema_rejects_bad_dashboard_values(chart: Any, values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        chart.validate_schema(chart.merge_values(values))


# -- the probes, run ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _unreachable_hub() -> Kube:
    """A client of a hub nobody serves: the dashboard's caches never list."""
    configuration = Configuration()
    configuration.host = f"http://127.0.0.1:{_free_port()}"
    return Kube(ApiClient(configuration))


async def _passes(probe: dict[str, Any]) -> bool:
    """Run an exec probe as the kubelet would (the image's `python` is this interpreter)."""
    command = list(probe["exec"]["command"])
    assert command[0] == "python"
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command[1:], stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    return await asyncio.wait_for(process.wait(), probe["timeoutSeconds"] + 10) == 0


@asynccontextmanager
async def _serving(port: int) -> AsyncIterator[Dashboard]:
    server = Dashboard(_unreachable_hub(), read_only=True)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(server.serve("127.0.0.1", port, ready=ready.set_result))
    try:
        await asyncio.wait_for(ready, 10)
        yield server
    finally:
        server.stop.set()
        await asyncio.wait_for(task, 10)


async def test_the_probes_ask_healthz_on_loopback_liveness_any_answer_readiness_200(chart: Any) -> None:
    port = _free_port()
    found = container(render(chart, {"dashboard": {"enabled": True, "port": port}}))
    liveness, readiness = found["livenessProbe"], found["readinessProbe"]
    assert f"http://127.0.0.1:{port}/healthz" in liveness["exec"]["command"][-1]
    # Nothing listens: neither passes.
    assert not await _passes(liveness) and not await _passes(readiness)
    async with _serving(port) as server:
        # Listening, nothing listed yet (503): alive, not ready.
        assert server.store.unsynced()
        assert await _passes(liveness)
        assert not await _passes(readiness)
        # Every kind listed (200): ready.
        for cache in server.store.caches.values():
            cache.synced.set()
        assert await _passes(liveness) and await _passes(readiness)
