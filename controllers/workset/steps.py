"""The steps of one ManifestWorkReplicaSet pass, in the order ``WorksetController.reconcile`` runs
them (docs/behaviour/mwrs.md 3-8).

What flows through them is one ``Pass``: the MWRS as last read or written (``body``: each fenced
write replaces it, so the next write is fenced on the version it made), its owner, the clock, and
what each step adds for the next (the update revision, the plans, the write outcome, the status).
A step returns ``None`` to go on, or the ``Outcome`` that ends the pass (a conflict: look again in
a moment; ``DONE``; ``after(0)``). The last step, ``finish``, always says when to look again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    CASCADE_DELETION_BACKGROUND,
    CASCADE_DELETION_FOREGROUND,
    CONDITION_MANIFESTWORK_APPLIED,
    EVENT_ROLLOUT_ABORTED,
    EVENT_ROLLOUT_RETRIED,
    FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP,
    LABEL_PLACEMENT,
    REASON_NOT_AS_EXPECTED,
)
from ocm_rollout.api.meta import format_validation_error
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS
from ocm_rollout.controllers.common.conditions import set_status_condition
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.common.wire import is_deleting, meta, name_of, namespace_of
from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.reservations import ReservationRecordError, Reservations
from ocm_rollout.controllers.rollout.verification_pass import PassVerification
from ocm_rollout.controllers.runtime.coalesce import PassCost
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE, Outcome, after, back_off
from ocm_rollout.controllers.workset import (
    aggregation,
    history,
    plugin_calls,
    progress,
    rollback,
    verification_events,
    verification_status,
)
from ocm_rollout.controllers.workset import events as rollout_events
from ocm_rollout.controllers.workset.aggregation import DeployOutcome
from ocm_rollout.controllers.workset.apply_failures import ApplyFailure, apply_failure_events
from ocm_rollout.controllers.workset.history import HistoryStep
from ocm_rollout.controllers.workset.plan import WorkDelete
from ocm_rollout.controllers.workset.planning import PlanInputs, Plans, plan_and_decide
from ocm_rollout.controllers.workset.revisions import revision_name, template_of
from ocm_rollout.controllers.workset.template import form_hash, normal_spec
from ocm_rollout.controllers.workset.verify import verify as verify_clusters
from ocm_rollout.controllers.workset.workbuild import Owner

if TYPE_CHECKING:
    from ocm_rollout.controllers.workset.operator import WorksetController

log = logging.getLogger(__name__)


@dataclass
class Pass:
    """One pass over one MWRS, filled in step by step."""

    key: str
    body: JSON
    owner: Owner
    now: datetime
    model: ManifestWorkReplicaSet | None = None
    spec: JSON = field(default_factory=dict)  # spec with placementRefs normalised (validate)
    step: HistoryStep | None = None  # the update revision (record_revision)
    inputs: PlanInputs | None = None  # (plan)
    works: list[JSON] = field(default_factory=list)  # the owner's works as planned from (plan)
    plans: Plans | None = None  # (plan, confirm)
    # The works cache had caught up with the API, read after the MWRS, when the pass planned: the
    # plan needs no confirming (plan).
    caught_up: bool = False
    outcome: DeployOutcome = field(default_factory=DeployOutcome)  # (execute)
    status: JSON = field(default_factory=dict)  # the status to announce events against (write_status)
    persisted: bool = False
    apply_failures: list[ApplyFailure] = field(default_factory=list)  # works that failed to apply (write_status)
    verification: PassVerification = field(default_factory=PassVerification)  # (verify)
    # Seconds spent computing over the MWRS's whole fleet (planning, confirming, the status, the
    # counts): how long the next work change waits for the MWRS's next pass (runtime/coalesce.py).
    computing: PassCost = field(default_factory=PassCost)

    @property
    def namespace(self) -> str:
        return namespace_of(self.body)

    @property
    def name(self) -> str:
        return name_of(self.body)

    @property
    def old_status(self) -> JSON:
        return dict(self.body.get("status") or {})

    def planned(self) -> tuple[PlanInputs, Plans]:
        assert self.inputs is not None and self.plans is not None
        return self.inputs, self.plans


# -- before deploying ----------------------------------------------------------------------------------------
async def resolve_uncertain(ctl: WorksetController, p: Pass) -> Outcome | None:
    """A create whose answer was lost: look for the work before planning again."""
    await ctl.works_io.resolve_uncertain(p.owner)
    return None


async def finalize(ctl: WorksetController, p: Pass) -> Outcome | None:
    """A deleted MWRS: delete its works, then drop the finalizer (after the works are gone
    under cascadeDeletionPolicy Foreground) (docs/behaviour/mwrs.md 4)."""
    if not is_deleting(p.body):
        return None
    for work in ctl.works_io.owned(p.owner):
        if not is_deleting(work):
            await ctl.works_io.delete(WorkDelete(namespace_of(work), name_of(work), None, "MWRS deleted"), work)
    finalizers = list(meta(p.body).get("finalizers") or [])
    if FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP not in finalizers:
        return DONE
    policy = (p.body.get("spec") or {}).get("cascadeDeletionPolicy") or CASCADE_DELETION_BACKGROUND
    if policy == CASCADE_DELETION_FOREGROUND and ctl.works_io.owned(p.owner):
        return DONE  # the works' delete events bring us back
    remaining = [f for f in finalizers if f != FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP]
    if await ctl._patch_mwrs(p.body, {"metadata": {"finalizers": remaining}}) is None:
        return CONFLICT
    return DONE


async def add_finalizer(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Add the cleanup finalizer; that pass writes nothing else, and the next one follows at
    once, reading the patched object from the cache's overlay."""
    finalizers = list(meta(p.body).get("finalizers") or [])
    if FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP in finalizers:
        return None
    patch = {"metadata": {"finalizers": [*finalizers, FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP]}}
    return after(0.0) if await ctl._patch_mwrs(p.body, patch) is not None else CONFLICT


