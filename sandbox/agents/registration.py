"""Registration of simulated managed clusters, agent side and hub side (pure).

Agent side (the klusterlet registration agent of each simulated cluster):
- the ManagedCluster status: ``ManagedClusterJoined`` True, ``ManagedClusterConditionAvailable``
  True ``ManagedClusterAvailable`` (or False ``ManagedClusterKubeAPIServerUnavailable`` while the
  profile says the cluster's API server is down), version, capacity/allocatable, clusterClaims;
- the heartbeat: Lease ``managed-cluster-lease`` in the cluster namespace, renewed every
  ``spec.leaseDurationSeconds``.

Hub side (what OCM's registration controllers do on the hub):
- ``HubAcceptedManagedCluster`` True once ``spec.hubAcceptsClient`` is set;
- lease controller: a lease not renewed within 5 x ``leaseDurationSeconds`` (60 s when unset)
  turns ``ManagedClusterConditionAvailable`` to Unknown ``ManagedClusterLeaseUpdateStopped``;
- taint controller: Available missing or Unknown -> taint ``cluster.open-cluster-management.io/
  unreachable``; False -> ``.../unavailable``; True -> neither. Both have effect NoSelect and an
  empty value; a taint keeps its ``timeAdded`` while it stays, a new one gets ``now`` (the OCM
  admission webhook's rule);
- ManagedClusterSet ``ClusterSetEmpty`` and ManagedClusterSetBinding ``Bound`` conditions.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    find_condition,
    format_time,
    make_condition,
    parse_time,
    set_condition,
)
from ocm_rollout.sandbox.agents.selectors import selector_matches

CLUSTER_API_VERSION = f"{names.CLUSTER_GROUP}/v1"
# OCM's registration agent updates its lease every leaseDurationSeconds plus a random share of up
# to a quarter of it, counted from the end of the last update (wait.JitterUntil, sliding).
LEASE_UPDATE_JITTER = 0.25
CLUSTER_SET_API_VERSION = f"{names.CLUSTER_GROUP}/v1beta2"

_CLOUDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("Amazon", "AWS", "EKS", ("us-east-1", "eu-west-1", "ap-southeast-1")),
    ("Google", "GCP", "GKE", ("us-central1", "europe-west1", "asia-east1")),
    ("Azure", "Azure", "AKS", ("eastus", "westeurope", "southeastasia")),
)
_ENVIRONMENTS = ("production", "production", "staging", "development")
_KUBE_VERSIONS = ("v1.29.8", "v1.30.4", "v1.31.1")
_CPUS = (4, 8, 16, 32, 64)


@dataclass(frozen=True)
class FleetMember:
    """What a simulated cluster reports about itself at registration."""

    name: str
    labels: dict[str, str]
    claims: list[tuple[str, str]]
    capacity: dict[str, str]
    allocatable: dict[str, str]
    kubernetes_version: str
    extra: dict[str, Any] = field(default_factory=dict)


def cluster_name(index: int) -> str:
    """Names are cluster1..clusterN."""
    return f"cluster{index}"


def _pick(name: str, salt: str, choices: Sequence[Any]) -> Any:
    digest = hashlib.sha256(f"{salt}:{name}".encode()).digest()
    return choices[int.from_bytes(digest[:4], "big") % len(choices)]


def fleet_member(index: int) -> FleetMember:
    """Cluster number ``index`` (1-based) of the fleet; the same every run, varied across the fleet."""
    if index < 1:
        raise ValueError(f"cluster index must be >= 1, got {index}")
    name = cluster_name(index)
    cloud, platform, vendor, regions = _CLOUDS[(index - 1) % len(_CLOUDS)]
    region = regions[((index - 1) // len(_CLOUDS)) % len(regions)]
    if index % 4 == 0:
        vendor = "OpenShift"
    environment = _ENVIRONMENTS[(index - 1) % len(_ENVIRONMENTS)]
    cpus = int(_pick(name, "cpu", _CPUS))
    memory_gi = cpus * 4
    version = str(_pick(name, "version", _KUBE_VERSIONS))
    labels = {
        "name": name,
        "cloud": cloud,
        "vendor": vendor,
        "region": region,
        "environment": environment,
        names.CLUSTER_SET_LABEL: names.DEFAULT_CLUSTER_SET,
    }
    claims = [
        (names.CLAIM_CLUSTER_ID, str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.ocm-rollout.local"))),
        ("kubeversion.open-cluster-management.io", version),
        (names.CLAIM_PLATFORM, platform),
        ("product.open-cluster-management.io", vendor),
        ("region.open-cluster-management.io", region),
    ]
    capacity = {"cpu": str(cpus), "memory": f"{memory_gi}Gi"}
    allocatable = {"cpu": f"{cpus * 1000 - 500}m", "memory": f"{memory_gi * 1024 - 1536}Mi"}
    return FleetMember(name, labels, claims, capacity, allocatable, version)


def with_overrides(
    member: FleetMember,
    labels: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
) -> FleetMember:
    """``member`` with profile-provided labels, claims and resources merged over its own."""
    merged_claims = dict(member.claims)
    merged_claims.update(claims or {})
    return FleetMember(
        name=member.name,
        labels={**member.labels, **(labels or {})},
        claims=list(merged_claims.items()),
        capacity={**member.capacity, **(capacity or {})},
        allocatable={**member.allocatable, **(allocatable or {})},
        kubernetes_version=member.kubernetes_version,
    )


# --- objects created at registration ---------------------------------------------------------------


def managed_cluster(member: FleetMember, lease_duration_seconds: int) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "ManagedCluster",
        "metadata": {"name": member.name, "labels": dict(member.labels)},
        "spec": {
            "hubAcceptsClient": True,
            "leaseDurationSeconds": lease_duration_seconds,
            "managedClusterClientConfigs": [{"url": simulated_api_url(member.name)}],
        },
    }


def simulated_api_url(name: str) -> str:
    """Where the simulated cluster's (non-existent) API server would be."""
    return f"https://api.{name}.clusters.ocm-rollout.local:6443"


