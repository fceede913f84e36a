"""addon.open-cluster-management.io/v1alpha1: ClusterManagementAddOn, ManagedClusterAddOn and
AddOnDeploymentConfig (the version OCM stores and the seeds use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1alpha1 import RolloutStrategy
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    DNS1123_LABEL_PATTERN,
    ConditionList,
    Int64,
    KindInfo,
    OCMModel,
    OCMObject,
    PrinterColumn,
    Quantity,
)

GROUP = constants.ADDON_GROUP
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

InstallStrategyType = Literal["Manual", "Placements"]
DEFAULT_INSTALL_NAMESPACE = constants.ADDON_DEFAULT_INSTALL_NAMESPACE

GroupField = Annotated[
    str, Field(description="API group of the configuration resource; empty for core."), DEFAULTED
]
ResourceField = Annotated[
    str, Field(min_length=1, description="Resource (lower-case plural) of the configuration.")
]


# --------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------


class AddOnMeta(OCMModel):
    """How the add-on presents itself."""

    display_name: Annotated[str | None, Field(description="A human-friendly name.")] = None
    description: Annotated[str | None, Field(description="What the add-on does.")] = None


class ConfigCoordinates(OCMModel):
    """A legacy single configuration custom resource (superseded by configs)."""

    crd_name: Annotated[
        str | None, Field(description="Name of the CRD of the configuration.")
    ] = None
    cr_name: Annotated[
        str | None, Field(description="Name of the configuration object.")
    ] = None
    last_observed_generation: Annotated[
        Int64 | None, Field(description="The configuration generation last seen.")
    ] = None


class ConfigReferent(OCMModel):
    """Names one configuration object."""

    namespace: Annotated[
        str | None, Field(description="Namespace of the object; empty for cluster-scoped ones.")
    ] = None
    name: Annotated[str, Field(min_length=1, description="Name of the object.")]


class ConfigSpecHash(ConfigReferent):
    """Names one configuration object and the hash of its spec."""

    spec_hash: Annotated[
        str | None, Field(description="SHA-256 of the object's spec, in lower-case hex.")
    ] = None


class AddOnConfig(OCMModel):
    """A configuration object of an add-on."""

    group: GroupField = ""
    resource: ResourceField
    namespace: Annotated[
        str | None, Field(description="Namespace of the object; empty for cluster-scoped ones.")
    ] = None
    name: Annotated[str, Field(min_length=1, description="Name of the object.")]


class ConfigGroupResource(OCMModel):
    """A configuration type: group and resource."""

    group: GroupField = ""
    resource: ResourceField


class DefaultConfigReferent(ConfigReferent):
    """Names the default configuration object of a supported configuration type.

    Its name cannot be ``__reserved_no_default__``: v1beta1 spells "no default" with that name,
    so such an object would mean something else there (OCM stores it; we refuse it)."""

    __crd_validations__ = (
        (
            f"self.name != '{constants.RESERVED_NO_DEFAULT_CONFIG_NAME}'",
            f"name {constants.RESERVED_NO_DEFAULT_CONFIG_NAME} is reserved: v1beta1 reads it as no default configuration",
        ),
    )


class ConfigMeta(ConfigGroupResource):
    """A configuration type the add-on supports, with its default object."""

    default_config: Annotated[
        DefaultConfigReferent | None,
        Field(description="The configuration used when no other one is given."),
    ] = None


# --------------------------------------------------------------------------------------------
# ClusterManagementAddOn
# --------------------------------------------------------------------------------------------


class PlacementStrategy(OCMModel):
    """Install the add-on on the clusters one Placement selects."""

    namespace: Annotated[str, Field(min_length=1, description="Namespace of the Placement.")]
    name: Annotated[str, Field(min_length=1, description="Name of the Placement.")]
    configs: Annotated[
        list[AddOnConfig],
        Field(
            description=(
                "Configurations for the add-ons on these clusters; they replace the default "
                "configurations of the same group and resource."
            )
        ),
    ] = Field(default_factory=list)
    rollout_strategy: Annotated[
        RolloutStrategy,
        Field(description="How configuration changes are rolled out to these clusters."),
        DEFAULTED,
    ] = Field(default_factory=RolloutStrategy)


class InstallStrategy(OCMModel):
    """Where the add-on is installed."""

    type: Annotated[
        InstallStrategyType,
        Field(
            description=(
                "Manual: users create the ManagedClusterAddOns; Placements: the add-on manager "
                "creates them on the clusters the placements select."
            )
        ),
        DEFAULTED,
    ] = "Manual"
    placements: Annotated[
        list[PlacementStrategy],
        CRD(list_type="map", list_map_keys=("namespace", "name")),
        Field(max_length=constants.MAX_ROLLOUT_PLACEMENTS, description="The placements of the Placements type."),
    ] = Field(default_factory=list)


class ClusterManagementAddOnSpec(OCMModel):
    """How an add-on is installed and configured across the fleet."""

    add_on_meta: Annotated[AddOnMeta | None, Field(description="How the add-on presents itself.")] = None
    add_on_configuration: Annotated[
        ConfigCoordinates | None, Field(description="Legacy configuration reference.")
    ] = None
    supported_configs: Annotated[
        list[ConfigMeta],
        CRD(list_type="map", list_map_keys=("group", "resource")),
        Field(description="Configuration types the add-on accepts, with default objects."),
    ] = Field(default_factory=list)
    install_strategy: Annotated[
        InstallStrategy, Field(description="Where the add-on is installed."), DEFAULTED
    ] = Field(default_factory=InstallStrategy)


class DefaultConfigReference(OCMModel):
    """The default configuration in effect for one configuration type."""

    group: GroupField = ""
    resource: ResourceField
    desired_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration to use and its spec hash.")
    ] = None


class InstallConfigReference(OCMModel):
    """The configuration of one type for one placement, and how far it got."""

    group: GroupField = ""
    resource: ResourceField
    desired_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration to roll out.")
    ] = None
    last_applied_config: Annotated[
        ConfigSpecHash | None,
        Field(description="The configuration every selected add-on has applied."),
    ] = None
    last_known_good_config: Annotated[
        ConfigSpecHash | None,
        Field(description="The last configuration that rolled out with no failure."),
    ] = None


class InstallProgression(OCMModel):
    """Rollout progress of the add-on for one placement."""

    namespace: Annotated[str, Field(min_length=1, description="Namespace of the Placement.")]
    name: Annotated[str, Field(min_length=1, description="Name of the Placement.")]
    config_references: Annotated[
        list[InstallConfigReference], Field(description="The configurations of this placement.")
    ] = Field(default_factory=list)
    conditions: ConditionList = Field(default_factory=list)


class ClusterManagementAddOnStatus(OCMModel):
    """Configurations in effect and rollout progress per placement."""

    default_config_references: Annotated[
        list[DefaultConfigReference],
        Field(alias="defaultconfigReferences", description="The default configurations in effect."),
    ] = Field(default_factory=list, alias="defaultconfigReferences")
    install_progressions: Annotated[
        list[InstallProgression], Field(description="Rollout progress per placement.")
    ] = Field(default_factory=list)


class ClusterManagementAddOn(OCMObject):
    """An add-on registered with the hub (cluster-scoped): its install strategy and
    configuration, shared by the ManagedClusterAddOns of the same name."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ClusterManagementAddOn",
        plural="clustermanagementaddons",
        singular="clustermanagementaddon",
        scope="Cluster",
        short_names=("cma", "cmas"),
        printer_columns=(
            PrinterColumn("DISPLAY NAME", "string", ".spec.addOnMeta.displayName"),
            PrinterColumn("CRD NAME", "string", ".spec.addOnConfiguration.crdName"),
        ),
    )

    spec: Annotated[ClusterManagementAddOnSpec, Field(description="Install strategy and configuration.")]
    status: Annotated[
        ClusterManagementAddOnStatus, Field(description="Configurations in effect and rollout progress.")
    ] = Field(default_factory=ClusterManagementAddOnStatus)

    def is_lifecycle_managed(self) -> bool:
        """Whether the hub's add-on manager owns this add-on's lifecycle (annotation absent or
        exactly addon-manager)."""
        return is_lifecycle_managed({"metadata": {"annotations": self.metadata.annotations}})


