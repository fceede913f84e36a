"""Go-compatible parsing of durations and floats, as OCM's Go code and CRDs read them.

One implementation for the models (api/), the rollout planner and the simulated agents:

- ``parse_go_duration``: ``time.ParseDuration``, integer nanoseconds, same overflow limits and the
  same float64 rounding of fractional parts.
- ``parse_progress_deadline``: OCM's screen (``"", "None"`` = unlimited, otherwise digits followed
  by h/m/s at the start) followed by ``time.ParseDuration``.
- ``parse_go_float``: ``strconv.ParseFloat(s, 64)`` syntax (decimal and hexadecimal literals with
  digit-separating underscores, ``Inf``/``Infinity``/``NaN``), rejecting out-of-range values.
- ``format_go_duration``: ``time.Duration.String``.

Pure functions only; errors are ``ValueError`` subclasses carrying a readable reason.
"""

from __future__ import annotations

import math
import re

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

#: Go's largest Duration (2562047h47m16.854775807s). OCM uses it as "no deadline" / "no soak".
MAX_DURATION_NS = (1 << 63) - 1

_UNITS: dict[str, int] = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek small letter mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}

_LIMIT = 1 << 63


class GoSyntaxError(ValueError):
    """A value that Go would refuse to parse."""


DurationError = GoSyntaxError
"""The name the models use for a bad duration."""


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def parse_go_duration(text: str) -> int:
    """Parse ``text`` as Go's ``time.ParseDuration`` does and return integer nanoseconds."""
    original = text
    s = text
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise GoSyntaxError(f"invalid duration {original!r}")
    total = 0
    while s:
        if not (s[0] == "." or _is_digit(s[0])):
            raise GoSyntaxError(f"invalid duration {original!r}")
        # integer part
        i = 0
        whole = 0
        while i < len(s) and _is_digit(s[i]):
            if whole > _LIMIT // 10:
                raise GoSyntaxError(f"invalid duration {original!r}")
            whole = whole * 10 + (ord(s[i]) - 48)
            if whole > _LIMIT:
                raise GoSyntaxError(f"invalid duration {original!r}")
            i += 1
        had_whole = i > 0
        s = s[i:]
        # fractional part: stops accumulating (but keeps consuming) once it would overflow
        frac = 0
        scale = 1.0
        had_frac = False
        if s and s[0] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and _is_digit(s[i]):
                if not overflow:
                    if frac > (_LIMIT - 1) // 10:
                        overflow = True
                    else:
                        candidate = frac * 10 + (ord(s[i]) - 48)
                        if candidate > _LIMIT:
                            overflow = True
                        else:
                            frac = candidate
                            scale *= 10
                i += 1
            had_frac = i > 0
            s = s[i:]
        if not had_whole and not had_frac:
            raise GoSyntaxError(f"invalid duration {original!r}")
        # unit: everything up to the next digit or dot
        i = 0
        while i < len(s) and not (s[i] == "." or _is_digit(s[i])):
            i += 1
        if i == 0:
            raise GoSyntaxError(f"missing unit in duration {original!r}")
        unit_text, s = s[:i], s[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise GoSyntaxError(f"unknown unit {unit_text!r} in duration {original!r}")
        if whole > _LIMIT // unit:
            raise GoSyntaxError(f"invalid duration {original!r}")
        value = whole * unit
        if frac > 0:
            # float64 arithmetic, truncated, exactly as Go computes it
            value += int(float(frac) * (float(unit) / scale))
            if value > _LIMIT:
                raise GoSyntaxError(f"invalid duration {original!r}")
        total += value
        if total > _LIMIT:
            raise GoSyntaxError(f"invalid duration {original!r}")
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise GoSyntaxError(f"invalid duration {original!r}")
    return total


# OCM screens progressDeadline with "^(([0-9])+[h|m|s])|None$" before parsing it. Any text that
# passes only through the "None$" branch or the "|" inside the bracket can never be a valid Go
# duration, so the screen is equivalent to: digits immediately followed by h, m or s at the start.
_DEADLINE_SCREEN = re.compile(r"[0-9]+[hms]")


def parse_progress_deadline(text: str | None) -> int | None:
    """Nanoseconds of a progressDeadline, or None when unlimited.

    Absent, ``""`` and ``"None"`` are unlimited, and so is a value equal to Go's largest duration
    (OCM compares against it). ``"0s"`` is a zero deadline, not unlimited.
    """
    if text is None or text == "" or text == "None":
        return None
    if not _DEADLINE_SCREEN.match(text):
        raise GoSyntaxError(
            f"invalid progress deadline {text!r}: must be None or a duration starting with digits "
            "followed by h, m or s (e.g. 90s, 10m, 1h30m)"
        )
    value = parse_go_duration(text)
    if value == MAX_DURATION_NS:
        return None
    return value


def parse_min_success_time(text: str | None) -> int:
    """Nanoseconds of a minSuccessTime (any Go duration, negative allowed); absent is 0."""
    if text is None:
        return 0
    return parse_go_duration(text)


# --- strconv.ParseFloat(s, 64) ----------------------------------------------------------------

_DEC = r"[0-9](?:_?[0-9])*"
_HEX = r"[0-9a-fA-F]"
_GO_DECIMAL = re.compile(rf"[+-]?(?:{_DEC}(?:\.(?:{_DEC})?)?|\.{_DEC})(?:[eE][+-]?{_DEC})?")
_GO_HEX = re.compile(
    rf"[+-]?0[xX](?:_?{_HEX}(?:_?{_HEX})*(?:\.(?:{_HEX}(?:_?{_HEX})*)?)?|\.{_HEX}(?:_?{_HEX})*)"
    rf"[pP][+-]?{_DEC}"
)
_GO_INF = re.compile(r"[+-]?(?:inf|infinity)", re.IGNORECASE)
_GO_NAN = re.compile(r"nan", re.IGNORECASE)


def parse_go_float(text: str) -> float:
    """Parse ``text`` as Go's ``strconv.ParseFloat(text, 64)``; out-of-range values are errors."""
    if _GO_INF.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if _GO_NAN.fullmatch(text):
        return math.nan
    if _GO_DECIMAL.fullmatch(text):
        value = float(text.replace("_", ""))
        if math.isinf(value):
            raise GoSyntaxError(f"{text!r} is out of range")
        return value
    if _GO_HEX.fullmatch(text):
        try:
            return float.fromhex(text.replace("_", ""))
        except OverflowError:
            raise GoSyntaxError(f"{text!r} is out of range") from None
    raise GoSyntaxError(f"{text!r} is not a number")


def format_go_duration(ns: int) -> str:
    """Format nanoseconds the way Go's ``Duration.String`` does (``1h30m0s``, ``1.5s``, ``0s``)."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        if u < MICROSECOND:
            return f"{sign}{u}ns"
        if u < MILLISECOND:
            return f"{sign}{_fraction(u, 3)}µs"
        return f"{sign}{_fraction(u, 6)}ms"
    seconds_part = _fraction(u % MINUTE, 9) + "s"
    minutes = u // MINUTE
    if minutes == 0:
        return sign + seconds_part
    hours, minutes = divmod(minutes, 60)
    if hours == 0:
        return f"{sign}{minutes}m{seconds_part}"
    return f"{sign}{hours}h{minutes}m{seconds_part}"


def _fraction(value: int, digits: int) -> str:
    whole, rest = divmod(value, 10**digits)
    if rest == 0:
        return str(whole)
    return f"{whole}.{str(rest).rjust(digits, '0').rstrip('0')}"
