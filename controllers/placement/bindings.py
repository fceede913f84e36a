"""The status of a ManagedClusterSetBinding: its ``Bound`` condition.

OCM's registration hub controller keeps it: ``Bound=True/ClusterSetBound`` when the set named
by ``spec.clusterSet`` exists, ``Bound=False/ClusterSetNotFound`` otherwise, with an empty
message. Scheduling never reads it (SCHEDULING.md §2.1); users and tools do
(``kubectl get managedclustersetbindings``), and in a hub without OCM's registration controller
nobody else would write it, so the placement controller does.

Pure: no I/O.
"""

from __future__ import annotations

from datetime import datetime

from api import constants as C
from api.cluster_v1beta2 import ManagedClusterSetBinding, ManagedClusterSetBindingStatus
from api.meta import Condition, set_condition

REASON_CLUSTER_SET_NOT_FOUND = "ClusterSetNotFound"


def bound_condition(binding: ManagedClusterSetBinding, set_exists: bool, now: datetime) -> Condition:
    if set_exists:
        return Condition(
            type=C.CONDITION_CLUSTER_SET_BINDING_BOUND,
            status="True",
            reason=C.REASON_CLUSTER_SET_BOUND,
            message="",
            last_transition_time=now,
        )
    return Condition(
        type=C.CONDITION_CLUSTER_SET_BINDING_BOUND,
        status="False",
        reason=REASON_CLUSTER_SET_NOT_FOUND,
        message="",
        last_transition_time=now,
    )


def binding_status(
    binding: ManagedClusterSetBinding, set_exists: bool, now: datetime
) -> ManagedClusterSetBindingStatus | None:
    """The binding's next status, or None when it is already right."""
    conditions = [c.model_copy() for c in binding.status.conditions]
    if not set_condition(conditions, bound_condition(binding, set_exists, now), now):
        return None
    return ManagedClusterSetBindingStatus(conditions=conditions)
