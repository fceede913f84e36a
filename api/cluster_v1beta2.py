"""cluster.open-cluster-management.io/v1beta2: ManagedClusterSet and ManagedClusterSetBinding."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api import constants
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    DNS1123_LABEL_PATTERN,
    KindInfo,
    LabelSelectorField,
    OCMModel,
    OCMObject,
    PlainConditionList,
    PrinterColumn,
)

GROUP = constants.CLUSTER_GROUP
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"

SelectorType = Literal["ExclusiveClusterSetLabel", "LabelSelector"]


class ManagedClusterSelector(OCMModel):
    """How the members of a cluster set are chosen."""

    __crd_required__ = ("selector_type",)

    selector_type: Annotated[
        SelectorType,
        Field(
            description=(
                "ExclusiveClusterSetLabel: the members are the clusters labelled "
                "cluster.open-cluster-management.io/clusterset=<set name>. LabelSelector: the "
                "members are the clusters matched by labelSelector."
            )
        ),
        DEFAULTED,
    ] = constants.SELECTOR_TYPE_EXCLUSIVE_CLUSTER_SET_LABEL
    label_selector: Annotated[
        LabelSelectorField | None,
        Field(
            description=(
                "The clusters of a LabelSelector set; an empty selector selects every cluster."
            )
        ),
    ] = None


class ManagedNamespaceConfig(OCMModel):
    """A namespace to create on every member cluster of the set."""

    name: Annotated[
        str,
        Field(max_length=63, pattern=DNS1123_LABEL_PATTERN, description="The namespace name."),
    ]


class ManagedClusterSetSpec(OCMModel):
    """How a cluster set picks its members."""

    cluster_selector: Annotated[
        ManagedClusterSelector, Field(description="How the members of the set are chosen."), DEFAULTED
    ] = Field(default_factory=ManagedClusterSelector)
    managed_namespaces: Annotated[
        list[ManagedNamespaceConfig],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="Namespaces to be managed on every member cluster."),
    ] = Field(default_factory=list)


class ManagedClusterSetStatus(OCMModel):
    """The observed state of a cluster set."""

    conditions: PlainConditionList = Field(default_factory=list)


class ManagedClusterSet(OCMObject):
    """A named group of managed clusters (cluster-scoped). Binding it into a namespace lets the
    Placements of that namespace select its members."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManagedClusterSet",
        plural="managedclustersets",
        singular="managedclusterset",
        scope="Cluster",
        short_names=("mclset", "mclsets"),
        printer_columns=(
            PrinterColumn(
                "Empty", "string", '.status.conditions[?(@.type=="ClusterSetEmpty")].status'
            ),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    )

    spec: Annotated[
        ManagedClusterSetSpec, Field(description="How the set picks its members."), DEFAULTED
    ] = Field(default_factory=ManagedClusterSetSpec)
    status: Annotated[
        ManagedClusterSetStatus, Field(description="The observed state of the set.")
    ] = Field(default_factory=ManagedClusterSetStatus)


class ManagedClusterSetBindingSpec(OCMModel):
    """Which cluster set a binding projects into its namespace."""

    cluster_set: Annotated[
        str | None,
        Field(
            min_length=1,
            description="The name of the ManagedClusterSet to bind; it must equal the binding's name.",
        ),
    ] = None


class ManagedClusterSetBindingStatus(OCMModel):
    """The observed state of a binding."""

    conditions: PlainConditionList = Field(default_factory=list)


class ManagedClusterSetBinding(OCMObject):
    """Makes a ManagedClusterSet usable by the Placements of one namespace (namespaced; its
    name is the name of the set)."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManagedClusterSetBinding",
        plural="managedclustersetbindings",
        singular="managedclustersetbinding",
        scope="Namespaced",
        short_names=("mclsetbinding", "mclsetbindings"),
    )

    spec: Annotated[
        ManagedClusterSetBindingSpec, Field(description="The cluster set this binding projects.")
    ] = Field(default_factory=ManagedClusterSetBindingSpec)
    status: Annotated[
        ManagedClusterSetBindingStatus, Field(description="The observed state of the binding.")
    ] = Field(default_factory=ManagedClusterSetBindingStatus)
