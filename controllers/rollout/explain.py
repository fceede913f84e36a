"""Why each cluster of a plan goes now, waits or is left alone: the data behind ``-o table``.

Pure: derived from the plan, its trace and the inputs that produced it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    PlannedCluster,
    RolloutPlan,
    RolloutStatus,
    RolloutType,
)
from ocm_rollout.controllers.rollout.timefmt import Timestamp, format_rfc3339, to_ns

Verdict = Literal[
    "apply",
    "in-flight",
    "retrying",
    "soaking",
    "timed-out",
    "done",
    "skipped",
    "waiting",
    "blocked",
    "never",
    "removed",
]


@dataclass(frozen=True, slots=True)
class ClusterExplanation:
    cluster_name: str
    verdict: Verdict
    #: The status the plan gives the cluster, else the reported one, else "-" (never reported).
    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class GroupExplanation:
    key: GroupKey
    mandatory: bool
    visible: bool
    clusters: tuple[ClusterExplanation, ...]


@dataclass(frozen=True, slots=True)
class PlanExplanation:
    groups: tuple[GroupExplanation, ...]
    removed: tuple[ClusterExplanation, ...]
    summary: str


def group_label(key: GroupKey) -> str:
    return f'{key.group_index} "{key.group_name}"' if key.group_name else str(key.group_index)


def _time(ns: int | None) -> str:
    return "-" if ns is None else format_rfc3339(ns)


def _planned(entry: PlannedCluster, reported: bool) -> ClusterExplanation:
    name, status, recheck = entry.cluster_name, entry.status, entry.recheck_time_ns
    if status is RolloutStatus.TO_APPLY:
        why = "reported ToApply: apply now" if reported else "new: apply now"
        return ClusterExplanation(name, "apply", status.value, why)
    if status is RolloutStatus.SUCCEEDED:
        return ClusterExplanation(name, "soaking", status.value, f"succeeded, soaking until {_time(recheck)}")
    deadline = "no deadline" if recheck is None else f"deadline {_time(recheck)}"
    if status is RolloutStatus.FAILED:
        return ClusterExplanation(
            name, "retrying", status.value, f"failed, counts as a failure; in flight ({deadline})"
        )
    return ClusterExplanation(name, "in-flight", status.value, f"in flight ({deadline})")


def explain_plan(
    result: RolloutPlan,
    decision_groups: Iterable[DecisionGroup],
    existing: Iterable[ClusterRolloutStatus],
    now: Timestamp,
) -> PlanExplanation:
    """Explain ``result``, which ``plan`` computed from these same inputs."""
    now_ns = to_ns(now)
    trace = result.trace
    merged: dict[GroupKey, set[str]] = {}
    for group in decision_groups:
        merged.setdefault(GroupKey(group.group_name, group.group_index), set()).update(group.clusters)
    for members in merged.values():
        members.discard("")
    removed_names = {entry.cluster_name for entry in result.clusters_removed}
    reported: dict[str, ClusterRolloutStatus] = {
        entry.cluster_name: entry for entry in existing if entry.cluster_name not in removed_names
    }
    rollout = {entry.cluster_name: entry for entry in result.clusters_to_rollout}
    timed_out = {entry.cluster_name: entry for entry in result.clusters_timeout}
    mandatory = set(trace.mandatory_groups)
    visible = set(trace.visible_groups)
    index_count = len({key.group_index for key in merged})

    def waiting(key: GroupKey, name: str) -> ClusterExplanation:
        entry = reported.get(name)
        status = entry.status.value if entry is not None else "-"
        if key not in visible and key not in mandatory:
            return ClusterExplanation(
                name,
                "never",
                status,
                f"group index {key.group_index} is not below the number of group indexes ({index_count}): "
                "never rolled out",
            )
        if trace.phase == "mandatory" and key not in mandatory:
            return ClusterExplanation(name, "waiting", status, "waiting: mandatory groups not finished")
        if trace.walk == "group":
            where = group_label(trace.stop_group) if trace.stop_group is not None else "an earlier group"
            if result.max_failure_breach:
                return ClusterExplanation(
                    name, "blocked", status, f"blocked: maxFailures breached in group {where}"
                )
            return ClusterExplanation(name, "waiting", status, f"waiting: group {where} not finished")
        if result.max_failure_breach:
            return ClusterExplanation(
                name,
                "blocked",
                status,
                f"blocked: maxFailures breached (tolerates {trace.failure_tolerance})",
            )
        if entry is not None and trace.last_examined is not None and name > trace.last_examined:
            return ClusterExplanation(
                name, "waiting", status, f"not examined: batch of {trace.batch_size} already full"
            )
        if result.strategy.type is RolloutType.PROGRESSIVE:
            return ClusterExplanation(
                name,
                "waiting",
                status,
                f"waiting: blocked by maxConcurrency (batch of {trace.batch_size} full)",
            )
        return ClusterExplanation(name, "waiting", status, "waiting")

    def explain(key: GroupKey, name: str) -> ClusterExplanation:
        if name in rollout:
            return _planned(rollout[name], name in reported)
        if name in timed_out:
            entry = timed_out[name]
            return ClusterExplanation(
                name,
                "timed-out",
                RolloutStatus.TIME_OUT.value,
                f"timed out at {_time(entry.recheck_time_ns)} (progressDeadline passed); counts as a failure",
            )
        reported_entry = reported.get(name)
        if reported_entry is not None:
            status = reported_entry.status
            if status is RolloutStatus.SUCCEEDED:
                return ClusterExplanation(name, "done", status.value, "succeeded")
            if status is RolloutStatus.TIME_OUT:
                return ClusterExplanation(
                    name, "timed-out", status.value, "reported TimeOut; counts as a failure"
                )
            if status is RolloutStatus.SKIP:
                return ClusterExplanation(name, "skipped", status.value, "skipped")
        return waiting(key, name)

    groups: list[GroupExplanation] = []
    for key in sorted(merged, key=lambda k: (k.group_index, k.group_name)):
        groups.append(
            GroupExplanation(
                key=key,
                mandatory=key in mandatory,
                visible=key in visible,
                clusters=tuple(explain(key, name) for name in sorted(merged[key])),
            )
        )
    removed = tuple(
        ClusterExplanation(
            entry.cluster_name, "removed", entry.status.value, "no longer in any decision group"
        )
        for entry in sorted(result.clusters_removed, key=lambda e: e.cluster_name)
    )

    counts = {"apply": 0, "in-flight": 0, "soaking": 0}
    for entry in result.clusters_to_rollout:
        if entry.status is RolloutStatus.TO_APPLY:
            counts["apply"] += 1
        elif entry.status is RolloutStatus.SUCCEEDED:
            counts["soaking"] += 1
        else:
            counts["in-flight"] += 1
    recheck = result.recheck_after_seconds
    recheck_text = "no recheck needed" if recheck is None else f"recheck after {recheck:g}s"
    if recheck is not None:
        recheck_text += f" (at {_time(now_ns + (result.recheck_after_ns or 0))})"
    phase = {"all": "all clusters", "mandatory": "mandatory groups", "rest": "non-mandatory groups"}[
        trace.phase
    ]
    summary = (
        f"{counts['apply']} to apply now, {counts['in-flight']} in flight, {counts['soaking']} soaking, "
        f"{len(result.clusters_timeout)} timed out, {len(result.clusters_removed)} removed; "
        f"phase: {phase}; maxFailures {'BREACHED' if result.max_failure_breach else 'not breached'}; "
        f"{recheck_text}"
    )
    return PlanExplanation(groups=tuple(groups), removed=removed, summary=summary)
