"""The Helm chart on a real control plane (etcd, kube-apiserver, kube-controller-manager), with the
chart's own identities: `helm install`, `helm upgrade` and `helm uninstall` as the READMEs tell
users, with the helm that `make helm` builds.

Two hubs, one scenario each (module fixtures; the tests then look at what each left):

- **An empty hub.** `helm install ocm-rollout charts/ocm-rollout -n ocm-rollout --create-namespace`
  (README) with the work configuration (a metric provider) and the conversion webhook called at a
  loopback URL (`conversionWebhook.url`: nothing may send traffic to a Service's cluster IP on
  this machine, as on control planes outside the pod network). The controllers' Deployment runs
  as a process with the Deployment's own arguments, its Secret and ConfigMap volumes as files and
  a kubeconfig holding a token the TokenRequest API minted for the chart's ServiceAccount. A
  simulated fleet (`sim_main` with an administrator's kubeconfig, as `ocm-rollout up` runs it), a
  Progressive ManifestWorkReplicaSet rollout whose metric check names the chart's metric provider,
  then the upgrade of the chart README (the CRDs applied first, a new chart version; the pod
  replaced: a new process takes the Lease over), an add-on configuration rollout on the new
  process, the dashboard enabled by another upgrade and a pause and resume through it, a
  read-only dashboard, and `helm uninstall`.
- **A hub that holds OCM's own CRDs**, as OCM's cluster-manager installs them (its templates in
  the Go module ``open-cluster-management.io/ocm``, which ``make ocm-binaries`` fetches):
  `helm install` as the chart README says, refused until the README's adoption step labels the
  two add-on CRDs, then both rollouts on OCM's schemas, and `helm uninstall`.

Every request of the chart's ServiceAccounts is read back from kube-apiserver's audit log, with
the decision of its RBAC authorizer: every one allowed, by the chart's own bindings. A request
the chart does not grant gets kube-apiserver's 403 message. Skipped, naming the command to run,
when kube-apiserver or helm is not built.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.sandbox import tls
from tests.chart_kube import (
    CHART,
    OCM_HUB_NAMESPACE,
    REPO,
    Audited,
    Balancer,
    ChartHub,
    Grant,
    Measured,
    assert_granted_by_the_chart,
    ocm_hub_crds,
    pod_command,
    service_account_user,
    skip_unless_ready,
)
from tests.e2e.helpers import OCM_ROLLOUT, eventually
from tests.integration.helpers import RunProcess, free_port

pytestmark = pytest.mark.e2e

RELEASE = "ocm-rollout"
README_NAMESPACE = "ocm-rollout"  # README.md: helm install ... -n ocm-rollout
CLUSTERS = [f"cluster{i}" for i in range(1, 5)]
ROLLOUT_NAMESPACE = "default"  # where the simulated fleet binds its cluster sets
CONTROLLERS = ["placement", "workset", "addon"]
ADDON_GROUP = "addon.open-cluster-management.io"
WORK_API = "/apis/work.open-cluster-management.io/v1alpha1"
ADDON_API = f"/apis/{ADDON_GROUP}/v1alpha1"
CHART_CRDS = 12
TIMEOUT = 120.0


# -- a metric provider for the work configuration ---------------------------------------------


class StubPrometheus:
    """A Prometheus-compatible instant query API that answers an empty vector (no errors) and
    records the query and the X-Scope-OrgID header of each request."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
                stub.queries.append((query, self.headers.get("X-Scope-OrgID", "")))
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="stub-prometheus", daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- processes --------------------------------------------------------------------------------


def start_pod(hub: ChartHub, name: str, namespace: str, deployment: str, kubeconfig: Path,
              ports: dict[str, int] | None = None) -> RunProcess:
    """The Deployment's pod as a process here, authenticated by ``kubeconfig``."""
    argv, env = pod_command(hub, namespace, deployment, hub.directory / "pods", ports)
    log_path = hub.directory / f"{name}.log"
    full_env = {k: v for k, v in hub.env().items() if k != "KUBECONFIG"}
    full_env.update(env)
    with log_path.open("wb") as log:
        process = subprocess.Popen([*argv, "--kubeconfig", str(kubeconfig)], stdout=log, stderr=subprocess.STDOUT,
                                   env=full_env, cwd=REPO, stdin=subprocess.DEVNULL)  # fmt: skip
    return RunProcess(name=name, process=process, log_path=log_path)


def start_simulation(hub: ChartHub) -> subprocess.Popen[bytes]:
    """The simulated clusters, as `ocm-rollout up` runs them, with the administrator's kubeconfig."""
    log = (hub.directory / "sim.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "ocm_rollout.sandbox.sim_main", "--kubeconfig", str(hub.admin), "--clusters", str(len(CLUSTERS))],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, env=hub.env(),
    )  # fmt: skip


def stop(process: subprocess.Popen[bytes] | RunProcess | None) -> None:
    if isinstance(process, RunProcess):
        process.kill()
    elif process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def leading(proc: RunProcess) -> bool:
    return bool(proc.logged("operator started"))


def dashboard_url(proc: RunProcess) -> str | None:
    proc.check_alive()
    found = re.search(r"^dashboard: (http://\S+)", proc.log_path.read_text(errors="replace"), re.M)
    return found.group(1) if found else None


# -- the API as the administrator -------------------------------------------------------------


def create(hub: ChartHub, path: str, body: dict[str, Any]) -> None:
    status, answer = hub.request("POST", path, body)
    assert status == 201, (path, status, answer)


