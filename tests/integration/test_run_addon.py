"""`ocm-rollout run --controllers addon` as a process on the local hub: the figures /metrics
exposes during a configuration rollout, and least privilege measured from the hub's request log.

One scenario runs once for the module and makes the add-on manager use every permission it has:
a hand-made ManagedClusterAddOn adopted (owner reference), MCAs created by the Placements install
strategy, a Progressive configuration rollout (reservations on the ClusterManagementAddOn, MCA
and CMA status), a cluster annotation synced onto its MCA, a cluster dropped from the decision
(its MCA deleted), events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    ANNOTATION_HOSTING_CLUSTER_NAME,
)
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENTS,
)
from tests.integration.helpers import (
    Api,
    Hub,
    RunOutcome,
    assert_chart_grants_every_request,
    assert_chart_grants_nothing_unused,
    assert_exited_zero,
    decide,
    metric_sample,
    scenario_outcome,
    start_controller,
    wait_until,
)

pytestmark = pytest.mark.integration

NS = "addons"
CLUSTERS = ["cluster-1", "cluster-2", "cluster-3"]
ADDON = "helloworld"


def _mca(api: Api, cluster: str) -> Any:
    return api.get_or_none(MANAGED_CLUSTER_ADDONS, ADDON, cluster)


def _mcas(api: Api) -> list[str]:
    return sorted(c for c in CLUSTERS if _mca(api, c) is not None)


def _desired(api: Api, cluster: str) -> str:
    refs = ((_mca(api, cluster) or {}).get("status") or {}).get("configReferences") or []
    return str(refs[0]["desiredConfig"].get("specHash") or "") if refs else ""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunOutcome]:
    yield from scenario_outcome(tmp_path_factory, "run-addon", _scenario)


def _scenario(hub: Hub) -> RunOutcome:
    api = hub.api()
    api.create(NAMESPACES, {"metadata": {"name": NS}})
    for cluster in CLUSTERS:
        api.create(NAMESPACES, {"metadata": {"name": cluster}})
        api.create(MANAGED_CLUSTERS, {"metadata": {"name": cluster}, "spec": {"hubAcceptsClient": True}})
    api.create(ADDON_DEPLOYMENT_CONFIGS, {"metadata": {"name": "deploy"}, "spec": {"customizedVariables": [{"name": "v", "value": "1"}]}}, NS)
    api.create(PLACEMENTS, {"metadata": {"name": "p"}, "spec": {}}, NS)
    decide(api, NS, "p", CLUSTERS)
    api.create(MANAGED_CLUSTER_ADDONS, {"metadata": {"name": ADDON, "namespace": CLUSTERS[2]}, "spec": {}}, CLUSTERS[2])
    proc = start_controller(hub, "addon")
    try:
        strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
        config = {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE, "namespace": NS, "name": "deploy"}
        api.create(CLUSTER_MANAGEMENT_ADDONS, {"metadata": {"name": ADDON}, "spec": {"installStrategy": {
            "type": "Placements", "placements": [{"namespace": NS, "name": "p", "configs": [config], "rolloutStrategy": strategy}],
        }}})
        wait_until(lambda: _mcas(api) == CLUSTERS, timeout=60, message="an MCA per cluster")
        wait_until(
            lambda: (_mca(api, CLUSTERS[2]) or {}).get("metadata", {}).get("ownerReferences"),
            timeout=60, message="the hand-made MCA adopted",
        )
        wait_until(lambda: _desired(api, CLUSTERS[0]), timeout=60, message="the first cluster configured")

        metrics_during = proc.metrics_matching(
            r'ocm_rollout_rollout_clusters\{[^}]*name="helloworld"[^}]*status="Progressing"\} 1\.0',
            message="the rollout figures on /metrics",
        )
        api.patch(MANAGED_CLUSTERS, CLUSTERS[0], {"metadata": {"annotations": {ANNOTATION_HOSTING_CLUSTER_NAME: "h"}}})
        wait_until(
            lambda: ((_mca(api, CLUSTERS[0]) or {}).get("metadata", {}).get("annotations") or {}).get(ANNOTATION_HOSTING_CLUSTER_NAME) == "h",
            timeout=60, message="the cluster annotation synced",
        )
        decide(api, NS, "p", CLUSTERS[:2])
        wait_until(lambda: _mcas(api) == CLUSTERS[:2], timeout=60, message="the dropped cluster's MCA to go")
        return RunOutcome.of(hub, proc, metrics_during)
    finally:
        proc.kill()


def test_metrics_expose_reconcile_figures_of_the_addon_manager(outcome: RunOutcome) -> None:
    text = outcome.metrics
    assert (metric_sample(text, "ocm_rollout_reconcile_total", controller="addon") or 0) > 0
    assert (metric_sample(text, "ocm_rollout_reconcile_total", controller="addon-mca") or 0) > 0
    assert metric_sample(text, "ocm_rollout_queue_depth", controller="addon") is not None


def test_metrics_expose_clusters_per_rollout_status_per_cma_and_placement(outcome: RunOutcome) -> None:
    labels = {"kind": "ClusterManagementAddOn", "namespace": "", "name": ADDON, "placement": f"{NS}/p"}
    assert metric_sample(outcome.metrics, "ocm_rollout_rollout_clusters", **labels, status="Progressing") == 1
    assert metric_sample(outcome.metrics, "ocm_rollout_rollout_clusters", **labels, status="ToApply") == 2


def test_sigterm_exits_zero(outcome: RunOutcome) -> None:
    assert_exited_zero(outcome)


def test_every_request_the_addon_manager_made_is_granted_by_the_chart(outcome: RunOutcome) -> None:
    assert_chart_grants_every_request(outcome, "addon")


def test_the_chart_grants_the_addon_manager_nothing_it_did_not_use(outcome: RunOutcome) -> None:
    assert_chart_grants_nothing_unused(outcome, "addon")
