"""The ManifestWorkReplicaSet controller: the kopf shell around the pure core.

One pass per MWRS key (MWRS.md 3): finalize (4) or add the finalizer, then deploy (5) and
status (6), then patch the status only if it changed, record the rollout's events, and ask to
be looked at again when the planner's recheck time comes (8).

Inputs come from caches: kopf informers for MWRS, Placements and PlacementDecisions, and a light
list-and-watch cache for the many ManifestWorks (``controllers.runtime.watchcache``); every change to them
re-queues the MWRS keys that depend on it (a work through its owner label, also when hashed). The controller's own writes
are overlaid on the caches until the caches catch up ("read your writes"), so a pass never
plans from a view older than what this controller already wrote, and a (cluster, placement)
never gets a second work. After a restart the caches are complete before the first pass
(informer.py), so the same holds across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import kopf
from pydantic import ValidationError

from api.constants import (
    ANNOTATION_MANIFESTWORK_REPLICASET,
    CASCADE_DELETION_BACKGROUND,
    CASCADE_DELETION_FOREGROUND,
    CONDITION_MANIFESTWORK_APPLIED,
    FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP,
    LABEL_MANIFESTWORK_REPLICASET,
    LABEL_PLACEMENT,
    LABEL_PLACEMENT_NAME,
    REASON_NOT_AS_EXPECTED,
)
from api.meta import format_validation_error
from api.work_v1alpha1 import ManifestWorkReplicaSet
from controllers.common.wire import (
    annotations_of,
    fenced,
    generation_of,
    is_deleting,
    labels_of,
    meta,
    name_of,
    namespace_of,
)
from controllers.rollout import reservations
from controllers.rollout.reservations import ReservationRecordError, Reservations
from controllers.runtime import metrics
from controllers.runtime.events import NORMAL, WARNING, EventRecorder
from controllers.runtime.informer import Informer, InformerSet
from controllers.runtime.kube import (
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
from controllers.runtime.queue import WorkQueue, run_workers
from controllers.runtime.registry import ControllerContext
from controllers.runtime.watchcache import WatchCache, newer
from controllers.runtime.writer import ConcurrentWriter
from controllers.workset import aggregation, events, report, ttl
from controllers.workset.aggregation import DeployOutcome, WriteFailure
from controllers.workset.plan import DeployPlan, WorkDelete, WorkWrite, plan_deploy
from controllers.workset.template import normal_spec
from controllers.workset.workbuild import Owner, belongs_to, owner_for

log = logging.getLogger(__name__)

COMPONENT = "manifestworkreplicaset-controller"
KIND = "ManifestWorkReplicaSet"
# Longer recheck times are left to the informers' resync, as OCM does (MWRS.md 8).
MAX_RECHECK_SECONDS = 30 * 60
# Works written at once by one pass (creates and patches run concurrently up to this many).
WRITE_CONCURRENCY = 16
# Back-off after a pass that could not write some works (doubling up to the maximum).
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 300.0
# After a write conflict the watch event that caused it is usually a moment away.
CONFLICT_RETRY_SECONDS = 0.5

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


def _failure_kind(exc: BaseException, create: bool) -> str:
    if isinstance(exc, NotFound) and create:
        return aggregation.NAMESPACE_NOT_FOUND
    if isinstance(exc, Invalid):
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
        # Finished-work garbage collection (MWRS.md 9), keyed "namespace/name" of a work.
        self.ttl_queue: WorkQueue[str] = WorkQueue("workset-ttl", on_depth=context.on_queue_depth)
        self.recorder = EventRecorder(context.kube, COMPONENT)
        self.informers: InformerSet | None = None
        self.mwrs_cache: Informer | None = None
        # ManifestWorks are many and change often: a light list-and-watch cache, not kopf.
        self.work_cache = WatchCache(context.kube, MANIFEST_WORKS, on_change=self.on_work)
        self.work_cache_task: asyncio.Task[None] | None = None
        self.placement_cache: Informer | None = None
        self.decision_cache: Informer | None = None
        self.works_rw = ReadYourWrites()
        self.mwrs_rw = ReadYourWrites()
        # Owner label value -> MWRS keys (several only for colliding hashed values).
        self.owners: dict[str, set[str]] = {}
        self.owner_of_key: dict[str, str] = {}
        # uid of a work -> (generation, canonical form of its spec (template.normal_spec)).
        self.spec_forms: dict[str, tuple[int, str]] = {}
        # Works by owner label value, kept from the work informer's events (no full scans).
        self.works_by_owner: dict[str, dict[_Key, JSON]] = {}
        self.work_owner: dict[_Key, str] = {}
        # (namespace, owner label, placement) pairs whose create may have succeeded unseen.
        self.uncertain: set[tuple[str, str, str]] = set()
        self.breaches: dict[str, dict[str, frozenset[str]]] = {}
        # MWRS key -> the DeprecatedRolloutType warnings already recorded (events.spelling_events).
        self.spellings: dict[str, frozenset[str]] = {}
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
            self.task = asyncio.create_task(self._run(), name="workset-workers")
            self.ttl_task = asyncio.create_task(self._run_ttl(), name="workset-ttl-workers")

        @kopf.on.cleanup(registry=registry, id="workset_stop_workers")
        async def stop_workers(**_: Any) -> None:
            self.queue.shut_down()
            self.ttl_queue.shut_down()
            for task in (self.task, self.ttl_task, self.work_cache_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _run(self) -> None:
        assert self.informers is not None
        try:
            await self.informers.wait_synced()
            await self.work_cache.synced.wait()
            await run_workers(
                self.queue, self.reconcile, workers=self.context.workers, on_result=self.context.on_reconcile
            )
        finally:
            # Also when the operator is aborted (a lost lease): no thread outlives it.
            self.writer.close()

    async def _run_ttl(self) -> None:
        await self.work_cache.synced.wait()
        await run_workers(self.ttl_queue, self.reconcile_ttl, workers=1, on_result=self.context.on_reconcile)

    # -- event mapping (cross-resource triggers, MWRS.md 2) ----------------------------------
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
        """Delete a finished work once its ttlSecondsAfterFinished has passed (MWRS.md 9)."""
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
                # Teach the cache too, so the next pass starts from it.
                self.work_cache.remember(work)
                self.on_work("MODIFIED", work, known)
        if not changed:
            return None
        log.info("work cache lagged behind the API; planned again", extra={"owner": owner.label_value})
        return sorted(merged.values(), key=lambda w: (namespace_of(w), name_of(w)))

    def _cached_work(self, key: _Key) -> JSON | None:
        return self.work_cache.get(key[1], key[0])

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
            # This pass writes nothing else (MWRS.md 3). The next one follows at once: it reads
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
        self.retries.pop(key, None)
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
        matches = self.spec_matcher(spec.get("manifestWorkTemplate") or {})
        assert self.placement_cache is not None and self.decision_cache is not None
        placements: dict[str, JSON | None] = {}
        decisions: dict[str, list[JSON]] = {}
        for ref in model.spec.placement_refs:
            placements[ref.name] = self.placement_cache.get(ref.name, namespace)
            decisions[ref.name] = self.decision_cache.select(namespace, labels={LABEL_PLACEMENT: ref.name})
        works = self.owned_works(owner)
        record = self._reservations(key, body)

        def planned(current_works: list[JSON]) -> DeployPlan:
            return plan_deploy(
                mwrs=planned_body,
                owner=owner,
                works=current_works,
                placements=placements,
                decisions=decisions,
                now=now,
                spec_matches=matches,
                reserved=record,
            )

        plan = planned(works)
        if plan.reservations.adds_to(record):
            # New clusters go in flight: plan them from the API itself, not only from the cache,
            # which may lag (e.g. right after a restart), then reserve them on the MWRS with its
            # resourceVersion as read (controllers.rollout.reservations). A concurrent writer
            # makes one of us fail here with 409 and plan again from what the other reserved.
            confirmed = await self._confirm_owned_works(owner, works)
            if confirmed is not None:
                plan = planned(confirmed)
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
            is_current=matches,
            now=now,
            namespace=namespace,
        )
        persisted = True
        if aggregation.status_changed(body.get("status"), result.status):
            persisted = await self._patch_mwrs(body, {"status": result.status}, subresource="status") is not None
        # A status that did not reach the API (a conflict: the next pass comes) announces nothing;
        # waves and breaches are about works already written, so they are told in any case.
        await self._record_events(key, body, plan, outcome, result.status if persisted else body.get("status") or {}, now)
        self._publish_metrics(body, plan)
        failures = outcome.failures()
        if failures:
            attempt = self.retries.get(key, 0)
            self.retries[key] = attempt + 1
            return min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * (2**attempt))
        self.retries.pop(key, None)
        if plan.deferred:
            return 0.0  # more works to reserve than one pass may: go on at once
        recheck = plan.recheck_after
        if recheck is not None and recheck < MAX_RECHECK_SECONDS:
            return recheck
        return None

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
        found, memory = events.rollout_events(
            plan=plan,
            outcome=outcome,
            old_status=body.get("status"),
            new_status=status,
            breaches=self.breaches.get(key, {}),
        )
        self.breaches[key] = memory
        found = spelling + found
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