def cluster_namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {names.CLUSTER_NAME_LABEL: name}},
    }


def default_cluster_set() -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_SET_API_VERSION,
        "kind": "ManagedClusterSet",
        "metadata": {"name": names.DEFAULT_CLUSTER_SET},
        "spec": {"clusterSelector": {"selectorType": names.SELECTOR_EXCLUSIVE_CLUSTER_SET_LABEL}},
    }


def global_cluster_set() -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_SET_API_VERSION,
        "kind": "ManagedClusterSet",
        "metadata": {"name": names.GLOBAL_CLUSTER_SET},
        "spec": {"clusterSelector": {"selectorType": names.SELECTOR_LABEL_SELECTOR, "labelSelector": {}}},
    }


def cluster_set_binding(namespace: str, cluster_set: str) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_SET_API_VERSION,
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": cluster_set, "namespace": namespace},
        "spec": {"clusterSet": cluster_set},
    }


# --- agent side -------------------------------------------------------------------------------------


def format_micro_time(moment: datetime) -> str:
    """metav1.MicroTime on the wire (a Lease's renewTime)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_duration(cluster: Mapping[str, Any]) -> int:
    value = (cluster.get("spec") or {}).get("leaseDurationSeconds")
    return value if isinstance(value, int) and value > 0 else names.DEFAULT_LEASE_DURATION_SECONDS


def cluster_lease(name: str, now: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": names.CLUSTER_LEASE_NAME,
            "namespace": name,
            "labels": {names.CLUSTER_NAME_LABEL: name},
        },
        "spec": {"holderIdentity": names.CLUSTER_LEASE_NAME, "renewTime": format_micro_time(now)},
    }


def agent_status(
    cluster: Mapping[str, Any], member: FleetMember, api_server_healthy: bool, now: datetime
) -> dict[str, Any] | None:
    """The ManagedCluster status the registration agent writes; None when nothing changes."""
    status = dict(cluster.get("status") or {})
    conditions = set_condition(
        status.get("conditions") or [],
        make_condition(names.CLUSTER_JOINED, TRUE, names.REASON_CLUSTER_JOINED, "Managed cluster joined"),
        now,
    )
    if api_server_healthy:
        available = make_condition(
            names.CLUSTER_AVAILABLE, TRUE, names.REASON_CLUSTER_AVAILABLE, "Managed cluster is available"
        )
    else:
        available = make_condition(
            names.CLUSTER_AVAILABLE,
            FALSE,
            names.REASON_KUBE_APISERVER_UNAVAILABLE,
            "The kube-apiserver is not ok, status code: 503, the server is currently unable to handle the request",
        )
    conditions = set_condition(conditions, available, now)
    new = dict(status)
    new["conditions"] = conditions
    new["version"] = {"kubernetes": member.kubernetes_version}
    new["capacity"] = dict(member.capacity)
    new["allocatable"] = dict(member.allocatable)
    new["clusterClaims"] = [{"name": n, "value": v} for n, v in member.claims]
    return None if new == status else new


# --- hub side ---------------------------------------------------------------------------------------


def hub_accepted_status(cluster: Mapping[str, Any], now: datetime) -> dict[str, Any] | None:
    """``HubAcceptedManagedCluster`` True for a cluster whose spec accepts it; None if unchanged."""
    if not (cluster.get("spec") or {}).get("hubAcceptsClient"):
        return None
    status = dict(cluster.get("status") or {})
    conditions = set_condition(
        status.get("conditions") or [],
        make_condition(names.CLUSTER_HUB_ACCEPTED, TRUE, names.REASON_HUB_ACCEPTED, "Accepted by hub cluster admin"),
        now,
    )
    if conditions == (status.get("conditions") or []):
        return None
    status["conditions"] = conditions
    return status


def lease_update_wait(period: float, fraction: float) -> float:
    """How long the agent waits after an update of its lease before the next one: the lease
    duration ``period`` plus ``fraction`` (in [0, 1), drawn at random) of ``LEASE_UPDATE_JITTER``
    of it. A fleet's heartbeats so spread over time, as a real fleet's do."""
    return period * (1.0 + LEASE_UPDATE_JITTER * fraction)


def first_lease_wait(period: float, fraction: float) -> float:
    """The wait after the first lease update of an agent the simulation started: half a period (an
    update sooner would be skipped as too recent), then the time a running fleet's agent still has
    to wait at a random moment, drawn by ``fraction`` (in [0, 1)).

    A simulated fleet starts all at once, but a real fleet's agents started at different times, and
    at any moment each is somewhere in its wait. What is left of that wait is equally likely to be
    any length up to a period; longer is less and less likely, and never beyond a period and a
    quarter, since only the waits with the most jitter reach past a period (a renewal process's
    equilibrium residual life). Drawn so, the fleet renews at its steady rate, N leases per mean
    wait (148 a second at 10,000 clusters), from half a period after start on: there is no first
    round denser than the ones after it.
    """
    mean = 1.0 + LEASE_UPDATE_JITTER / 2  # the mean wait, in periods
    within = 1.0 / mean  # the share of remaining waits shorter than a period
    if fraction < within:
        remaining = fraction / within
    else:
        share = (fraction - within) / (1.0 - within)
        remaining = 1.0 + LEASE_UPDATE_JITTER * (1.0 - math.sqrt(1.0 - share))
    return period * (0.5 + remaining)


def lease_renew_time(lease: Mapping[str, Any] | None) -> datetime | None:
    if lease is None:
        return None
    return parse_time((lease.get("spec") or {}).get("renewTime"))


def lease_expires_at(cluster: Mapping[str, Any], lease: Mapping[str, Any] | None) -> datetime | None:
    renewed = lease_renew_time(lease)
    if renewed is None:
        return None
    return renewed + timedelta(seconds=names.LEASE_GRACE_MULTIPLIER * lease_duration(cluster))


def lease_expired(cluster: Mapping[str, Any], lease: Mapping[str, Any] | None, now: datetime) -> bool:
    """OCM's rule: expired once ``now`` is not before renewTime + 5 x leaseDurationSeconds."""
    expires = lease_expires_at(cluster, lease)
    return expires is not None and not now < expires


