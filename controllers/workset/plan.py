"""The deploy step of a ManifestWorkReplicaSet as a pure plan (docs/behaviour/mwrs.md 5.2 and 5.3).

Given the MWRS, its Placements and PlacementDecisions, the works it owns (as stored) and
``now``, decide which works to create, patch and delete, per placementRef, by running the
shared rollout planner (``ocm_rollout.controllers.rollout``) on the works' rollout statuses.

The works are keyed by (cluster, placement), never by cluster alone: a (cluster, placement)
pair never gets a second work, and duplicates found in the store (left by an earlier
controller) are removed, keeping the one that is up to date (then the oldest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ROLLOUT_TYPE_ALL,
)
from ocm_rollout.controllers.common.decisions import (
    DecisionGroupError,
    placement_counts,
    scheduling_gap,
)
from ocm_rollout.controllers.common.wire import (
    JSON,
    annotations_of,
    is_deleting,
    meta,
    name_of,
)
from ocm_rollout.controllers.rollout.checks.promotion import (
    Promotion,
    PromotionGate,
    placement_gate,
    read_promotions,
)
from ocm_rollout.controllers.rollout.model import (
    ClusterRolloutStatus,
    RolloutInputError,
    RolloutPlan,
    RolloutStatus,
)
from ocm_rollout.controllers.rollout.planner import plan as plan_decoded
from ocm_rollout.controllers.rollout.reservations import (
    EMPTY,
    MAX_NEW_PER_PASS,
    Budget,
    Reservations,
    target_name,
)
from ocm_rollout.controllers.rollout.strategy import decode_strategy
from ocm_rollout.controllers.rollout.verification import strategy_verifies
from ocm_rollout.controllers.workset.owner_tables import Groups, Pairs
from ocm_rollout.controllers.workset.status_mapping import (
    FAILED,
    SUCCEEDED,
    TIME_OUT,
    WorkRolloutStatus,
)
from ocm_rollout.controllers.workset.template import TemplateComparer
from ocm_rollout.controllers.workset.work_memo import DIRECT, WorkMemo
from ocm_rollout.controllers.workset.workbuild import (
    Owner,
    desired_metadata,
    desired_work,
    metadata_matches,
    update_patch,
)


@dataclass(frozen=True)
class WorkWrite:
    """A work to create (``existing`` None) or to patch."""

    cluster: str
    placement: str
    desired: JSON
    existing: JSON | None
    patch: JSON | None
    group_name: str = ""
    group_index: int = 0

    @property
    def is_create(self) -> bool:
        return self.existing is None

    @property
    def widens(self) -> bool:
        """Does this write put the cluster in flight (a new work, or a new spec)? Such writes are
        reserved on the MWRS first (ocm_rollout.controllers.rollout.reservations)."""
        return self.existing is None or (self.patch is not None and "spec" in self.patch)


@dataclass(frozen=True)
class WorkDelete:
    """A work to delete, and why."""

    namespace: str
    name: str
    placement: str | None
    why: str


@dataclass
class RefPlan:
    """The plan for one placementRef."""

    name: str
    # The placement object (None only for the ref that stopped the pass).
    placement: JSON | None
    # A decision-group or strategy problem: the ref is skipped (no summary entry).
    error: str | None = None
    error_is_strategy: bool = False
    # cluster -> work whose spec equals the template (including works being deleted)
    current: dict[str, JSON] = field(default_factory=dict)
    statuses: dict[str, WorkRolloutStatus] = field(default_factory=dict)
    # Every decided cluster -> (group name, group index).
    decided: dict[str, tuple[str, int]] = field(default_factory=dict)
    writes: list[WorkWrite] = field(default_factory=list)
    deletes: list[WorkDelete] = field(default_factory=list)
    # Clusters the planner wants applied but whose work is still being deleted.
    waiting_for_deletion: list[str] = field(default_factory=list)
    rollout: RolloutPlan | None = None
    selected: int = 0
    group_count: int = 0
    # The reservations this ref needs after the pass: clusters reserved earlier whose write is not
    # observed yet (still decided), plus the clusters of this pass's widening writes.
    reserved: frozenset[str] = frozenset()
    # Widening writes this pass could not reserve (over the per-pass limit).
    deferred: int = 0
    # Why the placement's decisions cannot be called final yet (None: scheduled for its current
    # spec, every decision page read). A rollout is never Complete while this is set.
    unready: str | None = None
    # The manual promotion gate of the update revision's rollout (None: no gate, or not planning
    # the update revision) and what is wrong with the promotions recorded on the MWRS.
    promotion: PromotionGate | None = None
    promotion_problem: str | None = None
    # The strategy has checks or a plugin (and this plans the update revision): clusters validate.
    verifies: bool = False

    @property
    def validating(self) -> list[str]:
        return sorted(c for c, s in self.statuses.items() if s.validating)

    @property
    def succeeded(self) -> set[str]:
        return {c for c, s in self.statuses.items() if s.status == SUCCEEDED}

    @property
    def recheck_after(self) -> float | None:
        return None if self.rollout is None else self.rollout.recheck_after_seconds

    @property
    def breach(self) -> bool:
        return bool(self.rollout is not None and self.rollout.max_failure_breach)

    def failed_clusters(self) -> dict[str, str]:
        """Clusters counted as failures by the plan: cluster -> Failed | TimeOut."""
        failed = {c: FAILED for c, s in self.statuses.items() if s.status == FAILED}
        if self.rollout is not None:
            for entry in self.rollout.clusters_timeout:
                failed[entry.cluster_name] = TIME_OUT
        return failed


@dataclass
class DeployPlan:
    """The deploy step for a whole MWRS."""

    # Works whose placement label is missing or not a current placementRef (5.2), and
    # duplicates of one (cluster, placement).
    stale_deletes: list[WorkDelete] = field(default_factory=list)
    refs: list[RefPlan] = field(default_factory=list)
    # Name of the placementRef whose Placement is missing: the pass stops there (5.3.1).
    missing_placement: str | None = None
    # The reservation record the MWRS must carry before this plan's writes are sent.
    reservations: Reservations = EMPTY
    # Widening writes left for the next pass (more than one pass may reserve).
    deferred: int = 0

    @property
    def recheck_after(self) -> float | None:
        values = [r.recheck_after for r in self.refs if r.recheck_after is not None]
        return min(values) if values else None


# ------------------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------------------


def _creation_key(work: Mapping[str, Any]) -> tuple[str, str]:
    return (str(meta(work).get("creationTimestamp") or ""), name_of(work))


def _pick_keeper(works: Sequence[JSON], is_current: Callable[[JSON], bool]) -> JSON:
    """The work to keep among duplicates: not being deleted, up to date, then the oldest."""
    return min(works, key=lambda w: (is_deleting(w), not is_current(w), _creation_key(w)))


def plan_deploy(
    *,
    mwrs: Mapping[str, Any],
    owner: Owner,
    works: Iterable[JSON],
    placements: Mapping[str, JSON | None],
    decisions: Mapping[str, Sequence[JSON]],
    now: datetime,
    comparer: TemplateComparer | None = None,
    spec_matches: Callable[[JSON], bool] | None = None,
    reserved: Reservations = EMPTY,
    max_new_reservations: int = MAX_NEW_PER_PASS,
    revision_hash: str | None = None,
    verify: bool = False,
    memo: WorkMemo = DIRECT,
) -> DeployPlan:
    """Plan the deploy step of ``mwrs``.

    ``works`` are the works carrying the owner's marking; ``placements`` maps each placementRef
    name to its Placement (None when missing); ``decisions`` maps it to its decision pages.
    ``spec_matches`` may be given to reuse cached template comparisons. ``reserved`` is the
    reservation record on the MWRS: reserved clusters without a current work count as in flight
    and are written (under their reserved name); at most ``max_new_reservations`` new widening
    writes, and ``MAX_NEW_BYTES_PER_PASS`` of their names in the record (and no more than keep
    the record within ``MAX_RECORD_BYTES``), are planned (the rest are counted in ``deferred``).
    ``verify`` (the update revision's plan) applies the strategies' validation (``verified``)
    and promotion gates. ``memo`` keeps each work's rollout status between passes
    (``work_memo``; by default derived afresh).
    """
    spec = mwrs.get("spec") or {}
    template = spec.get("manifestWorkTemplate") or {}
    if spec_matches is None:
        cmp = comparer or TemplateComparer(template)

        def spec_matches(work: JSON) -> bool:
            return cmp.matches(work.get("spec"))

    is_current = spec_matches
    refs = [r for r in (spec.get("placementRefs") or []) if isinstance(r, Mapping)]
    ref_names = [str(r.get("name") or "") for r in refs]
    result = DeployPlan()
    budget = Budget.for_record(reserved, count=max_new_reservations)
    promotions: dict[str, Promotion] = {}
    promotions_problem = None
    if verify:
        promotions, promotions_problem = read_promotions(annotations_of(mwrs))

    mwrs_meta = meta(mwrs)
    owner_key = f"{mwrs_meta.get('namespace') or ''}/{mwrs_meta.get('name') or ''}"
    uid = str(mwrs_meta.get("uid") or "")
    known = None
    if memo.keep:
        pairs = memo.kept(owner_key, ("pairs", uid), Pairs)
        known = pairs.simple(ref_names) if pairs.update(works, memo.place) else None
    by_placement = known if known is not None else _by_placement(works, ref_names, is_current, result, memo)

    for index, ref in enumerate(refs):
        name = ref_names[index]
        placement_obj = placements.get(name)
        if placement_obj is None:
            result.missing_placement = name
            break
        ref_plan = _plan_ref(
            mwrs=mwrs,
            owner=owner,
            ref=ref,
            ref_path=f"spec.placementRefs[{index}].rolloutStrategy",
            placement=placement_obj,
            decision_pages=decisions.get(name, ()),
            works=by_placement.get(name, {}),
            is_current=is_current,
            now=now,
            reserved=reserved.of(name),
            budget=budget,
            revision_hash=revision_hash,
            verify=verify,
            promotions=promotions,
            memo=memo,
            owner_key=owner_key,
        )
        if ref_plan.promotion is not None:
            ref_plan.promotion_problem = promotions_problem
        result.refs.append(ref_plan)
        result.deferred += ref_plan.deferred
    record = reserved
    for ref_plan in result.refs:
        if ref_plan.error is None:
            record = record.with_group(ref_plan.name, ref_plan.reserved)
    if result.missing_placement is None:
        # Groups of placementRefs that are gone (the pass saw every ref): nothing left to carry out.
        for gone in [g for g in record.groups if g not in ref_names]:
            record = record.with_group(gone, ())
    result.reservations = record
    return result


def _by_placement(
    works: Iterable[JSON], ref_names: Sequence[str], is_current: Callable[[JSON], bool], result: DeployPlan,
    memo: WorkMemo,
) -> dict[str, dict[str, JSON]]:
    """Each placementRef's works by cluster, derived afresh; the works of removed or renamed
    placementRefs (or without a placement label) and duplicates go to ``result.stale_deletes``."""
    # 5.2: works of removed/renamed placementRefs (or without a placement label) go away.
    by_pair: dict[tuple[str, str], list[JSON]] = {}
    for work in works:
        cluster, placement = memo.place(work)
        if placement is None or placement not in ref_names:
            if not is_deleting(work):
                result.stale_deletes.append(WorkDelete(cluster, name_of(work), placement, "placementRef removed"))
            continue
        by_pair.setdefault((cluster, placement), []).append(work)
    by_placement: dict[str, dict[str, JSON]] = {}
    for (cluster, placement), group in sorted(by_pair.items()):
        keeper = _pick_keeper(group, is_current) if len(group) > 1 else group[0]
        for extra in group:
            if extra is not keeper and not is_deleting(extra):
                result.stale_deletes.append(
                    WorkDelete(cluster, name_of(extra), placement, "duplicate work for this cluster")
                )
        by_placement.setdefault(placement, {})[cluster] = keeper
    return by_placement


def _plan_ref(
    *,
    mwrs: Mapping[str, Any],
    owner: Owner,
    ref: Mapping[str, Any],
    ref_path: str,
    placement: JSON,
    decision_pages: Sequence[JSON],
    works: Mapping[str, JSON],
    is_current: Callable[[JSON], bool],
    now: datetime,
    reserved: frozenset[str] = frozenset(),
    budget: Budget | None = None,
    revision_hash: str | None = None,
    verify: bool = False,
    promotions: Mapping[str, Promotion] | None = None,
    memo: WorkMemo = DIRECT,
    owner_key: str = "",
) -> RefPlan:
    name = str(ref.get("name") or "")
    selected, group_count = placement_counts(placement)
    plan = RefPlan(name=name, placement=placement, selected=selected, group_count=group_count)
    strategy = ref.get("rolloutStrategy")
    plan.verifies = verify and strategy_verifies(strategy)
    uid = str(meta(mwrs).get("uid") or "")
    table = memo.ref_table(owner_key, (uid, name), is_current, plan.verifies)
    table.update(works, is_current, memo.verified_status if plan.verifies else memo.rollout_status)
    plan.current = dict(table.current)
    plan.statuses = dict(table.statuses)
    try:
        groups = memo.kept(owner_key, ("groups", uid, name), Groups).of(decision_pages)
    except DecisionGroupError as exc:
        plan.error = str(exc)
        return plan
    for group in groups:
        for cluster in group.clusters:
            plan.decided.setdefault(cluster, (group.group_name, group.group_index))
    plan.unready = scheduling_gap(placement, decision_pages, len(plan.decided))
    # A reservation whose write is not observed yet is a cluster in flight (ToApply) for the
    # planner: some instance may be writing it right now (ocm_rollout.controllers.rollout.reservations).
    pending = sorted(c for c in reserved if c not in plan.statuses)
    plan.reserved = frozenset(c for c in pending if c in plan.decided)
    existing = table.existing()
    if pending:
        existing += [ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY, None) for cluster in pending]
        existing.sort(key=lambda entry: entry.cluster_name)
    if strategy is None:
        strategy = {"type": ROLLOUT_TYPE_ALL, "all": {"progressDeadline": "None"}}
    try:
        decoded = decode_strategy(strategy, ref_path)
        if verify and isinstance(strategy, Mapping):
            plan.promotion = placement_gate(
                strategy.get("promotion"), groups, decoded.mandatory_decision_groups, promotions or {}, name,
                revision_hash or "",
            )
        held = frozenset(plan.promotion.held) if plan.promotion is not None else frozenset()
        rollout = plan_decoded(decoded, groups, existing, now, held=held)
    except RolloutInputError as exc:
        plan.error = str(exc)
        plan.error_is_strategy = True
        return plan
    plan.rollout = rollout

    for entry in sorted(rollout.clusters_to_rollout, key=lambda e: e.cluster_name):
        if entry.status != RolloutStatus.TO_APPLY:
            continue
        cluster = entry.cluster_name
        stored = works.get(cluster)
        if stored is not None and is_deleting(stored):
            plan.waiting_for_deletion.append(cluster)
            continue
        if stored is None and cluster not in plan.reserved and budget is not None and not budget.allows(cluster):
            # A create always widens, and no reservation is left for it this pass: it waits for
            # the next one, unbuilt (building it would make each pass cost the whole backlog).
            plan.deferred += 1
            continue
        stored_current = stored is not None and is_current(stored)
        metadata = desired_metadata(
            mwrs=mwrs,
            owner=owner,
            placement=name,
            cluster=cluster,
            existing=stored,
            existing_current=stored_current,
            now=now,
            revision_hash=revision_hash,
        )
        if stored is not None and stored_current and metadata_matches(stored, metadata):
            continue
        desired = desired_work(
            mwrs=mwrs,
            owner=owner,
            placement=name,
            cluster=cluster,
            existing=stored,
            now=now,
            existing_current=stored_current,
            metadata=metadata,
        )
        patch = None if stored is None else update_patch(stored, desired, stored_current)
        if stored is not None and patch is None:
            continue
        if stored is None:
            # Every instance that creates this work gives it the same name (reservations rule 3).
            metadata = dict(desired["metadata"])
            prefix = str(metadata.pop("generateName", "") or "")
            metadata["name"] = target_name(
                prefix, owner_uid=str(meta(mwrs).get("uid") or ""), group=name, cluster=cluster
            )
            desired = {**desired, "metadata": metadata}
        write = WorkWrite(cluster, name, desired, stored, patch, entry.group_name, entry.group_index)
        if write.widens and cluster not in plan.reserved and budget is not None and not budget.take(cluster):
            plan.deferred += 1
            continue
        plan.writes.append(write)
    plan.reserved = plan.reserved | {w.cluster for w in plan.writes if w.widens}

    removed = {entry.cluster_name for entry in rollout.clusters_removed}
    # Works with an outdated spec whose cluster left the decisions go too (OCM keeps them).
    removed.update(c for c in table.outdated if c not in plan.decided)
    for cluster in sorted(removed):
        stored = works.get(cluster)
        if stored is not None and not is_deleting(stored):
            plan.deletes.append(WorkDelete(cluster, name_of(stored), name, "cluster no longer decided"))
    return plan
