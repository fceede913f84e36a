"""The placement controller: the kopf shell around the pure scheduler (docs/behaviour/scheduling.md §9).

Informers cache ManagedClusters, ManagedClusterSets, ManagedClusterSetBindings, Placements,
PlacementDecisions and AddOnPlacementScores. Every change re-queues exactly the Placements it
can affect (``triggers``), through an in-process work queue. A pass of one Placement:

1. builds (or reuses) one snapshot of the caches, every object parsed once per
   resourceVersion through the api/ models;
2. schedules the Placement at ``context.clock()`` (``scheduler.schedule``);
3. writes the PlacementDecision pages in OCM's order (create, status patch, label patch,
   delete surplus) with DecisionCreate / DecisionUpdate / ScoreUpdate / DecisionDelete events;
4. patches the Placement status only when it changed (optimistic concurrency);
5. asks to be looked at again when a toleration runs out or an AddOn score expires;
6. records a Warning event for each part of the spec the scheduler ignores as OCM does
   (``warnings``: a toleration with an unknown operator, a built-in prioritizer named twice...),
   once per situation (the memory of what was told lives here; a restart tells it once more).

A pass that cannot compute an eligible ManagedClusterSet's members (a set with a bad selector)
writes no decisions, as OCM; unlike OCM, which only logs it, it says why in
PlacementMisconfigured, and tries again with back-off.

Placements are also re-run every 10 minutes (OCM's informer resync), and those with AddOn
prioritizers every 5 minutes. It reads ManagedClusterSetBindings but never writes their
status: their ``Bound`` condition belongs to OCM's registration hub controller (played by the
simulation in the local hub), and scheduling does not consult it (docs/behaviour/scheduling.md §2.1).

The debug endpoint (§10) is published as aiohttp routes under
``context.extras["http_routes"]``; ``ocm-rollout run``/``up`` serve them on the debug address.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import kopf
from aiohttp import web

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.constants import (
    CONDITION_PLACEMENT_MISCONFIGURED,
    EVENT_DECISION_CREATE,
    EVENT_DECISION_DELETE,
    EVENT_DECISION_UPDATE,
    EVENT_SCORE_UPDATE,
    EVENT_SPREAD_UPDATE,
    REASON_MISCONFIGURED,
)
from ocm_rollout.api.meta import Condition, InvalidObject, OCMObject, set_condition
from ocm_rollout.client.kube import (
    ADDON_PLACEMENT_SCORES,
    EVENTS,
    JSON,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Conflict,
    KubeError,
    NotFound,
)
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.controllers.common.wire import meta
from ocm_rollout.controllers.placement import decisions as pages
from ocm_rollout.controllers.placement.explain import debug_result
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, schedule
from ocm_rollout.controllers.placement.snapshot import PLACEMENT_LABEL, ClusterView, Snapshot
from ocm_rollout.controllers.placement.triggers import (
    PlacementIndex,
    PlacementRef,
    Topology,
    placements_for_binding,
    placements_for_cluster,
    placements_for_score,
    placements_for_sets,
)
from ocm_rollout.controllers.placement.warnings import untold
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING, build_event
from ocm_rollout.controllers.runtime.informer import Informer, InformerSet
from ocm_rollout.controllers.runtime.operator import HTTP_ROUTES_EXTRA
from ocm_rollout.controllers.runtime.registry import ControllerContext

log = logging.getLogger(__name__)

COMPONENT = "placementController"
DEBUG_PATH = "/debug/placements"
# The informers' resync (every Placement), and the AddOn-score resync.
RESYNC_SECONDS = 600.0
ADDON_RESYNC_SECONDS = 300.0
# Requeue times further away are left to the resync.
MAX_REQUEUE_SECONDS = 24 * 3600.0
# A score is still valid at exactly validUntil: look again just after it.
SCORE_EXPIRY_MARGIN = timedelta(milliseconds=1)
CONFLICT_RETRY_SECONDS = 0.5
MAX_DEBUG_BODY = 1024 * 1024

T = TypeVar("T", bound=OCMObject)
_Key = tuple[str, str]


def _key_of(obj: JSON) -> _Key:
    found = meta(obj)
    return (str(found.get("namespace") or ""), str(found.get("name") or ""))


class _Memo:
    """Parsed models by object key, re-parsed only when the resourceVersion changes."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, _Key], tuple[str, Any]] = {}

    def get(self, kind: str, body: JSON, build: Callable[[JSON], Any]) -> Any:
        key = (kind, _key_of(body))
        version = str(meta(body).get("resourceVersion") or "")
        cached = self.entries.get(key)
        if cached is not None and cached[0] == version and version:
            return cached[1]
        try:
            value = build(body)
        except InvalidObject as exc:
            log.warning("ignoring an invalid object", extra={"kind": kind, "key": "/".join(key[1]), "error": str(exc)})
            value = None
        self.entries[key] = (version, value)
        return value

    def forget(self, kind: str, body: JSON) -> None:
        self.entries.pop((kind, _key_of(body)), None)