def is_lifecycle_managed(cma: Mapping[str, Any]) -> bool:
    """Whether the hub's add-on manager owns the lifecycle of this ClusterManagementAddOn (as
    stored: a JSON dict): its lifecycle annotation is absent or exactly ``addon-manager``; any other
    value (``self``, ``""``, ...) means the add-on manages itself (docs/behaviour/addons.md 3)."""
    metadata = cma.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return True
    value = annotations.get(constants.ANNOTATION_ADDON_LIFECYCLE)
    return value is None or value == constants.ADDON_LIFECYCLE_ADDON_MANAGER


# --------------------------------------------------------------------------------------------
# ManagedClusterAddOn
# --------------------------------------------------------------------------------------------


class ManagedClusterAddOnSpec(OCMModel):
    """The add-on on one cluster."""

    install_namespace: Annotated[
        str,
        Field(
            max_length=63,
            pattern=DNS1123_LABEL_PATTERN,
            description="Namespace on the managed cluster where the add-on agent is installed.",
        ),
        DEFAULTED,
    ] = DEFAULT_INSTALL_NAMESPACE
    configs: Annotated[
        list[AddOnConfig],
        Field(
            description=(
                "Configurations for this cluster only; they replace the configurations of the "
                "same group and resource given by the ClusterManagementAddOn."
            )
        ),
    ] = Field(default_factory=list)


