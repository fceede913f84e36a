"""OCM names the simulated agents write: finalizers, condition types, reasons, label and taint keys.

They are the values OCM's own agents use (``open-cluster-management.io/api`` and ``ocm``), so
hub controllers and tools cannot tell a simulated cluster from a real one.
"""

from __future__ import annotations

from typing import Final

# --- work agent -----------------------------------------------------------------------------------
MANIFEST_WORK_FINALIZER: Final = "cluster.open-cluster-management.io/manifest-work-cleanup"

WORK_APPLIED: Final = "Applied"
WORK_AVAILABLE: Final = "Available"
WORK_PROGRESSING: Final = "Progressing"
WORK_DEGRADED: Final = "Degraded"
WORK_DELETING: Final = "Deleting"
WORK_COMPLETE: Final = "Complete"

MANIFEST_APPLIED: Final = "Applied"
MANIFEST_AVAILABLE: Final = "Available"
MANIFEST_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"
MANIFEST_COMPLETE: Final = "Complete"

REASON_APPLIED_MANIFEST_COMPLETE: Final = "AppliedManifestComplete"
REASON_APPLIED_MANIFEST_FAILED: Final = "AppliedManifestFailed"
REASON_RESOURCE_AVAILABLE: Final = "ResourceAvailable"
REASON_RESOURCE_NOT_AVAILABLE: Final = "ResourceNotAvailable"
REASON_INCOMPLETE_RESOURCE_META: Final = "IncompleteResourceMeta"
REASON_FETCHING_RESOURCE_FAILED: Final = "FetchingResourceFailed"
REASON_NO_STATUS_FEEDBACK_SYNCED: Final = "NoStatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNC_FAILED: Final = "StatusFeedbackSyncFailed"

REASON_APPLIED_WORK_COMPLETE: Final = "AppliedManifestWorkComplete"
REASON_APPLIED_WORK_FAILED: Final = "AppliedManifestWorkFailed"
REASON_RESOURCES_AVAILABLE: Final = "ResourcesAvailable"
REASON_RESOURCES_NOT_AVAILABLE: Final = "ResourcesNotAvailable"
REASON_RESOURCES_STATUS_UNKNOWN: Final = "ResourcesStatusUnknown"
REASON_WORK_DELETING: Final = "WorkDeleting"

# Condition rules (manifestConfigs[].conditionRules) and their aggregation at work level.
CONDITION_RULE_REASON_PREFIX: Final = "ConditionRule"
REASON_CONDITION_RULE_EVALUATED: Final = "ConditionRuleEvaluated"
REASON_CONDITION_RULE_EXPRESSION_ERROR: Final = "ConditionRuleExpressionError"
REASON_CONDITION_RULE_INTERNAL_ERROR: Final = "ConditionRuleInternalError"
REASON_CONDITION_RULE_INVALID: Final = "ConditionRuleInvalid"
REASON_CONDITION_RULES_AGGREGATED: Final = "ConditionRulesAggregated"

# What OCM's own tests write by hand for a rollout ("rollout" mode of the simulated agent).
REASON_PROGRESSING_APPLYING: Final = "Applying"
REASON_PROGRESSING_COMPLETED: Final = "Completed"
REASON_DEGRADED_APPLY_FAILED: Final = "ApplyFailed"

FEEDBACK_WELL_KNOWN_STATUS: Final = "WellKnownStatus"
FEEDBACK_JSON_PATHS: Final = "JSONPaths"
RULE_WELL_KNOWN_CONDITIONS: Final = "WellKnownConditions"
RULE_CEL: Final = "CEL"

# --- registration ---------------------------------------------------------------------------------
CLUSTER_HUB_ACCEPTED: Final = "HubAcceptedManagedCluster"
CLUSTER_JOINED: Final = "ManagedClusterJoined"
CLUSTER_AVAILABLE: Final = "ManagedClusterConditionAvailable"

REASON_HUB_ACCEPTED: Final = "HubClusterAdminAccepted"
REASON_CLUSTER_JOINED: Final = "ManagedClusterJoined"
REASON_CLUSTER_AVAILABLE: Final = "ManagedClusterAvailable"
REASON_KUBE_APISERVER_UNAVAILABLE: Final = "ManagedClusterKubeAPIServerUnavailable"
REASON_LEASE_UPDATE_STOPPED: Final = "ManagedClusterLeaseUpdateStopped"

TAINT_UNAVAILABLE: Final = "cluster.open-cluster-management.io/unavailable"
TAINT_UNREACHABLE: Final = "cluster.open-cluster-management.io/unreachable"
TAINT_EFFECT_NO_SELECT: Final = "NoSelect"

CLUSTER_LEASE_NAME: Final = "managed-cluster-lease"
CLUSTER_NAME_LABEL: Final = "open-cluster-management.io/cluster-name"
CLUSTER_SET_LABEL: Final = "cluster.open-cluster-management.io/clusterset"
DEFAULT_LEASE_DURATION_SECONDS: Final = 60
LEASE_GRACE_MULTIPLIER: Final = 5

CLUSTER_SET_EMPTY: Final = "ClusterSetEmpty"
REASON_NO_CLUSTER_MATCHED: Final = "NoClusterMatched"
REASON_CLUSTERS_SELECTED: Final = "ClustersSelected"
BINDING_BOUND: Final = "Bound"
REASON_CLUSTER_SET_BOUND: Final = "ClusterSetBound"
REASON_CLUSTER_SET_NOT_FOUND: Final = "ClusterSetNotFound"

DEFAULT_CLUSTER_SET: Final = "default"
GLOBAL_CLUSTER_SET: Final = "global"