class _OwnWrites:
    """This controller's own PlacementDecision writes, overlaid on the cache until it catches up
    (so a pass never plans, or scores Steady and Balance, from a view older than its writes)."""

    def __init__(self) -> None:
        self.written: dict[_Key, tuple[str | None, JSON]] = {}
        self.deleted: dict[_Key, str] = {}

    def wrote(self, before: JSON | None, after: JSON) -> None:
        key = _key_of(after)
        self.written[key] = (None if before is None else str(meta(before).get("resourceVersion")), after)
        self.deleted.pop(key, None)

    def delete_requested(self, obj: JSON) -> None:
        key = _key_of(obj)
        self.written.pop(key, None)
        self.deleted[key] = str(meta(obj).get("uid") or "")

    def view(self, cached: JSON | None, key: _Key) -> JSON | None:
        written = self.written.get(key)
        if written is not None:
            before, body = written
            if cached is None:
                if before is None:
                    return body
                del self.written[key]
            elif str(meta(cached).get("resourceVersion")) == before:
                return body
            else:
                del self.written[key]
        uid = self.deleted.get(key)
        if uid is not None:
            if cached is None or str(meta(cached).get("uid")) != uid:
                del self.deleted[key]
            else:
                return None
        return cached

    def pending_creates(self) -> list[tuple[_Key, JSON]]:
        return [(key, body) for key, (before, body) in self.written.items() if before is None]


