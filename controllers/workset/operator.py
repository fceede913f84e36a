"""The ManifestWorkReplicaSet controller: what it watches, its queues, and the steps of a pass.

Inputs come from the runtime's caches (``controllers/runtime``): kopf-fed for MWRSs, Placements and
PlacementDecisions; list-and-watch for the many ManifestWorks and for the template revisions
(ControllerRevisions). Every change re-queues the MWRS keys that depend on it (a work through its
owner label, also when hashed; a Placement or a decision through the MWRSs referring to it). The
caches show this controller's own writes until they catch up, so a pass never plans from a view
older than what it wrote, and a (cluster, placement) never gets a second work.

One pass per MWRS key (docs/behaviour/mwrs.md 3) runs the steps of ``steps.py`` in order: finalize
(4) or add the finalizer, validate, record the update revision, plan and decide (roll out, revert,
hold; OCM enhancement 229), confirm the works from the API before reserving new clusters, store the
decision (abortedTime first of all) and tell an abort, reserve, write the works, write the status
(6) if it changed, prune the history, tell events and metrics, and come back at the planner's
recheck time (8). A second queue deletes finished works after their TTL (9).
"""

from __future__ import annotations

import logging

from ocm_rollout.api.constants import (
    ANNOTATION_MANIFESTWORK_REPLICASET,
    LABEL_CONTROLLER_HASH,
    LABEL_MANIFESTWORK_REPLICASET,
    LABEL_PLACEMENT,
)
from ocm_rollout.client.kube import (
    CONTROLLER_REVISIONS,
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from ocm_rollout.controllers.common.wire import annotations_of, label_of, meta, name_of, namespace_of
from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.plugin.loader import PluginClients
from ocm_rollout.controllers.rollout.reservations import Reservations
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.chain import run_chain
from ocm_rollout.controllers.runtime.coalesce import Coalescer
from ocm_rollout.controllers.runtime.events import Told
from ocm_rollout.controllers.runtime.metric_queries import MetricQueries
from ocm_rollout.controllers.runtime.outcome import DONE, Outcome, after
from ocm_rollout.controllers.runtime.overlay import DeletePolicy
from ocm_rollout.controllers.runtime.shell import LIST_WATCH, Runtime, Trigger
from ocm_rollout.controllers.runtime.verifier import Verifier
from ocm_rollout.controllers.workset import report, steps, ttl
from ocm_rollout.controllers.workset.aggregation import DeployOutcome
from ocm_rollout.controllers.workset.indexes import ByOwner, Forms, OwnerKeys
from ocm_rollout.controllers.workset.plan import DeployPlan
from ocm_rollout.controllers.workset.revisions_io import RevisionsIO
from ocm_rollout.controllers.workset.steps import Pass
from ocm_rollout.controllers.workset.work_memo import WorkMemo
from ocm_rollout.controllers.workset.workbuild import Owner, owner_for
from ocm_rollout.controllers.workset.works_io import WorksIO
from ocm_rollout.controllers.workset.works_io import failure_kind as _failure_kind

log = logging.getLogger(__name__)

__all__ = ["RESYNC_SECONDS", "WorksetController", "_failure_kind"]

COMPONENT = "manifestworkreplicaset-controller"
KIND = "ManifestWorkReplicaSet"
# OCM's informer resync for ManifestWorkReplicaSets: a recheck further away is looked at after this
# long instead (docs/behaviour/mwrs.md 8; controllers.common.requeue).
RESYNC_SECONDS = 30 * 60
# Works written at once by one pass (creates and patches run concurrently up to this many).
WRITE_CONCURRENCY = 16
# A work's change re-queues its MWRS after this many times the computing time of that MWRS's last
# pass, at most WORK_EVENT_WAIT_MAX seconds and with no wait before its first pass (coalesce).
WORK_EVENT_WAIT_FACTOR = 10.0
WORK_EVENT_WAIT_MAX = 2.0
# Back-off after a pass that could not write some works (doubling up to the maximum).
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 300.0
# The revisions the controller watches: labelled with an owner and a template hash.
REVISION_SELECTOR = f"{LABEL_MANIFESTWORK_REPLICASET},{LABEL_CONTROLLER_HASH}"

# The steps of a pass, in order (steps.py); the first to return an Outcome ends the pass.
PASS = (
    steps.resolve_uncertain,
    steps.finalize,
    steps.add_finalizer,
    steps.validate,
    steps.record_revision,
    steps.verify,
    steps.plan,
    steps.confirm,
    steps.record_decision,
    steps.tell_abort,
    steps.reserve,
    steps.execute,
    steps.write_status,
    steps.prune,
    steps.tell,
)


def _key(obj: JSON) -> str:
    return f"{namespace_of(obj)}/{name_of(obj)}"


def _ttl_keys(event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
    """A finished work that no MWRS owns, to the TTL queue."""
    if label_of(obj, LABEL_MANIFESTWORK_REPLICASET) is not None or event_type == "DELETED":
        return []
    return [_key(obj)] if ttl.ttl_seconds(obj) is not None else []


class WorksetController:
    """The declarations and the pass of one running ManifestWorkReplicaSet controller."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.writer = runtime.writer(WRITE_CONCURRENCY)
        self.recorder = runtime.recorder(COMPONENT)
        self.told = Told()  # per MWRS key: "abort", "spellings", "failures", "breaches"
        # The MWRS keys whose last pass put clusters in flight (steps.plan, steps.confirm).
        self.widening: set[str] = set()
        self.owners = OwnerKeys()
        self.works_by_owner = ByOwner()
        self.revisions_by_owner = ByOwner()
        self.forms = Forms()
        self.memo = WorkMemo()
        self.queue = runtime.queue(
            "workset", self.reconcile, retry_base=RETRY_BASE_SECONDS, retry_max=RETRY_MAX_SECONDS
        )
        # Finished-work garbage collection (docs/behaviour/mwrs.md 9), keyed "namespace/name" of a work.
        self.ttl_queue = runtime.queue("workset-ttl", self.reconcile_ttl, workers=1)
        # A pass plans over all the MWRS's works, so its cost grows with the fleet, and the agents
        # report their works one by one: the work changes of a moment share one pass.
        self.coalescer: Coalescer[str] = Coalescer(
            self.queue, floor=0.0, factor=WORK_EVENT_WAIT_FACTOR, ceiling=WORK_EVENT_WAIT_MAX
        )
        self.mwrs = runtime.watch(
            # A pass writes its MWRS (status, reservations, finalizer) and says itself when to look
            # again: the echo of such a write queues nothing.
            MANIFEST_WORK_REPLICA_SETS, index=self.on_mwrs,
            triggers=[Trigger(self.queue, lambda _t, o, _p: [_key(o)], own_writes=False)],
        )
        self.placements = runtime.watch(PLACEMENTS, triggers=[Trigger(self.queue, self.placement_keys)])
        self.decisions = runtime.watch(PLACEMENT_DECISIONS, triggers=[Trigger(self.queue, self.decision_keys)])
        # A work whose deletion was requested still counts (marked deleting) until the watch says so.
        self.works = runtime.watch(
            MANIFEST_WORKS, source=LIST_WATCH, delete_policy=DeletePolicy.MARK, index=self.on_work,
            triggers=[
                Trigger(self.queue, lambda t, o, p: self.coalescer.add(self.work_keys(t, o, p))),
                Trigger(self.ttl_queue, _ttl_keys),
            ],
        )
        self.revisions = runtime.watch(
            CONTROLLER_REVISIONS, source=LIST_WATCH, label_selector=REVISION_SELECTOR,
            delete_policy=DeletePolicy.HIDE, index=self.on_revision, triggers=[Trigger(self.queue, self.revision_keys)],
        )
        self.works_io = WorksIO(runtime, self.works, self.works_by_owner, self.writer, WRITE_CONCURRENCY)
        self.revisions_io = RevisionsIO(runtime, self.revisions, self.revisions_by_owner, self.recorder)
        self.metrics_source = MetricQueries(runtime.context.metric_providers, runtime.clock)
        runtime.on_stop(self.metrics_source.stop)
        self.verifier = Verifier(PluginClients(runtime.context.plugins), self.metrics_source.measure, self.queue.add)
        runtime.on_stop(self.verifier.stop)

    # -- indexes (every event and own write) ---------------------------------------------------------------
    def on_mwrs(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        if event_type == "DELETED":
            self.owners.remove(_key(obj))
        else:
            self.owners.put(_key(obj), owner_for(namespace_of(obj), name_of(obj)).label_value)

    def on_work(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        value = label_of(obj, LABEL_MANIFESTWORK_REPLICASET)
        deleted = event_type == "DELETED"
        self.works_by_owner.update((namespace_of(obj), name_of(obj)), value, obj, deleted=deleted)
        if deleted:
            uid = str(meta(obj).get("uid") or "")
            self.forms.works.pop(uid, None)
            self.memo.forget(uid)

    def on_revision(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        value = label_of(obj, LABEL_MANIFESTWORK_REPLICASET)
        deleted = event_type == "DELETED"
        self.revisions_by_owner.update((namespace_of(obj), name_of(obj)), value, obj, deleted=deleted)
        if deleted and value is not None:
            self.forms.revisions.pop(str(meta(obj).get("uid") or ""), None)

    # -- triggers (watch events only; docs/behaviour/mwrs.md 2) -----------------------------------------------
    def work_keys(self, _event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
        value = label_of(obj, LABEL_MANIFESTWORK_REPLICASET)
        if value is None:
            return []
        keys = sorted(self.owners.of(value))
        full = annotations_of(obj).get(ANNOTATION_MANIFESTWORK_REPLICASET)
        if full is None:
            # Without the owner annotation the label is the plain "<namespace>.<name>"; map it
            # even before the MWRS is known (names containing dots included).
            return keys
        return [key for key in keys if key.replace("/", ".", 1) == full]

    def revision_keys(self, _event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
        value = label_of(obj, LABEL_MANIFESTWORK_REPLICASET)
        if value is None:
            return []
        return [key for key in sorted(self.owners.of(value)) if key.partition("/")[0] == namespace_of(obj)]

    def placement_keys(self, _event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
        return self._referencing(namespace_of(obj), name_of(obj))

    def decision_keys(self, _event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
        placement = label_of(obj, LABEL_PLACEMENT)
        return [] if placement is None else self._referencing(namespace_of(obj), placement)

    def _referencing(self, namespace: str, placement: str) -> list[str]:
        found = []
        for body in self.mwrs.select(namespace):
            refs = (body.get("spec") or {}).get("placementRefs") or []
            if any(isinstance(r, dict) and r.get("name") == placement for r in refs):
                found.append(f"{namespace}/{name_of(body)}")
        return found

    # -- the passes ----------------------------------------------------------------------------------------
    async def reconcile(self, key: str) -> Outcome:
        namespace, _, name = key.partition("/")
        body = self.mwrs.get(name, namespace)
        if body is None:
            self._forget(key, namespace, name)
            return DONE
        p = Pass(key, body, owner_for(namespace, name), self.runtime.clock())
        with self.coalescer.passing(key, p.computing):
            return await run_chain(PASS, self, p) or steps.finish(p, RESYNC_SECONDS)

    async def reconcile_ttl(self, key: str) -> Outcome:
        """Delete a finished work once its ttlSecondsAfterFinished has passed (docs/behaviour/mwrs.md 9)."""
        namespace, _, name = key.partition("/")
        work = self.works.stored(name, namespace)
        if work is None:
            return DONE
        decision = ttl.ttl_decision(work, self.runtime.clock())
        if decision.action == ttl.WAIT:
            return after(decision.after)
        if decision.action == ttl.DELETE:
            log.info("deleting finished work", extra={"key": key})
            await self.runtime.writes.delete(self.works, work, via=self.writer)
        return DONE

    def _forget(self, key: str, namespace: str, name: str) -> None:
        self.told.forget(key)
        self.widening.discard(key)
        self.coalescer.forget(key)
        self.memo.forget_owner(key)
        self.verifier.forget(key)
        self.revisions_io.taken.pop(key, None)
        self.mwrs.forget(name, namespace)
        metrics.forget_rollout(KIND, namespace, name)

    # -- what the steps call (tests hold or wrap these) -----------------------------------------------------
    async def _patch_mwrs(self, body: JSON, patch: JSON, *, subresource: str | None = None) -> JSON | None:
        """Patch the MWRS with its resourceVersion as precondition; None on a conflict."""
        return await self.runtime.writes.patch_fenced(self.mwrs, body, patch, subresource=subresource)

    async def _reserve(self, body: JSON, record: Reservations) -> JSON | None:
        """Write ``record`` on the MWRS, fenced on the resourceVersion the pass planned from; None
        on a conflict: the pass is over, and the next one (when the other writer's change reaches
        the cache, which re-queues this MWRS) plans from the other writer's reservations."""
        patch = {"metadata": {"annotations": reservations.annotation_patch(record)}}
        fenced = await self._patch_mwrs(body, patch)
        if fenced is None:
            log.info("reservation conflict: planning again", extra={"key": _key(body)})
        return fenced

    async def _execute(self, plan: DeployPlan, owner: Owner) -> DeployOutcome:
        return await self.works_io.execute(plan, owner)

    async def _confirm_owned_works(self, owner: Owner, planned_from: list[JSON]) -> list[JSON] | None:
        return await self.works_io.confirm(owner, planned_from)

    def owned_works(self, owner: Owner) -> list[JSON]:
        return self.works_io.owned(owner)

    def publish_metrics(self, body: JSON, plan: DeployPlan) -> None:
        namespace, name = namespace_of(body), name_of(body)
        names = set()
        for ref in plan.refs:
            if ref.error is None:
                names.add(ref.name)
                metrics.set_rollout_clusters(KIND, namespace, name, ref.name, report.status_counts(ref))
        metrics.set_rollout_placements(KIND, namespace, name, names)
