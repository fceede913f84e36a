"""Finding and setting one condition in a status ``conditions`` list (wire form): the one
``find_condition`` and ``set_status_condition`` of the controllers (the models' own, on pydantic
``Condition`` objects, is ``ocm_rollout.api.meta.set_condition``).

Setting has the semantics of apimachinery's ``meta.SetStatusCondition``: the first condition of
the type is updated in place (its lastTransitionTime moves only when the status flips; reason,
message and observedGeneration always take the new values, an observedGeneration of 0 being
omitted), or a new one is appended. The clock comes in as an argument. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ocm_rollout.controllers.common.wire import JSON, format_time


def find_condition(conditions: Iterable[Any] | None, type_: str) -> Mapping[str, Any] | None:
    """The first condition of ``type_`` (entries that are not objects are skipped; a missing
    list, or a value that is not a list, has none)."""
    if not isinstance(conditions, Iterable) or isinstance(conditions, str | bytes | Mapping):
        return None
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
    now: datetime | str,
    observed_generation: int = 0,
) -> bool:
    """Set condition ``type_`` in ``conditions`` (changed in place); True if anything changed.
    ``now`` is the time, or its text (``format_time``) when the caller formats it once for many
    conditions."""
    for index, old in enumerate(conditions):
        if not (type(old) is dict or isinstance(old, Mapping)) or old.get("type") != type_:
            continue
        same_status = old.get("status") == status
        if (
            same_status
            and old.get("lastTransitionTime")
            and old.get("reason") == reason
            and old.get("message") == message
            and (
                old.get("observedGeneration") == observed_generation
                if observed_generation
                else "observedGeneration" not in old
            )
        ):
            return False  # (a pass over thousands of objects mostly finds its conditions set)
        new: JSON = {**old, "status": status}
        if not same_status or not old.get("lastTransitionTime"):
            new["lastTransitionTime"] = now if isinstance(now, str) else format_time(now)
        new["reason"] = reason
        new["message"] = message
        if observed_generation:
            new["observedGeneration"] = observed_generation
        elif "observedGeneration" in new:
            del new["observedGeneration"]
        conditions[index] = new
        return True
    cond: JSON = {"type": type_, "status": status}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    cond.update(
        lastTransitionTime=now if isinstance(now, str) else format_time(now), reason=reason, message=message
    )
    conditions.append(cond)
    return True
