"""The placement controller: declarations and the pass around the pure scheduler
(docs/behaviour/scheduling.md §9).

It watches ManagedClusters, AddOnPlacementScores, ManagedClusterSets, ManagedClusterSetBindings,
Placements and PlacementDecisions, all through list-and-watch caches (kopf's per-event work, two
deep copies of every decision page among it, cost more CPU than the scheduling itself). Every
change re-queues exactly the Placements it can affect (``triggers``). Every Placement is also
looked at every 10 minutes (OCM's informer resync), those with AddOn prioritizers every 5.

A pass of one Placement is a chain of steps:

1. read the Placement; one the models reject gets PlacementMisconfigured and nothing else;
2. schedule it at ``runtime.clock()`` on the shared snapshot (``world.py``, ``scheduler.schedule``);
3. tell a Warning for each part of the spec the scheduler ignores (``warnings``), once per situation;
4. a pass that cannot compute an eligible set's members writes no decisions (as OCM), says why in
   the status and backs off;
5. write the decision pages and their events, then the status if it changed (``binding.py``);
6. look again when a toleration runs out or an AddOn score expires.

Placements' ManagedClusterSetBindings are read, never written: their ``Bound`` condition belongs
to OCM's registration hub controller. The debug endpoint is ``debug.py``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.constants import CONDITION_PLACEMENT_MISCONFIGURED, REASON_MISCONFIGURED
from ocm_rollout.api.meta import InvalidObject
from ocm_rollout.client.kube import (
    ADDON_PLACEMENT_SCORES,
    JSON,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Conflict,
    NotFound,
)
from ocm_rollout.controllers.common.conditions import set_status_condition
from ocm_rollout.controllers.common.wire import labels_of, name_of, namespace_of
from ocm_rollout.controllers.placement.binding import Binder
from ocm_rollout.controllers.placement.debug import debug_routes
from ocm_rollout.controllers.placement.decision_cache import SharedDecisions
from ocm_rollout.controllers.placement.explain import debug_result
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, schedule
from ocm_rollout.controllers.placement.snapshot import PLACEMENT_LABEL
from ocm_rollout.controllers.placement.triggers import (
    PlacementRef,
    placements_for_binding,
    placements_for_cluster,
    placements_for_score,
    placements_for_sets,
)
from ocm_rollout.controllers.placement.warnings import untold
from ocm_rollout.controllers.placement.world import World
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.events import WARNING, Told
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE, Outcome, after, back_off
from ocm_rollout.controllers.runtime.overlay import key_of
from ocm_rollout.controllers.runtime.shell import LIST_WATCH, Resync, Runtime, Trigger

log = logging.getLogger(__name__)

COMPONENT = "placementController"
QUEUE = "placement"
# The informers' resync (every Placement), and the AddOn-score resync.
RESYNC_SECONDS = 600.0
ADDON_RESYNC_SECONDS = 300.0
# Requeue times further away are left to the resync.
MAX_REQUEUE_SECONDS = 24 * 3600.0
# A score is still valid at exactly validUntil: look again just after it.
SCORE_EXPIRY_MARGIN = timedelta(milliseconds=1)
MAX_MESSAGE = 32768


class PlacementController:
    """Declares the placement controller on ``runtime``; one pass per Placement key."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.queue = runtime.queue(
            QUEUE, self.reconcile,
            resync=[Resync(RESYNC_SECONDS, self._all_keys), Resync(ADDON_RESYNC_SECONDS, self._addon_keys)],
        )  # fmt: skip
        on = self._trigger
        clusters = runtime.watch(MANAGED_CLUSTERS, source=LIST_WATCH, index=self._cluster_changed, triggers=[on(self._of_cluster)])
        sets = runtime.watch(MANAGED_CLUSTER_SETS, source=LIST_WATCH, index=self._topology_changed, triggers=[on(self._of_set)])
        bindings = runtime.watch(
            MANAGED_CLUSTER_SET_BINDINGS, source=LIST_WATCH, index=self._topology_changed, triggers=[on(self._of_binding)]
        )
        placements = runtime.watch(PLACEMENTS, source=LIST_WATCH, index=self._placement_changed, triggers=[on(self._of_placement)])
        decisions = runtime.watch(
            PLACEMENT_DECISIONS, source=LIST_WATCH, index=self._decision_changed, triggers=[on(self._of_decision)],
            transform=SharedDecisions(),
        )
        scores = runtime.watch(ADDON_PLACEMENT_SCORES, source=LIST_WATCH, index=self._changed, triggers=[on(self._of_score)])
        self.world = World(clusters, sets, bindings, placements, decisions, scores)
        self.binder = Binder(runtime, self.world, runtime.recorder(COMPONENT))
        self.told = Told()
        # When this controller last wrote scores per Placement key (scoreRateLimit).
        self.score_writes: dict[str, datetime] = {}
        runtime.routes(debug_routes(runtime.synced.is_set, self._lookup, self.debug))

    # -- what changes re-queue -----------------------------------------------------------------
    def _trigger(self, keys: Callable[[str, JSON, JSON | None], Iterable[str]]) -> Trigger[str]:
        return Trigger(self.queue, keys)

    def _changed(self, event: str, obj: JSON, previous: JSON | None) -> None:
        self.world.changed()

    def _decision_changed(self, event: str, obj: JSON, previous: JSON | None) -> None:
        self.world.decision_changed(key_of(obj))

    def _topology_changed(self, event: str, obj: JSON, previous: JSON | None) -> None:
        self.world.changed(topology=True)

    def _cluster_changed(self, event: str, obj: JSON, previous: JSON | None) -> None:
        self.world.changed()
        if event == "DELETED":
            self.world.memo.forget("ClusterView", obj)

    def _placement_changed(self, event: str, obj: JSON, previous: JSON | None) -> None:
        self.world.placements_changed()
        if event == "DELETED":
            key = "/".join((namespace_of(obj), name_of(obj)))
            self.world.memo.forget("Placement", obj)
            self.score_writes.pop(key, None)
            self.told.forget(key)

    def _of_cluster(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        old = None if previous is None else labels_of(previous)
        world = self.world
        return sorted(placements_for_cluster(world.topology(), world.placement_index(), old, labels_of(obj)))

    def _of_set(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        return sorted(placements_for_sets(self.world.topology(), self.world.placement_index(), [name_of(obj)]))

    def _of_binding(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        return sorted(placements_for_binding(self.world.placement_index(), namespace_of(obj), name_of(obj)))

    def _of_placement(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        return [f"{namespace_of(obj)}/{name_of(obj)}"]

    def _of_decision(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        label = labels_of(obj).get(PLACEMENT_LABEL)
        return [] if label is None else [f"{namespace_of(obj)}/{label}"]

    def _of_score(self, event: str, obj: JSON, previous: JSON | None) -> Iterable[str]:
        cluster = self.world.clusters.get(namespace_of(obj))
        labels = None if cluster is None else labels_of(cluster)
        return sorted(placements_for_score(self.world.topology(), self.world.placement_index(), labels, name_of(obj)))

    def _all_keys(self) -> list[str]:
        # The resync also reads every decision page again: whatever an event may have missed
        # is in the index by the next pass.
        self.world.decision_changed()
        return [f"{namespace_of(body)}/{name_of(body)}" for body in self.world.placements]

    def _addon_keys(self) -> list[str]:
        keys = []
        for body in self.world.placements:
            placement = self.world.parse(Placement, body)
            if placement is not None and PlacementRef.of(placement).addon_resources:
                keys.append(f"{namespace_of(body)}/{name_of(body)}")
        return keys

    # -- the pass ------------------------------------------------------------------------------
    async def reconcile(self, key: str) -> Outcome:
        namespace, _, name = key.partition("/")
        body = self.world.placements.get(name, namespace)
        if body is None:
            return DONE
        placement = self.world.parse(Placement, body)
        if placement is None:
            await self._report_invalid(body)
            return DONE
        now = self.runtime.clock()
        result = self._schedule(key, placement, now)
        if result.skipped is not None:
            return DONE
        await self._warn(key, body, result)
        if result.aborted is not None:
            return await self._aborted(key, body, placement, result)
        try:
            await self.binder.bind(body, placement, result)
        except Conflict:
            return CONFLICT
        if result.scores_written:
            self.score_writes[key] = now
        if not await self.binder.write_status(body, placement, result):
            return CONFLICT
        return after(self._requeue_seconds(result, now))

    def _schedule(self, key: str, placement: Placement, now: datetime) -> ScheduleResult:
        started = time.perf_counter()
        result = schedule(self._with_own_score_update(key, placement), self.world.snapshot(), now)
        metrics.observe_scheduling(time.perf_counter() - started)
        return result

    async def _aborted(self, key: str, body: JSON, placement: Placement, result: ScheduleResult) -> Outcome:
        """No eligible set could be resolved: say so in the status and back off (writes no decision)."""
        log.warning("placement not scheduled", extra={"key": key, "error": result.aborted})
        if not await self.binder.write_status(body, placement, result):
            return CONFLICT
        return back_off(str(result.aborted))

    def _with_own_score_update(self, key: str, placement: Placement) -> Placement:
        """The Placement with the later of its stored ``lastScoreUpdateTime`` and this
        controller's own last score write, so scores never go out twice within scoreRateLimit."""
        mine = self.score_writes.get(key)
        stored = placement.status.last_score_update_time
        if mine is None or (stored is not None and stored >= mine):
            return placement
        status = placement.status.model_copy(update={"last_score_update_time": mine})
        return placement.model_copy(update={"status": status})

    @staticmethod
    def _requeue_seconds(result: ScheduleResult, now: datetime) -> float | None:
        times = [t for t in (result.toleration_requeue_at, result.scores_held_until) if t is not None]
        if result.score_expiry_at is not None:
            times.append(result.score_expiry_at + SCORE_EXPIRY_MARGIN)
        if not times:
            return None
        return max(0.0, min((min(times) - now).total_seconds(), MAX_REQUEUE_SECONDS))

    async def _report_invalid(self, body: JSON) -> None:
        """A Placement the models reject: say so in PlacementMisconfigured, touch nothing else."""
        try:
            Placement.parse(body)
        except InvalidObject as exc:
            message = str(exc)
        else:
            return
        conditions = list((body.get("status") or {}).get("conditions") or [])
        now = self.runtime.clock()
        if set_status_condition(conditions, CONDITION_PLACEMENT_MISCONFIGURED, "True", REASON_MISCONFIGURED, message[:MAX_MESSAGE], now):
            with contextlib.suppress(NotFound):
                patch = {"status": {"conditions": conditions}}
                await self.runtime.writes.patch(self.world.placements, body, patch, subresource="status")

    async def _warn(self, key: str, body: JSON, result: ScheduleResult) -> None:
        """A Warning event for each spec warning of the pass not told already."""
        fresh, told = untold(result.warnings, self.told.get(key, "spec-warnings", frozenset()))
        self.told.put(key, "spec-warnings", told)
        for warning in fresh:
            await self.binder.tell(body, None, warning.reason_action, warning.message, WARNING)

    # -- debug ---------------------------------------------------------------------------------
    def _lookup(self, namespace: str, name: str) -> JSON | None:
        return self.world.placements.get(name, namespace)

    def debug(self, placement: Placement) -> tuple[int, JSON]:
        result = schedule(placement, self.world.snapshot(), self.runtime.clock(), honour_skip=False)
        return (500 if result.aborted is not None else 200), debug_result(result)

