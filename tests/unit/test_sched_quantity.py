"""Kubernetes quantities as the resource prioritizers read them (AsApproximateFloat64)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ocm_rollout.controllers.common.quantity import QuantityError, approximate_float, parse_quantity, pow10


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12", 12.0), ("500m", 0.5), ("0.1", 0.1), ("1e3", 1000.0), ("1E-3", 0.001), ("60Mi", 62914560.0),
        ("16Gi", 17179869184.0), ("17474228Ki", 17893609472.0), ("1k", 1000.0), ("1M", 1e6), ("-1.5", -1.5),
        ("0", 0.0), ("100n", 1.0000000000000001e-07), ("+3", 3.0),
    ],
)  # fmt: skip
def test_approximate_float(text: str, expected: float) -> None:
    assert approximate_float(text) == expected


def test_fast_path_keeps_mantissa_and_exponent() -> None:
    q = parse_quantity("1500m")
    assert (q.unscaled, q.exponent) == (1500, -3)


def test_fraction_with_binary_suffix_is_rounded_to_nano_scale() -> None:
    q = parse_quantity("1.5Gi")
    assert (q.unscaled, q.exponent) == (1610612736 * 10**9, -9)
    assert q.approximate_float() == 1610612736.0


def test_sub_nano_values_round_up() -> None:
    assert parse_quantity("1e-12").value == Fraction(1, 10**9)


def test_long_mantissa_is_rounded_up_to_nine_places() -> None:
    assert parse_quantity("1.23456789012345678901").value == Fraction(1234567891, 10**9)


def test_values_beyond_int64_are_capped() -> None:
    assert parse_quantity("99999999999999999999").value == 2**63 - 1


@pytest.mark.parametrize("text", ["", " 1", "abc", "1x", "1.2.3", "Mi", "1 Gi"])
def test_invalid_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_pow10_matches_table_values() -> None:
    assert pow10(0) == 1.0 and pow10(3) == 1000.0 and pow10(-9) == 1e-9 and pow10(400) == float("inf")
