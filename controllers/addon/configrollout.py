"""The configuration rollout of one ClusterManagementAddOn (CMA): which ManagedClusterAddOns (MCAs)
get their desired configurations now, and the CMA's per-placement progress (docs/behaviour/addons.md 7, 8, 10, 11).

What flows through ``plan_config_rollout``: the CMA (its status already built by
``configs.cma_status_references``), its MCAs by cluster, its placements' inputs, the reservation
record on the CMA and ``now`` -> a ``ConfigRolloutPlan``: the MCA statuses to write (configuration
references and the ``Configured`` condition), the clusters those writes put in flight, the CMA's new
status (``installProgressions`` conditions, lastApplied/lastKnownGood), the reservation record the
CMA must carry before the MCA writes are sent, when to look again, and a report per placement.

Per placement the shared rollout planner (``ocm_rollout.controllers.rollout``) chooses the clusters, from the
MCAs' rollout statuses (section 7). The fence (``ocm_rollout.controllers.rollout.reservations``), by
construction: a cluster whose MCA is given a new desired configuration is first reserved on the
CMA under ``"<namespace>/<name>"`` of its placement; a reserved cluster whose MCA does not show the
desired configurations yet counts as in flight for every planner that reads the record.

Deliberate deviation from OCM: the planner is given as reported statuses only the MCAs that are
not ToApply (Progressing, Succeeded, Failed, with their times) plus a ToApply entry for each
reserved cluster not yet observed; the other ToApply MCAs are left out, so the planner appends them
after every reported cluster, in name order, like decision clusters without a status. Clusters
already in flight therefore take their batch slots before new ones, and two overlapping controller
instances can never together exceed maxConcurrency. OCM hands over every MCA sorted by name, so a
ToApply MCA sorting before an in-flight one could take its slot; the two agree whenever the rollout
list is not cut by the batch size (and always for ProgressivePerGroup and mandatory groups, whose
walk forgets reported ToApply entries anyway).

Section 7 as docs/behaviour/addons.md states it: any item not desired (or with another desiredConfig) makes an MCA
ToApply, whatever the other items say; OCM's loop decides by the first item that differs, so an
MCA whose first item is still being applied and whose second one is stale counts there as
Progressing (in flight, and never rewritten once it times out).

Failure strategy and pause (ours; ``abort``): with ``failureStrategy: AbortAll`` a maxFailures
breach aborts the placement's rollout (so does the abort annotation naming the revision of its
desired configurations). An aborted placement puts no add-on in flight; its add-ons return at once
(no strategy) to every item's ``lastKnownGoodConfig`` when each such object still has that spec hash,
and otherwise keep what they have while its condition says why they cannot be reverted. The abort
lasts until the desired configurations change, the abort is retried, or (not revertible) every
add-on succeeded after all; ``plan.aborts`` is the record the CMA must carry before the MCA writes
are sent (with the reservations). While the CMA is paused no MCA is given new desired
configurations (placements and defaults alike), reverts included; the Configured conditions and
the CMA status still follow, and the rollout continues where it stopped once resumed.

Verified rollouts (ours, docs/behaviour/validation.md): under a placement strategy with checks or a
plugin, an MCA that would be Succeeded is Validating until the verdict recorded on it says
Succeeded or Failed (``verified``): for the planner it is Progressing, so in flight, and a failed
one counts toward maxFailures. A ``promotion`` gate holds the placement's decision groups from the
first gated one not promoted (annotation ``rollout.ocm-rollout.io/promoted`` on the CMA, keyed by
``<namespace>/<name>``, for the revision of the placement's desired configurations); a held
group's MCAs are given nothing new.

Improvements over OCM: a placement whose Placement is missing, whose decisions cannot be read or
whose rolloutStrategy is invalid holds back only its own MCAs (and, for the first two, the MCAs no
readable placement selects), with a reason on its ``installProgressions`` entry, instead of
stopping the whole CMA; a placement whose decision pages are incomplete puts no new cluster in
flight and is never Completed until they are.

Pure: no I/O; ``now`` is an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_CONDITION_AVAILABLE,
    ADDON_CONDITION_CONFIGURED,
    ADDON_CONDITION_PROGRESSING,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
    CONDITION_FALSE,
    CONDITION_TRUE,
    CONDITION_UNKNOWN,
    FAILURE_STRATEGY_ABORT_ALL,
    MESSAGE_CONFIGURATIONS_CONFIGURED,
    MESSAGE_CONFIGURATIONS_NOT_CONFIGURED,
    MESSAGE_INSTALL_COMPLETED,
    MESSAGE_INSTALL_PROGRESSING,
    REASON_ADDON_COMPLETED,
    REASON_ADDON_FAILED,
    REASON_ADDON_PROGRESSING,
    REASON_CONFIGURATIONS_CONFIGURED,
    REASON_CONFIGURATIONS_NOT_CONFIGURED,
    REASON_INVALID_ROLLOUT_STRATEGY,
    REASON_ROLLOUT_ABORTED,
    REASON_ROLLOUT_PAUSED,
    ROLLOUT_STATUS_VALIDATING,
)
from ocm_rollout.controllers.addon import abort as aborting
from ocm_rollout.controllers.addon.abort import Abort, RevertTarget
from ocm_rollout.controllers.addon.configs import (
    INSTALL_PROGRESSIONS,
    AddonEntry,
    ConfigGraph,
    DesiredConfigs,
    GroupResource,
    HashOf,
    PlacementNode,
    build_graph,
    is_lifecycle_managed,
    mca_desired,
    placement_ref,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.verified import verified
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.decisions import decided_clusters
from ocm_rollout.controllers.common.wire import (
    JSON,
    annotations_of,
    as_mapping,
    as_str,
    format_time,
    mapping_at,
    parse_time,
)
from ocm_rollout.controllers.rollout.checks.promotion import (
    Promotion,
    PromotionGate,
    placement_gate,
    read_promotions,
)
from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    RolloutInputError,
    RolloutStatus,
)
from ocm_rollout.controllers.rollout.planner import plan_rollout
from ocm_rollout.controllers.rollout.reservations import MAX_NEW_PER_PASS, Budget, Reservations
from ocm_rollout.controllers.rollout.strategy import decode_strategy
from ocm_rollout.controllers.rollout.timefmt import to_ns
from ocm_rollout.controllers.rollout.verification import strategy_verifies

TO_APPLY = RolloutStatus.TO_APPLY
PROGRESSING = RolloutStatus.PROGRESSING
SUCCEEDED = RolloutStatus.SUCCEEDED
FAILED = RolloutStatus.FAILED
TIME_OUT = RolloutStatus.TIME_OUT

# ------------------------------------------------------------------------------------------
# Reading an MCA (7)
# ------------------------------------------------------------------------------------------

_LTT_CACHE: dict[str, int | None] = {}
_LTT_CACHE_LIMIT = 200_000


def _ltt_ns(value: Any) -> int | None:
    """Nanoseconds of an RFC 3339 lastTransitionTime (memoised: the same texts recur every pass)."""
    if not isinstance(value, str):
        return None
    cached = _LTT_CACHE.get(value, -1)
    if cached != -1:
        return cached
    moment = parse_time(value)
    result = None if moment is None else to_ns(moment)
    if len(_LTT_CACHE) >= _LTT_CACHE_LIMIT:
        _LTT_CACHE.clear()
    _LTT_CACHE[value] = result
    return result


_EMPTY: dict[str, Any] = {}
# What an MCA's Configured condition already says (so that unchanged ones cost no status copy).
_SAYS_CONFIGURED = 1
_SAYS_NOT_CONFIGURED = 0
_SAYS_OTHER = -1


def _said(cond: Mapping[str, Any] | None) -> str:
    if cond is None:
        return ""
    message = cond.get("message")
    reason = cond.get("reason")
    return message if isinstance(message, str) and message else (reason if isinstance(reason, str) else "")


def progressing_message(mca: Mapping[str, Any]) -> str:
    """Why the MCA is not done: the message (else the reason) of its ``Progressing`` condition,
    followed by what its agent reports (``Available`` when not True: the real failure, e.g. the
    apply error of the add-on's ManifestWork)."""
    status = as_mapping(mca.get("status"))
    conditions = status.get("conditions")
    text = _said(find_condition(conditions, ADDON_CONDITION_PROGRESSING))
    available = find_condition(conditions, ADDON_CONDITION_AVAILABLE)
    if available is not None and available.get("status") != "True":
        health = _said(available)
        if health and health not in text:
            text = f"{text}; {ADDON_CONDITION_AVAILABLE} {available.get('status')}: {health}" if text else health
    return text


def _judge(mca: Mapping[str, Any], desired: DesiredConfigs) -> tuple[RolloutStatus, int | None, int]:
    """Section 7 for one MCA: (rollout status, its time in ns or None, what its Configured
    condition says). The hot loop of a pass: one scan of the conditions, plain type checks."""
    status = mca.get("status")
    if type(status) is not dict:
        status = _EMPTY
    progressing = None
    says = _SAYS_OTHER
    conditions = status.get("conditions")
    if type(conditions) is list:
        configured_seen = False
        for cond in conditions:
            if type(cond) is not dict:
                continue
            kind = cond.get("type")
            if kind == ADDON_CONDITION_PROGRESSING:
                if progressing is None:
                    progressing = cond
            elif kind == ADDON_CONDITION_CONFIGURED and not configured_seen:
                configured_seen = True
                if not cond.get("observedGeneration") and cond.get("lastTransitionTime"):
                    value = cond.get("status")
                    if (
                        value == CONDITION_TRUE
                        and cond.get("reason") == REASON_CONFIGURATIONS_CONFIGURED
                        and cond.get("message") == MESSAGE_CONFIGURATIONS_CONFIGURED
                    ):
                        says = _SAYS_CONFIGURED
                    elif (
                        value == CONDITION_FALSE
                        and cond.get("reason") == REASON_CONFIGURATIONS_NOT_CONFIGURED
                        and cond.get("message") == MESSAGE_CONFIGURATIONS_NOT_CONFIGURED
                    ):
                        says = _SAYS_NOT_CONFIGURED

    refs = status.get("configReferences")
    if type(refs) is not list:
        refs = ()
    if len(refs) != len(desired.configs):
        return TO_APPLY, None, says
    index = desired.index
    pending = False
    for item in refs:
        if type(item) is not dict:
            return TO_APPLY, None, says
        wanted = item.get("desiredConfig")
        if type(wanted) is not dict:
            return TO_APPLY, None, says
        namespace = wanted.get("namespace") or ""
        name = wanted.get("name") or ""
        spec_hash = wanted.get("specHash") or ""
        try:
            expected = index.get((item.get("group") or "", item.get("resource") or "", namespace, name))
        except TypeError:  # an unhashable value where a string belongs
            return TO_APPLY, None, says
        if expected is None or expected != spec_hash:
            return TO_APPLY, None, says
        if not pending:
            applied = item.get("lastAppliedConfig")
            pending = (
                type(applied) is not dict
                or (applied.get("specHash") or "") != spec_hash
                or (applied.get("name") or "") != name
                or (applied.get("namespace") or "") != namespace
            )
    if progressing is None:
        return (PROGRESSING if pending else SUCCEEDED), None, says
    reason = progressing.get("reason")
    if pending:
        if reason == REASON_ADDON_FAILED:
            return FAILED, _ltt_ns(progressing.get("lastTransitionTime")), says
        if reason == REASON_ADDON_PROGRESSING:
            return PROGRESSING, _ltt_ns(progressing.get("lastTransitionTime")), says
        return PROGRESSING, None, says
    if reason == REASON_ADDON_COMPLETED:
        return SUCCEEDED, _ltt_ns(progressing.get("lastTransitionTime")), says
    return SUCCEEDED, None, says


def addon_rollout_status(mca: Mapping[str, Any], desired: DesiredConfigs) -> tuple[RolloutStatus, int | None]:
    """Section 7: the MCA's rollout status against ``desired`` and its time (ns), if any.

    ToApply when the status lists another number of configurations, or one that is not desired
    or with another desiredConfig; else Progressing/Failed (by the Progressing condition's reason:
    Failed -> Failed, Progressing -> Progressing with its transition time, anything else ->
    Progressing without a time) while some lastAppliedConfig differs from its desiredConfig; else
    Succeeded (with the transition time only when the reason is Completed).
    """
    status, ltt, _ = _judge(mca, desired)
    return status, ltt


# ------------------------------------------------------------------------------------------
# Writing an MCA (8)
# ------------------------------------------------------------------------------------------


def set_condition(
    conditions: Any, type_: str, status: str, reason: str, message: str, now_text: str
) -> list[Any] | None:
    """``set_status_condition`` on a copy of ``conditions`` (a stored list is never changed): the
    transition time moves only when the status flips; reason and message are replaced;
    observedGeneration is dropped. The new list, or None when nothing changes."""
    updated = list(conditions) if type(conditions) is list else []
    if not set_status_condition(updated, type_, status, reason, message, now_text):
        return None
    return updated


def _item_key(item: Mapping[str, Any]) -> tuple[str, str, str, str, str] | None:
    wanted = item.get("desiredConfig")
    if type(wanted) is not dict and not isinstance(wanted, Mapping):
        return None
    # (_text inlined: this runs for every item of every MCA in the rollout list of a pass)
    group, resource = item.get("group"), item.get("resource")
    namespace, name, spec_hash = wanted.get("namespace"), wanted.get("name"), wanted.get("specHash")
    return (
        group if isinstance(group, str) else "",
        resource if isinstance(resource, str) else "",
        namespace if isinstance(namespace, str) else "",
        name if isinstance(name, str) else "",
        spec_hash if isinstance(spec_hash, str) else "",
    )


def merged_config_references(old: Any, desired: DesiredConfigs) -> list[JSON]:
    """8.1: the MCA's ``status.configReferences`` given ``desired``: old items still desired are
    kept (with their lastAppliedConfig and lastObservedGeneration) and get the desired
    desiredConfig; new ones are appended (lastObservedGeneration 0); the rest dropped; ordered by
    group, then resource. v1alpha1 items also carry the top-level name/namespace."""
    index = desired.index
    kept: dict[GroupResource, list[JSON]] = {}
    for item in old if isinstance(old, list) else ():
        if not isinstance(item, Mapping):
            continue
        key = _item_key(item)
        if key is not None and key[:4] in index:
            kept.setdefault((key[0], key[1]), []).append(dict(item))
    for config in desired.configs:
        items = kept.setdefault(config.group_resource, [])
        wire = config.spec_hash_wire()
        for item in items:
            ref = item["desiredConfig"]
            if as_str(ref.get("namespace")) == config.namespace and as_str(ref.get("name")) == config.name:
                item["desiredConfig"] = wire
                break
        else:
            item = {"group": config.group, "resource": config.resource, "lastObservedGeneration": 0, "desiredConfig": wire}
            items.append(item)
        item["name"] = config.name
        if config.namespace:
            item["namespace"] = config.namespace
        else:
            item.pop("namespace", None)
    return [item for gr in sorted(kept) for item in kept[gr]]


_NO_ITEM = ("", "", "", "", "")


def _item_keys(refs: Any) -> list[tuple[str, str, str, str, str] | None]:
    return [
        _item_key(i) if type(i) is dict or isinstance(i, Mapping) else None
        for i in (refs if isinstance(refs, list) else ())
    ]


def _signature(refs: Any) -> list[tuple[str, str, str, str, str]]:
    """The desired configurations an MCA status shows (what puts it in flight when it changes)."""
    return sorted(k if k is not None else _NO_ITEM for k in _item_keys(refs))


def _widens(old: Any, desired: DesiredConfigs) -> bool:
    """``_signature(old) != _signature(merged_config_references(old, desired))``: whether writing
    the merged references changes the desired configurations the status shows. The merged list
    is built only when old items repeat a desired (group, resource, namespace, name); otherwise
    it holds exactly one item per desired configuration, with its hash, so its signature is
    that of ``desired`` (a pass over 10,000 MCAs needing a new configuration skips building
    the references of those it defers)."""
    configs = desired.configs
    if type(old) is list and len(old) == 1 and len(configs) == 1:  # the usual case, without lists
        item = old[0]
        key = _item_key(item) if type(item) is dict or isinstance(item, Mapping) else None
        config = configs[0]
        return (key or _NO_ITEM) != (config.group, config.resource, config.namespace, config.name, config.spec_hash)
    keys = _item_keys(old)
    if len(keys) > 1:
        index = desired.index
        kept = [k[:4] for k in keys if k is not None and k[:4] in index]
        if len(set(kept)) != len(kept):
            return _signature(old) != _signature(merged_config_references(old, desired))
    if len(keys) != len(configs):
        return True
    shown = sorted(k if k is not None else _NO_ITEM for k in keys)
    return shown != sorted((c.group, c.resource, c.namespace, c.name, c.spec_hash) for c in configs)


def _new_status(
    mca: Mapping[str, Any], refs: list[JSON] | None, configured: bool, now_text: str
) -> JSON | None:
    """The MCA's complete new status with ``refs`` (None: unchanged) and the Configured condition;
    None when nothing changes."""
    old = as_mapping(mca.get("status"))
    if configured:
        conditions = set_condition(
            old.get("conditions"), ADDON_CONDITION_CONFIGURED, CONDITION_TRUE,
            REASON_CONFIGURATIONS_CONFIGURED, MESSAGE_CONFIGURATIONS_CONFIGURED, now_text,
        )
    else:
        conditions = set_condition(
            old.get("conditions"), ADDON_CONDITION_CONFIGURED, CONDITION_FALSE,
            REASON_CONFIGURATIONS_NOT_CONFIGURED, MESSAGE_CONFIGURATIONS_NOT_CONFIGURED, now_text,
        )
    old_refs = old.get("configReferences")
    refs_changed = refs is not None and refs != (old_refs if isinstance(old_refs, list) else [])
    if conditions is None and not refs_changed:
        return None
    status = dict(old)
    if refs_changed:
        status["configReferences"] = refs
    if conditions is not None:
        status["conditions"] = conditions
    return status


# ------------------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------------------


@dataclass
class NodeReport:
    """What one pass found and decided for one placement (or, with empty namespace and name, for
    the MCAs configured by the defaults)."""

    namespace: str
    name: str
    strategy_type: str = ""
    #: The placement's rollout is held (its MCAs are not written): why, and the condition reason.
    error: str | None = None
    error_reason: str | None = None
    #: Why its decisions are incomplete (no new clusters in flight, never Completed), or None.
    unready: str | None = None
    #: Clusters selected by the placement, and those it configures (not taken by a later one).
    total: int = 0
    configured_total: int = 0
    configured: frozenset[str] = frozenset()
    groups: tuple[DecisionGroup, ...] = ()
    #: Rollout status of each MCA this node configures (TimeOut for the timed-out ones).
    statuses: dict[str, str] = field(default_factory=dict)
    #: Failed and timed-out clusters -> the message of their MCA's Progressing condition.
    messages: dict[str, str] = field(default_factory=dict)
    rollout: frozenset[str] = frozenset()
    timed_out: frozenset[str] = frozenset()
    breach: bool = False
    #: Section 10 counts.
    progressing: int = 0
    done: int = 0
    failed: int = 0
    timeout: int = 0
    completed: bool = False
    #: Clusters whose planned write gives them a new desired configuration (puts them in flight).
    widening: frozenset[str] = frozenset()
    #: Widening writes left for a later pass (over the per-pass reservation limit).
    deferred: int = 0
    #: Reservations of this placement after the pass.
    reserved: frozenset[str] = frozenset()
    recheck_after: float | None = None
    #: ``abort.revision`` of the placement's desired configurations.
    revision: str = ""
    #: The CMA is paused: no MCA of this node is given new desired configurations.
    paused: bool = False
    #: The placement's rollout is aborted (after this pass), and whether this pass aborted it.
    aborted: Abort | None = None
    new_abort: bool = False
    #: The abort this pass ended on request (retry annotation, abort annotation removed).
    retried: Abort | None = None
    #: What an aborted placement returns to (or why it cannot).
    revert: RevertTarget | None = None
    #: Clusters whose planned write returns their MCA to the last known good configurations.
    reverted: frozenset[str] = frozenset()
    #: MCAs of an aborted, revertible placement that have the last known good configurations.
    on_target: int = 0
    #: The failed and timed-out clusters (status, message) when the pass found it aborted.
    failing: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Verified rollouts (docs/behaviour/validation.md): the strategy has checks or a plugin; the
    #: MCAs that applied and are Validating (Progressing for the planner) -> what their checks say.
    verifies: bool = False
    validating: dict[str, str] = field(default_factory=dict)
    #: The manual promotion gate of the rollout (None: no gate), and what is wrong with the
    #: promotions annotation on the CMA (None: nothing).
    promotion: PromotionGate | None = None
    promotion_problem: str | None = None
    _groups_of: dict[str, tuple[str, int]] | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_defaults(self) -> bool:
        return not self.namespace and not self.name

    def group_of(self, cluster: str) -> tuple[str, int] | None:
        """(group name, group index) of a decided cluster."""
        if self._groups_of is None:
            self._groups_of = decided_clusters(self.groups)
        return self._groups_of.get(cluster)

    def status_counts(self) -> dict[str, int]:
        """How many clusters this node configures are in each rollout status (those without an
        MCA count as ToApply); for metrics."""
        counts: dict[str, int] = {}
        for cluster, status in self.statuses.items():
            key = ROLLOUT_STATUS_VALIDATING if status is PROGRESSING and cluster in self.validating else str(status)
            counts[key] = counts.get(key, 0) + 1
        missing = sum(1 for c in self.configured if c not in self.statuses)
        if missing:
            counts[TO_APPLY.value] = counts.get(TO_APPLY.value, 0) + missing
        return counts

    def failures(self) -> dict[str, tuple[str, str]]:
        """Failed and timed-out clusters -> (status, Progressing message)."""
        return {
            c: (s, self.messages.get(c, ""))
            for c, s in self.statuses.items()
            if s in (FAILED.value, TIME_OUT.value)
        }


@dataclass
class ConfigRolloutPlan:
    """One pass of the configuration rollout of a CMA."""

    #: cluster -> the MCA's complete new status (only MCAs whose status changes).
    mca_status: dict[str, JSON] = field(default_factory=dict)
    #: Clusters whose write gives the MCA a new desired configuration (puts it in flight).
    widening: frozenset[str] = frozenset()
    #: The CMA's new status (installProgressions conditions, lastApplied/lastKnownGood).
    cma_status: JSON = field(default_factory=dict)
    #: The reservation record the CMA must carry before the MCA writes are sent.
    reservations: Reservations = field(default_factory=Reservations)
    #: Seconds until a placement must be looked at again (the nearest recheck), or None.
    recheck_after: float | None = None
    #: Widening writes left for the next pass.
    deferred: int = 0
    #: One report per placement node, in graph order.
    nodes: list[NodeReport] = field(default_factory=list)
    #: The MCAs configured by the defaults (None for a self-managed CMA).
    defaults: NodeReport | None = None
    #: False for a self-managed CMA (nothing is planned).
    managed: bool = True
    #: The abort record as read from the CMA and as it must be before the MCA writes are sent.
    aborts_read: dict[str, Abort] = field(default_factory=dict)
    aborts: dict[str, Abort] = field(default_factory=dict)
    #: Why the record on the CMA was ignored (damaged), or None.
    abort_record_error: str | None = None
    #: The CMA carries the paused annotation.
    paused: bool = False

    @property
    def aborts_changed(self) -> bool:
        return self.aborts != self.aborts_read

    @property
    def new_aborts(self) -> bool:
        """Does this pass abort a placement's rollout?"""
        return any(n.new_abort for n in self.nodes)



def _inherits(entry: AddonEntry, node_desired: DesiredConfigs) -> bool:
    """OCM's desiredConfigsEqual: the MCA's configurations equal the placement's, except the
    (group, resource) types its ``spec.configs`` override, which need only the same count of
    items as the override lists (duplicates included)."""
    if not entry.overrides:
        return entry.desired is node_desired or entry.desired == node_desired
    own = entry.desired.by_group
    expected = set(node_desired.by_group) | set(entry.overrides)
    if len(own) != len(expected):
        return False
    for gr in expected:
        items = own.get(gr)
        if items is None:
            return False
        count = entry.overrides.get(gr)
        if count is not None:
            if len(items) != count:
                return False
        elif items != node_desired.by_group[gr]:
            return False
    return True


Judged = tuple[RolloutStatus, int | None, int]
#: Section 7 for the MCA of a cluster against its desired configurations: ``(cluster, mca,
#: desired) -> _judge(mca, desired)``, derived afresh (``judge_direct``) or remembered between
#: passes (``judge_memo.JudgeMemo``), always the same answer.
Judge = Callable[[str, Mapping[str, Any], DesiredConfigs], Judged]


def judge_direct(_cluster: str, mca: Mapping[str, Any], desired: DesiredConfigs) -> Judged:
    """``Judge`` without memory: the reference every memo is held to."""
    return _judge(mca, desired)


@dataclass
class _Pass:
    now: datetime
    now_text: str
    mcas: Mapping[str, Any]
    budget: Budget
    mca_status: dict[str, JSON] = field(default_factory=dict)
    widening: set[str] = field(default_factory=set)
    paused: bool = False
    aborts: Mapping[str, Abort] = field(default_factory=dict)
    abort_request: str = ""
    retry: str = ""
    hash_of: HashOf | None = None
    known: Mapping[tuple[str, str, str, str], str] = field(default_factory=dict)
    defaults: DesiredConfigs = field(default_factory=DesiredConfigs)
    #: The promotions annotation on the CMA, by placement ``<namespace>/<name>``, and what is wrong with it.
    promotions: Mapping[str, Promotion] = field(default_factory=dict)
    promotions_problem: str | None = None
    judge: Judge = judge_direct

    def configured(self, entry: AddonEntry, says: int, configured: bool) -> None:
        """Set the MCA's Configured condition (8.2, 8.3) unless it already says so."""
        if configured:
            if says == _SAYS_CONFIGURED:
                return
            value, reason, message = CONDITION_TRUE, REASON_CONFIGURATIONS_CONFIGURED, MESSAGE_CONFIGURATIONS_CONFIGURED
        else:
            if says == _SAYS_NOT_CONFIGURED:
                return
            value, reason, message = CONDITION_FALSE, REASON_CONFIGURATIONS_NOT_CONFIGURED, MESSAGE_CONFIGURATIONS_NOT_CONFIGURED
        old = entry.mca.get("status")
        old = old if type(old) is dict else _EMPTY
        conditions = set_condition(old.get("conditions"), ADDON_CONDITION_CONFIGURED, value, reason, message, self.now_text)
        if conditions is not None:
            status = dict(old)
            status["conditions"] = conditions
            self.mca_status[entry.cluster] = status

    def configure(self, entry: AddonEntry, refs: list[JSON]) -> None:
        """Give the MCA ``refs`` and Configured True (8.1)."""
        status = _new_status(entry.mca, refs, True, self.now_text)
        if status is not None:
            self.mca_status[entry.cluster] = status


def _judge_all(run: _Pass, children: Mapping[str, AddonEntry]) -> dict[str, Judged]:
    judge = run.judge
    return {cluster: judge(cluster, entry.mca, entry.desired) for cluster, entry in children.items()}


def _failure_messages(children: Mapping[str, AddonEntry], statuses: Mapping[str, str], among: Iterable[str] | None = None) -> dict[str, str]:
    """Failed and timed-out clusters (of ``among``, default all) -> their Progressing message."""
    clusters = statuses if among is None else among
    return {
        c: progressing_message(children[c].mca)
        for c in clusters
        if (statuses.get(c) is FAILED or statuses.get(c) is TIME_OUT) and c in children
    }


def _plan_defaults(run: _Pass, graph: ConfigGraph) -> NodeReport:
    """The defaults node: every MCA not Succeeded is written at once (no strategy, no fence)."""
    node = graph.defaults
    found = _judge_all(run, node.children)
    report = NodeReport("", "", error=node.held_reason if node.held else None)
    report.statuses = {c: j[0] for c, j in found.items()}
    report.configured = frozenset(node.children)
    report.total = report.configured_total = len(node.children)
    report.messages = _failure_messages(node.children, report.statuses)
    report.paused = run.paused
    report.done = sum(1 for j in found.values() if j[0] is SUCCEEDED)
    report.failed = sum(1 for j in found.values() if j[0] is FAILED)
    report.rollout = frozenset(c for c, j in found.items() if j[0] is not SUCCEEDED)
    report.progressing = len(report.rollout)
    report.completed = report.done == report.total
    if node.held:
        return report
    widening = set()
    for cluster in sorted(node.children):
        entry = node.children[cluster]
        status, _, says = found[cluster]
        if status is SUCCEEDED:
            run.configured(entry, says, True)
            continue
        old = as_mapping(entry.mca.get("status")).get("configReferences")
        if status is TO_APPLY and _widens(old, entry.desired):
            if run.paused:
                run.configured(entry, says, False)
                continue
            widening.add(cluster)
        run.configure(entry, merged_config_references(old, entry.desired))
    report.widening = frozenset(widening)
    run.widening.update(widening)
    return report


def _verified_messages(messages: dict[str, str], statuses: Mapping[str, str], shown: Mapping[str, str]) -> dict[str, str]:
    """``messages`` with what the validation says of the failed and timed-out MCAs it judged
    (a failed check, a cluster still validating at its deadline) instead of their Progressing text."""
    for cluster, text in shown.items():
        if cluster in messages or statuses.get(cluster) in (FAILED, TIME_OUT):
            messages[cluster] = text
    return messages


def _kept_reservations(
    node: PlacementNode, reserved: Iterable[str], found: Mapping[str, Judged], mcas: Mapping[str, Any]
) -> set[str]:
    """Reserved clusters still in flight for this placement: still selected, and their MCA (if
    any) is this placement's and does not show the desired configurations yet."""
    kept = set()
    for cluster in reserved:
        if cluster not in node.clusters:
            continue
        if cluster in node.children:
            if found[cluster][0] is TO_APPLY:
                kept.add(cluster)
        elif cluster not in mcas:
            kept.add(cluster)
    return kept


def _plan_placement(run: _Pass, node: PlacementNode, reserved: frozenset[str]) -> NodeReport:
    children = node.children
    found: dict[str, Judged] = {}
    statuses: dict[str, str] = {}
    existing: list[ClusterRolloutStatus] = []
    failing: list[str] = []
    verifies = strategy_verifies(node.strategy)
    judge = run.judge
    shown: dict[str, str] = {}
    validating: set[str] = set()
    for cluster, entry in children.items():
        judged = found[cluster] = judge(cluster, entry.mca, entry.desired)
        if verifies and judged[0] is SUCCEEDED:
            # An applied MCA validates first (docs/behaviour/validation.md): in flight until its verdict.
            check = verified(entry.mca, entry.desired, judged[1])
            judged = found[cluster] = (check.status, check.ltt_ns, judged[2])
            shown[cluster] = check.reason
            if check.validating:
                validating.add(cluster)
        status = statuses[cluster] = judged[0]
        if status is not TO_APPLY:
            existing.append(ClusterRolloutStatus(cluster, status, judged[1]))
            if status is FAILED:
                failing.append(cluster)
    report = NodeReport(
        node.namespace,
        node.name,
        strategy_type=node.strategy_type,
        error=node.error,
        error_reason=node.error_reason,
        unready=node.unready,
        total=len(node.clusters),
        configured_total=len(node.configured),
        configured=node.configured,
        groups=node.groups,
        statuses=statuses,
        reserved=reserved,
        verifies=verifies,
    )
    report.validating = {c: shown[c] for c in sorted(validating)}
    if node.error is not None:
        report.messages = _verified_messages(_failure_messages(children, statuses), statuses, shown)
        return report

    kept = _kept_reservations(node, reserved, found, run.mcas)
    existing.extend(ClusterRolloutStatus(c, TO_APPLY, None) for c in sorted(kept))
    # (Order is free: the planner walks reported clusters in name order itself.)
    try:
        strategy = decode_strategy(node.strategy, node.strategy_path)
        held: frozenset[GroupKey] = frozenset()
        raw_promotion = node.strategy.get("promotion") if isinstance(node.strategy, Mapping) else None
        if raw_promotion is not None:
            report.promotion = placement_gate(
                raw_promotion, node.groups, strategy.mandatory_decision_groups, run.promotions, node.key,
                aborting.revision(node.desired),
            )
            report.promotion_problem = run.promotions_problem
            if report.promotion is not None:
                held = frozenset(report.promotion.held)
        result = plan_rollout(strategy, node.groups, existing, run.now, field_path=node.strategy_path, held=held)
    except RolloutInputError as exc:
        report.error_reason = REASON_INVALID_ROLLOUT_STRATEGY
        report.error = (
            f"the rollout strategy of placement {node.key} is invalid ({exc}): the add-ons of its clusters "
            f"keep their current configuration until it is fixed"
        )
        report.messages = _verified_messages(_failure_messages(children, statuses), statuses, shown)
        return report

    rollout = frozenset(e.cluster_name for e in result.clusters_to_rollout)
    timed_out = frozenset(e.cluster_name for e in result.clusters_timeout)
    report.rollout, report.timed_out = rollout, timed_out
    report.breach = result.max_failure_breach
    report.recheck_after = result.recheck_after_seconds
    for cluster in timed_out:
        if cluster in statuses:
            statuses[cluster] = TIME_OUT

    # Section 10 counts (statuses before this pass's writes) and the Configured conditions of
    # MCAs outside the rollout list (8.2, 8.3; Progressing/Failed ones are left alone, 8.4).
    progressing = done = failed = 0
    node_desired = node.desired
    marks: list[tuple[AddonEntry, int, bool]] = []
    for cluster, (status, _, says) in found.items():
        if cluster in rollout:
            progressing += 1
        elif status is SUCCEEDED:
            entry = children[cluster]
            if entry.desired is node_desired or _inherits(entry, node_desired):
                done += 1
            if says != _SAYS_CONFIGURED:
                marks.append((entry, says, True))
        elif status is FAILED:
            if _inherits(children[cluster], node_desired):
                failed += 1
        elif status is TO_APPLY and says != _SAYS_NOT_CONFIGURED:
            marks.append((children[cluster], says, False))
    report.progressing, report.done, report.failed, report.timeout = progressing, done, failed, len(timed_out)
    configured_total = report.configured_total
    report.completed = node.unready is None and not (
        (configured_total == 0 and done == 0) or done != configured_total
    )
    report.messages = _verified_messages(
        _failure_messages(children, statuses, [*failing, *timed_out]), statuses, shown
    )
    report.paused = run.paused

    record = _abort_decision(run, node, report)
    if record is not None:
        return _plan_aborted(run, node, report, record, marks)
    for entry, says, value in marks:
        run.configured(entry, says, value)

    # 8.1: the rollout list, in cluster-name order. A write giving an MCA a new desired
    # configuration puts it in flight: it needs a reservation (new ones within the budget) and
    # complete decisions; one that cannot be sent leaves the MCA ToApply (Configured False).
    # An MCA past the budget is not written at all: the next pass, at once, gives it its
    # configurations (a Configured False now would be one more write of the MCA, and one more
    # pass of its own, per MCA of a wide rollout, only to be set True seconds later).
    widening: set[str] = set()
    deferred = 0
    for cluster in sorted(c for c in rollout if c in children):
        entry = children[cluster]
        status, _, says = found[cluster]
        old = as_mapping(entry.mca.get("status")).get("configReferences")
        if status is TO_APPLY and _widens(old, entry.desired):
            if node.unready is not None or run.paused:
                run.configured(entry, says, False)
                continue
            if cluster not in kept and not run.budget.take(cluster):
                deferred += 1
                continue
            widening.add(cluster)
        run.configure(entry, merged_config_references(old, entry.desired))
    report.widening = frozenset(widening)
    report.deferred = deferred
    report.reserved = frozenset(kept | widening)
    run.widening.update(widening)
    return report


# ------------------------------------------------------------------------------------------
# Aborted rollouts (failureStrategy AbortAll, the abort and retry annotations)
# ------------------------------------------------------------------------------------------


def _abort_decision(run: _Pass, node: PlacementNode, report: NodeReport) -> Abort | None:
    """The placement's abort after this pass (None: not aborted). A recorded abort ends when the
    desired configurations change, on request (retry annotation naming its time; for a requested
    abort, the abort annotation no longer naming the revision), or when the rollout completed
    after all; a new one starts at a maxFailures breach under AbortAll, or on request."""
    current = report.revision = aborting.revision(node.desired)
    record = run.aborts.get(node.key)
    if record is not None:
        if record.revision != current:
            record = None
        elif record.cause == aborting.CAUSE_REQUESTED:
            if run.abort_request != current:
                report.retried, record = record, None
        elif run.retry == record.time:
            report.retried, record = record, None
    if report.completed:
        return None  # every add-on succeeded with the desired configurations: nothing to abort
    if record is None:
        cause = None
        if node.failure_strategy == FAILURE_STRATEGY_ABORT_ALL and report.breach:
            cause = aborting.CAUSE_MAX_FAILURES
        elif run.abort_request and run.abort_request == current:
            cause = aborting.CAUSE_REQUESTED
        if cause is not None:
            time = aborting.abort_time(run.now, run.retry)
            record = aborting.new_abort(time, current, cause, list(report.failures()))
            report.new_abort = True
    return record


def _plan_aborted(
    run: _Pass,
    node: PlacementNode,
    report: NodeReport,
    record: Abort,
    marks: Iterable[tuple[AddonEntry, int, bool]],
) -> NodeReport:
    """An aborted placement: nothing goes in flight with the desired configurations; every MCA
    returns at once to the last known good ones when they still exist, else keeps what it has."""
    report.aborted = record
    report.failing = report.failures()
    report.reserved = frozenset()
    report.recheck_after = None
    report.completed = False
    target = report.revert = aborting.revert_target(
        run.defaults, node.progression, run.hash_of, run.known, strict=run.hash_of is not None
    )
    if target.desired is None:
        for entry, says, value in marks:
            run.configured(entry, says, value)
        return report
    statuses: dict[str, str] = {}
    reverted: set[str] = set()
    on_target = 0
    for cluster in sorted(node.children):
        entry = node.children[cluster]
        want = target.desired if not entry.overrides else mca_desired(entry.mca, target.desired)
        status, _, says = _judge(entry.mca, want)
        statuses[cluster] = status
        if status is SUCCEEDED:
            on_target += 1
            run.configured(entry, says, True)
            continue
        old = as_mapping(entry.mca.get("status")).get("configReferences")
        widens = status is TO_APPLY and _widens(old, want)
        if run.paused:
            if widens:
                run.configured(entry, says, False)
            continue
        if widens:
            reverted.add(cluster)
        run.configure(entry, merged_config_references(old, want))
    report.statuses = statuses
    report.messages = {}
    report.reverted = frozenset(reverted)
    report.on_target = on_target
    return report


def _aborted_message(report: NodeReport) -> str:
    record = report.aborted
    target = report.revert
    assert record is not None and target is not None
    rolled = aborting.configs_text(target.changed) if target.changed else "the desired configurations"
    if record.cause == aborting.CAUSE_MAX_FAILURES:
        names = ", ".join(record.clusters)
        if record.failed > len(record.clusters):
            names += f" and {record.failed - len(record.clusters)} more"
        cause = f"maxFailures breached by {record.failed} failed or timed-out add-on(s) ({names})"
        resume = f"the abort is retried (annotation {ANNOTATION_ROLLOUT_RETRY}={record.time})"
    else:
        cause = f"requested (annotation {ANNOTATION_ROLLOUT_ABORT}={record.revision})"
        resume = f"annotation {ANNOTATION_ROLLOUT_ABORT} is removed"
    if target.desired is not None:
        held = (
            f" (paused: the add-ons are returned once annotation {ANNOTATION_ROLLOUT_PAUSED} is removed)"
            if report.paused else ""
        )
        outcome = (
            f"The add-ons return to the last known good configuration {aborting.configs_text(target.good)}: "
            f"{report.on_target}/{report.configured_total} have it{held}."
        )
    else:
        outcome = f"It cannot be reverted: {target.blocked}; the add-ons keep their configurations."
    return (
        f"Rollout of {rolled} aborted at {record.time}: {cause}. {outcome} No other add-on is given them "
        f"until the configurations change or {resume}."
    )


# ------------------------------------------------------------------------------------------
# The CMA's installProgressions (10)
# ------------------------------------------------------------------------------------------


def _progression_condition(report: NodeReport) -> tuple[str, str, str]:
    """(status, reason, message) of an installProgressions entry's Progressing condition."""
    if report.error is not None:
        return CONDITION_TRUE, report.error_reason or REASON_ADDON_PROGRESSING, report.error
    if report.aborted is not None:
        return CONDITION_FALSE, REASON_ROLLOUT_ABORTED, _aborted_message(report)
    if report.completed:
        return (
            CONDITION_FALSE,
            REASON_ADDON_COMPLETED,
            MESSAGE_INSTALL_COMPLETED.format(
                report.total, report.done, report.configured_total, report.failed, report.timeout
            ),
        )
    message = MESSAGE_INSTALL_PROGRESSING.format(
        report.total, report.progressing + report.done, report.configured_total, report.failed, report.timeout
    )
    if report.unready is not None:
        message += f" Waiting for complete decisions: {report.unready}; no new clusters are configured meanwhile."
    if report.paused:
        return (
            CONDITION_UNKNOWN,
            REASON_ROLLOUT_PAUSED,
            f"Rollout paused (annotation {ANNOTATION_ROLLOUT_PAUSED}=true): no add-on is given new "
            f"configurations until it is removed. {message}",
        )
    return CONDITION_TRUE, REASON_ADDON_PROGRESSING, message


def _updated_progression(entry: Mapping[str, Any], report: NodeReport, now_text: str) -> JSON | None:
    status, reason, message = _progression_condition(report)
    conditions = set_condition(entry.get("conditions"), ADDON_CONDITION_PROGRESSING, status, reason, message, now_text)
    new: JSON | None = None
    if conditions is not None:
        new = dict(entry)
        new["conditions"] = conditions
    if report.completed and report.error is None:
        items = entry.get("configReferences")
        updated_items = []
        changed = False
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, Mapping):
                updated_items.append(item)
                continue
            desired = item.get("desiredConfig")
            copy = dict(item)
            if isinstance(desired, Mapping):
                copy["lastAppliedConfig"] = dict(desired)
                copy["lastKnownGoodConfig"] = dict(desired)
            else:
                copy.pop("lastAppliedConfig", None)
                copy.pop("lastKnownGoodConfig", None)
            changed = changed or copy != item
            updated_items.append(copy)
        if changed:
            new = dict(entry) if new is None else new
            new["configReferences"] = updated_items
    return new


