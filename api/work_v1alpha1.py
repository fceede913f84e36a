"""work.open-cluster-management.io/v1alpha1: ManifestWorkReplicaSet."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1alpha1 import RolloutAll, RolloutStrategy
from ocm_rollout.api.meta import (
    CRD,
    DEFAULTED,
    ConditionList,
    Int32,
    KindInfo,
    OCMModel,
    OCMObject,
    PrinterColumn,
    Time,
)
from ocm_rollout.api.work_v1 import ManifestWorkSpec

GROUP = constants.WORK_GROUP
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

CascadeDeletionPolicy = Literal["Background", "Foreground"]


def _default_rollout_strategy() -> RolloutStrategy:
    return RolloutStrategy(type="All", all=RolloutAll())


class LocalPlacementReference(OCMModel):
    """A Placement in the ManifestWorkReplicaSet's namespace and how to roll out to it."""

    name: Annotated[
        str, Field(min_length=1, description="Name of a Placement in the same namespace.")
    ]
    rollout_strategy: Annotated[
        RolloutStrategy,
        Field(description="How the works are rolled out to the clusters the Placement selects."),
        CRD(default={"type": "All", "all": {"progressDeadline": "None"}}),
    ] = Field(default_factory=_default_rollout_strategy)


class ManifestWorkReplicaSetSpec(OCMModel):
    """What to deploy and where."""

    __crd_required__ = ("cascade_deletion_policy",)

    manifest_work_template: Annotated[
        ManifestWorkSpec,
        Field(description="The spec of the ManifestWork created for every selected cluster."),
    ] = Field(default_factory=ManifestWorkSpec)
    placement_refs: Annotated[
        list[LocalPlacementReference],
        Field(
            min_length=1, max_length=constants.MAX_ROLLOUT_PLACEMENTS,
            description="Placements selecting the clusters; at least one.",
        ),
    ]
    cascade_deletion_policy: Annotated[
        CascadeDeletionPolicy,
        Field(
            description=(
                "Background: the ManifestWorkReplicaSet goes away once its works are deleted; "
                "Foreground: it stays until every work is gone from the hub."
            )
        ),
        DEFAULTED,
    ] = "Background"
    revision_history_limit: Annotated[
        Int32,
        Field(
            ge=0,
            description=(
                "How many old template revisions (ControllerRevisions) to keep besides the current "
                "and the update revision."
            ),
        ),
        DEFAULTED,
    ] = constants.DEFAULT_REVISION_HISTORY_LIMIT
    paused: Annotated[
        bool | None,
        Field(
            description=(
                "While true, no ManifestWork is created, updated or deleted; the rollout continues "
                "where it stopped once it is false again."
            )
        ),
    ] = None


class ManifestWorkReplicaSetSummary(OCMModel):
    """Counts of the generated ManifestWorks by state."""

    total: Annotated[int, Field(description="Number of ManifestWorks generated.")] = 0
    applied: Annotated[int, Field(description="How many are Applied.")] = 0
    available: Annotated[int, Field(description="How many are Available.")] = 0
    degraded: Annotated[int, Field(description="How many are Degraded.")] = 0
    progressing: Annotated[int, Field(description="How many are Progressing.")] = 0
    desired_total: Annotated[int, Field(description="Number of ManifestWorks wanted.")] = 0
    updated: Annotated[int, Field(description="How many carry the current template.")] = 0


class PlacementSummary(OCMModel):
    """Progress of the rollout to one Placement."""

    name: Annotated[str | None, Field(description="The Placement name.")] = None
    available_decision_groups: Annotated[
        str | None,
        Field(description="Decision groups and applied clusters, e.g. '2 (3 / 5 clusters applied)'."),
    ] = None
    summary: Annotated[
        ManifestWorkReplicaSetSummary, Field(description="Counts of this Placement's works.")
    ] = Field(default_factory=ManifestWorkReplicaSetSummary)


class ManifestWorkReplicaSetStatus(OCMModel):
    """Rollout progress and the state of the generated works."""

    conditions: ConditionList = Field(default_factory=list)
    summary: Annotated[
        ManifestWorkReplicaSetSummary, Field(description="Counts over all Placements.")
    ] = Field(default_factory=ManifestWorkReplicaSetSummary)
    placement_summary: Annotated[
        list[PlacementSummary], Field(description="Progress per Placement.")
    ] = Field(default_factory=list)
    current_revision: Annotated[
        str | None,
        Field(description="Hash of the last template revision every selected cluster succeeded with."),
    ] = None
    update_revision: Annotated[
        str | None, Field(description="Hash of the template revision being rolled out (the spec's).")
    ] = None
    collision_count: Annotated[
        Int32 | None,
        Field(description="Hash collisions met while naming revisions; part of the next hash."),
    ] = None
    aborted_time: Annotated[
        Time | None,
        Field(
            description=(
                "When the rollout of updateRevision was aborted (unset when it is not aborted)."
            )
        ),
    ] = None


class ManifestWorkReplicaSet(OCMObject):
    """Creates one ManifestWork from a template in the namespace of every cluster its
    Placements select, following each Placement's rollout strategy."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="ManifestWorkReplicaSet",
        plural="manifestworkreplicasets",
        singular="manifestworkreplicaset",
        scope="Namespaced",
        short_names=("mwrs",),
        printer_columns=(
            PrinterColumn(
                "Placement",
                "string",
                '.status.conditions[?(@.type=="PlacementVerified")].reason',
                "Why the placements are, or are not, verified",
            ),
            PrinterColumn(
                "Found",
                "string",
                '.status.conditions[?(@.type=="PlacementVerified")].status',
                "Whether every placement exists and selects clusters",
            ),
            PrinterColumn(
                "ManifestWorks",
                "string",
                '.status.conditions[?(@.type=="ManifestworkApplied")].reason',
                "Why the ManifestWorks are, or are not, as expected",
            ),
            PrinterColumn(
                "Applied",
                "string",
                '.status.conditions[?(@.type=="ManifestworkApplied")].status',
                "Whether every ManifestWork is applied and available",
            ),
        ),
    )

    spec: Annotated[ManifestWorkReplicaSetSpec, Field(description="What to deploy and where.")]
    status: Annotated[
        ManifestWorkReplicaSetStatus, Field(description="Rollout progress and work states.")
    ] = Field(default_factory=ManifestWorkReplicaSetStatus)
