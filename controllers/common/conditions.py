"""Setting one condition in a status ``conditions`` list (wire form), with the semantics of
apimachinery's ``meta.SetStatusCondition``: the first condition of the type is updated in place
(its lastTransitionTime moves only when the status flips; reason, message and
observedGeneration always take the new values, an observedGeneration of 0 being omitted), or a
new one is appended. The clock comes in as an argument. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ocm_rollout.controllers.common.wire import JSON, format_time


def find_condition(conditions: Iterable[Any], type_: str) -> Mapping[str, Any] | None:
    """The first condition of ``type_`` (entries that are not objects are skipped)."""
    for cond in conditions:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def set_status_condition(
    conditions: list[Any],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int = 0,
) -> bool:
    """Set condition ``type_`` in ``conditions`` (changed in place); True if anything changed."""
    for index, old in enumerate(conditions):
        if not isinstance(old, Mapping) or old.get("type") != type_:
            continue
        new: JSON = dict(old)
        new["status"] = status
        if old.get("status") != status or not old.get("lastTransitionTime"):
            new["lastTransitionTime"] = format_time(now)
        new["reason"] = reason
        new["message"] = message
        if observed_generation:
            new["observedGeneration"] = observed_generation
        else:
            new.pop("observedGeneration", None)
        if new == old:
            return False
        conditions[index] = new
        return True
    cond: JSON = {"type": type_, "status": status}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    cond.update(lastTransitionTime=format_time(now), reason=reason, message=message)
    conditions.append(cond)
    return True