def _cma_status(status: Mapping[str, Any], reports: Mapping[tuple[str, str], NodeReport], now_text: str) -> JSON:
    out: JSON = dict(status)
    entries = status.get(INSTALL_PROGRESSIONS)
    if not isinstance(entries, list):
        return out
    updated = list(entries)
    changed = False
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        report = reports.get(placement_ref(entry))
        if report is None:
            continue
        new = _updated_progression(entry, report, now_text)
        if new is not None:
            updated[position] = new
            changed = True
    if changed:
        out[INSTALL_PROGRESSIONS] = updated
    return out


# ------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------


def plan_config_rollout(
    *,
    cma: Mapping[str, Any],
    mcas: Mapping[str, Mapping[str, Any]],
    placements: Mapping[tuple[str, str], PlacementInput],
    reserved: Reservations,
    now: datetime,
    max_new_reservations: int = MAX_NEW_PER_PASS,
    hash_of: HashOf | None = None,
    judge: Judge = judge_direct,
) -> ConfigRolloutPlan:
    """One pass of the configuration rollout of ``cma`` (see the module docstring).

    ``cma`` carries the status from ``configs.cma_status_references``; ``mcas`` maps cluster name
    -> MCA of this add-on (as stored); ``placements`` maps (namespace, name) -> its inputs (a
    missing key is a missing Placement); ``reserved`` is the record on the CMA. At most
    ``max_new_reservations`` clusters, and ``MAX_NEW_BYTES_PER_PASS`` of their names in the
    record (and no more than keep the record within ``MAX_RECORD_BYTES``), are newly put in
    flight (the rest are ``deferred``).
    The abort record and the paused, abort and retry annotations are read from ``cma``;
    ``hash_of`` looks up the current spec hash of a configuration object (whether a last known
    good one still exists); without it (a read-only report) an object the CMA status does not
    name is taken as unchanged. ``judge`` gives each MCA's rollout status (section 7): afresh,
    or from a memo of the previous passes (``judge_memo``), with the same answers.
    """
    status = mapping_at(cma, "status")
    if not is_lifecycle_managed(cma):
        return ConfigRolloutPlan(cma_status=dict(status), reservations=reserved, managed=False)
    return _plan(cma, status, mcas, placements, reserved, now, max_new_reservations, hash_of, judge)


