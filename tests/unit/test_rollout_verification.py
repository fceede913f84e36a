"""A verified rollout's per-cluster record and judgement (controllers/rollout/verification.py) and
the status a ManifestWorkReplicaSet's work gets from it (controllers/workset/verified.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.rollout_checks import RolloutValidation
from ocm_rollout.controllers.rollout.checks import compile_validation
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.verification import (
    ANNOTATION_VALIDATION,
    MAX_MEASUREMENTS,
    PluginAnswer,
    ValidationRecord,
    decided,
    judge,
    read_record,
)
from ocm_rollout.controllers.workset.status_mapping import WorkRolloutStatus
from ocm_rollout.controllers.workset.verified import verified_status

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(minutes=1)


def checks(*items: dict[str, Any]):  # type: ignore[no-untyped-def]
    return compile_validation(RolloutValidation.model_validate({"checks": list(items)}))


FEEDBACK = {"name": "ready", "feedback": {"successCondition": 'conditions["Available"].status == "True"'}}
METRIC = {
    "name": "errors",
    "metric": {"provider": {"address": "http://prom:9090"}, "query": "up", "successCondition": "result[0] < 0.1",
               "count": 2, "interval": "30s"},
}


def variables(available: str) -> dict[str, Any]:
    return {"feedback": {}, "manifests": [], "cluster": "c1",
            "conditions": {"Available": {"type": "Available", "status": available, "reason": "", "message": ""}}}


def ok(at: datetime) -> Measurement:
    return Measurement(Phase.SUCCESSFUL, at, at, "[0.01]")


def test_the_record_round_trips_and_belongs_to_one_validation() -> None:
    record = ValidationRecord(3, "2026-01-01T11:59:00.000000Z").with_measurement("errors", ok(NOW))
    record = decided(record, judge(compiled=None, plugin="p", variables={}, record=record, since=SINCE, now=NOW), NOW)
    again = ValidationRecord.from_json(record.to_json())
    assert again == record
    annotations = {ANNOTATION_VALIDATION: record.to_json()}
    assert read_record(annotations, 3, SINCE) == record
    assert read_record(annotations, 4, SINCE).measurements == {}  # a new generation validates afresh
    assert read_record({ANNOTATION_VALIDATION: "{not json"}, 3, SINCE).verdict is None


def test_measurements_are_bounded_dropping_old_errors_first() -> None:
    record = ValidationRecord(1, "x").with_measurement("m", ok(NOW))
    for i in range(MAX_MEASUREMENTS + 5):
        record = record.with_measurement("m", Measurement(Phase.ERROR, NOW, NOW + timedelta(seconds=i), "", "down"))
    kept = record.measurements["m"]
    assert len(kept) == MAX_MEASUREMENTS and kept[0].phase is Phase.SUCCESSFUL


def test_feedback_and_metric_checks_pass_only_together() -> None:
    compiled = checks(FEEDBACK, METRIC)
    record = ValidationRecord(1, "x")
    first = judge(compiled=compiled, plugin=None, variables=variables("True"), record=record, since=SINCE, now=NOW)
    assert first.status == "Validating" and first.due == ("errors",)
    record = record.with_measurement("errors", ok(NOW)).with_measurement("errors", ok(NOW + timedelta(seconds=30)))
    done = judge(compiled=compiled, plugin=None, variables=variables("True"), record=record, since=SINCE, now=NOW)
    assert done.status == "Succeeded"
    waiting = judge(compiled=compiled, plugin=None, variables=variables("False"), record=record, since=SINCE, now=NOW)
    assert waiting.status == "Validating" and "check 'ready' Running" in waiting.message


def test_a_failed_measurement_fails_the_cluster_and_the_verdict_sticks() -> None:
    compiled = checks(METRIC)
    bad = Measurement(Phase.FAILED, NOW, NOW, "[0.3]", "successCondition is false")
    record = ValidationRecord(1, "x").with_measurement("errors", bad)
    failed = judge(compiled=compiled, plugin=None, variables={}, record=record, since=SINCE, now=NOW)
    assert failed.status == "Failed" and "check 'errors' Failed" in failed.message
    kept = decided(record, failed, NOW)
    assert kept.verdict is not None and kept.verdict.status == "Failed"
    # Later measurements (or a flapping feedback value) no longer matter.
    assert judge(compiled=compiled, plugin=None, variables={}, record=kept, since=SINCE, now=NOW).status == "Failed"


def test_the_plugin_must_also_succeed() -> None:
    record = ValidationRecord(1, "x")
    asked = judge(compiled=None, plugin="smoke", variables={}, record=record, since=SINCE, now=NOW)
    assert asked.status == "Validating" and asked.ask_plugin
    erring = judge(compiled=None, plugin="smoke", variables={}, record=record, since=SINCE, now=NOW,
                   plugin_error="UNAVAILABLE after 5 attempts")
    assert "plugin smoke: UNAVAILABLE after 5 attempts" in erring.message
    yes = ValidationRecord(1, "x", plugin=PluginAnswer("SUCCEEDED", "smoke ok", NOW))
    assert judge(compiled=None, plugin="smoke", variables={}, record=yes, since=SINCE, now=NOW).status == "Succeeded"
    no = ValidationRecord(1, "x", plugin=PluginAnswer("FAILED", "HTTP 500 on /healthz", NOW))
    verdict = judge(compiled=None, plugin="smoke", variables={}, record=no, since=SINCE, now=NOW)
    assert verdict.status == "Failed" and "HTTP 500 on /healthz" in verdict.message


def test_a_blocked_cluster_stays_validating() -> None:
    out = judge(compiled=None, plugin=None, variables={}, record=ValidationRecord(1, "x"), since=SINCE, now=NOW,
                blocked="the checks do not compile")
    assert out.status == "Validating" and out.message == "the checks do not compile" and not out.due


def work(annotations: dict[str, str] | None = None, generation: int = 2) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "c1", "generation": generation, "annotations": annotations or {}}}


def test_an_applied_work_is_validating_until_its_verdict() -> None:
    applied = WorkRolloutStatus("Succeeded", SINCE, "Progressing False")
    status = verified_status(work(), applied)
    assert status.status == "Progressing" and status.validating and status.shown == "Validating"
    assert status.last_transition_time == SINCE  # the deadline runs from when it became Validating
    passed = ValidationRecord(2, "2026-01-01T11:59:00.000000Z")
    passed = decided(passed, judge(compiled=None, plugin=None, variables={}, record=passed, since=SINCE, now=NOW), NOW)
    status = verified_status(work({ANNOTATION_VALIDATION: passed.to_json()}), applied)
    assert status.status == "Succeeded" and status.last_transition_time == NOW  # minSuccessTime from the verdict
    # A record of the previous generation does not count.
    assert verified_status(work({ANNOTATION_VALIDATION: passed.to_json()}, generation=3), applied).validating
    # Statuses other than Succeeded are what the conditions say.
    progressing = WorkRolloutStatus("Progressing", SINCE)
    assert verified_status(work(), progressing) is progressing