class PlacementController:
    """State and handlers of one running placement controller."""

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self.kube = context.kube
        self.queue: WorkQueue[str] = WorkQueue("placement", on_depth=context.on_queue_depth)
        self.informers: InformerSet | None = None
        self.clusters: Informer | None = None
        self.sets: Informer | None = None
        self.bindings: Informer | None = None
        self.placements: Informer | None = None
        self.decisions: Informer | None = None
        self.scores: Informer | None = None
        self.memo = _Memo()
        self.own = _OwnWrites()
        self.cluster_labels: dict[str, dict[str, str]] = {}
        self._snapshot: Snapshot | None = None
        self._topology: Topology | None = None
        self._placement_index: PlacementIndex | None = None
        self.tasks: list[asyncio.Task[None]] = []
        # When this controller last wrote scores per Placement key (scoreRateLimit).
        self.score_writes: dict[str, datetime] = {}
        # Passes per Placement key (for tests and troubleshooting).
        self.passes: Counter[str] = Counter()
        # Placement key -> the messages of the spec warnings already recorded as events.
        self.warnings_told: dict[str, frozenset[str]] = {}

    # -- wiring ------------------------------------------------------------------------------
    def setup(self, registry: kopf.OperatorRegistry) -> None:
        informers = InformerSet(registry, prefix="placement")
        self.informers = informers
        self.clusters = informers.watch(MANAGED_CLUSTERS, self.on_cluster, kube=self.kube)
        self.sets = informers.watch(MANAGED_CLUSTER_SETS, self.on_set)
        self.bindings = informers.watch(MANAGED_CLUSTER_SET_BINDINGS, self.on_binding)
        self.placements = informers.watch(PLACEMENTS, self.on_placement)
        self.decisions = informers.watch(PLACEMENT_DECISIONS, self.on_decision)
        self.scores = informers.watch(ADDON_PLACEMENT_SCORES, self.on_score, kube=self.kube)

        @kopf.on.startup(registry=registry, id="placement_start_workers")
        async def start_workers(**_: Any) -> None:
            workers = self.context.workers
            on_result = self.context.on_reconcile
            self.tasks = [
                asyncio.create_task(
                    run_workers(self.queue, self.reconcile, workers=workers, on_result=on_result),
                    name="placement-workers",
                ),
                asyncio.create_task(self._resync(), name="placement-resync"),
            ]

        @kopf.on.cleanup(registry=registry, id="placement_stop_workers")
        async def stop_workers(**_: Any) -> None:
            self.queue.shut_down()
            for task in self.tasks:
                task.cancel()
            for task in self.tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

        routes = self.context.extras.setdefault(HTTP_ROUTES_EXTRA, [])
        if isinstance(routes, list):
            routes.extend(debug_routes(self))

    # -- parsing and the snapshot --------------------------------------------------------------
    def _parse(self, model: type[T], body: JSON) -> T | None:
        result: T | None = self.memo.get(model.KIND.kind, body, model.parse)
        return result

    def _cluster_view(self, body: JSON) -> ClusterView | None:
        def build(obj: JSON) -> ClusterView:
            return ClusterView.of(ManagedCluster.parse(obj), source=obj)

        view: ClusterView | None = self.memo.get("ClusterView", body, build)
        return view

    def _decision_bodies(self) -> list[JSON]:
        assert self.decisions is not None
        out = []
        seen: set[_Key] = set()
        for cached in self.decisions:
            key = _key_of(cached)
            seen.add(key)
            shown = self.own.view(cached, key)
            if shown is not None:
                out.append(shown)
        for key, body in self.own.pending_creates():
            if key not in seen:
                out.append(body)
        return out

    def snapshot(self) -> Snapshot:
        """The current world (rebuilt only after a change)."""
        if self._snapshot is not None:
            return self._snapshot
        assert self.clusters is not None and self.sets is not None and self.bindings is not None
        assert self.decisions is not None and self.scores is not None
        clusters = [v for v in (self._cluster_view(b) for b in self.clusters) if v is not None]
        sets = [s for s in (self._parse(ManagedClusterSet, b) for b in self.sets) if s is not None]
        bindings = [s for s in (self._parse(ManagedClusterSetBinding, b) for b in self.bindings) if s is not None]
        decisions = [d for d in (self._parse(PlacementDecision, b) for b in self._decision_bodies()) if d is not None]
        scores = [s for s in (self._parse(AddOnPlacementScore, b) for b in self.scores) if s is not None]
        self._snapshot = Snapshot(clusters, sets, bindings, decisions, scores)
        return self._snapshot

    def _changed(self) -> None:
        self._snapshot = None

    def _index(self) -> PlacementIndex:
        """Placements by namespace (rebuilt only after a Placement changed)."""
        if self._placement_index is None:
            assert self.placements is not None
            refs = []
            for body in self.placements:
                placement = self._parse(Placement, body)
                if placement is not None:
                    refs.append(PlacementRef.of(placement))
            self._placement_index = PlacementIndex(refs)
        return self._placement_index

    def _topo(self) -> Topology:
        """Sets and bindings (rebuilt only after one of them changed)."""
        if self._topology is None:
            assert self.sets is not None and self.bindings is not None
            sets = [s for s in (self._parse(ManagedClusterSet, b) for b in self.sets) if s is not None]
            bindings = [s for s in (self._parse(ManagedClusterSetBinding, b) for b in self.bindings) if s is not None]
            self._topology = Topology(sets, bindings)
        return self._topology

    # -- triggers ------------------------------------------------------------------------------
    def _enqueue(self, keys: set[str]) -> None:
        for key in sorted(keys):
            self.queue.add(key)

    def on_cluster(self, event: str, obj: JSON) -> None:
        self._changed()
        name = str(meta(obj).get("name") or "")
        old = self.cluster_labels.get(name)
        new = dict(meta(obj).get("labels") or {})
        if event == "DELETED":
            self.cluster_labels.pop(name, None)
            self.memo.forget("ClusterView", obj)
        else:
            self.cluster_labels[name] = new
        self._enqueue(placements_for_cluster(self._topo(), self._index(), old, new))

    def on_set(self, event: str, obj: JSON) -> None:
        self._changed()
        self._topology = None
        name = str(meta(obj).get("name") or "")
        self._enqueue(placements_for_sets(self._topo(), self._index(), [name]))

    def on_binding(self, event: str, obj: JSON) -> None:
        self._changed()
        self._topology = None
        namespace, name = _key_of(obj)
        self._enqueue(placements_for_binding(self._index(), namespace, name))

    def on_placement(self, event: str, obj: JSON) -> None:
        namespace, name = _key_of(obj)
        if event == "DELETED":
            self.memo.forget("Placement", obj)
            self.score_writes.pop(f"{namespace}/{name}", None)
            self.warnings_told.pop(f"{namespace}/{name}", None)
        self._placement_index = None
        self.queue.add(f"{namespace}/{name}")

    def on_decision(self, event: str, obj: JSON) -> None:
        self._changed()
        namespace, _ = _key_of(obj)
        label = (meta(obj).get("labels") or {}).get(PLACEMENT_LABEL)
        if label is not None:
            self.queue.add(f"{namespace}/{label}")

    def on_score(self, event: str, obj: JSON) -> None:
        self._changed()
        cluster, resource = _key_of(obj)
        labels = self.cluster_labels.get(cluster)
        self._enqueue(placements_for_score(self._topo(), self._index(), labels, resource))

    async def _resync(self) -> None:
        assert self.informers is not None and self.placements is not None
        await self.informers.wait_synced()
        started = time.monotonic()
        next_full = started + RESYNC_SECONDS
        next_addon = started + ADDON_RESYNC_SECONDS
        while True:
            await asyncio.sleep(max(0.0, min(next_full, next_addon) - time.monotonic()))
            now = time.monotonic()
            full = now >= next_full
            if full:
                next_full = now + RESYNC_SECONDS
            if now >= next_addon:
                next_addon = now + ADDON_RESYNC_SECONDS
            for body in list(self.placements):
                placement = self._parse(Placement, body)
                if full or (placement is not None and PlacementRef.of(placement).addon_resources):
                    self.queue.add("/".join(_key_of(body)))

    # -- reconcile -----------------------------------------------------------------------------
    async def reconcile(self, key: str) -> float | None:
        assert self.informers is not None and self.placements is not None
        await self.informers.wait_synced()
        namespace, _, name = key.partition("/")
        self.passes[key] += 1
        body = self.placements.get(name, namespace)
        if body is None:
            return None
        placement = self._parse(Placement, body)
        if placement is None:
            await self._report_invalid(body)
            return None
        now = self.context.clock()
        started = time.perf_counter()
        result = schedule(self._with_own_score_update(key, placement), self.snapshot(), now)
        metrics.observe_scheduling(time.perf_counter() - started)
        if result.skipped is not None:
            return None
        await self._warn(key, body, result)
        if result.aborted is not None:
            log.warning("placement not scheduled", extra={"key": key, "error": result.aborted})
            try:
                await self._write_status(body, placement, result)
            except Conflict:
                return CONFLICT_RETRY_SECONDS
            self.queue.add_rate_limited(key)
            return None
        try:
            await self._bind(body, placement, result)
            if result.scores_written:
                self.score_writes[key] = now
            await self._write_status(body, placement, result)
        except Conflict:
            return CONFLICT_RETRY_SECONDS
        return self._requeue_seconds(result, now)

    def _with_own_score_update(self, key: str, placement: Placement) -> Placement:
        """The Placement with the later of its stored ``lastScoreUpdateTime`` and this
        controller's own last score write, so a cache that has not seen the status write yet
        cannot let scores through twice within scoreRateLimit."""
        mine = self.score_writes.get(key)
        stored = placement.status.last_score_update_time
        if mine is None or (stored is not None and stored >= mine):
            return placement
        status = placement.status.model_copy(update={"last_score_update_time": mine})
        return placement.model_copy(update={"status": status})

    def _requeue_seconds(self, result: ScheduleResult, now: datetime) -> float | None:
        times = []
        if result.toleration_requeue_at is not None:
            times.append(result.toleration_requeue_at)
        if result.score_expiry_at is not None:
            times.append(result.score_expiry_at + SCORE_EXPIRY_MARGIN)
        if result.scores_held_until is not None:
            times.append(result.scores_held_until)
        if not times:
            return None
        seconds = (min(times) - now).total_seconds()
        return max(0.0, min(seconds, MAX_REQUEUE_SECONDS))

    async def _bind(self, body: JSON, placement: Placement, result: ScheduleResult) -> None:
        assert self.decisions is not None
        desired = pages.desired_decisions(placement, result.pages, result.decision_scores)
        existing: dict[str, JSON] = {}
        for shown in self._decision_bodies():
            ns, name = _key_of(shown)
            if ns != placement.namespace:
                continue
            labels = meta(shown).get("labels") or {}
            if labels.get(PLACEMENT_LABEL) == placement.name:
                existing[name] = shown
        for page in desired:
            name = page["metadata"]["name"]
            if name not in existing:
                other = self.own.view(self.decisions.get(name, placement.namespace), (placement.namespace, name))
                if other is not None:
                    existing[name] = other
        for write in pages.plan_decision_writes(desired, existing):
            await self._apply(body, placement, result, write, existing.get(write.name))

    async def _apply(
        self, body: JSON, placement: Placement, result: ScheduleResult, write: pages.DecisionWrite, before: JSON | None
    ) -> None:
        namespace = placement.namespace
        if write.action == "create":
            try:
                created = await self.kube.create(PLACEMENT_DECISIONS, write.body, namespace)
            except Conflict:
                self._changed()
                raise
            self.own.wrote(None, created)
            self._changed()
            await self._event(body, write.name, EVENT_DECISION_CREATE, pages.created_message(write.name, placement))
        elif write.action == "status":
            after = await self.kube.patch_status(PLACEMENT_DECISIONS, write.name, write.body, namespace)
            self.own.wrote(self._current(namespace, write.name, before), after)
            self._changed()
            message, warning = pages.updated_message(write.name, placement, result.status)
            await self._event(body, write.name, EVENT_DECISION_UPDATE, message, WARNING if warning else NORMAL)
            if result.scores:
                await self._event(body, write.name, EVENT_SCORE_UPDATE, pages.score_note(result.scores))
            if result.spread is not None:
                await self._event(body, write.name, EVENT_SPREAD_UPDATE, pages.spread_note(result.spread))
        elif write.action == "labels":
            after = await self.kube.patch(PLACEMENT_DECISIONS, write.name, write.body, namespace)
            self.own.wrote(self._current(namespace, write.name, before), after)
            self._changed()
        elif write.action == "delete":
            if before is not None:
                self.own.delete_requested(before)
            await self.kube.delete(PLACEMENT_DECISIONS, write.name, namespace)
            self._changed()
            await self._event(body, write.name, EVENT_DECISION_DELETE, pages.deleted_message(write.name, placement))

    def _current(self, namespace: str, name: str, before: JSON | None) -> JSON | None:
        """The version a write replaced, as the cache holds it (None if the cache never had it)."""
        assert self.decisions is not None
        cached = self.decisions.get(name, namespace)
        return cached if cached is not None else None if before is None else before

    async def _write_status(self, body: JSON, placement: Placement, result: ScheduleResult) -> None:
        new = result.new_status
        if new is None or new == placement.status:
            return
        status = new.to_wire()
        status.setdefault("decisionGroups", [])
        status.setdefault("conditions", [])
        patch = {"metadata": {"resourceVersion": meta(body).get("resourceVersion")}, "status": status}
        try:
            await self.kube.patch_status(PLACEMENTS, placement.name, patch, placement.namespace)
        except NotFound:
            return

    async def _report_invalid(self, body: JSON) -> None:
        """A Placement the models reject: say so in PlacementMisconfigured, touch nothing else."""
        namespace, name = _key_of(body)
        try:
            Placement.parse(body)
        except InvalidObject as exc:
            message = str(exc)
        else:
            return
        conditions: list[Condition] = []
        for raw in (body.get("status") or {}).get("conditions") or []:
            with contextlib.suppress(Exception):
                conditions.append(Condition.model_validate(raw))
        now = self.context.clock()
        changed = set_condition(
            conditions,
            Condition(
                type=CONDITION_PLACEMENT_MISCONFIGURED,
                status="True",
                reason=REASON_MISCONFIGURED,
                message=message[:32768],
                last_transition_time=now,
            ),
            now,
        )
        if not changed:
            return
        patch = {"status": {"conditions": [c.to_wire() for c in conditions]}}
        with contextlib.suppress(NotFound):
            await self.kube.patch_status(PLACEMENTS, name, patch, namespace)

    async def _warn(self, key: str, body: JSON, result: ScheduleResult) -> None:
        """A Warning event for each spec warning of the pass not told already."""
        fresh, told = untold(result.warnings, self.warnings_told.get(key, frozenset()))
        self.warnings_told[key] = told
        for warning in fresh:
            await self._event(body, None, warning.reason_action, warning.message, WARNING)

    async def _event(
        self,
        placement: JSON,
        decision: str | None,
        reason_action: tuple[str, str],
        message: str,
        event_type: str = NORMAL,
    ) -> None:
        reason, action = reason_action
        event = build_event(
            placement, reason=reason, message=message, event_type=event_type, component=COMPONENT, now=self.context.clock()
        )
        event["action"] = action
        if decision is not None:
            event["related"] = {
                "apiVersion": PLACEMENT_DECISIONS.api_version,
                "kind": PLACEMENT_DECISIONS.kind,
                "name": decision,
                "namespace": meta(placement).get("namespace", ""),
            }
        try:
            await self.kube.create(EVENTS, event, event["metadata"]["namespace"])
        except KubeError as exc:
            log.warning("event not recorded", extra={"reason": reason, "error": str(exc)})

    # -- debug -------------------------------------------------------------------------------
    def debug(self, placement: Placement) -> tuple[int, JSON]:
        result = schedule(placement, self.snapshot(), self.context.clock(), honour_skip=False)
        out = debug_result(result)
        return (500 if result.aborted is not None else 200), out


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def debug_routes(controller: PlacementController) -> list[web.RouteDef]:
    """GET /debug/placements/<namespace>/<name>, and POST /debug/placements with a Placement."""

    async def get(request: web.Request) -> web.Response:
        namespace = request.match_info.get("namespace", "")
        name = request.match_info.get("name", "")
        if controller.placements is None or controller.informers is None or not controller.informers.synced.is_set():
            return _error(503, "the placement controller has not synced its caches yet")
        body = controller.placements.get(name, namespace)
        if body is None:
            return _error(404, f"placement '{name}' not found")
        try:
            placement = Placement.parse(body)
        except InvalidObject as exc:
            return _error(400, str(exc))
        status, out = controller.debug(placement)
        return web.json_response(out, status=status)

    async def post(request: web.Request) -> web.Response:
        if controller.informers is None or not controller.informers.synced.is_set():
            return _error(503, "the placement controller has not synced its caches yet")
        if request.content_length is not None and request.content_length > MAX_DEBUG_BODY:
            return _error(400, f"request body too large: exceeds maximum of {MAX_DEBUG_BODY} bytes")
        raw = await request.content.read(MAX_DEBUG_BODY + 1)
        if len(raw) > MAX_DEBUG_BODY:
            return _error(400, f"request body too large: exceeds maximum of {MAX_DEBUG_BODY} bytes")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return _error(400, f"failed to unmarshal placement JSON: {exc}")
        if not isinstance(data, dict):
            return _error(400, "failed to unmarshal placement JSON: not an object")
        try:
            placement = Placement.parse(data)
        except InvalidObject as exc:
            return _error(400, str(exc))
        status, out = controller.debug(placement)
        return web.json_response(out, status=status)

    async def bad_path(request: web.Request) -> web.Response:
        return _error(400, "invalid debug path: namespace and name required")

    return [
        web.get(DEBUG_PATH + "/{namespace}/{name}", get),
        web.post(DEBUG_PATH, post),
        web.post(DEBUG_PATH + "/", post),
        web.get(DEBUG_PATH + "/{tail:.*}", bad_path),
    ]


def setup(registry: kopf.OperatorRegistry, context: ControllerContext) -> None:
    """Register the placement controller's handlers on ``registry``."""
    controller = PlacementController(context)
    controller.setup(registry)
    context.extras["placement_controller"] = controller
