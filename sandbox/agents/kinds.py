"""What a simulated managed cluster serves: its API resources (discovery), built in or from CRDs.

A real work agent maps each manifest's group/version/kind to a resource through the managed
cluster's discovery (a RESTMapper). A kind the cluster does not serve in that version cannot be
applied, and the agent reports ``the server doesn't have a resource type "<Kind>"`` with an empty
``resourceMeta.resource``. The namespaced-ness from discovery decides whether
``metadata.namespace`` matters: for a cluster-scoped kind the agent drops it.

``BUILTIN`` is the discovery of a Kubernetes 1.31 cluster running OCM's klusterlet: the core
groups (only their served versions: ``apps/v1beta1`` and ``batch/v1beta1`` are gone) plus the
klusterlet's own CRDs. ``crd_resources`` gives what an applied CustomResourceDefinition adds:
one entry per served version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ApiResource:
    """One kind in one version, as discovery lists it."""

    group: str
    version: str
    kind: str
    resource: str  # the lower-case plural
    namespaced: bool

    @property
    def group_kind(self) -> str:
        """``schema.GroupKind.String()``: ``Deployment.apps``, or ``ConfigMap`` for the core group."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _group(group_versions: str, namespaced: bool, *kinds: tuple[str, str]) -> list[ApiResource]:
    out: list[ApiResource] = []
    for group_version in group_versions.split():
        group, _, version = group_version.rpartition("/")
        out.extend(ApiResource(group, version, kind, resource, namespaced) for kind, resource in kinds)
    return out


NAMESPACED = True
CLUSTER = False

BUILTIN_RESOURCES: tuple[ApiResource, ...] = (
    *_group(
        "v1", NAMESPACED,
        ("ConfigMap", "configmaps"), ("Secret", "secrets"), ("Service", "services"),
        ("ServiceAccount", "serviceaccounts"), ("Pod", "pods"), ("PodTemplate", "podtemplates"),
        ("ReplicationController", "replicationcontrollers"), ("Endpoints", "endpoints"),
        ("Event", "events"), ("LimitRange", "limitranges"), ("ResourceQuota", "resourcequotas"),
        ("PersistentVolumeClaim", "persistentvolumeclaims"),
    ),
    *_group("v1", CLUSTER, ("Namespace", "namespaces"), ("Node", "nodes"), ("PersistentVolume", "persistentvolumes")),
    *_group(
        "apps/v1", NAMESPACED,
        ("Deployment", "deployments"), ("StatefulSet", "statefulsets"), ("DaemonSet", "daemonsets"),
        ("ReplicaSet", "replicasets"), ("ControllerRevision", "controllerrevisions"),
    ),
    *_group("batch/v1", NAMESPACED, ("Job", "jobs"), ("CronJob", "cronjobs")),
    *_group("autoscaling/v1 autoscaling/v2", NAMESPACED, ("HorizontalPodAutoscaler", "horizontalpodautoscalers")),
    *_group("policy/v1", NAMESPACED, ("PodDisruptionBudget", "poddisruptionbudgets")),
    *_group("networking.k8s.io/v1", NAMESPACED, ("Ingress", "ingresses"), ("NetworkPolicy", "networkpolicies")),
    *_group("networking.k8s.io/v1", CLUSTER, ("IngressClass", "ingressclasses")),
    *_group("rbac.authorization.k8s.io/v1", NAMESPACED, ("Role", "roles"), ("RoleBinding", "rolebindings")),
    *_group(
        "rbac.authorization.k8s.io/v1", CLUSTER,
        ("ClusterRole", "clusterroles"), ("ClusterRoleBinding", "clusterrolebindings"),
    ),
    *_group(
        "storage.k8s.io/v1", CLUSTER,
        ("StorageClass", "storageclasses"), ("CSIDriver", "csidrivers"), ("CSINode", "csinodes"),
        ("VolumeAttachment", "volumeattachments"),
    ),
    *_group("storage.k8s.io/v1", NAMESPACED, ("CSIStorageCapacity", "csistoragecapacities")),
    *_group("apiextensions.k8s.io/v1", CLUSTER, ("CustomResourceDefinition", "customresourcedefinitions")),
    *_group("apiregistration.k8s.io/v1", CLUSTER, ("APIService", "apiservices")),
    *_group(
        "admissionregistration.k8s.io/v1", CLUSTER,
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
        ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
    ),
    *_group("coordination.k8s.io/v1", NAMESPACED, ("Lease", "leases")),
    *_group("discovery.k8s.io/v1", NAMESPACED, ("EndpointSlice", "endpointslices")),
    *_group("events.k8s.io/v1", NAMESPACED, ("Event", "events")),
    *_group("scheduling.k8s.io/v1", CLUSTER, ("PriorityClass", "priorityclasses")),
    *_group("node.k8s.io/v1", CLUSTER, ("RuntimeClass", "runtimeclasses")),
    *_group("certificates.k8s.io/v1", CLUSTER, ("CertificateSigningRequest", "certificatesigningrequests")),
    *_group(
        "flowcontrol.apiserver.k8s.io/v1", CLUSTER,
        ("FlowSchema", "flowschemas"), ("PriorityLevelConfiguration", "prioritylevelconfigurations"),
    ),
    # The klusterlet's CRDs (every managed cluster of an OCM fleet has them).
    *_group("work.open-cluster-management.io/v1", CLUSTER, ("AppliedManifestWork", "appliedmanifestworks")),
    *_group("cluster.open-cluster-management.io/v1alpha1", CLUSTER, ("ClusterClaim", "clusterclaims")),
    *_group("operator.open-cluster-management.io/v1", CLUSTER, ("Klusterlet", "klusterlets")),
)  # fmt: skip

CRD_GROUP = "apiextensions.k8s.io"
CRD_KIND = "CustomResourceDefinition"


def is_crd(group: str, kind: str) -> bool:
    return group == CRD_GROUP and kind == CRD_KIND


def crd_resources(crd: Mapping[str, Any]) -> tuple[ApiResource, ...]:
    """The kinds a (valid) CustomResourceDefinition manifest makes the cluster serve."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    assert isinstance(names, Mapping)
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)):
        return ()
    namespaced = spec.get("scope") != "Cluster"
    out = []
    for version in spec.get("versions") or ():
        if isinstance(version, Mapping) and version.get("served") and isinstance(version.get("name"), str):
            out.append(ApiResource(group, str(version["name"]), kind, plural, namespaced))
    return tuple(out)


class Discovery:
    """Lookup of (group, version, kind) among some API resources (later ones win)."""

    def __init__(self, resources: Iterable[ApiResource]) -> None:
        self._by_gvk: dict[tuple[str, str, str], ApiResource] = {}
        for resource in resources:
            self._by_gvk[(resource.group, resource.version, resource.kind)] = resource

    def lookup(self, group: str, version: str, kind: str) -> ApiResource | None:
        return self._by_gvk.get((group, version, kind))

    def resources(self) -> list[ApiResource]:
        return list(self._by_gvk.values())

    def __contains__(self, gvk: object) -> bool:
        return gvk in self._by_gvk

    def __len__(self) -> int:
        return len(self._by_gvk)


BUILTIN = Discovery(BUILTIN_RESOURCES)


def unknown_kind_error(kind: str) -> str:
    """What OCM's work agent reports when discovery has no mapping for a manifest's kind."""
    return f'the server doesn\'t have a resource type "{kind}"'
