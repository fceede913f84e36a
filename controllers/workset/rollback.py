"""Abort, retry and pause of a ManifestWorkReplicaSet's rollout (OCM enhancement 229, and ours).

One pass plans the update revision (the spec's template) under each placementRef's strategy as
always, then ``decide`` says what the pass does with that plan:

- **Abort.** When a placementRef with ``failureStrategy: AbortAll`` breaches its maxFailures, or
  the annotation ``rollout.ocm-rollout.io/abort`` names the update revision while it is not
  rolled out everywhere, the rollout is aborted at ``now`` (``status.abortedTime``). An aborted
  MWRS plans the current revision's template (``status.currentRevision``) with every strategy
  replaced by ``All`` (``revert_spec``): each work that is not at the current revision, the
  update revision's first of all, is rewritten at once, and clusters without a work get the
  current revision too. Without a current revision (nothing ever rolled out everywhere) or
  without its ControllerRevision, nothing can be reverted: the rollout is halted (every write
  and delete dropped, ``hold``). No abort when the update revision is the current one (nothing
  to return to; the rollout stops at maxFailures as usual).
- **Stays aborted** until the template changes (a new update revision clears abortedTime) or the
  annotation ``rollout.ocm-rollout.io/retry`` holds the abortedTime value of this abort: the
  abort is then undone and the update revision rolled out again under the strategies. A retry
  for an older abort is ignored, so it can never loop; the abort request of the retried revision
  is withdrawn (``clear_abort_request``) so it cannot abort the retried rollout again.
- **Pause.** While ``spec.paused`` is true the pass is planned, then every write and delete is
  dropped (``hold``); the status still follows the works.
- **Complete.** When every selected cluster of every placement succeeded at the update revision
  (and the rollout is not aborted), the update revision becomes the current one.

Pure: no I/O, ``now`` is an argument.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_RETRY,
    FAILURE_STRATEGY_ABORT_ALL,
    ROLLOUT_TYPE_ALL,
)
from ocm_rollout.controllers.common.rollout_text import cluster_list
from ocm_rollout.controllers.common.wire import JSON, annotations_of, format_time, parse_time
from ocm_rollout.controllers.rollout.reservations import Reservations
from ocm_rollout.controllers.workset.aggregation import REVISION_FIELDS
from ocm_rollout.controllers.workset.history import UpdateRevision
from ocm_rollout.controllers.workset.plan import DeployPlan, RefPlan
from ocm_rollout.controllers.workset.revisions import revision_name
from ocm_rollout.controllers.workset.status_mapping import SUCCEEDED

# What a pass does with the works.
ROLLING: Final = "Rolling"  # roll the update revision out under the strategies
REVERTING: Final = "Reverting"  # aborted: return every cluster to the current revision at once
HALTED: Final = "Halted"  # aborted, nothing to return to: no work is written or deleted

REVERT_STRATEGY: Final[JSON] = {"type": ROLLOUT_TYPE_ALL, "all": {"progressDeadline": "None"}}


@dataclass(frozen=True)
class Breach:
    """A placementRef with failureStrategy AbortAll whose rollout breached maxFailures."""

    placement: str
    # cluster -> why it counts as a failure
    failed: Mapping[str, str]

    def describe(self) -> str:
        details = [f"{cluster} ({why})" for cluster, why in sorted(self.failed.items())]
        return (
            f'placement "{self.placement}": maxFailures breached by {len(self.failed)} failed '
            f"cluster(s): {cluster_list(details)}"
        )


_BREACH = re.compile(r'placement "([^"]+)": maxFailures breached by \d+ failed cluster\(s\): ')
# One "cluster (Kind[: why])" of a breach's list, up to the next one, "and N more", or the end.
_DETAIL = re.compile(
    r"([a-z0-9][-a-z0-9.]*) \(((?:Failed|TimeOut)(?:: .*?)?)\)"
    r"(?=, [a-z0-9][-a-z0-9.]* \((?:Failed|TimeOut)| and \d+ more|;| \(failureStrategy |$)"
)


def breached_clusters(message: str) -> dict[str, dict[str, str]]:
    """The failed clusters an abort's cause names (``Breach.describe``, as recorded in the
    conditions while the rollout stays aborted): placement -> cluster -> why. Only the clusters
    listed (``cluster_list`` names at most a few and counts the rest)."""
    out: dict[str, dict[str, str]] = {}
    starts = list(_BREACH.finditer(message))
    for n, found in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(message)
        listed = message[found.end():end]
        clusters = out.setdefault(found.group(1), {})
        for detail in _DETAIL.finditer(listed):
            clusters[detail.group(1)] = detail.group(2)
    return out


@dataclass(frozen=True)
class RollbackDecision:
    """What one pass does, and the revision fields of status it records first."""

    mode: str
    paused: bool
    update: UpdateRevision
    # status.currentRevision, status.abortedTime and status.collisionCount to record.
    current: str | None
    aborted_time: str | None
    collision_count: int | None
    # This pass aborts (record abortedTime, then the RolloutAborted event).
    started_abort: bool = False
    # This pass retries an abort (record the cleared abortedTime, then the RolloutRetried event).
    retried: bool = False
    # The abort annotation names the retried revision: withdraw it before anything else.
    clear_abort_request: bool = False
    # Why the rollout was aborted (this pass's abort; "" otherwise).
    cause: str = ""
    # Why nothing can be reverted (HALTED).
    halt_reason: str = ""
    # The failures that aborted it (this pass's abort).
    breaches: tuple[Breach, ...] = ()

    @property
    def aborted(self) -> bool:
        return self.aborted_time is not None

    def fields(self) -> JSON:
        """The revision fields of status (None: absent)."""
        return {
            "currentRevision": self.current,
            "updateRevision": self.update.hash,
            "collisionCount": self.collision_count,
            "abortedTime": self.aborted_time,
        }


def stored_fields(status: Mapping[str, Any] | None) -> JSON:
    status = status or {}
    return {key: status.get(key) for key in REVISION_FIELDS}


def fields_patch(old_status: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> JSON | None:
    """The merge patch of ``status`` recording ``fields`` (null removes one); None when stored."""
    old = stored_fields(old_status)
    changed = {key: fields.get(key) for key in REVISION_FIELDS if _normal(old.get(key)) != _normal(fields.get(key))}
    return changed or None


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        moment = parse_time(value)
        return value if moment is None else moment
    return value


def _same_time(left: str | None, right: str | None) -> bool:
    if not left or not right:
        return False
    a, b = parse_time(left), parse_time(right)
    return left.strip() == right.strip() if a is None or b is None else a == b


def abort_breaches(spec: Mapping[str, Any], plan: DeployPlan) -> list[Breach]:
    """The placementRefs with failureStrategy AbortAll whose plan breached maxFailures."""
    aborting = {
        str(ref.get("name") or "")
        for ref in spec.get("placementRefs") or ()
        if isinstance(ref, Mapping)
        and isinstance(ref.get("rolloutStrategy"), Mapping)
        and ref["rolloutStrategy"].get("failureStrategy") == FAILURE_STRATEGY_ABORT_ALL
    }
    return [Breach(ref.name, failure_details(ref)) for ref in plan.refs if ref.name in aborting and ref.breach]


def failure_details(ref: RefPlan) -> dict[str, str]:
    """The clusters counted as failures by a placement's plan, each with why."""
    out = {}
    for cluster, kind in ref.failed_clusters().items():
        status = ref.statuses.get(cluster)
        out[cluster] = f"{kind}: {status.reason}" if status is not None and status.reason else kind
    return out


