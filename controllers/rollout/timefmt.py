"""Instants as integer nanoseconds since the Unix epoch (UTC), and their RFC 3339 form.

The planner works on integer nanoseconds so that Go durations (nanosecond precision) add to
transition times without rounding. Public inputs may be aware ``datetime`` objects (a naive one
is read as UTC) or integer nanoseconds.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

_NS_PER_SECOND = 1_000_000_000
_NS_PER_DAY = 86_400 * _NS_PER_SECOND
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_ONE_MICROSECOND = timedelta(microseconds=1)

#: An instant: an aware datetime (naive means UTC) or integer nanoseconds since the Unix epoch.
Timestamp = datetime | int

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)


class TimeFormatError(ValueError):
    """Text that is not an RFC 3339 date-time."""


def to_ns(value: Timestamp) -> int:
    """Nanoseconds since the Unix epoch of ``value``."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return ((value - _EPOCH) // _ONE_MICROSECOND) * 1_000
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a datetime or integer nanoseconds, got {type(value).__name__}")
    return value


def to_datetime(ns: int) -> datetime:
    """An aware UTC datetime for ``ns`` (sub-microsecond digits are truncated)."""
    return _EPOCH + timedelta(microseconds=ns // 1_000)


def parse_rfc3339(text: str) -> int:
    """Parse an RFC 3339 date-time (``2024-05-01T10:00:00Z``, fractions and offsets allowed)."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise TimeFormatError(f"{text!r} is not an RFC 3339 time (e.g. 2024-05-01T10:00:00Z)")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        day_ordinal = date(year, month, day).toordinal()
    except ValueError:
        raise TimeFormatError(f"{text!r} is not an RFC 3339 time: invalid date") from None
    if hour > 23 or minute > 59 or second > 59:
        raise TimeFormatError(f"{text!r} is not an RFC 3339 time: invalid time of day")
    fraction = match.group(7)
    nanos = int(fraction[1:10].ljust(9, "0")) if fraction else 0
    offset = 0
    if match.group(8) is None:
        off_hours, off_minutes = int(match.group(10)), int(match.group(11))
        if off_hours > 23 or off_minutes > 59:
            raise TimeFormatError(f"{text!r} is not an RFC 3339 time: invalid offset")
        offset = (off_hours * 3600 + off_minutes * 60) * _NS_PER_SECOND
        if match.group(9) == "-":
            offset = -offset
    seconds_of_day = hour * 3600 + minute * 60 + second
    return (day_ordinal - _EPOCH_ORDINAL) * _NS_PER_DAY + seconds_of_day * _NS_PER_SECOND + nanos - offset


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01, for any year."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def format_rfc3339(ns: int) -> str:
    """RFC 3339 in UTC with ``Z``; fractional seconds only when non-zero, trailing zeros trimmed."""
    days, rest = divmod(ns, _NS_PER_DAY)
    seconds, nanos = divmod(rest, _NS_PER_SECOND)
    year, month, day = _civil_from_days(days)
    hour, rem = divmod(seconds, 3600)
    minute, second = divmod(rem, 60)
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"
