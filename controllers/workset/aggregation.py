"""The status of a ManifestWorkReplicaSet from a deploy plan and what writing it achieved
(docs/behaviour/mwrs.md 5.3 after the loop, and 6): ``placementSummary``, ``summary`` and the conditions
``PlacementVerified``, ``PlacementRolledOut`` and ``ManifestworkApplied`` with OCM's reasons.

Improvements over OCM (see the README's compatibility section):
- When works cannot be written, ``ManifestworkApplied`` is False with a reason that says why
  (``ClusterNamespaceNotFound``; ``ManifestWorkInvalid`` when the API server refuses the work's
  content: 422 Invalid, 400 BadRequest such as OCM's webhook denying manifests over 500 KiB, 413
  RequestEntityTooLarge; ``ManifestWorkForbidden``; or ``ManifestWorkWriteFailed`` for anything
  else, e.g. etcd's 500 "request is too large") and a message naming the clusters and the
  server's error; and ``PlacementVerified`` no longer claims the decision is empty when it is not.
- A malformed rollout strategy or decision-group label is reported in ``PlacementVerified``
  (False, ``NotAsExpected``, message naming the field) instead of being overwritten.
- A missing Placement's condition message names it.
- Works whose agent reports that they failed to apply (``Applied`` False at their generation) are
  named in ``ManifestworkApplied``'s message with the agents' errors (``apply_failures.py``); a work
  that failed to apply never lets the condition be True (OCM: an empty message).

Pure: no I/O, ``now`` is an argument; conditions use set-condition semantics (the transition
time moves only when the status flips), observedGeneration is never set.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
    REASON_AS_EXPECTED,
    REASON_CLUSTER_NAMESPACE_NOT_FOUND,
    REASON_COMPLETE,
    REASON_MANIFESTWORK_FORBIDDEN,
    REASON_MANIFESTWORK_INVALID,
    REASON_MANIFESTWORK_WRITE_FAILED,
    REASON_NOT_AS_EXPECTED,
    REASON_PLACEMENT_DECISION_EMPTY,
    REASON_PLACEMENT_DECISION_NOT_FOUND,
    REASON_PROCESSING,
    REASON_PROGRESSING,
)
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.wire import JSON, is_deleting
from ocm_rollout.controllers.workset.apply_failures import ApplyFailure, applied_message, apply_failures
from ocm_rollout.controllers.workset.owner_tables import Summary
from ocm_rollout.controllers.workset.plan import DeployPlan, RefPlan
from ocm_rollout.controllers.workset.work_memo import COUNTED, DIRECT, WorkMemo

SUMMARY_KEYS = ("total", "progressing", "available", "degraded", "applied", "desiredTotal", "updated")
# The revision fields of status (OCM enhancement 229; ocm_rollout.controllers.workset.rollback decides them).
REVISION_FIELDS = ("currentRevision", "updateRevision", "collisionCount", "abortedTime")

# Kinds of write failure (improvement 2) and the reason each gives ManifestworkApplied.
NAMESPACE_NOT_FOUND = "NamespaceNotFound"
INVALID = "Invalid"
FORBIDDEN = "Forbidden"
OTHER = "Other"
FAILURE_REASONS = {
    NAMESPACE_NOT_FOUND: REASON_CLUSTER_NAMESPACE_NOT_FOUND,
    INVALID: REASON_MANIFESTWORK_INVALID,
    FORBIDDEN: REASON_MANIFESTWORK_FORBIDDEN,
    OTHER: REASON_MANIFESTWORK_WRITE_FAILED,
}
_LISTED_CLUSTERS = 10


@dataclass(frozen=True)
class WriteFailure:
    """A ManifestWork the controller could not create, patch or delete."""

    cluster: str
    placement: str
    kind: str
    message: str
    verb: str = "create"
    retry_after: float | None = None  # what the API server asked (a 429's Retry-After)


@dataclass
class RefOutcome:
    """What writing one placementRef's plan achieved."""

    applied: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    failures: list[WriteFailure] = field(default_factory=list)


