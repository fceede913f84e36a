"""The rollout planner shared by the ManifestWorkReplicaSet controller and the addon manager.

Pure logic (no I/O, the clock is an argument) reproducing OCM's rollout handler as specified in
docs/behaviour/rollout.md. Typical use::

    from ocm_rollout.controllers.rollout import ClusterRolloutStatus, DecisionGroup, plan_rollout

    result = plan_rollout(
        placement_ref["rolloutStrategy"],
        [DecisionGroup(group_name="canary", group_index=0, clusters=["c1", "c2"])],
        [ClusterRolloutStatus("c1", "Succeeded", last_transition_time)],
        now,
        field_path="spec.placementRefs[0].rolloutStrategy",
    )
    result.clusters_to_rollout, result.clusters_removed, result.recheck_after
"""

from ocm_rollout.controllers.rollout.goparse import MAX_DURATION_NS, parse_go_duration
from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    MandatoryGroupRef,
    PlannedCluster,
    PlanTrace,
    RolloutInputError,
    RolloutPlan,
    RolloutStatus,
    RolloutStrategy,
    RolloutStrategyError,
    RolloutType,
)
from ocm_rollout.controllers.rollout.planner import plan, plan_rollout
from ocm_rollout.controllers.rollout.strategy import decode_strategy

__all__ = [
    "MAX_DURATION_NS",
    "ClusterRolloutStatus",
    "DecisionGroup",
    "GroupKey",
    "MandatoryGroupRef",
    "PlanTrace",
    "PlannedCluster",
    "RolloutInputError",
    "RolloutPlan",
    "RolloutStatus",
    "RolloutStrategy",
    "RolloutStrategyError",
    "RolloutType",
    "decode_strategy",
    "parse_go_duration",
    "plan",
    "plan_rollout",
]
