"""What a simulated work agent writes for one ManifestWork (pure: no I/O, ``now`` is an argument).

The agent follows ``docs/behaviour/work-agent.md``:

1. It first adds the ``cluster.open-cluster-management.io/manifest-work-cleanup`` finalizer;
   nothing is applied or reported before that. A work whose ``Complete`` condition is True is
   never re-applied. A work being deleted gets ``Deleting`` True and loses the finalizer once the
   simulated clean-up is over.
2. For each generation g it waits ``apply_delay`` after first seeing g, then writes in one update
   the per-manifest ``resourceStatus`` (resourceMeta, ``Applied``, ``Available``,
   ``StatusFeedbackSynced`` and rule conditions), the work-level ``Applied``/``Available``, the
   rule-aggregated conditions and, in ``rollout`` mode, ``Progressing`` True ``Applying``.
3. ``progress_duration`` later the simulated resources settle: on success ``Progressing`` turns
   False ``Completed``; on failure it stays True and ``Degraded`` True ``ApplyFailed`` is added.
   In ``faithful`` mode the agent writes no ``Progressing``/``Degraded`` of its own; only condition
   rules produce them, from the resource state (which also changes when the resources settle).

Each apply is made against the cluster the runner passes in (``ClusterView``: its namespaces and
the kinds it serves; default a fresh cluster): a manifest the cluster refuses (``apply``) is
``Applied`` False with the cluster's error, and in ``rollout`` mode the work then ends like the
``ApplyFailed`` outcome. The plan says which objects the work holds on the cluster afterwards.

Until the apply of a new generation happens, the conditions of the previous generation stay as
they are, and no observedGeneration is ever newer than the work's generation. Conditions follow
set-condition semantics: ``lastTransitionTime`` moves only when a status flips;
``StatusFeedbackSynced`` is removed and re-added (fresh time) whenever the values change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.apply import ManifestResult, apply_manifests
from ocm_rollout.sandbox.agents.cluster import EMPTY_VIEW, ClusterObject, ClusterView
from ocm_rollout.sandbox.agents.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    find_condition,
    format_time,
    is_true,
    make_condition,
    remove_condition,
    set_condition,
)
from ocm_rollout.sandbox.agents.feedback import feedback_values
from ocm_rollout.sandbox.agents.resources import Health, ManifestIdentity, simulate_object
from ocm_rollout.sandbox.agents.rules import evaluate_rules, is_rule_generated


class Mode(StrEnum):
    """``rollout``: the agent reports Progressing/Degraded itself (what OCM's tests do by hand).
    ``faithful``: like OCM's agent, only condition rules produce them."""

    ROLLOUT = "rollout"
    FAITHFUL = "faithful"


class Outcome(StrEnum):
    """How the apply of a generation ends on the simulated cluster."""

    SUCCEEDED = "Succeeded"  # applied, available, rolled out
    DEGRADED = "Degraded"  # applied and available, but the workloads never become ready
    APPLY_FAILED = "ApplyFailed"  # every manifest fails to apply
    STUCK = "Stuck"  # applied, and the rollout never ends either way


FAILURES = (Outcome.DEGRADED, Outcome.APPLY_FAILED)


@dataclass(frozen=True)
class WorkBehaviour:
    """How one simulated cluster treats one ManifestWork (from the profile)."""

    mode: Mode = Mode.ROLLOUT
    apply_delay: float = 1.0
    progress_duration: float = 2.0
    outcome: Outcome = Outcome.SUCCEEDED
    message: str = ""
    raw_feedback_json: bool = False
    cleanup_delay: float = 0.0

    @property
    def failure_message(self) -> str:
        if self.message:
            return self.message
        if self.outcome is Outcome.APPLY_FAILED:
            return "simulated apply failure"
        return "simulated workloads did not become ready"


class Phase(StrEnum):
    WAITING = "Waiting"  # generation seen, not applied yet
    PROGRESSING = "Progressing"  # applied, resources not settled
    SETTLED = "Settled"  # resources reached the outcome


@dataclass(frozen=True)
class Sighting:
    """When the agent first saw the current generation of a work, and whether the status already
    reported that generation then (the agent restarted, or another instance applied it)."""

    first_seen: datetime
    already_reported: bool = False


@dataclass(frozen=True)
class WorkPlan:
    """What the agent does now. ``status`` is the complete new status (None: unchanged). The
    runner adds the finalizer first, writes the status, then removes the finalizer (and with it
    the work's objects from the cluster). ``applied``: the objects the work holds on the cluster
    from now on (None: unchanged); the runner records them before it writes the status that
    reports them, as an agent applies first and reports after."""

    add_finalizer: bool = False
    status: dict[str, Any] | None = None
    remove_finalizer: bool = False
    wake_at: datetime | None = None
    phase: Phase | None = None
    applied: frozenset[ClusterObject] | None = None


def generation_of(work: Mapping[str, Any]) -> int:
    value = (work.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) and value > 0 else 1


def reports_generation(work: Mapping[str, Any]) -> bool:
    """The status already carries the apply result of the current generation."""
    applied = find_condition((work.get("status") or {}).get("conditions"), names.WORK_APPLIED)
    return applied is not None and applied.get("observedGeneration") == generation_of(work)


def sighting_for(work: Mapping[str, Any], now: datetime) -> Sighting:
    """The sighting the runner records the first time it meets a generation."""
    return Sighting(first_seen=now, already_reported=reports_generation(work))


def _rollout_settled(conditions: Sequence[Mapping[str, Any]], generation: int) -> bool:
    progressing = find_condition(conditions, names.WORK_PROGRESSING)
    degraded = find_condition(conditions, names.WORK_DEGRADED)
    if progressing is None or progressing.get("observedGeneration") != generation:
        return False
    if progressing.get("status") == FALSE:
        return True
    return (
        degraded is not None and degraded.get("status") == TRUE and degraded.get("observedGeneration") == generation
    )


def phase_of(
    work: Mapping[str, Any], behaviour: WorkBehaviour, sighting: Sighting, now: datetime
) -> tuple[Phase, datetime | None]:
    """The phase of the current generation and when it next changes (None: never).

    The first write at a generation always shows the rollout in progress, even when the agent
    comes late: the outcome is only reported by a later write.
    """
    generation = generation_of(work)
    conditions = (work.get("status") or {}).get("conditions") or []
    if behaviour.mode is Mode.ROLLOUT and _rollout_settled(conditions, generation):
        return Phase.SETTLED, None
    if sighting.already_reported:
        if behaviour.mode is Mode.FAITHFUL:
            return Phase.SETTLED, None
        apply_at = sighting.first_seen
    else:
        apply_at = sighting.first_seen + timedelta(seconds=behaviour.apply_delay)
    settle_at = apply_at + timedelta(seconds=behaviour.progress_duration)
    reported = reports_generation(work)
    if not reported and now < apply_at:
        return Phase.WAITING, apply_at
    if behaviour.outcome is Outcome.STUCK:
        return Phase.PROGRESSING, None
    if not reported:
        return Phase.PROGRESSING, settle_at if settle_at > now else None
    if now < settle_at:
        return Phase.PROGRESSING, settle_at
    return Phase.SETTLED, None


# --- manifestConfigs -----------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")


def _matches(pattern: Any, value: str) -> bool:
    text = pattern if isinstance(pattern, str) else ""
    return bool(_wildcard(text).match(value))


def manifest_option(
    meta: Mapping[str, Any], configs: Sequence[Mapping[str, Any]] | None, field: str
) -> Sequence[Mapping[str, Any]]:
    """The ``field`` (feedbackRules / conditionRules) of the first matching manifestConfig
    that defines it."""
    for config in configs or ():
        ident = config.get("resourceIdentifier") or {}
        if not (
            _matches(ident.get("group", ""), meta["group"])
            and _matches(ident.get("resource", ""), meta["resource"])
            and _matches(ident.get("name", ""), meta["name"])
            and _matches(ident.get("namespace", ""), meta["namespace"])
        ):
            continue
        rules = config.get(field)
        if rules:
            return list(rules)
    return []


# --- per-manifest status ---------------------------------------------------------------------------


def _health(phase: Phase, outcome: Outcome) -> Health:
    if phase is Phase.SETTLED and outcome is Outcome.SUCCEEDED:
        return Health.READY
    if phase is Phase.SETTLED and outcome in FAILURES:
        return Health.BROKEN
    return Health.PROGRESSING


def _manifest_entry(
    apply_result: ManifestResult,
    manifest: Any,
    previous: Mapping[str, Any] | None,
    configs: Sequence[Mapping[str, Any]] | None,
    behaviour: WorkBehaviour,
    phase: Phase,
    generation: int,
    now: datetime,
) -> dict[str, Any]:
    identity = apply_result.identity
    conditions: list[Condition] = [dict(c) for c in (previous or {}).get("conditions") or []]
    old_values = ((previous or {}).get("statusFeedback") or {}).get("values") or []
    apply_error = apply_result.error
    if apply_error is None:
        applied = make_condition(
            names.MANIFEST_APPLIED, TRUE, names.REASON_APPLIED_MANIFEST_COMPLETE, "Apply manifest complete", generation
        )
    else:
        applied = make_condition(
            names.MANIFEST_APPLIED,
            FALSE,
            names.REASON_APPLIED_MANIFEST_FAILED,
            f"Failed to apply manifest: {apply_error}",
            generation,
        )
    conditions = set_condition(conditions, applied, now)
    entry: dict[str, Any] = {"resourceMeta": dict(identity.meta), "statusFeedback": {}, "conditions": conditions}
    if old_values:
        entry["statusFeedback"] = {"values": old_values}

    if not identity.complete:
        available = make_condition(
            names.MANIFEST_AVAILABLE, UNKNOWN, names.REASON_INCOMPLETE_RESOURCE_META, "Resource meta is incomplete"
        )
        entry["conditions"] = set_condition(conditions, available, now)
        return entry
    if apply_error is not None:
        available = make_condition(
            names.MANIFEST_AVAILABLE, FALSE, names.REASON_RESOURCE_NOT_AVAILABLE, "Resource is not available"
        )
        entry["conditions"] = set_condition(conditions, available, now)
        return entry
    available = make_condition(names.MANIFEST_AVAILABLE, TRUE, names.REASON_RESOURCE_AVAILABLE, "Resource is available")
    conditions = set_condition(conditions, available, now)

    obj = simulate_object(manifest, _health(phase, behaviour.outcome))
    feedback_rules = manifest_option(identity.meta, configs, "feedbackRules")
    values: list[dict[str, Any]] = []
    if not feedback_rules:
        synced = make_condition(names.MANIFEST_FEEDBACK_SYNCED, TRUE, names.REASON_NO_STATUS_FEEDBACK_SYNCED)
    else:
        result = feedback_values(feedback_rules, obj, raw_json=behaviour.raw_feedback_json)
        values = result.values
        if result.errors:
            synced = make_condition(
                names.MANIFEST_FEEDBACK_SYNCED,
                FALSE,
                names.REASON_STATUS_FEEDBACK_SYNC_FAILED,
                f"Sync status feedback failed with error {result.error_text}",
            )
        else:
            synced = make_condition(names.MANIFEST_FEEDBACK_SYNCED, TRUE, names.REASON_STATUS_FEEDBACK_SYNCED)
    if values != old_values:
        conditions = remove_condition(conditions, names.MANIFEST_FEEDBACK_SYNCED)
    conditions = set_condition(conditions, synced, now)
    entry["statusFeedback"] = {"values": values} if values else {}

    for rule_condition in evaluate_rules(manifest_option(identity.meta, configs, "conditionRules"), obj):
        rule_condition["observedGeneration"] = generation
        conditions = set_condition(conditions, rule_condition, now)
    entry["conditions"] = [
        c for c in conditions if not (is_rule_generated(c) and c.get("observedGeneration") != generation)
    ]
    return entry


# --- work-level conditions -------------------------------------------------------------------------


def _aggregate_available(entries: Sequence[Mapping[str, Any]], generation: int) -> Condition:
    total = len(entries)
    statuses = [
        (find_condition(e.get("conditions"), names.MANIFEST_AVAILABLE) or {}).get("status") for e in entries
    ]
    not_available = sum(1 for s in statuses if s == FALSE)
    unknown = sum(1 for s in statuses if s == UNKNOWN)
    if not_available:
        return make_condition(
            names.WORK_AVAILABLE,
            FALSE,
            names.REASON_RESOURCES_NOT_AVAILABLE,
            f"{not_available} of {total} resources are not available",
            generation,
        )
    if unknown:
        return make_condition(
            names.WORK_AVAILABLE,
            UNKNOWN,
            names.REASON_RESOURCES_STATUS_UNKNOWN,
            f"{unknown} of {total} resources have unknown status",
            generation,
        )
    if not any(s == TRUE for s in statuses):
        return make_condition(
            names.WORK_AVAILABLE,
            UNKNOWN,
            names.REASON_RESOURCES_STATUS_UNKNOWN,
            "cannot get any available resource ",
            generation,
        )
    return make_condition(
        names.WORK_AVAILABLE, TRUE, names.REASON_RESOURCES_AVAILABLE, "All resources are available", generation
    )


def aggregate_rule_conditions(entries: Sequence[Mapping[str, Any]], generation: int) -> list[Condition]:
    """Work-level conditions aggregated from the rule-generated manifest conditions."""
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        for cond in entry.get("conditions") or ():
            if is_rule_generated(cond):
                by_type.setdefault(str(cond["type"]), []).append(cond)
    out: list[Condition] = []
    for type_, conds in by_type.items():
        statuses = [c.get("status") for c in conds]
        if type_ == names.WORK_PROGRESSING:
            status = TRUE if TRUE in statuses else UNKNOWN if UNKNOWN in statuses else FALSE
        elif FALSE in statuses:
            status = FALSE
        elif UNKNOWN in statuses or TRUE not in statuses:
            status = UNKNOWN
        else:
            status = TRUE
        message = str(conds[0].get("message", "")) if len(conds) == 1 else f"Aggregated from {len(conds)} manifest conditions"
        out.append(make_condition(type_, status, names.REASON_CONDITION_RULES_AGGREGATED, message, generation))
    return out


def _rollout_conditions(
    conditions: list[Condition], behaviour: WorkBehaviour, phase: Phase, generation: int, now: datetime
) -> list[Condition]:
    degraded = find_condition(conditions, names.WORK_DEGRADED)
    if degraded is not None and degraded.get("observedGeneration") != generation:
        conditions = remove_condition(conditions, names.WORK_DEGRADED)
    if phase is Phase.SETTLED and behaviour.outcome is Outcome.SUCCEEDED:
        conditions = remove_condition(conditions, names.WORK_DEGRADED)
        return set_condition(
            conditions,
            make_condition(
                names.WORK_PROGRESSING,
                FALSE,
                names.REASON_PROGRESSING_COMPLETED,
                "All manifests are applied and rolled out",
                generation,
            ),
            now,
        )
    conditions = set_condition(
        conditions,
        make_condition(
            names.WORK_PROGRESSING, TRUE, names.REASON_PROGRESSING_APPLYING, "Applying the manifests", generation
        ),
        now,
    )
    if phase is Phase.SETTLED and behaviour.outcome in FAILURES:
        conditions = set_condition(
            conditions,
            make_condition(
                names.WORK_DEGRADED, TRUE, names.REASON_DEGRADED_APPLY_FAILED, behaviour.failure_message, generation
            ),
            now,
        )
    return conditions


def _manifests(work: Mapping[str, Any]) -> list[Any]:
    return list(((work.get("spec") or {}).get("workload") or {}).get("manifests") or [])


def apply_results(work: Mapping[str, Any], behaviour: WorkBehaviour, view: ClusterView) -> list[ManifestResult]:
    """What applying the current generation of ``work`` to a cluster seen as ``view`` gives. A
    profile's ``ApplyFailed`` outcome fails every manifest (nothing reaches the cluster)."""
    results = apply_manifests(_manifests(work), view)
    if behaviour.outcome is not Outcome.APPLY_FAILED:
        return results
    return [
        r if r.error is not None else ManifestResult(replace(r.identity, error=behaviour.failure_message), None)
        for r in results
    ]


def _rollout_behaviour(behaviour: WorkBehaviour, results: Sequence[ManifestResult]) -> WorkBehaviour:
    """A work whose manifests do not all apply fails its rollout like the ``ApplyFailed`` outcome."""
    errors = [r.error for r in results if r.error is not None]
    if not errors or behaviour.outcome is not Outcome.SUCCEEDED:
        return behaviour
    message = behaviour.message or f"{len(errors)} of {len(results)} manifests failed to apply: {errors[0]}"
    return replace(behaviour, outcome=Outcome.APPLY_FAILED, message=message)


def compute_status(
    work: Mapping[str, Any],
    behaviour: WorkBehaviour,
    phase: Phase,
    now: datetime,
    view: ClusterView = EMPTY_VIEW,
    results: Sequence[ManifestResult] | None = None,
) -> dict[str, Any]:
    """The full status of ``work`` once its current generation is applied (phase past WAITING)
    to a cluster seen as ``view`` (``results``: the apply, when already computed)."""
    if results is None:
        results = apply_results(work, behaviour, view)
    generation = generation_of(work)
    spec = work.get("spec") or {}
    manifests = _manifests(work)
    configs = spec.get("manifestConfigs") or []
    status = work.get("status") or {}
    previous: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for old in (status.get("resourceStatus") or {}).get("manifests") or []:
        old_identity = ManifestIdentity(
            {**{"group": "", "version": "", "kind": "", "resource": "", "name": "", "namespace": ""},
             **(old.get("resourceMeta") or {})},
            None if (old.get("resourceMeta") or {}).get("kind") else "unparsable",
        )
        previous.setdefault(old_identity.key, old)

    entries = [
        _manifest_entry(result, manifest, previous.get(result.identity.key), configs, behaviour, phase, generation, now)
        for result, manifest in zip(results, manifests, strict=True)
    ]

    conditions: list[Condition] = [dict(c) for c in status.get("conditions") or []]
    if entries:
        all_applied = all(is_true(e["conditions"], names.MANIFEST_APPLIED) for e in entries)
        applied = (
            make_condition(
                names.WORK_APPLIED, TRUE, names.REASON_APPLIED_WORK_COMPLETE, "Apply manifest work complete", generation
            )
            if all_applied
            else make_condition(
                names.WORK_APPLIED, FALSE, names.REASON_APPLIED_WORK_FAILED, "Failed to apply manifest work", generation
            )
        )
        conditions = set_condition(conditions, applied, now)
        conditions = set_condition(conditions, _aggregate_available(entries, generation), now)
    for aggregated in aggregate_rule_conditions(entries, generation):
        if behaviour.mode is Mode.ROLLOUT and aggregated["type"] in (names.WORK_PROGRESSING, names.WORK_DEGRADED):
            continue
        conditions = set_condition(conditions, aggregated, now)
    conditions = [c for c in conditions if not (is_rule_generated(c) and c.get("observedGeneration") != generation)]
    if behaviour.mode is Mode.ROLLOUT and entries:
        conditions = _rollout_conditions(conditions, _rollout_behaviour(behaviour, results), phase, generation, now)

    new_status: dict[str, Any] = {key: value for key, value in status.items() if key not in ("conditions", "resourceStatus")}
    new_status["conditions"] = conditions
    new_status["resourceStatus"] = {"manifests": entries} if entries else {}
    return new_status


def _deleting(work: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    status = dict(work.get("status") or {})
    status["conditions"] = set_condition(
        status.get("conditions") or [],
        make_condition(
            names.WORK_DELETING, TRUE, names.REASON_WORK_DELETING, "ManifestWork is being deleted", generation_of(work)
        ),
        now,
    )
    return status


def _same(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    old = old or {}
    return (old.get("conditions") or []) == (new.get("conditions") or []) and (old.get("resourceStatus") or {}) == (
        new.get("resourceStatus") or {}
    )


def plan_work(
    work: Mapping[str, Any],
    behaviour: WorkBehaviour,
    sighting: Sighting,
    now: datetime,
    view: ClusterView = EMPTY_VIEW,
) -> WorkPlan:
    """Everything the simulated agent does for ``work`` at ``now``.

    ``sighting`` is the runner's record of when it first saw the current generation (for a work
    being deleted: when it first saw the deletion). ``view`` is the cluster without the objects of
    this work (default: a fresh cluster).
    """
    meta = work.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    has_finalizer = names.MANIFEST_WORK_FINALIZER in finalizers
    if meta.get("deletionTimestamp"):
        if not has_finalizer:
            return WorkPlan()
        status = _deleting(work, now)
        cleanup_at = sighting.first_seen + timedelta(seconds=behaviour.cleanup_delay)
        done = now >= cleanup_at
        return WorkPlan(
            status=None if _same(work.get("status"), status) else status,
            remove_finalizer=done,
            wake_at=None if done else cleanup_at,
        )
    if not has_finalizer:
        return WorkPlan(add_finalizer=True)
    conditions = (work.get("status") or {}).get("conditions") or []
    if is_true(conditions, names.WORK_COMPLETE):
        return WorkPlan()
    phase, wake_at = phase_of(work, behaviour, sighting, now)
    if phase is Phase.WAITING:
        return WorkPlan(wake_at=wake_at, phase=phase)
    results = apply_results(work, behaviour, view)
    status = compute_status(work, behaviour, phase, now, results=results)
    return WorkPlan(
        status=None if _same(work.get("status"), status) else status,
        wake_at=wake_at,
        phase=phase,
        applied=frozenset(r.obj for r in results if r.obj is not None),
    )


__all__ = [
    "Mode",
    "Outcome",
    "Phase",
    "Sighting",
    "WorkBehaviour",
    "WorkPlan",
    "aggregate_rule_conditions",
    "apply_results",
    "compute_status",
    "format_time",
    "generation_of",
    "manifest_option",
    "phase_of",
    "plan_work",
    "reports_generation",
    "sighting_for",
]