def merge_patch(hub: ChartHub, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = hub.request("PATCH", path, body, content_type="application/merge-patch+json")
    assert status == 200, (path, status, answer)
    return dict(answer)


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return {}


def events(hub: ChartHub, namespace: str, name: str) -> list[tuple[str, str]]:
    listed = hub.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    return [(e["reason"], e.get("message", "")) for e in listed if (e.get("involvedObject") or {}).get("name") == name]


MWRS = "web"
PLACEMENT = "fleet"
ADDON = "helloworld"
PROVIDER = "stub"
ORG = "team-a"


def events_until(hub: ChartHub, namespace: str, name: str, reason: str) -> list[tuple[str, str]] | None:
    """The object's events once one has the reason, else None."""
    found = events(hub, namespace, name)
    return found if any(r == reason for r, _ in found) else None


def work_config_values(prometheus: StubPrometheus) -> dict[str, Any]:
    return {"workConfig": {"metricProviders": [{"name": PROVIDER, "address": prometheus.address, "headers": {"X-Scope-OrgID": ORG}}]}}


def webhook_values(balancer: Balancer) -> dict[str, Any]:
    """The URL kube-apiserver calls the conversion webhook at: the load balancer before the pods."""
    return {"conversionWebhook": {"url": f"https://127.0.0.1:{balancer.port}/convert"}}


def start_controllers(hub: ChartHub, name: str, namespace: str, kubeconfig: Path, balancer: Balancer) -> RunProcess:
    """The controllers' pod, its webhook port behind the load balancer."""
    port = free_port()
    proc = start_pod(hub, name, namespace, RELEASE, kubeconfig, {"--webhook-bind-address": port})
    balancer.backends.append(port)
    return proc


def write_values(directory: Path, *parts: dict[str, Any]) -> Path:
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump(merged), encoding="utf-8")
    return path


def place_the_fleet(hub: ChartHub) -> None:
    create(hub, f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{ROLLOUT_NAMESPACE}/placements",
           {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": PLACEMENT}, "spec": {}})  # fmt: skip

    def selected() -> bool:
        placement = hub.get(f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{ROLLOUT_NAMESPACE}/placements/{PLACEMENT}")
        return (placement.get("status") or {}).get("numberOfSelectedClusters") == len(CLUSTERS)

    eventually(selected, timeout=TIMEOUT, message=f"Placement {PLACEMENT} to select the {len(CLUSTERS)} simulated clusters")


def roll_out_a_manifest_work_replica_set(hub: ChartHub) -> dict[str, Any]:
    """A Progressive rollout (two clusters at a time) whose metric check queries the chart's
    metric provider; returns the ManifestWorkReplicaSet once its rollout completed."""
    metric_check = {"name": "errors", "metric": {
        "provider": {"name": PROVIDER}, "query": "errors{cluster={{cluster}}}", "successCondition": "size(result) == 0"}}
    body = {
        "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": MWRS},
        "spec": {
            "placementRefs": [{"name": PLACEMENT, "rolloutStrategy": {
                "type": "Progressive", "progressive": {"maxConcurrency": 2}, "validation": {"checks": [metric_check]}}}],
            "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}, "data": {"v": "1"}}]}},
        },
    }  # fmt: skip
    path = f"{WORK_API}/namespaces/{ROLLOUT_NAMESPACE}/manifestworkreplicasets"
    create(hub, path, body)

    def complete() -> dict[str, Any] | None:
        found = hub.get(f"{path}/{MWRS}")
        rolled = condition(found, "PlacementRolledOut")
        return dict(found) if (rolled.get("status"), rolled.get("reason")) == ("True", "Complete") else None

    return eventually(complete, timeout=TIMEOUT, message=f"ManifestWorkReplicaSet {MWRS}'s rollout to complete")


def install_an_addon(hub: ChartHub) -> None:
    create(hub, f"{ADDON_API}/namespaces/{ROLLOUT_NAMESPACE}/addondeploymentconfigs", {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "AddOnDeploymentConfig", "metadata": {"name": "deploy-config"},
        "spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": "info"}]}})  # fmt: skip
    config = {"group": ADDON_GROUP, "resource": "addondeploymentconfigs", "name": "deploy-config", "namespace": ROLLOUT_NAMESPACE}
    create(hub, f"{ADDON_API}/clustermanagementaddons", {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "ClusterManagementAddOn",
        "metadata": {"name": ADDON, "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"}},
        "spec": {
            "addOnMeta": {"displayName": ADDON},
            "supportedConfigs": [{"group": ADDON_GROUP, "resource": "addondeploymentconfigs"}],
            "installStrategy": {"type": "Placements", "placements": [{
                "name": PLACEMENT, "namespace": ROLLOUT_NAMESPACE, "configs": [config],
                "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 2}}}]},
        },
    })  # fmt: skip


def addon_hashes(hub: ChartHub) -> dict[str, tuple[str, str]]:
    """Per cluster: (desired, last applied) spec hash of its ManagedClusterAddOn's configuration."""
    out = {}
    for mca in hub.get(f"{ADDON_API}/managedclusteraddons")["items"]:
        refs = (mca.get("status") or {}).get("configReferences") or []
        if mca["metadata"]["name"] == ADDON and refs:
            out[mca["metadata"]["namespace"]] = (
                str((refs[0].get("desiredConfig") or {}).get("specHash") or ""),
                str((refs[0].get("lastAppliedConfig") or {}).get("specHash") or ""),
            )
    return out


def addon_progression(hub: ChartHub) -> tuple[str, str]:
    cma = hub.get(f"{ADDON_API}/clustermanagementaddons/{ADDON}")
    for entry in (cma.get("status") or {}).get("installProgressions") or []:
        found = condition({"status": entry}, "Progressing")
        if found:
            return str(found["status"]), str(found["reason"])
    return ("", "")


def applied_everywhere(hub: ChartHub, old: str | None = None) -> str | None:
    """The configuration's spec hash once every cluster applied it (and it is not ``old``) and the
    add-on's rollout says Completed."""
    hashes = addon_hashes(hub)
    if sorted(hashes) != CLUSTERS or len(set(hashes.values())) != 1:
        return None
    desired, applied = next(iter(hashes.values()))
    if not desired or desired != applied or desired == old or addon_progression(hub) != ("False", "Completed"):
        return None
    return desired


def roll_out_an_addon_configuration(hub: ChartHub) -> tuple[str, str]:
    """The add-on installed on every cluster, then a new configuration rolled out; the two hashes."""
    first = eventually(lambda: applied_everywhere(hub), timeout=TIMEOUT, message="the add-on installed and configured everywhere")
    merge_patch(hub, f"{ADDON_API}/namespaces/{ROLLOUT_NAMESPACE}/addondeploymentconfigs/deploy-config",
                {"spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": "debug"}]}})  # fmt: skip
    second = eventually(lambda: applied_everywhere(hub, first), timeout=TIMEOUT, message="the new add-on configuration rolled out")
    return first, second


