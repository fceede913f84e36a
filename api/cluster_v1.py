"""cluster.open-cluster-management.io/v1: ManagedCluster."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api import constants
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    DNS1123_LABEL_PATTERN,
    QUALIFIED_NAME_PATTERN,
    ConditionList,
    Int32,
    KindInfo,
    OCMModel,
    OCMObject,
    PrinterColumn,
    Quantity,
    Time,
)

GROUP = constants.CLUSTER_GROUP
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

TaintEffect = Literal["NoSelect", "PreferNoSelect", "NoSelectIfNew"]


class ClientConfig(OCMModel):
    """How to reach the managed cluster's API server."""

    url: Annotated[str, Field(description="The URL of the managed cluster's API server.")]
    ca_bundle: Annotated[
        str | None,
        Field(description="Base64-encoded PEM CA bundle to trust for that URL."),
        CRD(format="byte"),
    ] = None


class Taint(OCMModel):
    """A mark on a cluster that keeps Placements away unless they tolerate it."""

    key: Annotated[
        str,
        Field(
            max_length=316,
            pattern=QUALIFIED_NAME_PATTERN,
            description="The taint key, a qualified name such as gpu or example.com/maintenance.",
        ),
    ]
    value: Annotated[
        str | None, Field(max_length=1024, description="An optional value for the key.")
    ] = None
    effect: Annotated[
        TaintEffect,
        Field(
            description=(
                "What the taint does to Placements that do not tolerate it: NoSelect (never select, "
                "drop from decisions), PreferNoSelect (avoid when possible) or NoSelectIfNew "
                "(keep existing decisions, add no new ones)."
            )
        ),
    ]
    time_added: Annotated[
        Time | None,
        Field(description="When the taint was added; set by the system, not by users."),
        CRD(nullable=True),
    ] = None


class ManagedClusterSpec(OCMModel):
    """What the hub wants from a managed cluster."""

    __keep_empty__ = frozenset({"hub_accepts_client"})

    managed_cluster_client_configs: Annotated[
        list[ClientConfig],
        Field(description="Endpoints and CA bundles of the managed cluster's API server."),
    ] = Field(default_factory=list)
    hub_accepts_client: Annotated[
        bool,
        Field(description="Whether the hub admin accepts this cluster; false denies or revokes it."),
    ] = False
    lease_duration_seconds: Annotated[
        Int32,
        Field(description="How often, in seconds, the cluster agent renews its lease (heartbeat)."),
        DEFAULTED,
    ] = constants.DEFAULT_LEASE_DURATION_SECONDS
    taints: Annotated[
        list[Taint], Field(description="Taints that repel Placements that do not tolerate them.")
    ] = Field(default_factory=list)


class ManagedClusterVersion(OCMModel):
    """Version information of the managed cluster."""

    kubernetes: Annotated[
        str | None, Field(description="The Kubernetes version of the managed cluster.")
    ] = None


class ManagedClusterClaim(OCMModel):
    """A property reported by the managed cluster (from its ClusterClaims)."""

    name: Annotated[
        str | None,
        Field(min_length=1, max_length=253, description="The claim name, e.g. id.k8s.io."),
    ] = None
    value: Annotated[
        str | None, Field(min_length=1, max_length=1024, description="The claim value.")
    ] = None


class ManagedNamespace(OCMModel):
    """A namespace the cluster agent manages on behalf of a cluster set."""

    cluster_set: Annotated[str, Field(description="The cluster set the namespace belongs to.")]
    name: Annotated[
        str,
        Field(max_length=63, pattern=DNS1123_LABEL_PATTERN, description="The namespace name."),
    ]
    conditions: ConditionList = Field(default_factory=list)


class ManagedClusterStatus(OCMModel):
    """What the cluster agent reports about the managed cluster."""

    conditions: ConditionList = Field(default_factory=list)
    capacity: Annotated[
        dict[str, Quantity],
        Field(description="Total resources of the cluster, by resource name (cpu, memory, ...)."),
    ] = Field(default_factory=dict)
    allocatable: Annotated[
        dict[str, Quantity],
        Field(description="Resources of the cluster available for scheduling, by resource name."),
    ] = Field(default_factory=dict)
    version: Annotated[
        ManagedClusterVersion | None, Field(description="Versions of the managed cluster.")
    ] = None
    cluster_claims: Annotated[
        list[ManagedClusterClaim],
        Field(description="Properties the managed cluster reports through its ClusterClaims."),
    ] = Field(default_factory=list)
    managed_namespaces: Annotated[
        list[ManagedNamespace],
        CRD(list_type="map", list_map_keys=("clusterSet", "name")),
        Field(description="Namespaces managed on this cluster for the cluster sets it joins."),
    ] = Field(default_factory=list)

    def claims(self) -> dict[str, str]:
        """Claims as a name -> value map (the last entry wins when a name repeats)."""
        out: dict[str, str] = {}
        for claim in self.cluster_claims:
            if claim.name is not None:
                out[claim.name] = claim.value or ""
        return out


class ManagedCluster(OCMObject):
    """A cluster registered with the hub (cluster-scoped). The agent on the cluster keeps its
    status up to date; the hub admin accepts it and may taint it."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManagedCluster",
        plural="managedclusters",
        singular="managedcluster",
        scope="Cluster",
        short_names=("mcl", "mcls"),
        printer_columns=(
            PrinterColumn("Hub Accepted", "boolean", ".spec.hubAcceptsClient"),
            PrinterColumn("Managed Cluster URLs", "string", ".spec.managedClusterClientConfigs[*].url"),
            PrinterColumn(
                "Joined", "string", '.status.conditions[?(@.type=="ManagedClusterJoined")].status'
            ),
            PrinterColumn(
                "Available",
                "string",
                '.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status',
            ),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    )

    spec: Annotated[ManagedClusterSpec, Field(description="What the hub wants from the cluster.")] = (
        Field(default_factory=ManagedClusterSpec)
    )
    status: Annotated[
        ManagedClusterStatus, Field(description="What the cluster agent last reported.")
    ] = Field(default_factory=ManagedClusterStatus)
