"""Every top-level kind with a model, the versions each is served in, and lookup / parsing by
apiVersion and kind.

A model class is one version of one kind (its ``KIND`` names the version). A kind served in
several versions is a ``ServedKind``: the models of its versions in the order its CRD lists them,
the storage version first. Every kind gets one CRD holding all its versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api import addon_v1alpha1, addon_v1beta1
from ocm_rollout.api.addon_template import AddOnTemplate, AddOnTemplateV1beta1
from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.meta import InvalidObject, KindInfo, OCMObject
from ocm_rollout.api.work_v1 import ManifestWork
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet


@dataclass(frozen=True)
class ServedKind:
    """One kind and the models of every version it is served in: ``storage`` first, then the
    other served versions (the order of the CRD's ``spec.versions``)."""

    storage: type[OCMObject]
    served: tuple[type[OCMObject], ...] = ()
    # Whether a conversion webhook converts between the versions (their fields differ); else
    # the API server only rewrites apiVersion (strategy None). As OCM's CRDs: ClusterManagementAddOn
    # and ManagedClusterAddOn are converted by its webhook, AddOnDeploymentConfig and AddOnTemplate not.
    webhook_conversion: bool = False

    def __post_init__(self) -> None:
        first = self.storage.KIND
        seen = {first.version}
        for model in self.served:
            info = model.KIND
            if _crd_facts(info) != _crd_facts(first):
                raise ValueError(f"{model.__name__}: {info.api_version} is not a version of {first.crd_name}")
            if info.version in seen:
                raise ValueError(f"{first.crd_name}: version {info.version} given twice")
            seen.add(info.version)

    @property
    def models(self) -> tuple[type[OCMObject], ...]:
        """Every version's model, storage first."""
        return (self.storage, *self.served)

    @property
    def info(self) -> KindInfo:
        """The storage version's KindInfo (the names and scope every version shares)."""
        return self.storage.KIND

    @property
    def crd_name(self) -> str:
        return self.info.crd_name


def _crd_facts(info: KindInfo) -> tuple[Any, ...]:
    """What every version of a kind must agree on: the CRD's group, names and scope."""
    return (info.group, info.kind, info.plural, info.singular, info.scope, info.short_names, info.categories)


# Sorted by API group, then plural: the order CRDs are generated in.
SERVED_KINDS: tuple[ServedKind, ...] = tuple(
    sorted(
        (
            ServedKind(ManagedCluster),
            ServedKind(ManagedClusterSet),
            ServedKind(ManagedClusterSetBinding),
            ServedKind(Placement),
            ServedKind(PlacementDecision),
            ServedKind(AddOnPlacementScore),
            ServedKind(ManifestWork),
            ServedKind(ManifestWorkReplicaSet),
            ServedKind(addon_v1alpha1.ClusterManagementAddOn, (addon_v1beta1.ClusterManagementAddOn,), webhook_conversion=True),
            ServedKind(addon_v1alpha1.ManagedClusterAddOn, (addon_v1beta1.ManagedClusterAddOn,), webhook_conversion=True),
            ServedKind(addon_v1alpha1.AddOnDeploymentConfig, (addon_v1beta1.AddOnDeploymentConfig,)),
            ServedKind(AddOnTemplate, (AddOnTemplateV1beta1,)),
        ),
        key=lambda k: (k.info.group, k.info.plural),
    )
)

# One model per kind, its storage version, in CRD order.
ALL_KINDS: tuple[type[OCMObject], ...] = tuple(k.storage for k in SERVED_KINDS)

# Every model of every served version.
ALL_MODELS: tuple[type[OCMObject], ...] = tuple(m for k in SERVED_KINDS for m in k.models)

_BY_TYPE: dict[tuple[str, str], type[OCMObject]] = {
    (m.KIND.api_version, m.KIND.kind): m for m in ALL_MODELS
}
_BY_CRD: dict[str, ServedKind] = {k.crd_name: k for k in SERVED_KINDS}


def served_kind(model: type[OCMObject]) -> ServedKind:
    """The kind ``model`` is a version of (a model not registered here is a kind of its own,
    served in its version only)."""
    found = _BY_CRD.get(model.KIND.crd_name)
    if found is not None and model in found.models:
        return found
    return ServedKind(model)


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
