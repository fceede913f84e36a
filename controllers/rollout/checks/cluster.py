"""One cluster's checks together, on one controller pass: the compiled checks, the feedback
variables, the metric measurements kept so far and the clock in; the cluster's verdict, each
check's, which metric checks to measure now and when to look again out.

Pure: no I/O. The caller measures the due metric checks (``render_query``, an HTTP GET of
``<address>/api/v1/query``, ``judge``), appends the measurements, and calls again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ocm_rollout.controllers.rollout.checks import CompiledChecks
from ocm_rollout.controllers.rollout.checks.feedback import FeedbackVerdict, evaluate_feedback
from ocm_rollout.controllers.rollout.checks.metric import Measurement, assess
from ocm_rollout.controllers.rollout.checks.phase import Phase, combine


@dataclass(frozen=True)
class CheckResult:
    """One check's phase on this pass, why, and (a metric check) when it measures next."""

    name: str
    kind: Literal["feedback", "metric"]
    phase: Phase
    message: str
    next_measurement_at: datetime | None = None

    def describe(self) -> str:
        return f"check {self.name!r} {self.phase}" + (f": {self.message}" if self.message else "")


@dataclass(frozen=True)
class ClusterVerdict:
    """The cluster's phase (``combine`` of its checks), every check's result in spec order,
    the metric checks due now, and the earliest later measurement (when to requeue)."""

    phase: Phase
    checks: tuple[CheckResult, ...]
    due: tuple[str, ...]
    next_at: datetime | None

    @property
    def message(self) -> str:
        """The checks that decide the phase, one after another (empty when all succeeded)."""
        deciding = {
            Phase.FAILED: (Phase.FAILED, Phase.ERROR),
            Phase.INCONCLUSIVE: (Phase.INCONCLUSIVE,),
            Phase.RUNNING: (Phase.RUNNING,),
        }.get(self.phase, ())
        return "; ".join(c.describe() for c in self.checks if c.phase in deciding)


def evaluate_cluster(
    compiled: CompiledChecks,
    variables: Mapping[str, Any],
    measurements: Mapping[str, Sequence[Measurement]],
    validating_since: datetime,
    now: datetime,
    feedback_verdicts: Mapping[str, FeedbackVerdict] | None = None,
) -> ClusterVerdict:
    """The verdict of a Validating cluster: ``variables`` the feedback variables
    (``work_variables`` / ``addon_variables``), ``measurements`` each metric check's
    measurements by check name (oldest first), ``validating_since`` when the cluster became
    Validating. ``feedback_verdicts`` may give feedback checks' verdicts already evaluated on the
    same variables (a caller that keeps them while the workload does not change)."""
    results: list[CheckResult] = []
    due: list[str] = []
    later: list[datetime] = []
    for feedback in compiled.feedback:
        known = feedback_verdicts.get(feedback.name) if feedback_verdicts is not None else None
        verdict = known if known is not None else evaluate_feedback(feedback, variables)
        results.append(CheckResult(feedback.name, "feedback", verdict.phase, verdict.message))
    for metric in compiled.metrics:
        assessment = assess(metric, measurements.get(metric.name, ()), validating_since)
        results.append(
            CheckResult(metric.name, "metric", assessment.phase, assessment.message, assessment.next_measurement_at)
        )
        if assessment.next_measurement_at is not None:
            if assessment.due(now):
                due.append(metric.name)
            else:
                later.append(assessment.next_measurement_at)
    return ClusterVerdict(combine(r.phase for r in results), tuple(results), tuple(due), min(later, default=None))
