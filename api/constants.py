"""Every label key, annotation, finalizer, condition type and reason, and the other literal
values users see, defined once. Names follow OCM's; values are exactly OCM's strings."""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# API groups
# --------------------------------------------------------------------------------------------
CLUSTER_GROUP: Final = "cluster.open-cluster-management.io"
WORK_GROUP: Final = "work.open-cluster-management.io"
ADDON_GROUP: Final = "addon.open-cluster-management.io"

# --------------------------------------------------------------------------------------------
# Label keys
# --------------------------------------------------------------------------------------------
LABEL_CLUSTER_SET: Final = "cluster.open-cluster-management.io/clusterset"
LABEL_PLACEMENT: Final = "cluster.open-cluster-management.io/placement"
LABEL_DECISION_GROUP_NAME: Final = "cluster.open-cluster-management.io/decision-group-name"
LABEL_DECISION_GROUP_INDEX: Final = "cluster.open-cluster-management.io/decision-group-index"
LABEL_MANIFESTWORK_REPLICASET: Final = "work.open-cluster-management.io/manifestworkreplicaset"
LABEL_PLACEMENT_NAME: Final = "work.open-cluster-management.io/placementname"
LABEL_ADDON_NAME: Final = "open-cluster-management.io/addon-name"
LABEL_ADDON_NAMESPACE: Final = "open-cluster-management.io/addon-namespace"
LABEL_SPOKE_ONLY: Final = "open-cluster-management.io/spoke-only"
LABEL_AGGREGATE_TO_WORK: Final = "open-cluster-management.io/aggregate-to-work"
# On objects the registration controllers create for a cluster (its hub namespace, the lease).
LABEL_CLUSTER_NAME: Final = "open-cluster-management.io/cluster-name"

# --------------------------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------------------------
ANNOTATION_EXPERIMENTAL_SCHEDULING_DISABLE: Final = (
    "cluster.open-cluster-management.io/experimental-scheduling-disable"
)
ANNOTATION_ADDON_LIFECYCLE: Final = "addon.open-cluster-management.io/lifecycle"
ADDON_LIFECYCLE_ADDON_MANAGER: Final = "addon-manager"
ADDON_LIFECYCLE_SELF: Final = "self"
ANNOTATION_CONFIG_SPEC_HASH: Final = "open-cluster-management.io/config-spec-hash"
ANNOTATION_HOSTING_CLUSTER_NAME: Final = "addon.open-cluster-management.io/hosting-cluster-name"
ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: Final = (
    "addon.open-cluster-management.io/v1alpha1-install-namespace"
)
# Ours (api/addon_conversion): what one add-on version cannot hold, carried on the other one.
ANNOTATION_V1ALPHA1_FIELDS: Final = "addon.open-cluster-management.io/v1alpha1-fields"
ANNOTATION_V1BETA1_FIELDS: Final = "addon.open-cluster-management.io/v1beta1-fields"
# ManagedCluster annotations with this prefix are copied to the add-ons of Placements strategies.
ADDON_ANNOTATION_PREFIX: Final = "addon.open-cluster-management.io"

# --------------------------------------------------------------------------------------------
# Finalizers
# --------------------------------------------------------------------------------------------
FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP: Final = "work.open-cluster-management.io/manifest-work-cleanup"
FINALIZER_MANIFESTWORK_AGENT_CLEANUP: Final = "cluster.open-cluster-management.io/manifest-work-cleanup"

# --------------------------------------------------------------------------------------------
# Taints and claims
# --------------------------------------------------------------------------------------------
TAINT_CLUSTER_UNAVAILABLE: Final = "cluster.open-cluster-management.io/unavailable"
TAINT_CLUSTER_UNREACHABLE: Final = "cluster.open-cluster-management.io/unreachable"
TAINT_EFFECT_NO_SELECT: Final = "NoSelect"
TAINT_EFFECT_PREFER_NO_SELECT: Final = "PreferNoSelect"
TAINT_EFFECT_NO_SELECT_IF_NEW: Final = "NoSelectIfNew"
TOLERATION_OP_EQUAL: Final = "Equal"
TOLERATION_OP_EXISTS: Final = "Exists"
CLAIM_CLUSTER_ID: Final = "id.k8s.io"
CLAIM_PLATFORM: Final = "platform.open-cluster-management.io"

