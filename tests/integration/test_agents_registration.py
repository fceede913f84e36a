"""Simulated cluster registration against a local hub: the fleet, heartbeats, Available,
the built-in taints, cluster sets and bindings, and restarts."""

from __future__ import annotations

from functools import partial
from typing import Any

import kubernetes
import pytest

from tests.integration.helpers import wait_until
from tests.integration.test_agents_env import CLUSTER, conditions, get_cluster

pytestmark = pytest.mark.integration

SETS = ("cluster.open-cluster-management.io", "v1beta2")


def available(api: Any, name: str) -> str | None:
    cond = conditions(get_cluster(api, name)).get("ManagedClusterConditionAvailable")
    return None if cond is None else str(cond["status"])


def is_available(api: Any, name: str) -> bool:
    return available(api, name) == "True"


def taint_keys(api: Any, name: str) -> list[str]:
    return [t["key"] for t in get_cluster(api, name)["spec"].get("taints") or []]


def test_fleet_is_registered_and_available(start_sim: Any, sim_api: Any) -> None:
    start_sim(clusters=3)
    for name in ("cluster1", "cluster2", "cluster3"):
        wait_until(partial(is_available, sim_api, name), timeout=20, message=f"{name} available")
    cluster = get_cluster(sim_api, "cluster2")
    summary = {t: (c["status"], c["reason"]) for t, c in conditions(cluster).items()}
    assert summary == {
        "HubAcceptedManagedCluster": ("True", "HubClusterAdminAccepted"),
        "ManagedClusterJoined": ("True", "ManagedClusterJoined"),
        "ManagedClusterConditionAvailable": ("True", "ManagedClusterAvailable"),
    }
    labels = cluster["metadata"]["labels"]
    assert labels["cluster.open-cluster-management.io/clusterset"] == "default"
    assert {"cloud", "region", "vendor", "environment"} <= set(labels)
    claims = {c["name"] for c in cluster["status"]["clusterClaims"]}
    assert "id.k8s.io" in claims
    assert set(cluster["status"]["allocatable"]) == {"cpu", "memory"}


def test_cluster_namespaces_and_leases_exist(start_sim: Any, sim_hub: Any, client_for: Any) -> None:
    start_sim(clusters=2)
    coordination = kubernetes.client.CoordinationV1Api(client_for(sim_hub))
    lease = wait_until(
        lambda: coordination.list_namespaced_lease("cluster2").items, timeout=20, message="lease of cluster2"
    )[0]
    assert lease.metadata is not None and lease.metadata.name == "managed-cluster-lease"
    assert lease.spec is not None and lease.spec.renew_time is not None


def test_sets_and_bindings(start_sim: Any, sim_api: Any) -> None:
    start_sim(clusters=2)
    group, version = SETS

    def set_condition(name: str) -> tuple[str, str, str] | None:
        obj = sim_api.get_cluster_custom_object(group, version, "managedclustersets", name)
        cond = conditions(obj).get("ClusterSetEmpty")
        return None if cond is None else (cond["status"], cond["reason"], cond["message"])

    for name in ("default", "global"):
        assert wait_until(partial(set_condition, name), timeout=20, message=f"{name} set status") == (
            "False",
            "ClustersSelected",
            "2 ManagedClusters selected",
        )
    global_set = sim_api.get_cluster_custom_object(group, version, "managedclustersets", "global")
    assert global_set["spec"]["clusterSelector"] == {"selectorType": "LabelSelector", "labelSelector": {}}
    for name in ("default", "global"):

        def bound(n: str = name) -> tuple[str, str] | None:
            obj = sim_api.get_namespaced_custom_object(group, version, "default", "managedclustersetbindings", n)
            cond = conditions(obj).get("Bound")
            return None if cond is None else (cond["status"], cond["reason"])

        assert wait_until(bound, timeout=20, message=f"binding {name} bound") == ("True", "ClusterSetBound")


