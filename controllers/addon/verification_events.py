"""The Events of a ClusterManagementAddOn's verified rollout (docs/behaviour/validation.md), on the
CMA:

- ``ValidationFailed`` (Warning) when a pass decides that an add-on failed its validation: the
  placement, the cluster, and each failing check with what it observed (or the plugin's answer);
  told by the pass that stored the verdict on the MCA, so once per add-on and revision
  (``rollout.verification_pass``, the ManifestWorkReplicaSet's wording);
- ``RolloutAwaitingPromotion`` (Normal) when a decision group starts waiting at a placement's
  promotion gate, naming the command that promotes it;
- ``RolloutPromoted`` (Normal) when the group that waited may proceed.

Pure: the caller keeps ``memory`` (placement ``<namespace>/<name>`` -> (revision of its desired
configurations, index of the group told waiting)) between passes; losing it (a restart) only
means a wait is told once more and its promotion not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ocm_rollout.api.constants import EVENT_ROLLOUT_AWAITING_PROMOTION, EVENT_ROLLOUT_PROMOTED
from ocm_rollout.controllers.addon.configrollout import NodeReport
from ocm_rollout.controllers.addon.verification_status import promote_command
from ocm_rollout.controllers.common.rollout_text import RolloutEvent
from ocm_rollout.controllers.rollout.verification_pass import validation_failed_events

__all__ = ["Memory", "promotion_events", "validation_failed_events"]

Memory = Mapping[str, tuple[str, int]]


def promotion_events(cma: str, nodes: Sequence[NodeReport], memory: Memory) -> tuple[list[RolloutEvent], dict[str, tuple[str, int]]]:
    """The promotion events of the placements' gates on this pass, and the new memory."""
    events: list[RolloutEvent] = []
    waits: dict[str, tuple[str, int]] = {}
    for node in nodes:
        if node.promotion is None or node.error is not None:
            continue
        now_waiting = node.promotion.waiting
        before = memory.get(node.key)
        if before is not None and before[0] == node.revision and (now_waiting is None or now_waiting.group_index != before[1]):
            events.append(RolloutEvent(
                EVENT_ROLLOUT_PROMOTED,
                f"placement {node.key}: decision group {before[1]} promoted; "
                f"configurations {node.revision} roll out to it",
            ))
        if now_waiting is None:
            continue
        waits[node.key] = (node.revision, now_waiting.group_index)
        if before != waits[node.key]:
            message = node.promotion.message(node.key, promote_command(cma, node.key))
            events.append(RolloutEvent(EVENT_ROLLOUT_AWAITING_PROMOTION, message))
    return events, waits
