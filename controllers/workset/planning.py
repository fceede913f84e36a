"""Plan and decide, as one pure function a pass may call twice (before and after confirming its
works from the API).

In: ``PlanInputs`` (the MWRS with its placementRefs normalised, the update revision, the current
revision's template, placements and decisions, the reservations as read, the clock) and the works
to plan from. Out: ``Plans``: the update revision's plan under the strategies, the rollback
decision (roll out, revert, hold), the plan to execute (the revert's when reverting, held back when
paused or halted), what was held, and which spec counts as current in the status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.rollout.reservations import Reservations
from ocm_rollout.controllers.workset import rollback
from ocm_rollout.controllers.workset.history import HistoryStep
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.rollback import RollbackDecision
from ocm_rollout.controllers.workset.work_memo import DIRECT, WorkMemo
from ocm_rollout.controllers.workset.workbuild import Owner


@dataclass(frozen=True)
class PlanInputs:
    """Everything a pass plans from except the works."""

    body: JSON  # the MWRS as read
    planned_body: JSON  # the same with its placementRefs normalised
    owner: Owner
    step: HistoryStep
    current_template: JSON | None
    matches: Callable[[JSON], bool]  # a work holds the update revision's spec
    revert_matches: Callable[[JSON], bool] | None  # a work holds the current revision's spec
    placements: Mapping[str, JSON | None]
    decisions: Mapping[str, Sequence[JSON]]
    record: Reservations
    now: datetime
    memo: WorkMemo = DIRECT  # each work's rollout status, kept between passes

    @property
    def spec(self) -> JSON:
        return dict(self.planned_body.get("spec") or {})


@dataclass(frozen=True)
class Plans:
    plan_u: DeployPlan  # the update revision under the strategies
    decision: RollbackDecision
    plan: DeployPlan  # what the pass executes
    held: rollback.Held | None
    is_current: Callable[[JSON], bool]


def _plan(
    inputs: PlanInputs, works: list[JSON], spec: JSON, matches: Callable[[JSON], bool], revision: str | None,
    *, verify: bool = False,
) -> DeployPlan:
    return plan_deploy(
        mwrs={**inputs.planned_body, "spec": spec},
        owner=inputs.owner,
        works=works,
        placements=inputs.placements,
        decisions=inputs.decisions,
        now=inputs.now,
        spec_matches=matches,
        reserved=inputs.record,
        revision_hash=revision,
        verify=verify,
        memo=inputs.memo,
    )


def plan_and_decide(inputs: PlanInputs, works: list[JSON]) -> Plans:
    """Plan the update revision, let ``rollback.decide`` say what the pass does with it, and plan
    that (docs/behaviour/mwrs.md 5)."""
    spec = inputs.spec
    update = inputs.step.update
    # Only the update revision validates and waits at promotion gates; a revert does neither.
    plan_u = _plan(inputs, works, spec, inputs.matches, update.hash, verify=True)
    decision = rollback.decide(
        mwrs=inputs.body,
        update=update,
        collision_count=inputs.step.collision_count,
        current_available=inputs.current_template is not None,
        breaches=rollback.abort_breaches(spec, plan_u),
        complete=rollback.rolled_out(plan_u),
        now=inputs.now,
    )
    plan = plan_u
    is_current = inputs.matches
    if decision.mode == rollback.REVERTING:
        assert inputs.current_template is not None and inputs.revert_matches is not None
        revert = rollback.revert_spec(spec, inputs.current_template)
        plan = _plan(inputs, works, revert, inputs.revert_matches, decision.current)
        is_current = inputs.revert_matches
    held = None
    if decision.paused or decision.mode == rollback.HALTED:
        plan, held = rollback.hold(plan, inputs.record)
    return Plans(plan_u, decision, plan, held, is_current)