@dataclass
class DeployOutcome:
    refs: dict[str, RefOutcome] = field(default_factory=dict)
    # Failures deleting works of removed placementRefs or duplicates.
    stale_failures: list[WriteFailure] = field(default_factory=list)

    def ref(self, name: str) -> RefOutcome:
        return self.refs.setdefault(name, RefOutcome())

    def failures(self) -> list[WriteFailure]:
        result = list(self.stale_failures)
        for outcome in self.refs.values():
            result.extend(outcome.failures)
        return result


def empty_summary() -> dict[str, int]:
    return dict.fromkeys(SUMMARY_KEYS, 0)


def _old_conditions(old_status: Mapping[str, Any] | None) -> list[JSON]:
    raw = (old_status or {}).get("conditions")
    if not isinstance(raw, list):
        return []
    return [copy.deepcopy(dict(c)) for c in raw if isinstance(c, Mapping) and c.get("type")]


# ------------------------------------------------------------------------------------------
# Messages
# ------------------------------------------------------------------------------------------


def _clusters_text(clusters: Sequence[str]) -> str:
    shown = ", ".join(clusters[:_LISTED_CLUSTERS])
    if len(clusters) > _LISTED_CLUSTERS:
        shown += f" and {len(clusters) - _LISTED_CLUSTERS} more"
    return shown


def failure_message(failures: Sequence[WriteFailure]) -> str:
    """One readable message naming the clusters and the errors, grouped by error."""
    by_error: dict[tuple[str, str], list[str]] = {}
    for failure in failures:
        text = failure.message.replace(f'"{failure.cluster}"', '"<cluster>"')
        by_error.setdefault((failure.verb, text), []).append(failure.cluster)
    clusters = sorted({f.cluster for f in failures})
    parts = []
    for (verb, text), members in by_error.items():
        members = sorted(set(members))
        parts.append(f"{verb} failed in {_clusters_text(members)}: {text}")
    head = f"ManifestWorks could not be written for {len(clusters)} cluster(s)"
    return head + "; " + "; ".join(parts[:5]) + ("" if len(parts) <= 5 else f"; and {len(parts) - 5} more errors")


def failure_reason(failures: Sequence[WriteFailure]) -> str:
    kinds = {f.kind for f in failures}
    if len(kinds) == 1:
        return FAILURE_REASONS.get(kinds.pop(), REASON_MANIFESTWORK_WRITE_FAILED)
    return REASON_MANIFESTWORK_WRITE_FAILED




# ------------------------------------------------------------------------------------------
# The status
# ------------------------------------------------------------------------------------------


def count_work_conditions(works: Iterable[Mapping[str, Any]], memo: WorkMemo = DIRECT) -> dict[str, int]:
    """Per-work conditions that are True, regardless of observedGeneration (docs/behaviour/mwrs.md 6)."""
    totals = [0, 0, 0, 0]
    for work in works:
        applied, progressing, available, degraded = memo.condition_counts(work)
        totals[0] += applied
        totals[1] += progressing
        totals[2] += available
        totals[3] += degraded
    return dict(zip(COUNTED, totals, strict=True))


@dataclass
class StatusResult:
    status: JSON
    # Clusters per placement that count in the summary (works applied with the current template).
    existing: dict[str, set[str]] = field(default_factory=dict)
    succeeded: int = 0
    # Current works whose agent reports that they failed to apply (improvement 9), by cluster.
    apply_failures: list[ApplyFailure] = field(default_factory=list)


