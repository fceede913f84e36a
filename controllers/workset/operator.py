"""The ManifestWorkReplicaSet controller: the kopf shell around the pure core.

One pass per MWRS key (docs/behaviour/mwrs.md 3): finalize (4) or add the finalizer, then deploy (5) and
status (6), then patch the status only if it changed, record the rollout's events, and ask to
be looked at again when the planner's recheck time comes (8).

Inputs come from caches: kopf informers for MWRS, Placements and PlacementDecisions, and light
list-and-watch caches for the many ManifestWorks and for the template revisions (ControllerRevisions,
``ocm_rollout.client.watchcache``); every change to them
re-queues the MWRS keys that depend on it (a work through its owner label, also when hashed). The controller's own writes
are overlaid on the caches until the caches catch up ("read your writes"), so a pass never
plans from a view older than what this controller already wrote, and a (cluster, placement)
never gets a second work. After a restart the caches are complete before the first pass
(informer.py), so the same holds across restarts.

Revision history, abort, retry and pause (OCM enhancement 229): a pass first records the spec's
template as the update revision (``history``), plans it under the strategies, and lets
``rollback.decide`` say whether it rolls it out, reverts every cluster to the current revision
(an abort) or writes nothing (paused, or aborted with nothing to revert to). The revision fields
of status (abortedTime first of all) are recorded with the MWRS's resourceVersion as
precondition before any work is written, so a pass that restarts, or a second instance, plans
from them; the history is pruned once the status is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import kopf
from pydantic import ValidationError

from ocm_rollout.api.constants import (
    ANNOTATION_MANIFESTWORK_REPLICASET,
    ANNOTATION_ROLLOUT_ABORT,
    CASCADE_DELETION_BACKGROUND,
    CASCADE_DELETION_FOREGROUND,
    CONDITION_MANIFESTWORK_APPLIED,
    EVENT_REVISION_CREATED,
    EVENT_ROLLOUT_ABORTED,
    EVENT_ROLLOUT_RETRIED,
    FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP,
    LABEL_CONTROLLER_HASH,
    LABEL_MANIFESTWORK_REPLICASET,
    LABEL_PLACEMENT,
    LABEL_PLACEMENT_NAME,
    REASON_NOT_AS_EXPECTED,
)
from ocm_rollout.api.meta import format_validation_error
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet
from ocm_rollout.client.kube import (
    CONTROLLER_REVISIONS,
    EVENTS,
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Conflict,
    Forbidden,
    Invalid,
    KubeError,
    NotFound,
)
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.client.watchcache import WatchCache, newer
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.common.wire import (
    annotations_of,
    fenced,
    generation_of,
    is_deleting,
    labels_of,
    meta,
    name_of,
    namespace_of,
)
from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.reservations import ReservationRecordError, Reservations
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING, EventRecorder, build_event
from ocm_rollout.controllers.runtime.informer import Informer, InformerSet
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter
from ocm_rollout.controllers.workset import aggregation, events, history, progress, report, rollback, ttl
from ocm_rollout.controllers.workset.aggregation import DeployOutcome, WriteFailure
from ocm_rollout.controllers.workset.history import HistoryStep
from ocm_rollout.controllers.workset.plan import DeployPlan, WorkDelete, WorkWrite, plan_deploy
from ocm_rollout.controllers.workset.revisions import owned_by, revision_name, template_of
from ocm_rollout.controllers.workset.rollback import RollbackDecision
from ocm_rollout.controllers.workset.template import normal_spec, spec_equals_template
from ocm_rollout.controllers.workset.workbuild import Owner, belongs_to, owner_for

log = logging.getLogger(__name__)

COMPONENT = "manifestworkreplicaset-controller"
KIND = "ManifestWorkReplicaSet"
# OCM's informer resync for ManifestWorkReplicaSets: a recheck further away is looked at after this
# long instead (docs/behaviour/mwrs.md 8; controllers.common.requeue).
RESYNC_SECONDS = 30 * 60
# Works written at once by one pass (creates and patches run concurrently up to this many).
WRITE_CONCURRENCY = 16
# Back-off after a pass that could not write some works (doubling up to the maximum).
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 300.0
# After a write conflict the watch event that caused it is usually a moment away.
CONFLICT_RETRY_SECONDS = 0.5
# The revisions the controller watches: labelled with an owner and a template hash.
REVISION_SELECTOR = f"{LABEL_MANIFESTWORK_REPLICASET},{LABEL_CONTROLLER_HASH}"

_Key = tuple[str, str]
T = TypeVar("T")


@dataclass
class _Written:
    """An object this controller wrote, kept until the cache shows that write or a later one."""

    before: str | None  # resourceVersion the write replaced (None for a create)
    body: JSON


class ReadYourWrites:
    """Overlays this controller's own writes on an informer cache until the cache catches up."""

    def __init__(self) -> None:
        self.written: dict[_Key, _Written] = {}
        self.deleted: dict[_Key, str] = {}  # key -> uid whose deletion was requested

    def wrote(self, before: JSON | None, after: JSON) -> None:
        key = (namespace_of(after), name_of(after))
        self.written[key] = _Written(None if before is None else str(meta(before).get("resourceVersion")), after)
        self.deleted.pop(key, None)

    def delete_requested(self, obj: JSON) -> None:
        key = (namespace_of(obj), name_of(obj))
        self.written.pop(key, None)
        self.deleted[key] = str(meta(obj).get("uid") or "")

    def view(self, cached: JSON | None, key: _Key) -> JSON | None:
        """What to believe about ``key`` given the cache's ``cached`` object."""
        written = self.written.get(key)
        if written is not None:
            if cached is None:
                if written.before is None:
                    return written.body  # created; the cache has not seen it yet
                del self.written[key]  # patched, then gone
            elif str(meta(cached).get("resourceVersion")) == written.before:
                return written.body  # the cache still holds the version we replaced
            else:
                del self.written[key]
        uid = self.deleted.get(key)
        if uid is not None:
            if cached is None or str(meta(cached).get("uid")) != uid or is_deleting(cached):
                del self.deleted[key]
            else:
                shown = dict(cached)
                shown["metadata"] = {**meta(cached), "deletionTimestamp": "requested"}
                return shown
        return cached

    def pending_creates(self) -> Iterable[tuple[_Key, JSON]]:
        for key, written in list(self.written.items()):
            if written.before is None:
                yield key, written.body

    def forget_namespace_name(self, key: _Key) -> None:
        self.written.pop(key, None)
        self.deleted.pop(key, None)


