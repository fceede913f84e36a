"""Set-condition semantics of the simulated agents (ocm_rollout.sandbox.agents.conditions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ocm_rollout.sandbox.agents.conditions import (
    format_time,
    make_condition,
    parse_time,
    remove_condition,
    set_condition,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)


def test_new_condition_is_appended_with_now_as_transition_time() -> None:
    out = set_condition([], make_condition("Applied", "True", "Done", "ok", 2), T0)
    assert out == [
        {
            "type": "Applied",
            "status": "True",
            "observedGeneration": 2,
            "lastTransitionTime": "2024-05-01T12:00:00Z",
            "reason": "Done",
            "message": "ok",
        }
    ]


def test_same_status_keeps_transition_time_but_takes_reason_message_and_generation() -> None:
    first = set_condition([], make_condition("Applied", "True", "A", "one", 1), T0)
    out = set_condition(first, make_condition("Applied", "True", "B", "two", 2), T1)
    assert out[0]["lastTransitionTime"] == format_time(T0)
    assert (out[0]["reason"], out[0]["message"], out[0]["observedGeneration"]) == ("B", "two", 2)


def test_status_flip_moves_transition_time() -> None:
    first = set_condition([], make_condition("Progressing", "True", "Applying"), T0)
    out = set_condition(first, make_condition("Progressing", "False", "Completed"), T1)
    assert out[0]["status"] == "False"
    assert out[0]["lastTransitionTime"] == format_time(T1)


def test_zero_observed_generation_is_omitted() -> None:
    first = set_condition([], make_condition("Available", "True", "R", "", 3), T0)
    out = set_condition(first, make_condition("Available", "True", "R"), T1)
    assert "observedGeneration" not in out[0]


def test_existing_condition_keeps_its_position() -> None:
    conds = set_condition([], make_condition("A", "True", "r"), T0)
    conds = set_condition(conds, make_condition("B", "True", "r"), T0)
    out = set_condition(conds, make_condition("A", "False", "r"), T1)
    assert [c["type"] for c in out] == ["A", "B"]


def test_set_condition_does_not_mutate_its_input() -> None:
    conds = set_condition([], make_condition("A", "True", "r"), T0)
    snapshot = [dict(c) for c in conds]
    set_condition(conds, make_condition("A", "False", "x"), T1)
    assert conds == snapshot


def test_remove_condition_drops_only_that_type() -> None:
    conds = set_condition([], make_condition("A", "True", "r"), T0)
    conds = set_condition(conds, make_condition("B", "True", "r"), T0)
    assert [c["type"] for c in remove_condition(conds, "A")] == ["B"]


def test_parse_time_reads_what_format_time_writes() -> None:
    assert parse_time(format_time(T0)) == T0
    assert parse_time("not a time") is None