# --------------------------------------------------------------------------------------------
# Well-known names
# --------------------------------------------------------------------------------------------
CLUSTER_SET_DEFAULT: Final = "default"
CLUSTER_SET_GLOBAL: Final = "global"
RESERVED_NO_DEFAULT_CONFIG_NAME: Final = "__reserved_no_default__"
ADDON_DEPLOYMENT_CONFIG_RESOURCE: Final = "addondeploymentconfigs"
ADDON_TEMPLATE_RESOURCE: Final = "addontemplates"
ADDON_DEFAULT_INSTALL_NAMESPACE: Final = "open-cluster-management-agent-addon"

# --------------------------------------------------------------------------------------------
# Enumerations (spec values)
# --------------------------------------------------------------------------------------------
SELECTOR_TYPE_EXCLUSIVE_CLUSTER_SET_LABEL: Final = "ExclusiveClusterSetLabel"
SELECTOR_TYPE_LABEL_SELECTOR: Final = "LabelSelector"

PRIORITIZER_MODE_ADDITIVE: Final = "Additive"
PRIORITIZER_MODE_EXACT: Final = "Exact"
SCORE_COORDINATE_BUILTIN: Final = "BuiltIn"
SCORE_COORDINATE_ADDON: Final = "AddOn"
PRIORITIZER_BALANCE: Final = "Balance"
PRIORITIZER_STEADY: Final = "Steady"
PRIORITIZER_RESOURCE_ALLOCATABLE_CPU: Final = "ResourceAllocatableCPU"
PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY: Final = "ResourceAllocatableMemory"
SORT_BY_CLUSTER_NAME: Final = "ClusterName"
SORT_BY_SCORE: Final = "Score"
TOPOLOGY_KEY_TYPE_LABEL: Final = "Label"
TOPOLOGY_KEY_TYPE_CLAIM: Final = "Claim"
SPREAD_DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SPREAD_SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
DEFAULT_SCORE_RATE_LIMIT: Final = "1m"
# Scheduler plugin names (debug output and Misconfigured messages).
PLUGIN_PREDICATE: Final = "Predicate"
PLUGIN_TAINT_TOLERATION: Final = "TaintToleration"
PLUGIN_SPREAD: Final = "Spread"

ROLLOUT_TYPE_ALL: Final = "All"
ROLLOUT_TYPE_PROGRESSIVE: Final = "Progressive"
ROLLOUT_TYPE_PROGRESSIVE_PER_GROUP: Final = "ProgressivePerGroup"

# Per-cluster rollout statuses.
ROLLOUT_STATUS_TO_APPLY: Final = "ToApply"
ROLLOUT_STATUS_PROGRESSING: Final = "Progressing"
ROLLOUT_STATUS_SUCCEEDED: Final = "Succeeded"
ROLLOUT_STATUS_FAILED: Final = "Failed"
ROLLOUT_STATUS_TIMEOUT: Final = "TimeOut"
ROLLOUT_STATUS_SKIP: Final = "Skip"
ROLLOUT_STATUSES: Final = (
    ROLLOUT_STATUS_TO_APPLY,
    ROLLOUT_STATUS_PROGRESSING,
    ROLLOUT_STATUS_SUCCEEDED,
    ROLLOUT_STATUS_FAILED,
    ROLLOUT_STATUS_TIMEOUT,
    ROLLOUT_STATUS_SKIP,
)
# Verified rollouts (OCM enhancement 231's new state; rolloutStrategy.validation / plugin): a
# cluster whose work applied and whose checks have not all passed yet. In flight, as Progressing
# (it counts toward maxConcurrency and progressDeadline bounds it). Not in ROLLOUT_STATUSES: the
# planner takes a Validating cluster as Progressing; people (status, events, metrics) see it.
ROLLOUT_STATUS_VALIDATING: Final = "Validating"

