"""The steps of one ClusterManagementAddOn pass, in order (``CMA_PASS``).

What flows through them is a ``CmaPass``: the CMA as read (then as written), its status
references, placements, MCAs, reservation record and configuration rollout plan, and what the
writes achieved. A step returns an ``Outcome`` to end the pass there, or None to go on:

validate → status references → report unhashable → install (creates/deletes) → self-managed
status → verify (the applied add-ons of placements with checks or a plugin, ``verify``) → plan
config rollout → confirm from the API → report the abort record → write abort record and
reservations (one fenced CMA write) → the plugins' BeginRollout and ProgressRollout
(``plugin_calls``) → write MCA statuses → the verified rollout's conditions → write CMA status →
events → metrics → the outcome (docs/behaviour/addons.md 4-10, docs/behaviour/validation.md).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.addon import (
    abort,
    configrollout,
    configs,
    events,
    install,
    mca_io,
    plugin_calls,
    verification_events,
    verification_status,
)
from ocm_rollout.controllers.addon import verify as verifying
from ocm_rollout.controllers.addon.configrollout import ConfigRolloutPlan
from ocm_rollout.controllers.addon.indexes import cma_config_keys
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.reservations import ReservationRecordError, Reservations
from ocm_rollout.controllers.rollout.verification_pass import PassVerification
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.coalesce import PassCost
from ocm_rollout.controllers.runtime.events import WARNING
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE, Outcome, after, back_off

if TYPE_CHECKING:
    from ocm_rollout.controllers.addon.operator import AddonController

log = logging.getLogger(__name__)

KIND = "ClusterManagementAddOn"
# OCM's informer resync for add-on objects: a recheck further away is looked at after this long
# instead (docs/behaviour/addons.md 11; controllers.common.requeue).
RESYNC_SECONDS = 10 * 60

EVENT_CLUSTER_NOT_FOUND = "ManagedClusterNotFound"
EVENT_INVALID = "InvalidClusterManagementAddOn"
EVENT_DELETES_HELD = "ManagedClusterAddOnDeletionHeld"
EVENT_CONFIG_NOT_HASHABLE = "ConfigurationNotHashable"


@dataclass
class CmaPass:
    """One pass over one CMA; see the module docstring."""

    name: str
    body: JSON
    now: datetime
    status: JSON = field(default_factory=dict)
    managed: bool = True
    placements: dict[tuple[str, str], PlacementInput] = field(default_factory=dict)
    install_failed: bool = False
    mcas: dict[str, JSON] = field(default_factory=dict)
    record: Reservations = reservations.EMPTY
    plan: ConfigRolloutPlan | None = None
    written: set[str] = field(default_factory=set)
    writes_failed: bool = False
    # An MCA status write met a newer MCA (409): the pass planned from a version older than the
    # API's, whose event may already have been handled, so it looks again instead of waiting for one.
    writes_conflicted: bool = False
    persisted: bool = True
    # What the verify step (and the plugin calls) found: per placement, the failures it decided.
    verification: PassVerification = field(default_factory=PassVerification)
    # Seconds this pass spent computing over the whole fleet (install plan, reading the MCAs,
    # the rollout plan and its re-plan after a confirm): how long the next MCA change waits for
    # it (``coalesce``).
    computing: PassCost = field(default_factory=PassCost)

    @property
    def planned(self) -> ConfigRolloutPlan:
        assert self.plan is not None
        return self.plan


Step = Callable[["AddonController", CmaPass], Awaitable[Outcome | None]]


async def validate(ctl: AddonController, p: CmaPass) -> Outcome | None:
    problem = ctl.validation_error(p.body)
    if problem is not None:
        await ctl.tell_cma_once(p, "invalid", EVENT_INVALID, f"invalid ClusterManagementAddOn: {problem}")
        return DONE
    ctl.told.clear(p.name, "invalid")
    return None


async def status_references(ctl: AddonController, p: CmaPass) -> Outcome | None:
    p.status = configs.cma_status_references(p.body, ctl.configs.spec_hash)
    return None


async def report_unhashable(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """A configuration the CMA names whose spec cannot be hashed keeps its recorded hash (so
    nothing rolls out for it); say so once, naming the object and the problem."""
    named = cma_config_keys(p.body)
    bad = sorted(
        f"{resource}.{group}/{namespace}/{config}: {why}" if group else f"{resource}/{namespace}/{config}: {why}"
        for (group, resource, namespace, config), why in ctl.configs.unhashable.items()
        if (group, resource, namespace, config) in named
    )
    if not bad:
        ctl.told.clear(p.name, "unhashable")
        return None
    message = "cannot compute the spec hash of " + "; ".join(bad) + " (its last recorded hash is kept)"
    await ctl.tell_cma_once(p, "unhashable", EVENT_CONFIG_NOT_HASHABLE, message)
    return None


async def install_mcas(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """Create and delete MCAs per the install strategy (docs/behaviour/addons.md 4.2)."""
    p.managed = install.is_lifecycle_managed(p.body)
    p.placements = ctl.placement_inputs(p.body)
    if not p.managed:
        return None
    with p.computing.measure():
        plan = install.plan_install(p.body, p.placements, list(ctl.mcas(p.name).values()), ctl.clusters_by_name())
    p.install_failed = await mca_io.create_mcas(ctl, p.name, plan.creates)
    p.install_failed = await mca_io.delete_mcas(ctl, p.body, plan.deletes) or p.install_failed
    if plan.missing_clusters:
        p.install_failed = True
        message = (
            "no ManagedCluster for decided cluster(s) " + ", ".join(plan.missing_clusters[:20])
            + ": their ManagedClusterAddOns are not created"
        )
        await ctl.tell_cma_once(p, "missing", EVENT_CLUSTER_NOT_FOUND, message)
    else:
        ctl.told.clear(p.name, "missing")
    if plan.held_deletes and plan.hold_reason:
        message = f"not deleting ManagedClusterAddOns of {', '.join(plan.held_deletes[:20])} yet: {plan.hold_reason}"
        await ctl.tell_cma_once(p, "held", EVENT_DELETES_HELD, message)
    else:
        ctl.told.clear(p.name, "held")
    return None


async def self_managed_status(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """A self-managed add-on gets its status references, and nothing more."""
    if p.managed:
        return None
    if p.status != (p.body.get("status") or {}):
        await mca_io.patch_cma(ctl, p.body, {"status": p.status}, subresource="status")
    return DONE


async def verify(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """Validate the add-ons that applied, under strategies with checks or a plugin (verify.py);
    the plan reads the verdicts this writes on the MCAs."""
    await verifying.verify(ctl, p)
    return None


def _plan(ctl: AddonController, p: CmaPass) -> ConfigRolloutPlan:
    return configrollout.plan_config_rollout(
        cma={**p.body, "status": p.status}, mcas=p.mcas, placements=p.placements, reserved=p.record,
        now=p.now, hash_of=ctl.configs.spec_hash, judge=ctl.judge_memo(p.name),
    )


async def plan_rollout(ctl: AddonController, p: CmaPass) -> Outcome | None:
    with p.computing.measure():
        p.mcas = ctl.mcas(p.name)
        try:
            p.record = reservations.of_owner(p.body)
        except ReservationRecordError as exc:
            log.warning("ignoring a damaged reservation record", extra={"key": p.name, "error": str(exc)})
            p.record = reservations.EMPTY
        p.plan = _plan(ctl, p)
    return None


async def confirm(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """New MCAs go in flight, or a rollout is aborted: decide from the API itself, not only
    from the cache."""
    if not (p.planned.reservations.adds_to(p.record) or p.planned.new_aborts):
        return None
    confirmed = await mca_io.confirm_mcas(ctl, p.name, p.mcas)
    if confirmed is not None:
        with p.computing.measure():
            p.mcas = confirmed
            p.plan = _plan(ctl, p)
    return None


async def report_abort_record(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """A damaged abort record is ignored (and replaced by the next abort): say so once."""
    error = p.planned.abort_record_error
    if error is None:
        ctl.told.clear(p.name, "aborts")
        return None
    await ctl.tell_cma_once(p, "aborts", EVENT_INVALID, f"ignoring the abort record: {error}")
    return None


async def write_record(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """The abort record and the reservations, in one CMA write fenced with the CMA as read."""
    plan = p.planned
    annotations: dict[str, str | None] = {}
    if plan.reservations != p.record:
        annotations.update(reservations.annotation_patch(plan.reservations))
    if plan.aborts_changed:
        annotations.update(abort.annotation_patch(plan.aborts))
    if not annotations:
        return None
    updated = await mca_io.patch_cma(ctl, p.body, {"metadata": {"annotations": annotations}}, subresource=None)
    if updated is None:
        log.info("reservation conflict: planning again", extra={"key": p.name})
        return CONFLICT
    p.body = updated
    return None


async def call_plugins(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """An add-on whose placement's plugin has not begun its rollout yet is not given the
    configurations (it stays reserved); ProgressRollout for every placement with a plugin."""
    plugin_calls.begin(ctl, p)
    plugin_calls.progress(ctl, p)
    return None


async def write_mca_statuses(ctl: AddonController, p: CmaPass) -> Outcome | None:
    planned = [cluster for cluster in p.planned.mca_status if cluster in p.mcas]
    p.written, p.writes_failed = await mca_io.write_mca_statuses(ctl, p.mcas, p.planned.mca_status)
    p.writes_conflicted = not p.writes_failed and any(cluster not in p.written for cluster in planned)
    return None


async def write_cma_status(ctl: AddonController, p: CmaPass) -> Outcome | None:
    status = verification_status.apply(
        p.planned.cma_status, cma=p.name, nodes=p.planned.nodes, verification=p.verification, now=p.now
    )
    p.planned.cma_status = status
    if status != (p.body.get("status") or {}):
        p.persisted = await mca_io.patch_cma(ctl, p.body, {"status": status}, subresource="status") is not None
    return None


async def tell_events(ctl: AddonController, p: CmaPass) -> Outcome | None:
    """The DeprecatedRolloutType warnings and the rollout's events (only for MCAs whose status
    write is on record)."""
    spelling, told = events.spelling_events(p.body, ctl.told.get(p.name, "spellings", frozenset()))
    ctl.told.put(p.name, "spellings", told)
    found, memory = events.rollout_events(
        plan=p.planned, old_cma_status=p.body.get("status"), written=p.written if p.persisted else set(),
        breaches=ctl.told.get(p.name, "breaches", {}),
    )
    ctl.told.put(p.name, "breaches", memory)
    promotions, waits = verification_events.promotion_events(p.name, p.planned.nodes, ctl.told.get(p.name, "promotions", {}))
    ctl.told.put(p.name, "promotions", waits)
    verified = verification_events.validation_failed_events(p.verification.failures) + promotions
    for event in spelling + found + verified:
        await ctl.tell_cma(p.body, event.reason, event.message, event.type)
    return None


async def publish_metrics(ctl: AddonController, p: CmaPass) -> Outcome | None:
    names = set()
    for node in p.planned.nodes:
        placement = f"{node.namespace}/{node.name}"
        names.add(placement)
        metrics.set_rollout_clusters(KIND, "", p.name, placement, node.status_counts())
    metrics.set_rollout_placements(KIND, "", p.name, names)
    return None


async def next_pass(ctl: AddonController, p: CmaPass) -> Outcome | None:
    if p.writes_failed or p.install_failed:
        return back_off("MCA writes failed" if p.writes_failed else "install incomplete")
    if not p.persisted or p.writes_conflicted:
        return CONFLICT
    if reservations.repass_now(p.planned.deferred, p.record, p.planned.reservations):
        return after(0.0)
    recheck = p.planned.recheck_after
    if p.verification.next_at is not None:
        due = max((p.verification.next_at - p.now).total_seconds(), 0.05)
        recheck = due if recheck is None else min(recheck, due)
    return after(next_look(recheck, RESYNC_SECONDS))


CMA_PASS: tuple[Step, ...] = (
    validate,
    status_references,
    report_unhashable,
    install_mcas,
    self_managed_status,
    verify,
    plan_rollout,
    confirm,
    report_abort_record,
    write_record,
    call_plugins,
    write_mca_statuses,
    write_cma_status,
    tell_events,
    publish_metrics,
    next_pass,
)

__all__ = ["CMA_PASS", "RESYNC_SECONDS", "WARNING", "CmaPass"]
