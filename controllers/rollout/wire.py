"""The JSON contract of ``ocm-rollout plan``: decoding its input document and encoding a plan.

Input::

    {"now": "RFC3339",
     "strategy": {"type": "All|Progressive|ProgressivePerGroup", "all": {...}, ...},
     "decisionGroups": [{"groupName": "canary", "groupIndex": 0, "clusters": ["c1", "c2"]}],
     "existing": [{"clusterName": "c1", "status": "Succeeded", "lastTransitionTime": "RFC3339" | null,
                   "applyFailedSince": "RFC3339" (optional, ours: a ToApply cluster whose apply failed)}]}

Output::

    {"strategy": {...effective...},
     "clustersToRollout": [{"clusterName", "groupName", "groupIndex", "status",
                            "lastTransitionTime", "recheckTime"}],
     "clustersTimeOut": [...], "clustersRemoved": [...],
     "maxFailureBreach": false, "recheckAfterSeconds": 30.0 | null}

Lists are sorted by cluster name (their order carries no meaning); times are RFC 3339 UTC.
``strategy.rolloutType``, the older spelling of ``type``, is read as ``type`` (both set must agree);
a strategy with neither is an error naming ``strategy.type``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    DecisionGroup,
    PlannedCluster,
    RolloutInputError,
    RolloutPlan,
    RolloutStatus,
    RolloutStrategy,
)
from ocm_rollout.controllers.rollout.planner import plan
from ocm_rollout.controllers.rollout.strategy import decode_strategy, is_int32
from ocm_rollout.controllers.rollout.timefmt import TimeFormatError, format_rfc3339, parse_rfc3339

_STATUSES = ", ".join(status.value for status in RolloutStatus)
_STATUS_VALUES = frozenset(status.value for status in RolloutStatus)


@dataclass(frozen=True, slots=True)
class PlanInput:
    """A decoded ``ocm-rollout plan`` input document."""

    now_ns: int
    strategy: RolloutStrategy
    decision_groups: tuple[DecisionGroup, ...]
    existing: tuple[ClusterRolloutStatus, ...]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _time(value: Any, path: str) -> int:
    if not isinstance(value, str):
        raise RolloutInputError(path, f"must be an RFC 3339 time string, not {_kind(value)}")
    try:
        return parse_rfc3339(value)
    except TimeFormatError as exc:
        raise RolloutInputError(path, str(exc)) from None


def _list(document: Mapping[str, Any], name: str) -> list[Any]:
    value = document.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RolloutInputError(name, f"must be a list, not {_kind(value)}")
    return value


def decode_groups(items: Iterable[Any], path: str = "decisionGroups") -> tuple[DecisionGroup, ...]:
    """Decode ``[{"groupName", "groupIndex", "clusters"}]`` (groupName defaults to "")."""
    groups: list[DecisionGroup] = []
    for position, item in enumerate(items):
        item_path = f"{path}[{position}]"
        if not isinstance(item, Mapping):
            raise RolloutInputError(item_path, f"must be an object, not {_kind(item)}")
        name = item.get("groupName")
        if name is None:
            name = ""
        elif not isinstance(name, str):
            raise RolloutInputError(f"{item_path}.groupName", f"must be a string, not {_kind(name)}")
        index = item.get("groupIndex")
        if index is None:
            index = 0
        elif not is_int32(index):
            raise RolloutInputError(
                f"{item_path}.groupIndex", f"must be a 32-bit integer, not {_kind(index)}"
            )
        clusters = item.get("clusters")
        if clusters is None:
            clusters = []
        elif not isinstance(clusters, list):
            raise RolloutInputError(
                f"{item_path}.clusters", f"must be a list of names, not {_kind(clusters)}"
            )
        for number, cluster in enumerate(clusters):
            if not isinstance(cluster, str):
                raise RolloutInputError(
                    f"{item_path}.clusters[{number}]", f"must be a string, not {_kind(cluster)}"
                )
        groups.append(DecisionGroup(group_name=name, group_index=index, clusters=tuple(clusters)))
    return tuple(groups)


def decode_existing(items: Iterable[Any], path: str = "existing") -> tuple[ClusterRolloutStatus, ...]:
    """Decode ``[{"clusterName", "status", "lastTransitionTime", "applyFailedSince"?}]``; times become
    nanoseconds."""
    entries: list[ClusterRolloutStatus] = []
    for position, item in enumerate(items):
        item_path = f"{path}[{position}]"
        if not isinstance(item, Mapping):
            raise RolloutInputError(item_path, f"must be an object, not {_kind(item)}")
        name = item.get("clusterName")
        if name is None:
            name = ""
        elif not isinstance(name, str):
            raise RolloutInputError(f"{item_path}.clusterName", f"must be a string, not {_kind(name)}")
        status = item.get("status")
        if not isinstance(status, str) or status not in _STATUS_VALUES:
            shown = repr(status) if isinstance(status, str) else _kind(status)
            raise RolloutInputError(
                f"{item_path}.status", f"unknown status {shown} (expected one of {_STATUSES})"
            )
        raw_time = item.get("lastTransitionTime")
        ltt = None if raw_time is None else _time(raw_time, f"{item_path}.lastTransitionTime")
        raw_since = item.get("applyFailedSince")
        since = None if raw_since is None else _time(raw_since, f"{item_path}.applyFailedSince")
        entries.append(ClusterRolloutStatus(name, RolloutStatus(status), ltt, since))
    return tuple(entries)


def decode_plan_input(document: Any) -> PlanInput:
    """Decode a whole input document; raises RolloutInputError naming the first bad field."""
    if not isinstance(document, Mapping):
        raise RolloutInputError("input", f"must be a JSON object, not {_kind(document)}")
    if document.get("now") is None:
        raise RolloutInputError("now", "is required (an RFC 3339 time such as 2024-05-01T10:00:00Z)")
    now_ns = _time(document["now"], "now")
    # docs/behaviour/rollout.md section 2: in this contract an absent type is an error naming type.
    strategy = decode_strategy(document.get("strategy"), "strategy", absent_type=None)
    groups = decode_groups(_list(document, "decisionGroups"))
    existing = decode_existing(_list(document, "existing"))
    return PlanInput(now_ns=now_ns, strategy=strategy, decision_groups=groups, existing=existing)


def plan_document(document: Any) -> RolloutPlan:
    """Decode an input document and plan it."""
    decoded = decode_plan_input(document)
    return plan(decoded.strategy, decoded.decision_groups, decoded.existing, decoded.now_ns)


def _time_text(ns: int | None) -> str | None:
    return None if ns is None else format_rfc3339(ns)


def encode_entry(entry: PlannedCluster) -> dict[str, Any]:
    return {
        "clusterName": entry.cluster_name,
        "groupName": entry.group_name,
        "groupIndex": entry.group_index,
        "status": entry.status.value,
        "lastTransitionTime": _time_text(entry.last_transition_time_ns),
        "recheckTime": _time_text(entry.recheck_time_ns),
    }


def _encode_list(entries: Iterable[PlannedCluster]) -> list[dict[str, Any]]:
    return [encode_entry(entry) for entry in sorted(entries, key=lambda e: e.cluster_name)]


def encode_plan(result: RolloutPlan) -> dict[str, Any]:
    """The output document of ``ocm-rollout plan`` for ``result``."""
    return {
        "strategy": result.strategy.to_dict(),
        "clustersToRollout": _encode_list(result.clusters_to_rollout),
        "clustersTimeOut": _encode_list(result.clusters_timeout),
        "clustersRemoved": _encode_list(result.clusters_removed),
        "maxFailureBreach": result.max_failure_breach,
        "recheckAfterSeconds": result.recheck_after_seconds,
    }
