"""Go-compatible parsing of the scalar fields of a rollout strategy.

Everything here reproduces the Go standard library behaviour OCM relies on, because the rollout
specification (ROLLOUT.md section 2) is defined in its terms:

- ``parse_go_duration``: ``time.ParseDuration``, integer nanoseconds, same overflow limits and the
  same float64 rounding of fractional parts.
- ``parse_progress_deadline``: OCM's screen (``"", "None"`` = unlimited, otherwise digits followed
  by h/m/s at the start) followed by ``time.ParseDuration``.
- ``parse_go_float``: ``strconv.ParseFloat(s, 64)`` syntax (decimal and hexadecimal literals with
  digit-separating underscores, ``Inf``/``Infinity``/``NaN``), rejecting out-of-range values.
- ``check_threshold`` / ``resolve_threshold``: OCM's int-or-percent thresholds.

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
