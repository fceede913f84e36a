"""cluster.open-cluster-management.io/v1beta1: Placement and PlacementDecision."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1 import TaintEffect
from ocm_rollout.api.meta import (
    DEFAULTED,
    QUALIFIED_NAME_PATTERN,
    ConditionList,
    GroupSize,
    Int32,
    Int64,
    KindInfo,
    LabelSelector,
    LabelSelectorField,
    LabelSelectorRequirement,
    OCMModel,
    OCMObject,
    PrinterColumn,
    Time,
)

GROUP = constants.CLUSTER_GROUP
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

ScoreCoordinateType = Literal["BuiltIn", "AddOn"]
SortBy = Literal["ClusterName", "Score"]
TopologyKeyType = Literal["Label", "Claim"]
WhenUnsatisfiable = Literal["DoNotSchedule", "ScheduleAnyway"]
# OCM's pattern for a topology key (a label key or a claim name).
TOPOLOGY_KEY_PATTERN = (
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
SCORE_RATE_LIMIT_PATTERN = "^[0-9]+[hms]$"
MAX_SPREAD_TERMS = 8
DECISION_PAGE_SIZE = 100  # clusters per PlacementDecision


class ClusterClaimSelector(OCMModel):
    """Requirements on the cluster's claims (status.clusterClaims), all of which must hold."""

    match_expressions: Annotated[
        list[LabelSelectorRequirement],
        Field(description="Requirements on claim names and values, as for a label selector."),
    ] = Field(default_factory=list)

    def as_label_selector(self) -> LabelSelector:
        return LabelSelector(match_expressions=list(self.match_expressions))


class CelSelector(OCMModel):
    """CEL expressions evaluated against the ManagedCluster."""

    cel_expressions: Annotated[
        list[str],
        Field(
            description=(
                "CEL expressions over the variable managedCluster; every one must return true."
            )
        ),
    ] = Field(default_factory=list)


class ClusterSelector(OCMModel):
    """Selects clusters by labels, claims and CEL expressions (all must match)."""

    label_selector: Annotated[
        LabelSelectorField | None, Field(description="Selects clusters by their labels.")
    ] = None
    claim_selector: Annotated[
        ClusterClaimSelector | None, Field(description="Selects clusters by their claims.")
    ] = None
    cel_selector: Annotated[
        CelSelector | None, Field(description="Selects clusters with CEL expressions.")
    ] = None


class GroupClusterSelector(OCMModel):
    """Selects the clusters of a decision group by labels and claims (no CEL)."""

    label_selector: Annotated[
        LabelSelectorField | None, Field(description="Selects clusters by their labels.")
    ] = None
    claim_selector: Annotated[
        ClusterClaimSelector | None, Field(description="Selects clusters by their claims.")
    ] = None


class ClusterPredicate(OCMModel):
    """A hard requirement on the clusters a Placement may select."""

    required_cluster_selector: Annotated[
        ClusterSelector | None,
        Field(description="The clusters matching this selector pass the predicate."),
    ] = None


class AddOnScore(OCMModel):
    """Where an AddOn prioritizer reads its score."""

    resource_name: Annotated[
        str, Field(description="The name of the AddOnPlacementScore in each cluster namespace.")
    ]
    score_name: Annotated[str, Field(description="The score name inside that AddOnPlacementScore.")]


class ScoreCoordinate(OCMModel):
    """Which prioritizer computes the score: a built-in one or an add-on score."""

    __crd_required__ = ("type",)

    type: Annotated[
        ScoreCoordinateType,
        Field(description="BuiltIn (name it in builtIn) or AddOn (give the score source in addOn)."),
        DEFAULTED,
    ] = "BuiltIn"
    built_in: Annotated[
        str | None,
        Field(
            description=(
                "A built-in prioritizer: Balance, Steady, ResourceAllocatableCPU or "
                "ResourceAllocatableMemory."
            )
        ),
    ] = None
    add_on: Annotated[
        AddOnScore | None, Field(description="The add-on score to use when type is AddOn.")
    ] = None


class PrioritizerConfig(OCMModel):
    """One prioritizer and its weight."""

    # The CRD requires scoreCoordinate, but a Placement stored before that rule existed may lack
    # it; the model accepts such an entry so that the scheduler reports it the way OCM does
    # (Misconfigured "scoreCoordinate field is required", SCHEDULING §4) instead of the whole
    # Placement failing to parse.
    __crd_required__ = ("score_coordinate",)

    score_coordinate: Annotated[
        ScoreCoordinate | None, Field(description="The prioritizer and where its score comes from.")
    ] = None
    weight: Annotated[
        Int32,
        Field(
            ge=-10,
            le=10,
            description=(
                "Weight of this prioritizer, from -10 to 10; 0 disables it and a negative weight "
                "prefers the lowest scores."
            ),
        ),
        DEFAULTED,
    ] = 1


