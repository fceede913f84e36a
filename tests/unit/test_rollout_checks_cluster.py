"""One cluster's checks together (evaluate_cluster): the verdict, each check's result, the
metric checks due now and when to look again; measurements kept as JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ocm_rollout.controllers.rollout.checks import CompiledChecks, compile_checks
from ocm_rollout.controllers.rollout.checks.cluster import evaluate_cluster
from ocm_rollout.controllers.rollout.checks.feedback import work_variables
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def compiled() -> CompiledChecks:
    checks = compile_checks(
        {
            "validation": {
                "checks": [
                    {"name": "available", "feedback": {"successCondition": 'conditions["Available"].status == "True"'}},
                    {"name": "errors", "metric": {"provider": {"name": "p"}, "query": "up{c={{cluster}}}",
                                                  "successCondition": "result[0] < 1", "initialDelay": "30s",
                                                  "interval": "1m", "count": 2}},
                    {"name": "latency", "metric": {"provider": {"name": "p"}, "query": "up", "successCondition": "true"}},
                ]
            }
        }
    )  # fmt: skip
    assert checks is not None
    return checks


def work(available: str) -> dict[str, object]:
    return {"status": {"conditions": [{"type": "Available", "status": available}]}}


def m(phase: Phase, minute: float) -> Measurement:
    at = T0 + timedelta(minutes=minute)
    return Measurement(phase, at, at + timedelta(seconds=1), "[0.1]", "")


def test_a_fresh_cluster_measures_what_is_due_and_requeues_for_the_rest() -> None:
    verdict = evaluate_cluster(compiled(), work_variables(work("False"), "c1"), {}, T0, T0)
    assert verdict.phase is Phase.RUNNING
    assert [(c.name, c.kind, c.phase) for c in verdict.checks] == [
        ("available", "feedback", Phase.RUNNING), ("errors", "metric", Phase.RUNNING), ("latency", "metric", Phase.RUNNING)
    ]  # fmt: skip
    assert verdict.due == ("latency",)
    assert verdict.next_at == T0 + timedelta(seconds=30)
    assert verdict.message.startswith("check 'available' Running: successCondition is false; check 'errors' Running")


def test_every_check_passed() -> None:
    history = {"errors": [m(Phase.SUCCESSFUL, 0.5), m(Phase.SUCCESSFUL, 1.5)], "latency": [m(Phase.SUCCESSFUL, 0)]}
    verdict = evaluate_cluster(compiled(), work_variables(work("True"), "c1"), history, T0, T0 + timedelta(minutes=3))
    assert (verdict.phase, verdict.due, verdict.next_at, verdict.message) == (Phase.SUCCESSFUL, (), None, "")


def test_a_failed_metric_fails_the_cluster_and_names_the_check() -> None:
    history = {"errors": [m(Phase.FAILED, 0.5)], "latency": [m(Phase.SUCCESSFUL, 0)]}
    verdict = evaluate_cluster(compiled(), work_variables(work("True"), "c1"), history, T0, T0 + timedelta(minutes=1))
    assert verdict.phase is Phase.FAILED
    assert verdict.message == "check 'errors' Failed: failed (1) > failureLimit (0): observed [0.1]"


def test_measurements_round_trip_as_json() -> None:
    kept = Measurement(Phase.INCONCLUSIVE, T0, T0 + timedelta(microseconds=1500), "[0.1]", "neither")
    data = kept.to_dict()
    assert data["startedAt"] == "2026-01-01T00:00:00.000000Z" and data["phase"] == "Inconclusive"
    assert Measurement.from_dict(data) == kept
    for bad in ({}, {**data, "phase": "Running"}, {**data, "phase": "Maybe"}, {**data, "startedAt": "yesterday"}):
        with pytest.raises(ValueError, match="not a measurement"):
            Measurement.from_dict(bad)