def lease_stopped_status(cluster: Mapping[str, Any], now: datetime) -> dict[str, Any] | None:
    """Available -> Unknown after the lease stopped; None when it already is Unknown."""
    status = dict(cluster.get("status") or {})
    current = find_condition(status.get("conditions"), names.CLUSTER_AVAILABLE)
    if current is not None and current.get("status") == UNKNOWN:
        return None
    status["conditions"] = set_condition(
        status.get("conditions") or [],
        make_condition(
            names.CLUSTER_AVAILABLE,
            UNKNOWN,
            names.REASON_LEASE_UPDATE_STOPPED,
            "Registration agent stopped updating its lease.",
        ),
        now,
    )
    return status


def _is_builtin(taint: Mapping[str, Any], key: str) -> bool:
    return (
        taint.get("key") == key
        and (taint.get("value") or "") == ""
        and taint.get("effect") == names.TAINT_EFFECT_NO_SELECT
    )


def desired_taints(cluster: Mapping[str, Any], now: datetime) -> list[dict[str, Any]] | None:
    """``spec.taints`` after the taint controller's pass; None when they do not change."""
    if (cluster.get("metadata") or {}).get("deletionTimestamp"):
        return None
    taints = [dict(t) for t in (cluster.get("spec") or {}).get("taints") or []]
    available = find_condition((cluster.get("status") or {}).get("conditions"), names.CLUSTER_AVAILABLE)
    add: str | None
    drop: tuple[str, ...]
    if available is None or available.get("status") == UNKNOWN:
        add, drop = names.TAINT_UNREACHABLE, (names.TAINT_UNAVAILABLE,)
    elif available.get("status") == FALSE:
        add, drop = names.TAINT_UNAVAILABLE, (names.TAINT_UNREACHABLE,)
    else:
        add, drop = None, (names.TAINT_UNAVAILABLE, names.TAINT_UNREACHABLE)
    kept = [t for t in taints if not any(_is_builtin(t, key) for key in drop)]
    if add is not None and not any(_is_builtin(t, add) for t in kept):
        kept.append({"key": add, "effect": names.TAINT_EFFECT_NO_SELECT, "timeAdded": format_time(now)})
    return None if kept == taints else kept


