"""One way to find and set a wire condition (``controllers/common/conditions.py``) and one RFC 3339
formatter and parser (``api/times.py``): their semantics, and a scan of the code that finds no
second copy in the controllers or the command line."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api import meta, times
from ocm_rollout.controllers.common import wire
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)


# -- times ------------------------------------------------------------------------------------------


def test_times_are_written_as_kubernetes_writes_them() -> None:
    moment = datetime(2024, 5, 1, 12, 30, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert times.format_time(moment) == "2024-05-01T10:30:05Z"
    assert times.format_micro_time(moment) == "2024-05-01T10:30:05.123456Z"
    assert times.format_time(datetime(2024, 5, 1, 10, 30, 5)) == "2024-05-01T10:30:05Z"  # naive: UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T10:00:00Z", T0),
        (" 2024-05-01T10:00:00z ", T0),
        ("2024-05-01T12:00:00+02:00", T0),
        ("2024-05-01T10:00:00", T0),
        ("2024-05-01T10:00:00.5Z", T0 + timedelta(milliseconds=500)),
    ],
)
def test_times_are_read_into_aware_utc_datetimes(text: str, expected: datetime) -> None:
    parsed = times.parse_time(text)
    assert parsed == expected and parsed.tzinfo == UTC


def test_a_text_that_is_no_time_is_refused_by_the_models_and_read_as_none_by_the_cores() -> None:
    with pytest.raises(ValueError, match="'soon' is not an RFC 3339 time"):
        times.parse_time("soon")
    assert wire.parse_time("soon") is None
    assert wire.parse_time(None) is None and wire.parse_time(5) is None and wire.parse_time("") is None


def test_the_models_and_the_cores_share_the_formatter() -> None:
    assert meta.format_time is times.format_time
    assert wire.format_time is times.format_time
    assert wire.format_micro_time is times.format_micro_time


# -- conditions -------------------------------------------------------------------------------------


def test_find_condition_reads_a_missing_or_oddly_typed_list_as_empty() -> None:
    ready = {"type": "Ready", "status": "True"}
    assert find_condition([5, ready, {**ready, "status": "False"}], "Ready") is ready
    for odd in (None, 5, "Ready", {"type": "Ready"}):
        assert find_condition(odd, "Ready") is None


def test_set_status_condition_takes_the_time_or_its_text() -> None:
    by_time: list[Any] = []
    by_text: list[Any] = []
    assert set_status_condition(by_time, "Ready", "True", "Up", "", T0)
    assert set_status_condition(by_text, "Ready", "True", "Up", "", times.format_time(T0))
    assert by_time == by_text == [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "Up", "message": ""}
    ]
    assert not set_status_condition(by_text, "Ready", "True", "Up", "", "2024-05-02T00:00:00Z")
    assert set_status_condition(by_text, "Ready", "False", "Down", "", "2024-05-02T00:00:00Z")
    assert by_text[0]["lastTransitionTime"] == "2024-05-02T00:00:00Z"


# -- no second copy ---------------------------------------------------------------------------------

# The runtime package is being rewritten elsewhere: its leader election and event recorder still
# format and parse times of their own (docs: see the defects report).
KNOWN: set[str] = set()
RFC3339_STRFTIME = re.compile(r"strftime\(\s*[\"']%Y-%m-%dT%H:%M:%S")
CONDITION_HELPER = re.compile(r"_?(find|set|get)_(status_)?condition$")


def _modules() -> list[Path]:
    return [p for top in ("controllers", "cli") for p in sorted((REPO / top).rglob("*.py"))]


def test_no_other_module_formats_an_rfc3339_time_by_hand() -> None:
    found = [
        str(p.relative_to(REPO))
        for p in _modules()
        if RFC3339_STRFTIME.search(p.read_text(encoding="utf-8")) and str(p.relative_to(REPO)) not in KNOWN
    ]
    assert found == []


def test_no_other_module_defines_a_wire_condition_finder_or_setter() -> None:
    found = []
    for path in _modules():
        rel = str(path.relative_to(REPO))
        if rel == "controllers/common/conditions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and CONDITION_HELPER.match(node.name):
                found.append(f"{rel}: {node.name}")
    # configrollout's copy-on-write adapter calls set_status_condition on a copy of the list.
    assert found == ["controllers/addon/configrollout.py: set_condition"]