async def validate(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Parse the MWRS; an invalid one gets ManifestworkApplied False and nothing else."""
    try:
        p.model = ManifestWorkReplicaSet.model_validate(p.body)
    except ValidationError as exc:
        conditions = list(p.old_status.get("conditions") or [])
        message = f"invalid ManifestWorkReplicaSet: {format_validation_error(exc)}"
        set_status_condition(conditions, CONDITION_MANIFESTWORK_APPLIED, "False", REASON_NOT_AS_EXPECTED, message, p.now)
        status = {**p.old_status, "conditions": conditions}
        if aggregation.status_changed(p.body.get("status"), status):
            await ctl._patch_mwrs(p.body, {"status": status}, subresource="status")
        return DONE
    p.spec = dict(p.body.get("spec") or {})
    p.spec["placementRefs"] = [
        ref.model_dump(by_alias=True, exclude_none=True, mode="json") for ref in p.model.spec.placement_refs
    ]
    return None


async def record_revision(ctl: WorksetController, p: Pass) -> Outcome | None:
    """The update revision: the spec's template, recorded in the history (created or renumbered)."""
    step = history.resolve_update(
        mwrs=p.body,
        owner_label_value=p.owner.label_value,
        revisions=ctl.revisions_io.owned(p.body, p.owner),
        collision_count=p.old_status.get("collisionCount"),
        taken=ctl.revisions_io.taken.get(p.key, ()),
        holds=ctl.forms.revision_matcher(p.spec.get("manifestWorkTemplate") or {}),
    )
    if not await ctl.revisions_io.record(p.key, p.body, p.owner, step, p.now):
        return CONFLICT
    p.step = step
    return None


async def verify(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Validate the clusters whose work applied, under strategies with checks or a plugin
    (verify.py); the plan reads the verdicts this writes on the works."""
    await verify_clusters(ctl, p)
    return None


# -- planning ------------------------------------------------------------------------------------------------
def _reservations(key: str, body: JSON) -> Reservations:
    try:
        return reservations.of_owner(body)
    except ReservationRecordError as exc:
        # Our own annotation, damaged by hand: the next reservation write replaces it.
        log.warning("ignoring a damaged reservation record", extra={"key": key, "error": str(exc)})
        return reservations.EMPTY


def _matcher(ctl: WorksetController, template: JSON) -> Callable[[JSON], bool]:
    """Does a work hold ``template``: judged once per work version and template."""
    return ctl.memo.matcher(form_hash(normal_spec(template)), ctl.forms.spec_matcher(template))


async def plan(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Plan the update revision under the strategies from the caches and decide what the pass
    does with it (roll out, revert to the current revision, hold). In the middle of a rollout
    (the last pass put clusters in flight) the works cache first catches up with the API, so
    that the plan is already what ``confirm`` would make of it: one plan instead of two."""
    if p.key in ctl.widening:
        p.caught_up = await ctl.works_io.caught_up(p.owner)
    with p.computing.measure():
        _plan(ctl, p)
    return None


def _plan(ctl: WorksetController, p: Pass) -> None:
    assert p.model is not None and p.step is not None
    revisions = ctl.revisions_io.owned(p.body, p.owner)
    current = history.find(revisions, p.old_status.get("currentRevision"), p.name)
    current_template = None if current is None else template_of(current)
    names = [ref.name for ref in p.model.spec.placement_refs]
    p.inputs = PlanInputs(
        body=p.body,
        planned_body={**p.body, "spec": p.spec},
        owner=p.owner,
        step=p.step,
        current_template=current_template,
        matches=_matcher(ctl, p.spec.get("manifestWorkTemplate") or {}),
        revert_matches=None if current_template is None else _matcher(ctl, current_template),
        placements={name: ctl.placements.get(name, p.namespace) for name in names},
        decisions={name: ctl.decisions.select(p.namespace, labels={LABEL_PLACEMENT: name}) for name in names},
        record=_reservations(p.key, p.body),
        now=p.now,
        memo=ctl.memo,
    )
    p.works = ctl.works_io.owned(p.owner)
    p.plans = plan_and_decide(p.inputs, p.works)


async def confirm(ctl: WorksetController, p: Pass) -> Outcome | None:
    """New clusters go in flight: plan them from the API itself, not only from the cache, which
    may lag (e.g. right after a restart), before reserving them ("Why a rollout never widens")."""
    inputs, plans = p.planned()
    widens = plans.plan.reservations.adds_to(inputs.record)
    (ctl.widening.add if widens else ctl.widening.discard)(p.key)
    if not widens or p.caught_up:
        return None
    confirmed = await ctl._confirm_owned_works(p.owner, p.works)
    if confirmed is not None:
        with p.computing.measure():
            p.plans = plan_and_decide(inputs, confirmed)
    return None


# -- the fence: the decision and the reservations before any work ----------------------------------------------
async def record_decision(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Store the revision fields of status (abortedTime above all), fenced, before any work is
    written; an abort request the retry supersedes is withdrawn first."""
    _inputs, plans = p.planned()
    decision = plans.decision
    patch = rollback.fields_patch(p.body.get("status"), decision.fields())
    if patch is None:
        return None
    if decision.clear_abort_request:
        withdrawn = await ctl._patch_mwrs(p.body, {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: None}}})
        if withdrawn is None:
            return CONFLICT
        p.body = withdrawn
    if decision.started_abort:
        # The cause is stored with abortedTime: after a restart it is still there to tell.
        patch["conditions"] = progress.abort_conditions(p.body.get("status"), decision, p.name, p.now)
    stored = await ctl._patch_mwrs(p.body, {"status": patch}, subresource="status")
    if stored is None:
        log.info("revision status conflict: planning again", extra={"key": p.key})
        return CONFLICT
    p.body = stored
    if decision.retried:
        update_name = revision_name(p.name, decision.update.hash)
        message = f"abort of revision {update_name} retried: rolling it out again under each placement's strategy"
        await ctl.recorder.record(
            stored, kind=MANIFEST_WORK_REPLICA_SETS, reason=EVENT_ROLLOUT_RETRIED, message=message, now=p.now
        )
    return None


async def tell_abort(ctl: WorksetController, p: Pass) -> Outcome | None:
    """The Warning RolloutAborted, once per abort: named after the MWRS's uid and abortedTime, so
    whichever pass or instance tells it first (also after a restart between storing the abort and
    telling it) writes it, and any later attempt meets AlreadyExists."""
    _inputs, plans = p.planned()
    decision = plans.decision
    if decision.aborted_time is None or ctl.told.get(p.key, "abort") == decision.aborted_time:
        return None
    cause = progress.abort_cause(decision, p.body.get("status"), p.name)
    message = f"{cause}; {progress.abort_outlook(decision, p.name)}"
    digest = hashlib.sha256(f"{meta(p.body).get('uid')}\x00{decision.aborted_time}".encode()).hexdigest()[:16]
    told = await ctl.recorder.record(
        p.body, kind=MANIFEST_WORK_REPLICA_SETS, reason=EVENT_ROLLOUT_ABORTED, message=message, now=p.now,
        event_type=WARNING, name=f"{p.name}.{digest}",
    )
    if told:
        ctl.told.put(p.key, "abort", decision.aborted_time)
    return None


async def reserve(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Reserve the clusters going in flight on the MWRS, fenced on the version read."""
    inputs, plans = p.planned()
    if plans.plan.reservations == inputs.record:
        return None
    fenced = await ctl._reserve(p.body, plans.plan.reservations)
    if fenced is None:
        return CONFLICT
    p.body = fenced
    return None


# -- deploying and reporting ---------------------------------------------------------------------------------
async def execute(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Write the works (creates, patches, deletes); a cluster whose rollout plugin has not begun
    its rollout yet waits, reserved (plugin_calls.begin)."""
    _inputs, plans = p.planned()
    p.outcome = await ctl._execute(plugin_calls.begin(ctl, p, plans.plan), p.owner)
    plugin_calls.progress(ctl, p)
    return None


async def write_status(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Aggregate the status and the revision status, and patch it (fenced) only if it changed."""
    _inputs, plans = p.planned()
    with p.computing.measure():
        result = aggregation.build_status(
            old_status=p.body.get("status"), plan=plans.plan, outcome=p.outcome, works=ctl.works_io.owned(p.owner),
            is_current=plans.is_current, now=p.now, namespace=p.namespace, memo=ctl.memo,
            owner=(p.key, str(meta(p.body).get("uid") or "")),
        )
        new_status = progress.finish_status(
            result.status, old_status=p.body.get("status"), mwrs_name=p.name, decision=plans.decision,
            plan_u=plans.plan_u, executed=plans.plan, held=plans.held, now=p.now,
        )
        new_status = verification_status.apply(new_status, plan_u=plans.plan_u, verification=p.verification, now=p.now)
        changed = aggregation.status_changed(p.body.get("status"), new_status)
    p.apply_failures = result.apply_failures
    p.persisted = True
    if changed:
        p.persisted = await ctl._patch_mwrs(p.body, {"status": new_status}, subresource="status") is not None
    # A status that did not reach the API (a conflict: the next pass comes) announces nothing.
    p.status = new_status if p.persisted else p.old_status
    return None


async def prune(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Once the status is stored, delete the revisions beyond the history limit (never the
    current or the update revision)."""
    _inputs, plans = p.planned()
    if not p.persisted:
        return None
    assert p.model is not None
    status, decision = p.old_status, plans.decision
    keep = {status.get("currentRevision"), status.get("updateRevision"), decision.current, decision.update.hash}
    await ctl.revisions_io.prune(p.body, p.owner, p.model.spec.revision_history_limit, keep)
    return None


async def tell(ctl: WorksetController, p: Pass) -> Outcome | None:
    """Record the rollout's events (each warning once per distinct situation) and publish the
    per-status cluster counts; waves and breaches are about works already written, so they are
    told whether or not the status was stored."""
    _inputs, plans = p.planned()
    spelling, told = rollout_events.spelling_events(p.body, ctl.told.get(p.key, "spellings", frozenset()))
    ctl.told.put(p.key, "spellings", told)
    failed, told = rollout_events.write_failure_events(p.outcome, ctl.told.get(p.key, "failures", frozenset()))
    ctl.told.put(p.key, "failures", told)
    not_applied, pairs = apply_failure_events(p.apply_failures, ctl.told.get(p.key, "apply-failures", frozenset()))
    ctl.told.put(p.key, "apply-failures", pairs)
    found, memory = rollout_events.rollout_events(
        plan=plans.plan, outcome=p.outcome, old_status=p.body.get("status"), new_status=p.status,
        breaches=ctl.told.get(p.key, "breaches", {}),
    )
    ctl.told.put(p.key, "breaches", memory)
    promotions, waits = verification_events.promotion_events(
        plans.plan_u, plans.decision.update.hash, ctl.told.get(p.key, "promotions", {})
    )
    ctl.told.put(p.key, "promotions", waits)
    verified = verification_events.validation_failed_events(p.verification.failures) + promotions
    for event in spelling + failed + not_applied + found + verified:
        await ctl.recorder.record(
            p.body, kind=MANIFEST_WORK_REPLICA_SETS, reason=event.reason, message=event.message, now=p.now,
            event_type=WARNING if event.type == rollout_events.WARNING else NORMAL,
        )
    with p.computing.measure():
        ctl.publish_metrics(p.body, plans.plan)
    return None


def finish(p: Pass, resync_seconds: float) -> Outcome:
    """Back off after failed writes (the queue's exponential back-off); go on at once when more
    works remain to reserve than one pass may (``reservations.repass_now``); else come back at
    the planner's recheck time."""
    inputs, plans = p.planned()
    failures = p.outcome.failures()
    if failures:
        asked = max((f.retry_after or 0.0 for f in failures), default=0.0)
        return back_off("some works could not be written", at_least=asked)
    if reservations.repass_now(plans.plan.deferred, inputs.record, plans.plan.reservations):
        return after(0.0)
    recheck = plans.plan.recheck_after
    if p.verification.next_at is not None:
        due = max((p.verification.next_at - p.now).total_seconds(), 0.05)
        recheck = due if recheck is None else min(recheck, due)
    return after(next_look(recheck, resync_seconds))