class PrioritizerPolicy(OCMModel):
    """How clusters are ranked."""

    mode: Annotated[
        str,
        Field(
            description=(
                "Additive (the default prioritizers Steady and Balance count unless overridden) or "
                "Exact (only the listed prioritizers count)."
            )
        ),
        DEFAULTED,
    ] = "Additive"
    configurations: Annotated[
        list[PrioritizerConfig], Field(description="The prioritizers and their weights.")
    ] = Field(default_factory=list)


class Toleration(OCMModel):
    """Lets a Placement select clusters carrying a matching taint."""

    key: Annotated[
        str | None,
        Field(
            max_length=316,
            pattern=QUALIFIED_NAME_PATTERN,
            description="The taint key to tolerate; empty with operator Exists tolerates every taint.",
        ),
    ] = None
    operator: Annotated[
        str,
        Field(
            description=(
                "Equal (key and value must match) or Exists (any value of the key matches)."
            )
        ),
        DEFAULTED,
    ] = "Equal"
    value: Annotated[
        str | None, Field(max_length=1024, description="The taint value to match with Equal.")
    ] = None
    effect: Annotated[
        TaintEffect | None,
        Field(description="The taint effect to match; empty matches every effect."),
    ] = None
    toleration_seconds: Annotated[
        Int64 | None,
        Field(
            description=(
                "How long after the taint was added it stays tolerated; unset tolerates it forever."
            )
        ),
    ] = None


class DecisionGroup(OCMModel):
    """A named set of clusters placed in decision groups of its own."""

    group_name: Annotated[
        str,
        Field(
            pattern="^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$",
            description=(
                "The group name, written to the cluster.open-cluster-management.io/decision-group-name "
                "label of its PlacementDecisions."
            ),
        ),
    ]
    group_cluster_selector: Annotated[
        GroupClusterSelector, Field(description="Selects the clusters of this group.")
    ]


class GroupStrategy(OCMModel):
    """How the selected clusters are cut into decision groups."""

    decision_groups: Annotated[
        list[DecisionGroup],
        Field(description="Named groups, filled first; the remaining clusters form unnamed groups."),
    ] = Field(default_factory=list)
    clusters_per_decision_group: Annotated[
        GroupSize,
        Field(
            description=(
                "The largest number of clusters in a decision group: a number, or a percentage of "
                "the selected clusters."
            )
        ),
        DEFAULTED,
    ] = "100%"


class DecisionStrategy(OCMModel):
    """How decisions are divided into groups."""

    group_strategy: Annotated[
        GroupStrategy | None, Field(description="How the selected clusters are grouped.")
    ] = None


class SpreadConstraintsTerm(OCMModel):
    """One failure domain to spread the selected clusters over."""

    topology_key: Annotated[
        str,
        Field(
            max_length=316,
            pattern=TOPOLOGY_KEY_PATTERN,
            description="A label key or a cluster claim name; each distinct value is one topology.",
        ),
    ]
    topology_key_type: Annotated[
        TopologyKeyType, Field(description="Label (a label key) or Claim (a cluster claim name).")
    ]
    max_skew: Annotated[
        Int32,
        Field(
            ge=1,
            description=(
                "The largest difference allowed between the number of selected clusters in a "
                "topology and the smallest such number among its sibling topologies (the "
                "topologies of this key within the same topology of the earlier terms). At least 1."
            ),
        ),
        DEFAULTED,
    ] = 1
    when_unsatisfiable: Annotated[
        WhenUnsatisfiable,
        Field(
            description=(
                "DoNotSchedule: never select a cluster that would exceed maxSkew, nor one without "
                "the key (the Placement then selects fewer clusters and says why). "
                "ScheduleAnyway: prefer the least used topologies but select as many as asked."
            )
        ),
        DEFAULTED,
    ] = "ScheduleAnyway"


class SpreadPolicy(OCMModel):
    """How the selected clusters are spread over topologies."""

    spread_constraints: Annotated[
        list[SpreadConstraintsTerm],
        Field(
            max_length=MAX_SPREAD_TERMS,
            description=(
                "The terms, most important first: each term spreads within every topology of the "
                "terms before it."
            ),
        ),
    ] = Field(default_factory=list)


