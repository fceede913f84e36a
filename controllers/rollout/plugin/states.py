"""The per-cluster rollout status with a rollout plugin (OCM enhancement 231): its status table and
state machine as data, and ``cluster_state``, the one transition function. Pure: the ManifestWork's
conditions, the plugin's ValidateRolloutCompletion answer and the clock come in as arguments.

The enhancement's table (a row per line; ``None`` is "not set", ``ANY`` matches everything)::

    Progressing  Degraded        ValidateRolloutCompletion()  -> status
    True         True            n/a                          -> Failed
    True         False/not set   n/a                          -> Progressing
    False        False/not set   INPROGRESS                   -> Validating
    False        False/not set   FAILED                       -> Failed
    False        False/not set   SUCCEEDED                    -> Succeeded
    Unknown/not set  any         n/a                          -> Progressing

Two readings of ours, where the enhancement is silent:

- Progressing False with Degraded True is not in the table; OCM's status function without a
  plugin reads Degraded only while Progressing is True, so it is taken as the Progressing-False
  rows (validation decides).
- A cluster stays Validating while the plugin has not answered (not asked yet, or the call
  failed) and while it answers INPROGRESS, until ``LastTransitionTime + progressDeadline``
  (the time Progressing became False): then it is ``TimeOut`` (the enhancement polls "until the
  current time reaches" that time). No deadline: it waits for an answer for ever.

"ToApply" (the agent has not observed the latest spec: OCM's ``shouldReturnToApply``) is the
caller's to decide and comes in as ``WorkSignals.to_apply``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final


class ClusterStatus(StrEnum):
    """sdk-go's cluster rollout statuses plus the enhancement's new ``Validating``."""

    TO_APPLY = "ToApply"
    PROGRESSING = "Progressing"
    VALIDATING = "Validating"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIME_OUT = "TimeOut"
    SKIP = "Skip"


class Validation(StrEnum):
    """ValidateRolloutCompletion's answer (``ValidateResponse.Result``)."""

    INPROGRESS = "INPROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


ANY: Final = "any"
NOT_TRUE: Final = "False or not set"


@dataclass(frozen=True)
class TableRow:
    #: True, False, or None for "Unknown/not set".
    progressing: bool | None
    #: True, NOT_TRUE or ANY.
    degraded: bool | str
    #: None: the plugin is not asked.
    validation: Validation | None
    status: ClusterStatus
    description: str


STATUS_TABLE: Final[tuple[TableRow, ...]] = (
    TableRow(True, True, None, ClusterStatus.FAILED, "Work is progressing but degraded"),
    TableRow(True, NOT_TRUE, None, ClusterStatus.PROGRESSING, "Work is being applied and is healthy"),
    TableRow(False, NOT_TRUE, Validation.INPROGRESS, ClusterStatus.VALIDATING, "Validating rollout"),
    TableRow(False, NOT_TRUE, Validation.FAILED, ClusterStatus.FAILED, "The current rollout is failed"),
    TableRow(False, NOT_TRUE, Validation.SUCCEEDED, ClusterStatus.SUCCEEDED, "Work has been successfully applied"),
    TableRow(None, ANY, None, ClusterStatus.PROGRESSING, "Conservative fallback: treat as still progressing"),
)

#: The enhancement's state machine: (from, to, what makes the move).
TRANSITIONS: Final[tuple[tuple[ClusterStatus, ClusterStatus, str], ...]] = (
    (ClusterStatus.TO_APPLY, ClusterStatus.PROGRESSING, "Progressing = True"),
    (ClusterStatus.PROGRESSING, ClusterStatus.VALIDATING, "Progressing = False"),
    (ClusterStatus.VALIDATING, ClusterStatus.SUCCEEDED, "ValidateRolloutCompletion() returns SUCCEEDED"),
    (ClusterStatus.VALIDATING, ClusterStatus.FAILED, "ValidateRolloutCompletion() returns FAILED"),
    (ClusterStatus.PROGRESSING, ClusterStatus.FAILED, "Degraded = True"),
    (ClusterStatus.TO_APPLY, ClusterStatus.FAILED, "Degraded = True"),
    # Ours: the polling of ValidateRolloutCompletion ends at LastTransitionTime + progressDeadline.
    (ClusterStatus.VALIDATING, ClusterStatus.TIME_OUT, "progressDeadline passed while validating"),
)


@dataclass(frozen=True)
class WorkSignals:
    """What the cluster's ManifestWork says (conditions: True, False, or None when not set or
    Unknown)."""

    progressing: bool | None
    degraded: bool | None = None
    #: The agent has not observed the latest spec yet (OCM's ``shouldReturnToApply``).
    to_apply: bool = False
    #: lastTransitionTime of the Progressing condition.
    progressing_since: datetime | None = None
    #: lastTransitionTime of the Degraded condition.
    degraded_since: datetime | None = None


@dataclass(frozen=True)
class ClusterState:
    status: ClusterStatus
    #: The time the rollout strategy's timeouts and soak times count from.
    last_transition_time: datetime | None = None
    #: The controller should call ValidateRolloutCompletion (and call ``cluster_state`` again
    #: with the answer).
    ask_plugin: bool = False
    #: Validating with a deadline: when to look again at the latest (the deadline).
    recheck_at: datetime | None = None
    message: str = ""


def _row(signals: WorkSignals, validation: Validation | None) -> TableRow | None:
    for row in STATUS_TABLE:
        if row.progressing is not signals.progressing:
            continue
        if row.degraded is True and signals.degraded is not True:
            continue
        if row.degraded == NOT_TRUE and signals.degraded is True:
            continue
        if row.validation is not None and row.validation is not validation:
            continue
        return row
    return None


def cluster_state(
    signals: WorkSignals,
    now: datetime,
    *,
    validation: Validation | None = None,
    validation_message: str = "",
    progress_deadline: timedelta | None = None,
) -> ClusterState:
    """The cluster's rollout status under a plugin.

    ``validation``: the plugin's answer to ValidateRolloutCompletion in this pass, or None when
    it was not asked (or the call failed: ``validation_message`` then says why, for the
    Progressing condition). ``progress_deadline``: the strategy's progressDeadline (None: none).
    """
    if signals.to_apply:
        return ClusterState(ClusterStatus.TO_APPLY)
    if signals.progressing is False:
        since = signals.progressing_since
        if validation is Validation.SUCCEEDED:
            return ClusterState(ClusterStatus.SUCCEEDED, since, message=validation_message)
        if validation is Validation.FAILED:
            return ClusterState(ClusterStatus.FAILED, since, message=validation_message)
        deadline = since + progress_deadline if since is not None and progress_deadline is not None else None
        if deadline is not None and now >= deadline:
            return ClusterState(
                ClusterStatus.TIME_OUT,
                since,
                message=validation_message or f"not validated within the progress deadline ({progress_deadline})",
            )
        return ClusterState(
            ClusterStatus.VALIDATING,
            since,
            ask_plugin=validation is None,
            recheck_at=deadline,
            message=validation_message,
        )
    row = _row(signals, validation)
    if row is None:  # (unreachable: the fallback row matches any remaining case)
        return ClusterState(ClusterStatus.PROGRESSING, signals.progressing_since)
    since = signals.degraded_since if row.status is ClusterStatus.FAILED else signals.progressing_since
    return ClusterState(row.status, since)