class ObjectReference(OCMModel):
    """An object related to the add-on."""

    group: Annotated[str, Field(description="API group of the object.")]
    resource: Annotated[str, Field(description="Resource of the object.")]
    namespace: Annotated[str | None, Field(description="Namespace of the object.")] = None
    name: Annotated[str, Field(description="Name of the object.")]


class ConfigReference(OCMModel):
    """A configuration in effect for the add-on on this cluster."""

    group: GroupField = ""
    resource: ResourceField
    namespace: Annotated[
        str | None, Field(description="Namespace of the configuration object.")
    ] = None
    name: Annotated[str, Field(min_length=1, description="Name of the configuration object.")]
    last_observed_generation: Annotated[
        Int64 | None, Field(description="The generation of the configuration object last seen.")
    ] = None
    desired_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration that should be in effect.")
    ] = None
    last_applied_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration the agent has applied.")
    ] = None


class Subject(OCMModel):
    """The identity in a certificate request."""

    user: Annotated[str | None, Field(description="User name.")] = None
    groups: Annotated[list[str], Field(description="Groups.")] = Field(default_factory=list)
    organization_unit: Annotated[
        list[str], Field(description="Organization units.")
    ] = Field(default_factory=list)


class RegistrationConfig(OCMModel):
    """A certificate the add-on agent needs."""

    signer_name: Annotated[
        str,
        Field(
            min_length=5,
            max_length=571,
            pattern="^([a-z0-9][a-z0-9-]*[a-z0-9]\\.)+[a-z]+\\/[a-z0-9-\\.]+$",
            description="The signer of the certificate, e.g. kubernetes.io/kube-apiserver-client.",
        ),
    ]
    subject: Annotated[Subject | None, Field(description="The identity in the certificate.")] = None


class HealthCheck(OCMModel):
    """How the add-on's health is checked."""

    mode: Annotated[
        Literal["Lease", "Customized"],
        Field(description="Lease (the agent renews a lease) or Customized."),
        DEFAULTED,
    ] = "Lease"


class ManagedClusterAddOnStatus(OCMModel):
    """The add-on's state on one cluster."""

    conditions: ConditionList = Field(default_factory=list)
    related_objects: Annotated[
        list[ObjectReference], Field(description="Objects related to the add-on.")
    ] = Field(default_factory=list)
    add_on_meta: Annotated[AddOnMeta | None, Field(description="Copied from the ClusterManagementAddOn.")] = None
    add_on_configuration: Annotated[
        ConfigCoordinates | None, Field(description="Legacy configuration reference.")
    ] = None
    supported_configs: Annotated[
        list[ConfigGroupResource],
        CRD(list_type="map", list_map_keys=("group", "resource")),
        Field(description="Configuration types this cluster's add-on may override."),
    ] = Field(default_factory=list)
    config_references: Annotated[
        list[ConfigReference], Field(description="The configurations in effect.")
    ] = Field(default_factory=list)
    namespace: Annotated[
        str | None, Field(description="Namespace on the managed cluster where the agent runs.")
    ] = None
    registrations: Annotated[
        list[RegistrationConfig], Field(description="Certificates the agent needs.")
    ] = Field(default_factory=list)
    health_check: Annotated[
        HealthCheck | None, Field(description="How the add-on's health is checked.")
    ] = None
    kube_client_driver: Annotated[
        Literal["csr", "token"] | None,
        Field(description="How the agent gets its hub client credentials."),
    ] = None


class ManagedClusterAddOn(OCMObject):
    """The add-on on one managed cluster (in the cluster's namespace, named like its
    ClusterManagementAddOn)."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManagedClusterAddOn",
        plural="managedclusteraddons",
        singular="managedclusteraddon",
        scope="Namespaced",
        short_names=("mca", "mcas"),
        printer_columns=(
            PrinterColumn("Available", "string", '.status.conditions[?(@.type=="Available")].status'),
            PrinterColumn("Degraded", "string", '.status.conditions[?(@.type=="Degraded")].status'),
            PrinterColumn(
                "Progressing", "string", '.status.conditions[?(@.type=="Progressing")].status'
            ),
        ),
    )

    spec: Annotated[ManagedClusterAddOnSpec, Field(description="The add-on on this cluster.")]
    status: Annotated[
        ManagedClusterAddOnStatus, Field(description="The add-on's state on this cluster.")
    ] = Field(default_factory=ManagedClusterAddOnStatus)


# --------------------------------------------------------------------------------------------
# AddOnDeploymentConfig
# --------------------------------------------------------------------------------------------


class CustomizedVariable(OCMModel):
    """A variable passed to the add-on's manifests."""

    name: Annotated[
        str,
        Field(max_length=255, pattern="^[a-zA-Z_][_a-zA-Z0-9]*$", description="Variable name."),
    ]
    value: Annotated[str | None, Field(max_length=1024, description="Variable value.")] = None


