"""Rollout events (improvement 5)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.workset.aggregation import DeployOutcome, build_status
from ocm_rollout.controllers.workset.events import rollout_events, spelling_events
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.template import TemplateComparer
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import TEMPLATE, at, decision, failed, mwrs, placement, succeeded, work

CMP = TemplateComparer(TEMPLATE)


def deploy(works: list[dict[str, Any]], clusters: list[str], strategy: dict[str, Any] | None = None,
           decisions: list[dict[str, Any]] | None = None) -> DeployPlan:
    ref: dict[str, Any] = {"name": "test-placement"}
    if strategy:
        ref["rolloutStrategy"] = strategy
    return plan_deploy(
        mwrs=mwrs(refs=[ref]), owner=owner_for("ns", "test-work"), works=works,
        placements={"test-placement": placement(selected=len(clusters))},
        decisions={"test-placement": decisions or [decision(clusters)]}, now=at(0),
    )


def events_for(plan: DeployPlan, *, applied: bool = True, old: dict | None = None,
               breaches: dict | None = None, works: list | None = None) -> tuple[list, dict]:
    outcome = DeployOutcome()
    if applied:
        for ref in plan.refs:
            outcome.ref(ref.name).applied.update(w.cluster for w in ref.writes)
    new = build_status(old_status=old, plan=plan, outcome=outcome, works=works or [],
                       is_current=lambda w: CMP.matches(w.get("spec")), now=at(1)).status
    return rollout_events(plan=plan, outcome=outcome, old_status=old, new_status=new, breaches=breaches or {})


def test_wave_started_names_the_clusters_per_group() -> None:
    decisions = [decision(["a1", "a2"], index=0, group="canary", name="d0"), decision(["b1"], index=1, name="d1")]
    events, _ = events_for(deploy([], [], decisions=decisions))
    waves = [e for e in events if e.reason == "RolloutWaveStarted"]
    assert [e.message for e in waves] == [
        'placement "test-placement", decision group 0 (canary): rolling out to 2 cluster(s) (2 created): a1, a2',
        'placement "test-placement", decision group 1: rolling out to 1 cluster(s) (1 created): b1',
    ]


def test_no_wave_event_when_writes_failed() -> None:
    events, _ = events_for(deploy([], ["c1"]), applied=False)
    assert events == []


def test_breach_names_the_failed_clusters_once() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 2, "maxFailures": 1}}
    works = [work("c1", conditions=failed()), work("c2", conditions=failed())]
    plan = deploy(works, ["c1", "c2", "c3"], strategy)
    events, memory = events_for(plan, works=works)
    breach = [e for e in events if e.reason == "MaxFailuresBreached"]
    assert len(breach) == 1 and breach[0].type == "Warning"
    assert "c1 (Failed: Degraded True (R))" in breach[0].message and "c2 (Failed" in breach[0].message
    again, _ = events_for(plan, works=works, breaches=memory)
    assert [e for e in again if e.reason == "MaxFailuresBreached"] == []


def test_completion_is_announced_when_rolled_out_turns_true() -> None:
    before = events_for(deploy([work("c1")], ["c1"]), works=[work("c1")])
    assert not any(e.reason == "RolloutComplete" for e in before[0])
    plan = deploy([work("c1")], ["c1"])
    old = build_status(old_status=None, plan=plan, outcome=DeployOutcome(), works=[work("c1")],
                       is_current=lambda w: True, now=at(0)).status
    done = [work("c1", conditions=succeeded())]
    events, _ = events_for(deploy(done, ["c1"]), old=old, works=done)
    assert [e.reason for e in events] == ["RolloutComplete"]


# --- DeprecatedRolloutType ----------------------------------------------------------------------


SEED_REFS: list[dict[str, Any]] = [
    {"name": "placement-rollout-all", "rolloutStrategy": {"rolloutType": "All"}},
    {"name": "placement-rollout-progressive", "rolloutStrategy": {"rolloutType": "Progressive"}},
    {"name": "current", "rolloutStrategy": {"type": "Progressive"}},
    {"name": "defaulted"},
]


def test_rollout_type_gets_a_warning_per_placement_ref_suggesting_type() -> None:
    events, _ = spelling_events(mwrs(refs=SEED_REFS), frozenset())
    assert [(e.reason, e.type) for e in events] == [("DeprecatedRolloutType", "Warning")] * 2
    assert events[1].message == (
        "placementRefs[1] (placement-rollout-progressive): rolloutStrategy.rolloutType is the older "
        "spelling of type; it is read as type: Progressive. Write type instead."
    )
    assert events[0].message.startswith("placementRefs[0] (placement-rollout-all): ")


def test_rollout_type_warning_is_told_once_per_situation() -> None:
    first, told = spelling_events(mwrs(refs=SEED_REFS), frozenset())
    again, told_again = spelling_events(mwrs(refs=SEED_REFS), told)
    assert len(first) == 2 and again == [] and told_again == told
    # A new situation (another value) is told; one that went away and came back is told again.
    changed = [SEED_REFS[0], {**SEED_REFS[1], "rolloutStrategy": {"rolloutType": "ProgressivePerGroup"}}]
    events, told = spelling_events(mwrs(refs=changed), told)
    assert [e.message.split(":")[0] for e in events] == ["placementRefs[1] (placement-rollout-progressive)"]
    fixed, told = spelling_events(mwrs(refs=[{"name": "x", "rolloutStrategy": {"type": "All"}}]), told)
    assert fixed == [] and told == frozenset()
    back, _ = spelling_events(mwrs(refs=changed), told)
    assert len(back) == 2


def test_no_rollout_type_warning_for_a_contradiction_or_an_unknown_value() -> None:
    refs = [
        {"name": "a", "rolloutStrategy": {"type": "All", "rolloutType": "Progressive"}},
        {"name": "b", "rolloutStrategy": {"rolloutType": "Canary"}},
    ]
    assert spelling_events(mwrs(refs=refs), frozenset()) == ([], frozenset())