def _plan(
    cma: Mapping[str, Any],
    status: Mapping[str, Any],
    mcas: Mapping[str, Mapping[str, Any]],
    placements: Mapping[tuple[str, str], PlacementInput],
    reserved: Reservations,
    now: datetime,
    max_new_reservations: int,
    hash_of: HashOf | None,
    judge: Judge,
) -> ConfigRolloutPlan:
    graph = build_graph(cma, mcas, placements)
    plan = ConfigRolloutPlan(paused=aborting.is_paused(cma))
    try:
        plan.aborts_read = aborting.of_owner(cma)
    except aborting.AbortRecordError as exc:
        plan.abort_record_error = str(exc)
    run = _Pass(
        now=now, now_text=format_time(now), mcas=mcas,
        budget=Budget.for_record(reserved, count=max(0, max_new_reservations)),
        paused=plan.paused, aborts=plan.aborts_read, abort_request=aborting.abort_request(cma),
        retry=aborting.retry_request(cma), hash_of=hash_of, defaults=graph.defaults.desired,
        known=aborting.known_hashes([graph.defaults.desired, *(n.desired for n in graph.nodes)]),
        judge=judge,
    )
    run.promotions, run.promotions_problem = read_promotions(annotations_of(cma))
    reports: dict[tuple[str, str], NodeReport] = {}
    record = reserved
    aborts = dict(plan.aborts_read)
    for node in graph.nodes:
        report = _plan_placement(run, node, reserved.of(node.key))
        plan.nodes.append(report)
        reports[(node.namespace, node.name)] = report
        plan.deferred += report.deferred
        if report.error is None:
            record = record.with_group(node.key, report.reserved)
            if report.aborted is not None:
                aborts[node.key] = report.aborted
            else:
                aborts.pop(node.key, None)
    plan.defaults = _plan_defaults(run, graph)
    # Groups of placements no longer rolled out (removed from the install strategy, or the CMA
    # is Manual now) have nothing left to carry out, nor to abort.
    current = {node.key for node in graph.nodes}
    for group in [g for g in record.groups if g not in current]:
        record = record.with_group(group, ())
    plan.reservations = record
    plan.aborts = {k: v for k, v in aborts.items() if k in current}
    plan.mca_status = run.mca_status
    plan.widening = frozenset(run.widening)
    plan.cma_status = _cma_status(status, reports, run.now_text)
    rechecks = [r.recheck_after for r in plan.nodes if r.recheck_after is not None]
    plan.recheck_after = min(rechecks) if rechecks else None
    return plan