def release_objects(hub: ChartHub, namespace: str) -> dict[str, list[str]]:
    """The release's objects by kind (label app.kubernetes.io/instance), as the hub stores them."""
    selector = f"labelSelector=app.kubernetes.io/instance%3D{RELEASE}"
    paths = {
        "ServiceAccount": f"/api/v1/namespaces/{namespace}/serviceaccounts",
        "Secret": f"/api/v1/namespaces/{namespace}/secrets",
        "ConfigMap": f"/api/v1/namespaces/{namespace}/configmaps",
        "Service": f"/api/v1/namespaces/{namespace}/services",
        "Deployment": f"/apis/apps/v1/namespaces/{namespace}/deployments",
        "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
        "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    }
    return {kind: sorted(o["metadata"]["name"] for o in hub.get(f"{path}?{selector}")["items"]) for kind, path in paths.items()}


def crds(hub: ChartHub) -> dict[str, dict[str, Any]]:
    listed = hub.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    return {c["metadata"]["name"]: c for c in listed if c["spec"]["group"].endswith("open-cluster-management.io")}


def all_crds(hub: ChartHub) -> list[str]:
    return [c["metadata"]["name"] for c in hub.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]]


def established(crd: dict[str, Any]) -> bool:
    return condition(crd, "Established").get("status") == "True"


def webhook_ca(hub: ChartHub, namespace: str) -> str:
    return str(hub.get(f"/api/v1/namespaces/{namespace}/secrets/{RELEASE}-webhook-tls")["data"]["ca.crt"])


def client_configs(hub: ChartHub) -> dict[str, dict[str, Any]]:
    return {name: crd["spec"]["conversion"]["webhook"]["clientConfig"]
            for name, crd in crds(hub).items() if crd["spec"].get("conversion", {}).get("strategy") == "Webhook"}


