"""The revision part of a ManifestWorkReplicaSet's status (OCM enhancement 229), added to what
``aggregation.build_status`` computed from the executed plan:

- ``currentRevision``, ``updateRevision``, ``collisionCount``, ``abortedTime``;
- ``summary.updated`` (decided clusters whose work succeeded at the update revision) and
  ``summary.desiredTotal`` (clusters the placements select), also per placement;
- the ``Progressing`` condition:

  | situation | status | reason |
  |---|---|---|
  | ``spec.paused`` | Unknown | RolloutPaused (what waits) |
  | aborted | False | RolloutAborted (why; the revert, or why there is none) |
  | currentRevision == updateRevision | True | NewManifestWorkAvailable ("revision X is rolled out") |
  | clusters past progressDeadline | False | ProgressDeadlineExceeded (which) |
  | rolling out a revision an undo brought back | True | FoundNewRevision |
  | rolling out a new revision | True | NewRevisionCreated |

- ``PlacementRolledOut`` False with reason RolloutDegraded when the rollout stopped at
  maxFailures (naming the failed clusters and why) or is aborted (why, kept from the abort on).

Pure: no I/O, ``now`` is an argument; conditions use set-condition semantics.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_RETRY,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PROGRESSING,
    REASON_FOUND_NEW_REVISION,
    REASON_NEW_MANIFESTWORK_AVAILABLE,
    REASON_NEW_REVISION_CREATED,
    REASON_PROGRESS_DEADLINE_EXCEEDED,
    REASON_ROLLOUT_ABORTED,
    REASON_ROLLOUT_DEGRADED,
    REASON_ROLLOUT_PAUSED,
)
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.rollout_text import cluster_list
from ocm_rollout.controllers.common.wire import JSON, as_mapping, mappings_in
from ocm_rollout.controllers.workset.plan import DeployPlan
from ocm_rollout.controllers.workset.revisions import revision_name
from ocm_rollout.controllers.workset.rollback import (
    REVERTING,
    Held,
    RollbackDecision,
    failure_details,
    updated_counts,
)


def _aborted_head(decision: RollbackDecision, mwrs_name: str) -> str:
    return f"rollout of revision {revision_name(mwrs_name, decision.update.hash)} aborted at {decision.aborted_time}"


def abort_cause(decision: RollbackDecision, old_status: Mapping[str, Any] | None, mwrs_name: str) -> str:
    """Why the rollout is aborted: this pass's cause, else the one recorded in PlacementRolledOut
    when it was aborted (kept there for as long as it stays aborted)."""
    head = _aborted_head(decision, mwrs_name)
    if decision.started_abort:
        return f"{head}: {decision.cause}"
    old = find_condition(_conditions(old_status), CONDITION_PLACEMENT_ROLLED_OUT)
    message = str((old or {}).get("message") or "")
    if old is not None and old.get("reason") == REASON_ROLLOUT_DEGRADED and message.startswith(head):
        return message
    return head


def abort_outlook(decision: RollbackDecision, mwrs_name: str) -> str:
    """What an abort does next: the revert, or why there is none."""
    if decision.mode == REVERTING:
        return f"returning every cluster to revision {revision_name(mwrs_name, decision.current or '')}"
    return f"cannot revert: {decision.halt_reason}; the rollout is stopped and no work is written or deleted"


def abort_conditions(old_status: Mapping[str, Any] | None, decision: RollbackDecision, mwrs_name: str,
                     now: datetime) -> list[JSON]:
    """The conditions stored with ``abortedTime`` by the pass that aborts (so the cause survives
    whatever happens to that pass): PlacementRolledOut RolloutDegraded and Progressing
    RolloutAborted, both naming the cause."""
    conditions = [dict(c) for c in _conditions(old_status)]
    cause = abort_cause(decision, old_status, mwrs_name)
    set_status_condition(
        conditions, CONDITION_PLACEMENT_ROLLED_OUT, "False", REASON_ROLLOUT_DEGRADED, cause, now
    )
    set_status_condition(conditions, CONDITION_PROGRESSING, "False", REASON_ROLLOUT_ABORTED,
                  f"{cause}; {abort_outlook(decision, mwrs_name)}", now)
    return conditions


def _conditions(status: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return mappings_in(as_mapping(status).get("conditions"))


def _reverted(plan: DeployPlan) -> tuple[int, int]:
    """(decided clusters whose work is at the plan's template, decided clusters)."""
    back = sum(1 for ref in plan.refs for c in ref.decided if c in ref.current)
    return back, sum(len(ref.decided) for ref in plan.refs)


def _breach_text(plan_u: DeployPlan) -> str:
    parts = []
    for ref in plan_u.refs:
        if ref.breach:
            details = [f"{c} ({why})" for c, why in sorted(failure_details(ref).items())]
            parts.append(
                f'placement "{ref.name}": rollout stopped at maxFailures, {len(details)} failed cluster(s): '
                f"{cluster_list(details)}"
            )
    return "; ".join(parts)


def _timed_out(plan_u: DeployPlan) -> list[str]:
    out = []
    for ref in plan_u.refs:
        if ref.rollout is not None and ref.rollout.clusters_timeout:
            clusters = sorted(e.cluster_name for e in ref.rollout.clusters_timeout)
            out.append(f'placement "{ref.name}": {cluster_list(clusters)}')
    return out


def finish_status(
    status: JSON,
    *,
    old_status: Mapping[str, Any] | None,
    mwrs_name: str,
    decision: RollbackDecision,
    plan_u: DeployPlan,
    executed: DeployPlan,
    held: Held | None,
    now: datetime,
) -> JSON:
    """``status`` (from ``build_status`` over the ``executed`` plan) with the revision fields, the
    updated/desiredTotal counts of ``plan_u`` (the update revision's plan) and the conditions."""
    new = copy.deepcopy(status)
    for key, value in decision.fields().items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    if executed.missing_placement is not None:
        return new  # the pass stopped at a missing Placement: the rest keeps its stored values
    _counts(new, plan_u)
    conditions = [dict(c) for c in _conditions(new)]
    update_name = revision_name(mwrs_name, decision.update.hash)
    aborted = decision.aborted
    cause = abort_cause(decision, old_status, mwrs_name) if aborted else ""
    breach = _breach_text(plan_u)

    if aborted:
        set_status_condition(
            conditions, CONDITION_PLACEMENT_ROLLED_OUT, "False", REASON_ROLLOUT_DEGRADED, cause, now
        )
    elif breach:
        set_status_condition(
            conditions, CONDITION_PLACEMENT_ROLLED_OUT, "False", REASON_ROLLOUT_DEGRADED, breach, now
        )

    if decision.paused:
        waits = held.describe() if held is not None else "no work waits"
        what = f"the abort of revision {update_name} waits" if aborted else f"revision {update_name} waits"
        set_status_condition(
            conditions,
            CONDITION_PROGRESSING,
            "Unknown",
            REASON_ROLLOUT_PAUSED,
            f"rollout paused (spec.paused): {what}; {waits}",
            now,
        )
    elif aborted:
        retry = f"; to retry, annotate {ANNOTATION_ROLLOUT_RETRY}={decision.aborted_time}"
        tail = f"; {abort_outlook(decision, mwrs_name)}"
        if decision.mode == REVERTING:
            back, total = _reverted(executed)
            tail += f": {back} of {total} back"
        set_status_condition(
            conditions, CONDITION_PROGRESSING, "False", REASON_ROLLOUT_ABORTED, cause + tail + retry, now
        )
    elif decision.current == decision.update.hash:
        set_status_condition(
            conditions,
            CONDITION_PROGRESSING,
            "True",
            REASON_NEW_MANIFESTWORK_AVAILABLE,
            f"revision {update_name} is rolled out",
            now,
        )
    elif timed_out := _timed_out(plan_u):
        set_status_condition(
            conditions,
            CONDITION_PROGRESSING,
            "False",
            REASON_PROGRESS_DEADLINE_EXCEEDED,
            f"revision {update_name}: progressDeadline exceeded on " + "; ".join(timed_out),
            now,
        )
    else:
        reason = REASON_FOUND_NEW_REVISION if decision.update.brought_back else REASON_NEW_REVISION_CREATED
        summary = new.get("summary") or {}
        message = (
            f"revision {update_name} (number {decision.update.number}) is rolling out: "
            f"{summary.get('updated', 0)} of {summary.get('desiredTotal', 0)} cluster(s) updated"
        )
        if breach:
            message += f"; {breach}"
        set_status_condition(conditions, CONDITION_PROGRESSING, "True", reason, message, now)
    new["conditions"] = conditions
    return new


def _counts(status: JSON, plan_u: DeployPlan) -> None:
    updated = updated_counts(plan_u)
    desired = {ref.name: ref.selected for ref in plan_u.refs if ref.error is None}
    entries = status.get("placementSummary")
    if not isinstance(entries, list):
        return
    total_updated = 0
    total_desired = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or "")
        summary = dict(entry.get("summary") or {})
        summary["updated"] = updated.get(name, 0)
        summary["desiredTotal"] = desired.get(name, 0)
        entry["summary"] = summary
        total_updated += summary["updated"]
        total_desired += summary["desiredTotal"]
    if isinstance(status.get("summary"), dict):
        status["summary"] = {**status["summary"], "updated": total_updated, "desiredTotal": total_desired}
