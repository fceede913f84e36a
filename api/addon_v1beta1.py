"""addon.open-cluster-management.io/v1beta1: ClusterManagementAddOn, ManagedClusterAddOn and
AddOnDeploymentConfig as OCM serves them besides the stored v1alpha1.

What changed from v1alpha1:

- ClusterManagementAddOn: ``spec.supportedConfigs`` (types with an optional default object) and
  the legacy ``spec.addOnConfiguration`` are replaced by ``spec.defaultConfigs`` (default objects
  only); ``status.defaultconfigReferences`` is spelled ``defaultConfigReferences``.
- ManagedClusterAddOn: ``spec.installNamespace`` is gone (OCM keeps it in an annotation), as are
  ``status.addOnConfiguration`` and ``status.kubeClientDriver``; a status config reference no
  longer names its object (only desired / last applied config do); a registration is typed
  (``kubeClient`` or ``customSigner``) and the kube client driver moved into it.
- AddOnDeploymentConfig: the same schema.

The pieces that did not change are shared with ``addon_v1alpha1``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api import addon_v1alpha1
from ocm_rollout.api.addon_v1alpha1 import (
    GROUP,
    AddOnConfig,
    AddOnDeploymentConfigSpec,
    AddOnMeta,
    ConfigGroupResource,
    ConfigSpecHash,
    DefaultConfigReference,
    GroupField,
    HealthCheck,
    InstallProgression,
    InstallStrategy,
    ObjectReference,
    ResourceField,
)
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    ConditionList,
    Int64,
    KindInfo,
    OCMModel,
    OCMObject,
    PrinterColumn,
)

VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

SIGNER_NAME_PATTERN = "^([a-z0-9][a-z0-9-]*[a-z0-9]\\.)+[a-z]+\\/[a-z0-9-\\.]+$"

# --------------------------------------------------------------------------------------------
# ClusterManagementAddOn
# --------------------------------------------------------------------------------------------


class ClusterManagementAddOnSpec(OCMModel):
    """How an add-on is installed and configured across the fleet."""

    add_on_meta: Annotated[AddOnMeta | None, Field(description="How the add-on presents itself.")] = None
    default_configs: Annotated[
        list[AddOnConfig],
        CRD(list_type="map", list_map_keys=("group", "resource")),
        Field(
            description=(
                "The configuration of each type used when neither a placement nor a "
                "ManagedClusterAddOn gives one."
            )
        ),
    ] = Field(default_factory=list)
    install_strategy: Annotated[
        InstallStrategy, Field(description="Where the add-on is installed."), DEFAULTED
    ] = Field(default_factory=InstallStrategy)


class ClusterManagementAddOnStatus(OCMModel):
    """Configurations in effect and rollout progress per placement."""

    default_config_references: Annotated[
        list[DefaultConfigReference], Field(description="The default configurations in effect.")
    ] = Field(default_factory=list)
    install_progressions: Annotated[
        list[InstallProgression], Field(description="Rollout progress per placement.")
    ] = Field(default_factory=list)


class ClusterManagementAddOn(OCMObject):
    """An add-on registered with the hub (cluster-scoped): its install strategy and default
    configurations, shared by the ManagedClusterAddOns of the same name."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ClusterManagementAddOn",
        plural="clustermanagementaddons",
        singular="clustermanagementaddon",
        scope="Cluster",
        short_names=("cma", "cmas"),
        printer_columns=(PrinterColumn("DISPLAY NAME", "string", ".spec.addOnMeta.displayName"),),
    )

    spec: Annotated[ClusterManagementAddOnSpec, Field(description="Install strategy and configuration.")]
    status: Annotated[
        ClusterManagementAddOnStatus, Field(description="Configurations in effect and rollout progress.")
    ] = Field(default_factory=ClusterManagementAddOnStatus)


# --------------------------------------------------------------------------------------------
# ManagedClusterAddOn
# --------------------------------------------------------------------------------------------


class ManagedClusterAddOnSpec(OCMModel):
    """The add-on on one cluster."""

    configs: Annotated[
        list[AddOnConfig],
        Field(
            description=(
                "Configurations for this cluster only; they replace the configurations of the "
                "same group and resource given by the ClusterManagementAddOn."
            )
        ),
    ] = Field(default_factory=list)


