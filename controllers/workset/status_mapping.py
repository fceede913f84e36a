"""ManifestWork status -> the rollout status the planner consumes (docs/behaviour/mwrs.md 5.4), with three
improvements over OCM (numbered as in the README):

1. A work that carries no ``Progressing`` condition at all is judged from ``Applied`` and
   ``Available`` (OCM's agent writes ``Progressing`` only through condition rules, so OCM's
   rollouts never complete on real agents): both True at the current generation means
   Succeeded (from the later of their transition times); ``Applied`` False at the current
   generation means Failed. As soon as any ``Progressing`` condition exists, OCM's rules apply.
4. Times are never older than the start of the work's current revision: when the controller
   wrote the current spec it recorded the moment (``start`` below), and a condition whose status
   did not flip since an older revision cannot start the soak or deadline clock before it.
9. A work whose ``Applied`` is False at the current generation while it has a ``Progressing``
   condition is ToApply, as in OCM, but carries the moment its apply failed
   (``apply_failed_since``): with a progressDeadline the planner counts it as TimeOut once the
   deadline has passed since then, instead of waiting on it for ever.

Pure: no I/O; everything comes from the work dict and the ``start`` argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ocm_rollout.api.constants import (
    ANNOTATION_TEMPLATE_APPLIED_TIME,
    CONDITION_FALSE,
    CONDITION_TRUE,
    ROLLOUT_STATUS_FAILED,
    ROLLOUT_STATUS_PROGRESSING,
    ROLLOUT_STATUS_SUCCEEDED,
    ROLLOUT_STATUS_TIMEOUT,
    ROLLOUT_STATUS_TO_APPLY,
    WORK_CONDITION_APPLIED,
    WORK_CONDITION_AVAILABLE,
    WORK_CONDITION_DEGRADED,
    WORK_CONDITION_PROGRESSING,
)
from ocm_rollout.controllers.common.wire import Cond, annotations_of, conditions_of, generation_of, parse_time

TO_APPLY: Final = ROLLOUT_STATUS_TO_APPLY
PROGRESSING: Final = ROLLOUT_STATUS_PROGRESSING
SUCCEEDED: Final = ROLLOUT_STATUS_SUCCEEDED
FAILED: Final = ROLLOUT_STATUS_FAILED
TIME_OUT: Final = ROLLOUT_STATUS_TIMEOUT

TRUE: Final = CONDITION_TRUE
FALSE: Final = CONDITION_FALSE


@dataclass(frozen=True)
class WorkRolloutStatus:
    """A work's rollout status and the moment its clock starts (None: no time)."""

    status: str
    last_transition_time: datetime | None = None
    # Why: which conditions decided it (shown by `ocm-rollout status` and in events).
    reason: str = ""
    # ToApply because ``Applied`` is False at the current generation (improvement 9): since when
    # (never before the current revision). With a progressDeadline the planner times it out.
    apply_failed_since: datetime | None = None
    # Progressing for the planner because the work applied and is being validated (a verified
    # rollout's ``Validating``; ocm_rollout.controllers.workset.verified).
    validating: bool = False

    @property
    def shown(self) -> str:
        """The status as people see it: ``Validating`` is its own state."""
        return "Validating" if self.validating else self.status


def revision_start(work: Mapping[str, Any]) -> datetime | None:
    """When the controller wrote the work's current spec (improvement 4), if it recorded it."""
    return parse_time(annotations_of(work).get(ANNOTATION_TEMPLATE_APPLIED_TIME))


def _clock(ltt: datetime | None, start: datetime | None) -> datetime | None:
    """A transition time that never predates the current revision."""
    if ltt is None or start is None:
        return ltt
    return max(ltt, start)


def _latest(*times: datetime | None) -> datetime | None:
    present = [t for t in times if t is not None]
    return max(present) if present else None


def rollout_status(work: Mapping[str, Any], start: datetime | None = None) -> WorkRolloutStatus:
    """The rollout status of ``work`` at its current ``metadata.generation``.

    ``start`` is the beginning of the current revision (``revision_start(work)`` unless the
    caller knows better); None keeps OCM's transition times unchanged.
    """
    generation = generation_of(work)
    conds = conditions_of(work)
    applied = conds.get(WORK_CONDITION_APPLIED)
    if applied is None or applied.observed_generation != generation:
        return WorkRolloutStatus(TO_APPLY, reason="not applied at the current generation yet")
    progressing = conds.get(WORK_CONDITION_PROGRESSING)
    if progressing is None:
        return _without_progressing(applied, conds.get(WORK_CONDITION_AVAILABLE), generation, start)
    if applied.status == FALSE:
        # OCM: ToApply (for ever). Improvement 9: the planner may time it out from this moment.
        since = _clock(applied.last_transition_time, start)
        return WorkRolloutStatus(TO_APPLY, reason=_describe(applied), apply_failed_since=since)
    if applied.status != TRUE:
        return WorkRolloutStatus(TO_APPLY, reason="Applied is not True")
    if progressing.observed_generation != generation:
        return WorkRolloutStatus(TO_APPLY, reason="Progressing is from an older generation")
    degraded = conds.get(WORK_CONDITION_DEGRADED)
    if degraded is not None and degraded.observed_generation != generation:
        return WorkRolloutStatus(TO_APPLY, reason="Degraded is from an older generation")
    if progressing.status == TRUE:
        if degraded is not None and degraded.status == TRUE:
            return WorkRolloutStatus(
                FAILED, _clock(degraded.last_transition_time, start), _describe(degraded)
            )
        return WorkRolloutStatus(
            PROGRESSING, _clock(progressing.last_transition_time, start), _describe(progressing)
        )
    if progressing.status == FALSE:
        return WorkRolloutStatus(
            SUCCEEDED, _clock(progressing.last_transition_time, start), _describe(progressing)
        )
    return WorkRolloutStatus(
        PROGRESSING, _clock(progressing.last_transition_time, start), _describe(progressing)
    )


def _without_progressing(
    applied: Cond, available: Cond | None, generation: int, start: datetime | None
) -> WorkRolloutStatus:
    """Improvement 1: a work with no ``Progressing`` condition at all (no condition rules)."""
    if applied.status == FALSE:
        return WorkRolloutStatus(FAILED, _clock(applied.last_transition_time, start), _describe(applied))
    if (
        applied.status == TRUE
        and available is not None
        and available.observed_generation == generation
        and available.status == TRUE
    ):
        moment = _latest(applied.last_transition_time, available.last_transition_time)
        return WorkRolloutStatus(SUCCEEDED, _clock(moment, start), "Applied and Available")
    if available is None or available.observed_generation != generation:
        return WorkRolloutStatus(TO_APPLY, reason="Available not reported at the current generation")
    return WorkRolloutStatus(TO_APPLY, reason=_describe(available))


def _describe(cond: Cond) -> str:
    text = f"{cond.type} {cond.status}"
    if cond.reason:
        text += f" ({cond.reason})"
    if cond.message:
        text += f": {cond.message}"
    return text
