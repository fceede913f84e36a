"""cluster.open-cluster-management.io/v1alpha1: AddOnPlacementScore and the rollout strategy types.

The rollout strategy types are not a kind of their own: ManifestWorkReplicaSet and
ClusterManagementAddOn embed ``RolloutStrategy`` (OCM defines them in this API package).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ocm_rollout.api import constants
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    ConditionList,
    Int32,
    KindInfo,
    MinSuccessTime,
    OCMModel,
    OCMObject,
    ProgressDeadline,
    Threshold,
    Time,
)
from ocm_rollout.api.rollout_checks import PluginName, RolloutPromotion, RolloutValidation

GROUP = constants.CLUSTER_GROUP
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

RolloutType = Literal["All", "Progressive", "ProgressivePerGroup"]
ROLLOUT_TYPES: tuple[str, ...] = ("All", "Progressive", "ProgressivePerGroup")

# --------------------------------------------------------------------------------------------
# AddOnPlacementScore
# --------------------------------------------------------------------------------------------


class AddOnPlacementScoreItem(OCMModel):
    """One named score."""

    name: Annotated[str, Field(description="The score name, referenced by Placements as scoreName.")]
    value: Annotated[
        Int32, Field(ge=-100, le=100, description="The score, from -100 to 100.")
    ]


class AddOnPlacementScoreStatus(OCMModel):
    """The scores a provider publishes for one cluster."""

    conditions: ConditionList = Field(default_factory=list)
    scores: Annotated[
        list[AddOnPlacementScoreItem],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(description="The scores, one per name."),
    ] = Field(default_factory=list)
    valid_until: Annotated[
        Time | None,
        Field(description="After this time the scores are stale and placements score the cluster 0."),
    ] = None


class AddOnPlacementScore(OCMObject):
    """Scores published for one managed cluster (in the cluster's namespace) by a score
    provider; Placements with an AddOn prioritizer read them."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="AddOnPlacementScore",
        plural="addonplacementscores",
        singular="addonplacementscore",
        scope="Namespaced",
    )

    status: Annotated[
        AddOnPlacementScoreStatus, Field(description="The published scores.")
    ] = Field(default_factory=AddOnPlacementScoreStatus)


# --------------------------------------------------------------------------------------------
# Rollout strategy
# --------------------------------------------------------------------------------------------


class RolloutConfig(OCMModel):
    """Timing and failure tolerance shared by every rollout type."""

    min_success_time: Annotated[MinSuccessTime, DEFAULTED] = "0"
    progress_deadline: Annotated[ProgressDeadline, DEFAULTED] = "None"
    max_failures: Annotated[
        Threshold,
        Field(
            description=(
                "How many clusters (a number, or a percentage of the clusters) may fail or time out "
                "before the rollout stops; 0 tolerates no failure."
            )
        ),
        DEFAULTED,
    ] = 0


class MandatoryDecisionGroup(OCMModel):
    """A decision group that must be rolled out first, by name or by index."""

    group_name: Annotated[
        str | None,
        Field(description="Select every decision group with this name (takes precedence over groupIndex)."),
    ] = None
    group_index: Annotated[
        Int32 | None, Field(description="Select the decision group with this index.")
    ] = None


MandatoryDecisionGroupList = Annotated[
    list[MandatoryDecisionGroup],
    Field(
        description=(
            "Decision groups rolled out before all others, tolerating no failure; the rollout moves "
            "on only once they all succeed."
        )
    ),
]


class RolloutAll(RolloutConfig):
    """Apply to every selected cluster at once."""


class RolloutProgressive(RolloutConfig):
    """Apply cluster by cluster, at most maxConcurrency at a time, mandatory groups first."""

    mandatory_decision_groups: MandatoryDecisionGroupList = Field(default_factory=list)
    max_concurrency: Annotated[
        Threshold | None,
        Field(
            description=(
                "How many clusters (a number, or a percentage of the non-mandatory clusters) are "
                "rolled out at the same time; unset means all of them."
            )
        ),
    ] = None


class RolloutProgressivePerGroup(RolloutConfig):
    """Apply decision group by decision group, mandatory groups first."""

    mandatory_decision_groups: MandatoryDecisionGroupList = Field(default_factory=list)


class RolloutStrategy(OCMModel):
    """How a change is rolled out to the clusters a Placement selects.

    ``rolloutType`` is the older spelling of ``type`` (OCM's documentation still has examples
    with it): it is read as ``type`` when ``type`` is unset, and when both are set they must be
    the same. After validation ``type`` is always the type in effect (``All`` when neither is
    set, as OCM's CRD defaulting gives); ``rollout_type`` keeps what was spelled the old way.
    The CRD does not default ``type`` (the API server defaults before it validates, so a default
    would contradict a ``rolloutType``); it checks the agreement with a CEL rule instead.
    """

    __crd_validations__ = (
        (
            "!has(self.rolloutType) || !has(self.type) || self.type == self.rolloutType",
            "rolloutType is the older spelling of type: set only type, or give both the same value",
        ),
    )

    type: Annotated[
        RolloutType,
        Field(
            description=(
                "All (every cluster at once), Progressive (cluster by cluster) or ProgressivePerGroup "
                "(decision group by decision group). Unset: rolloutType if set, otherwise All."
            )
        ),
    ] = "All"
    rollout_type: Annotated[
        RolloutType | None,
        Field(
            description=(
                "The older spelling of type, found in some OCM documentation: read as type when type "
                "is unset; when both are set they must be the same. Write type instead."
            )
        ),
    ] = None
    failure_strategy: Annotated[
        Literal["AbortAll"] | None,
        Field(
            description=(
                "What to do when maxFailures is breached: unset stops the rollout where it is; "
                "AbortAll aborts it, returning every cluster that took the new revision to the "
                "last good one (ManifestWorkReplicaSet: status.currentRevision; add-ons: each "
                "placement's lastKnownGoodConfig)."
            )
        ),
    ] = None
    plugin: Annotated[PluginName | None, Field()] = None
    validation: Annotated[
        RolloutValidation | None,
        Field(
            description=(
                "Built-in checks (ours) that must pass on a cluster, once its work has applied, "
                "before it counts as succeeded (meanwhile it is Validating)."
            )
        ),
    ] = None
    promotion: Annotated[
        RolloutPromotion | None,
        Field(description="Decision groups that wait for a manual promotion (ours) before they are rolled out to."),
    ] = None
    all: Annotated[RolloutAll | None, Field(description="Settings of the All type.")] = None
    progressive: Annotated[
        RolloutProgressive | None, Field(description="Settings of the Progressive type.")
    ] = None
    progressive_per_group: Annotated[
        RolloutProgressivePerGroup | None,
        Field(description="Settings of the ProgressivePerGroup type."),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _read_rollout_type_as_type(cls, data: Any) -> Any:
        """An unset ``type`` takes a valid ``rolloutType`` (an invalid one is reported on
        ``rolloutType`` alone by its own validation)."""
        if not isinstance(data, dict) or data.get("type") is not None:
            return data
        for key in ("rolloutType", "rollout_type"):
            legacy = data.get(key)
            if isinstance(legacy, str) and legacy in ROLLOUT_TYPES:
                return {**data, "type": legacy}
        return data

    @field_validator("rollout_type")
    @classmethod
    def _rollout_type_agrees_with_type(cls, value: str | None, info: ValidationInfo) -> str | None:
        current = info.data.get("type")
        if value is not None and current is not None and current != value:
            raise ValueError(
                f"rolloutType {value!r} and type {current!r} disagree; rolloutType is the older "
                "spelling of type, set only type"
            )
        return value

