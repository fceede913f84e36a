"""Metric checks: Argo Rollouts' analysis semantics for one check on one cluster.

- ``judge``: one measurement. A query answer (or the error getting it) in, a ``Measurement``
  out: with only ``successCondition``, true succeeds and false fails; with only
  ``failureCondition``, true fails and false succeeds; with both, ``failureCondition`` true
  fails, else ``successCondition`` true succeeds, else the measurement is inconclusive. A query
  error, an unparseable answer or a condition that does not evaluate to a boolean is an error.
- ``assess``: the check. Its settings, the measurements taken so far and the time are in; the
  phase and when the next measurement is due are out. Errored measurements do not count toward
  ``count``; the check is ``Failed`` once failed > failureLimit, ``Inconclusive`` once
  inconclusive > inconclusiveLimit, ``Error`` once consecutive errors > consecutiveErrorLimit
  (checked in that order, the last one that holds wins, as in Argo), else ``Successful`` once
  ``count`` measurements counted, else ``Running``. The first measurement is due
  ``initialDelay`` after the cluster entered Validating; the next ``interval`` after the last
  one finished, or 10s after an errored one (Argo's error retry interval).

Ours, unlike Argo: ``count`` defaults to 1 (a check that never ends would hold the cluster in
Validating forever), so a check always ends.

Pure: no I/O; the caller passes the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ocm_rollout.api.gosyntax import parse_go_duration
from ocm_rollout.api.rollout_checks import MetricCheck
from ocm_rollout.api.times import format_micro_time, parse_time
from ocm_rollout.controllers.rollout.checks.cel import (
    METRIC_VARIABLES,
    Condition,
    ConditionError,
    compile_condition,
    evaluate,
)
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.checks.promql import PrometheusAnswerError, QueryResult, parse_answer

DEFAULT_CONSECUTIVE_ERROR_LIMIT: Final = 4
DEFAULT_TIMEOUT: Final = timedelta(seconds=30)
ERROR_RETRY_INTERVAL: Final = timedelta(seconds=10)


@dataclass(frozen=True)
class Measurement:
    """One completed measurement: its phase (never Running), when it was taken, the result's
    short rendering and a message (why it failed, errored or was inconclusive)."""

    phase: Phase
    started_at: datetime
    finished_at: datetime
    value: str = ""
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The measurement as JSON (times RFC 3339 with microseconds), for the caller to keep."""
        return {
            "phase": str(self.phase),
            "startedAt": format_micro_time(self.started_at),
            "finishedAt": format_micro_time(self.finished_at),
            "value": self.value,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """A measurement kept with ``to_dict``; raises ValueError for anything else."""
        try:
            phase = Phase(data["phase"])
            started, finished = parse_time(str(data["startedAt"])), parse_time(str(data["finishedAt"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a measurement: {exc}") from None
        if phase is Phase.RUNNING:
            raise ValueError("not a measurement: a measurement is never Running")
        return cls(phase, started, finished, str(data.get("value") or ""), str(data.get("message") or ""))


def _ns(text: str | None) -> timedelta | None:
    if text is None:
        return None
    return timedelta(microseconds=parse_go_duration(text) / 1000)


@dataclass(frozen=True)
class MetricSettings:
    """A metric check, compiled: its conditions and its measurement schedule."""

    name: str
    query: str
    provider_address: str | None
    provider_name: str | None
    success: Condition | None
    failure: Condition | None
    count: int
    interval: timedelta | None
    initial_delay: timedelta
    failure_limit: int
    inconclusive_limit: int
    consecutive_error_limit: int
    timeout: timedelta

    @classmethod
    def compile(cls, name: str, check: MetricCheck) -> MetricSettings:
        """Compile ``check`` (named ``name``); a condition that does not compile raises
        ``CheckCompileError`` naming the check."""
        success = failure = None
        if check.success_condition is not None:
            success = compile_condition(name, "metric.successCondition", check.success_condition, METRIC_VARIABLES)
        if check.failure_condition is not None:
            failure = compile_condition(name, "metric.failureCondition", check.failure_condition, METRIC_VARIABLES)
        return cls(
            name=name,
            query=check.query,
            provider_address=check.provider.address,
            provider_name=check.provider.name,
            success=success,
            failure=failure,
            count=check.count if check.count is not None else 1,
            interval=_ns(check.interval),
            initial_delay=_ns(check.initial_delay) or timedelta(0),
            failure_limit=check.failure_limit or 0,
            inconclusive_limit=check.inconclusive_limit or 0,
            consecutive_error_limit=(
                check.consecutive_error_limit
                if check.consecutive_error_limit is not None
                else DEFAULT_CONSECUTIVE_ERROR_LIMIT
            ),
            timeout=_ns(check.timeout) or DEFAULT_TIMEOUT,
        )


# --------------------------------------------------------------------------------------------
# One measurement
# --------------------------------------------------------------------------------------------


def judge_result(settings: MetricSettings, result: QueryResult, cluster: str) -> tuple[Phase, str]:
    """The phase of a measurement whose query answered ``result``, and why."""
    values = result.variables(cluster)
    try:
        succeeded = evaluate(settings.success, values) if settings.success is not None else None
        failed = evaluate(settings.failure, values) if settings.failure is not None else None
    except ConditionError as exc:
        return Phase.ERROR, f"condition error: {exc}"
    if failed is None:
        failed = not succeeded
    if succeeded is None:
        succeeded = not failed
    if failed:
        if settings.failure is not None:
            return Phase.FAILED, f"failureCondition is true: {settings.failure.source}"
        assert settings.success is not None
        return Phase.FAILED, f"successCondition is false: {settings.success.source}"
    if succeeded:
        return Phase.SUCCESSFUL, ""
    return Phase.INCONCLUSIVE, "neither successCondition nor failureCondition is true"


def judge(
    settings: MetricSettings,
    answer: str | bytes | Mapping[str, Any] | None,
    *,
    cluster: str,
    started_at: datetime,
    finished_at: datetime,
    error: str | None = None,
) -> Measurement:
    """A measurement from a query's answer body, or from ``error`` (the query could not be
    sent, timed out, or the HTTP answer had no body)."""
    if error is not None or answer is None:
        return Measurement(Phase.ERROR, started_at, finished_at, "", f"query failed: {error or 'no answer'}")
    try:
        result = parse_answer(answer)
    except PrometheusAnswerError as exc:
        return Measurement(Phase.ERROR, started_at, finished_at, "", str(exc))
    phase, message = judge_result(settings, result, cluster)
    return Measurement(phase, started_at, finished_at, result.describe(), message)


# --------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricAssessment:
    """Where a metric check stands: its phase, why, the counters, and when the next
    measurement is due (None once the check is complete)."""

    phase: Phase
    message: str
    successful: int
    failed: int
    inconclusive: int
    errors: int
    consecutive_errors: int
    next_measurement_at: datetime | None

    def due(self, now: datetime) -> bool:
        """Whether a measurement should be taken at ``now``."""
        return self.next_measurement_at is not None and self.next_measurement_at <= now


def assess(settings: MetricSettings, measurements: Sequence[Measurement], validating_since: datetime) -> MetricAssessment:
    """The check's phase after ``measurements`` (oldest first), taken since the cluster entered
    Validating at ``validating_since``."""
    successful = failed = inconclusive = errors = consecutive = 0
    for m in measurements:
        if m.phase is Phase.ERROR:
            errors += 1
            consecutive += 1
            continue
        consecutive = 0
        if m.phase is Phase.SUCCESSFUL:
            successful += 1
        elif m.phase is Phase.FAILED:
            failed += 1
        elif m.phase is Phase.INCONCLUSIVE:
            inconclusive += 1
    counted = successful + failed + inconclusive
    phase, message = Phase.RUNNING, ""
    if failed > settings.failure_limit:
        phase, message = Phase.FAILED, f"failed ({failed}) > failureLimit ({settings.failure_limit})"
    if inconclusive > settings.inconclusive_limit:
        phase, message = (
            Phase.INCONCLUSIVE,
            f"inconclusive ({inconclusive}) > inconclusiveLimit ({settings.inconclusive_limit})",
        )
    if consecutive > settings.consecutive_error_limit:
        phase, message = (
            Phase.ERROR,
            f"consecutiveErrors ({consecutive}) > consecutiveErrorLimit ({settings.consecutive_error_limit})",
        )
    if phase is Phase.RUNNING and counted >= settings.count:
        phase, message = Phase.SUCCESSFUL, f"count ({settings.count}) reached"
    if phase is not Phase.RUNNING and measurements and phase is not Phase.SUCCESSFUL:
        last = measurements[-1]
        if last.value:
            message = f"{message}: observed {last.value}"
        if last.message:
            message = f"{message}: {last.message}"
    next_at: datetime | None = None
    if phase is Phase.RUNNING:
        if not measurements:
            next_at = validating_since + settings.initial_delay
        else:
            last = measurements[-1]
            wait = ERROR_RETRY_INTERVAL if last.phase is Phase.ERROR else (settings.interval or ERROR_RETRY_INTERVAL)
            next_at = last.finished_at + wait
        message = f"{counted}/{settings.count} measurement(s) taken"
        if measurements and measurements[-1].phase is Phase.ERROR:
            message += f"; the last one errored: {measurements[-1].message}"
    return MetricAssessment(phase, message, successful, failed, inconclusive, errors, consecutive, next_at)