def build_status(
    *,
    old_status: Mapping[str, Any] | None,
    plan: DeployPlan,
    outcome: DeployOutcome,
    works: Iterable[JSON],
    is_current: Callable[[JSON], bool],
    now: datetime,
    namespace: str = "",
    memo: WorkMemo = DIRECT,
    owner: tuple[str, str] = ("", ""),
) -> StatusResult:
    """The new ``status`` of the MWRS after the deploy step and the status step (``memo`` keeps
    what each work counts for between passes, and the totals of the MWRS ``owner``, its
    "namespace/name" and uid; by default derived afresh)."""
    old = dict(old_status or {})
    conditions = _old_conditions(old)
    if plan.missing_placement is not None:
        set_status_condition(
            conditions,
            CONDITION_PLACEMENT_VERIFIED,
            "False",
            REASON_PLACEMENT_DECISION_NOT_FOUND,
            f'Placement "{namespace}/{plan.missing_placement}" not found'
            if namespace
            else f'Placement "{plan.missing_placement}" not found',
            now,
        )
        new = copy.deepcopy(old)
        new["conditions"] = conditions
        return StatusResult(new)

    entries: list[JSON] = []
    result = StatusResult({})
    count = 0
    total = 0
    succeeded = 0
    ref_errors: list[str] = []
    for ref in plan.refs:
        if ref.error is not None:
            ref_errors.append(f"placementRef {ref.name!r}: {ref.error}")
            continue
        existing = _existing(ref, outcome.ref(ref.name))
        result.existing[ref.name] = existing
        entries.append(
            {
                "name": ref.name,
                "availableDecisionGroups": (
                    f"{ref.group_count} ({len(existing)} / {ref.selected} clusters applied)"
                ),
                "summary": {**empty_summary(), "total": len(existing)},
            }
        )
        count += len(existing)
        total += ref.selected
        succeeded += len(ref.succeeded)
    result.succeeded = succeeded
    failures = outcome.failures()

    if ref_errors:
        set_status_condition(
            conditions,
            CONDITION_PLACEMENT_VERIFIED,
            "False",
            REASON_NOT_AS_EXPECTED,
            "; ".join(ref_errors),
            now,
        )
    elif count == 0 and not failures:
        set_status_condition(
            conditions, CONDITION_PLACEMENT_VERIFIED, "False", REASON_PLACEMENT_DECISION_EMPTY, "", now
        )
    else:
        set_status_condition(conditions, CONDITION_PLACEMENT_VERIFIED, "True", REASON_AS_EXPECTED, "", now)
    # Never Complete before every placement has been scheduled for its current spec and every
    # decision page read: a placement not yet scheduled would otherwise count 0 of 0.
    unready = [ref.unready for ref in plan.refs if ref.error is None and ref.unready is not None]
    if unready:
        set_status_condition(
            conditions, CONDITION_PLACEMENT_ROLLED_OUT, "False", REASON_PROGRESSING, "; ".join(unready), now
        )
    elif total == succeeded:
        set_status_condition(conditions, CONDITION_PLACEMENT_ROLLED_OUT, "True", REASON_COMPLETE, "", now)
    else:
        set_status_condition(conditions, CONDITION_PLACEMENT_ROLLED_OUT, "False", REASON_PROGRESSING, "", now)

    summary = {**empty_summary(), "total": count}
    kept = _kept_counts(works, is_current, memo, owner) if count > 0 else None
    if kept is not None:
        for entry in entries:
            counts = dict(zip(COUNTED, kept.counts(entry["name"]), strict=True))
            entry["summary"].update(counts)
            for key, value in counts.items():
                summary[key] += value
    counted: list[JSON] = []
    if count > 0 and kept is None:
        by_placement = _current_by_placement(works, is_current, memo)
        for entry in entries:
            counted.extend(by_placement.get(entry["name"], ()))
            counts = count_work_conditions(by_placement.get(entry["name"], ()), memo)
            entry["summary"].update(counts)
            for key, value in counts.items():
                summary[key] += value

    # Improvement 9: works that failed to apply are named in the message, whatever the reason.
    known = None if kept is None else kept.failures([entry["name"] for entry in entries])
    if kept is not None and known is None:
        counted = _counted(works, is_current, memo, [entry["name"] for entry in entries])
    result.apply_failures = known if known is not None else apply_failures(counted, memo.apply_failure)
    not_applied = applied_message(result.apply_failures, count)
    if failures:
        set_status_condition(
            conditions,
            CONDITION_MANIFESTWORK_APPLIED,
            "False",
            failure_reason(failures),
            "; ".join(m for m in (failure_message(failures), not_applied) if m),
            now,
        )
    elif count == 0:
        verified = find_condition(conditions, CONDITION_PLACEMENT_VERIFIED)
        reason = (
            REASON_PLACEMENT_DECISION_EMPTY
            if verified is not None and verified.get("reason") == REASON_PLACEMENT_DECISION_EMPTY
            else REASON_NOT_AS_EXPECTED
        )
        set_status_condition(conditions, CONDITION_MANIFESTWORK_APPLIED, "False", reason, "", now)
    elif (
        summary["available"] == count
        and summary["progressing"] == 0
        and summary["degraded"] == 0
        and not not_applied
    ):
        if unready:
            set_status_condition(
                conditions, CONDITION_MANIFESTWORK_APPLIED, "False", REASON_PROCESSING, "; ".join(unready), now
            )
        else:
            set_status_condition(
                conditions, CONDITION_MANIFESTWORK_APPLIED, "True", REASON_AS_EXPECTED, "", now
            )
    elif summary["progressing"] > 0 and summary["degraded"] == 0:
        set_status_condition(
            conditions, CONDITION_MANIFESTWORK_APPLIED, "False", REASON_PROCESSING, not_applied, now
        )
    else:
        set_status_condition(
            conditions, CONDITION_MANIFESTWORK_APPLIED, "False", REASON_NOT_AS_EXPECTED, not_applied, now
        )

    new = copy.deepcopy(old)
    new["conditions"] = conditions
    new["summary"] = summary
    new["placementSummary"] = entries
    result.status = new
    return result


