"""Kubernetes resource quantities (``resource.Quantity``), as far as the scheduler needs them.

``parse_quantity`` reproduces the way Kubernetes stores a parsed quantity: either a 64-bit
integer mantissa with a decimal exponent (the fast path), or an arbitrary-precision decimal
rounded up to nano precision (everything else, for example a fraction with a binary suffix).
``Quantity.approximate_float`` is ``Quantity.AsApproximateFloat64`` on that stored form, which
is what the ResourceAllocatable prioritizers compare. The CEL ``quantity()`` library builds on
the exact value (``Quantity.value``).

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

_INT64_MAX = 2**63 - 1
_NANO = -9
_MAX_ALLOWED = Fraction(_INT64_MAX)

_DECIMAL_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

_SYNTAX = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$", re.DOTALL)
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
_PATTERN_TEXT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

_POW10_SMALL = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{i * 32}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{i * 32}") for i in range(11)]


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


def pow10(exponent: int) -> float:
    """Go's ``math.Pow10``, built from the same tables so results match bit for bit."""
    if 0 <= exponent <= 308:
        return _POW10_POS32[exponent // 32] * _POW10_SMALL[exponent % 32]
    if -323 <= exponent < 0:
        return _POW10_NEG32[-exponent // 32] / _POW10_SMALL[-exponent % 32]
    return math.inf if exponent > 0 else 0.0


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity: ``unscaled * 10**exponent``, exactly as Kubernetes keeps it."""

    unscaled: int
    exponent: int
    text: str

    @property
    def value(self) -> Fraction:
        """The exact value."""
        if self.exponent >= 0:
            return Fraction(self.unscaled * 10**self.exponent)
        return Fraction(self.unscaled, 10 ** (-self.exponent))

    def approximate_float(self) -> float:
        """``AsApproximateFloat64``: float(mantissa) times 10 to the exponent."""
        base = float(self.unscaled)
        if self.exponent == 0:
            return base
        return base * pow10(self.exponent)

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)


def _bad(text: str) -> QuantityError:
    return QuantityError(f"quantity {text!r} must match the regular expression '{_PATTERN_TEXT}'")


def _suffix(text: str, suffix: str) -> tuple[int, int]:
    """(base, exponent) of a suffix: base 10 or 2."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    match = _EXPONENT.match(suffix)
    if match is not None:
        return 10, int(match.group(1))
    raise QuantityError(f"unable to parse quantity {text!r}: unknown suffix {suffix!r}")


@lru_cache(maxsize=65536)
def parse_quantity(text: str) -> Quantity:
    """Parse ``text`` the way ``resource.ParseQuantity`` does; raise QuantityError if invalid."""
    if not text or text != text.strip():
        raise _bad(text)
    match = _SYNTAX.match(text)
    if match is None:
        raise _bad(text)
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    if not whole and not frac:
        raise _bad(text)
    positive = sign != "-"
    whole = whole.lstrip("0") or "0"
    base, exponent = _suffix(text, suffix)

    # The fast path: a 64-bit mantissa and a decimal exponent no finer than nano.
    if base == 10:
        precision, mantissa = 18 - (len(whole) + len(frac)), 1
    elif exponent >= 0 and not frac:
        precision, mantissa = 15 - len(whole) - int(exponent * 3 / 10) - 1, 1 << exponent
    else:
        precision, mantissa = -1, 1
    if precision >= 0:
        scale = (exponent if base == 10 else 0) - len(frac)
        if scale >= _NANO:
            result = int(whole + frac) * mantissa
            if result <= _INT64_MAX:
                return Quantity(result if positive else -result, scale, text)

    # The general path: an exact decimal, rounded up (away from zero) to nano precision, which
    # Kubernetes then keeps at a scale of exactly nine decimal places.
    amount = Fraction(int(whole + frac), 10 ** len(frac))
    amount = amount * 10**exponent if base == 10 else amount * (1 << exponent)
    if amount == 0:
        return Quantity(0, 0, text)
    if amount > _MAX_ALLOWED:
        return Quantity(_INT64_MAX if positive else -_INT64_MAX, 0, text)
    nanos = math.ceil(amount * 10**9)
    return Quantity(nanos if positive else -nanos, _NANO, text)


def approximate_float(text: str) -> float:
    """``resource.MustParse(text).AsApproximateFloat64()``; raises QuantityError if invalid."""
    return parse_quantity(text).approximate_float()


def format_fraction(value: Fraction) -> str:
    """A decimal text for an exact quantity value (no suffix, at most nine decimal places)."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole = value.numerator // value.denominator
    rest = value - whole
    digits = ""
    while rest and len(digits) < 9:
        rest *= 10
        digit = rest.numerator // rest.denominator
        digits += str(digit)
        rest -= digit
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"