def kubectl_as(hub: ChartHub, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return hub.kubectl("--kubeconfig", str(kubeconfig), *args, check=False)


def ocm_rollout(hub: ChartHub, *args: str) -> subprocess.CompletedProcess[str]:
    return hub.run(OCM_ROLLOUT, *args, check=False)


def forbidden(user: str, verb: str, resource: str, group: str, namespace: str | None, name: str | None = None) -> str:
    """kube-apiserver's message for a request RBAC denies."""
    qualified = f"{resource}.{group}" if group else resource
    what = f'{qualified} "{name}"' if name else qualified
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return f'{what} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group "{group}" {where}'


# -- the empty hub ------------------------------------------------------------------------------


@dataclass
class EmptyHub:
    """What the scenario on the empty hub saw; the tests check it."""

    install: subprocess.CompletedProcess[str]
    crds_after_install: dict[str, bool]
    client_configs: dict[str, dict[str, Any]]
    webhook_port: int
    webhook_ca: str
    objects: dict[str, list[str]]
    work_config: str
    mwrs: dict[str, Any]
    mwrs_events: list[tuple[str, str]]
    queries: list[tuple[str, str]]
    v1beta1_cma: dict[str, Any]
    crd_apply: subprocess.CompletedProcess[str]
    crd_description_after_upgrade: str
    image_after_upgrade: str
    webhook_ca_after_upgrade: str
    client_configs_after_upgrade: dict[str, dict[str, Any]]
    first_exit: int
    addon_hashes: tuple[str, str]
    addon_events: list[tuple[str, str]]
    dashboard_answers: dict[str, int]
    paused_seen: list[Any]
    addon_paused_seen: list[Any]
    read_only_answers: dict[str, int]
    controllers: Measured
    dashboard_writable: Measured
    dashboard_read_only: Measured
    forbidden_answers: dict[str, tuple[int, str]]
    uninstall: subprocess.CompletedProcess[str]
    objects_after_uninstall: dict[str, list[str]]
    crds_after_uninstall: list[str]
    kept_objects: dict[str, bool]
    token_after_uninstall: int
    v1beta1_after_uninstall: subprocess.CompletedProcess[str]
    timings: dict[str, float] = field(default_factory=dict)


def _new_chart_version(directory: Path) -> Path:
    """The chart as a next release would ship it: version and appVersion 0.1.1, and a changed CRD
    (a printer column's description), so that the README's `kubectl apply` of the CRDs matters."""
    chart = directory / "ocm-rollout"
    shutil.copytree(CHART, chart)
    meta = (chart / "Chart.yaml").read_text(encoding="utf-8")
    (chart / "Chart.yaml").write_text(meta.replace("version: 0.1.0", "version: 0.1.1").replace('appVersion: "0.1.0"', 'appVersion: "0.1.1"'),
                                      encoding="utf-8")  # fmt: skip
    path = chart / "crds" / "cluster.open-cluster-management.io_placements.yaml"
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "Placement (chart 0.1.1)"
    path.write_text(yaml.safe_dump(crd, sort_keys=False), encoding="utf-8")
    return chart


async def _dashboard_session(url: str, actions: list[dict[str, Any]], pages: list[str]) -> tuple[dict[str, int], list[Any]]:
    import aiohttp

    answers: dict[str, int] = {}
    results: list[Any] = []
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(url) as response:
            answers["GET /"] = response.status
            text = await response.text()
        token = re.search(r'name="csrf-token" content="([0-9a-f]+)"', text)
        for path in pages:
            async with session.get(url + path) as response:
                answers[f"GET {path}"] = response.status
        headers = {"Content-Type": "application/json", "X-CSRF-Token": token.group(1) if token else "", "Origin": url.rstrip("/")}
        for body in actions:
            async with session.post(url + "api/actions", json=body, headers=headers) as response:
                answers[f"{body['verb']} {body['kind']}"] = response.status
                results.append(await response.json())
    return answers, results


def _dashboard(url: str, actions: list[dict[str, Any]], pages: list[str]) -> tuple[dict[str, int], list[Any]]:
    import asyncio

    return asyncio.run(_dashboard_session(url, actions, pages))


DASHBOARD_PAGES = ["api/overview", f"api/rollouts/mwrs/{ROLLOUT_NAMESPACE}/{MWRS}", f"api/rollouts/addon/{ADDON}",
                   f"api/placements/{ROLLOUT_NAMESPACE}/{PLACEMENT}", "api/fleet", "healthz"]


def stop_all(processes: list[Any]) -> None:
    """Stop what a scenario started, the last first."""
    for process in reversed(processes):
        if isinstance(process, StubPrometheus):
            process.stop()
        elif isinstance(process, Balancer):
            process.close()
        else:
            stop(process)


def _wait_dashboard_synced(url: str) -> None:
    import urllib.request

    def healthy() -> bool:
        with urllib.request.urlopen(url + "healthz", timeout=5) as answer:
            return bool(answer.status == 200)

    eventually(healthy, timeout=TIMEOUT, message="the dashboard's /healthz (every kind listed)")


def _empty_hub_scenario(hub: ChartHub, work: Path, timings: dict[str, float]) -> EmptyHub:
    began = time.monotonic()

    def mark(step: str) -> None:
        timings[step] = round(time.monotonic() - began, 1)

    prometheus = StubPrometheus()
    balancer = Balancer()
    processes: list[Any] = [prometheus, balancer]
    try:
        values = write_values(work, webhook_values(balancer), work_config_values(prometheus))
        # README.md, "Installing into a real hub cluster".
        install = hub.helm("install", RELEASE, "charts/ocm-rollout", "-n", README_NAMESPACE, "--create-namespace", "-f", values)
        mark("helm install")
        crds_after_install = {name: established(crd) for name, crd in crds(hub).items()}
        configs = client_configs(hub)
        ca = webhook_ca(hub, README_NAMESPACE)
        objects = release_objects(hub, README_NAMESPACE)
        work_config = hub.get(f"/api/v1/namespaces/{README_NAMESPACE}/configmaps/work-controller-config")["data"]["config.yaml"]

        controllers = hub.identity(README_NAMESPACE, RELEASE)
        first = start_controllers(hub, "controllers-1", README_NAMESPACE, controllers, balancer)
        processes.append(first)
        processes.append(start_simulation(hub))
        eventually(lambda: leading(first), timeout=TIMEOUT, message="the controllers to lead")
        mark("controllers leading")
        place_the_fleet(hub)
        mark("fleet placed")
        mwrs = roll_out_a_manifest_work_replica_set(hub)
        mark("ManifestWorkReplicaSet rolled out")
        # Events are posted after the status write that completes the rollout: wait for the last.
        mwrs_events = eventually(lambda: events_until(hub, ROLLOUT_NAMESPACE, MWRS, "RolloutComplete"),
                                 timeout=TIMEOUT, message=f"ManifestWorkReplicaSet {MWRS}'s RolloutComplete event")

        # The chart README's upgrade: a release that changes the CRDs (applied first), a new image.
        chart = _new_chart_version(work)
        crd_apply = hub.kubectl("apply", "--server-side", "--force-conflicts", "-f", f"{chart}/crds/", check=False)
        upgrade = hub.helm("upgrade", RELEASE, chart, "-n", README_NAMESPACE, "--reuse-values", "--set", "image.tag=0.1.1")
        assert upgrade.returncode == 0
        mark("helm upgrade")
        placements_crd = crds(hub)["placements.cluster.open-cluster-management.io"]
        description = placements_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].get("description", "")
        ca_after_upgrade = webhook_ca(hub, README_NAMESPACE)
        configs_after_upgrade = client_configs(hub)
        deployment = hub.get(f"/apis/apps/v1/namespaces/{README_NAMESPACE}/deployments/{RELEASE}")
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        # The pod replaced, as a rolling update does: the new one waits, the old one releases the Lease.
        second = start_controllers(hub, "controllers-2", README_NAMESPACE, controllers, balancer)
        processes.append(second)
        eventually(lambda: second.logged("waiting for leadership"), timeout=TIMEOUT, message="the new pod on standby")
        first_exit = first.terminate()
        eventually(lambda: leading(second), timeout=TIMEOUT, message="the new pod to take the Lease over")
        mark("new pod leading")

        install_an_addon(hub)
        hashes = roll_out_an_addon_configuration(hub)
        mark("add-on configuration rolled out")
        addon_events = events(hub, "default", ADDON)
        v1beta1 = json.loads(hub.kubectl("get", "clustermanagementaddons", ADDON, "-o", "json").stdout)

        # The dashboard (chart README, "Dashboard"), with its actions.
        before_dashboard = hub.audit_size()
        hub.helm("upgrade", RELEASE, chart, "-n", README_NAMESPACE, "--reuse-values",
                 "--set", "dashboard.enabled=true", "--set", "dashboard.readOnly=false")  # fmt: skip
        mark("dashboard enabled")
        dashboard_identity = hub.identity(README_NAMESPACE, f"{RELEASE}-dashboard")
        writable = Grant.read(hub, RELEASE, README_NAMESPACE, f"{RELEASE}-dashboard", [f"{RELEASE}-dashboard"],
                              ["dashboard", "dashboardActions"])  # fmt: skip
        dashboard = start_pod(hub, "dashboard", README_NAMESPACE, f"{RELEASE}-dashboard", dashboard_identity)
        processes.append(dashboard)
        url = eventually(lambda: dashboard_url(dashboard), timeout=TIMEOUT, message="the dashboard's URL")
        _wait_dashboard_synced(url)
        mwrs_path = f"{WORK_API}/namespaces/{ROLLOUT_NAMESPACE}/manifestworkreplicasets/{MWRS}"
        mwrs_ref = {"kind": "mwrs", "namespace": ROLLOUT_NAMESPACE, "name": MWRS}
        addon_ref = {"kind": "addon", "name": ADDON}
        answers, _ = _dashboard(url, [{**mwrs_ref, "verb": "pause"}, {**addon_ref, "verb": "pause"}], DASHBOARD_PAGES)
        paused = [hub.get(mwrs_path)["spec"].get("paused")]
        addon_paused = [(hub.get(f"{ADDON_API}/clustermanagementaddons/{ADDON}")["metadata"].get("annotations") or {})
                        .get("rollout.ocm-rollout.io/paused")]  # fmt: skip
        more, _ = _dashboard(url, [{**mwrs_ref, "verb": "resume"}, {**addon_ref, "verb": "resume"}], [])
        answers.update(more)
        paused.append(hub.get(mwrs_path)["spec"].get("paused"))
        addon_paused.append((hub.get(f"{ADDON_API}/clustermanagementaddons/{ADDON}")["metadata"].get("annotations") or {})
                            .get("rollout.ocm-rollout.io/paused"))  # fmt: skip
        dashboard.terminate()
        processes.remove(dashboard)
        after_writable = hub.audit_size()
        mark("dashboard actions")

        hub.helm("upgrade", RELEASE, chart, "-n", README_NAMESPACE, "--reuse-values", "--set", "dashboard.readOnly=true")
        read_only_grant = Grant.read(hub, RELEASE, README_NAMESPACE, f"{RELEASE}-dashboard", [f"{RELEASE}-dashboard"], ["dashboard"])
        read_only = start_pod(hub, "dashboard-read-only", README_NAMESPACE, f"{RELEASE}-dashboard", dashboard_identity)
        processes.append(read_only)
        url = eventually(lambda: dashboard_url(read_only), timeout=TIMEOUT, message="the read-only dashboard's URL")
        _wait_dashboard_synced(url)
        read_only_answers, _ = _dashboard(url, [{**mwrs_ref, "verb": "pause"}], DASHBOARD_PAGES)
        read_only.terminate()
        processes.remove(read_only)
        after_read_only = hub.audit_size()
        mark("read-only dashboard")

        controller_grant = Grant.read(hub, RELEASE, README_NAMESPACE, RELEASE,
                                      [f"{RELEASE}-{c}" for c in CONTROLLERS] + [f"{RELEASE}-leader-election"], CONTROLLERS)
        # What the chart does not grant, refused by kube-apiserver (measured apart: the
        # controllers' requests up to here).
        end_of_controllers = hub.audit_size()
        forbidden_answers: dict[str, tuple[int, str]] = {}
        denied = ocm_rollout(hub, "rollout", "pause", MWRS, "-n", ROLLOUT_NAMESPACE, "--kubeconfig", str(dashboard_identity))
        forbidden_answers["dashboard: ocm-rollout rollout pause"] = (denied.returncode, denied.stderr)
        denied = kubectl_as(hub, controllers, "get", "secrets", "-n", README_NAMESPACE)
        forbidden_answers["controllers: kubectl get secrets"] = (denied.returncode, denied.stderr)
        token = hub.token(README_NAMESPACE, RELEASE)
        status, body = hub.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{README_NAMESPACE}/leases/another", token=token)
        forbidden_answers["controllers: GET another Lease"] = (status, str((body or {}).get("message")))
        status, body = hub.request("POST", "/apis/cluster.open-cluster-management.io/v1/managedclusters",
                                   {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                                    "metadata": {"name": "intruder"}, "spec": {}}, token=token)  # fmt: skip
        forbidden_answers["controllers: create a ManagedCluster"] = (status, str((body or {}).get("message")))

        # README.md / chart README: uninstall; the pods go with their Deployment.
        uninstall = hub.helm("uninstall", RELEASE, "-n", README_NAMESPACE)
        second.terminate()
        mark("helm uninstall")
        objects_after = release_objects(hub, README_NAMESPACE)
        crds_after = sorted(crds(hub))
        kept = {
            "ManifestWorkReplicaSet": hub.get_or_none(mwrs_path) is not None,
            "ClusterManagementAddOn": hub.get_or_none(f"{ADDON_API}/clustermanagementaddons/{ADDON}") is not None,
        }
        # The ServiceAccount is gone: its tokens stop authenticating once kube-apiserver sees it.
        status = eventually(
            lambda: (lambda got: got if got == 401 else None)(
                hub.request("GET", f"{WORK_API}/manifestworkreplicasets", token=token)[0]),
            timeout=60, message="the deleted ServiceAccount's token to be refused",
        )  # fmt: skip
        v1beta1_after = hub.kubectl("get", "clustermanagementaddons", ADDON, "-o", "name", check=False)
        return EmptyHub(
            install=install, crds_after_install=crds_after_install, client_configs=configs, webhook_port=balancer.port,
            webhook_ca=ca, objects=objects, work_config=work_config, mwrs=mwrs, mwrs_events=mwrs_events,
            queries=list(prometheus.queries), v1beta1_cma=v1beta1, crd_apply=crd_apply,
            crd_description_after_upgrade=description, image_after_upgrade=image,
            webhook_ca_after_upgrade=ca_after_upgrade, client_configs_after_upgrade=configs_after_upgrade,
            first_exit=first_exit, addon_hashes=hashes,
            addon_events=addon_events, dashboard_answers=answers, paused_seen=paused, addon_paused_seen=addon_paused,
            read_only_answers=read_only_answers,
            controllers=controller_grant.measure(hub, end=end_of_controllers),
            dashboard_writable=writable.measure(hub, start=before_dashboard, end=after_writable),
            dashboard_read_only=read_only_grant.measure(hub, start=after_writable, end=after_read_only),
            forbidden_answers=forbidden_answers, uninstall=uninstall, objects_after_uninstall=objects_after,
            crds_after_uninstall=crds_after, kept_objects=kept, token_after_uninstall=status,
            v1beta1_after_uninstall=v1beta1_after, timings=timings,
        )  # fmt: skip
    finally:
        stop_all(processes)


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmptyHub]:
    skip_unless_ready()
    work = tmp_path_factory.mktemp("chart-empty-hub")
    hub = ChartHub(work / "hub")
    timings: dict[str, float] = {}
    began = time.monotonic()
    hub.start()
    timings["hub started"] = round(time.monotonic() - began, 1)
    try:
        yield _empty_hub_scenario(hub, work, timings)
    finally:
        hub.stop()