# Answers that refuse a work's content (resending it cannot help): 400 BadRequest (e.g. OCM's
# ManifestWork webhook denying manifests over its size limit) and 413 RequestEntityTooLarge; 422
# Invalid is the Invalid exception.
_CONTENT_REFUSED = (400, 413)


def _failure_kind(exc: BaseException, create: bool) -> str:
    if isinstance(exc, NotFound) and create:
        return aggregation.NAMESPACE_NOT_FOUND
    if isinstance(exc, Invalid) or (isinstance(exc, KubeError) and exc.status in _CONTENT_REFUSED):
        return aggregation.INVALID
    if isinstance(exc, Forbidden):
        return aggregation.FORBIDDEN
    return aggregation.OTHER


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, KubeError):
        return exc.message
    return " ".join(str(exc).split()) or type(exc).__name__


class WorksetController:
    """State and handlers of one running ManifestWorkReplicaSet controller."""

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self.kube = context.kube
        self.writer = ConcurrentWriter(context.kube, WRITE_CONCURRENCY, name="workset-write")
        self.queue: WorkQueue[str] = WorkQueue("workset", on_depth=context.on_queue_depth)
        # Finished-work garbage collection (docs/behaviour/mwrs.md 9), keyed "namespace/name" of a work.
        self.ttl_queue: WorkQueue[str] = WorkQueue("workset-ttl", on_depth=context.on_queue_depth)
        self.recorder = EventRecorder(context.kube, COMPONENT)
        self.informers: InformerSet | None = None
        self.mwrs_cache: Informer | None = None
        # ManifestWorks are many and change often: a light list-and-watch cache, not kopf.
        self.work_cache = WatchCache(context.kube, MANIFEST_WORKS, on_change=self.on_work)
        self.work_cache_task: asyncio.Task[None] | None = None
        # Template revisions (ControllerRevisions), indexed by owner label value like the works.
        self.revision_cache = WatchCache(
            context.kube, CONTROLLER_REVISIONS, label_selector=REVISION_SELECTOR, on_change=self.on_revision
        )
        self.revision_cache_task: asyncio.Task[None] | None = None
        self.revisions_rw = ReadYourWrites()
        self.revisions_by_owner: dict[str, dict[_Key, JSON]] = {}
        self.revision_owner: dict[_Key, str] = {}
        # MWRS key -> revision names taken by objects that are not its revisions (AlreadyExists).
        self.taken_names: dict[str, set[str]] = {}
        # MWRS key -> the abortedTime whose RolloutAborted event is recorded.
        self.aborts_told: dict[str, str] = {}
        self.placement_cache: Informer | None = None
        self.decision_cache: Informer | None = None
        self.works_rw = ReadYourWrites()
        self.mwrs_rw = ReadYourWrites()
        # Owner label value -> MWRS keys (several only for colliding hashed values).
        self.owners: dict[str, set[str]] = {}
        self.owner_of_key: dict[str, str] = {}
        # uid of a work -> (generation, canonical form of its spec (template.normal_spec)).
        self.spec_forms: dict[str, tuple[int, str]] = {}
        # uid of a revision -> (resourceVersion, canonical form of its template).
        self.revision_forms: dict[str, tuple[str, str | None]] = {}
        # Works by owner label value, kept from the work informer's events (no full scans).
        self.works_by_owner: dict[str, dict[_Key, JSON]] = {}
        self.work_owner: dict[_Key, str] = {}
        # (namespace, owner label, placement) pairs whose create may have succeeded unseen.
        self.uncertain: set[tuple[str, str, str]] = set()
        self.breaches: dict[str, dict[str, frozenset[str]]] = {}
        # MWRS key -> the DeprecatedRolloutType warnings already recorded (events.spelling_events).
        self.spellings: dict[str, frozenset[str]] = {}
        # MWRS key -> the write-failure warning already recorded (events.write_failure_events).
        self.failures_told: dict[str, frozenset[str]] = {}
        self.retries: dict[str, int] = {}
        self.task: asyncio.Task[None] | None = None
        self.ttl_task: asyncio.Task[None] | None = None

    # -- wiring ------------------------------------------------------------------------------
    def setup(self, registry: kopf.OperatorRegistry) -> None:
        informers = InformerSet(registry, prefix="workset")
        self.informers = informers
        self.mwrs_cache = informers.watch(MANIFEST_WORK_REPLICA_SETS, self.on_mwrs)
        self.placement_cache = informers.watch(PLACEMENTS, self.on_placement)
        self.decision_cache = informers.watch(PLACEMENT_DECISIONS, self.on_decision)

        @kopf.on.startup(registry=registry, id="workset_start_workers")
        async def start_workers(**_: Any) -> None:
            self.work_cache_task = asyncio.create_task(self.work_cache.run(), name="workset-work-cache")
            self.revision_cache_task = asyncio.create_task(self.revision_cache.run(), name="workset-revision-cache")
            self.task = asyncio.create_task(self._run(), name="workset-workers")
            self.ttl_task = asyncio.create_task(self._run_ttl(), name="workset-ttl-workers")

        @kopf.on.cleanup(registry=registry, id="workset_stop_workers")
        async def stop_workers(**_: Any) -> None:
            self.queue.shut_down()
            self.ttl_queue.shut_down()
            for task in (self.task, self.ttl_task, self.work_cache_task, self.revision_cache_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _run(self) -> None:
        assert self.informers is not None
        try:
            await self.informers.wait_synced()
            await self.work_cache.synced.wait()
            await self.revision_cache.synced.wait()
            await run_workers(
                self.queue, self.reconcile, workers=self.context.workers, on_result=self.context.on_reconcile
            )
        finally:
            # Also when the operator is aborted (a lost lease): no thread outlives it.
            self.writer.close()

    async def _run_ttl(self) -> None:
        await self.work_cache.synced.wait()
        await run_workers(self.ttl_queue, self.reconcile_ttl, workers=1, on_result=self.context.on_reconcile)

    # -- event mapping (cross-resource triggers, docs/behaviour/mwrs.md 2) ----------------------------------
    def on_mwrs(self, event_type: str, obj: JSON) -> None:
        key = f"{namespace_of(obj)}/{name_of(obj)}"
        if event_type == "DELETED":
            value = self.owner_of_key.pop(key, None)
            if value is not None:
                self.owners.get(value, set()).discard(key)
        else:
            value = owner_for(namespace_of(obj), name_of(obj)).label_value
            self.owner_of_key[key] = value
            self.owners.setdefault(value, set()).add(key)
        self.queue.add(key)

    def on_work(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        ref = (namespace_of(obj), name_of(obj))
        value = labels_of(obj).get(LABEL_MANIFESTWORK_REPLICASET)
        previous = self.work_owner.pop(ref, None)
        if previous is not None:
            bucket = self.works_by_owner.get(previous)
            if bucket is not None:
                bucket.pop(ref, None)
                if not bucket:
                    del self.works_by_owner[previous]
        if event_type == "DELETED":
            self.spec_forms.pop(str(meta(obj).get("uid") or ""), None)
        elif value is not None:
            self.work_owner[ref] = value
            self.works_by_owner.setdefault(value, {})[ref] = obj
        if value is None:
            if event_type != "DELETED" and ttl.ttl_seconds(obj) is not None:
                self.ttl_queue.add(f"{namespace_of(obj)}/{name_of(obj)}")
            return
        keys = self.owners.get(value, set())
        full = annotations_of(obj).get(ANNOTATION_MANIFESTWORK_REPLICASET)
        if full is None:
            # Without the owner annotation the label is the plain "<namespace>.<name>"; map it
            # even before the MWRS is known (names containing dots included).
            for key in keys:
                self.queue.add(key)
            return
        for key in keys:
            ns, _, name = key.partition("/")
            if f"{ns}.{name}" == full:
                self.queue.add(key)

    def on_revision(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        ref = (namespace_of(obj), name_of(obj))
        value = labels_of(obj).get(LABEL_MANIFESTWORK_REPLICASET)
        previous = self.revision_owner.pop(ref, None)
        if previous is not None:
            bucket = self.revisions_by_owner.get(previous)
            if bucket is not None:
                bucket.pop(ref, None)
                if not bucket:
                    del self.revisions_by_owner[previous]
        if value is None:
            return
        if event_type == "DELETED":
            self.revision_forms.pop(str(meta(obj).get("uid") or ""), None)
        else:
            self.revision_owner[ref] = value
            self.revisions_by_owner.setdefault(value, {})[ref] = obj
        for key in self.owners.get(value, set()):
            if key.partition("/")[0] == ref[0]:
                self.queue.add(key)

    def on_placement(self, event_type: str, obj: JSON) -> None:
        self._enqueue_referencing(namespace_of(obj), name_of(obj))

    def on_decision(self, event_type: str, obj: JSON) -> None:
        placement = labels_of(obj).get(LABEL_PLACEMENT)
        if placement is not None:
            self._enqueue_referencing(namespace_of(obj), placement)

    def _enqueue_referencing(self, namespace: str, placement: str) -> None:
        if self.mwrs_cache is None:
            return
        for body in self.mwrs_cache.select(namespace):
            refs = (body.get("spec") or {}).get("placementRefs") or []
            if any(isinstance(r, dict) and r.get("name") == placement for r in refs):
                self.queue.add(f"{namespace}/{name_of(body)}")

    async def reconcile_ttl(self, key: str) -> float | None:
        """Delete a finished work once its ttlSecondsAfterFinished has passed (docs/behaviour/mwrs.md 9)."""
        namespace, _, name = key.partition("/")
        work = self.work_cache.get(name, namespace)
        if work is None:
            return None
        decision = ttl.ttl_decision(work, self.context.clock())
        if decision.action == ttl.WAIT:
            return decision.after
        if decision.action == ttl.DELETE:
            log.info("deleting finished work", extra={"key": key})
            await self.writer.delete(MANIFEST_WORKS, name, namespace)
        return None

    # -- reading ------------------------------------------------------------------------------
    def _mwrs(self, namespace: str, name: str) -> JSON | None:
        assert self.mwrs_cache is not None
        return self.mwrs_rw.view(self.mwrs_cache.get(name, namespace), (namespace, name))

    def owned_works(self, owner: Owner) -> list[JSON]:
        """Works marked with ``owner``, as stored plus this controller's own recent writes."""
        found: dict[_Key, JSON] = {}
        for key, work in list(self.works_by_owner.get(owner.label_value, {}).items()):
            seen = self.works_rw.view(work, key)
            if seen is not None and belongs_to(seen, owner):
                found[key] = seen
        for key, body in self.works_rw.pending_creates():
            if key not in found and self._cached_work(key) is None and belongs_to(body, owner):
                found[key] = body
        return sorted(found.values(), key=lambda w: (namespace_of(w), name_of(w)))

    def owned_revisions(self, body: JSON, owner: Owner) -> list[JSON]:
        """The MWRS's template revisions (controlled by it), as stored plus this controller's own
        recent writes; those whose deletion was requested are left out."""
        uid = str(meta(body).get("uid") or "")
        namespace = namespace_of(body)

        def mine(rev: JSON) -> bool:
            return namespace_of(rev) == namespace and owned_by(rev, uid) and not is_deleting(rev)

        found: dict[_Key, JSON] = {}
        for key, rev in list(self.revisions_by_owner.get(owner.label_value, {}).items()):
            seen = self.revisions_rw.view(rev, key)
            if seen is not None and mine(seen):
                found[key] = seen
        for key, created in self.revisions_rw.pending_creates():
            if key not in found and self.revision_cache.get(key[1], key[0]) is None and mine(created):
                if labels_of(created).get(LABEL_MANIFESTWORK_REPLICASET) == owner.label_value:
                    found[key] = created
        return list(found.values())

    async def _confirm_owned_works(self, owner: Owner, planned_from: list[JSON]) -> list[JSON] | None:
        """The owner's works as the API has them now, merged with what the pass planned from
        (the newer copy of each); None when that adds nothing the plan did not already know."""
        stored = await self.kube.list_objects(
            MANIFEST_WORKS, None, label_selector=f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value}"
        )
        merged: dict[_Key, JSON] = {(namespace_of(w), name_of(w)): w for w in planned_from}
        changed = False
        for work in stored:
            if not belongs_to(work, owner):
                continue
            key = (namespace_of(work), name_of(work))
            known = merged.get(key)
            if known is None or (
                newer(work, known) and meta(work).get("resourceVersion") != meta(known).get("resourceVersion")
            ):
                merged[key] = work
                changed = True
                # Teach the cache (and the owner index) too, so the next pass starts from it; but
                # only if the cache has nothing newer: its watch may have delivered a later version
                # while this list was read, and putting the older one back in the index would keep
                # it there for good once the work stops changing (a rollout stuck short of done).
                cached = self._cached_work(key)
                if cached is None or (
                    newer(work, cached) and meta(work).get("resourceVersion") != meta(cached).get("resourceVersion")
                ):
                    self.work_cache.remember(work)
                    self.on_work("MODIFIED", work, known)
        if not changed:
            return None
        log.info("work cache lagged behind the API; planned again", extra={"owner": owner.label_value})
        return sorted(merged.values(), key=lambda w: (namespace_of(w), name_of(w)))

    def _cached_work(self, key: _Key) -> JSON | None:
        return self.work_cache.get(key[1], key[0])

    def revision_matcher(self, template: JSON) -> Callable[[Mapping[str, Any]], bool]:
        """Does a revision hold ``template``? (history.holds_template, with each revision's
        canonical form cached by uid and resourceVersion)."""
        wanted = normal_spec(template)

        def holds(revision: Mapping[str, Any]) -> bool:
            uid = str(meta(revision).get("uid") or "")
            version = str(meta(revision).get("resourceVersion") or "")
            known = self.revision_forms.get(uid) if uid else None
            if known is None or known[0] != version:
                held = template_of(revision)
                known = (version, None if held is None else normal_spec(held))
                if uid:
                    self.revision_forms[uid] = known
            return known[1] == wanted

        return holds

    def spec_matcher(self, template: JSON) -> Callable[[JSON], bool]:
        wanted = normal_spec(template)

        def matches(work: JSON) -> bool:
            uid = str(meta(work).get("uid") or "")
            if not uid:
                return normal_spec(work.get("spec")) == wanted
            generation = generation_of(work)
            known = self.spec_forms.get(uid)
            if known is not None and known[0] == generation:
                return known[1] == wanted
            form = normal_spec(work.get("spec"))
            self.spec_forms[uid] = (generation, form)
            return form == wanted

        return matches

    # -- the pass ------------------------------------------------------------------------------
    async def reconcile(self, key: str) -> float | None:
        namespace, _, name = key.partition("/")
        body = self._mwrs(namespace, name)
        if body is None:
            self._forget(key, namespace, name)
            return None
        owner = owner_for(namespace, name)
        await self._resolve_uncertain(owner)
        if is_deleting(body):
            return await self._finalize(key, body, owner)
        finalizers = list(meta(body).get("finalizers") or [])
        if FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP not in finalizers:
            # This pass writes nothing else (docs/behaviour/mwrs.md 3). The next one follows at once: it reads
            # the patched object from the overlay instead of waiting for the watch event.
            patched = await self._patch_mwrs(
                body,
                {"metadata": {"finalizers": [*finalizers, FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP]}},
                subresource=None,
            )
            return 0.0 if patched is not None else CONFLICT_RETRY_SECONDS
        return await self._deploy_and_report(key, body, owner)

    def _forget(self, key: str, namespace: str, name: str) -> None:
        self.breaches.pop(key, None)
        self.spellings.pop(key, None)
        self.failures_told.pop(key, None)
        self.retries.pop(key, None)
        self.taken_names.pop(key, None)
        self.aborts_told.pop(key, None)
        self.mwrs_rw.forget_namespace_name((namespace, name))
        metrics.forget_rollout(KIND, namespace, name)

    async def _patch_mwrs(self, body: JSON, patch: JSON, *, subresource: str | None) -> JSON | None:
        """Patch the MWRS with its resourceVersion as precondition; None on a conflict."""
        patch = fenced(patch, body)
        try:
            updated = await self.kube.patch(
                MANIFEST_WORK_REPLICA_SETS, name_of(body), patch, namespace_of(body), subresource=subresource
            )
        except (Conflict, NotFound):
            return None
        self.mwrs_rw.wrote(body, updated)
        return updated

    def _reservations(self, key: str, body: JSON) -> Reservations:
        try:
            return reservations.of_owner(body)
        except ReservationRecordError as exc:
            # Our own annotation, damaged by hand: the next reservation write replaces it.
            log.warning("ignoring a damaged reservation record", extra={"key": key, "error": str(exc)})
            return reservations.EMPTY

    async def _reserve(self, body: JSON, record: Reservations) -> JSON | None:
        """Write ``record`` on the MWRS, fenced on the resourceVersion the pass planned from; None
        on a conflict: the pass is over, and the next one (when the other writer's change reaches
        the cache, which re-queues this MWRS) plans from the other writer's reservations."""
        patch = {"metadata": {"annotations": reservations.annotation_patch(record)}}
        fenced = await self._patch_mwrs(body, patch, subresource=None)
        if fenced is None:
            log.info("reservation conflict: planning again", extra={"key": f"{namespace_of(body)}/{name_of(body)}"})
        return fenced

    async def _finalize(self, key: str, body: JSON, owner: Owner) -> float | None:
        works = self.owned_works(owner)
        for work in works:
            if not is_deleting(work):
                await self._delete_work(WorkDelete(namespace_of(work), name_of(work), None, "MWRS deleted"), work)
        finalizers = list(meta(body).get("finalizers") or [])
        if FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP not in finalizers:
            return None
        policy = (body.get("spec") or {}).get("cascadeDeletionPolicy") or CASCADE_DELETION_BACKGROUND
        if policy == CASCADE_DELETION_FOREGROUND and self.owned_works(owner):
            return None  # the works' delete events bring us back
        remaining = [f for f in finalizers if f != FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP]
        if await self._patch_mwrs(body, {"metadata": {"finalizers": remaining}}, subresource=None) is None:
            return CONFLICT_RETRY_SECONDS
        return None

    async def _deploy_and_report(self, key: str, body: JSON, owner: Owner) -> float | None:
        namespace = namespace_of(body)
        now = self.context.clock()
        try:
            model = ManifestWorkReplicaSet.model_validate(body)
        except ValidationError as exc:
            return await self._report_invalid(body, format_validation_error(exc), now)
        spec = dict(body.get("spec") or {})
        spec["placementRefs"] = [
            ref.model_dump(by_alias=True, exclude_none=True, mode="json") for ref in model.spec.placement_refs
        ]
        planned_body = {**body, "spec": spec}
        status = body.get("status") or {}

        # 1. The update revision: the spec's template, recorded in the history.
        step = history.resolve_update(
            mwrs=body,
            owner_label_value=owner.label_value,
            revisions=self.owned_revisions(body, owner),
            collision_count=status.get("collisionCount"),
            taken=self.taken_names.get(key, ()),
            holds=self.revision_matcher(spec.get("manifestWorkTemplate") or {}),
        )
        if not await self._record_revision(key, body, owner, step, now):
            return CONFLICT_RETRY_SECONDS
        update = step.update
        revisions = self.owned_revisions(body, owner)
        current_revision = history.find(revisions, status.get("currentRevision"), name_of(body))
        current_template = None if current_revision is None else template_of(current_revision)

        matches = self.spec_matcher(spec.get("manifestWorkTemplate") or {})
        revert_matches = None if current_template is None else self.spec_matcher(current_template)
        assert self.placement_cache is not None and self.decision_cache is not None
        placements: dict[str, JSON | None] = {}
        decisions: dict[str, list[JSON]] = {}
        for ref in model.spec.placement_refs:
            placements[ref.name] = self.placement_cache.get(ref.name, namespace)
            decisions[ref.name] = self.decision_cache.select(namespace, labels={LABEL_PLACEMENT: ref.name})
        works = self.owned_works(owner)
        record = self._reservations(key, body)

        # 2. Plan the update revision under the strategies; decide what the pass does with it.
        def planned(current_works: list[JSON]) -> tuple[DeployPlan, RollbackDecision, DeployPlan, rollback.Held | None]:
            plan_u = plan_deploy(
                mwrs=planned_body,
                owner=owner,
                works=current_works,
                placements=placements,
                decisions=decisions,
                now=now,
                spec_matches=matches,
                reserved=record,
                revision_hash=update.hash,
            )
            decision = rollback.decide(
                mwrs=body,
                update=update,
                collision_count=step.collision_count,
                current_available=current_template is not None,
                breaches=rollback.abort_breaches(spec, plan_u),
                complete=rollback.rolled_out(plan_u),
                now=now,
            )
            plan = plan_u
            if decision.mode == rollback.REVERTING:
                assert current_template is not None and revert_matches is not None
                plan = plan_deploy(
                    mwrs={**planned_body, "spec": rollback.revert_spec(spec, current_template)},
                    owner=owner,
                    works=current_works,
                    placements=placements,
                    decisions=decisions,
                    now=now,
                    spec_matches=revert_matches,
                    reserved=record,
                    revision_hash=decision.current,
                )
            held = None
            if decision.paused or decision.mode == rollback.HALTED:
                plan, held = rollback.hold(plan, record)
            return plan_u, decision, plan, held

        plan_u, decision, plan, held = planned(works)
        if plan.reservations.adds_to(record):
            # New clusters go in flight: plan them from the API itself, not only from the cache,
            # which may lag (e.g. right after a restart), then reserve them on the MWRS with its
            # resourceVersion as read (ocm_rollout.controllers.rollout.reservations). A concurrent writer
            # makes one of us fail here with 409 and plan again from what the other reserved.
            confirmed = await self._confirm_owned_works(owner, works)
            if confirmed is not None:
                plan_u, decision, plan, held = planned(confirmed)
        is_current = matches if decision.mode != rollback.REVERTING or revert_matches is None else revert_matches

        # 3. The revision fields (an abort above all) are stored before any work is written.
        recorded = await self._record_decision(key, body, decision, now)
        if recorded is None:
            return CONFLICT_RETRY_SECONDS
        body = recorded
        await self._tell_abort(key, body, decision, now)
        if plan.reservations != record:
            fenced = await self._reserve(body, plan.reservations)
            if fenced is None:
                return CONFLICT_RETRY_SECONDS
            body = fenced
        outcome = await self._execute(plan, owner)
        works_after = self.owned_works(owner)
        result = aggregation.build_status(
            old_status=body.get("status"),
            plan=plan,
            outcome=outcome,
            works=works_after,
            is_current=is_current,
            now=now,
            namespace=namespace,
        )
        new_status = progress.finish_status(
            result.status,
            old_status=body.get("status"),
            mwrs_name=name_of(body),
            decision=decision,
            plan_u=plan_u,
            executed=plan,
            held=held,
            now=now,
        )
        persisted = True
        if aggregation.status_changed(body.get("status"), new_status):
            persisted = await self._patch_mwrs(body, {"status": new_status}, subresource="status") is not None
        if persisted:
            await self._prune(body, owner, model.spec.revision_history_limit, decision)
        # A status that did not reach the API (a conflict: the next pass comes) announces nothing;
        # waves and breaches are about works already written, so they are told in any case.
        await self._record_events(key, body, plan, outcome, new_status if persisted else body.get("status") or {}, now)
        self._publish_metrics(body, plan)
        failures = outcome.failures()
        if failures:
            attempt = self.retries.get(key, 0)
            self.retries[key] = attempt + 1
            return min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * (2**attempt))
        self.retries.pop(key, None)
        if plan.deferred:
            return 0.0  # more works to reserve than one pass may: go on at once
        return next_look(plan.recheck_after, RESYNC_SECONDS)

    # -- revisions ------------------------------------------------------------------------------
    async def _record_revision(self, key: str, body: JSON, owner: Owner, step: HistoryStep, now: Any) -> bool:
        """Create or renumber the update revision; False when the pass must start again (a
        conflict, or a name taken by an object that is not this template's revision)."""
        namespace = namespace_of(body)
        update = step.update
        if step.create is not None:
            try:
                created = await self.kube.create(CONTROLLER_REVISIONS, step.create, namespace)
            except Conflict:
                return await self._adopt_revision(key, body, owner, step)
            self.revisions_rw.wrote(None, created)
            self.taken_names.pop(key, None)
            await self._event(
                body,
                EVENT_REVISION_CREATED,
                f"revision {update.number} ({update.name}) records the new template",
                now,
            )
        elif step.renumber is not None:
            cached = next((r for r in self.owned_revisions(body, owner) if name_of(r) == update.name), None)
            try:
                patched = await self.kube.patch(CONTROLLER_REVISIONS, update.name, step.renumber, namespace)
            except (Conflict, NotFound):
                return False
            self.revisions_rw.wrote(cached, patched)
            await self._event(
                body,
                EVENT_REVISION_CREATED,
                f"the template of an earlier revision came back: {update.name} is revision {update.number} now",
                now,
            )
        return True

    async def _adopt_revision(self, key: str, body: JSON, owner: Owner, step: HistoryStep) -> bool:
        """A revision of the wanted name exists though the cache does not show it: adopt it when
        it is this MWRS's revision of this template (the cache lags), else remember the name as
        taken (the next pass raises collisionCount)."""
        update = step.update
        selector = f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value},{LABEL_CONTROLLER_HASH}={update.hash}"
        found = await self.kube.list_objects(CONTROLLER_REVISIONS, namespace_of(body), label_selector=selector)
        for rev in found:
            held = template_of(rev)
            if (
                name_of(rev) == update.name
                and owned_by(rev, str(meta(body).get("uid") or ""))
                and held is not None
                and spec_equals_template(held, update.template)
            ):
                cached = self.revision_cache.get(name_of(rev), namespace_of(rev))
                if cached is None or (
                    newer(rev, cached) and meta(rev).get("resourceVersion") != meta(cached).get("resourceVersion")
                ):
                    self.revision_cache.remember(rev)
                    self.on_revision("MODIFIED", rev, cached)
                return False  # plan again with it
        self.taken_names.setdefault(key, set()).add(update.name)
        log.info("revision name taken: hashing again", extra={"key": key, "revision": update.name})
        return False

    async def _record_decision(self, key: str, body: JSON, decision: RollbackDecision, now: Any) -> JSON | None:
        """Store the revision fields of status (fenced) before any work is written; None on a
        conflict. An abort request the retry supersedes is withdrawn first."""
        patch = rollback.fields_patch(body.get("status"), decision.fields())
        if patch is None:
            return body
        if decision.clear_abort_request:
            withdrawn = await self._patch_mwrs(
                body, {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: None}}}, subresource=None
            )
            if withdrawn is None:
                return None
            body = withdrawn
        if decision.started_abort:
            # The cause is stored with abortedTime: after a restart it is still there to tell.
            patch["conditions"] = progress.abort_conditions(body.get("status"), decision, name_of(body), now)
        stored = await self._patch_mwrs(body, {"status": patch}, subresource="status")
        if stored is None:
            log.info("revision status conflict: planning again", extra={"key": key})
            return None
        update_name = revision_name(name_of(body), decision.update.hash)
        if decision.retried:
            await self._event(
                stored,
                EVENT_ROLLOUT_RETRIED,
                f"abort of revision {update_name} retried: rolling it out again under each placement's strategy",
                now,
            )
        return stored

    async def _tell_abort(self, key: str, body: JSON, decision: RollbackDecision, now: Any) -> None:
        """The Warning RolloutAborted, once per abort: named after the MWRS's uid and abortedTime,
        so whichever pass or instance tells it first (also after a restart between storing the
        abort and telling it) writes it, and any later attempt meets AlreadyExists."""
        if decision.aborted_time is None or self.aborts_told.get(key) == decision.aborted_time:
            return
        cause = progress.abort_cause(decision, body.get("status"), name_of(body))
        message = f"{cause}; {progress.abort_outlook(decision, name_of(body))}"
        obj = {**body, "apiVersion": MANIFEST_WORK_REPLICA_SETS.api_version, "kind": KIND}
        event = build_event(obj, reason=EVENT_ROLLOUT_ABORTED, message=message, event_type=WARNING,
                            component=COMPONENT, now=now)
        digest = hashlib.sha256(f"{meta(body).get('uid')}\x00{decision.aborted_time}".encode()).hexdigest()[:16]
        event["metadata"]["name"] = f"{name_of(body)}.{digest}"
        try:
            await self.kube.create(EVENTS, event, namespace_of(body))
        except Conflict:
            pass  # told already
        except KubeError as exc:
            log.warning("event not recorded", extra={"key": key, "reason": EVENT_ROLLOUT_ABORTED, "error": str(exc)})
            return
        else:
            log.info("rollout event", extra={"key": key, "reason": EVENT_ROLLOUT_ABORTED, "event_message": message})
        self.aborts_told[key] = decision.aborted_time

    async def _prune(self, body: JSON, owner: Owner, limit: int, decision: RollbackDecision) -> None:
        """Delete the revisions beyond the history limit (never the current or update revision)."""
        status = body.get("status") or {}
        keep = {status.get("currentRevision"), status.get("updateRevision"), decision.current, decision.update.hash}
        for rev in history.prune(self.owned_revisions(body, owner), limit=limit, keep=keep, mwrs_name=name_of(body)):
            preconditions = {"uid": meta(rev).get("uid"), "resourceVersion": meta(rev).get("resourceVersion")}
            try:
                await self.kube.delete(
                    CONTROLLER_REVISIONS, name_of(rev), namespace_of(rev), preconditions=preconditions
                )
            except Conflict:
                continue  # changed meanwhile (renumbered by an undo): the next pass decides again
            self.revisions_rw.delete_requested(dict(rev))

    async def _event(self, body: JSON, reason: str, message: str, now: Any, *, warning: bool = False) -> None:
        obj = {**body, "apiVersion": MANIFEST_WORK_REPLICA_SETS.api_version, "kind": KIND}
        key = f"{namespace_of(body)}/{name_of(body)}"
        log.info("rollout event", extra={"key": key, "reason": reason, "event_message": message})
        await self.recorder.record(obj, reason=reason, message=message, now=now, event_type=WARNING if warning else NORMAL)

    async def _report_invalid(self, body: JSON, errors: str, now: Any) -> float | None:
        conditions = list((body.get("status") or {}).get("conditions") or [])
        aggregation.set_condition(
            conditions,
            CONDITION_MANIFESTWORK_APPLIED,
            "False",
            REASON_NOT_AS_EXPECTED,
            f"invalid ManifestWorkReplicaSet: {errors}",
            now,
        )
        status = {**(body.get("status") or {}), "conditions": conditions}
        if aggregation.status_changed(body.get("status"), status):
            await self._patch_mwrs(body, {"status": status}, subresource="status")
        return None

    # -- writing works --------------------------------------------------------------------------
    async def _execute(self, plan: DeployPlan, owner: Owner) -> DeployOutcome:
        outcome = DeployOutcome()
        for delete in plan.stale_deletes:
            failure = await self._delete_work(delete, None)
            if failure is not None:
                outcome.stale_failures.append(failure)
        semaphore = asyncio.Semaphore(WRITE_CONCURRENCY)

        async def bounded(call: Awaitable[T]) -> T:
            async with semaphore:
                return await call

        for ref in plan.refs:
            ref_outcome = outcome.ref(ref.name)
            results = await asyncio.gather(*(bounded(self._write_work(w, owner)) for w in ref.writes))
            for write, failure in zip(ref.writes, results, strict=True):
                if failure is None:
                    ref_outcome.applied.add(write.cluster)
                elif failure.kind != "":
                    ref_outcome.failures.append(failure)
            for delete in ref.deletes:
                failure = await self._delete_work(delete, None)
                if failure is None:
                    ref_outcome.deleted.add(delete.namespace)
                else:
                    ref_outcome.failures.append(failure)
        return outcome

    async def _write_work(self, write: WorkWrite, owner: Owner) -> WriteFailure | None:
        """Create or patch one work. None on success; a failure with kind "" for a race that
        the next pass resolves (the work changed or vanished under us)."""
        namespace = write.cluster
        if write.existing is None:
            try:
                created = await self.writer.create(MANIFEST_WORKS, write.desired, namespace)
            except Conflict:
                # AlreadyExists: a work of that name is there; the watch brings it to us.
                return None
            except KubeError as exc:
                return WriteFailure(write.cluster, write.placement, _failure_kind(exc, True), _error_text(exc))
            except Exception as exc:
                # The create may have happened; look before creating again.
                self.uncertain.add((namespace, owner.label_value, write.placement))
                return WriteFailure(write.cluster, write.placement, aggregation.OTHER, _error_text(exc))
            self.works_rw.wrote(None, created)
            return None
        assert write.patch is not None
        try:
            updated = await self.writer.patch(MANIFEST_WORKS, name_of(write.existing), write.patch, namespace)
        except (NotFound, Conflict):
            return WriteFailure(write.cluster, write.placement, "", "changed concurrently", verb="patch")
        except KubeError as exc:
            return WriteFailure(
                write.cluster, write.placement, _failure_kind(exc, False), _error_text(exc), verb="patch"
            )
        except Exception as exc:
            return WriteFailure(write.cluster, write.placement, aggregation.OTHER, _error_text(exc), verb="patch")
        self.works_rw.wrote(write.existing, updated)
        return None

    async def _delete_work(self, delete: WorkDelete, work: JSON | None) -> WriteFailure | None:
        try:
            await self.writer.delete(MANIFEST_WORKS, delete.name, delete.namespace)
        except KubeError as exc:
            return WriteFailure(
                delete.namespace, delete.placement or "", _failure_kind(exc, False), _error_text(exc), verb="delete"
            )
        except Exception as exc:
            return WriteFailure(delete.namespace, delete.placement or "", aggregation.OTHER, _error_text(exc), verb="delete")
        cached = work or self.work_cache.get(delete.name, delete.namespace)
        if cached is not None:
            self.works_rw.delete_requested(cached)
        else:
            self.works_rw.forget_namespace_name((delete.namespace, delete.name))
        return None

    async def _resolve_uncertain(self, owner: Owner) -> None:
        """After a create whose answer was lost, list the namespace before planning again."""
        mine = [entry for entry in self.uncertain if entry[1] == owner.label_value]
        for entry in mine:
            namespace, value, placement = entry
            selector = f"{LABEL_MANIFESTWORK_REPLICASET}={value},{LABEL_PLACEMENT_NAME}={placement}"
            try:
                found = await self.kube.list_objects(MANIFEST_WORKS, namespace, label_selector=selector)
            except Exception as exc:
                log.warning("cannot list works", extra={"namespace": namespace, "error": _error_text(exc)})
                continue
            for work in found:
                self.works_rw.wrote(None, work)
            self.uncertain.discard(entry)

    # -- events and metrics -----------------------------------------------------------------------
    async def _record_events(
        self, key: str, body: JSON, plan: DeployPlan, outcome: DeployOutcome, status: JSON, now: Any
    ) -> None:
        spelling, told = events.spelling_events(body, self.spellings.get(key, frozenset()))
        self.spellings[key] = told
        failed, told = events.write_failure_events(outcome, self.failures_told.get(key, frozenset()))
        self.failures_told[key] = told
        found, memory = events.rollout_events(
            plan=plan,
            outcome=outcome,
            old_status=body.get("status"),
            new_status=status,
            breaches=self.breaches.get(key, {}),
        )
        self.breaches[key] = memory
        found = spelling + failed + found
        obj = {**body, "apiVersion": MANIFEST_WORK_REPLICA_SETS.api_version, "kind": KIND}
        for event in found:
            log.info(
                "rollout event",
                extra={"key": key, "reason": event.reason, "event_message": event.message},
            )
            await self.recorder.record(
                obj,
                reason=event.reason,
                message=event.message,
                now=now,
                event_type=WARNING if event.type == events.WARNING else NORMAL,
            )

    def _publish_metrics(self, body: JSON, plan: DeployPlan) -> None:
        namespace, name = namespace_of(body), name_of(body)
        names = set()
        for ref in plan.refs:
            if ref.error is not None:
                continue
            names.add(ref.name)
            metrics.set_rollout_clusters(KIND, namespace, name, ref.name, report.status_counts(ref))
        metrics.set_rollout_placements(KIND, namespace, name, names)


def setup(registry: kopf.OperatorRegistry, context: ControllerContext) -> None:
    """Register the ManifestWorkReplicaSet controller's handlers on ``registry``."""
    controller = WorksetController(context)
    controller.setup(registry)
    context.extras.setdefault("workset", controller)
