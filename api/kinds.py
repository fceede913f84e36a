"""Every top-level kind with a model, and lookup / parsing by apiVersion and kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.api.addon_v1alpha1 import AddOnDeploymentConfig, ClusterManagementAddOn, ManagedClusterAddOn
from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.meta import InvalidObject, OCMObject
from ocm_rollout.api.work_v1 import ManifestWork
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet

# Sorted by API group, then plural: the order CRDs are generated in.
ALL_KINDS: tuple[type[OCMObject], ...] = tuple(
    sorted(
        (
            ManagedCluster,
            ManagedClusterSet,
            ManagedClusterSetBinding,
            Placement,
            PlacementDecision,
            AddOnPlacementScore,
            ManifestWork,
            ManifestWorkReplicaSet,
            ClusterManagementAddOn,
            ManagedClusterAddOn,
            AddOnDeploymentConfig,
        ),
        key=lambda k: (k.KIND.group, k.KIND.plural),
    )
)

_BY_TYPE: dict[tuple[str, str], type[OCMObject]] = {
    (k.KIND.api_version, k.KIND.kind): k for k in ALL_KINDS
}


def model_for(api_version: str, kind: str) -> type[OCMObject] | None:
    """The model of ``apiVersion``/``kind``, or None when it is not one of ours."""
    return _BY_TYPE.get((api_version, kind))


def parse_object(obj: Mapping[str, Any]) -> OCMObject:
    """Parse a wire object into its model; raise InvalidObject naming the bad fields (also when
    the apiVersion/kind is not one of ours)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    model = model_for(str(api_version), str(kind)) if api_version and kind else None
    if model is None:
        raise InvalidObject(
            f"apiVersion/kind {api_version}/{kind} is not an OCM kind ocm-rollout models",
            kind=str(kind or ""),
        )
    result: OCMObject = model.parse(obj)
    return result
