"""The Placement status a pass produces (spec §7): counts, groups and the two conditions.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ocm_rollout.api import constants as C
from ocm_rollout.api.cluster_v1beta1 import DecisionGroupStatus, Placement, PlacementStatus
from ocm_rollout.api.meta import Condition, set_condition
from ocm_rollout.controllers.placement.filters import ERROR, MISCONFIGURED, Status
from ocm_rollout.controllers.placement.groups import DecisionGroupResult, DecisionPage

MISCONFIGURED_TYPE = C.CONDITION_PLACEMENT_MISCONFIGURED
SATISFIED_TYPE = C.CONDITION_PLACEMENT_SATISFIED


@dataclass(frozen=True)
class ConditionSpec:
    type: str
    status: str
    reason: str
    message: str

    def condition(self, now: datetime) -> Condition:
        return Condition(
            type=self.type,
            status=self.status,  # type: ignore[arg-type]
            reason=self.reason,
            message=self.message,
            last_transition_time=now,
        )


def misconfigured_condition(status: Status) -> ConditionSpec:
    if status.code == MISCONFIGURED:
        return ConditionSpec(MISCONFIGURED_TYPE, "True", C.REASON_MISCONFIGURED, f"{status.plugin}:{status.message}")
    return ConditionSpec(MISCONFIGURED_TYPE, "False", C.REASON_SUCCEEDCONFIGURED, "Placement configurations check pass")


def satisfied_condition(
    cluster_sets_in_spec: Sequence[str],
    eligible_sets: Sequence[str],
    bindings: int,
    available: int,
    selected: int,
    unscheduled: int,
    status: Status,
    held_back: str = "",
) -> ConditionSpec:
    """PlacementSatisfied (§7); ``held_back`` says which spread terms kept clusters out."""
    if bindings == 0:
        return ConditionSpec(
            SATISFIED_TYPE,
            "False",
            C.REASON_NO_MANAGED_CLUSTER_SET_BINDINGS,
            "No valid ManagedClusterSetBindings found in placement namespace",
        )
    if not eligible_sets:
        return ConditionSpec(
            SATISFIED_TYPE,
            "False",
            C.REASON_NO_INTERSECTION,
            f"None of ManagedClusterSets [{','.join(cluster_sets_in_spec)}] is bound to placement namespace",
        )
    if available == 0:
        return ConditionSpec(
            SATISFIED_TYPE,
            "False",
            C.REASON_ALL_MANAGED_CLUSTER_SETS_EMPTY,
            f"All ManagedClusterSets [{','.join(eligible_sets)}] have no member ManagedCluster",
        )
    if status.code == ERROR:
        return ConditionSpec(SATISFIED_TYPE, "False", C.REASON_NOT_ALL_DECISIONS_SCHEDULED, status.message)
    if selected == 0:
        return ConditionSpec(
            SATISFIED_TYPE, "False", C.REASON_NO_MANAGED_CLUSTER_MATCHED, "No ManagedCluster matches any of the cluster predicate"
        )
    why = f": {held_back}" if held_back else ""
    if unscheduled == 0:
        message = "All cluster decisions scheduled"
        if held_back:
            message += f"; spreadPolicy kept other matching clusters out{why}"
        return ConditionSpec(SATISFIED_TYPE, "True", C.REASON_ALL_DECISIONS_SCHEDULED, message)
    return ConditionSpec(
        SATISFIED_TYPE, "False", C.REASON_NOT_ALL_DECISIONS_SCHEDULED, f"{unscheduled} cluster decisions unscheduled{why}"
    )


def group_statuses(groups: Sequence[DecisionGroupResult], pages: Sequence[DecisionPage]) -> list[DecisionGroupStatus]:
    out = []
    for group in groups:
        out.append(
            DecisionGroupStatus(
                decision_group_index=group.index,
                decision_group_name=group.name,
                decisions=[p.name for p in pages if p.group_index == group.index],
                cluster_count=len(group.clusters),
            )
        )
    return out


def new_status(
    placement: Placement,
    *,
    selected: int,
    groups: Sequence[DecisionGroupResult],
    pages: Sequence[DecisionPage],
    conditions: Sequence[ConditionSpec],
    now: datetime,
    last_score_update: datetime | None = None,
) -> PlacementStatus:
    """The Placement's next status: conditions merged into the existing ones by type."""
    merged = [c.model_copy() for c in placement.status.conditions]
    generation = placement.metadata.generation
    for spec in conditions:
        condition = spec.condition(now)
        if generation:
            # Which spec this status answers (OCM leaves it 0): a rollout is not complete before
            # its Placement has been scheduled for the current spec.
            condition = condition.model_copy(update={"observed_generation": generation})
        set_condition(merged, condition, now)
    return PlacementStatus(
        number_of_selected_clusters=selected,
        decision_groups=group_statuses(groups, pages),
        conditions=merged,
        last_score_update_time=last_score_update,
    )


def misconfigured_status(placement: Placement, condition: ConditionSpec, now: datetime) -> PlacementStatus:
    """The Placement's status with only ``condition`` (PlacementMisconfigured) changed: a pass that
    ended before deciding anything keeps the decisions and counts it reported before."""
    merged = [c.model_copy() for c in placement.status.conditions]
    written = condition.condition(now)
    if placement.metadata.generation:
        written = written.model_copy(update={"observed_generation": placement.metadata.generation})
    set_condition(merged, written, now)
    return placement.status.model_copy(update={"conditions": merged})