def rolled_out(plan: DeployPlan) -> bool:
    """Every selected cluster of every placement succeeded with the plan's template (each
    placement scheduled for its current spec, every decision page read)."""
    if plan.missing_placement is not None or not plan.refs:
        return False
    for ref in plan.refs:
        if ref.error is not None or ref.unready is not None:
            return False
        succeeded = ref.succeeded
        if any(cluster not in succeeded for cluster in ref.decided):
            return False
    return True


def updated_counts(plan: DeployPlan) -> dict[str, int]:
    """Per placementRef: decided clusters whose work succeeded with the plan's template."""
    return {
        ref.name: sum(1 for c in ref.decided if (s := ref.statuses.get(c)) is not None and s.status == SUCCEEDED)
        for ref in plan.refs
        if ref.error is None
    }


def _abort_requested(annotations: Mapping[str, str], mwrs_name: str, update: UpdateRevision) -> bool:
    value = (annotations.get(ANNOTATION_ROLLOUT_ABORT) or "").strip()
    return bool(value) and value in (update.hash, revision_name(mwrs_name, update.hash))


def decide(
    *,
    mwrs: Mapping[str, Any],
    update: UpdateRevision,
    collision_count: int | None,
    current_available: bool,
    breaches: Sequence[Breach],
    complete: bool,
    now: datetime,
) -> RollbackDecision:
    """What this pass does (see the module docstring).

    ``update`` is the update revision (the spec's template); ``current_available`` whether the
    ControllerRevision of ``status.currentRevision`` is there to revert to; ``breaches`` the
    AbortAll placementRefs whose plan of the update revision breached maxFailures; ``complete``
    whether that plan is rolled out everywhere (``rolled_out``)."""
    status = mwrs.get("status") or {}
    spec = mwrs.get("spec") or {}
    metadata = mwrs.get("metadata") or {}
    name = str(metadata.get("name") or "")
    annotations = annotations_of(mwrs)
    current = status.get("currentRevision") or None
    stored_update = status.get("updateRevision") or None
    aborted_time: str | None = status.get("abortedTime") or None
    if stored_update is not None and stored_update != update.hash:
        aborted_time = None  # a new template: the abort was of the previous one
    retried = False
    clear_request = False
    if aborted_time is not None and _same_time(annotations.get(ANNOTATION_ROLLOUT_RETRY), aborted_time):
        retried = True
        clear_request = _abort_requested(annotations, name, update)
        aborted_time = None
    started = False
    cause = ""
    found: tuple[Breach, ...] = ()
    if aborted_time is None and not retried and current != update.hash and not complete:
        if breaches:
            found = tuple(breaches)
            cause = "; ".join(b.describe() for b in breaches) + " (failureStrategy AbortAll)"
        elif _abort_requested(annotations, name, update):
            cause = f"requested by annotation {ANNOTATION_ROLLOUT_ABORT}"
        if cause:
            aborted_time = format_time(now)
            started = True
    if aborted_time is None and complete:
        current = update.hash
    mode = ROLLING
    halt_reason = ""
    if aborted_time is not None:
        if current is None:
            mode = HALTED
            halt_reason = "no revision has rolled out to every cluster yet (status.currentRevision is unset)"
        elif current == update.hash:
            mode = HALTED
            halt_reason = f"the update revision {revision_name(name, current)} is the current revision"
        elif not current_available:
            mode = HALTED
            halt_reason = (
                f"the ControllerRevision {revision_name(name, current)} of status.currentRevision is gone"
            )
        else:
            mode = REVERTING
    return RollbackDecision(
        mode=mode,
        paused=spec.get("paused") is True,
        update=update,
        current=current,
        aborted_time=aborted_time,
        collision_count=collision_count,
        started_abort=started,
        retried=retried,
        clear_abort_request=clear_request,
        cause=cause,
        halt_reason=halt_reason,
        breaches=found,
    )