def test_restart_registers_nothing_twice(start_sim: Any, sim_api: Any) -> None:
    first = start_sim(clusters=2)
    wait_until(lambda: available(sim_api, "cluster2") == "True", timeout=20, message="cluster2 available")
    uid = get_cluster(sim_api, "cluster1")["metadata"]["uid"]
    first.stop()
    start_sim(clusters=2)
    group, version, plural = CLUSTER
    names = [c["metadata"]["name"] for c in sim_api.list_cluster_custom_object(group, version, plural)["items"]]
    assert sorted(names) == ["cluster1", "cluster2"]
    assert get_cluster(sim_api, "cluster1")["metadata"]["uid"] == uid


def test_api_server_outage_makes_the_cluster_unavailable_and_tainted(start_sim: Any, sim_api: Any) -> None:
    start_sim(
        clusters=2,
        profile={"clusters": [{"name": "cluster2", "unavailable": [{"after": "0s", "for": "2s"}]}]},
    )
    wait_until(lambda: available(sim_api, "cluster2") == "False", timeout=20, message="cluster2 unavailable")
    wait_until(
        lambda: taint_keys(sim_api, "cluster2") == ["cluster.open-cluster-management.io/unavailable"],
        timeout=20,
        message="unavailable taint",
    )
    reason = conditions(get_cluster(sim_api, "cluster2"))["ManagedClusterConditionAvailable"]["reason"]
    assert reason == "ManagedClusterKubeAPIServerUnavailable"
    wait_until(lambda: available(sim_api, "cluster2") == "True", timeout=20, message="cluster2 back")
    wait_until(lambda: taint_keys(sim_api, "cluster2") == [], timeout=20, message="taint removed")
    assert available(sim_api, "cluster1") == "True"


def test_silent_agent_turns_unknown_and_unreachable_then_recovers(start_sim: Any, sim_api: Any) -> None:
    start_sim(
        clusters=1,
        profile={
            "defaults": {"leaseDurationSeconds": 1},
            "clusters": [{"name": "cluster1", "unreachable": [{"after": "1s", "for": "7s"}]}],
        },
    )
    wait_until(lambda: available(sim_api, "cluster1") == "True", timeout=20, message="cluster1 available")
    wait_until(lambda: available(sim_api, "cluster1") == "Unknown", timeout=30, message="cluster1 unknown")
    cond = conditions(get_cluster(sim_api, "cluster1"))["ManagedClusterConditionAvailable"]
    assert (cond["reason"], cond["message"]) == (
        "ManagedClusterLeaseUpdateStopped",
        "Registration agent stopped updating its lease.",
    )
    taints = wait_until(lambda: get_cluster(sim_api, "cluster1")["spec"].get("taints"), timeout=20, message="taint")
    assert [(t["key"], t["effect"], bool(t.get("timeAdded"))) for t in taints] == [
        ("cluster.open-cluster-management.io/unreachable", "NoSelect", True)
    ]
    wait_until(lambda: available(sim_api, "cluster1") == "True", timeout=30, message="cluster1 recovered")
    wait_until(lambda: taint_keys(sim_api, "cluster1") == [], timeout=20, message="taint removed")


def test_agent_that_never_reports_turns_unknown(start_sim: Any, sim_api: Any, sim_hub: Any, client_for: Any) -> None:
    start_sim(
        clusters=1,
        profile={
            "defaults": {"leaseDurationSeconds": 1},
            "clusters": [{"name": "cluster1", "unreachable": [{"after": "0s", "for": "1h"}]}],
        },
    )
    coordination = kubernetes.client.CoordinationV1Api(client_for(sim_hub))
    wait_until(lambda: coordination.list_namespaced_lease("cluster1").items, timeout=20, message="hub-made lease")
    wait_until(lambda: available(sim_api, "cluster1") == "Unknown", timeout=30, message="cluster1 unknown")
    assert taint_keys(sim_api, "cluster1") == ["cluster.open-cluster-management.io/unreachable"]
