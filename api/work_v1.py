"""work.open-cluster-management.io/v1: ManifestWork."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from ocm_rollout.api import constants
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    DNS1123_SUBDOMAIN_PATTERN,
    ConditionList,
    Int32,
    Int64,
    KindInfo,
    OCMModel,
    OCMObject,
)

GROUP = constants.WORK_GROUP
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

PropagationPolicy = Literal["Foreground", "Orphan", "SelectivelyOrphan"]
UpdateStrategyType = Literal["Update", "CreateOnly", "ServerSideApply", "ReadOnly"]
FeedbackRuleType = Literal["WellKnownStatus", "JSONPaths"]
ConditionRuleType = Literal["WellKnownConditions", "CEL"]
IgnoreFieldsCondition = Literal["OnSpokePresent", "OnSpokeChange"]
FieldValueType = Literal["Integer", "String", "Boolean", "JsonRaw"]


def _check_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    for key in ("apiVersion", "kind"):
        value = manifest.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} is required: every manifest must be a complete Kubernetes object")
    metadata = manifest.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("metadata must be an object")
    return manifest


Manifest = Annotated[
    dict[str, Any],
    AfterValidator(_check_manifest),
    CRD(embedded_resource=True, preserve_unknown_fields=True),
    Field(description="A complete Kubernetes object to apply on the managed cluster, kept as given."),
]
"""One workload manifest: a raw Kubernetes object (a plain dict, never rewritten)."""


class ManifestsTemplate(OCMModel):
    """The objects a ManifestWork applies."""

    manifests: Annotated[
        list[Manifest], Field(description="The Kubernetes objects to apply, in order.")
    ] = Field(default_factory=list)


class OrphaningRule(OCMModel):
    """Identifies one applied object to leave on the cluster when the work is deleted."""

    group: Annotated[str | None, Field(description="API group of the object; empty for core.")] = None
    resource: Annotated[str, Field(description="Resource (lower-case plural) of the object.")]
    namespace: Annotated[
        str | None, Field(description="Namespace of the object; empty for cluster-scoped ones.")
    ] = None
    name: Annotated[str, Field(description="Name of the object.")]


class SelectivelyOrphan(OCMModel):
    """Objects to orphan with the SelectivelyOrphan policy."""

    orphaning_rules: Annotated[
        list[OrphaningRule], Field(description="The objects to leave behind.")
    ] = Field(default_factory=list)


class DeleteOption(OCMModel):
    """What happens to the applied objects when the work is deleted or finishes."""

    propagation_policy: Annotated[
        PropagationPolicy,
        Field(
            description=(
                "Foreground deletes the applied objects with the work, Orphan leaves them all, "
                "SelectivelyOrphan leaves those listed in selectivelyOrphans."
            )
        ),
        DEFAULTED,
    ] = "Foreground"
    selectively_orphans: Annotated[
        SelectivelyOrphan | None,
        Field(description="The objects to leave behind with SelectivelyOrphan."),
    ] = None
    ttl_seconds_after_finished: Annotated[
        Int64 | None,
        Field(
            description=(
                "Delete the work this many seconds after its Complete condition became True."
            )
        ),
    ] = None


class ResourceIdentifier(OCMModel):
    """Identifies one manifest of the work; name and namespace accept * wildcards."""

    group: Annotated[str | None, Field(description="API group; empty for core.")] = None
    resource: Annotated[str, Field(description="Resource (lower-case plural).")]
    name: Annotated[str, Field(description="Object name.")]
    namespace: Annotated[
        str | None, Field(description="Object namespace; empty for cluster-scoped objects.")
    ] = None


class JsonPath(OCMModel):
    """A named JSONPath whose value is reported back."""

    name: Annotated[str, Field(description="The name the value is reported under.")]
    version: Annotated[
        str | None, Field(description="Only apply to this API version of the object.")
    ] = None
    path: Annotated[str, Field(description="A Kubernetes JSONPath into the object, e.g. .status.replicas.")]


class FeedbackRule(OCMModel):
    """Which status fields of an applied object are reported to the hub."""

    type: Annotated[
        FeedbackRuleType,
        Field(description="WellKnownStatus (predefined fields of common kinds) or JSONPaths."),
    ]
    json_paths: Annotated[
        list[JsonPath],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="The paths to report, for type JSONPaths."),
    ] = Field(default_factory=list)


class IgnoreField(OCMModel):
    """Fields server-side apply leaves alone."""

    __crd_required__ = ("condition",)

    condition: Annotated[
        IgnoreFieldsCondition,
        Field(
            description=(
                "OnSpokePresent: ignore the fields once they exist on the cluster; OnSpokeChange: "
                "ignore them only when changed on the cluster."
            )
        ),
        DEFAULTED,
    ] = "OnSpokePresent"
    json_pointers: Annotated[list[str], Field(description="JSON pointers of the fields.")] = Field(
        default_factory=list
    )
    jq_path_expressions: Annotated[
        list[str], Field(description="jq path expressions of the fields.")
    ] = Field(default_factory=list)
    json_paths: Annotated[list[str], Field(description="JSONPaths of the fields.")] = Field(
        default_factory=list
    )


class ServerSideApplyConfig(OCMModel):
    """Settings of the ServerSideApply update strategy."""

    force: Annotated[
        bool | None, Field(description="Take ownership of conflicting fields.")
    ] = None
    field_manager: Annotated[
        str,
        Field(pattern="^work-agent", description="The field manager name; must start with work-agent."),
        DEFAULTED,
    ] = "work-agent"
    ignore_fields: Annotated[
        list[IgnoreField],
        CRD(list_type="map", list_map_keys=("condition",)),
        Field(description="Fields to leave alone."),
    ] = Field(default_factory=list)


class UpdateStrategy(OCMModel):
    """How the agent updates an object that already exists."""

    __crd_required__ = ("type",)

    type: Annotated[
        UpdateStrategyType,
        Field(
            description=(
                "Update (replace), CreateOnly (never update), ServerSideApply, or ReadOnly (only "
                "read back status)."
            )
        ),
        DEFAULTED,
    ] = "Update"
    server_side_apply: Annotated[
        ServerSideApplyConfig | None, Field(description="Settings for ServerSideApply.")
    ] = None


class ConditionRule(OCMModel):
    """Computes a condition of a manifest from the applied object."""

    __crd_validations__ = (
        ("self.type != 'CEL' || self.condition != \"\"", "condition is required for CEL rules"),
    )

    condition: Annotated[str, Field(description="The condition type to set, e.g. Complete.")]
    type: Annotated[
        ConditionRuleType,
        Field(description="WellKnownConditions (predefined rules of common kinds) or CEL."),
    ]
    cel_expressions: Annotated[
        list[str],
        Field(description="CEL expressions over the object; the condition is True when all hold."),
    ] = Field(default_factory=list)
    message: Annotated[str | None, Field(description="A fixed message for the condition.")] = None
    message_expression: Annotated[
        str | None, Field(description="A CEL expression producing the message.")
    ] = None

    @model_validator(mode="after")
    def _cel_needs_condition(self) -> ConditionRule:
        if self.type == "CEL" and self.condition == "":
            raise ValueError("condition is required for CEL rules")
        return self


class ManifestConfigOption(OCMModel):
    """Per-manifest settings: status feedback, update strategy and condition rules."""

    resource_identifier: Annotated[
        ResourceIdentifier, Field(description="The manifest these settings apply to.")
    ]
    feedback_rules: Annotated[
        list[FeedbackRule], Field(description="Status fields to report back.")
    ] = Field(default_factory=list)
    update_strategy: Annotated[
        UpdateStrategy | None, Field(description="How to update the object.")
    ] = None
    condition_rules: Annotated[
        list[ConditionRule],
        CRD(list_type="map", list_map_keys=("condition",)),
        Field(description="Conditions computed from the object."),
    ] = Field(default_factory=list)
    feedback_scrape_type: Annotated[
        Literal["Poll", "Watch"],
        Field(description="Poll the object periodically, or Watch it."),
        DEFAULTED,
    ] = "Poll"


class ServiceAccountSubject(OCMModel):
    """A service account on the managed cluster."""

    namespace: Annotated[
        str,
        Field(
            min_length=1,
            max_length=253,
            pattern=DNS1123_SUBDOMAIN_PATTERN,
            description="Namespace of the service account.",
        ),
    ]
    name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=253,
            pattern=DNS1123_SUBDOMAIN_PATTERN,
            description="Name of the service account.",
        ),
    ]


class ExecutorSubject(OCMModel):
    """The identity the agent applies the manifests as."""

    type: Annotated[Literal["ServiceAccount"], Field(description="Only ServiceAccount.")]
    service_account: Annotated[
        ServiceAccountSubject | None, Field(description="The service account to act as.")
    ] = None


class Executor(OCMModel):
    """Who applies the manifests."""

    subject: Annotated[
        ExecutorSubject | None, Field(description="The identity used to apply the manifests.")
    ] = None


class ManifestWorkSpec(OCMModel):
    """What to apply on the managed cluster, and how."""

    workload: Annotated[
        ManifestsTemplate, Field(description="The objects to apply.")
    ] = Field(default_factory=ManifestsTemplate)
    delete_option: Annotated[
        DeleteOption | None,
        Field(description="What happens to the applied objects when the work goes away."),
    ] = None
    manifest_configs: Annotated[
        list[ManifestConfigOption], Field(description="Per-manifest settings.")
    ] = Field(default_factory=list)
    executor: Annotated[
        Executor | None, Field(description="The identity used to apply the manifests.")
    ] = None


class ManifestResourceMeta(OCMModel):
    """Identifies the object behind one manifest."""

    ordinal: Annotated[Int32, Field(description="Index of the manifest in spec.workload.manifests.")]
    group: Annotated[str | None, Field(description="API group; empty for core.")] = None
    version: Annotated[str | None, Field(description="API version.")] = None
    kind: Annotated[str | None, Field(description="Kind.")] = None
    resource: Annotated[str | None, Field(description="Resource (lower-case plural).")] = None
    name: Annotated[str | None, Field(description="Object name.")] = None
    namespace: Annotated[str | None, Field(description="Object namespace.")] = None


class FieldValue(OCMModel):
    """A reported value, typed."""

    type: Annotated[FieldValueType, Field(description="Integer, String, Boolean or JsonRaw.")]
    integer: Annotated[Int64 | None, Field(description="The value when type is Integer.")] = None
    string: Annotated[str | None, Field(description="The value when type is String.")] = None
    boolean: Annotated[bool | None, Field(description="The value when type is Boolean.")] = None
    json_raw: Annotated[
        str | None, Field(max_length=1024, description="The value as compact JSON when type is JsonRaw.")
    ] = None


class FeedbackValue(OCMModel):
    """One named status value reported from an applied object."""

    name: Annotated[str, Field(description="The name of the value (from the feedback rule).")]
    field_value: Annotated[FieldValue, Field(description="The value.")]


class StatusFeedbackResult(OCMModel):
    """Status values reported for one manifest."""

    values: Annotated[
        list[FeedbackValue],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="The reported values."),
    ] = Field(default_factory=list)


class ManifestCondition(OCMModel):
    """The state of one manifest on the managed cluster."""

    resource_meta: Annotated[
        ManifestResourceMeta, Field(description="Which object this entry is about.")
    ]
    status_feedback: Annotated[
        StatusFeedbackResult | None, Field(description="Status values reported for the object.")
    ] = None
    conditions: ConditionList


class ManifestResourceStatus(OCMModel):
    """The state of every manifest."""

    manifests: Annotated[
        list[ManifestCondition], Field(description="One entry per manifest, in spec order.")
    ] = Field(default_factory=list)


class ManifestWorkStatus(OCMModel):
    """What the work agent reports."""

    conditions: ConditionList = Field(default_factory=list)
    resource_status: Annotated[
        ManifestResourceStatus | None, Field(description="The state of each manifest.")
    ] = None


class ManifestWork(OCMObject):
    """Kubernetes objects to apply on one managed cluster; it lives in that cluster's namespace
    on the hub and the cluster's work agent applies it and reports back."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManifestWork",
        plural="manifestworks",
        singular="manifestwork",
        scope="Namespaced",
    )

    spec: Annotated[ManifestWorkSpec, Field(description="What to apply.")] = Field(
        default_factory=ManifestWorkSpec
    )
    status: Annotated[ManifestWorkStatus, Field(description="What the work agent reports.")] = Field(
        default_factory=ManifestWorkStatus
    )