def revert_spec(spec: Mapping[str, Any], template: Mapping[str, Any]) -> JSON:
    """``spec`` planning ``template`` (the current revision's) at once on every placementRef."""
    refs = [
        {"name": ref.get("name"), "rolloutStrategy": dict(REVERT_STRATEGY)}
        for ref in spec.get("placementRefs") or ()
        if isinstance(ref, Mapping)
    ]
    return {**spec, "manifestWorkTemplate": dict(template), "placementRefs": refs}


@dataclass(frozen=True)
class Held:
    """What a held pass did not write."""

    creates: int = 0
    updates: int = 0
    relabels: int = 0
    deletes: int = 0
    clusters: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        return self.creates + self.updates + self.relabels + self.deletes

    def describe(self) -> str:
        if self.total == 0:
            return "no work waits"
        parts = []
        for count, what in (
            (self.creates, "to create"),
            (self.updates, "to update"),
            (self.relabels, "to relabel"),
            (self.deletes, "to delete"),
        ):
            if count:
                parts.append(f"{count} {what}")
        return f"{self.total} work(s) wait ({', '.join(parts)}): {cluster_list(list(self.clusters))}"


def hold(plan: DeployPlan, record: Reservations) -> tuple[DeployPlan, Held]:
    """``plan`` without any write or delete (the reservation record as it is), and what waits."""
    creates = updates = relabels = deletes = 0
    clusters: set[str] = set()
    refs = []
    for ref in plan.refs:
        for write in ref.writes:
            clusters.add(write.cluster)
            if write.is_create:
                creates += 1
            elif write.widens:
                updates += 1
            else:
                relabels += 1
        deletes += len(ref.deletes)
        clusters.update(d.namespace for d in ref.deletes)
        refs.append(dataclasses.replace(ref, writes=[], deletes=[], deferred=0, reserved=record.of(ref.name)))
    deletes += len(plan.stale_deletes)
    clusters.update(d.namespace for d in plan.stale_deletes)
    held = dataclasses.replace(plan, stale_deletes=[], refs=refs, reservations=record, deferred=0)
    return held, Held(creates, updates, relabels, deletes, tuple(sorted(clusters)))