def test_helm_install_on_an_empty_hub_installs_every_crd_and_the_release(empty: EmptyHub) -> None:
    assert "STATUS: deployed" in empty.install.stdout, empty.install.stdout
    assert len(empty.crds_after_install) == CHART_CRDS and all(empty.crds_after_install.values()), empty.crds_after_install
    assert empty.objects == {
        "ServiceAccount": [RELEASE],
        "Secret": [f"{RELEASE}-webhook-tls"],
        "ConfigMap": ["work-controller-config"],
        "Service": [f"{RELEASE}-metrics", f"{RELEASE}-placement-debug", f"{RELEASE}-webhook"],
        "Deployment": [RELEASE],
        "Role": [f"{RELEASE}-leader-election"],
        "RoleBinding": [f"{RELEASE}-leader-election"],
        "ClusterRole": [f"{RELEASE}-{c}" for c in ("addon", "placement", "workset")],
        "ClusterRoleBinding": [f"{RELEASE}-{c}" for c in ("addon", "placement", "workset")],
    }


def test_the_addon_crds_call_the_webhook_at_its_url_trusting_the_release_ca(empty: EmptyHub) -> None:
    url = f"https://127.0.0.1:{empty.webhook_port}/convert"
    assert empty.client_configs == {
        f"{plural}.{ADDON_GROUP}": {"url": url, "caBundle": empty.webhook_ca}
        for plural in ("clustermanagementaddons", "managedclusteraddons")
    }


