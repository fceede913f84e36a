"""AddOnTemplate (addon.open-cluster-management.io, v1alpha1 stored, v1beta1 served): an add-on
described by data instead of code: the manifests of its agent (a ManifestWork spec) and how the
agent registers with the hub. OCM serves both versions with the same schema."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api.addon_v1alpha1 import GROUP, Subject
from ocm_rollout.api.addon_v1beta1 import SIGNER_NAME_PATTERN
from ocm_rollout.api.meta import CRD, KindInfo, OCMModel, OCMObject, PrinterColumn
from ocm_rollout.api.work_v1 import ManifestWorkSpec

VERSIONS = ("v1alpha1", "v1beta1")


class RoleRef(OCMModel):
    """A Role or ClusterRole on the hub (rbac.authorization.k8s.io RoleRef)."""

    api_group: Annotated[str, Field(description="API group of the role.")]
    kind: Annotated[str, Field(description="Role or ClusterRole.")]
    name: Annotated[str, Field(description="Name of the role.")]


class CurrentClusterBinding(OCMModel):
    """Bind a ClusterRole in the namespace of each managed cluster."""

    cluster_role_name: Annotated[
        str, Field(description="The ClusterRole bound in every cluster namespace; it must exist.")
    ]


class SingleNamespaceBinding(OCMModel):
    """Bind a role in one hub namespace."""

    namespace: Annotated[str, Field(description="The hub namespace the role is bound in.")]
    role_ref: Annotated[
        RoleRef, CRD(map_type="atomic"), Field(description="The Role or ClusterRole to bind; it must exist.")
    ]


class HubPermission(OCMModel):
    """A permission of the agent on the hub: a role bound to the add-on's group."""

    type: Annotated[
        Literal["CurrentCluster", "SingleNamespace"],
        Field(
            description=(
                "CurrentCluster binds in the managed cluster's namespace, SingleNamespace in the "
                "namespace singleNamespace names."
            )
        ),
    ]
    current_cluster: Annotated[
        CurrentClusterBinding | None, Field(description="Settings of the CurrentCluster type.")
    ] = None
    single_namespace: Annotated[
        SingleNamespaceBinding | None, Field(description="Settings of the SingleNamespace type.")
    ] = None


class KubeClientRegistration(OCMModel):
    """A client of the hub's API server for the agent."""

    hub_permissions: Annotated[
        list[HubPermission], Field(description="What the agent may do on the hub.")
    ] = Field(default_factory=list)


class SigningCARef(OCMModel):
    """A kubernetes.io/tls Secret on the hub holding the CA that signs the agent's certificates."""

    name: Annotated[str, Field(description="Name of the Secret.")]
    namespace: Annotated[
        str | None, Field(description="Namespace of the Secret; the add-on manager's when empty.")
    ] = None


class CustomSignerRegistration(OCMModel):
    """A certificate signed by a CA of the add-on's own."""

    signer_name: Annotated[
        str,
        Field(
            min_length=5,
            max_length=571,
            pattern=SIGNER_NAME_PATTERN,
            description="The signer name of the certificate requests.",
        ),
    ]
    subject: Annotated[
        Subject | None, Field(description="The identity in the certificate; OCM's default when unset.")
    ] = None
    signing_ca: Annotated[
        SigningCARef, Field(alias="signingCA", description="The CA that signs the certificates.")
    ]


class Registration(OCMModel):
    """How the agent registers with the hub."""

    type: Annotated[
        Literal["KubeClient", "CustomSigner"],
        Field(
            description=(
                "KubeClient: a client of the hub's API server (signer "
                "kubernetes.io/kube-apiserver-client); CustomSigner: a certificate from signingCA."
            )
        ),
    ]
    kube_client: Annotated[
        KubeClientRegistration | None, Field(description="Settings of the KubeClient type.")
    ] = None
    custom_signer: Annotated[
        CustomSignerRegistration | None, Field(description="Settings of the CustomSigner type.")
    ] = None


class AddOnTemplateSpec(OCMModel):
    """The agent of an add-on and its registration."""

    addon_name: Annotated[str, Field(description="The add-on (ClusterManagementAddOn) this template is for.")]
    agent_spec: Annotated[
        ManifestWorkSpec,
        Field(description="The agent's objects and how they are applied on each managed cluster."),
    ]
    registration: Annotated[
        list[Registration], Field(description="How the agent registers with the hub.")
    ] = Field(default_factory=list)


def _kind_info(version: str) -> KindInfo:
    return KindInfo(
        group=GROUP,
        version=version,
        kind="AddOnTemplate",
        plural="addontemplates",
        singular="addontemplate",
        scope="Cluster",
        printer_columns=(PrinterColumn("ADDON NAME", "string", ".spec.addonName"),),
        status_subresource=False,
    )


class AddOnTemplate(OCMObject):
    """How to deploy and register an add-on's agent (cluster-scoped, read on the hub only);
    v1alpha1, the stored version."""

    KIND = _kind_info("v1alpha1")

    spec: Annotated[AddOnTemplateSpec, Field(description="The agent's manifests and registration.")]


class AddOnTemplateV1beta1(OCMObject):
    """How to deploy and register an add-on's agent (cluster-scoped, read on the hub only);
    v1beta1, served with the same schema as v1alpha1."""

    KIND = _kind_info("v1beta1")

    spec: Annotated[AddOnTemplateSpec, Field(description="The agent's manifests and registration.")]
