"""Registration of simulated clusters, agent and hub side (ocm_rollout.sandbox.agents.registration)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.conditions import find_condition, format_time, make_condition, set_condition
from ocm_rollout.sandbox.agents.registration import (
    agent_status,
    binding_status,
    cluster_lease,
    cluster_set_members,
    cluster_set_status,
    default_cluster_set,
    desired_taints,
    fleet_member,
    global_cluster_set,
    hub_accepted_status,
    lease_expired,
    lease_stopped_status,
    managed_cluster,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cluster(index: int = 1, available: str | None = None, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj = managed_cluster(fleet_member(index), 60)
    if available is not None:
        obj["status"] = {
            "conditions": set_condition([], make_condition(names.CLUSTER_AVAILABLE, available, "r"), T0)
        }
    if taints is not None:
        obj["spec"]["taints"] = taints
    return obj


# --- the fleet --------------------------------------------------------------------------------------


def test_fleet_is_the_same_every_run() -> None:
    assert fleet_member(7) == fleet_member(7)


def test_fleet_names_are_cluster1_to_n() -> None:
    assert [fleet_member(i).name for i in (1, 2, 10)] == ["cluster1", "cluster2", "cluster10"]


def test_fleet_labels_vary_across_clusters() -> None:
    members = [fleet_member(i) for i in range(1, 13)]
    for key in ("cloud", "region", "vendor", "environment"):
        assert len({m.labels[key] for m in members}) >= 3, key


def test_fleet_members_belong_to_the_default_set() -> None:
    assert fleet_member(3).labels[names.CLUSTER_SET_LABEL] == "default"


def test_fleet_members_claim_a_unique_id() -> None:
    ids = {dict(fleet_member(i).claims)["id.k8s.io"] for i in range(1, 50)}
    assert len(ids) == 49


def test_allocatable_is_below_capacity() -> None:
    member = fleet_member(5)
    assert int(member.allocatable["cpu"].rstrip("m")) < int(member.capacity["cpu"]) * 1000


def test_registered_cluster_is_accepted_with_its_lease_duration() -> None:
    obj = managed_cluster(fleet_member(2), 10)
    assert (obj["spec"]["hubAcceptsClient"], obj["spec"]["leaseDurationSeconds"]) == (True, 10)


def test_registered_cluster_names_its_api_server_url() -> None:
    obj = managed_cluster(fleet_member(2), 10)
    assert obj["spec"]["managedClusterClientConfigs"] == [{"url": "https://api.cluster2.clusters.ocm-rollout.local:6443"}]


# --- agent side -------------------------------------------------------------------------------------


def test_agent_reports_joined_and_available() -> None:
    status = agent_status(cluster(), fleet_member(1), True, T0)
    assert status is not None
    summary = [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]
    assert summary == [
        ("ManagedClusterJoined", "True", "ManagedClusterJoined", "Managed cluster joined"),
        ("ManagedClusterConditionAvailable", "True", "ManagedClusterAvailable", "Managed cluster is available"),
    ]


def test_agent_reports_claims_version_and_resources() -> None:
    member = fleet_member(1)
    status = agent_status(cluster(), member, True, T0)
    assert status is not None
    assert status["clusterClaims"] == [{"name": n, "value": v} for n, v in member.claims]
    assert status["capacity"] == member.capacity and status["allocatable"] == member.allocatable
    assert status["version"] == {"kubernetes": member.kubernetes_version}


def test_agent_status_is_none_when_nothing_changes() -> None:
    obj = cluster()
    obj["status"] = agent_status(obj, fleet_member(1), True, T0)
    assert agent_status(obj, fleet_member(1), True, at(60)) is None


def test_agent_with_a_broken_api_server_reports_available_false() -> None:
    status = agent_status(cluster(), fleet_member(1), False, T0)
    assert status is not None
    available = find_condition(status["conditions"], names.CLUSTER_AVAILABLE)
    assert available is not None
    assert (available["status"], available["reason"]) == ("False", "ManagedClusterKubeAPIServerUnavailable")


def test_agent_recovers_available_after_the_hub_marked_it_unknown() -> None:
    obj = cluster(available="Unknown")
    status = agent_status(obj, fleet_member(1), True, at(30))
    assert status is not None
    available = find_condition(status["conditions"], names.CLUSTER_AVAILABLE)
    assert available is not None
    assert (available["status"], available["lastTransitionTime"]) == ("True", format_time(at(30)))


def test_lease_is_renewed_in_the_cluster_namespace() -> None:
    lease = cluster_lease("cluster4", T0)
    assert (lease["metadata"]["name"], lease["metadata"]["namespace"]) == ("managed-cluster-lease", "cluster4")
    assert lease["spec"]["renewTime"] == "2024-05-01T12:00:00.000000Z"


# --- hub side ---------------------------------------------------------------------------------------


def test_hub_accepts_a_cluster_that_asks() -> None:
    status = hub_accepted_status(cluster(), T0)
    assert status is not None
    accepted = find_condition(status["conditions"], names.CLUSTER_HUB_ACCEPTED)
    assert accepted is not None
    assert (accepted["status"], accepted["reason"], accepted["message"]) == (
        "True",
        "HubClusterAdminAccepted",
        "Accepted by hub cluster admin",
    )


def test_lease_expires_at_exactly_five_lease_durations() -> None:
    obj = cluster()
    obj["spec"]["leaseDurationSeconds"] = 10
    lease = cluster_lease("cluster1", T0)
    assert not lease_expired(obj, lease, at(49.9))
    assert lease_expired(obj, lease, at(50))


def test_lease_duration_defaults_to_sixty_seconds() -> None:
    obj = cluster()
    del obj["spec"]["leaseDurationSeconds"]
    lease = cluster_lease("cluster1", T0)
    assert not lease_expired(obj, lease, at(299))
    assert lease_expired(obj, lease, at(300))


def test_stopped_lease_makes_the_cluster_unknown() -> None:
    status = lease_stopped_status(cluster(available="True"), at(300))
    assert status is not None
    available = find_condition(status["conditions"], names.CLUSTER_AVAILABLE)
    assert available is not None
    assert (available["status"], available["reason"], available["message"]) == (
        "Unknown",
        "ManagedClusterLeaseUpdateStopped",
        "Registration agent stopped updating its lease.",
    )


def test_stopped_lease_is_not_rewritten_when_already_unknown() -> None:
    assert lease_stopped_status(cluster(available="Unknown"), at(300)) is None


def test_unknown_cluster_gets_the_unreachable_taint() -> None:
    assert desired_taints(cluster(available="Unknown"), at(5)) == [
        {"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect", "timeAdded": format_time(at(5))}
    ]


def test_cluster_without_available_condition_is_unreachable() -> None:
    taints = desired_taints(cluster(), at(5))
    assert taints is not None and [t["key"] for t in taints] == [names.TAINT_UNREACHABLE]


def test_unavailable_replaces_unreachable() -> None:
    unreachable = {"key": names.TAINT_UNREACHABLE, "effect": "NoSelect", "timeAdded": format_time(T0)}
    taints = desired_taints(cluster(available="False", taints=[unreachable]), at(5))
    assert taints == [{"key": names.TAINT_UNAVAILABLE, "effect": "NoSelect", "timeAdded": format_time(at(5))}]


def test_available_cluster_loses_both_builtin_taints_and_keeps_others() -> None:
    user = {"key": "maintenance", "value": "yes", "effect": "NoSelect", "timeAdded": format_time(T0)}
    builtin = {"key": names.TAINT_UNREACHABLE, "effect": "NoSelect", "timeAdded": format_time(T0)}
    assert desired_taints(cluster(available="True", taints=[user, builtin]), at(5)) == [user]


def test_existing_taint_keeps_its_time_added() -> None:
    builtin = {"key": names.TAINT_UNREACHABLE, "effect": "NoSelect", "timeAdded": format_time(T0)}
    assert desired_taints(cluster(available="Unknown", taints=[builtin]), at(500)) is None


def test_taints_of_a_deleting_cluster_are_left_alone() -> None:
    obj = cluster(available="Unknown")
    obj["metadata"]["deletionTimestamp"] = format_time(T0)
    assert desired_taints(obj, at(5)) is None


# --- sets and bindings ---------------------------------------------------------------------------


def test_default_set_holds_the_clusters_labelled_for_it() -> None:
    other = cluster(2)
    other["metadata"]["labels"][names.CLUSTER_SET_LABEL] = "edge"
    assert cluster_set_members(default_cluster_set(), [cluster(1), other, cluster(3)]) == ["cluster1", "cluster3"]


def test_global_set_holds_every_cluster() -> None:
    bare = cluster(2)
    bare["metadata"]["labels"] = {}
    assert cluster_set_members(global_cluster_set(), [cluster(1), bare]) == ["cluster1", "cluster2"]


def test_label_selector_set_with_null_selector_is_empty() -> None:
    selector_set = copy.deepcopy(global_cluster_set())
    selector_set["spec"]["clusterSelector"]["labelSelector"] = None
    assert cluster_set_members(selector_set, [cluster(1)]) == []


def test_cluster_set_status_counts_members() -> None:
    status = cluster_set_status(global_cluster_set(), [cluster(1), cluster(2)], T0)
    assert status is not None
    cond = status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "ClusterSetEmpty",
        "False",
        "ClustersSelected",
        "2 ManagedClusters selected",
    )


def test_empty_cluster_set_status() -> None:
    status = cluster_set_status(default_cluster_set(), [], T0)
    assert status is not None
    assert (status["conditions"][0]["status"], status["conditions"][0]["reason"]) == ("True", "NoClusterMatched")


def test_binding_to_an_existing_set_is_bound() -> None:
    status = binding_status({}, True, T0)
    assert status is not None
    cond = status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == ("Bound", "True", "ClusterSetBound", "")


def test_binding_to_a_missing_set_is_not_bound() -> None:
    status = binding_status({}, False, T0)
    assert status is not None
    assert (status["conditions"][0]["status"], status["conditions"][0]["reason"]) == ("False", "ClusterSetNotFound")


def test_binding_status_is_none_when_unchanged() -> None:
    status = binding_status({}, True, T0)
    assert binding_status({"status": status}, True, at(60)) is None