CASCADE_DELETION_BACKGROUND: Final = "Background"
CASCADE_DELETION_FOREGROUND: Final = "Foreground"
PROPAGATION_POLICY_FOREGROUND: Final = "Foreground"
PROPAGATION_POLICY_ORPHAN: Final = "Orphan"
PROPAGATION_POLICY_SELECTIVELY_ORPHAN: Final = "SelectivelyOrphan"
UPDATE_STRATEGY_UPDATE: Final = "Update"
UPDATE_STRATEGY_CREATE_ONLY: Final = "CreateOnly"
UPDATE_STRATEGY_SERVER_SIDE_APPLY: Final = "ServerSideApply"
UPDATE_STRATEGY_READ_ONLY: Final = "ReadOnly"
FEEDBACK_WELL_KNOWN_STATUS: Final = "WellKnownStatus"
FEEDBACK_JSON_PATHS: Final = "JSONPaths"
FIELD_VALUE_INTEGER: Final = "Integer"
FIELD_VALUE_STRING: Final = "String"
FIELD_VALUE_BOOLEAN: Final = "Boolean"
FIELD_VALUE_JSON_RAW: Final = "JsonRaw"
CONDITION_RULE_WELL_KNOWN: Final = "WellKnownConditions"
CONDITION_RULE_CEL: Final = "CEL"

INSTALL_STRATEGY_MANUAL: Final = "Manual"
INSTALL_STRATEGY_PLACEMENTS: Final = "Placements"

# Feature gates named in the specs.
FEATURE_MANIFESTWORK_REPLICASET: Final = "ManifestWorkReplicaSet"
FEATURE_CLEANUP_COMPLETED_MANIFESTWORK: Final = "CleanUpCompletedManifestWork"
FEATURE_RAW_FEEDBACK_JSON_STRING: Final = "RawFeedbackJsonString"

# --------------------------------------------------------------------------------------------
# Condition statuses
# --------------------------------------------------------------------------------------------
CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"
CONDITION_UNKNOWN: Final = "Unknown"

# --------------------------------------------------------------------------------------------
# ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding conditions
# --------------------------------------------------------------------------------------------
# Written by OCM's registration agent and hub controllers (the simulation in the local hub);
# hub controllers here only read Available (through the taints derived from it).
CONDITION_MANAGED_CLUSTER_AVAILABLE: Final = "ManagedClusterConditionAvailable"
CONDITION_MANAGED_CLUSTER_JOINED: Final = "ManagedClusterJoined"
# The hub accepted the cluster (spec.hubAcceptsClient), and why.
CONDITION_HUB_ACCEPTED_MANAGED_CLUSTER: Final = "HubAcceptedManagedCluster"
REASON_HUB_CLUSTER_ADMIN_ACCEPTED: Final = "HubClusterAdminAccepted"
# Joined=True: the agent registered with the hub (the reason has the condition type's spelling).
REASON_MANAGED_CLUSTER_JOINED: Final = "ManagedClusterJoined"
# Available=True: the agent reaches its cluster's API server.
REASON_MANAGED_CLUSTER_AVAILABLE: Final = "ManagedClusterAvailable"
# Available=False: the agent runs but its cluster's API server does not answer.
REASON_MANAGED_CLUSTER_KUBE_APISERVER_UNAVAILABLE: Final = "ManagedClusterKubeAPIServerUnavailable"
# Available=Unknown: the hub saw no lease renewal for LEASE_GRACE_MULTIPLIER lease durations.
REASON_MANAGED_CLUSTER_LEASE_UPDATE_STOPPED: Final = "ManagedClusterLeaseUpdateStopped"
# The agent's Lease, in the cluster's namespace on the hub.
CLUSTER_LEASE_NAME: Final = "managed-cluster-lease"
# ManagedCluster spec.leaseDurationSeconds when unset or zero.
DEFAULT_LEASE_DURATION_SECONDS: Final = 60
# A lease not renewed for this many lease durations makes the cluster Unknown.
LEASE_GRACE_MULTIPLIER: Final = 5
CONDITION_CLUSTER_SET_EMPTY: Final = "ClusterSetEmpty"
# ClusterSetEmpty=False: the set selects at least one cluster.
REASON_CLUSTERS_SELECTED: Final = "ClustersSelected"
# ClusterSetEmpty=True: the set selects no cluster.
REASON_NO_CLUSTER_MATCHED: Final = "NoClusterMatched"
CONDITION_CLUSTER_SET_BINDING_BOUND: Final = "Bound"
# Bound=True: the set named by spec.clusterSet exists.
REASON_CLUSTER_SET_BOUND: Final = "ClusterSetBound"
# Bound=False: it does not.
REASON_CLUSTER_SET_NOT_FOUND: Final = "ClusterSetNotFound"

