"""What `ocm-rollout status` shows about a ManifestWorkReplicaSet, and the per-status cluster
counts the controller publishes as metrics (improvement 5).

Per placement and decision group, every decided cluster is in one state:
- ``succeeded``: its work has the current template and its rollout status is Succeeded;
- ``failed``: Failed, or timed out (past progressDeadline);
- ``apply failed``: not failed (yet), but its agent reports that the current work failed to
  apply (``Applied`` False at its generation; improvement 9), with the first error;
- ``progressing``: its work has the current template but is not done yet;
- ``waiting``: no work with the current template yet (the rollout has not reached it).
``applied`` counts the clusters whose current work reports ``Applied`` True at its generation.
Above the placements: the update and current template revisions (status), whether the rollout is
paused or aborted (and how to retry), the ``Progressing`` condition and the ``updated`` counts.

Pure: built from the same objects and planner the controller uses, with ``now`` as argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_RETRY,
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
    CONDITION_PROGRESSING,
    ROLLOUT_TYPE_ALL,
    WORK_CONDITION_APPLIED,
)
from ocm_rollout.controllers.common import rollout_text
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.wire import JSON, conditions_of, format_time, generation_of
from ocm_rollout.controllers.rollout.strategy import effective_type
from ocm_rollout.controllers.workset.apply_failures import work_apply_failure
from ocm_rollout.controllers.workset.indexes import Forms
from ocm_rollout.controllers.workset.plan import RefPlan, plan_deploy
from ocm_rollout.controllers.workset.revisions import revision_name
from ocm_rollout.controllers.workset.status_mapping import FAILED, SUCCEEDED, TIME_OUT, TO_APPLY
from ocm_rollout.controllers.workset.workbuild import owner_for

SUCCEEDED_STATE = "succeeded"
FAILED_STATE = "failed"
APPLY_FAILED_STATE = "apply failed"
PROGRESSING_STATE = "progressing"
VALIDATING_STATE = "validating"
WAITING_STATE = "waiting"
STATES = (SUCCEEDED_STATE, FAILED_STATE, APPLY_FAILED_STATE, PROGRESSING_STATE, VALIDATING_STATE, WAITING_STATE)


@dataclass
class ClusterLine:
    cluster: str
    state: str
    applied: bool
    rollout_status: str
    reason: str = ""


@dataclass
class GroupReport:
    index: int
    name: str
    clusters: list[ClusterLine] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(1 for c in self.clusters if c.state == state)

    @property
    def applied(self) -> int:
        return sum(1 for c in self.clusters if c.applied)


@dataclass
class PlacementReport:
    name: str
    strategy: str
    found: bool = True
    error: str | None = None
    breach: bool = False
    selected: int = 0
    groups: list[GroupReport] = field(default_factory=list)
    recheck_after: float | None = None
    # A decision group waiting at a manual promotion gate: what to do about it.
    promotion: str = ""

    def count(self, state: str) -> int:
        return sum(g.count(state) for g in self.groups)

    @property
    def total(self) -> int:
        return sum(len(g.clusters) for g in self.groups)

    @property
    def applied(self) -> int:
        return sum(g.applied for g in self.groups)


@dataclass
class Revisions:
    """The template revisions of the rollout, as its status records them."""

    update: str | None = None
    current: str | None = None
    aborted_time: str | None = None
    paused: bool = False


@dataclass
class Report:
    namespace: str
    name: str
    conditions: dict[str, tuple[str, str, str]]
    summary: dict[str, int]
    placements: list[PlacementReport]
    revisions: Revisions = field(default_factory=Revisions)


def status_counts(ref: RefPlan) -> dict[str, int]:
    """How many decided clusters of a placement are in each rollout status (for metrics)."""
    counts: dict[str, int] = {}
    timed_out = set() if ref.rollout is None else {e.cluster_name for e in ref.rollout.clusters_timeout}
    for cluster in ref.decided:
        if cluster in timed_out:
            status = TIME_OUT
        elif cluster in ref.statuses:
            status = ref.statuses[cluster].shown
        else:
            status = TO_APPLY
        counts[status] = counts.get(status, 0) + 1
    return counts


def _manifest_failures(work: Mapping[str, Any]) -> list[str]:
    """Per-manifest ``Applied`` False messages of a work (what failed to apply, and why)."""
    out = []
    status = work.get("status")
    resource_status = status.get("resourceStatus") if isinstance(status, Mapping) else None
    manifests = resource_status.get("manifests") if isinstance(resource_status, Mapping) else None
    for item in manifests or ():
        if not isinstance(item, Mapping):
            continue
        res = item.get("resourceMeta") or {}
        cond = find_condition(item.get("conditions"), WORK_CONDITION_APPLIED)
        if cond is not None and cond.get("status") == "False":
            what = "/".join(str(p) for p in (res.get("kind"), res.get("namespace"), res.get("name")) if p)
            out.append(f"{what or 'manifest ' + str(res.get('ordinal'))}: {cond.get('message') or cond.get('reason')}")
    return out


def _cluster_line(ref: RefPlan, cluster: str, timed_out: Mapping[str, Any]) -> ClusterLine:
    work = ref.current.get(cluster)
    if work is None:
        return ClusterLine(cluster, WAITING_STATE, False, TO_APPLY)
    applied_cond = conditions_of(work).get(WORK_CONDITION_APPLIED)
    applied = (
        applied_cond is not None
        and applied_cond.status == "True"
        and applied_cond.observed_generation == generation_of(work)
    )
    status = ref.statuses[cluster]
    if cluster in timed_out:
        entry = timed_out[cluster]
        since = entry.last_transition_time
        doing = "failing to apply" if status.apply_failed_since is not None else "in progress"
        reason = "progressDeadline exceeded" + (f" ({doing} since {format_time(since)})" if since else "")
        if status.reason:
            reason += f"; {status.reason}"
        details = _manifest_failures(work)
        if details:
            reason += "; " + "; ".join(details)
        return ClusterLine(cluster, FAILED_STATE, applied, TIME_OUT, reason)
    if status.status == FAILED:
        parts = [status.reason] if status.reason else []
        parts.extend(_manifest_failures(work))
        return ClusterLine(cluster, FAILED_STATE, applied, FAILED, "; ".join(parts))
    if status.status == SUCCEEDED:
        return ClusterLine(cluster, SUCCEEDED_STATE, applied, SUCCEEDED)
    if status.validating:
        return ClusterLine(cluster, VALIDATING_STATE, applied, status.shown, status.reason)
    not_applied = work_apply_failure(work)
    if not_applied is not None:
        return ClusterLine(cluster, APPLY_FAILED_STATE, applied, status.status, not_applied.first_error)
    return ClusterLine(cluster, PROGRESSING_STATE, applied, status.status, status.reason)


def placement_report(ref: RefPlan, strategy: str) -> PlacementReport:
    out = PlacementReport(ref.name, strategy, selected=ref.selected, error=ref.error, breach=ref.breach)
    out.recheck_after = ref.recheck_after
    if ref.promotion is not None:
        out.promotion = ref.promotion.message(ref.name)
    timed_out = {} if ref.rollout is None else {e.cluster_name: e for e in ref.rollout.clusters_timeout}
    groups: dict[tuple[int, str], GroupReport] = {}
    for cluster, (group_name, group_index) in sorted(ref.decided.items()):
        group = groups.setdefault((group_index, group_name), GroupReport(group_index, group_name))
        group.clusters.append(_cluster_line(ref, cluster, timed_out))
    out.groups = [groups[k] for k in sorted(groups)]
    return out


def build_report(
    *,
    mwrs: Mapping[str, Any],
    works: Sequence[JSON],
    placements: Mapping[str, JSON | None],
    decisions: Mapping[str, Sequence[JSON]],
    now: datetime,
    forms: Forms | None = None,
) -> Report:
    """The rollout report of one MWRS from the objects as stored (``forms``: the works' canonical
    specs kept from earlier reports, so that only the works that changed are compared again)."""
    metadata = mwrs.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    owner = owner_for(namespace, name)
    update = (mwrs.get("status") or {}).get("updateRevision")
    template = (mwrs.get("spec") or {}).get("manifestWorkTemplate") or {}
    plan = plan_deploy(
        mwrs=mwrs, owner=owner, works=works, placements=placements, decisions=decisions, now=now,
        revision_hash=update if isinstance(update, str) else None, verify=True,
        spec_matches=(forms or Forms()).spec_matcher(template),
    )
    refs = [r for r in ((mwrs.get("spec") or {}).get("placementRefs") or []) if isinstance(r, Mapping)]
    strategies = {
        str(r.get("name") or ""): effective_type(r.get("rolloutStrategy")) or ROLLOUT_TYPE_ALL for r in refs
    }
    reports = [placement_report(ref, strategies.get(ref.name, ROLLOUT_TYPE_ALL)) for ref in plan.refs]
    planned = {r.name for r in plan.refs}
    for ref_name in strategies:
        if ref_name not in planned:
            missing = placements.get(ref_name) is None
            reports.append(
                PlacementReport(
                    ref_name,
                    strategies[ref_name],
                    found=not missing,
                    error="Placement not found" if missing else "not evaluated (an earlier Placement is missing)",
                )
            )
    status = mwrs.get("status") or {}
    conditions = {}
    for type_ in (
        CONDITION_PLACEMENT_VERIFIED,
        CONDITION_PLACEMENT_ROLLED_OUT,
        CONDITION_MANIFESTWORK_APPLIED,
        CONDITION_PROGRESSING,
    ):
        cond = find_condition(status.get("conditions"), type_)
        if cond is not None:
            conditions[type_] = (
                str(cond.get("status") or ""),
                str(cond.get("reason") or ""),
                str(cond.get("message") or ""),
            )
    summary = {k: int(v) for k, v in (status.get("summary") or {}).items() if isinstance(v, int)}

    def text(key: str) -> str | None:
        value = status.get(key)
        return value if isinstance(value, str) and value else None

    revisions = Revisions(
        update=text("updateRevision"),
        current=text("currentRevision"),
        aborted_time=text("abortedTime"),
        paused=(mwrs.get("spec") or {}).get("paused") is True,
    )
    return Report(namespace, name, conditions, summary, reports, revisions)


# ------------------------------------------------------------------------------------------
# Text rendering
# ------------------------------------------------------------------------------------------

BAR_WIDTH = rollout_text.BAR_WIDTH
_BAR_CHARS = {
    SUCCEEDED_STATE: "#", FAILED_STATE: "!", APPLY_FAILED_STATE: "x", PROGRESSING_STATE: "~", VALIDATING_STATE: "?",
    WAITING_STATE: ".",
}
_SHOWN_FAILURES = 10


def progress_bar(counts: Mapping[str, int], width: int = BAR_WIDTH) -> str:
    """A stacked bar: ``#`` succeeded, ``!`` failed, ``x`` apply failed, ``~`` progressing, ``?``
    validating, ``.`` waiting."""
    return rollout_text.progress_bar(counts, STATES, _BAR_CHARS, width)


def _group_title(group: GroupReport) -> str:
    return f"group {group.index}" + (f" ({group.name})" if group.name else "")


def _revision_lines(report: Report) -> list[str]:
    revisions = report.revisions
    if revisions.update is None:
        return []

    def named(digest: str | None) -> str:
        return "none yet" if digest is None else revision_name(report.name, digest)

    state = "rolled out" if revisions.update == revisions.current else "rolling out"
    if revisions.aborted_time is not None:
        state = f"ABORTED at {revisions.aborted_time}"
    lines = [f"  revisions: update {named(revisions.update)} ({state}), current {named(revisions.current)}"]
    if revisions.paused:
        lines.append("  PAUSED (spec.paused): no ManifestWork is created, updated or deleted until resumed")
    if revisions.aborted_time is not None:
        lines.append(
            f"  to retry the aborted rollout: annotate {ANNOTATION_ROLLOUT_RETRY}={revisions.aborted_time}"
            " (or change the template)"
        )
    return lines


def render_report(report: Report) -> str:
    """The human-readable rollout status of one MWRS."""
    lines = [f"ManifestWorkReplicaSet {report.namespace}/{report.name}"]
    lines.extend(_revision_lines(report))
    types = [CONDITION_PLACEMENT_VERIFIED, CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_MANIFESTWORK_APPLIED]
    if CONDITION_PROGRESSING in report.conditions:
        types.append(CONDITION_PROGRESSING)
    for type_ in types:
        status, reason, message = report.conditions.get(type_, ("-", "", ""))
        line = f"  {type_:<20} {status:<7} {reason}"
        if message:
            line += f": {message}"
        lines.append(line.rstrip())
    if report.summary:
        keys = ("total", "applied", "available", "progressing", "degraded")
        line = "  summary: " + ", ".join(f"{k} {report.summary.get(k, 0)}" for k in keys)
        if report.revisions.update is not None:
            line += f", updated {report.summary.get('updated', 0)}/{report.summary.get('desiredTotal', 0)}"
        lines.append(line)
    for placement in report.placements:
        lines.append("")
        head = f"  placement {placement.name} ({placement.strategy}"
        if placement.found and placement.error is None:
            head += f", {placement.selected} selected"
        head += ")"
        if placement.error is not None:
            lines.append(f"{head}: {placement.error}")
            continue
        counts = {s: placement.count(s) for s in STATES}
        apply_failed = f" {counts[APPLY_FAILED_STATE]} apply failed," if counts[APPLY_FAILED_STATE] else ""
        validating = f" {counts[VALIDATING_STATE]} validating," if counts[VALIDATING_STATE] else ""
        head += (
            f"  {progress_bar(counts)} {counts[SUCCEEDED_STATE]}/{placement.total} succeeded,"
            f" {placement.applied} applied, {counts[FAILED_STATE]} failed,{apply_failed}"
            f" {counts[PROGRESSING_STATE]} progressing,{validating} {counts[WAITING_STATE]} waiting"
        )
        lines.append(head)
        if placement.promotion:
            lines.append(f"    PROMOTION: {placement.promotion}")
        if placement.breach:
            lines.append("    maxFailures breached: no new clusters are rolled out until failures recover")
        if not placement.groups:
            lines.append("    no clusters decided")
        titles = [_group_title(g) for g in placement.groups]
        pad = max((len(t) for t in titles), default=0)
        for group, title in zip(placement.groups, titles, strict=True):
            g_counts = {s: group.count(s) for s in STATES}
            g_apply_failed = f"  apply failed {g_counts[APPLY_FAILED_STATE]}" if g_counts[APPLY_FAILED_STATE] else ""
            g_validating = f"  validating {g_counts[VALIDATING_STATE]}" if g_counts[VALIDATING_STATE] else ""
            lines.append(
                f"    {title:<{pad}}  {progress_bar(g_counts)} {g_counts[SUCCEEDED_STATE]}/{len(group.clusters)}"
                f" succeeded  applied {group.applied}  failed {g_counts[FAILED_STATE]}{g_apply_failed}"
                f"  progressing {g_counts[PROGRESSING_STATE]}{g_validating}  waiting {g_counts[WAITING_STATE]}"
            )
            checking = [c for c in group.clusters if c.state == VALIDATING_STATE]
            for cluster_line in checking[:_SHOWN_FAILURES]:
                lines.append(f"      ? {cluster_line.cluster} (Validating): {cluster_line.reason}")
            if len(checking) > _SHOWN_FAILURES:
                lines.append(f"      ? and {len(checking) - _SHOWN_FAILURES} more validating clusters")
            failed_lines = [c for c in group.clusters if c.state == FAILED_STATE]
            for bad in failed_lines[:_SHOWN_FAILURES]:
                lines.append(f"      ! {bad.cluster} ({bad.rollout_status}): {bad.reason or 'no reason reported'}")
            if len(failed_lines) > _SHOWN_FAILURES:
                lines.append(f"      ! and {len(failed_lines) - _SHOWN_FAILURES} more failed clusters")
            not_applied = [c for c in group.clusters if c.state == APPLY_FAILED_STATE]
            for bad in not_applied[:_SHOWN_FAILURES]:
                lines.append(f"      x {bad.cluster} (apply failed, {bad.rollout_status}): {bad.reason}")
            if len(not_applied) > _SHOWN_FAILURES:
                lines.append(f"      x and {len(not_applied) - _SHOWN_FAILURES} more clusters that failed to apply")
        if placement.recheck_after is not None:
            lines.append(f"    next check in {placement.recheck_after:.0f}s (minSuccessTime / progressDeadline)")
    return "\n".join(lines)
