"""`ocm-rollout run --controllers workset` as a process on the local hub: the figures /metrics
exposes during a rollout, and least privilege measured from the hub's request log.

One scenario runs once for the module (create a ManifestWorkReplicaSet over three clusters,
drop a cluster from the decision, change the template, undo the change, change it again with a
revision history of one, delete the ManifestWorkReplicaSet); the tests then look at what was
scraped and recorded.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ocm_rollout.client.kube import (
    CONTROLLER_REVISIONS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
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

NS = "rollouts"
CLUSTERS = ["cluster-1", "cluster-2", "cluster-3"]
PLACEMENT = "spread"
MWRS = "web"
OWNER_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
TEMPLATE = {
    "workload": {
        "manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}, "data": {"v": "1"}}
        ]
    }
}


def _works(api: Api) -> list[str]:
    return sorted(w["metadata"]["namespace"] for w in api.list(MANIFEST_WORKS, labels=f"{OWNER_LABEL}={NS}.{MWRS}"))


def _works_at(api: Api, version: str) -> list[str]:
    return sorted(
        w["metadata"]["namespace"]
        for w in api.list(MANIFEST_WORKS, labels=f"{OWNER_LABEL}={NS}.{MWRS}")
        if w["spec"]["workload"]["manifests"][0].get("data") == {"v": version}
    )


def _revisions(api: Api) -> list[tuple[int, str]]:
    """(number, version of the template) of the ManifestWorkReplicaSet's revisions."""
    found = api.list(CONTROLLER_REVISIONS, NS, labels=f"{OWNER_LABEL}={NS}.{MWRS}")
    return sorted(
        (r["revision"], r["data"]["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"]["v"])
        for r in found
    )


def _template(version: str) -> dict[str, object]:
    manifest = {**TEMPLATE["workload"]["manifests"][0], "data": {"v": version}}
    return {"spec": {"manifestWorkTemplate": {"workload": {"manifests": [manifest]}}}}


def _setup(api: Api) -> None:
    for name in [NS, *CLUSTERS]:
        api.create(NAMESPACES, {"metadata": {"name": name}})
    api.create(PLACEMENTS, {"metadata": {"name": PLACEMENT}, "spec": {}}, NS)
    decide(api, NS, PLACEMENT, CLUSTERS)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunOutcome]:
    yield from scenario_outcome(tmp_path_factory, "run-workset", _scenario)


def _scenario(hub: Hub) -> RunOutcome:
    api = hub.api()
    _setup(api)
    proc = start_controller(hub, "workset")
    try:
        body = {"metadata": {"name": MWRS}, "spec": {
            "placementRefs": [{"name": PLACEMENT}], "manifestWorkTemplate": TEMPLATE, "revisionHistoryLimit": 1}}
        api.create(MANIFEST_WORK_REPLICA_SETS, body, NS)
        wait_until(lambda: _works(api) == CLUSTERS, timeout=60, message="a ManifestWork per cluster")
        decide(api, NS, PLACEMENT, CLUSTERS[:2])
        wait_until(lambda: _works(api) == CLUSTERS[:2], timeout=60, message="the dropped cluster's work to go")

        metrics_during = proc.metrics_matching(
            r'ocm_rollout_rollout_clusters\{[^}]*name="web"[^}]*status="ToApply"\} 2\.0',
            message="the rollout figures on /metrics",
        )
        # A new template: the works are patched to it (a new revision).
        api.patch(MANIFEST_WORK_REPLICA_SETS, MWRS, _template("2"), NS)
        wait_until(lambda: _works_at(api, "2") == CLUSTERS[:2], timeout=60, message="the works to follow the new template")
        # Undo: the first revision is renumbered; then a third template prunes the history to one
        # old revision besides the update revision (nothing ever succeeded: no current revision).
        api.patch(MANIFEST_WORK_REPLICA_SETS, MWRS, _template("1"), NS)
        wait_until(lambda: _works_at(api, "1") == CLUSTERS[:2], timeout=60, message="the works to follow the undo")
        assert _revisions(api) == [(2, "2"), (3, "1")]
        api.patch(MANIFEST_WORK_REPLICA_SETS, MWRS, _template("3"), NS)
        wait_until(lambda: _works_at(api, "3") == CLUSTERS[:2], timeout=60, message="the works to follow the third")
        wait_until(lambda: _revisions(api) == [(3, "1"), (4, "3")], timeout=60, message="the history pruned to one")
        api.delete(MANIFEST_WORK_REPLICA_SETS, MWRS, NS)
        wait_until(
            lambda: api.get_or_none(MANIFEST_WORK_REPLICA_SETS, MWRS, NS) is None and _works(api) == [],
            timeout=60,
            message="the ManifestWorkReplicaSet and its works to be deleted",
        )
        return RunOutcome.of(hub, proc, metrics_during)
    finally:
        proc.kill()


def test_metrics_expose_reconcile_figures_of_the_controller(outcome: RunOutcome) -> None:
    text = outcome.metrics
    assert (metric_sample(text, "ocm_rollout_reconcile_total", controller="workset") or 0) > 0
    assert (metric_sample(text, "ocm_rollout_reconcile_duration_seconds_count", controller="workset") or 0) > 0
    assert metric_sample(text, "ocm_rollout_reconcile_errors_total", controller="workset") is not None
    assert metric_sample(text, "ocm_rollout_queue_depth", controller="workset") is not None


def test_metrics_expose_clusters_per_rollout_status(outcome: RunOutcome) -> None:
    labels = {"kind": "ManifestWorkReplicaSet", "namespace": NS, "name": MWRS, "placement": PLACEMENT}
    assert metric_sample(outcome.metrics, "ocm_rollout_rollout_clusters", **labels, status="ToApply") == 2
    assert metric_sample(outcome.metrics, "ocm_rollout_rollout_clusters", **labels, status="Succeeded") == 0


def test_metrics_expose_leader_state_and_scheduling_duration(outcome: RunOutcome) -> None:
    assert metric_sample(outcome.metrics, "ocm_rollout_leader", lease="default/ocm-rollout-controllers") == 1
    assert metric_sample(outcome.metrics, "ocm_rollout_scheduling_duration_seconds_count") is not None


def test_sigterm_exits_zero(outcome: RunOutcome) -> None:
    assert_exited_zero(outcome)


def test_every_request_the_workset_controller_made_is_granted_by_the_chart(outcome: RunOutcome) -> None:
    assert_chart_grants_every_request(outcome, "workset")


def test_the_chart_grants_the_workset_controller_nothing_it_did_not_use(outcome: RunOutcome) -> None:
    assert_chart_grants_nothing_unused(outcome, "workset")
