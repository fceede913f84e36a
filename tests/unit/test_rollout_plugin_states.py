"""The per-cluster rollout status under a plugin (OCM enhancement 231's table and state machine) and
the PluginLoaded condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.controllers.rollout.plugin.conditions import (
    not_registered,
    plugin_loaded,
    set_plugin_loaded,
)
from ocm_rollout.controllers.rollout.plugin.states import (
    STATUS_TABLE,
    TRANSITIONS,
    ClusterState,
    ClusterStatus,
    Validation,
    WorkSignals,
    cluster_state,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
NOW = T0 + timedelta(minutes=5)
DEADLINE = timedelta(minutes=10)


@pytest.mark.parametrize(
    ("progressing", "degraded", "validation", "expected"),
    [
        # The enhancement's table, row by row (every Degraded value a row allows).
        (True, True, None, ClusterStatus.FAILED),
        (True, False, None, ClusterStatus.PROGRESSING),
        (True, None, None, ClusterStatus.PROGRESSING),
        (False, False, Validation.INPROGRESS, ClusterStatus.VALIDATING),
        (False, None, Validation.INPROGRESS, ClusterStatus.VALIDATING),
        (False, None, Validation.FAILED, ClusterStatus.FAILED),
        (False, False, Validation.SUCCEEDED, ClusterStatus.SUCCEEDED),
        (None, None, None, ClusterStatus.PROGRESSING),
        (None, True, None, ClusterStatus.PROGRESSING),
        (None, False, None, ClusterStatus.PROGRESSING),
        # Not in the table: Degraded is read only while Progressing is True (OCM without a plugin).
        (False, True, Validation.SUCCEEDED, ClusterStatus.SUCCEEDED),
        (False, True, Validation.INPROGRESS, ClusterStatus.VALIDATING),
    ],
)
def test_status_table(
    progressing: bool | None, degraded: bool | None, validation: Validation | None, expected: ClusterStatus
) -> None:
    signals = WorkSignals(progressing, degraded, progressing_since=T0, degraded_since=T1)
    state = cluster_state(signals, NOW, validation=validation, progress_deadline=DEADLINE)
    assert state.status is expected
    if expected is ClusterStatus.FAILED and progressing:
        assert state.last_transition_time == T1  # Degraded's time
    else:
        assert state.last_transition_time == T0


def test_every_table_row_is_reproduced() -> None:
    for row in STATUS_TABLE:
        degraded = row.degraded if isinstance(row.degraded, bool) else None
        state = cluster_state(WorkSignals(row.progressing, degraded), NOW, validation=row.validation)
        assert state.status is row.status, row.description


def test_progressing_false_asks_the_plugin_then_takes_its_answer() -> None:
    signals = WorkSignals(False, progressing_since=T0)
    first = cluster_state(signals, NOW, progress_deadline=DEADLINE)
    assert first == ClusterState(ClusterStatus.VALIDATING, T0, ask_plugin=True, recheck_at=T0 + DEADLINE)
    answered = cluster_state(signals, NOW, validation=Validation.INPROGRESS, validation_message="2 of 3 checks")
    assert answered == ClusterState(ClusterStatus.VALIDATING, T0, ask_plugin=False, message="2 of 3 checks")
    failed = cluster_state(signals, NOW, validation=Validation.FAILED, validation_message="smoke test failed")
    assert failed == ClusterState(ClusterStatus.FAILED, T0, message="smoke test failed")


def test_validating_ends_at_the_progress_deadline() -> None:
    signals = WorkSignals(False, progressing_since=T0)
    late = T0 + DEADLINE
    assert cluster_state(signals, late - timedelta(seconds=1), progress_deadline=DEADLINE).status is ClusterStatus.VALIDATING
    timed_out = cluster_state(signals, late, validation=Validation.INPROGRESS, progress_deadline=DEADLINE)
    assert timed_out.status is ClusterStatus.TIME_OUT
    assert timed_out.message == "not validated within the progress deadline (0:10:00)"
    # An answer in the same pass still counts.
    assert cluster_state(signals, late, validation=Validation.SUCCEEDED, progress_deadline=DEADLINE).status is ClusterStatus.SUCCEEDED
    # A failed call's message is kept.
    assert cluster_state(signals, late, validation_message="UNAVAILABLE", progress_deadline=DEADLINE).message == "UNAVAILABLE"
    # No deadline: validating for ever.
    assert cluster_state(signals, late + timedelta(days=365)).status is ClusterStatus.VALIDATING


def test_to_apply_comes_first() -> None:
    state = cluster_state(WorkSignals(True, True, to_apply=True), NOW, validation=Validation.SUCCEEDED)
    assert state == ClusterState(ClusterStatus.TO_APPLY)


def test_the_state_machine_edges_are_the_ones_cluster_state_makes() -> None:
    edges = {(a, b) for a, b, _ in TRANSITIONS}
    # from ToApply (the agent observed the spec): Progressing or Failed
    assert cluster_state(WorkSignals(True), NOW).status is ClusterStatus.PROGRESSING
    assert cluster_state(WorkSignals(True, True), NOW).status is ClusterStatus.FAILED
    assert {(ClusterStatus.TO_APPLY, ClusterStatus.PROGRESSING), (ClusterStatus.TO_APPLY, ClusterStatus.FAILED)} <= edges
    outcomes = {
        cluster_state(WorkSignals(False, progressing_since=T0), NOW, validation=v, progress_deadline=timedelta(0)).status
        for v in (Validation.SUCCEEDED, Validation.FAILED, None)
    }
    assert outcomes == {b for a, b in edges if a is ClusterStatus.VALIDATING}
    assert all(a in ClusterStatus and b in ClusterStatus for a, b in edges)


# -- PluginLoaded -------------------------------------------------------------------------------


def test_plugin_loaded_values() -> None:
    ok = plugin_loaded("my-rollout", None)
    assert (ok.type, ok.status, ok.reason, ok.message) == ("PluginLoaded", "True", "Available", "my-rollout plugin is available.")
    failed = plugin_loaded("my-rollout", "Initialize fails: UNAVAILABLE: connection refused")
    assert (failed.status, failed.reason, failed.message) == ("False", "Failed", "Initialize fails: UNAVAILABLE: connection refused")
    missing = not_registered("x", "/etc/work/config.yaml")
    assert (missing.status, missing.reason) == ("False", "Failed")
    assert missing.message == "plugin 'x' is not registered in /etc/work/config.yaml (work-controller-config plugins)"


def test_set_plugin_loaded_moves_the_transition_time_only_on_a_flip() -> None:
    conditions: list[Any] = []
    assert set_plugin_loaded(conditions, plugin_loaded("p", "boom"), T0, observed_generation=2)
    assert conditions == [
        {"type": "PluginLoaded", "status": "False", "observedGeneration": 2, "lastTransitionTime": "2026-01-01T00:00:00Z",
         "reason": "Failed", "message": "boom"}
    ]
    assert not set_plugin_loaded(conditions, plugin_loaded("p", "boom"), T1, observed_generation=2)
    assert set_plugin_loaded(conditions, plugin_loaded("p", None), T1, observed_generation=2)
    assert conditions[0]["status"] == "True" and conditions[0]["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert conditions[0]["message"] == "p plugin is available."
