"""What `ocm-rollout status` and the live view show about the configuration rollout of a
ClusterManagementAddOn (CMA).

What flows through ``build_addon_report``: the CMA as stored, its ManagedClusterAddOns (MCAs) by
cluster, its placements' inputs and ``now`` -> an ``AddonReport`` computed read-only with the same
core the controller runs (``configrollout.plan_config_rollout``, nothing is written). Per placement
and decision group, every cluster the placement configures is in one state against the desired
configurations:

- ``succeeded``: its MCA applied them (rollout status Succeeded);
- ``progressing``: its MCA has them but has not applied them yet;
- ``failed``: Failed (the add-on reports a failure) — with the reason the MCA gives;
- ``timed out``: past the progressDeadline — with the reason the MCA gives;
- ``validating``: its MCA applied them and its placement's checks or plugin are judging it
  (docs/behaviour/validation.md) — with what they say;
- ``waiting``: its MCA has not been given them yet (or the cluster has no MCA yet).

``configured`` counts the MCAs that have been given the desired configurations (every state but
waiting). A paused CMA (annotation ``rollout.ocm-rollout.io/paused``) and an aborted placement
are shown as such: when an aborted placement's add-ons return to the last known good
configurations, the states are against those (succeeded: returned and applied; waiting: not
returned yet), with the abort's time to retry and the failing clusters it recorded; when they
cannot return, why. Each placement shows the revision of its desired configurations (the value
the abort and promoted annotations take), and a decision group waiting at its promotion gate
with the command that promotes it. ``render_addon_report`` draws it as text with progress bars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_CONDITION_PROGRESSING,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
    ROLLOUT_STATUS_VALIDATING,
)
from ocm_rollout.controllers.addon import abort as aborting
from ocm_rollout.controllers.addon.abort import Abort
from ocm_rollout.controllers.addon.configrollout import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    TIME_OUT,
    TO_APPLY,
    NodeReport,
    plan_config_rollout,
)
from ocm_rollout.controllers.addon.configs import (
    INSTALL_PROGRESSIONS,
    install_type,
    is_lifecycle_managed,
    placement_ref,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.verification_status import promote_command
from ocm_rollout.controllers.common import rollout_text
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.wire import mapping_at, mappings_in, name_of
from ocm_rollout.controllers.rollout.reservations import EMPTY, ReservationRecordError, of_owner

SUCCEEDED_STATE = "succeeded"
PROGRESSING_STATE = "progressing"
FAILED_STATE = "failed"
TIMED_OUT_STATE = "timed out"
VALIDATING_STATE = "validating"
WAITING_STATE = "waiting"
STATES = (SUCCEEDED_STATE, FAILED_STATE, TIMED_OUT_STATE, PROGRESSING_STATE, VALIDATING_STATE, WAITING_STATE)
_STATE_OF: dict[str, str] = {
    SUCCEEDED: SUCCEEDED_STATE,
    PROGRESSING: PROGRESSING_STATE,
    FAILED: FAILED_STATE,
    TIME_OUT: TIMED_OUT_STATE,
    TO_APPLY: WAITING_STATE,
}


@dataclass
class ClusterLine:
    cluster: str
    state: str
    #: The rollout status (ToApply, Progressing, Succeeded, Failed, TimeOut); "" without an MCA.
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
    def configured(self) -> int:
        return sum(1 for c in self.clusters if c.state != WAITING_STATE)

    @property
    def title(self) -> str:
        return f"group {self.index}" + (f" ({self.name})" if self.name else "")


@dataclass
class PlacementReport:
    namespace: str
    name: str
    strategy: str
    #: The rollout is held: why (and the reason on the installProgressions entry).
    error: str | None = None
    error_reason: str | None = None
    #: Why the decisions are incomplete (no new clusters configured meanwhile).
    unready: str | None = None
    breach: bool = False
    selected: int = 0
    #: Selected clusters whose add-on a later placement configures.
    taken: int = 0
    groups: list[GroupReport] = field(default_factory=list)
    recheck_after: float | None = None
    #: The installProgressions entry's Progressing condition: (status, reason, message).
    condition: tuple[str, str, str] | None = None
    #: ``abort.revision`` of its desired configurations.
    revision: str = ""
    #: Its rollout is aborted: the record; the configurations it returns to, or why it cannot.
    aborted: Abort | None = None
    returns_to: str | None = None
    revert_blocked: str | None = None
    #: A decision group waits at the promotion gate: what waits and how to promote it ("" when none).
    promotion: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def count(self, state: str) -> int:
        return sum(g.count(state) for g in self.groups)

    @property
    def total(self) -> int:
        return sum(len(g.clusters) for g in self.groups)

    @property
    def configured(self) -> int:
        return sum(g.configured for g in self.groups)

    def counts(self) -> dict[str, int]:
        return {state: self.count(state) for state in STATES}


@dataclass
class AddonReport:
    name: str
    install_type: str
    managed: bool
    placements: list[PlacementReport] = field(default_factory=list)
    #: The MCAs configured by the default configurations (no placement selects them).
    defaults: GroupReport | None = None
    #: Why the defaults' MCAs are held (a placement is missing or unreadable), or None.
    defaults_held: str | None = None
    #: The CMA carries the paused annotation.
    paused: bool = False


def _line(node: NodeReport, cluster: str) -> ClusterLine:
    status = node.statuses.get(cluster)
    if status is None:
        return ClusterLine(cluster, WAITING_STATE, "", "no ManagedClusterAddOn yet")
    if status == PROGRESSING and cluster in node.validating:
        return ClusterLine(cluster, VALIDATING_STATE, ROLLOUT_STATUS_VALIDATING, node.validating[cluster])
    state = _STATE_OF.get(status, WAITING_STATE)
    reason = ""
    if status == TIME_OUT:
        message = node.messages.get(cluster, "")
        reason = "progressDeadline exceeded" + (f"; {message}" if message else "")
    elif status == FAILED:
        reason = node.messages.get(cluster, "")
    return ClusterLine(cluster, state, str(status), reason)


def placement_report(node: NodeReport, progression: Mapping[str, Any] | None, cma: str = "") -> PlacementReport:
    """The report of one placement from its node of a plan (of the add-on named ``cma``)."""
    out = PlacementReport(
        node.namespace,
        node.name,
        node.strategy_type,
        error=node.error,
        error_reason=node.error_reason,
        unready=node.unready,
        breach=node.breach,
        selected=node.total,
        taken=node.total - node.configured_total,
        recheck_after=node.recheck_after,
        revision=node.revision,
        aborted=node.aborted,
    )
    if node.promotion is not None and node.aborted is None:
        out.promotion = node.promotion.message(node.key, promote_command(cma, node.key))
    if node.aborted is not None and node.revert is not None:
        if node.revert.desired is not None:
            out.returns_to = aborting.configs_text(node.revert.good)
        else:
            out.revert_blocked = node.revert.blocked
        out.breach = False
    if progression is not None:
        cond = find_condition(progression.get("conditions"), ADDON_CONDITION_PROGRESSING)
        if cond is not None:
            out.condition = (str(cond.get("status") or ""), str(cond.get("reason") or ""), str(cond.get("message") or ""))
    groups: dict[tuple[int, str], GroupReport] = {}
    placed: set[str] = set()
    for group in node.groups:
        report = groups.setdefault((group.group_index, group.group_name), GroupReport(group.group_index, group.group_name))
        for cluster in sorted(group.clusters):
            if cluster in node.configured and cluster not in placed:
                placed.add(cluster)
                report.clusters.append(_line(node, cluster))
    out.groups = [groups[k] for k in sorted(groups)]
    return out


def build_addon_report(
    *,
    cma: Mapping[str, Any],
    mcas: Mapping[str, Mapping[str, Any]],
    placements: Mapping[tuple[str, str], PlacementInput],
    now: datetime,
) -> AddonReport:
    """The configuration-rollout report of one CMA from the objects as stored (read-only)."""
    try:
        reserved = of_owner(cma)
    except ReservationRecordError:
        reserved = EMPTY
    plan = plan_config_rollout(cma=cma, mcas=mcas, placements=placements, reserved=reserved, now=now)
    report = AddonReport(name_of(cma), install_type(cma) or "Manual", is_lifecycle_managed(cma), paused=plan.paused)
    progressions = {placement_ref(e): e for e in mappings_in(mapping_at(cma, "status").get(INSTALL_PROGRESSIONS))}
    for node in plan.nodes:
        report.placements.append(placement_report(node, progressions.get((node.namespace, node.name)), report.name))
    if plan.defaults is not None and plan.defaults.statuses:
        group = GroupReport(-1, "defaults")
        group.clusters = [_line(plan.defaults, c) for c in sorted(plan.defaults.statuses)]
        report.defaults = group
        report.defaults_held = plan.defaults.error
    return report


# ------------------------------------------------------------------------------------------
# Text rendering
# ------------------------------------------------------------------------------------------

BAR_WIDTH = rollout_text.BAR_WIDTH
_BAR_CHARS = {
    SUCCEEDED_STATE: "#",
    FAILED_STATE: "!",
    TIMED_OUT_STATE: "!",
    PROGRESSING_STATE: "~",
    VALIDATING_STATE: "?",
    WAITING_STATE: ".",
}
_SHOWN_FAILURES = 10


def progress_bar(counts: Mapping[str, int], width: int = BAR_WIDTH) -> str:
    """A stacked bar: ``#`` succeeded, ``!`` failed or timed out, ``~`` progressing, ``?``
    validating, ``.`` waiting."""
    return rollout_text.progress_bar(counts, STATES, _BAR_CHARS, width)


def _group_line(group: GroupReport, title: str, pad: int) -> list[str]:
    counts = {s: group.count(s) for s in STATES}
    validating = f"  validating {counts[VALIDATING_STATE]}" if counts[VALIDATING_STATE] else ""
    lines = [
        f"    {title:<{pad}}  {progress_bar(counts)} {counts[SUCCEEDED_STATE]}/{len(group.clusters)} succeeded"
        f"  configured {group.configured}  failed {counts[FAILED_STATE]}  timed out {counts[TIMED_OUT_STATE]}"
        f"  progressing {counts[PROGRESSING_STATE]}{validating}  waiting {counts[WAITING_STATE]}"
    ]
    checking = [f"{c.cluster} (Validating): {c.reason}" for c in group.clusters if c.state == VALIDATING_STATE]
    lines.extend(rollout_text.marked_lines(checking, "?", "validating add-ons", _SHOWN_FAILURES))
    bad = [
        f"{c.cluster} ({c.rollout_status}): {c.reason or 'no reason reported'}"
        for c in group.clusters if c.state in (FAILED_STATE, TIMED_OUT_STATE)
    ]
    lines.extend(rollout_text.marked_lines(bad, "!", "failed clusters", _SHOWN_FAILURES))
    return lines


def _abort_lines(placement: PlacementReport) -> list[str]:
    record = placement.aborted
    if record is None:
        return []
    if record.cause == aborting.CAUSE_MAX_FAILURES:
        names = ", ".join(record.clusters) + (
            f" and {record.failed - len(record.clusters)} more" if record.failed > len(record.clusters) else ""
        )
        why = f"failureStrategy AbortAll, maxFailures breached by {record.failed} add-on(s): {names}"
        resume = f"retry: annotation {ANNOTATION_ROLLOUT_RETRY}={record.time}"
    else:
        why = f"requested by annotation {ANNOTATION_ROLLOUT_ABORT}={record.revision}"
        resume = f"retry: remove annotation {ANNOTATION_ROLLOUT_ABORT}"
    lines = [f"    ABORTED at {record.time} ({why})"]
    if placement.returns_to is not None:
        lines.append(f"      the add-ons return to the last known good configuration {placement.returns_to}")
    elif placement.revert_blocked is not None:
        lines.append(f"      cannot be reverted: {placement.revert_blocked}")
    lines.append(f"      no other add-on is given the new configurations; {resume} (or change the configurations)")
    return lines


def render_addon_report(report: AddonReport) -> str:
    """The human-readable configuration-rollout status of one CMA."""
    lines = [f"ClusterManagementAddOn {report.name} (install strategy {report.install_type})"]
    if not report.managed:
        lines.append("  self-managed (lifecycle annotation): the hub manager does not roll its configurations out")
    elif report.paused:
        lines.append(
            f"  PAUSED (annotation {ANNOTATION_ROLLOUT_PAUSED}=true): no add-on is given new configurations"
            " until it is removed"
        )
    for placement in report.placements:
        lines.append("")
        head = f"  placement {placement.key} ({placement.strategy}, {placement.selected} selected)"
        if placement.error is not None:
            lines.append(f"{head}: held, {placement.error_reason}: {placement.error}")
            continue
        counts = placement.counts()
        failed = counts[FAILED_STATE] + counts[TIMED_OUT_STATE]
        validating = f" {counts[VALIDATING_STATE]} validating," if counts[VALIDATING_STATE] else ""
        lines.append(
            f"{head}  {progress_bar(counts)} {counts[SUCCEEDED_STATE]}/{placement.total} succeeded,"
            f" {placement.configured} configured, {failed} failed, {counts[PROGRESSING_STATE]} progressing,"
            f"{validating} {counts[WAITING_STATE]} waiting"
        )
        if placement.condition is not None:
            status, reason, message = placement.condition
            lines.append(f"    Progressing {status} {reason}: {message}".rstrip(": "))
        if placement.promotion:
            lines.append(f"    PROMOTION: {placement.promotion}")
        if placement.taken:
            lines.append(f"    {placement.taken} selected cluster(s) configured by a later placement")
        if placement.unready is not None:
            lines.append(f"    waiting for complete decisions: {placement.unready}")
        if placement.revision:
            lines.append(f"    revision {placement.revision} (abort it with annotation {ANNOTATION_ROLLOUT_ABORT}={placement.revision})")
        lines.extend(_abort_lines(placement))
        if placement.breach:
            lines.append("    maxFailures breached: no new clusters are configured until failures recover")
        if not placement.groups:
            lines.append("    no clusters decided")
        titles = [g.title for g in placement.groups]
        pad = max((len(t) for t in titles), default=0)
        for group, title in zip(placement.groups, titles, strict=True):
            lines.extend(_group_line(group, title, pad))
        if placement.recheck_after is not None:
            lines.append(f"    next check in {placement.recheck_after:.0f}s (minSuccessTime / progressDeadline)")
    if report.defaults is not None:
        lines.append("")
        lines.append(f"  default configurations ({len(report.defaults.clusters)} add-on(s), no rollout strategy)")
        if report.defaults_held:
            lines.append(f"    held: {report.defaults_held}")
        lines.extend(_group_line(report.defaults, "all", 3))
    return "\n".join(lines)