class ConfigReference(OCMModel):
    """A configuration type in effect for the add-on on this cluster, with the configuration it
    should use and the one its agent applied."""

    group: GroupField = ""
    resource: ResourceField
    last_observed_generation: Annotated[
        Int64 | None, Field(description="The generation of the configuration object last seen.")
    ] = None
    desired_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration that should be in effect.")
    ] = None
    last_applied_config: Annotated[
        ConfigSpecHash | None, Field(description="The configuration the agent has applied.")
    ] = None


class KubeClientSubject(OCMModel):
    """The identity of the agent's hub client."""

    user: Annotated[str | None, Field(description="User name.")] = None
    groups: Annotated[list[str], Field(description="Groups.")] = Field(default_factory=list)


class Subject(KubeClientSubject):
    """The identity in a certificate from a custom signer."""

    organization_units: Annotated[
        list[str], Field(description="Organization units.")
    ] = Field(default_factory=list)


class KubeClientConfig(OCMModel):
    """A client of the hub's API server for the agent."""

    subject: Annotated[KubeClientSubject | None, Field(description="The identity of the client.")] = None
    driver: Annotated[
        Literal["csr", "token"] | None,
        Field(description="How the agent gets its credentials: a signed certificate or a token."),
    ] = None


class CustomSignerConfig(OCMModel):
    """A certificate from a signer of the add-on's own."""

    signer_name: Annotated[
        str,
        Field(
            min_length=5,
            max_length=571,
            pattern=SIGNER_NAME_PATTERN,
            description="The signer of the certificate.",
        ),
    ]
    subject: Annotated[Subject | None, Field(description="The identity in the certificate.")] = None


class RegistrationConfig(OCMModel):
    """A credential the add-on agent needs: a hub client or a custom-signed certificate."""

    type: Annotated[
        Literal["kubeClient", "customSigner"],
        Field(description="kubeClient (a client of the hub's API server) or customSigner."),
    ]
    kube_client: Annotated[
        KubeClientConfig | None, Field(description="Settings of the kubeClient type.")
    ] = None
    custom_signer: Annotated[
        CustomSignerConfig | None, Field(description="Settings of the customSigner type.")
    ] = None


class ManagedClusterAddOnStatus(OCMModel):
    """The add-on's state on one cluster."""

    conditions: ConditionList = Field(default_factory=list)
    related_objects: Annotated[
        list[ObjectReference], Field(description="Objects related to the add-on.")
    ] = Field(default_factory=list)
    add_on_meta: Annotated[AddOnMeta | None, Field(description="Copied from the ClusterManagementAddOn.")] = None
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
        list[RegistrationConfig], Field(description="Credentials the agent needs.")
    ] = Field(default_factory=list)
    health_check: Annotated[
        HealthCheck | None, Field(description="How the add-on's health is checked.")
    ] = None


class ManagedClusterAddOn(OCMObject):
    """The add-on on one managed cluster (in the cluster's namespace, named like its
    ClusterManagementAddOn)."""

    # The same names and printer columns as in v1alpha1.
    KIND = dataclasses.replace(addon_v1alpha1.ManagedClusterAddOn.KIND, version=VERSION)

    spec: Annotated[ManagedClusterAddOnSpec, Field(description="The add-on on this cluster.")]
    status: Annotated[
        ManagedClusterAddOnStatus, Field(description="The add-on's state on this cluster.")
    ] = Field(default_factory=ManagedClusterAddOnStatus)


# --------------------------------------------------------------------------------------------
# AddOnDeploymentConfig
# --------------------------------------------------------------------------------------------


class AddOnDeploymentConfig(OCMObject):
    """Deployment settings (variables, node placement, proxy, registries, resources) that
    add-ons reference as a configuration; the same schema as v1alpha1."""

    # The same names and printer columns as in v1alpha1.
    KIND = dataclasses.replace(addon_v1alpha1.AddOnDeploymentConfig.KIND, version=VERSION)

    spec: Annotated[AddOnDeploymentConfigSpec, Field(description="The deployment settings.")]