# --------------------------------------------------------------------------------------------
# Placement conditions
# --------------------------------------------------------------------------------------------
CONDITION_PLACEMENT_MISCONFIGURED: Final = "PlacementMisconfigured"
REASON_MISCONFIGURED: Final = "Misconfigured"
REASON_SUCCEEDCONFIGURED: Final = "Succeedconfigured"  # sic: OCM's spelling
CONDITION_PLACEMENT_SATISFIED: Final = "PlacementSatisfied"
REASON_NO_MANAGED_CLUSTER_SET_BINDINGS: Final = "NoManagedClusterSetBindings"
REASON_NO_INTERSECTION: Final = "NoIntersection"
REASON_ALL_MANAGED_CLUSTER_SETS_EMPTY: Final = "AllManagedClusterSetsEmpty"
REASON_NOT_ALL_DECISIONS_SCHEDULED: Final = "NotAllDecisionsScheduled"
REASON_NO_MANAGED_CLUSTER_MATCHED: Final = "NoManagedClusterMatched"
REASON_ALL_DECISIONS_SCHEDULED: Final = "AllDecisionsScheduled"

# Placement events: (reason, action).
EVENT_DECISION_CREATE: Final = ("DecisionCreate", "DecisionCreated")
EVENT_DECISION_UPDATE: Final = ("DecisionUpdate", "DecisionUpdated")
EVENT_SCORE_UPDATE: Final = ("ScoreUpdate", "ScoreUpdated")
# Ours: how spreadPolicy distributed the selection (sent with the ScoreUpdate of a pass).
EVENT_SPREAD_UPDATE: Final = ("SpreadUpdate", "SpreadUpdated")
EVENT_DECISION_DELETE: Final = ("DecisionDelete", "DecisionDeleted")
# Ours (Warning): a part of the spec the scheduler ignores as OCM does, told once per situation.
EVENT_TOLERATION_IGNORED: Final = ("TolerationIgnored", "Scheduled")
EVENT_PRIORITIZER_IGNORED: Final = ("PrioritizerIgnored", "Scheduled")

# --------------------------------------------------------------------------------------------
# ManifestWorkReplicaSet conditions
# --------------------------------------------------------------------------------------------
CONDITION_PLACEMENT_VERIFIED: Final = "PlacementVerified"
CONDITION_PLACEMENT_ROLLED_OUT: Final = "PlacementRolledOut"
CONDITION_MANIFESTWORK_APPLIED: Final = "ManifestworkApplied"  # sic: lower-case w, as in OCM
REASON_AS_EXPECTED: Final = "AsExpected"
REASON_NOT_AS_EXPECTED: Final = "NotAsExpected"
REASON_PLACEMENT_DECISION_NOT_FOUND: Final = "PlacementDecisionNotFound"
REASON_PLACEMENT_DECISION_EMPTY: Final = "PlacementDecisionEmpty"
REASON_COMPLETE: Final = "Complete"
REASON_PROGRESSING: Final = "Progressing"
REASON_PROCESSING: Final = "Processing"
REASON_INVALID_MANIFESTWORK_NAME: Final = "InvalidManifestWorkName"
# This project's own (not OCM's) ManifestworkApplied=False reasons: why works could not be written.
# Creating a work failed because the cluster's namespace does not exist on the hub.
REASON_CLUSTER_NAMESPACE_NOT_FOUND: Final = "ClusterNamespaceNotFound"
# The API server rejected a work as invalid (422).
REASON_MANIFESTWORK_INVALID: Final = "ManifestWorkInvalid"
# The controller is not allowed to write a work (403).
REASON_MANIFESTWORK_FORBIDDEN: Final = "ManifestWorkForbidden"
# Writing a work failed for any other reason.
REASON_MANIFESTWORK_WRITE_FAILED: Final = "ManifestWorkWriteFailed"