class PlacementSpec(OCMModel):
    """Which clusters a Placement selects."""

    cluster_sets: Annotated[
        list[str],
        Field(
            description=(
                "Cluster sets to select from; empty means every set bound to the namespace."
            )
        ),
    ] = Field(default_factory=list)
    number_of_clusters: Annotated[
        Int32 | None,
        Field(description="How many clusters to select; unset selects every matching cluster."),
    ] = None
    predicates: Annotated[
        list[ClusterPredicate],
        Field(description="Hard requirements; a cluster must satisfy at least one of them."),
    ] = Field(default_factory=list)
    prioritizer_policy: Annotated[
        PrioritizerPolicy | None, Field(description="How the matching clusters are ranked.")
    ] = None
    tolerations: Annotated[
        list[Toleration], Field(description="Taints this Placement tolerates.")
    ] = Field(default_factory=list)
    decision_strategy: Annotated[
        DecisionStrategy | None, Field(description="How decisions are divided into groups.")
    ] = None
    spread_policy: Annotated[
        SpreadPolicy | None,
        Field(description="How the selected clusters are spread over failure domains."),
    ] = None
    sort_by: Annotated[
        SortBy,
        Field(
            description=(
                "The order of the decisions: ClusterName (by name) or Score (by score, highest "
                "first, then by name), within each decision group and before the remaining "
                "clusters are cut into groups."
            )
        ),
        DEFAULTED,
    ] = "ClusterName"
    score_rate_limit: Annotated[
        str,
        Field(
            pattern=SCORE_RATE_LIMIT_PATTERN,
            description=(
                "How often scores that change nothing else are written to the decisions (for "
                "example 30s, 1m, 1h); a change of the selected clusters is written at once."
            ),
        ),
        DEFAULTED,
    ] = "1m"

    def effective_group_strategy(self) -> GroupStrategy:
        """The group strategy, or the default one (no named groups, 100% per group)."""
        if self.decision_strategy is not None and self.decision_strategy.group_strategy is not None:
            return self.decision_strategy.group_strategy
        return GroupStrategy()


class DecisionGroupStatus(OCMModel):
    """One decision group as scheduled."""

    __keep_empty__ = frozenset({"decisions"})

    decision_group_index: Annotated[Int32, Field(description="The index of the group, from 0.")] = 0
    decision_group_name: Annotated[
        str, Field(description="The group name; empty for groups of remaining clusters.")
    ] = ""
    decisions: Annotated[
        list[str], Field(description="Names of the PlacementDecisions holding this group.")
    ] = Field(default_factory=list)
    cluster_count: Annotated[
        Int32, Field(description="Number of clusters in the group."), DEFAULTED
    ] = 0


class PlacementStatus(OCMModel):
    """The outcome of scheduling a Placement."""

    number_of_selected_clusters: Annotated[
        Int32, Field(description="How many clusters are selected.")
    ] = 0
    decision_groups: Annotated[
        list[DecisionGroupStatus], Field(description="The decision groups, by index.")
    ] = Field(default_factory=list)
    conditions: ConditionList = Field(default_factory=list)
    last_score_update_time: Annotated[
        Time | None,
        Field(description="When the scores in the decisions were last written."),
    ] = None


class Placement(OCMObject):
    """Selects managed clusters from the cluster sets bound to its namespace; the result is
    written to PlacementDecisions labelled with the Placement's name."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="Placement",
        plural="placements",
        singular="placement",
        scope="Namespaced",
        printer_columns=(
            PrinterColumn(
                "Succeeded", "string", '.status.conditions[?(@.type=="PlacementSatisfied")].status'
            ),
            PrinterColumn(
                "Reason", "string", '.status.conditions[?(@.type=="PlacementSatisfied")].reason'
            ),
            PrinterColumn("SelectedClusters", "integer", ".status.numberOfSelectedClusters"),
        ),
    )

    spec: Annotated[PlacementSpec, Field(description="Which clusters to select.")]
    status: Annotated[PlacementStatus, Field(description="The outcome of scheduling.")] = Field(
        default_factory=PlacementStatus
    )


class ClusterDecision(OCMModel):
    """One selected cluster."""

    cluster_name: Annotated[str, Field(description="The name of the selected ManagedCluster.")]
    reason: Annotated[str, Field(description="Why the cluster was selected; may be empty.")]
    score: Annotated[
        Int64 | None, Field(description="The cluster's total score, when reported.")
    ] = None


class PlacementDecisionStatus(OCMModel):
    """The clusters of one decision page."""

    __keep_empty__ = frozenset({"decisions"})

    decisions: Annotated[
        list[ClusterDecision], Field(description="The selected clusters of this page, by name.")
    ]


class PlacementDecision(OCMObject):
    """One page (at most 100 clusters) of a Placement's decisions, labelled
    cluster.open-cluster-management.io/placement=<placement name>."""

    KIND = KindInfo(
        group=GROUP,
        version=VERSION,
        kind="PlacementDecision",
        plural="placementdecisions",
        singular="placementdecision",
        scope="Namespaced",
    )

    status: Annotated[
        PlacementDecisionStatus, Field(description="The decisions of this page.")
    ] = Field(default_factory=lambda: PlacementDecisionStatus(decisions=[]))