def test_the_work_configuration_reaches_the_controllers(empty: EmptyHub) -> None:
    assert yaml.safe_load(empty.work_config)["metricProviders"][0]["name"] == PROVIDER
    # The metric check named the chart's provider: queried with its headers, for every cluster.
    assert {org for _, org in empty.queries} == {ORG}
    assert {q for q, _ in empty.queries} == {f'errors{{cluster="{c}"}}' for c in CLUSTERS}


def test_a_progressive_rollout_completes_with_the_chart_identity(empty: EmptyHub) -> None:
    assert empty.mwrs["status"]["summary"]["total"] == len(CLUSTERS)
    waves = [m for reason, m in empty.mwrs_events if reason == "RolloutWaveStarted"]
    assert len(waves) >= 2, empty.mwrs_events  # two clusters at a time
    assert "RolloutComplete" in {reason for reason, _ in empty.mwrs_events}


def test_the_addon_kinds_are_served_in_v1beta1_through_the_chart_webhook(empty: EmptyHub) -> None:
    cma = empty.v1beta1_cma
    assert cma["apiVersion"] == f"{ADDON_GROUP}/v1beta1"
    # v1alpha1's supportedConfigs is v1beta1's defaultConfigs, with OCM's reserved name for "no
    # default": converted by the webhook, not relabelled.
    assert cma["spec"]["defaultConfigs"] == [
        {"group": ADDON_GROUP, "resource": "addondeploymentconfigs", "name": "__reserved_no_default__"}]
    assert "supportedConfigs" not in cma["spec"]


def test_helm_upgrade_as_the_readme_says(empty: EmptyHub) -> None:
    assert empty.crd_apply.returncode == 0, empty.crd_apply.stderr
    assert empty.crd_description_after_upgrade == "Placement (chart 0.1.1)"
    assert empty.image_after_upgrade == "ocm-rollout:0.1.1"
    # The webhook keeps its CA across the upgrade, so the CRDs keep trusting the running pods.
    assert empty.webhook_ca_after_upgrade == empty.webhook_ca
    assert empty.client_configs_after_upgrade == empty.client_configs


def test_the_replaced_pod_hands_the_lease_over_and_the_new_one_rolls_out(empty: EmptyHub) -> None:
    assert empty.first_exit == 0
    first, second = empty.addon_hashes
    assert first != second
    assert "RolloutWaveStarted" in {reason for reason, _ in empty.addon_events}


def test_the_dashboard_pauses_and_resumes_as_its_own_identity(empty: EmptyHub) -> None:
    assert set(empty.dashboard_answers.values()) == {200}, empty.dashboard_answers
    assert empty.paused_seen == [True, None]
    assert empty.addon_paused_seen == ["true", None]


def test_the_read_only_dashboard_shows_everything_and_refuses_an_action(empty: EmptyHub) -> None:
    pages = {k: v for k, v in empty.read_only_answers.items() if k.startswith("GET")}
    assert set(pages.values()) == {200}, pages
    assert empty.read_only_answers["pause mwrs"] == 403


def test_every_controller_request_is_allowed_by_the_chart_bindings(empty: EmptyHub) -> None:
    assert_granted_by_the_chart(empty.controllers)


def test_every_dashboard_request_is_allowed_and_every_grant_used(empty: EmptyHub) -> None:
    for found in (empty.dashboard_writable, empty.dashboard_read_only):
        assert_granted_by_the_chart(found)
        assert found.report().unused == [], found.report().describe()
    assert not [r for r in empty.dashboard_read_only.records if r.resource and r.verb not in ("list", "watch")]


