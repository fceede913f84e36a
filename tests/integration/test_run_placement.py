"""`ocm-rollout run --controllers placement` as a process on the local hub: scheduling figures
on /metrics, the debug endpoint on the debug address, and least privilege measured from the
hub's request log.

One scenario runs once for the module: three clusters in a set bound to a namespace, a
Placement cut into two decision groups (two pages), then one group renamed (a label patch) and
the groups merged (a surplus page deleted).
"""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import helm_python as helm
import pytest
import yaml

from controllers.runtime import registry
from controllers.runtime.kube import (
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
)
from controllers.runtime.rbac import Request, check, exempt_triples, load_catalog, rules_from_objects
from tests.integration.test_run_helpers import (
    REPO,
    STARTUP_TIMEOUT,
    Hub,
    RunProcess,
    local_hub,
    start_run,
    wait_until,
)

pytestmark = pytest.mark.integration

CHART = REPO / "charts" / "ocm-rollout"
NS = "scheduling"
SET = "fleet"
CLUSTERS = ["east-1", "east-2", "west-1"]
PLACEMENT = "spread"
GROUP = "cluster.open-cluster-management.io"
PLACEMENT_LABEL = f"{GROUP}/placement"
GROUP_NAME_LABEL = f"{GROUP}/decision-group-name"


@dataclass
class Outcome:
    metrics: str
    debug_status: int
    debug_body: dict[str, Any]
    records: list[Any]
    exit_code: int
    log: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pages(kube: Kube) -> dict[str, tuple[str, list[str]]]:
    found = asyncio.run(kube.list_objects(PLACEMENT_DECISIONS, NS, label_selector=f"{PLACEMENT_LABEL}={PLACEMENT}"))
    return {
        p["metadata"]["name"]: (
            (p["metadata"].get("labels") or {}).get(GROUP_NAME_LABEL, ""),
            sorted(d["clusterName"] for d in (p.get("status") or {}).get("decisions") or []),
        )
        for p in found
    }


def _groups(name: str) -> dict[str, Any]:
    return {
        "decisionStrategy": {
            "groupStrategy": {
                "clustersPerDecisionGroup": "100%",
                "decisionGroups": [{"groupName": name, "groupClusterSelector": {"labelSelector": {"matchLabels": {"region": "east"}}}}],
            }
        }
    }


def _setup(kube: Kube) -> None:
    async def create() -> None:
        await kube.create(NAMESPACES, {"metadata": {"name": NS}})
        await kube.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": SET}, "spec": {}})
        for name in CLUSTERS:
            labels = {f"{GROUP}/clusterset": SET, "region": name.split("-")[0]}
            await kube.create(MANAGED_CLUSTERS, {"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": True}})
        await kube.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": SET}, "spec": {"clusterSet": SET}}, NS)
        await kube.create(PLACEMENTS, {"metadata": {"name": PLACEMENT}, "spec": _groups("canary")}, NS)

    asyncio.run(create())


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read().decode(errors="replace")}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    if "placement" not in registry.available_controllers():
        pytest.skip("the placement controller is not in this build")
    directory = tmp_path_factory.mktemp("run-placement")
    with local_hub(directory) as hub:
        yield _scenario(hub)


def _scenario(hub: Hub) -> Outcome:
    kube = hub.kube()
    _setup(kube)
    debug = f"127.0.0.1:{_free_port()}"
    proc: RunProcess = start_run(
        "placement", hub.users["proc-c"], hub.directory,
        "--controllers", "placement", "--lease-namespace", "default", "--identity", "proc-c",
        "--debug-bind-address", debug,
    )  # fmt: skip
    try:
        wait_until(lambda: proc.logged("operator started"), STARTUP_TIMEOUT, "the operator")
        two_pages = {f"{PLACEMENT}-decision-1": ("canary", ["east-1", "east-2"]), f"{PLACEMENT}-decision-2": ("", ["west-1"])}
        wait_until(lambda: _pages(kube) == two_pages, 60, "two decision pages")
        debug_status, debug_body = wait_until(
            lambda: (lambda got: got if got[0] == 200 else None)(_get(f"http://{debug}/debug/placements/{NS}/{PLACEMENT}")),
            30,
            "the debug endpoint",
        )
        # Rename the group: the page's group-name label is patched.
        asyncio.run(kube.patch(PLACEMENTS, PLACEMENT, {"spec": _groups("first")}, NS))
        renamed = {**two_pages, f"{PLACEMENT}-decision-1": ("first", ["east-1", "east-2"])}
        wait_until(lambda: _pages(kube) == renamed, 60, "the renamed group's label")
        # No groups any more: one page, the surplus page deleted.
        asyncio.run(kube.patch(PLACEMENTS, PLACEMENT, {"spec": {"decisionStrategy": None}}, NS))
        wait_until(lambda: _pages(kube) == {f"{PLACEMENT}-decision-1": ("", CLUSTERS)}, 60, "a single page")
        with urllib.request.urlopen(f"http://{proc.address('metrics')}/metrics", timeout=10) as response:
            metrics_text = response.read().decode()
        exit_code = proc.terminate()
    finally:
        proc.kill()
    return Outcome(metrics_text, debug_status, debug_body, hub.records("proc-c"), exit_code, proc.log_path.read_text())


def _sample(text: str, metric: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith((metric + "{", metric + " ")) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_expose_scheduling_duration_and_placement_reconciles(outcome: Outcome) -> None:
    assert (_sample(outcome.metrics, "ocm_rollout_scheduling_duration_seconds_count") or 0) > 0
    assert (_sample(outcome.metrics, "ocm_rollout_reconcile_total", controller="placement") or 0) > 0


def test_debug_endpoint_is_served_on_the_debug_address(outcome: Outcome) -> None:
    assert outcome.debug_status == 200, outcome.debug_body
    assert {s["clusterName"] for s in outcome.debug_body["aggregatedScores"]} == set(CLUSTERS)


def test_sigterm_exits_zero(outcome: Outcome) -> None:
    assert outcome.exit_code == 0, outcome.log[-3000:]


def _report(outcome: Outcome) -> Any:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(chart.merge_values({}), name="ocm", namespace="default")
    objects = [d for name, text in manifests.items() if name.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    label = "ocm-rollout.open-cluster-management.io/controller"
    roles = [
        o for o in objects
        if (o["kind"] == "ClusterRole" and o["metadata"]["labels"].get(label) == "placement") or o["kind"] == "Role"
    ]  # fmt: skip
    requests = [Request(r.verb, r.group, r.resource, r.subresource or "") for r in outcome.records if r.resource]
    exempt = exempt_triples(load_catalog(CHART / "files" / "rbac.yaml"), ["placement"])
    return check(requests, rules_from_objects(roles), exempt=exempt)


def test_every_request_the_placement_controller_made_is_granted_by_the_chart(outcome: Outcome) -> None:
    report = _report(outcome)
    assert report.ungranted == [], report.describe()


def test_the_chart_grants_the_placement_controller_nothing_it_did_not_use(outcome: Outcome) -> None:
    report = _report(outcome)
    assert report.unused == [], report.describe()