def _kept_counts(
    works: Iterable[JSON], is_current: Callable[[JSON], bool], memo: WorkMemo, owner: tuple[str, str]
) -> Summary | None:
    """The owner's ``Summary`` table brought up to ``works`` (None: derive afresh)."""
    if not owner[0]:
        return None
    table = memo.summary(owner[0], (owner[1],), is_current)
    if table is None:
        return None
    placement_of = memo.place
    if not table.update(
        works, is_current, lambda work: placement_of(work)[1], memo.condition_counts, memo.apply_failure
    ):
        return None
    return table


def _counted(
    works: Iterable[JSON], is_current: Callable[[JSON], bool], memo: WorkMemo, names: list[str]
) -> list[JSON]:
    """The works counted in the summary, by placementRef in ``names``' order (then as listed)."""
    by_placement = _current_by_placement(works, is_current, memo)
    return [work for name in names for work in by_placement.get(name, ())]


def _current_by_placement(
    works: Iterable[JSON], is_current: Callable[[JSON], bool], memo: WorkMemo
) -> dict[str, list[JSON]]:
    """The works that count in the summary (holding the template, not being deleted) by their
    placement label, as listed."""
    by_placement: dict[str, list[JSON]] = {}
    for work in works:
        if is_deleting(work) or not is_current(work):
            continue
        placement = memo.place(work)[1]
        if placement is not None:
            by_placement.setdefault(placement, []).append(work)
    return by_placement


def _existing(ref: RefPlan, outcome: RefOutcome) -> set[str]:
    """Clusters whose work has the current template after this pass (OCM's ``existing``)."""
    return (set(ref.current) | outcome.applied) - outcome.deleted


def status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether writing ``new`` would change the stored status."""
    return _normal_status(old or {}) != _normal_status(new)


def _normal_status(status: Mapping[str, Any]) -> Any:
    def summary(value: Any) -> dict[str, int]:
        base = empty_summary()
        if isinstance(value, Mapping):
            for key in SUMMARY_KEYS:
                item = value.get(key)
                if isinstance(item, int):
                    base[key] = item
        return base

    conditions = sorted(

            (
                str(c.get("type")),
                str(c.get("status")),
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
                str(c.get("lastTransitionTime") or ""),
                int(c.get("observedGeneration") or 0),
            )
            for c in (status.get("conditions") or [])
            if isinstance(c, Mapping)

    )
    entries = [
        (
            str(e.get("name") or ""),
            str(e.get("availableDecisionGroups") or ""),
            tuple(sorted(summary(e.get("summary")).items())),
        )
        for e in (status.get("placementSummary") or [])
        if isinstance(e, Mapping)
    ]
    return (
        conditions,
        entries,
        tuple(sorted(summary(status.get("summary")).items())) if "summary" in status else None,
        tuple(status.get(key) for key in REVISION_FIELDS),
    )