def test_a_request_the_chart_does_not_grant_gets_kube_apiserver_403(empty: EmptyHub) -> None:
    controllers = service_account_user(README_NAMESPACE, RELEASE)
    dashboard = service_account_user(README_NAMESPACE, f"{RELEASE}-dashboard")
    code, stderr = empty.forbidden_answers["dashboard: ocm-rollout rollout pause"]
    assert code != 0
    assert forbidden(dashboard, "get", "manifestworkreplicasets", "work.open-cluster-management.io", ROLLOUT_NAMESPACE, MWRS) in stderr
    code, stderr = empty.forbidden_answers["controllers: kubectl get secrets"]
    assert code != 0
    assert f"Error from server (Forbidden): {forbidden(controllers, 'list', 'secrets', '', README_NAMESPACE)}" in stderr
    # The Lease Role names its Lease: another one is refused (the measured check ignores names).
    assert empty.forbidden_answers["controllers: GET another Lease"] == (
        403, forbidden(controllers, "get", "leases", "coordination.k8s.io", README_NAMESPACE, "another"))
    assert empty.forbidden_answers["controllers: create a ManagedCluster"] == (
        403, forbidden(controllers, "create", "managedclusters", "cluster.open-cluster-management.io", None))


def test_helm_uninstall_removes_the_release_and_keeps_every_crd_and_object(empty: EmptyHub) -> None:
    assert "uninstalled" in empty.uninstall.stdout, empty.uninstall.stdout
    assert empty.objects_after_uninstall == {kind: [] for kind in empty.objects}
    assert len(empty.crds_after_uninstall) == CHART_CRDS
    assert empty.kept_objects == {"ManifestWorkReplicaSet": True, "ClusterManagementAddOn": True}
    # The ServiceAccount is gone, and with it every token minted for it.
    assert empty.token_after_uninstall == 401


def test_after_uninstall_the_addon_kinds_cannot_be_read_in_v1beta1(empty: EmptyHub) -> None:
    assert empty.v1beta1_after_uninstall.returncode != 0
    assert (f"conversion webhook for {ADDON_GROUP}/v1alpha1, Kind=ClusterManagementAddOn failed"
            in empty.v1beta1_after_uninstall.stderr), empty.v1beta1_after_uninstall.stderr


# -- a hub with OCM's own CRDs --------------------------------------------------------------------

CHART_README = CHART / "README.md"


def readme_block(containing: str) -> str:
    """The chart README's shell block that contains ``containing``."""
    for block in re.findall(r"```sh\n(.*?)```", CHART_README.read_text(encoding="utf-8"), re.S):
        if containing in block:
            return str(block)
    raise AssertionError(f"no sh block with {containing!r} in {CHART_README}")


@dataclass
class OcmHub:
    """What the scenario on a hub holding OCM's CRDs saw; the tests check it."""

    conflict: subprocess.CompletedProcess[str]
    refused: subprocess.CompletedProcess[str]
    adoption: subprocess.CompletedProcess[str]
    install: subprocess.CompletedProcess[str]
    untouched: dict[str, bool]
    adopted: dict[str, dict[str, Any]]
    mwrs: dict[str, Any]
    addon_hashes: tuple[str, str]
    v1beta1_cma: dict[str, Any]
    controllers: Measured
    uninstall: subprocess.CompletedProcess[str]
    crds_after_uninstall: list[str]
    ocm_crds: list[str]
    queries: list[tuple[str, str]]
    idle_mwrs_requests: list[Audited]
    idle_versions: tuple[str, str]
    pause: subprocess.CompletedProcess[str]
    paused_after: Any
    strategy_after: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)


def _ocm_hub_scenario(hub: ChartHub, work: Path, ocm_crds: list[str], timings: dict[str, float]) -> OcmHub:
    began = time.monotonic()

    def mark(step: str) -> None:
        timings[step] = round(time.monotonic() - began, 1)

    namespace = OCM_HUB_NAMESPACE
    prometheus = StubPrometheus()
    balancer = Balancer()
    processes: list[Any] = [prometheus, balancer]
    try:
        create(hub, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        versions = {name: crd["metadata"]["resourceVersion"] for name, crd in crds(hub).items()}
        values = write_values(work, webhook_values(balancer), work_config_values(prometheus))
        # The chart README's install: on a hub that already has the CRDs, with Helm 4's client-side
        # apply (its default server-side apply of crds/ meets the fields OCM's manager owns); refused
        # until the README's adoption step, then installed.
        install: list[str | Path] = [
            "install", RELEASE, "charts/ocm-rollout", "--namespace", namespace, "--create-namespace",
            "--set", "image.repository=registry.example/ocm-rollout", "--set", "image.tag=0.1.0", "-f", values]
        conflict = hub.helm(*install, check=False)
        install.append("--server-side=false")
        refused = hub.helm(*install, check=False)
        adoption = hub.run("bash", "-euo", "pipefail", "-c", readme_block("kubectl label crd"), check=False)
        installed = hub.helm(*install)
        mark("helm install")
        after = crds(hub)
        untouched = {name: after[name]["metadata"]["resourceVersion"] == rv for name, rv in versions.items()}
        adopted = {name: {"labels": crd["metadata"].get("labels") or {}, "annotations": crd["metadata"].get("annotations") or {},
                          "clientConfig": crd["spec"]["conversion"]["webhook"]["clientConfig"]}
                   for name, crd in after.items() if crd["spec"].get("conversion", {}).get("strategy") == "Webhook"}  # fmt: skip

        controllers = hub.identity(namespace, RELEASE)
        proc = start_controllers(hub, "controllers", namespace, controllers, balancer)
        processes.append(proc)
        processes.append(start_simulation(hub))
        eventually(lambda: leading(proc), timeout=TIMEOUT, message="the controllers to lead")
        place_the_fleet(hub)
        mark("fleet placed")
        mwrs = roll_out_a_manifest_work_replica_set(hub)
        mark("ManifestWorkReplicaSet rolled out")
        idle_from = hub.audit_size()
        install_an_addon(hub)
        hashes = roll_out_an_addon_configuration(hub)
        mark("add-on configuration rolled out")
        idle_writes = [r for r in hub.audit(service_account_user(namespace, RELEASE), start=idle_from)
                       if r.resource == "manifestworkreplicasets" and r.verb != "watch"]  # fmt: skip
        mwrs_path = f"{WORK_API}/namespaces/{ROLLOUT_NAMESPACE}/manifestworkreplicasets/{MWRS}"
        idle_versions = (mwrs["metadata"]["resourceVersion"], hub.get(mwrs_path)["metadata"]["resourceVersion"])
        v1beta1 = json.loads(hub.kubectl("get", "clustermanagementaddons", ADDON, "-o", "json").stdout)
        paused = ocm_rollout(hub, "rollout", "pause", MWRS, "-n", ROLLOUT_NAMESPACE, "--kubeconfig", str(hub.admin))
        stored = hub.get(mwrs_path)
        grant = Grant.read(hub, RELEASE, namespace, RELEASE, [f"{RELEASE}-{c}" for c in CONTROLLERS] + [f"{RELEASE}-leader-election"],
                           CONTROLLERS)  # fmt: skip
        measured_controllers = grant.measure(hub)
        uninstall = hub.helm("uninstall", RELEASE, "--namespace", namespace)
        proc.terminate()
        mark("helm uninstall")
        return OcmHub(
            conflict=conflict, refused=refused, adoption=adoption, install=installed, untouched=untouched, adopted=adopted, mwrs=mwrs,
            addon_hashes=hashes, v1beta1_cma=v1beta1, controllers=measured_controllers, uninstall=uninstall,
            crds_after_uninstall=sorted(all_crds(hub)), ocm_crds=ocm_crds, queries=list(prometheus.queries),
            idle_mwrs_requests=idle_writes, idle_versions=idle_versions, pause=paused, paused_after=stored["spec"].get("paused"),
            strategy_after=stored["spec"]["placementRefs"][0]["rolloutStrategy"], timings=timings,
        )  # fmt: skip
    finally:
        stop_all(processes)


@pytest.fixture(scope="module")
def ocm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OcmHub]:
    skip_unless_ready()
    # cluster-manager's own webhook CA, which the add-on CRDs trust until the release adopts them
    ca = base64.b64encode(tls.generate([f"cluster-manager-addon-webhook.{OCM_HUB_NAMESPACE}.svc"]).ca_pem).decode()
    ocm_crds = ocm_hub_crds(ca)
    work = tmp_path_factory.mktemp("chart-ocm-hub")
    hub = ChartHub(work / "hub", crds=ocm_crds)
    timings: dict[str, float] = {}
    began = time.monotonic()
    hub.start()
    timings["hub started"] = round(time.monotonic() - began, 1)
    try:
        yield _ocm_hub_scenario(hub, work, sorted(c["metadata"]["name"] for c in ocm_crds), timings)
    finally:
        hub.stop()


