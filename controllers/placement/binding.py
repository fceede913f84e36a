"""Writing a scheduled Placement: its PlacementDecision pages, their events, and its status.

``bind`` compares the wanted pages with the stored ones (``decisions.plan_decision_writes``: per
page create, else patch status, else patch labels; then delete surplus pages, OCM's order) and
sends each write, then tells DecisionCreate / DecisionUpdate (with ScoreUpdate and SpreadUpdate) /
DecisionDelete about each page it wrote (these events sent together once the writes end).
``write_status`` patches the Placement status only when it changed, with the Placement's
resourceVersion as precondition. Every write goes through the
runtime (``controllers/runtime/writes.py``), so the next pass reads it at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.constants import (
    EVENT_DECISION_CREATE,
    EVENT_DECISION_DELETE,
    EVENT_DECISION_UPDATE,
    EVENT_SCORE_UPDATE,
    EVENT_SPREAD_UPDATE,
)
from ocm_rollout.client.kube import JSON, PLACEMENT_DECISIONS, PLACEMENTS
from ocm_rollout.controllers.common.wire import name_of, namespace_of
from ocm_rollout.controllers.placement import decisions as pages
from ocm_rollout.controllers.placement.scheduler import ScheduleResult
from ocm_rollout.controllers.placement.world import World
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING, EventRecorder, reference
from ocm_rollout.controllers.runtime.shell import Runtime


@dataclass
class Binder:
    """The writes of one placement controller."""

    runtime: Runtime
    world: World
    recorder: EventRecorder

    async def tell(
        self, body: JSON, decision: str | None, reason_action: tuple[str, str], message: str, event_type: str = NORMAL
    ) -> None:
        reason, action = reason_action
        related = None if decision is None else reference(PLACEMENT_DECISIONS, decision, namespace_of(body))
        await self.recorder.record(
            body, kind=PLACEMENTS, reason=reason, action=action, message=message, event_type=event_type,
            related=related, now=self.runtime.clock(),
        )

    def stored_pages(self, placement: Placement) -> dict[str, JSON]:
        """The Placement's pages as this controller knows them (its own writes included)."""
        return {name_of(shown): shown for shown in self.world.pages_labelled(placement.namespace, placement.name)}

    async def bind(self, body: JSON, placement: Placement, result: ScheduleResult) -> None:
        """Send the writes one after the other (OCM's order); the events of the writes made are
        sent together once the writes end, also when one fails: an event never holds up the
        next write, and each Event is still built, time included, in the order of its write."""
        desired = pages.desired_decisions(placement, result.pages, result.decision_scores)
        existing = self.stored_pages(placement)
        for page in desired:
            name = page["metadata"]["name"]
            if name not in existing:
                other = self.world.decisions.get(name, placement.namespace)
                if other is not None:
                    existing[name] = other
        made: list[pages.DecisionWrite] = []
        try:
            for write in pages.plan_decision_writes(desired, existing):
                await self.apply(placement, write, existing.get(write.name))
                made.append(write)
        finally:
            await self.tell_writes(body, placement, result, made)

    async def apply(self, placement: Placement, write: pages.DecisionWrite, before: JSON | None) -> None:
        decisions, writes = self.world.decisions, self.runtime.writes
        target = before or {"metadata": {"name": write.name, "namespace": placement.namespace}}
        try:
            if write.action == "create":
                await writes.create(decisions, write.body, placement.namespace)
            elif write.action == "status":
                await writes.patch(decisions, target, write.body, subresource="status")
            elif write.action == "labels":
                await writes.patch(decisions, target, write.body)
            elif write.action == "delete":
                await writes.delete(decisions, target)
        finally:
            self.world.decision_changed((placement.namespace, write.name))

    async def tell_writes(
        self, body: JSON, placement: Placement, result: ScheduleResult, made: list[pages.DecisionWrite]
    ) -> None:
        told: list[Coroutine[Any, Any, None]] = []
        for write in made:
            told.extend(self.write_events(body, placement, result, write))
        if told:
            # Tasks start in list order, so each Event is built (name, time) in the writes' order.
            await asyncio.gather(*told)

    def write_events(
        self, body: JSON, placement: Placement, result: ScheduleResult, write: pages.DecisionWrite
    ) -> list[Coroutine[Any, Any, None]]:
        """The events telling about one write, not yet sent."""
        name = write.name
        if write.action == "create":
            return [self.tell(body, name, EVENT_DECISION_CREATE, pages.created_message(name, placement))]
        if write.action == "status":
            message, warning = pages.updated_message(name, placement, result.status)
            told = [self.tell(body, name, EVENT_DECISION_UPDATE, message, WARNING if warning else NORMAL)]
            if result.scores:
                told.append(self.tell(body, name, EVENT_SCORE_UPDATE, pages.score_note(result.scores)))
            if result.spread is not None:
                told.append(self.tell(body, name, EVENT_SPREAD_UPDATE, pages.spread_note(result.spread)))
            return told
        if write.action == "delete":
            return [self.tell(body, name, EVENT_DECISION_DELETE, pages.deleted_message(name, placement))]
        return []

    async def write_status(self, body: JSON, placement: Placement, result: ScheduleResult) -> bool:
        """Patch the status if it changed; False on a conflict (the newer Placement re-queues)."""
        new = result.new_status
        if new is None or new == placement.status:
            return True
        status = new.to_wire()
        status.setdefault("decisionGroups", [])
        status.setdefault("conditions", [])
        written = await self.runtime.writes.patch_fenced(self.world.placements, body, {"status": status}, subresource="status")
        return written is not None