# This project's own annotations on the ManifestWorks of a ManifestWorkReplicaSet.
# The owner's full "<namespace>.<name>", for when the owner label holds a hashed value.
ANNOTATION_MANIFESTWORK_REPLICASET: Final = "work.ocm-rollout.io/manifestworkreplicaset"
# When the controller wrote the work's current spec (the start of its revision).
ANNOTATION_TEMPLATE_APPLIED_TIME: Final = "work.ocm-rollout.io/template-applied-time"
# The rollout fence (controllers/rollout/reservations.py): on the owner of a rollout (a
# ManifestWorkReplicaSet, a ClusterManagementAddOn), the clusters a controller is about to put in
# flight, written with a resourceVersion precondition before any of them is written.
ANNOTATION_ROLLOUT_RESERVATIONS: Final = "rollout.ocm-rollout.io/reservations"

# Revision history and rollback (OCM enhancement 229, "Support Rollback for ManifestWorkReplicaSet").
# On each ManifestWork and each ControllerRevision: the hash of the template revision it carries.
LABEL_CONTROLLER_HASH: Final = "work.open-cluster-management.io/controller-hash"
CONDITION_PROGRESSING: Final = "Progressing"
REASON_NEW_REVISION_CREATED: Final = "NewRevisionCreated"
REASON_FOUND_NEW_REVISION: Final = "FoundNewRevision"
REASON_NEW_MANIFESTWORK_AVAILABLE: Final = "NewManifestWorkAvailable"
REASON_PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
REASON_ROLLOUT_ABORTED: Final = "RolloutAborted"
# PlacementRolledOut=False: the rollout stopped at maxFailures (or was aborted).
REASON_ROLLOUT_DEGRADED: Final = "RolloutDegraded"
# Ours: Progressing=Unknown while spec.paused (a ManifestWorkReplicaSet) or the paused
# annotation (a ClusterManagementAddOn) holds the rollout.
REASON_ROLLOUT_PAUSED: Final = "RolloutPaused"
FAILURE_STRATEGY_ABORT_ALL: Final = "AbortAll"
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10
# Requests a user (or `ocm-rollout rollout`) writes on the owner of a rollout; declarative, so
# they survive controller restarts:
# - abort: value = the updateRevision to abort (ignored once the template changed);
#   on a ClusterManagementAddOn: the revision of a placement's desired configurations (shown by
#   `ocm-rollout status --kind addon`); every placement rolling out that revision is aborted as by
#   failureStrategy AbortAll, for as long as the annotation names it (removing it is the retry);
# - retry: value = the status.abortedTime of the abort to undo (ignored for any later abort);
#   on a ClusterManagementAddOn: the "time" of the abort in ANNOTATION_ROLLOUT_ABORTED (RFC 3339
#   with microseconds, also in the installProgressions condition); every placement aborted at
#   that time resumes; an abort is never given the time a present retry names, so a stale retry
#   can never undo a later abort;
# - paused: "true" holds a ClusterManagementAddOn's configuration rollout (a
#   ManifestWorkReplicaSet has spec.paused): no ManagedClusterAddOn is given new desired
#   configurations (nor reverted) while it is set; ManagedClusterAddOns are still created and
#   deleted per the install strategy (a new one gets its configurations once resumed).
ANNOTATION_ROLLOUT_ABORT: Final = "rollout.ocm-rollout.io/abort"
ANNOTATION_ROLLOUT_RETRY: Final = "rollout.ocm-rollout.io/retry"
ANNOTATION_ROLLOUT_PAUSED: Final = "rollout.ocm-rollout.io/paused"
# - promoted (manual promotion, rolloutStrategy.promotion; docs/behaviour/validation.md): JSON
#   {"<placement>": {"revision": "<revision>", "groups": [<decision group index>, ...]}}, the
#   placement named as in its placementRef (a ManifestWorkReplicaSet) or "<namespace>/<name>"
#   (a ClusterManagementAddOn); revision is the one rolling out (a ManifestWorkReplicaSet's
#   status.updateRevision; an add-on placement's desired-configurations revision). A promotion
#   holds only for that revision, so a new rollout waits again.
ANNOTATION_ROLLOUT_PROMOTED: Final = "rollout.ocm-rollout.io/promoted"
# Reasons (ours) for a placement's rollout held by a check or a promotion gate, and for a
# check whose condition does not compile.
REASON_WAITING_FOR_PROMOTION: Final = "WaitingForPromotion"
REASON_VALIDATING: Final = "Validating"
REASON_CHECK_FAILED: Final = "CheckFailed"
REASON_INVALID_CHECK: Final = "InvalidCheck"
# Events of verified rollouts: Warning ValidationFailed (a cluster's checks or plugin failed it),
# Normal RolloutAwaitingPromotion (a decision group waits at a gate) and RolloutPromoted.
EVENT_VALIDATION_FAILED: Final = "ValidationFailed"
EVENT_ROLLOUT_AWAITING_PROMOTION: Final = "RolloutAwaitingPromotion"
EVENT_ROLLOUT_PROMOTED: Final = "RolloutPromoted"
# Written by the add-on manager (controllers/addon/abort.py) on a ClusterManagementAddOn, with a
# resourceVersion precondition and before any ManagedClusterAddOn is reverted: the aborted
# configuration rollouts, JSON {"<placement namespace>/<name>": {"time", "revision", "cause",
# "clusters", "failed"}}. An entry lasts until the placement's desired configurations change or
# the abort is retried.
ANNOTATION_ROLLOUT_ABORTED: Final = "rollout.ocm-rollout.io/aborted"

