"""The rollout status of a ManifestWorkReplicaSet's work under a verified rollout strategy
(checks or a plugin, docs/behaviour/validation.md): a work that applied (``Succeeded`` by its
conditions) is ``Validating`` until the verdict kept on it (``ANNOTATION_VALIDATION``) says
``Succeeded`` or ``Failed``.

The planner knows no Validating state: a Validating cluster is Progressing for it, from the moment
it became Validating. So it is in flight (it counts toward maxConcurrency) and its
progressDeadline runs from then (TimeOut once it passes). A verdict gives the status from its own
moment: minSuccessTime starts when the cluster passed.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ocm_rollout.controllers.common.wire import annotations_of, generation_of
from ocm_rollout.controllers.rollout.verification import SUCCEEDED as VERDICT_SUCCEEDED
from ocm_rollout.controllers.rollout.verification import read_record
from ocm_rollout.controllers.workset.status_mapping import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    WorkRolloutStatus,
    revision_start,
)

#: The moment a Validating work without any transition time counts from.
_NO_TIME: Final = datetime(1970, 1, 1, tzinfo=UTC)


def validating_since(work: Mapping[str, Any], status: WorkRolloutStatus) -> datetime:
    """When a work that applied became Validating: its Succeeded transition time."""
    return status.last_transition_time or revision_start(work) or _NO_TIME


def verified_status(work: Mapping[str, Any], status: WorkRolloutStatus) -> WorkRolloutStatus:
    """``status`` (the work's conditions judged) with its validation applied."""
    if status.status != SUCCEEDED:
        return status
    since = validating_since(work, status)
    record = read_record(annotations_of(work), generation_of(work), since)
    if record.verdict is not None:
        verdict = record.verdict
        if verdict.status == VERDICT_SUCCEEDED:
            return WorkRolloutStatus(SUCCEEDED, verdict.at, f"validated: {verdict.message}" if verdict.message else "validated")
        return WorkRolloutStatus(FAILED, verdict.at, f"validation failed: {verdict.message}")
    reason = f"validating: {record.message}" if record.message else "validating"
    return WorkRolloutStatus(PROGRESSING, status.last_transition_time, reason, validating=True)
