"""Pure evaluators of verified rollouts (rolloutStrategy ``validation`` and ``promotion``; see
docs/behaviour/validation.md):

- ``cel``: the checks' CEL (compile with the check's variables; evaluate to a boolean);
- ``feedback``: feedback checks over a ManifestWork's (or an add-on's) status;
- ``promql`` and ``metric``: metric checks (query rendering with escaped placeholders, the
  Prometheus answer, Argo Rollouts' measurement and analysis semantics);
- ``promotion``: the manual promotion gate;
- ``phase``: the phases of a check and of a cluster's checks together;
- ``cluster``: one cluster's checks on one pass (the verdict, the metric checks due, when to
  look again).

``compile_checks`` compiles a whole ``validation`` at once, as the controllers do before a
rollout starts: a condition that does not compile is reported by check name and field.

No I/O anywhere: the controllers query the providers, keep the measurements, and pass the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ocm_rollout.api.meta import format_validation_error
from ocm_rollout.api.rollout_checks import RolloutValidation
from ocm_rollout.controllers.rollout.checks.cel import CheckCompileError
from ocm_rollout.controllers.rollout.checks.feedback import FeedbackSettings
from ocm_rollout.controllers.rollout.checks.metric import MetricSettings
from ocm_rollout.controllers.rollout.checks.phase import Phase, combine

__all__ = ["CheckCompileError", "CompiledChecks", "InvalidChecks", "Phase", "combine", "compile_checks", "compile_validation"]


class InvalidChecks(ValueError):
    """A ``validation`` that does not validate or whose conditions do not compile; ``errors``
    has one message per problem (each naming the check)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class CompiledChecks:
    """The compiled checks of one placement's rollout strategy, in spec order."""

    feedback: tuple[FeedbackSettings, ...]
    metrics: tuple[MetricSettings, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.feedback) + tuple(c.name for c in self.metrics)


def compile_validation(validation: RolloutValidation) -> CompiledChecks:
    """Compile every check; raise ``InvalidChecks`` listing every condition that does not compile."""
    feedback: list[FeedbackSettings] = []
    metrics: list[MetricSettings] = []
    errors: list[str] = []
    for check in validation.checks:
        try:
            if check.feedback is not None:
                feedback.append(FeedbackSettings.compile(check.name, check.feedback))
            elif check.metric is not None:
                metrics.append(MetricSettings.compile(check.name, check.metric))
        except CheckCompileError as exc:
            errors.append(str(exc))
    if errors:
        raise InvalidChecks(errors)
    return CompiledChecks(tuple(feedback), tuple(metrics))


def compile_checks(strategy: Mapping[str, Any]) -> CompiledChecks | None:
    """Compile the ``validation`` of a rollout strategy as stored (wire JSON); None when it has
    none. Raises ``InvalidChecks`` for a validation the model rejects or that does not compile."""
    raw = strategy.get("validation")
    if raw is None:
        return None
    try:
        validation = RolloutValidation.model_validate(raw)
    except ValidationError as exc:
        raise InvalidChecks([format_validation_error(exc, "validation")]) from None
    return compile_validation(validation)
