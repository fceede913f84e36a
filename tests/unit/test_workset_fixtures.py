"""Builders shared by the ManifestWorkReplicaSet unit tests (no tests here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX as DECISION_GROUP_INDEX_LABEL
from ocm_rollout.api.constants import LABEL_DECISION_GROUP_NAME as DECISION_GROUP_NAME_LABEL
from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL
from ocm_rollout.api.constants import LABEL_PLACEMENT as PLACEMENT_LABEL
from ocm_rollout.api.constants import LABEL_PLACEMENT_NAME as PLACEMENT_NAME_LABEL
from ocm_rollout.controllers.common.wire import format_time

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cond(
    type_: str, status: str, og: int | None = None, ltt: datetime = T0, reason: str = "R", message: str = ""
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "type": type_,
        "status": status,
        "lastTransitionTime": format_time(ltt),
        "reason": reason,
        "message": message,
    }
    if og is not None:
        c["observedGeneration"] = og
    return c


TEMPLATE: dict[str, Any] = {
    "workload": {
        "manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
             "data": {"a": "b"}}
        ]
    }
}


def mwrs(
    name: str = "test-work",
    namespace: str = "ns",
    refs: list[dict[str, Any]] | None = None,
    template: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": "u-1", "labels": labels or {}},
        "spec": {
            "manifestWorkTemplate": template if template is not None else TEMPLATE,
            "placementRefs": refs if refs is not None else [{"name": "test-placement"}],
        },
    }


def work(
    cluster: str,
    *,
    name: str | None = None,
    placement: str = "test-placement",
    owner: str = "ns.test-work",
    generation: int = 1,
    conditions: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    deleting: bool = False,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    all_labels = {MWRS_LABEL: owner, PLACEMENT_NAME_LABEL: placement}
    if labels is not None:
        all_labels = labels
    meta: dict[str, Any] = {
        "name": name or f"test-work-{cluster}",
        "namespace": cluster,
        "uid": f"uid-{cluster}-{name or ''}",
        "generation": generation,
        "labels": all_labels,
        "creationTimestamp": created,
    }
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": spec if spec is not None else TEMPLATE,
        "status": {"conditions": conditions or []},
    }


def succeeded(og: int = 1, ltt: datetime = T0) -> list[dict[str, Any]]:
    """OCM's tests' way of succeeding a work."""
    return [
        cond("Applied", "True", og, ltt),
        cond("Available", "True", og, ltt),
        cond("Progressing", "False", og, ltt),
    ]


def failed(og: int = 1, ltt: datetime = T0) -> list[dict[str, Any]]:
    return [
        cond("Applied", "True", og, ltt),
        cond("Progressing", "True", og, ltt),
        cond("Degraded", "True", og, ltt),
    ]


def placement(name: str = "test-placement", selected: int = 0, groups: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "status": {
            "numberOfSelectedClusters": selected,
            "decisionGroups": [{"decisionGroupIndex": i} for i in range(groups)],
        },
    }


def decision(
    clusters: list[str], placement: str = "test-placement", index: int | str = 0, group: str = "", name: str = ""
) -> dict[str, Any]:
    labels = {PLACEMENT_LABEL: placement, DECISION_GROUP_INDEX_LABEL: str(index)}
    if group:
        labels[DECISION_GROUP_NAME_LABEL] = group
    return {
        "metadata": {"name": name or f"{placement}-decision-{index}", "namespace": "ns", "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }
