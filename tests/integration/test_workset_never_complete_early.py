"""A Placement over many clusters and a ManifestWorkReplicaSet applied together: the real placement
and workset controllers and the simulated agents. The MWRS is watched and every one of its
changes is checked: PlacementRolledOut is never True/Complete (and ManifestworkApplied never
True) before the Placement has been scheduled and every cluster's work has succeeded.

OCM compares with the Placement's numberOfSelectedClusters, which is 0 until the Placement is
scheduled: its MWRS reports Complete at once with nothing deployed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from ocm_rollout.client.kube import (
    JSON,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANIFEST_WORK_REPLICA_SETS,
    PLACEMENTS,
)
from ocm_rollout.client.kubeconfig import load_client
from tests.integration.helpers import OperatorThread, wait_for
from tests.integration.test_workset_agents import done
from tests.integration.test_workset_env import Env, condition

pytestmark = pytest.mark.integration

FLEET = 60
PROFILE: JSON = {"defaults": {"mode": "rollout", "applyDelay": "30ms", "progressDuration": "120ms",
                              "outcome": "Succeeded"}}


@pytest.fixture
def fleet(tmp_path: Path, hub_kind: str) -> Iterator[tuple[Env, OperatorThread]]:
    environment = Env(tmp_path, kind=hub_kind)
    operators = OperatorThread(["placement", "workset"], environment.kubeconfig)
    try:
        environment.simulate(FLEET, PROFILE)
        operators.start()
        yield environment, operators
    finally:
        operators.kill()
        environment.close()


class MwrsWatch:
    """Every version of one MWRS, as a watch delivers them, checked as they come."""

    def __init__(self, env: Env, ns: str, name: str) -> None:
        self.env, self.ns, self.name = env, ns, name
        self.problems: list[str] = []
        self.versions = 0
        self.completed: JSON | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        api = kubernetes.client.CustomObjectsApi(load_client(self.env.kubeconfig))
        while not self.stop.is_set():
            for event in kubernetes.watch.Watch().stream(
                api.list_namespaced_custom_object, "work.open-cluster-management.io", "v1alpha1", self.ns,
                "manifestworkreplicasets", field_selector=f"metadata.name={self.name}", timeout_seconds=2,
            ):
                self.check(event["object"])

    def check(self, mwrs: JSON) -> None:
        self.versions += 1
        summary = (mwrs.get("status") or {}).get("summary") or {}
        complete = condition(mwrs, "PlacementRolledOut") == ("True", "Complete")
        applied = condition(mwrs, "ManifestworkApplied") == ("True", "AsExpected")
        if (complete or applied) and (summary.get("total") != FLEET or summary.get("available") != FLEET):
            self.problems.append(f"Complete={complete} ManifestworkApplied={applied} with summary {summary}")
        if complete and self.completed is None:
            works = self.env.works_of(self.ns, self.name)
            finished = sum(1 for w in works if done(w))
            if finished != FLEET:
                self.problems.append(f"Complete while {finished} of {FLEET} works had succeeded")
            self.completed = mwrs

    def __enter__(self) -> MwrsWatch:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop.set()
        self.thread.join(10)


def test_placement_and_mwrs_applied_together_never_complete_before_every_work_succeeded(
    fleet: tuple[Env, OperatorThread],
) -> None:
    env, _ = fleet
    ns = env.namespace(env.unique("together"))
    env.api.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": "global", "namespace": ns},
                                                 "spec": {"clusterSet": "global"}}, ns)
    with MwrsWatch(env, ns, "web") as watch:
        # What `kubectl apply -f` of both files does: one create right after the other.
        env.api.create(PLACEMENTS, {"metadata": {"name": "all", "namespace": ns},
                                    "spec": {"clusterSets": ["global"]}}, ns)
        env.mwrs(ns, "web", [{"name": "all", "rolloutStrategy": {
            "type": "Progressive", "progressive": {"maxConcurrency": "20%"}}}])
        final = wait_for(lambda: watch.completed, timeout=90, what="PlacementRolledOut Complete")
    assert watch.problems == [], "\n".join(watch.problems[:5])
    assert watch.versions >= 3
    assert (final["status"]["summary"]["total"], final["status"]["summary"]["available"]) == (FLEET, FLEET)


def test_a_placement_that_selects_nothing_is_not_rolled_out(fleet: tuple[Env, OperatorThread]) -> None:
    env, _ = fleet
    ns = env.namespace(env.unique("empty"))
    env.api.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": "global", "namespace": ns},
                                                 "spec": {"clusterSet": "global"}}, ns)
    env.api.create(PLACEMENTS, {"metadata": {"name": "none", "namespace": ns}, "spec": {
        "clusterSets": ["global"],
        "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"no": "such"}}}}]}}, ns)
    env.mwrs(ns, "web", [{"name": "none"}])
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, "web")) and condition(m, "PlacementRolledOut") and m,
                    what="PlacementRolledOut")
    rolled = next(c for c in mwrs["status"]["conditions"] if c["type"] == "PlacementRolledOut")
    assert (rolled["status"], rolled["reason"]) == ("False", "Progressing")
    assert "selected no clusters" in rolled["message"]
    assert condition(mwrs, "ManifestworkApplied") == ("False", "PlacementDecisionEmpty")
    assert env.api.get(MANIFEST_WORK_REPLICA_SETS, "web", ns)["status"]["summary"]["total"] == 0
