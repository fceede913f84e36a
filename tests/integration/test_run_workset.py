"""`ocm-rollout run --controllers workset` as a process on the local hub: the figures /metrics
exposes during a rollout, and least privilege measured from the hub's request log.

One scenario runs once for the module (create a ManifestWorkReplicaSet over three clusters,
drop a cluster from the decision, delete the ManifestWorkReplicaSet); the tests then look at
what was scraped and recorded.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import helm_python as helm
import pytest
import yaml

from controllers.runtime.kube import (
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
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
NS = "rollouts"
CLUSTERS = ["cluster-1", "cluster-2", "cluster-3"]
PLACEMENT = "spread"
MWRS = "web"
GROUP = "cluster.open-cluster-management.io"
OWNER_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
TEMPLATE = {
    "workload": {
        "manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}, "data": {"v": "1"}}
        ]
    }
}


@dataclass
class Outcome:
    metrics_during: str
    records: list[Any]
    exit_code: int
    log: str


def _decide(kube: Kube, clusters: list[str]) -> None:
    async def write() -> None:
        await kube.patch_status(
            PLACEMENTS,
            PLACEMENT,
            {"status": {"numberOfSelectedClusters": len(clusters), "decisionGroups": [
                {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": [f"{PLACEMENT}-decision-1"],
                 "clusterCount": len(clusters)}]}},
            NS,
        )  # fmt: skip
        await kube.patch_status(
            PLACEMENT_DECISIONS,
            f"{PLACEMENT}-decision-1",
            {"status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}},
            NS,
        )

    asyncio.run(write())


def _works(kube: Kube) -> list[str]:
    found = asyncio.run(kube.list_objects(MANIFEST_WORKS, label_selector=f"{OWNER_LABEL}={NS}.{MWRS}"))
    return sorted(w["metadata"]["namespace"] for w in found)


def _works_at(kube: Kube, version: str) -> list[str]:
    found = asyncio.run(kube.list_objects(MANIFEST_WORKS, label_selector=f"{OWNER_LABEL}={NS}.{MWRS}"))
    return sorted(
        w["metadata"]["namespace"]
        for w in found
        if w["spec"]["workload"]["manifests"][0].get("data") == {"v": version}
    )


def _scrape(proc: RunProcess) -> str:
    with urllib.request.urlopen(f"http://{proc.address('metrics')}/metrics", timeout=10) as response:
        return str(response.read().decode())


def _setup(kube: Kube) -> None:
    async def create() -> None:
        for name in [NS, *CLUSTERS]:
            await kube.create(NAMESPACES, {"metadata": {"name": name}})
        await kube.create(PLACEMENTS, {"metadata": {"name": PLACEMENT}, "spec": {}}, NS)
        labels = {f"{GROUP}/placement": PLACEMENT, f"{GROUP}/decision-group-index": "0"}
        await kube.create(PLACEMENT_DECISIONS, {"metadata": {"name": f"{PLACEMENT}-decision-1", "labels": labels}}, NS)

    asyncio.run(create())
    _decide(kube, CLUSTERS)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    directory = tmp_path_factory.mktemp("run-workset")
    with local_hub(directory) as hub:
        yield _scenario(hub)


def _scenario(hub: Hub) -> Outcome:
    kube = hub.kube()
    _setup(kube)
    proc = start_run(
        "workset", hub.users["proc-c"], hub.directory,
        "--controllers", "workset", "--lease-namespace", "default", "--identity", "proc-c",
    )  # fmt: skip
    try:
        wait_until(lambda: proc.logged("operator started"), STARTUP_TIMEOUT, "the operator")
        body = {"metadata": {"name": MWRS}, "spec": {"placementRefs": [{"name": PLACEMENT}], "manifestWorkTemplate": TEMPLATE}}
        asyncio.run(kube.create(MANIFEST_WORK_REPLICA_SETS, body, NS))
        wait_until(lambda: _works(kube) == CLUSTERS, 60, "a ManifestWork per cluster")
        _decide(kube, CLUSTERS[:2])
        wait_until(lambda: _works(kube) == CLUSTERS[:2], 60, "the dropped cluster's work to go")

        def rollout_published() -> str | None:
            text = _scrape(proc)
            return text if re.search(r'ocm_rollout_rollout_clusters\{[^}]*name="web"[^}]*status="ToApply"\} 2\.0', text) else None

        metrics_during = wait_until(rollout_published, 60, "the rollout figures on /metrics")
        # A new template: the works are patched to it.
        changed = {"spec": {"manifestWorkTemplate": {"workload": {"manifests": [
            {**TEMPLATE["workload"]["manifests"][0], "data": {"v": "2"}}]}}}}
        asyncio.run(kube.patch(MANIFEST_WORK_REPLICA_SETS, MWRS, changed, NS))
        wait_until(lambda: _works_at(kube, "2") == CLUSTERS[:2], 60, "the works to follow the new template")
        asyncio.run(kube.delete(MANIFEST_WORK_REPLICA_SETS, MWRS, NS))
        wait_until(
            lambda: asyncio.run(kube.get_or_none(MANIFEST_WORK_REPLICA_SETS, MWRS, NS)) is None and _works(kube) == [],
            60,
            "the ManifestWorkReplicaSet and its works to be deleted",
        )
        exit_code = proc.terminate()
    finally:
        proc.kill()
    return Outcome(metrics_during, hub.records("proc-c"), exit_code, proc.log_path.read_text())


def _sample(text: str, metric: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(metric + "{") and not line.startswith(metric + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_expose_reconcile_figures_of_the_controller(outcome: Outcome) -> None:
    text = outcome.metrics_during
    assert (_sample(text, "ocm_rollout_reconcile_total", controller="workset") or 0) > 0
    assert (_sample(text, "ocm_rollout_reconcile_duration_seconds_count", controller="workset") or 0) > 0
    assert _sample(text, "ocm_rollout_reconcile_errors_total", controller="workset") is not None
    assert _sample(text, "ocm_rollout_queue_depth", controller="workset") is not None


def test_metrics_expose_clusters_per_rollout_status(outcome: Outcome) -> None:
    labels = {"kind": "ManifestWorkReplicaSet", "namespace": NS, "name": MWRS, "placement": PLACEMENT}
    assert _sample(outcome.metrics_during, "ocm_rollout_rollout_clusters", **labels, status="ToApply") == 2
    assert _sample(outcome.metrics_during, "ocm_rollout_rollout_clusters", **labels, status="Succeeded") == 0


def test_metrics_expose_leader_state_and_scheduling_duration(outcome: Outcome) -> None:
    assert _sample(outcome.metrics_during, "ocm_rollout_leader", lease="default/ocm-rollout-controllers") == 1
    assert _sample(outcome.metrics_during, "ocm_rollout_scheduling_duration_seconds_count") is not None


def test_sigterm_exits_zero(outcome: Outcome) -> None:
    assert outcome.exit_code == 0, outcome.log[-3000:]


def _granted_rules() -> tuple[list[Any], set[Request]]:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(chart.merge_values({}), name="ocm", namespace="default")
    objects = [d for name, text in manifests.items() if name.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    label = "ocm-rollout.open-cluster-management.io/controller"
    roles = [
        o for o in objects
        if (o["kind"] == "ClusterRole" and o["metadata"]["labels"].get(label) == "workset") or o["kind"] == "Role"
    ]  # fmt: skip
    return rules_from_objects(roles), exempt_triples(load_catalog(CHART / "files" / "rbac.yaml"), ["workset"])


def _requests(outcome: Outcome) -> list[Request]:
    return [
        Request(r.verb, r.group, r.resource, r.subresource or "")
        for r in outcome.records
        if r.resource  # discovery and other non-resource URLs need no ClusterRole
    ]


def test_every_request_the_workset_controller_made_is_granted_by_the_chart(outcome: Outcome) -> None:
    rules, exempt = _granted_rules()
    report = check(_requests(outcome), rules, exempt=exempt)
    assert report.ungranted == [], report.describe()


def test_the_chart_grants_the_workset_controller_nothing_it_did_not_use(outcome: Outcome) -> None:
    rules, exempt = _granted_rules()
    report = check(_requests(outcome), rules, exempt=exempt)
    assert report.unused == [], report.describe()