# This project's own Event reasons on a ManifestWorkReplicaSet.
# Normal: a pass created or updated the works of a placement's decision group.
EVENT_WAVE_STARTED: Final = "RolloutWaveStarted"
# Warning: a placement's rollout stopped at maxFailures.
EVENT_MAX_FAILURES_BREACHED: Final = "MaxFailuresBreached"
# Normal: PlacementRolledOut turned True.
EVENT_ROLLOUT_COMPLETE: Final = "RolloutComplete"
# Warning (also on a ClusterManagementAddOn): the rollout was aborted (failureStrategy AbortAll
# or on request), naming the failed clusters; Normal: an abort was retried.
EVENT_ROLLOUT_ABORTED: Final = "RolloutAborted"
EVENT_ROLLOUT_RETRIED: Final = "RolloutRetried"
# Normal: a new template revision was recorded (ControllerRevision created or reused).
EVENT_REVISION_CREATED: Final = "RevisionCreated"
# Warning (also on a ClusterManagementAddOn): a rolloutStrategy spells its type with the older key
# rolloutType; it is read as type.
EVENT_DEPRECATED_ROLLOUT_TYPE: Final = "DeprecatedRolloutType"
# Warning: works of the rollout failed to apply on their clusters (their Applied condition is False
# at their generation), naming the clusters and the agents' errors; once per (cluster, error).
EVENT_MANIFESTWORK_APPLY_FAILED: Final = "ManifestWorkApplyFailed"

