"""Which Events a reconcile of a ManifestWorkReplicaSet records (improvement 5).

- ``RolloutWaveStarted`` (Normal) when a pass creates or updates works, per placement and
  decision group, naming the clusters;
- ``MaxFailuresBreached`` (Warning) when a placement's rollout stops at maxFailures, naming the
  failed clusters and why they failed, once per distinct set of failed clusters;
- ``RolloutComplete`` (Normal) when ``PlacementRolledOut`` turns True;
- ``DeprecatedRolloutType`` (Warning) when a placementRef's rolloutStrategy spells its type with
  the older key ``rolloutType`` (read as ``type``), once per distinct situation;
- a Warning with the reason ``ManifestworkApplied`` gets (``ManifestWorkInvalid``,
  ``ManifestWorkWriteFailed``, ...; improvement 2) when works cannot be written, naming the
  clusters and the API server's error, once per distinct situation (the retries with back-off
  that follow tell nothing new);
- ``ManifestWorkApplyFailed`` (Warning; improvement 9) when works failed to apply on their
  clusters, once per (cluster, error): built in ``apply_failures.py``.

Pure: the caller keeps ``breaches`` (placement -> failed clusters already reported) and the
spelling and write-failure warnings already told between passes; losing them (a restart) only means a breach or a
warning is reported once more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.api.constants import (
    CONDITION_PLACEMENT_ROLLED_OUT,
    EVENT_MAX_FAILURES_BREACHED,
    EVENT_ROLLOUT_COMPLETE,
    EVENT_WAVE_STARTED,
)
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.rollout_text import (
    WARNING,
    RolloutEvent,
    cluster_list,
    legacy_type_warning,
    new_warnings,
)
from ocm_rollout.controllers.common.wire import JSON, as_mapping, mappings_in
from ocm_rollout.controllers.workset.aggregation import (
    DeployOutcome,
    failure_message,
    failure_reason,
)
from ocm_rollout.controllers.workset.plan import DeployPlan

_names = cluster_list


def spelling_events(mwrs: Mapping[str, Any], told: frozenset[str]) -> tuple[list[RolloutEvent], frozenset[str]]:
    """``DeprecatedRolloutType`` warnings for the placementRefs of ``mwrs`` (as stored) whose
    rolloutStrategy is read through ``rolloutType``, leaving out those in ``told``; and the memory
    of the warnings that hold now."""
    refs = (mwrs.get("spec") or {}).get("placementRefs")
    found = []
    for index, ref in enumerate(refs if isinstance(refs, list) else ()):
        if not isinstance(ref, Mapping):
            continue
        event = legacy_type_warning(f"placementRefs[{index}] ({ref.get('name') or ''})", ref.get("rolloutStrategy"))
        if event is not None:
            found.append(event)
    return new_warnings(found, told)


def write_failure_events(outcome: DeployOutcome, told: frozenset[str]) -> tuple[list[RolloutEvent], frozenset[str]]:
    """The Warning for the works a pass could not write (the reason and message its
    ``ManifestworkApplied`` condition gets), unless already in ``told``; and the memory to keep."""
    failures = outcome.failures()
    found = [RolloutEvent(failure_reason(failures), failure_message(failures), WARNING)] if failures else []
    return new_warnings(found, told)


def rollout_events(
    *,
    plan: DeployPlan,
    outcome: DeployOutcome,
    old_status: Mapping[str, object] | None,
    new_status: JSON,
    breaches: Mapping[str, frozenset[str]],
) -> tuple[list[RolloutEvent], dict[str, frozenset[str]]]:
    """The events of one pass and the updated breach memory."""
    events: list[RolloutEvent] = []
    memory: dict[str, frozenset[str]] = {}
    for ref in plan.refs:
        done = outcome.ref(ref.name).applied
        waves: dict[tuple[int, str], dict[str, list[str]]] = {}
        for write in ref.writes:
            if write.cluster not in done:
                continue
            bucket = waves.setdefault((write.group_index, write.group_name), {"created": [], "updated": []})
            bucket["created" if write.is_create else "updated"].append(write.cluster)
        for (index, group_name), bucket in sorted(waves.items()):
            clusters = sorted(bucket["created"] + bucket["updated"])
            group = f"decision group {index}" + (f" ({group_name})" if group_name else "")
            verbs = []
            if bucket["created"]:
                verbs.append(f"{len(bucket['created'])} created")
            if bucket["updated"]:
                verbs.append(f"{len(bucket['updated'])} updated")
            events.append(
                RolloutEvent(
                    EVENT_WAVE_STARTED,
                    f'placement "{ref.name}", {group}: rolling out to {len(clusters)} cluster(s) '
                    f"({', '.join(verbs)}): {_names(clusters)}",
                )
            )
        if ref.breach:
            failed = ref.failed_clusters()
            key = frozenset(failed)
            memory[ref.name] = key
            if breaches.get(ref.name) != key:
                details = []
                for cluster in sorted(failed):
                    why = failed[cluster]
                    status = ref.statuses.get(cluster)
                    if status is not None and status.reason:
                        why += f": {status.reason}"
                    details.append(f"{cluster} ({why})")
                events.append(
                    RolloutEvent(
                        EVENT_MAX_FAILURES_BREACHED,
                        f'placement "{ref.name}": maxFailures breached by {len(failed)} failed '
                        f"cluster(s), no new clusters are rolled out: {_names(details)}",
                        WARNING,
                    )
                )
    old_rolled = find_condition(
        mappings_in(as_mapping(old_status).get("conditions")), CONDITION_PLACEMENT_ROLLED_OUT
    )
    new_rolled = find_condition(new_status.get("conditions") or [], CONDITION_PLACEMENT_ROLLED_OUT)
    total = int((new_status.get("summary") or {}).get("total") or 0)
    if (
        new_rolled is not None
        and new_rolled.get("status") == "True"
        and (old_rolled is None or old_rolled.get("status") != "True")
        and total > 0
    ):
        names = ", ".join(f'"{r.name}"' for r in plan.refs if r.error is None)
        events.append(
            RolloutEvent(
                EVENT_ROLLOUT_COMPLETE,
                f"rollout complete: {total} cluster(s) succeeded across placement(s) {names}",
            )
        )
    return events, memory
