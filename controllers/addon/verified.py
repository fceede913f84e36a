"""The rollout status of a ManagedClusterAddOn (MCA) under a verified rollout strategy (checks or a
plugin, docs/behaviour/validation.md): an MCA that applied its desired configurations (it would be
``Succeeded``) is ``Validating`` until the verdict kept on it (annotation
``rollout.ocm-rollout.io/validation``) says ``Succeeded`` or ``Failed``.

The record belongs to one validation: the MCA's desired configurations (their ``abort.revision``;
they live in the MCA's status, so its generation does not follow them) and the transition time of
its Completed ``Progressing`` condition (without one, the Unix epoch). New configurations, or a new
completion (a retried rollout), validate afresh. That transition may predate the configurations
(an MCA whose Progressing condition never turned True for them), so the validation counts from
the moment the controller first judged it, kept in the record (``started``).

The planner knows no Validating state: a Validating MCA is Progressing for it, from that moment
(without a record yet, Progressing without a time: no deadline), so it is in flight (it counts
toward maxConcurrency) and its progressDeadline runs from then (TimeOut once it passes). A
verdict gives the status from its own moment: minSuccessTime starts when the MCA passed.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from ocm_rollout.api.times import format_micro_time, parse_time
from ocm_rollout.controllers.addon import abort as aborting
from ocm_rollout.controllers.addon.configs import DesiredConfigs
from ocm_rollout.controllers.common.wire import annotations_of
from ocm_rollout.controllers.rollout.model import RolloutStatus
from ocm_rollout.controllers.rollout.timefmt import to_datetime, to_ns
from ocm_rollout.controllers.rollout.verification import SUCCEEDED as VERDICT_SUCCEEDED
from ocm_rollout.controllers.rollout.verification import ValidationRecord, read_record

#: The moment an MCA without a Completed transition time counts from.
NO_TIME: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: Every record of an MCA has this generation: the revision says what is validated.
GENERATION: Final = 0


def completed_since(ltt_ns: int | None) -> datetime:
    """What identifies an applied MCA's validation besides its configurations: its Completed
    transition time."""
    return NO_TIME if ltt_ns is None else to_datetime(ltt_ns)


def mca_record(mca: Mapping[str, Any], desired: DesiredConfigs, ltt_ns: int | None) -> ValidationRecord:
    """The record of the MCA's current validation (an empty one when it has none)."""
    return read_record(annotations_of(mca), GENERATION, completed_since(ltt_ns), aborting.revision(desired))


def started(record: ValidationRecord, now: datetime) -> tuple[ValidationRecord, datetime]:
    """``record`` with the moment its validation started (``now`` when it has none yet), and that moment."""
    if record.started:
        return record, parse_time(record.started)
    return replace(record, started=format_micro_time(now)), now


@dataclass(frozen=True)
class Verified:
    """An applied MCA's status for the planner, its time (ns), what to show, and whether it is
    still Validating."""

    status: RolloutStatus
    ltt_ns: int | None
    reason: str
    validating: bool = False


def verified(mca: Mapping[str, Any], desired: DesiredConfigs, ltt_ns: int | None) -> Verified:
    """The status of an MCA that applied ``desired`` (Succeeded by its conditions, Completed at
    ``ltt_ns``) with its validation applied."""
    record = mca_record(mca, desired, ltt_ns)
    verdict = record.verdict
    if verdict is not None:
        if verdict.status == VERDICT_SUCCEEDED:
            shown = f"validated: {verdict.message}" if verdict.message else "validated"
            return Verified(RolloutStatus.SUCCEEDED, to_ns(verdict.at), shown)
        return Verified(RolloutStatus.FAILED, to_ns(verdict.at), f"validation failed: {verdict.message}")
    shown = f"validating: {record.message}" if record.message else "validating"
    since = to_ns(parse_time(record.started)) if record.started else None
    return Verified(RolloutStatus.PROGRESSING, since, shown, validating=True)
