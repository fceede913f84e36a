"""Builders shared by the scheduler's unit tests (this module holds no tests)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.meta import Condition
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, schedule
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NS = "default"
# A predicate whose label selector names an operator that does not exist.
BAD_PREDICATE = [{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}}]


def cluster(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    claims: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    allocatable: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    deleting: bool = False,
) -> ManagedCluster:
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        metadata["finalizers"] = ["keep"]
    status: dict[str, Any] = {}
    if claims:
        status["clusterClaims"] = [{"name": k, "value": v} for k, v in claims.items()]
    if allocatable is not None:
        status["allocatable"] = dict(allocatable)
        status["capacity"] = dict(capacity if capacity is not None else allocatable)
    elif capacity is not None:
        status["capacity"] = dict(capacity)
    return ManagedCluster.model_validate(
        {"metadata": metadata, "spec": {"hubAcceptsClient": True, "taints": list(taints)}, "status": status}
    )


def memory_cluster(name: str, memory: str) -> ManagedCluster:
    return cluster(name, allocatable={"memory": memory, "cpu": "4"}, capacity={"memory": memory, "cpu": "4"})


def label_set(name: str, selector: Mapping[str, Any] | None = None) -> ManagedClusterSet:
    spec: dict[str, Any] = {"clusterSelector": {"selectorType": "LabelSelector"}}
    if selector is not None:
        spec["clusterSelector"]["labelSelector"] = dict(selector)
    return ManagedClusterSet.model_validate({"metadata": {"name": name}, "spec": spec})


def exclusive_set(name: str) -> ManagedClusterSet:
    return ManagedClusterSet.model_validate({"metadata": {"name": name}})


def binding(name: str, namespace: str = NS) -> ManagedClusterSetBinding:
    return ManagedClusterSetBinding.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterSet": name}}
    )


def placement(name: str = "p", namespace: str = NS, *, annotations: Mapping[str, str] | None = None, **spec: Any) -> Placement:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return Placement.model_validate({"metadata": metadata, "spec": spec})


def decision(
    name: str,
    clusters: Iterable[str],
    *,
    placement_name: str | None = "p",
    namespace: str = NS,
    group_index: int = 0,
    group_name: str = "",
) -> PlacementDecision:
    labels = {}
    if placement_name is not None:
        labels = {
            "cluster.open-cluster-management.io/placement": placement_name,
            "cluster.open-cluster-management.io/decision-group-index": str(group_index),
            "cluster.open-cluster-management.io/decision-group-name": group_name,
        }
    return PlacementDecision.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
    )


def score(cluster_name: str, name: str, items: Mapping[str, int], valid_until: str | None = None) -> AddOnPlacementScore:
    status: dict[str, Any] = {"scores": [{"name": k, "value": v} for k, v in items.items()]}
    if valid_until is not None:
        status["validUntil"] = valid_until
    return AddOnPlacementScore.model_validate({"metadata": {"name": name, "namespace": cluster_name}, "status": status})


def world(
    clusters: Iterable[ManagedCluster],
    *,
    sets: Iterable[ManagedClusterSet] | None = None,
    bindings: Iterable[ManagedClusterSetBinding] | None = None,
    decisions: Iterable[PlacementDecision] = (),
    scores: Iterable[AddOnPlacementScore] = (),
) -> Snapshot:
    """A snapshot; by default one global set (selects every cluster) bound in ``default``."""
    set_list = list(sets) if sets is not None else [label_set("global", {})]
    binding_list = list(bindings) if bindings is not None else [binding(s.name) for s in set_list]
    return Snapshot([ClusterView.of(c) for c in clusters], set_list, binding_list, decisions, scores)


def run(p: Placement, snapshot: Snapshot, now: datetime = NOW) -> ScheduleResult:
    return schedule(p, snapshot, now)


def names(n: int, prefix: str = "c") -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


def plain(n: int, prefix: str = "c") -> list[ManagedCluster]:
    return [cluster(name) for name in names(n, prefix)]


def condition(result: ScheduleResult, type_: str) -> Condition:
    assert result.new_status is not None
    for cond in result.new_status.conditions:
        if cond.type == type_:
            return cond
    raise AssertionError(f"no condition {type_}")


def satisfied(result: ScheduleResult) -> tuple[str, str, str]:
    cond = condition(result, "PlacementSatisfied")
    return cond.status, cond.reason, cond.message


def misconfigured(result: ScheduleResult) -> tuple[str, str, str]:
    cond = condition(result, "PlacementMisconfigured")
    return cond.status, cond.reason, cond.message


def taint(key: str, effect: str = "NoSelect", value: str | None = None, added: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    if added is not None:
        out["timeAdded"] = added
    return out