def test_on_an_ocm_hub_helm_4_needs_client_side_apply(ocm: OcmHub) -> None:
    # Server-side apply (Helm 4's default) of crds/ over OCM's CRDs meets the fields OCM's manager owns.
    assert ocm.conflict.returncode != 0
    assert "failed to install CRD crds/" in ocm.conflict.stderr, ocm.conflict.stderr
    assert "Apply failed with 1 conflict: conflict with" in ocm.conflict.stderr, ocm.conflict.stderr


def test_on_an_ocm_hub_helm_install_is_refused_until_the_addon_crds_are_adopted(ocm: OcmHub) -> None:
    assert ocm.refused.returncode != 0
    assert (f'CustomResourceDefinition "clustermanagementaddons.{ADDON_GROUP}" in namespace "" exists and cannot be '
            "imported into the current release: invalid ownership metadata") in ocm.refused.stderr, ocm.refused.stderr
    assert ocm.adoption.returncode == 0, ocm.adoption.stderr
    assert "STATUS: deployed" in ocm.install.stdout


def test_on_an_ocm_hub_helm_leaves_ocm_crds_and_takes_over_the_addon_ones(ocm: OcmHub) -> None:
    converted = {f"{p}.{ADDON_GROUP}" for p in ("clustermanagementaddons", "managedclusteraddons")}
    assert {name for name, same in ocm.untouched.items() if not same} == converted
    assert set(ocm.adopted) == converted
    for crd in ocm.adopted.values():
        assert crd["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert crd["annotations"]["meta.helm.sh/release-namespace"] == OCM_HUB_NAMESPACE
        assert crd["clientConfig"]["url"].startswith("https://127.0.0.1:")


def test_on_an_ocm_hub_both_rollouts_complete_on_ocm_schemas(ocm: OcmHub) -> None:
    assert ocm.mwrs["status"]["summary"]["total"] == len(CLUSTERS)
    first, second = ocm.addon_hashes
    assert first != second
    assert ocm.v1beta1_cma["apiVersion"] == f"{ADDON_GROUP}/v1beta1"


def test_on_an_ocm_hub_every_controller_request_is_allowed_by_the_chart_bindings(ocm: OcmHub) -> None:
    assert_granted_by_the_chart(ocm.controllers)


def test_on_an_ocm_hub_helm_uninstall_keeps_every_crd(ocm: OcmHub) -> None:
    assert "uninstalled" in ocm.uninstall.stdout
    assert set(ocm.ocm_crds) <= set(ocm.crds_after_uninstall)


def test_on_an_ocm_hub_the_fields_ocm_schemas_lack_are_pruned(ocm: OcmHub) -> None:
    """OCM's ManifestWorkReplicaSet CRD has no validation checks and no spec.paused: the API server
    prunes them, so the metric check never runs and a pause is lost (docs/behaviour/limits.md)."""
    assert "validation" not in ocm.strategy_after
    assert ocm.queries == []
    assert ocm.pause.returncode == 0, ocm.pause.stderr
    assert ocm.paused_after is None


def test_on_an_ocm_hub_a_completed_rollout_is_not_rewritten_although_its_status_fields_are_pruned(ocm: OcmHub) -> None:
    """status.currentRevision and updateRevision are pruned too: a pass that sends them again
    changes nothing (no new resourceVersion, so no watch event and no loop)."""
    before, after = ocm.idle_versions
    assert before == after, [(r.verb, r.subresource) for r in ocm.idle_mwrs_requests]
