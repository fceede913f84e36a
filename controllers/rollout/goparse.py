"""OCM's rollout thresholds (maxFailures, maxConcurrency) on top of the Go-syntax parsers.

The Go-syntax parsers themselves live in ``ocm_rollout.api.gosyntax`` (shared with the models); they are
re-exported here for the planner's callers.
"""

from __future__ import annotations

import math

from ocm_rollout.api.gosyntax import (
    HOUR,
    MAX_DURATION_NS,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    NANOSECOND,
    SECOND,
    GoSyntaxError,
    parse_go_duration,
    parse_go_float,
    parse_min_success_time,
    parse_progress_deadline,
)

__all__ = [
    "HOUR",
    "MAX_DURATION_NS",
    "MICROSECOND",
    "MILLISECOND",
    "MINUTE",
    "NANOSECOND",
    "SECOND",
    "GoSyntaxError",
    "Threshold",
    "check_threshold",
    "parse_go_duration",
    "parse_go_float",
    "parse_min_success_time",
    "parse_progress_deadline",
    "resolve_threshold",
]


# --- thresholds (maxFailures, maxConcurrency) --------------------------------------------------

#: A threshold as it appears in the API: a JSON integer (int32) or a string such as "25%".
Threshold = int | str


def check_threshold(value: Threshold) -> None:
    """Raise GoSyntaxError unless ``value`` is an integer or a ``"<Go float>%"`` string."""
    if isinstance(value, int):
        return
    if not value.endswith("%"):
        raise GoSyntaxError(f"{value!r} is an invalid maximum threshold value: string is not a percentage")
    try:
        parse_go_float(value[:-1])
    except GoSyntaxError as exc:
        raise GoSyntaxError(f"{value!r} is an invalid percentage: {exc}") from None


def resolve_threshold(value: Threshold, total: int, fallback: int) -> int:
    """OCM's ``calculateRolloutSize``: the count ``value`` stands for out of ``total``.

    An integer is itself; ``p%`` is ``ceil(p / 100 * total)`` in IEEE-754 doubles, in that order;
    a non-finite product gives ``fallback``; then any result ``<= 0`` or ``> total`` is replaced by
    ``fallback``. ``value`` must have passed ``check_threshold``.
    """
    if isinstance(value, int):
        length = value
    else:
        product = parse_go_float(value[:-1]) / 100 * float(total)
        if not math.isfinite(product):
            return fallback
        length = math.ceil(product)
    if length <= 0 or length > total:
        return fallback
    return length