# --------------------------------------------------------------------------------------------
# ManifestWork conditions (work level and per manifest)
# --------------------------------------------------------------------------------------------
WORK_CONDITION_APPLIED: Final = "Applied"
WORK_CONDITION_AVAILABLE: Final = "Available"
WORK_CONDITION_PROGRESSING: Final = "Progressing"
WORK_CONDITION_DEGRADED: Final = "Degraded"
WORK_CONDITION_COMPLETE: Final = "Complete"
WORK_CONDITION_DELETING: Final = "Deleting"
WORK_CONDITION_STATUS_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"

REASON_APPLIED_MANIFEST_WORK_COMPLETE: Final = "AppliedManifestWorkComplete"
REASON_APPLIED_MANIFEST_WORK_FAILED: Final = "AppliedManifestWorkFailed"
REASON_RESOURCES_AVAILABLE: Final = "ResourcesAvailable"
REASON_RESOURCES_NOT_AVAILABLE: Final = "ResourcesNotAvailable"
REASON_RESOURCES_STATUS_UNKNOWN: Final = "ResourcesStatusUnknown"
REASON_CONDITION_RULES_AGGREGATED: Final = "ConditionRulesAggregated"
REASON_WORK_DELETING: Final = "WorkDeleting"
# Work-level Progressing reasons defined by the API (set by OCM's tests, not by the agent).
REASON_WORK_APPLYING: Final = "Applying"
REASON_WORK_COMPLETED: Final = "Completed"
REASON_WORK_FAILED: Final = "Failed"
# Degraded=True reason OCM's tests write by hand for a failed rollout.
REASON_WORK_APPLY_FAILED: Final = "ApplyFailed"

REASON_APPLIED_MANIFEST_COMPLETE: Final = "AppliedManifestComplete"
REASON_APPLIED_MANIFEST_FAILED: Final = "AppliedManifestFailed"
REASON_APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR: Final = "AppliedManifestSSAIgnoreFieldError"
REASON_RESOURCE_AVAILABLE: Final = "ResourceAvailable"
REASON_RESOURCE_NOT_AVAILABLE: Final = "ResourceNotAvailable"
REASON_INCOMPLETE_RESOURCE_META: Final = "IncompleteResourceMeta"
REASON_FETCHING_RESOURCE_FAILED: Final = "FetchingResourceFailed"
REASON_NO_STATUS_FEEDBACK_SYNCED: Final = "NoStatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNC_FAILED: Final = "StatusFeedbackSyncFailed"
REASON_CONDITION_RULE_EVALUATED: Final = "ConditionRuleEvaluated"
REASON_CONDITION_RULE_EXPRESSION_ERROR: Final = "ConditionRuleExpressionError"
REASON_CONDITION_RULE_INTERNAL_ERROR: Final = "ConditionRuleInternalError"
REASON_CONDITION_RULE_INVALID: Final = "ConditionRuleInvalid"
# Every condition-rule reason above starts with this (how the agent tells rule conditions apart).
REASON_PREFIX_CONDITION_RULE: Final = "ConditionRule"

# --------------------------------------------------------------------------------------------
# Add-on conditions
# --------------------------------------------------------------------------------------------
ADDON_CONDITION_AVAILABLE: Final = "Available"
ADDON_CONDITION_DEGRADED: Final = "Degraded"
ADDON_CONDITION_PROGRESSING: Final = "Progressing"
ADDON_CONDITION_CONFIGURED: Final = "Configured"
ADDON_CONDITION_MANIFEST_APPLIED: Final = "ManifestApplied"
ADDON_CONDITION_HOSTING_MANIFEST_APPLIED: Final = "HostingManifestApplied"
ADDON_CONDITION_REGISTRATION_APPLIED: Final = "RegistrationApplied"

