"""RFC 3339 times as Kubernetes writes and reads them: the one formatter and parser of the code.

- ``format_time``: a metav1.Time, whole seconds in UTC (``2024-05-01T10:00:00Z``).
- ``format_micro_time``: a metav1.MicroTime, exactly six fractional digits in UTC (Leases,
  Events, the add-on manager's abort records).
- ``parse_time``: an aware UTC datetime from RFC 3339 text (any offset, a fraction, ``Z`` or
  ``z``); ValueError when the text is not a time.

A naive datetime means UTC everywhere. The models (``ocm_rollout.api.meta.Time``) use these, and
so do the controllers through ``ocm_rollout.controllers.common.wire`` (whose ``parse_time`` reads a
missing or unreadable time as None instead of failing). The rollout planner's instants are integer
nanoseconds, with Go's nanosecond precision in their text form:
``ocm_rollout.controllers.rollout.timefmt``.
"""

from __future__ import annotations

from datetime import UTC, datetime


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, the way Kubernetes writes a metav1.Time."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """RFC 3339 in UTC with six fractional digits, the way Kubernetes writes a metav1.MicroTime."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """The aware UTC datetime of RFC 3339 ``text`` (surrounding blanks ignored); raises
    ValueError naming the text when it is not a time."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an RFC 3339 time") from exc
    return _utc(parsed)
