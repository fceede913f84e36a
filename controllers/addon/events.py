"""Which Events a configuration-rollout pass of a ClusterManagementAddOn records (improvement 3).

What flows through ``rollout_events``: the pass's plan, the CMA status as it was before the pass,
the clusters whose MCA write was actually sent, and the breaches already reported -> the events
and the updated breach memory:

- ``RolloutWaveStarted`` (Normal) when the pass puts MCAs in flight (gives them a new desired
  configuration), per placement and decision group, naming the clusters;
- ``MaxFailuresBreached`` (Warning) when a placement's configuration rollout stops at maxFailures,
  naming the failed and timed-out clusters and why, once per distinct set of such clusters;
- ``RolloutComplete`` (Normal) when an ``installProgressions`` entry's Progressing condition turns
  Completed;
- ``RolloutAborted`` (Warning) by the pass that aborts a placement's rollout (failureStrategy
  AbortAll at a maxFailures breach, or the abort annotation), naming the failing clusters and what
  the add-ons return to (or why they cannot); it replaces ``MaxFailuresBreached`` while aborted.
  The operator sends the events of a pass only after the abort record is on the CMA, so an abort
  is told once (a kill between the two loses the event, never repeats it);
- ``RolloutRetried`` (Normal) by the pass that ends an abort on request;
- ``DeprecatedRolloutType`` (Warning, ``spelling_events``) when a placement's rolloutStrategy spells
  its type with the older key ``rolloutType`` (read as ``type``), once per distinct situation.

Pure: the caller keeps ``breaches`` (placement ``namespace/name`` -> clusters already reported)
between passes; losing it (a restart) only means a breach is reported once more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_CONDITION_PROGRESSING,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_RETRY,
    CONDITION_FALSE,
    EVENT_MAX_FAILURES_BREACHED,
    EVENT_ROLLOUT_ABORTED,
    EVENT_ROLLOUT_COMPLETE,
    EVENT_ROLLOUT_RETRIED,
    EVENT_WAVE_STARTED,
    REASON_ADDON_COMPLETED,
)
from ocm_rollout.controllers.addon import abort as aborting
from ocm_rollout.controllers.addon.configrollout import ConfigRolloutPlan, NodeReport
from ocm_rollout.controllers.addon.configs import (
    INSTALL_PROGRESSIONS,
    indexed_placement_strategies,
    is_manual,
    placement_ref,
)
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.rollout_text import (
    WARNING,
    RolloutEvent,
    cluster_list,
    legacy_type_warning,
    new_warnings,
)
from ocm_rollout.controllers.common.wire import as_mapping, mappings_in

_names = cluster_list


def _waves(node: NodeReport, written: set[str]) -> list[RolloutEvent]:
    started = sorted(c for c in node.widening if c in written)
    if not started:
        return []
    if node.is_defaults:
        return [
            RolloutEvent(
                EVENT_WAVE_STARTED,
                f"default configurations (no rollout strategy): configuring {len(started)} add-on(s): "
                f"{_names(started)}",
            )
        ]
    waves: dict[tuple[int, str], list[str]] = {}
    for cluster in started:
        group_name, group_index = node.group_of(cluster) or ("", 0)
        waves.setdefault((group_index, group_name), []).append(cluster)
    events = []
    for (index, group_name), clusters in sorted(waves.items()):
        group = f"decision group {index}" + (f" ({group_name})" if group_name else "")
        events.append(
            RolloutEvent(
                EVENT_WAVE_STARTED,
                f'placement "{node.key}", {group}: configuring {len(clusters)} add-on(s): {_names(clusters)}',
            )
        )
    return events


def _breach(node: NodeReport) -> RolloutEvent:
    failures = node.failures()
    details = []
    for cluster in sorted(failures):
        status, message = failures[cluster]
        details.append(f"{cluster} ({status}: {message})" if message else f"{cluster} ({status})")
    return RolloutEvent(
        EVENT_MAX_FAILURES_BREACHED,
        f'placement "{node.key}": maxFailures breached by {len(failures)} failed or timed-out add-on(s), '
        f"no new clusters are configured: {_names(details)}",
        WARNING,
    )


def _aborted(node: NodeReport) -> RolloutEvent:
    record, target = node.aborted, node.revert
    assert record is not None
    failures = node.failing
    details = []
    for cluster in sorted(failures):
        status, message = failures[cluster]
        details.append(f"{cluster} ({status}: {message})" if message else f"{cluster} ({status})")
    if record.cause == aborting.CAUSE_MAX_FAILURES:
        why = (
            f"failureStrategy AbortAll: maxFailures breached by {len(failures)} failed or timed-out add-on(s): "
            f"{_names(details)}"
        )
    else:
        why = f"requested by annotation {ANNOTATION_ROLLOUT_ABORT}={record.revision}"
        if details:
            why += f"; failed or timed-out add-on(s): {_names(details)}"
    rolled = aborting.configs_text(target.changed) if target is not None and target.changed else "the desired configurations"
    if target is not None and target.desired is not None:
        outcome = f"returning the add-ons to the last known good configuration {aborting.configs_text(target.good)}"
    else:
        outcome = f"it cannot be reverted: {target.blocked if target is not None else 'unknown'}"
    return RolloutEvent(
        EVENT_ROLLOUT_ABORTED,
        f'placement "{node.key}": configuration rollout of {rolled} aborted at {record.time} ({why}); {outcome}',
        WARNING,
    )


def _retried(node: NodeReport) -> RolloutEvent:
    record = node.retried
    assert record is not None
    if record.cause == aborting.CAUSE_REQUESTED:
        how = f"annotation {ANNOTATION_ROLLOUT_ABORT} no longer names revision {record.revision}"
    else:
        how = f"annotation {ANNOTATION_ROLLOUT_RETRY}={record.time}"
    return RolloutEvent(
        EVENT_ROLLOUT_RETRIED,
        f'placement "{node.key}": the configuration rollout aborted at {record.time} is retried ({how})',
    )


def _completed(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    cond = find_condition(entry.get("conditions"), ADDON_CONDITION_PROGRESSING)
    if cond is not None and cond.get("status") == CONDITION_FALSE and cond.get("reason") == REASON_ADDON_COMPLETED:
        return cond
    return None


def _progressions(status: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for entry in mappings_in(as_mapping(status).get(INSTALL_PROGRESSIONS)):
        found.setdefault(placement_ref(entry), entry)
    return found


def spelling_events(cma: Mapping[str, Any], told: frozenset[str]) -> tuple[list[RolloutEvent], frozenset[str]]:
    """``DeprecatedRolloutType`` warnings for the install strategy's placements (Placements
    install strategy only: no other reads a rolloutStrategy) whose rolloutStrategy is read
    through ``rolloutType``, leaving out those in ``told``; and the memory of those that hold now."""
    found = []
    if not is_manual(cma):
        for index, item in indexed_placement_strategies(cma):
            namespace, name = placement_ref(item)
            event = legacy_type_warning(
                f"installStrategy.placements[{index}] ({namespace}/{name})", item.get("rolloutStrategy")
            )
            if event is not None:
                found.append(event)
    return new_warnings(found, told)


def rollout_events(
    *,
    plan: ConfigRolloutPlan,
    old_cma_status: Mapping[str, Any] | None,
    written: set[str],
    breaches: Mapping[str, frozenset[str]],
) -> tuple[list[RolloutEvent], dict[str, frozenset[str]]]:
    """The events of one pass and the updated breach memory (see the module docstring)."""
    events: list[RolloutEvent] = []
    memory: dict[str, frozenset[str]] = {}
    for node in plan.nodes:
        if node.retried is not None:
            events.append(_retried(node))
        if node.new_abort:
            events.append(_aborted(node))
        events.extend(_waves(node, written))
        if node.breach and node.error is None and node.aborted is None:
            key = frozenset(node.failures())
            memory[node.key] = key
            if breaches.get(node.key) != key:
                events.append(_breach(node))
    if plan.defaults is not None:
        events.extend(_waves(plan.defaults, written))
    old = _progressions(old_cma_status)
    for ref, entry in _progressions(plan.cma_status).items():
        cond = _completed(entry)
        if cond is None:
            continue
        previous = old.get(ref)
        if previous is not None and _completed(previous) is not None:
            continue
        events.append(
            RolloutEvent(
                EVENT_ROLLOUT_COMPLETE,
                f'placement "{ref[0]}/{ref[1]}": configuration rollout complete: {cond.get("message") or ""}'.rstrip(),
            )
        )
    return events, memory