REASON_CONFIGURATIONS_CONFIGURED: Final = "ConfigurationsConfigured"
REASON_CONFIGURATIONS_NOT_CONFIGURED: Final = "ConfigurationsNotConfigured"
REASON_CONFIGURATION_UNSUPPORTED: Final = "ConfigurationUnsupported"
REASON_WAITING_FOR_MANIFEST_APPLIED: Final = "WaitingForManifestApplied"
REASON_WAITING_FOR_HOSTING_MANIFEST_APPLIED: Final = "WaitingForHostingManifestApplied"
REASON_ADDON_PROGRESSING: Final = "Progressing"
REASON_ADDON_COMPLETED: Final = "Completed"
REASON_ADDON_FAILED: Final = "Failed"
REASON_WAITING_FOR_CANARY: Final = "WaitingForCanary"  # defined by the API, never set
# Older add-on Progressing reasons, no longer produced by OCM (listed for readers of old objects).
LEGACY_ADDON_REASONS: Final = ("Installing", "InstallSucceed", "Upgrading")
# -- MCA Progressing (controllers/addon/progressing.py) ----------------------------------------
# Progressing condition messages (OCM's); the unsupported one is filled with str.format(group,
# resource), the progressing one with one of the MESSAGE_PROGRESSING_* details.
MESSAGE_CONFIGURATION_UNSUPPORTED: Final = "Configuration with gvr {}/{} is not supported for this addon"
MESSAGE_WAITING_FOR_MANIFEST_APPLIED: Final = "Waiting for ManagedClusterAddOn ManifestApplied condition"
MESSAGE_WAITING_FOR_HOSTING_MANIFEST_APPLIED: Final = (
    "Waiting for ManagedClusterAddOn HostingManifestApplied condition"
)
MESSAGE_ADDON_PROGRESSING: Final = "progressing... {}"
MESSAGE_PROGRESSING_NO_ADDON_WORKS: Final = "no addon works"
MESSAGE_PROGRESSING_CONFIGS_MISMATCH: Final = "mca and work configs mismatch"
MESSAGE_PROGRESSING_WORK_NOT_READY: Final = "work is not ready"
MESSAGE_ADDON_COMPLETED: Final = "completed with no errors."
# Name prefix of an add-on's pre-delete hook works (str.format(addon)); they are not deploy works.
ADDON_PRE_DELETE_WORK_PREFIX: Final = "addon-{}-pre-delete"
# -- end MCA Progressing -----------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# Add-on configuration rollout (controllers/addon/configs.py, configrollout.py)
# --------------------------------------------------------------------------------------------
# MCA Configured condition messages (OCM's).
MESSAGE_CONFIGURATIONS_CONFIGURED: Final = "Configurations configured"
MESSAGE_CONFIGURATIONS_NOT_CONFIGURED: Final = "Configurations updated and not configured yet"
# CMA installProgressions[].conditions[Progressing] messages (OCM's), filled with str.format:
# total, configured (progressing + done) or done, configuredTotal, failed, timeout.
MESSAGE_INSTALL_PROGRESSING: Final = (
    "selected clusters {}. configured addons {}/{} progressing..., {} failed {} timeout."
)
MESSAGE_INSTALL_COMPLETED: Final = (
    "selected clusters {}. configured addons {}/{} completed with no errors, {} failed {} timeout."
)
# This project's own installProgressions Progressing=True reasons: the placement's rollout is held
# (its clusters keep their current configuration) while the problem lasts; OCM stops the whole CMA.
# The Placement does not exist.
REASON_PLACEMENT_NOT_FOUND: Final = "PlacementNotFound"
# A PlacementDecision of the placement has no integer decision-group-index label.
REASON_INVALID_PLACEMENT_DECISIONS: Final = "InvalidPlacementDecisions"
# The placement's rolloutStrategy is invalid (unknown type, malformed duration or threshold).
REASON_INVALID_ROLLOUT_STRATEGY: Final = "InvalidRolloutStrategy"

# At most this many items in a ManifestWorkReplicaSet's spec.placementRefs and a
# ClusterManagementAddOn's spec.installStrategy.placements (OCM sets no bound). Each item's
# rolloutStrategy carries a CEL rule, and kube-apiserver refuses a CRD whose rules' estimated
# cost, times the number of objects they may run on, exceeds its budget: an unbounded list
# counts as hundreds of thousands of items.
MAX_ROLLOUT_PLACEMENTS: Final = 1000
