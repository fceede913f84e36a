"""Names the ManifestWorkReplicaSet controller reads and writes.

OCM's names come from ``api.constants``; the few this project adds for its improvements over
OCM (annotations, reasons and event reasons) are defined here.
"""

from __future__ import annotations

from typing import Final

from api.constants import (
    CONDITION_MANIFESTWORK_APPLIED as COND_MANIFESTWORK_APPLIED,
)
from api.constants import (
    CONDITION_PLACEMENT_ROLLED_OUT as COND_PLACEMENT_ROLLED_OUT,
)
from api.constants import (
    CONDITION_PLACEMENT_VERIFIED as COND_PLACEMENT_VERIFIED,
)
from api.constants import (
    FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP as MWRS_FINALIZER,
)
from api.constants import (
    LABEL_DECISION_GROUP_INDEX as DECISION_GROUP_INDEX_LABEL,
)
from api.constants import (
    LABEL_DECISION_GROUP_NAME as DECISION_GROUP_NAME_LABEL,
)
from api.constants import (
    LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL,
)
from api.constants import (
    LABEL_PLACEMENT as PLACEMENT_LABEL,
)
from api.constants import (
    LABEL_PLACEMENT_NAME as PLACEMENT_NAME_LABEL,
)
from api.constants import (
    REASON_AS_EXPECTED,
    REASON_COMPLETE,
    REASON_NOT_AS_EXPECTED,
    REASON_PLACEMENT_DECISION_EMPTY,
    REASON_PLACEMENT_DECISION_NOT_FOUND,
    REASON_PROCESSING,
    REASON_PROGRESSING,
)
from api.constants import (
    WORK_CONDITION_APPLIED as WORK_APPLIED,
)
from api.constants import (
    WORK_CONDITION_AVAILABLE as WORK_AVAILABLE,
)
from api.constants import (
    WORK_CONDITION_DEGRADED as WORK_DEGRADED,
)
from api.constants import (
    WORK_CONDITION_PROGRESSING as WORK_PROGRESSING,
)

# Improvement 3: the full "<namespace>.<name>" when the owner label holds a hashed value.
MWRS_OWNER_ANNOTATION: Final = "work.ocm-rollout.io/manifestworkreplicaset"
# Improvement 4: when the controller wrote the work's current spec (start of its revision).
TEMPLATE_APPLIED_ANNOTATION: Final = "work.ocm-rollout.io/template-applied-time"

# Improvement 2: why ManifestWorks could not be written.
REASON_CLUSTER_NAMESPACE_NOT_FOUND: Final = "ClusterNamespaceNotFound"
REASON_MANIFESTWORK_INVALID: Final = "ManifestWorkInvalid"
REASON_MANIFESTWORK_FORBIDDEN: Final = "ManifestWorkForbidden"
REASON_MANIFESTWORK_WRITE_FAILED: Final = "ManifestWorkWriteFailed"

# Improvement 5: events on the ManifestWorkReplicaSet.
EVENT_WAVE_STARTED: Final = "RolloutWaveStarted"
EVENT_MAX_FAILURES_BREACHED: Final = "MaxFailuresBreached"
EVENT_ROLLOUT_COMPLETE: Final = "RolloutComplete"

__all__ = [
    "COND_MANIFESTWORK_APPLIED",
    "COND_PLACEMENT_ROLLED_OUT",
    "COND_PLACEMENT_VERIFIED",
    "DECISION_GROUP_INDEX_LABEL",
    "DECISION_GROUP_NAME_LABEL",
    "EVENT_MAX_FAILURES_BREACHED",
    "EVENT_ROLLOUT_COMPLETE",
    "EVENT_WAVE_STARTED",
    "MWRS_FINALIZER",
    "MWRS_LABEL",
    "MWRS_OWNER_ANNOTATION",
    "PLACEMENT_LABEL",
    "PLACEMENT_NAME_LABEL",
    "REASON_AS_EXPECTED",
    "REASON_CLUSTER_NAMESPACE_NOT_FOUND",
    "REASON_COMPLETE",
    "REASON_MANIFESTWORK_FORBIDDEN",
    "REASON_MANIFESTWORK_INVALID",
    "REASON_MANIFESTWORK_WRITE_FAILED",
    "REASON_NOT_AS_EXPECTED",
    "REASON_PLACEMENT_DECISION_EMPTY",
    "REASON_PLACEMENT_DECISION_NOT_FOUND",
    "REASON_PROCESSING",
    "REASON_PROGRESSING",
    "TEMPLATE_APPLIED_ANNOTATION",
    "WORK_APPLIED",
    "WORK_AVAILABLE",
    "WORK_DEGRADED",
    "WORK_PROGRESSING",
]
