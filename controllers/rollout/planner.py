"""The rollout planner: OCM's rollout handler as specified by docs/behaviour/rollout.md sections 4 to 11.

Pure: no I/O, the clock is an argument. Both consumers (the ManifestWorkReplicaSet controller
and the addon manager) call ``plan_rollout`` with the ``rolloutStrategy`` of a placement
reference, the decision groups of the placement and the statuses their workloads report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ocm_rollout.controllers.rollout.goparse import MAX_DURATION_NS, Threshold, resolve_threshold
from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    Phase,
    PlannedCluster,
    PlanTrace,
    RolloutPlan,
    RolloutStatus,
    RolloutStrategy,
    RolloutType,
    Stop,
    Walk,
)
from ocm_rollout.controllers.rollout.strategy import check_max_concurrency, decode_strategy
from ocm_rollout.controllers.rollout.timefmt import Timestamp, to_ns

TO_APPLY = RolloutStatus.TO_APPLY
SUCCEEDED = RolloutStatus.SUCCEEDED
FAILED = RolloutStatus.FAILED
TIME_OUT = RolloutStatus.TIME_OUT
SKIP = RolloutStatus.SKIP

_NO_GROUP = GroupKey("", 0)
_by_name = attrgetter("cluster_name")


def _group_order(key: GroupKey) -> tuple[int, str]:
    return key.group_index, key.group_name


@dataclass(slots=True)
class _Answer:
    rollout: list[PlannedCluster]
    timeout: list[PlannedCluster]
    breach: bool
    stop: Stop
    last_examined: str | None = None
    stop_group: GroupKey | None = None


def plan_rollout(
    strategy: Any,
    decision_groups: Iterable[DecisionGroup],
    existing: Iterable[ClusterRolloutStatus],
    now: Timestamp,
    *,
    field_path: str = "strategy",
    absent_type: RolloutType | None = RolloutType.ALL,
    held: frozenset[GroupKey] = frozenset(),
) -> RolloutPlan:
    """Plan the next step of a rollout.

    ``strategy`` is a ``rolloutStrategy`` as in the API object (``{"type": ..., "all" |
    "progressive" | "progressivePerGroup": {...}}``), a pydantic-like model of it (anything with
    ``model_dump(by_alias=True)``), or an already decoded RolloutStrategy. ``field_path`` names
    the strategy in error messages. Raises RolloutStrategyError (a ValueError) naming the field
    when the strategy is malformed. ``rolloutType``, the older spelling of ``type``, is read as
    ``type``; a strategy with neither is ``absent_type`` (see ``decode_strategy``).

    ``held`` (ours: manual promotion, docs/behaviour/validation.md) names decision groups that wait
    for a promotion: none of their clusters that has not reported is chosen (they get nothing
    new), their reported clusters are judged as usual, and a walk that reaches such a group stops
    there (``trace.stop == "promotion"``).
    """
    return plan(
        decode_strategy(strategy, field_path, absent_type=absent_type), decision_groups, existing, now, held=held
    )


def plan(
    strategy: RolloutStrategy,
    decision_groups: Iterable[DecisionGroup],
    existing: Iterable[ClusterRolloutStatus],
    now: Timestamp,
    *,
    held: frozenset[GroupKey] = frozenset(),
) -> RolloutPlan:
    """Plan with an already decoded strategy (see ``plan_rollout``)."""
    now_ns = to_ns(now)

    # --- decision groups (section 4) ---
    merged: dict[GroupKey, set[str]] = {}
    for group in decision_groups:
        key = GroupKey(group.group_name, group.group_index)
        members = merged.get(key)
        if members is None:
            merged[key] = set(group.clusters)
        else:
            members.update(group.clusters)
    for members in merged.values():
        members.discard("")
    keys = sorted(merged, key=_group_order)
    index_count = len({key.group_index for key in keys})
    visible = [key for key in keys if 0 <= key.group_index < index_count]

    selected: set[GroupKey] = set()
    for ref in strategy.mandatory_decision_groups:
        if ref.group_name:
            selected.update(key for key in keys if key.group_name == ref.group_name)
        else:
            selected.update(key for key in keys if key.group_index == ref.group_index)
    mandatory = [key for key in keys if key in selected]
    rest = [key for key in visible if key not in selected]

    universe: set[str] = set().union(*(merged[key] for key in visible))

    # Label of a cluster: the group containing it with the lowest (index, name).
    labels: dict[str, GroupKey] = {}
    for key in reversed(keys):
        labels.update(dict.fromkeys(merged[key], key))
    label_of = labels.get

    # --- current and removed clusters (section 5) ---
    existing_list = list(existing)
    current: list[ClusterRolloutStatus] = []
    removed: list[PlannedCluster] = []
    for entry in existing_list:
        name = entry.cluster_name
        if name in universe:
            current.append(entry)
        else:
            label = label_of(name, _NO_GROUP)
            ltt = entry.last_transition_time
            removed.append(
                PlannedCluster(
                    name,
                    label.group_name,
                    label.group_index,
                    entry.status,
                    None if ltt is None else to_ns(ltt),
                    None,
                )
            )

    deadline = strategy.progress_deadline_ns  # None: unlimited
    soak = strategy.min_success_time_ns

    def apply_deadline(entry: ClusterRolloutStatus) -> tuple[int, int]:
        """(since, end) in nanoseconds for a ToApply cluster whose apply failed (ours, section 6)."""
        raw = entry.apply_failed_since
        assert raw is not None and deadline is not None
        since = raw if type(raw) is int else to_ns(raw)
        return since, since + deadline

    # --- judging one reported cluster (section 6) ---
    def judge(
        entry: ClusterRolloutStatus,
        soak: int,
        rollout: list[PlannedCluster],
        timeout: list[PlannedCluster],
    ) -> RolloutStatus:
        status = entry.status
        if status is TIME_OUT or status is SKIP:
            return status
        name = entry.cluster_name
        raw_ltt = entry.last_transition_time
        ltt = None if raw_ltt is None else (raw_ltt if type(raw_ltt) is int else to_ns(raw_ltt))
        group = label_of(name, _NO_GROUP)
        if status is TO_APPLY:
            failed_since = entry.apply_failed_since
            if failed_since is None or deadline is None:
                rollout.append(PlannedCluster(name, group[0], group[1], status, ltt, None))
                return status
            # Ours: an apply that keeps failing times out like a Failed cluster (section 6).
            since, end = apply_deadline(entry)
            if now_ns < end:
                rollout.append(PlannedCluster(name, group[0], group[1], status, ltt, end))
                return status
            timeout.append(PlannedCluster(name, group[0], group[1], TIME_OUT, since, end))
            return TIME_OUT
        if status is SUCCEEDED:
            if soak == MAX_DURATION_NS:
                return status
            end = (now_ns if ltt is None else ltt) + soak
            if now_ns < end:
                rollout.append(PlannedCluster(name, group[0], group[1], status, ltt, end))
            return status
        # Progressing, Failed
        if deadline is None:
            rollout.append(PlannedCluster(name, group[0], group[1], status, ltt, None))
            return status
        end = (now_ns if ltt is None else ltt) + deadline
        if now_ns < end:
            rollout.append(PlannedCluster(name, group[0], group[1], status, ltt, end))
            return status
        timeout.append(PlannedCluster(name, group[0], group[1], TIME_OUT, ltt, end))
        return TIME_OUT

    # --- cluster walk (section 8) ---
    def cluster_walk(walk_keys: Sequence[GroupKey], batch: int, tolerance: int, soak: int) -> _Answer:
        rollout: list[PlannedCluster] = []
        timeout: list[PlannedCluster] = []
        failures = 0
        breach = False
        reported: set[str] = set()
        for entry in sorted(current, key=_by_name):
            name = entry.cluster_name
            reported.add(name)
            if breach and entry.status is TO_APPLY:
                judged = TO_APPLY
            else:
                judged = judge(entry, soak, rollout, timeout)
            if judged is FAILED or judged is TIME_OUT:
                failures += 1
                breach = failures > tolerance
            if len(rollout) >= batch:
                return _Answer(rollout, timeout, breach, "batch_full", last_examined=name)
        if breach:
            return _Answer(rollout, timeout, True, "breach")
        pool: set[str] = set().union(*(merged[key] for key in walk_keys if key not in held))
        pool.difference_update(reported)
        if held:
            # A cluster of a held group waits, also when it is in an open group too.
            pool.difference_update(*(merged[key] for key in walk_keys if key in held))
        if not pool:
            waiting = any(merged[key] - reported for key in walk_keys if key in held)
            return _Answer(rollout, timeout, False, "promotion" if waiting else "completed")
        room = max(batch - len(rollout), 1)
        chosen = sorted(pool)[:room]
        walk_set = set(walk_keys)
        for name in chosen:
            group = labels[name]
            if group not in walk_set:
                group = next(key for key in walk_keys if name in merged[key])
            rollout.append(PlannedCluster(name, group[0], group[1], TO_APPLY, None, None))
        stop: Stop = "batch_full" if len(rollout) >= batch else "completed"
        return _Answer(rollout, timeout, False, stop)

    # --- group walk (section 9) ---
    def group_walk(walk_keys: Sequence[GroupKey], tolerance: Threshold) -> _Answer:
        rollout: list[PlannedCluster] = []
        timeout: list[PlannedCluster] = []
        remembered: dict[str, RolloutStatus] = {}
        # ToApply clusters whose apply failed are judged in their group's turn (only a deadline
        # can make them TimeOut), so the order of the walk is the one for any ToApply cluster.
        apply_failed: dict[str, ClusterRolloutStatus] = {}
        for entry in current:
            if entry.status is not TO_APPLY:
                remembered[entry.cluster_name] = judge(entry, soak, rollout, timeout)
            elif entry.apply_failed_since is not None and deadline is not None:
                apply_failed[entry.cluster_name] = entry
        remembered_get = remembered.get
        failures_so_far = 0
        breach = False
        for key in walk_keys:
            members = merged[key]
            if key in held:
                # Clusters that reported were judged above; nothing new starts here or after.
                return _Answer(rollout, timeout, breach, "promotion", stop_group=key)
            allowed = resolve_threshold(tolerance, len(members), 0)
            group_failures = 0
            group_name, group_index = key
            for name in sorted(members):
                status = remembered_get(name)
                if status is not None:
                    if status is FAILED or status is TIME_OUT:
                        group_failures += 1
                        breach = group_failures > allowed
                    continue
                failing = apply_failed.get(name) if apply_failed else None
                if failing is None:
                    rollout.append(PlannedCluster(name, group_name, group_index, TO_APPLY, None, None))
                    continue
                since, end = apply_deadline(failing)
                if now_ns < end:
                    rollout.append(PlannedCluster(name, group_name, group_index, TO_APPLY, None, end))
                    continue
                timeout.append(PlannedCluster(name, group_name, group_index, TIME_OUT, since, end))
                group_failures += 1
                breach = group_failures > allowed
            failures_so_far += group_failures
            if len(rollout) - failures_so_far > 0 or breach:
                stop: Stop = "breach" if breach else "group_unfinished"
                return _Answer(rollout, timeout, breach, stop, stop_group=key)
        return _Answer(rollout, timeout, breach, "completed")

    # --- the three strategies (section 10) ---
    def trace(
        answer: _Answer, phase: Phase, walk: Walk, batch: int | None = None, tol: int | None = None
    ) -> PlanTrace:
        return PlanTrace(
            phase=phase,
            walk=walk,
            stop=answer.stop,
            visible_groups=tuple(visible),
            mandatory_groups=tuple(mandatory),
            rest_groups=tuple(rest),
            batch_size=batch,
            failure_tolerance=tol,
            last_examined=answer.last_examined,
            stop_group=answer.stop_group,
        )

    def finish(answer: _Answer, plan_trace: PlanTrace) -> RolloutPlan:
        return RolloutPlan(
            strategy=strategy,
            clusters_to_rollout=tuple(answer.rollout),
            clusters_timeout=tuple(answer.timeout),
            clusters_removed=tuple(removed),
            max_failure_breach=answer.breach,
            recheck_after_ns=_recheck_after(answer.rollout, now_ns),
            trace=plan_trace,
        )

    if strategy.type is RolloutType.ALL:
        size = len(universe)
        answer = cluster_walk(visible, size, size, 0)
        return finish(answer, trace(answer, "all", "cluster", size, size))

    tolerance = 0
    if strategy.type is RolloutType.PROGRESSIVE:
        tolerance = resolve_threshold(strategy.max_failures, len(universe), 0)

    if mandatory:
        answer = group_walk(mandatory, 0)
        if answer.rollout or answer.timeout or answer.stop == "promotion":
            return finish(answer, trace(answer, "mandatory", "group"))

    if strategy.type is RolloutType.PROGRESSIVE:
        check_max_concurrency(strategy)
        rest_size = len(set().union(*(merged[key] for key in rest)))
        batch = resolve_threshold(strategy.max_concurrency, rest_size, rest_size)
        answer = cluster_walk(rest, batch, tolerance, soak)
        return finish(answer, trace(answer, "rest", "cluster", batch, tolerance))

    answer = group_walk(rest, strategy.max_failures)
    return finish(answer, trace(answer, "rest", "group"))


def _recheck_after(rollout: Sequence[PlannedCluster], now_ns: int) -> int | None:
    """Section 11: the smallest positive (recheckTime - now); Go's Time.Sub saturates."""
    best: int | None = None
    for entry in rollout:
        recheck = entry[5]
        if recheck is not None:
            delta = recheck - now_ns
            if delta > 0 and (best is None or delta < best):
                best = delta
    if best is not None and best > MAX_DURATION_NS:
        best = MAX_DURATION_NS
    return best
