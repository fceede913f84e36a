"""Scalar parsing behind the rollout strategy (docs/behaviour/rollout.md sections 2 and 7): Go durations,
progressDeadline, Go floats, thresholds, RFC 3339 times."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ocm_rollout.controllers.rollout.goparse import (
    HOUR,
    MAX_DURATION_NS,
    MINUTE,
    SECOND,
    GoSyntaxError,
    check_threshold,
    parse_go_duration,
    parse_go_float,
    parse_min_success_time,
    parse_progress_deadline,
    resolve_threshold,
)
from ocm_rollout.controllers.rollout.timefmt import (
    TimeFormatError,
    format_rfc3339,
    parse_rfc3339,
    to_datetime,
    to_ns,
)

# --- Go durations (time.ParseDuration) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("-0", 0),
        ("90s", 90 * SECOND),
        ("1h30m", HOUR + 30 * MINUTE),
        ("1m30.5s", 90 * SECOND + SECOND // 2),
        ("1.5h", HOUR + 30 * MINUTE),
        (".5s", SECOND // 2),
        ("5.s", 5 * SECOND),
        ("+5s", 5 * SECOND),
        ("-5s", -5 * SECOND),
        ("10ms", 10_000_000),
        ("1us", 1_000),
        ("1\u00b5s", 1_000),
        ("1\u03bcs", 1_000),
        ("7ns", 7),
        ("6h5m4s3ms2us1ns", 6 * HOUR + 5 * MINUTE + 4 * SECOND + 3_000_000 + 2_000 + 1),
        # Go's own reference values (float64 rounding of fractions, int64 limits)
        ("0.3333333333333333333h", 20 * MINUTE),
        ("9007199254740993ns", (1 << 53) + 1),
        ("9223372036854775807ns", (1 << 63) - 1),
        ("9223372036854775.807us", (1 << 63) - 1),
        ("9223372036s854ms775us807ns", (1 << 63) - 1),
        ("-9223372036854775808ns", -(1 << 63)),
        ("-2562047h47m16.854775808s", -(1 << 63)),
        ("0.100000000000000000000h", 6 * MINUTE),
        ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372_539_827),
        ("2562047h47m16.854775807s", MAX_DURATION_NS),
    ],
)
def test_go_duration_parses_like_time_parse_duration(text: str, expected: int) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "2d", "10g", "1e3s", " 5s", "5s ", "5 s", "1h-5m",
     "9223372036854775808ns", "9223372036854775810ns", "-9223372036854775809ns", "2562048h"],
)  # fmt: skip
def test_go_duration_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(GoSyntaxError):
        parse_go_duration(text)


@pytest.mark.parametrize("text", ["90s", "1h30m", "0s", "10ms", "1m30.5s", "1h1.5m"])
def test_progress_deadline_accepts_digits_then_unit_and_a_go_duration(text: str) -> None:
    assert parse_progress_deadline(text) == parse_go_duration(text)


@pytest.mark.parametrize("text", [None, "", "None"])
def test_progress_deadline_absent_empty_or_none_is_unlimited(text: str | None) -> None:
    assert parse_progress_deadline(text) is None


@pytest.mark.parametrize(
    "text", ["0", "90", "2d", "10g", "2d0s", "1.5h", "-5s", "+5s", ".5s", "none", "1h5x"]
)
def test_progress_deadline_rejects_texts_outside_ocm_pattern_or_go_syntax(text: str) -> None:
    with pytest.raises(GoSyntaxError):
        parse_progress_deadline(text)


def test_progress_deadline_zero_is_a_zero_deadline_not_unlimited() -> None:
    assert parse_progress_deadline("0s") == 0


def test_progress_deadline_equal_to_largest_go_duration_is_unlimited() -> None:
    assert parse_progress_deadline("2562047h47m16.854775807s") is None


def test_min_success_time_has_no_pattern_screen_and_accepts_negative_values() -> None:
    assert parse_min_success_time("1.5h") == HOUR + 30 * MINUTE
    assert parse_min_success_time("-5m") == -5 * MINUTE
    assert parse_min_success_time("0") == 0


def test_min_success_time_absent_is_zero() -> None:
    assert parse_min_success_time(None) == 0


def test_min_success_time_empty_text_is_not_a_go_duration() -> None:
    with pytest.raises(GoSyntaxError):
        parse_min_success_time("")


# --- Go floats (strconv.ParseFloat) and thresholds ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50", 50.0),
        ("12.5", 12.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e1", 10.0),
        ("1E+1", 10.0),
        ("-5", -5.0),
        ("1_0", 10.0),
        ("1_23.50_0_0e+1_2", 1.235e14),
        ("0x1p4", 16.0),
        ("0x.8p1", 1.0),
        ("0x_1p0", 1.0),
        ("1e-400", 0.0),
        ("Inf", math.inf),
        ("+infinity", math.inf),
        ("-INF", -math.inf),
    ],
)
def test_go_float_accepts_go_float_literals(text: str, expected: float) -> None:
    assert parse_go_float(text) == expected


def test_go_float_accepts_nan() -> None:
    assert math.isnan(parse_go_float("NaN"))


@pytest.mark.parametrize(
    "text",
    ["", "50 ", " 50", "1e400", "-1e400", "0x1p99999", "+nan", "1__0", "_1", "1_", "1_.5", "0x1", "0x1p",
     "infin", ".", "e1", "1e", "5,5", "\u0665"],
)  # fmt: skip
def test_go_float_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(GoSyntaxError):
        parse_go_float(text)


@pytest.mark.parametrize("value", [0, 5, -3, "50%", "12.5%", ".5%", "1e1%", "Inf%", "0%"])
def test_threshold_accepts_integers_and_go_float_percentages(value: int | str) -> None:
    check_threshold(value)


@pytest.mark.parametrize("value", ["5", "50 %", "1e400%", "%", "five%", "50%%"])
def test_threshold_rejects_strings_that_are_not_go_float_percentages(value: str) -> None:
    with pytest.raises(GoSyntaxError):
        check_threshold(value)


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        ("7%", 100, 8),
        ("14%", 100, 15),
        ("28%", 25, 8),
        ("56%", 25, 15),
        ("50%", 10, 5),
        ("25%", 9, 3),
        (3, 10, 3),
    ],
)
def test_percentages_round_up_after_dividing_by_100_in_doubles(
    value: int | str, total: int, expected: int
) -> None:
    assert resolve_threshold(value, total, -1) == expected


@pytest.mark.parametrize("value", [0, -1, 11, "0%", "-5%", "150%", "Inf%", "-Inf%", "NaN%", "1e300%"])
def test_threshold_out_of_range_or_non_finite_gives_the_fallback(value: int | str) -> None:
    assert resolve_threshold(value, 10, 42) == 42


def test_threshold_of_an_empty_total_gives_the_fallback() -> None:
    assert resolve_threshold("50%", 0, 7) == 7


# --- RFC 3339 ---------------------------------------------------------------------------------


def test_rfc3339_round_trips_through_nanoseconds() -> None:
    ns = parse_rfc3339("2024-05-01T10:00:00Z")
    assert ns == to_ns(datetime(2024, 5, 1, 10, tzinfo=UTC))
    assert format_rfc3339(ns) == "2024-05-01T10:00:00Z"


def test_rfc3339_keeps_nanoseconds_and_trims_trailing_zeros() -> None:
    assert format_rfc3339(parse_rfc3339("2024-05-01T10:00:00.000000001Z")) == "2024-05-01T10:00:00.000000001Z"
    assert format_rfc3339(parse_rfc3339("2024-05-01T10:00:00.500Z")) == "2024-05-01T10:00:00.5Z"


def test_rfc3339_offsets_are_converted_to_utc() -> None:
    assert format_rfc3339(parse_rfc3339("2024-05-01T12:30:00+02:00")) == "2024-05-01T10:30:00Z"
    assert format_rfc3339(parse_rfc3339("2024-05-01T00:30:00-01:00")) == "2024-05-01T01:30:00Z"


@pytest.mark.parametrize(
    "text",
    ["2024-05-01", "2024-05-01 10:00:00Z", "2024-05-01T10:00:00", "2024-13-01T10:00:00Z", "2024-02-30T10:00:00Z",
     "2024-05-01T24:00:00Z", "2024-05-01T10:00:60Z", "yesterday", "2024-05-01T10:00:00+2:00"],
)  # fmt: skip
def test_rfc3339_rejects_other_texts(text: str) -> None:
    with pytest.raises(TimeFormatError):
        parse_rfc3339(text)


def test_formatting_works_past_year_9999() -> None:
    far = parse_rfc3339("9999-12-31T23:59:59Z") + 2 * SECOND
    assert format_rfc3339(far) == "10000-01-01T00:00:01Z"


def test_naive_datetimes_are_read_as_utc() -> None:
    assert to_ns(datetime(2024, 5, 1, 10)) == to_ns(datetime(2024, 5, 1, 10, tzinfo=UTC))
    assert to_ns(datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=2)))) == to_ns(
        datetime(2024, 5, 1, 10, tzinfo=UTC)
    )
    assert to_datetime(to_ns(datetime(2024, 5, 1, 10, tzinfo=UTC))) == datetime(2024, 5, 1, 10, tzinfo=UTC)