def cluster_set_members(cluster_set: Mapping[str, Any], clusters: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the clusters in a set (ExclusiveClusterSetLabel or LabelSelector), sorted."""
    selector = (cluster_set.get("spec") or {}).get("clusterSelector") or {}
    set_name = (cluster_set.get("metadata") or {}).get("name", "")
    selector_type = selector.get("selectorType") or names.SELECTOR_EXCLUSIVE_CLUSTER_SET_LABEL
    members = []
    for cluster in clusters:
        meta = cluster.get("metadata") or {}
        labels = meta.get("labels") or {}
        if selector_type == names.SELECTOR_EXCLUSIVE_CLUSTER_SET_LABEL:
            matched = labels.get(names.CLUSTER_SET_LABEL) == set_name
        elif selector_type == names.SELECTOR_LABEL_SELECTOR:
            matched = selector_matches(selector.get("labelSelector"), labels)
        else:
            matched = False
        if matched:
            members.append(str(meta.get("name", "")))
    return sorted(members)


def cluster_set_status(
    cluster_set: Mapping[str, Any], clusters: Sequence[Mapping[str, Any]], now: datetime
) -> dict[str, Any] | None:
    """The set's ``ClusterSetEmpty`` condition; None when unchanged."""
    count = len(cluster_set_members(cluster_set, clusters))
    if count == 0:
        cond = make_condition(names.CLUSTER_SET_EMPTY, TRUE, names.REASON_NO_CLUSTER_MATCHED, "No ManagedCluster selected")
    else:
        cond = make_condition(
            names.CLUSTER_SET_EMPTY, FALSE, names.REASON_CLUSTERS_SELECTED, f"{count} ManagedClusters selected"
        )
    status = dict(cluster_set.get("status") or {})
    conditions = set_condition(status.get("conditions") or [], cond, now)
    if conditions == (status.get("conditions") or []):
        return None
    status["conditions"] = conditions
    return status


def binding_status(binding: Mapping[str, Any], set_exists: bool, now: datetime) -> dict[str, Any] | None:
    """The binding's ``Bound`` condition; None when unchanged."""
    if set_exists:
        cond = make_condition(names.BINDING_BOUND, TRUE, names.REASON_CLUSTER_SET_BOUND)
    else:
        cond = make_condition(names.BINDING_BOUND, FALSE, names.REASON_CLUSTER_SET_NOT_FOUND)
    status = dict(binding.get("status") or {})
    conditions = set_condition(status.get("conditions") or [], cond, now)
    if conditions == (status.get("conditions") or []):
        return None
    status["conditions"] = conditions
    return status
