"""Small readers of the wire form (plain JSON dicts) shared by the pure modules.

Objects reach the core exactly as the API server stores them; these helpers read conditions,
times and metadata from them without ever failing on a missing or oddly typed field. The
``as_*`` readers and ``mapping_at``/``mappings_in`` are the generic ones a core reads any other
field with (a missing or oddly typed value reads as empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.api import times

# The one RFC 3339 formatter of the code (metav1.Time and metav1.MicroTime), for the cores.
from ocm_rollout.api.times import format_micro_time as format_micro_time
from ocm_rollout.api.times import format_time as format_time

JSON = dict[str, Any]


@dataclass(frozen=True)
class Cond:
    """The parts of one metav1.Condition the controller reads."""

    type: str
    status: str
    observed_generation: int
    last_transition_time: datetime | None
    reason: str
    message: str


def parse_time(value: Any) -> datetime | None:
    """An aware UTC datetime from RFC 3339 text (``ocm_rollout.api.times.parse_time``); None
    when missing or unreadable. A datetime is taken as it is (naive: UTC)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        return times.parse_time(value)
    except ValueError:
        return None


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` itself when it is an object (a Mapping), else a new empty dict: a field that
    should hold an object, read without failing (``as_mapping(obj.get("spec")).get("paused")``)."""
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return {}


def as_list(value: Any) -> list[Any]:
    """``value`` itself when it is an array (a list), else a new empty list."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """``value`` when it is a string, else "" (nothing is converted: ``5`` and ``None`` read as "")."""
    return value if isinstance(value, str) else ""


def mapping_at(obj: Any, *path: str) -> Mapping[str, Any]:
    """The object reached from ``obj`` through the keys of ``path``
    (``mapping_at(cma, "spec", "installStrategy")``); empty when ``obj`` or a step is missing or
    not an object."""
    found: Any = obj
    for key in path:
        found = as_mapping(found).get(key)
    return as_mapping(found)


def mappings_in(value: Any) -> list[Mapping[str, Any]]:
    """The items of an array that are objects, in order (a new list; empty when ``value`` is not
    a list)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    return 0


def conditions_of(obj: Mapping[str, Any] | None) -> dict[str, Cond]:
    """The conditions of ``obj["status"]`` keyed by type (the first of a duplicated type wins)."""
    result: dict[str, Cond] = {}
    status = (obj or {}).get("status")
    if not isinstance(status, Mapping):
        return result
    raw = status.get("conditions")
    if not isinstance(raw, list):
        return result
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        type_ = item.get("type")
        if not isinstance(type_, str) or type_ in result:
            continue
        result[type_] = Cond(
            type=type_,
            status=str(item.get("status") or ""),
            observed_generation=_int(item.get("observedGeneration")),
            last_transition_time=parse_time(item.get("lastTransitionTime")),
            reason=str(item.get("reason") or ""),
            message=str(item.get("message") or ""),
        )
    return result


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["metadata"]`` (empty when missing or not an object)."""
    return as_mapping(obj.get("metadata"))


def fenced(patch: Mapping[str, Any], obj: Mapping[str, Any]) -> JSON:
    """A merge ``patch`` of ``obj`` that the API server applies only to the version read (its
    ``resourceVersion`` as precondition: 409 Conflict otherwise)."""
    metadata = patch.get("metadata")
    return {
        **patch,
        "metadata": {**(metadata if isinstance(metadata, Mapping) else {}), "resourceVersion": meta(obj).get("resourceVersion")},
    }


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def generation_of(obj: Mapping[str, Any]) -> int:
    return _int(meta(obj).get("generation"))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    value = meta(obj).get("labels")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def label_of(obj: Mapping[str, Any], key: str) -> str | None:
    """``labels_of(obj).get(key)`` without copying the labels (for loops over many objects)."""
    value = meta(obj).get("labels")
    found = value.get(key) if isinstance(value, Mapping) else None
    return None if found is None else str(found)


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    value = meta(obj).get("annotations")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))
