"""The simulated agents split by role, as ``ocm-rollout up`` runs them: one simulation with the
registration role (registration, the hub side of registration, the add-on frameworks) and one with
the work role (the work agents), against the same hub. They share nothing but the API; each
watches what its role reads. Also: a work agent looks again at the works of a cluster that comes
back (reachable, or its API server up again), in either form."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ocm_rollout.client.kube import MANAGED_CLUSTERS, MANIFEST_WORKS
from ocm_rollout.sandbox.sim_main import AGENTS
from tests.integration.helpers import FAST, Api, SimThread, wait_until
from tests.integration.test_agents_addon import ADDON, WORK_NAME, available, desire, install, mca, work
from tests.integration.test_agents_env import CONFIGMAP, conditions

pytestmark = pytest.mark.integration

Start = Callable[..., SimThread]


@pytest.fixture
def api(sim_hub: Any) -> Api:
    return Api(str(sim_hub.kubeconfig))


@pytest.fixture
def start_role(sim_hub: Any) -> Iterator[Start]:
    running: list[SimThread] = []

    def start(role: str | None, *, clusters: int = 2, profile: dict[str, Any] | None = None) -> SimThread:
        sim = SimThread(sim_hub.kubeconfig, clusters=clusters, profile=profile, roles=AGENTS[role or "all"])
        running.append(sim.start())
        return sim

    yield start
    for sim in running:
        sim.stop()


def _work_body(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"workload": {"manifests": [CONFIGMAP]}}}


def applied(api: Api, name: str, namespace: str = "cluster1") -> dict[str, Any] | None:
    found = api.get_or_none(MANIFEST_WORKS, name, namespace)
    if found is None or (conditions(found).get("Applied") or {}).get("status") != "True":
        return None
    return found


def _available_clusters(api: Api) -> list[str]:
    out = []
    for cluster in api.list(MANAGED_CLUSTERS):
        cond = conditions(cluster).get("ManagedClusterConditionAvailable") or {}
        if cond.get("status") == "True":
            out.append(cluster["metadata"]["name"])
    return sorted(out)


def test_the_two_roles_register_and_apply_each_watching_what_it_reads(start_role: Start, api: Api) -> None:
    work_agents = start_role("work")
    assert api.list(MANAGED_CLUSTERS) == [], "the work role registers nothing"
    registration = start_role("registration")
    wait_until(lambda: _available_clusters(api) == ["cluster1", "cluster2"], timeout=30, message="both available")

    api.create(MANIFEST_WORKS, _work_body("w1"), "cluster1")
    done = wait_until(lambda: applied(api, "w1"), timeout=20, message="w1 applied by the work agents")
    assert "cluster.open-cluster-management.io/manifest-work-cleanup" in done["metadata"]["finalizers"]
    assert work_agents.simulation is not None and registration.simulation is not None
    assert work_agents.simulation.works.get("w1", "cluster1") is not None
    # the registration role lists and watches the add-ons' deploy works only
    assert registration.simulation.works.get("w1", "cluster1") is None
    assert registration.simulation.works.label_selector == "open-cluster-management.io/addon-name"


def test_an_addon_is_rendered_by_the_registration_role_and_applied_by_the_work_role(start_role: Start, api: Api) -> None:
    start_role("registration", clusters=1)
    start_role("work", clusters=1)
    install(api, ["cluster1"])
    wait_until(lambda: (mca(api).get("status") or {}).get("supportedConfigs"), timeout=20, message="supportedConfigs")
    desire(api, "cluster1", "hash-1")
    wait_until(lambda: work(api), timeout=20, message="the deploy work")
    ready = wait_until(lambda: available(api, "True", "ProbeAvailable"), timeout=30, message="Available True")
    assert conditions(ready)["ManifestApplied"]["status"] == "True"


def test_an_unlabelled_work_in_the_deploy_works_place_is_taken_over(start_role: Start, api: Api) -> None:
    """The registration role cannot see a work without the add-on label (its watch is label
    selected): creating the deploy work conflicts, it reads the work and labels it."""
    start_role("registration", clusters=1)
    start_role("work", clusters=1)
    api.create(MANIFEST_WORKS, _work_body(WORK_NAME), "cluster1")
    install(api, ["cluster1"])
    wait_until(lambda: (mca(api).get("status") or {}).get("supportedConfigs"), timeout=20, message="supportedConfigs")
    desire(api, "cluster1", "hash-1")
    labelled = wait_until(
        lambda: (w := work(api)) and (w["metadata"].get("labels") or {}).get("open-cluster-management.io/addon-name") == ADDON and w,
        timeout=20, message="the work labelled and rendered",
    )
    assert [m["kind"] for m in labelled["spec"]["workload"]["manifests"]] != ["ConfigMap"], "rendered over"
    wait_until(lambda: available(api, "True", "ProbeAvailable"), timeout=30, message="Available True")


@pytest.mark.parametrize("window", ["unreachable", "unavailable"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "one-process"])
def test_works_that_came_while_the_cluster_was_away_are_applied_once_it_is_back(
    start_role: Start, api: Api, window: str, split: bool
) -> None:
    profile = {"defaults": FAST, "clusters": [{"name": "cluster1", window: [{"after": "0s", "for": "4s"}]}]}
    if split:
        start_role("registration", clusters=1, profile=profile)
        start_role("work", clusters=1, profile=profile)
    else:
        start_role(None, clusters=1, profile=profile)
    started = time.monotonic()
    wait_until(lambda: api.get_or_none(MANAGED_CLUSTERS, "cluster1"), timeout=20, message="cluster1 registered")
    api.create(MANIFEST_WORKS, _work_body("away"), "cluster1")
    time.sleep(max(0.0, min(1.0, 3.0 - (time.monotonic() - started))))
    if time.monotonic() - started < 3.5:  # still inside the window: nobody has applied it
        assert (api.get(MANIFEST_WORKS, "away", "cluster1").get("status") or {}).get("conditions") in (None, [])
    wait_until(lambda: applied(api, "away"), timeout=30, message="applied after the window")
