"""metav1.Condition lists as plain JSON dicts, with Kubernetes' set-condition semantics.

``set_condition`` mirrors ``meta.SetStatusCondition``: a new type is appended; an existing one
keeps its position and takes the new reason, message and observedGeneration, while its
``lastTransitionTime`` moves only when the status flips. Nothing here mutates its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ocm_rollout.api import constants

Condition = dict[str, Any]

TRUE = constants.CONDITION_TRUE
FALSE = constants.CONDITION_FALSE
UNKNOWN = constants.CONDITION_UNKNOWN


@lru_cache(maxsize=8)
def format_time(moment: datetime) -> str:
    """RFC 3339 at second precision in UTC, as metav1.Time is written on the wire. Remembered for
    the last few instants: a pass stamps every condition it sets with the same one."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """The instant of an RFC 3339 string; ``None`` for a missing or unreadable value."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def make_condition(
    type_: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
) -> Condition:
    """A condition without ``lastTransitionTime`` (``set_condition`` stamps it)."""
    cond: Condition = {"type": type_, "status": status, "reason": reason, "message": message}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    return cond


def find_condition(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> bool:
    cond = find_condition(conditions, type_)
    return cond is not None and cond.get("status") == TRUE


def _ordered(cond: Mapping[str, Any]) -> Condition:
    """Field order of metav1.Condition on the wire; observedGeneration is omitted when 0."""
    out: Condition = {"type": cond["type"], "status": cond["status"]}
    if cond.get("observedGeneration"):
        out["observedGeneration"] = cond["observedGeneration"]
    out["lastTransitionTime"] = cond["lastTransitionTime"]
    out["reason"] = cond.get("reason", "")
    out["message"] = cond.get("message", "")
    return out


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None, new: Mapping[str, Any], now: datetime
) -> list[Condition]:
    """A copy of ``conditions`` with ``new`` set (see module docstring)."""
    result: list[Condition] = [dict(c) for c in conditions or ()]
    stamp = new.get("lastTransitionTime") or format_time(now)
    for index, existing in enumerate(result):
        if existing.get("type") != new["type"]:
            continue
        updated = dict(existing)
        if existing.get("status") != new["status"]:
            updated["status"] = new["status"]
            updated["lastTransitionTime"] = stamp
        elif not existing.get("lastTransitionTime"):
            updated["lastTransitionTime"] = stamp
        updated["reason"] = new.get("reason", "")
        updated["message"] = new.get("message", "")
        updated["observedGeneration"] = new.get("observedGeneration") or 0
        result[index] = _ordered(updated)
        return result
    appended = dict(new)
    appended["lastTransitionTime"] = stamp
    result.append(_ordered(appended))
    return result


def remove_condition(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> list[Condition]:
    return [dict(c) for c in conditions or () if c.get("type") != type_]