class NodeToleration(OCMModel):
    """A Kubernetes pod toleration."""

    key: Annotated[str | None, Field(description="Taint key.")] = None
    operator: Annotated[str | None, Field(description="Exists or Equal.")] = None
    value: Annotated[str | None, Field(description="Taint value.")] = None
    effect: Annotated[str | None, Field(description="Taint effect.")] = None
    toleration_seconds: Annotated[
        Int64 | None, Field(description="How long the taint is tolerated.")
    ] = None


class NodePlacement(OCMModel):
    """Where the agent's pods run."""

    node_selector: Annotated[
        dict[str, str], Field(description="Node labels the pods require.")
    ] = Field(default_factory=dict)
    tolerations: Annotated[
        list[NodeToleration], Field(description="Tolerations of the pods.")
    ] = Field(default_factory=list)


class ProxyConfig(OCMModel):
    """HTTP proxy settings of the agent."""

    http_proxy: Annotated[str | None, Field(description="URL of the HTTP proxy.")] = None
    https_proxy: Annotated[str | None, Field(description="URL of the HTTPS proxy.")] = None
    ca_bundle: Annotated[
        str | None, Field(description="Base64-encoded CA bundle of the proxy."), CRD(format="byte")
    ] = None
    no_proxy: Annotated[str | None, Field(description="Hosts that bypass the proxy.")] = None


class ImageMirror(OCMModel):
    """Pull images from a mirror."""

    mirror: Annotated[str, Field(description="The mirror registry.")]
    source: Annotated[str | None, Field(description="The registry being mirrored.")] = None


class ResourceClaim(OCMModel):
    """A dynamic resource claim of a container."""

    name: Annotated[str, Field(description="Claim name.")]
    request: Annotated[str | None, Field(description="Request name within the claim.")] = None


class ResourceRequirements(OCMModel):
    """Compute resources of a container."""

    limits: Annotated[
        dict[str, Quantity], Field(description="Upper bounds, by resource name.")
    ] = Field(default_factory=dict)
    requests: Annotated[
        dict[str, Quantity], Field(description="Requested amounts, by resource name.")
    ] = Field(default_factory=dict)
    claims: Annotated[
        list[ResourceClaim],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="Dynamic resource claims."),
    ] = Field(default_factory=list)


class ContainerResourceRequirements(OCMModel):
    """Resources of the containers matched by an identifier."""

    container_id: Annotated[
        str,
        Field(
            alias="containerID",
            pattern="^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\\*):.+:.+$",
            description="<resource>:<name>:<container>, with * wildcards.",
        ),
    ]
    resources: Annotated[ResourceRequirements, Field(description="The resources.")]


class AddOnDeploymentConfigSpec(OCMModel):
    """Deployment settings of an add-on agent."""

    customized_variables: Annotated[
        list[CustomizedVariable],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="Variables passed to the add-on's manifests."),
    ] = Field(default_factory=list)
    node_placement: Annotated[
        NodePlacement | None, Field(description="Where the agent's pods run.")
    ] = None
    registries: Annotated[
        list[ImageMirror], Field(description="Image registry mirrors.")
    ] = Field(default_factory=list)
    proxy_config: Annotated[
        ProxyConfig | None, Field(description="HTTP proxy settings.")
    ] = None
    agent_install_namespace: Annotated[
        str,
        Field(
            max_length=63,
            pattern="^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
            description="Namespace on the managed cluster for the agent.",
        ),
        DEFAULTED,
    ] = DEFAULT_INSTALL_NAMESPACE
    resource_requirements: Annotated[
        list[ContainerResourceRequirements],
        CRD(list_type="map", list_map_keys=("containerID",)),
        Field(description="Compute resources of the agent's containers."),
    ] = Field(default_factory=list)


class AddOnDeploymentConfig(OCMObject):
    """Deployment settings (variables, node placement, proxy, registries, resources) that
    add-ons reference as a configuration."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="AddOnDeploymentConfig",
        plural="addondeploymentconfigs",
        singular="addondeploymentconfig",
        scope="Namespaced",
        status_subresource=False,
    )

    spec: Annotated[AddOnDeploymentConfigSpec, Field(description="The deployment settings.")]
