"""Typed inputs and outputs of the rollout planner."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from ocm_rollout.api import constants
from ocm_rollout.controllers.rollout.goparse import Threshold
from ocm_rollout.controllers.rollout.timefmt import Timestamp, to_datetime


class RolloutInputError(ValueError):
    """Malformed planner input. ``field`` names the offending field (``strategy.type``,
    ``existing[3].status``, ...); ``reason`` says what is wrong with it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class RolloutStrategyError(RolloutInputError):
    """A rollout strategy that OCM would refuse (unknown type, bad duration, bad threshold)."""


class RolloutStatus(StrEnum):
    """Rollout status of one cluster, as OCM's workload appliers report it."""

    TO_APPLY = constants.ROLLOUT_STATUS_TO_APPLY
    PROGRESSING = constants.ROLLOUT_STATUS_PROGRESSING
    SUCCEEDED = constants.ROLLOUT_STATUS_SUCCEEDED
    FAILED = constants.ROLLOUT_STATUS_FAILED
    TIME_OUT = constants.ROLLOUT_STATUS_TIMEOUT
    SKIP = constants.ROLLOUT_STATUS_SKIP


class RolloutType(StrEnum):
    ALL = constants.ROLLOUT_TYPE_ALL
    PROGRESSIVE = constants.ROLLOUT_TYPE_PROGRESSIVE
    PROGRESSIVE_PER_GROUP = constants.ROLLOUT_TYPE_PROGRESSIVE_PER_GROUP


#: The key under which each strategy type keeps its body in the API object.
BODY_KEY: dict[RolloutType, str] = {
    RolloutType.ALL: "all",
    RolloutType.PROGRESSIVE: "progressive",
    RolloutType.PROGRESSIVE_PER_GROUP: "progressivePerGroup",
}

#: The fields each strategy type has (others are dropped from the effective strategy).
BODY_FIELDS: dict[RolloutType, tuple[str, ...]] = {
    RolloutType.ALL: ("progressDeadline", "minSuccessTime", "maxFailures"),
    RolloutType.PROGRESSIVE: (
        "progressDeadline",
        "minSuccessTime",
        "maxFailures",
        "mandatoryDecisionGroups",
        "maxConcurrency",
    ),
    RolloutType.PROGRESSIVE_PER_GROUP: (
        "progressDeadline",
        "minSuccessTime",
        "maxFailures",
        "mandatoryDecisionGroups",
    ),
}


class GroupKey(NamedTuple):
    """A decision group: its name (may be empty) and its index."""

    group_name: str
    group_index: int


@dataclass(frozen=True, slots=True)
class MandatoryGroupRef:
    """An item of ``mandatoryDecisionGroups``: a non-empty name selects every group with that
    name (the index is then ignored); otherwise the index selects one group."""

    group_name: str = ""
    group_index: int = 0


@dataclass(frozen=True, slots=True)
class RolloutStrategy:
    """A decoded rollout strategy.

    ``body`` is the input body of the chosen type restricted to that type's fields, verbatim; it
    is what the plan reports as the effective strategy. ``max_concurrency`` is kept as given and
    only validated when a plan reaches the non-mandatory phase (as OCM does).
    """

    type: RolloutType
    body: Mapping[str, Any] = field(hash=False)
    progress_deadline_ns: int | None  # None: unlimited
    min_success_time_ns: int
    max_failures: Threshold
    max_concurrency: Threshold
    mandatory_decision_groups: tuple[MandatoryGroupRef, ...]
    #: Path used to name fields in errors (``strategy``, ``spec.placementRefs[0].rolloutStrategy``).
    field_path: str = field(default="strategy", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The effective strategy in its API form: ``{"type": T, <body key of T>: body}``."""
        return {"type": self.type.value, BODY_KEY[self.type]: dict(self.body)}


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionGroup:
    """One decision group of a Placement. Groups with the same (name, index) merge."""

    group_index: int
    group_name: str = ""
    #: Cluster names; any collection is accepted and stored as a tuple.
    clusters: Collection[str] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.clusters, tuple):
            object.__setattr__(self, "clusters", tuple(self.clusters))

    @property
    def key(self) -> GroupKey:
        return GroupKey(self.group_name, self.group_index)


@dataclass(frozen=True, slots=True)
class ClusterRolloutStatus:
    """The rollout status a workload applier reports for one cluster."""

    cluster_name: str
    status: RolloutStatus
    #: An aware datetime (naive = UTC) or integer nanoseconds since the Unix epoch; None if unknown.
    last_transition_time: Timestamp | None = None
    #: ToApply only (ours, docs/behaviour/rollout.md 6): the workload reported that applying its
    #: current spec failed, since this moment. With a progressDeadline the cluster times out at
    #: this moment plus the deadline, as a Failed or Progressing one does; None: no such report.
    apply_failed_since: Timestamp | None = None

    def __post_init__(self) -> None:
        if type(self.status) is not RolloutStatus:
            object.__setattr__(self, "status", RolloutStatus(self.status))


class PlannedCluster(NamedTuple):
    """One entry of a plan's lists (clustersToRollout, clustersTimeOut, clustersRemoved)."""

    cluster_name: str
    group_name: str
    group_index: int
    status: RolloutStatus
    #: Nanoseconds since the epoch, as reported (None for clusters planned as new).
    last_transition_time_ns: int | None
    #: When to look at this cluster again (soak end or deadline), in nanoseconds; None if never.
    recheck_time_ns: int | None

    @property
    def last_transition_time(self) -> datetime | None:
        ns = self.last_transition_time_ns
        return None if ns is None else to_datetime(ns)


Phase = Literal["all", "mandatory", "rest"]
Walk = Literal["cluster", "group"]
Stop = Literal["batch_full", "breach", "group_unfinished", "completed", "promotion"]


@dataclass(frozen=True, slots=True)
class PlanTrace:
    """How the answer was reached; used to explain a plan to people (``-o table``)."""

    #: Which phase produced the answer: type All, the mandatory groups, or the rest.
    phase: Phase
    #: The algorithm of that phase: the cluster walk (batch of clusters) or the group walk.
    walk: Walk
    #: Why the walk stopped.
    stop: Stop
    visible_groups: tuple[GroupKey, ...]
    mandatory_groups: tuple[GroupKey, ...]
    rest_groups: tuple[GroupKey, ...]
    #: Cluster walk: batch size and failure tolerance.
    batch_size: int | None = None
    failure_tolerance: int | None = None
    #: Cluster walk stopped while examining reported clusters: the last one examined.
    last_examined: str | None = None
    #: Group walk: the group after which it stopped (None when it walked every group).
    stop_group: GroupKey | None = None


@dataclass(frozen=True, slots=True)
class RolloutPlan:
    """The planner's answer."""

    strategy: RolloutStrategy
    clusters_to_rollout: tuple[PlannedCluster, ...]
    clusters_timeout: tuple[PlannedCluster, ...]
    clusters_removed: tuple[PlannedCluster, ...]
    max_failure_breach: bool
    #: Smallest positive (recheck time - now) over clusters_to_rollout, in nanoseconds.
    recheck_after_ns: int | None
    trace: PlanTrace = field(compare=False)

    @property
    def recheck_after_seconds(self) -> float | None:
        ns = self.recheck_after_ns
        return None if ns is None else ns / 1_000_000_000

    @property
    def recheck_after(self) -> timedelta | None:
        ns = self.recheck_after_ns
        return None if ns is None else timedelta(microseconds=ns / 1_000)
