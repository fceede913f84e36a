"""What a simulated fleet costs the hub: registration in four writes per cluster, and heartbeats
of a healthy fleet that cost nothing but the Lease renewals themselves."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import kubernetes

from ocm_rollout.sandbox.server import HubThread
from tests.integration.helpers import SimThread, wait_until
from tests.integration.test_agents_env import conditions

CLUSTERS = 12
WRITES = ("create", "update", "patch", "delete")


def writes(hub: HubThread) -> collections.Counter[tuple[str, str, str]]:
    return collections.Counter(
        (r.verb, r.resource, r.subresource or "") for r in hub.hub.requests if r.verb in WRITES
    )


def all_available(api: Any) -> bool:
    items = api.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"]
    return len(items) == CLUSTERS and all(
        conditions(c).get("ManagedClusterConditionAvailable", {}).get("status") == "True" for c in items
    )


def test_a_healthy_cluster_registers_with_four_writes_and_no_taint(
    make_hub: Callable[..., HubThread], client_for: Callable[[HubThread], Any]
) -> None:
    hub = make_hub(record_requests=True)
    api = kubernetes.client.CustomObjectsApi(client_for(hub))
    assert hub.kubeconfig is not None
    sim = SimThread(hub.kubeconfig, clusters=CLUSTERS, profile={"defaults": {"leaseDurationSeconds": 60}}).start()
    try:
        wait_until(lambda: all_available(api), timeout=60, message="every cluster Available")
        counted = writes(hub)
    finally:
        sim.stop()
    per_cluster = {
        ("create", "namespaces", ""): CLUSTERS + 1,  # and the bindings' namespace
        ("create", "managedclusters", ""): CLUSTERS,
        ("create", "leases", ""): CLUSTERS,
        ("update", "managedclusters", "status"): CLUSTERS,
    }
    for key, expected in per_cluster.items():
        assert counted[key] == expected, counted
    assert counted[("patch", "managedclusters", "")] == 0, counted  # no unreachable taint added and removed
    items = api.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"]
    for item in items:
        assert conditions(item)["HubAcceptedManagedCluster"]["status"] == "True"
        assert not item["spec"].get("taints")


def test_heartbeats_of_a_healthy_fleet_write_only_leases(
    make_hub: Callable[..., HubThread], client_for: Callable[[HubThread], Any]
) -> None:
    hub = make_hub(record_requests=True)
    api = kubernetes.client.CustomObjectsApi(client_for(hub))
    assert hub.kubeconfig is not None
    # A 2 s lease: every cluster renews about once a second... and nothing else is written.
    sim = SimThread(hub.kubeconfig, clusters=CLUSTERS, profile={"defaults": {"leaseDurationSeconds": 2}}).start()
    try:
        wait_until(lambda: all_available(api), timeout=60, message="every cluster Available")
        before = writes(hub)
        wait_until(
            lambda: writes(hub)[("patch", "leases", "")] - before[("patch", "leases", "")] >= 3 * CLUSTERS,
            timeout=30, message="three rounds of heartbeats",
        )
        after = writes(hub)
    finally:
        sim.stop()
    changed = {
        key: after[key] - before[key]
        for key in after
        if after[key] != before[key] and key[1] in ("managedclusters", "leases")
    }
    assert set(changed) == {("patch", "leases", "")}, changed
