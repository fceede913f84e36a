"""The Events of a verified rollout (docs/behaviour/validation.md):

- ``ValidationFailed`` (Warning) when a pass decides that a cluster failed its validation: the
  placement, the cluster, and each failing check with what it observed (or the plugin's answer);
  told by the pass that stored the verdict, so once per cluster and revision;
- ``RolloutAwaitingPromotion`` (Normal) when a decision group starts waiting at a promotion gate;
- ``RolloutPromoted`` (Normal) when the group that waited may proceed.

Pure: the caller keeps ``memory`` (placement -> (revision, index of the group told waiting))
between passes; losing it (a restart) only means a wait is told once more and its promotion not
at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocm_rollout.api.constants import (
    EVENT_ROLLOUT_AWAITING_PROMOTION,
    EVENT_ROLLOUT_PROMOTED,
)
from ocm_rollout.controllers.common.rollout_text import RolloutEvent
from ocm_rollout.controllers.rollout.verification_pass import validation_failed_events
from ocm_rollout.controllers.workset.plan import DeployPlan

Memory = Mapping[str, tuple[str, int]]

__all__ = ["promotion_events", "validation_failed_events"]


def promotion_events(plan_u: DeployPlan, revision: str, memory: Memory) -> tuple[list[RolloutEvent], dict[str, tuple[str, int]]]:
    """The promotion events of the update revision's plan, and the new memory."""
    events: list[RolloutEvent] = []
    remembered: dict[str, tuple[str, int]] = {}
    for ref in plan_u.refs:
        gate = ref.promotion
        if gate is None:
            continue
        told = memory.get(ref.name)
        waiting = gate.waiting
        if told is not None and told[0] == revision and (waiting is None or waiting.group_index != told[1]):
            events.append(RolloutEvent(
                EVENT_ROLLOUT_PROMOTED,
                f"placement {ref.name}: decision group {told[1]} promoted; revision {revision} rolls out to it",
            ))
        if waiting is not None:
            remembered[ref.name] = (revision, waiting.group_index)
            if told != (revision, waiting.group_index):
                events.append(RolloutEvent(EVENT_ROLLOUT_AWAITING_PROMOTION, gate.message(ref.name)))
    return events, remembered
