"""The revision part of a ManifestWorkReplicaSet's status (ocm_rollout.controllers.workset.progress): the
revision fields, summary.updated/desiredTotal, the Progressing condition's table and
PlacementRolledOut RolloutDegraded."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.workset.aggregation import DeployOutcome, build_status
from ocm_rollout.controllers.workset.history import CREATED, EXISTING, UNDONE, UpdateRevision
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.progress import abort_conditions, finish_status
from ocm_rollout.controllers.workset.rollback import Held, RollbackDecision, abort_breaches, decide, hold
from ocm_rollout.controllers.workset.template import TemplateComparer
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import (
    TEMPLATE,
    at,
    cond,
    decision,
    failed,
    mwrs,
    placement,
    succeeded,
    work,
)

UPDATE = UpdateRevision("upd", "test-work-upd", 3, TEMPLATE, CREATED)
ABORTED_AT = "2026-01-01T12:00:50Z"
NOW = at(100)
CMP = TemplateComparer(TEMPLATE)


def plan_of(works: list[dict[str, Any]], clusters: list[str], strategy: dict[str, Any] | None = None,
            seconds: float = 1) -> DeployPlan:
    ref: dict[str, Any] = {"name": "test-placement"}
    if strategy is not None:
        ref["rolloutStrategy"] = strategy
    return plan_deploy(
        mwrs=mwrs(refs=[ref]),
        owner=owner_for("ns", "test-work"),
        works=works,
        placements={"test-placement": placement(selected=len(clusters))},
        decisions={"test-placement": [decision(clusters)]},
        now=at(seconds),
    )


def decision_of(mode: str = "Rolling", **kw: Any) -> RollbackDecision:
    values: dict[str, Any] = {"mode": mode, "paused": False, "update": UPDATE, "current": "cur",
                              "aborted_time": None, "collision_count": None}
    values.update(kw)
    return RollbackDecision(**values)


def finished(plan: DeployPlan, d: RollbackDecision, works: list[dict[str, Any]], *,
             old: dict[str, Any] | None = None, held: Held | None = None) -> dict[str, Any]:
    base = build_status(old_status=old, plan=plan, outcome=DeployOutcome(), works=works,
                        is_current=lambda w: CMP.matches(w.get("spec")), now=NOW).status
    return finish_status(base, old_status=old, mwrs_name="test-work", decision=d, plan_u=plan, executed=plan,
                         held=held, now=NOW)


def conds(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


DONE = [work("c1", conditions=succeeded()), work("c2", conditions=succeeded())]


def test_revision_fields_are_written_and_absent_ones_removed() -> None:
    old = {"abortedTime": ABORTED_AT, "collisionCount": 2}
    status = finished(plan_of(DONE, ["c1", "c2"]), decision_of(collision_count=2), DONE, old=old)
    assert (status["currentRevision"], status["updateRevision"], status["collisionCount"]) == ("cur", "upd", 2)
    assert "abortedTime" not in status


def test_updated_and_desired_total_per_placement_and_in_sum() -> None:
    works = [DONE[0], work("c2", conditions=failed())]
    status = finished(plan_of(works, ["c1", "c2", "c3"]), decision_of(), works)
    assert (status["summary"]["updated"], status["summary"]["desiredTotal"]) == (1, 3)
    entry = status["placementSummary"][0]["summary"]
    assert (entry["updated"], entry["desiredTotal"]) == (1, 3)


def test_a_new_revision_rolling_out_is_new_revision_created() -> None:
    status = finished(plan_of(DONE[:1], ["c1", "c2"]), decision_of(), DONE[:1])
    assert conds(status)["Progressing"] == (
        "True", "NewRevisionCreated", "revision test-work-upd (number 3) is rolling out: 1 of 2 cluster(s) updated")


def test_an_undone_revision_rolling_out_is_found_new_revision() -> None:
    for origin in (UNDONE, EXISTING):
        back = UpdateRevision("upd", "test-work-upd", 4, TEMPLATE, origin, brought_back=True)
        status = finished(plan_of(DONE[:1], ["c1", "c2"]), decision_of(update=back), DONE[:1])
        assert conds(status)["Progressing"][:2] == ("True", "FoundNewRevision")


def test_the_current_revision_rolled_out_is_new_manifestwork_available() -> None:
    status = finished(plan_of(DONE, ["c1", "c2"]), decision_of(current="upd"), DONE)
    assert conds(status)["Progressing"] == ("True", "NewManifestWorkAvailable", "revision test-work-upd is rolled out")
    assert conds(status)["PlacementRolledOut"][:2] == ("True", "Complete")


def test_timed_out_clusters_are_progress_deadline_exceeded() -> None:
    stuck = [work("c1", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1)])]
    strategy = {"type": "Progressive", "progressive": {"progressDeadline": "10s", "maxFailures": 1}}
    status = finished(plan_of(stuck, ["c1", "c2", "c3"], strategy, seconds=30), decision_of(), stuck)
    assert conds(status)["Progressing"] == (
        "False", "ProgressDeadlineExceeded", 'revision test-work-upd: progressDeadline exceeded on placement "test-placement": c1')


def test_a_breach_without_abort_is_rollout_degraded_naming_the_failures() -> None:
    works = [work("c1", conditions=failed())]
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
    status = finished(plan_of(works, ["c1", "c2"], strategy), decision_of(), works)
    rolled = conds(status)["PlacementRolledOut"]
    assert rolled[:2] == ("False", "RolloutDegraded")
    assert rolled[2].startswith('placement "test-placement": rollout stopped at maxFailures, 1 failed cluster(s): c1 (Failed')
    assert conds(status)["Progressing"][0] == "True" and "stopped at maxFailures" in conds(status)["Progressing"][2]


def test_an_abort_is_rollout_aborted_and_rollout_degraded_with_the_cause() -> None:
    d = decision_of("Reverting", aborted_time=ABORTED_AT, started_abort=True, cause="placement p: maxFailures breached")
    plan = plan_of(DONE, ["c1", "c2", "c3"])
    status = finished(plan, d, DONE)
    head = f"rollout of revision test-work-upd aborted at {ABORTED_AT}: placement p: maxFailures breached"
    assert conds(status)["PlacementRolledOut"] == ("False", "RolloutDegraded", head)
    progressing = conds(status)["Progressing"]
    assert progressing[:2] == ("False", "RolloutAborted")
    assert progressing[2] == (head + "; returning every cluster to revision test-work-cur: 2 of 3 back"
                              f"; to retry, annotate rollout.ocm-rollout.io/retry={ABORTED_AT}")
    assert status["abortedTime"] == ABORTED_AT


def test_the_cause_of_an_abort_is_kept_on_later_passes() -> None:
    first = finished(plan_of(DONE, ["c1", "c2"]), decision_of(
        "Reverting", aborted_time=ABORTED_AT, started_abort=True, cause="requested"), DONE)
    later = finished(plan_of(DONE, ["c1", "c2"]), decision_of("Reverting", aborted_time=ABORTED_AT), DONE, old=first)
    assert conds(later)["PlacementRolledOut"][2].endswith(": requested")
    assert conds(later)["Progressing"][2].startswith(f"rollout of revision test-work-upd aborted at {ABORTED_AT}: requested;")


def test_a_halted_abort_says_why_it_cannot_revert() -> None:
    d = decision_of("Halted", current=None, aborted_time=ABORTED_AT, started_abort=True, cause="requested",
                    halt_reason="no revision has rolled out to every cluster yet (status.currentRevision is unset)")
    status = finished(plan_of(DONE, ["c1", "c2"]), d, DONE)
    message = conds(status)["Progressing"][2]
    assert conds(status)["Progressing"][:2] == ("False", "RolloutAborted")
    assert "cannot revert: no revision has rolled out to every cluster yet" in message
    assert "no work is written or deleted" in message
    assert "currentRevision" not in status


def test_paused_is_unknown_rollout_paused_saying_what_waits() -> None:
    plan, waiting = hold(plan_of(DONE[:1], ["c1", "c2"]), plan_of([], []).reservations)
    status = finished(plan, decision_of(paused=True), DONE[:1], held=waiting)
    assert conds(status)["Progressing"] == (
        "Unknown", "RolloutPaused",
        "rollout paused (spec.paused): revision test-work-upd waits; 1 work(s) wait (1 to create): c2")


def test_a_paused_abort_says_the_abort_waits() -> None:
    d = decision_of("Reverting", paused=True, aborted_time=ABORTED_AT)
    status = finished(plan_of(DONE, ["c1", "c2"]), d, DONE, held=Held())
    assert conds(status)["Progressing"][2] == (
        "rollout paused (spec.paused): the abort of revision test-work-upd waits; no work waits")


def test_the_transition_time_moves_only_when_progressing_flips() -> None:
    rolling = finished(plan_of(DONE[:1], ["c1", "c2"]), decision_of(), DONE[:1])
    later_plan = plan_of(DONE[:1], ["c1", "c2"])
    base = build_status(old_status=rolling, plan=later_plan, outcome=DeployOutcome(), works=DONE[:1],
                        is_current=lambda w: CMP.matches(w.get("spec")), now=at(500)).status
    again = finish_status(base, old_status=rolling, mwrs_name="test-work", decision=decision_of(),
                          plan_u=later_plan, executed=later_plan, held=None, now=at(500))
    before = next(c for c in rolling["conditions"] if c["type"] == "Progressing")
    after = next(c for c in again["conditions"] if c["type"] == "Progressing")
    assert before["lastTransitionTime"] == after["lastTransitionTime"]


def test_a_missing_placement_leaves_the_rest_of_the_status_alone() -> None:
    m = mwrs(refs=[{"name": "nowhere"}])
    plan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=[], placements={"nowhere": None},
                       decisions={}, now=at(1))
    old = {"summary": {"total": 4}, "conditions": [cond("Progressing", "True", reason="NewRevisionCreated")]}
    base = build_status(old_status=old, plan=plan, outcome=DeployOutcome(), works=[], is_current=lambda w: True,
                        now=NOW).status
    status = finish_status(base, old_status=old, mwrs_name="test-work", decision=decision_of(), plan_u=plan,
                           executed=plan, held=None, now=NOW)
    assert status["summary"] == {"total": 4}
    assert conds(status)["Progressing"][1] == "NewRevisionCreated"
    assert status["updateRevision"] == "upd"


def test_status_transitions_of_a_whole_abort() -> None:
    """Rolling -> aborted (AbortAll) -> retried -> complete, through decide and finish_status."""
    works = [work("c1", conditions=failed())]
    strategy = {"type": "Progressive", "failureStrategy": "AbortAll", "progressive": {"maxConcurrency": 1}}
    plan = plan_of(works, ["c1", "c2"], strategy)
    m = mwrs()
    m["status"] = {"currentRevision": "cur", "updateRevision": "upd"}
    d = decide(mwrs=m, update=UPDATE, collision_count=None, current_available=True,
               breaches=abort_breaches({"placementRefs": [{"name": "test-placement", "rolloutStrategy": strategy}]}, plan),
               complete=False, now=NOW)
    aborted = finished(plan, d, works, old=m["status"])
    assert conds(aborted)["Progressing"][:2] == ("False", "RolloutAborted")
    assert "c1 (Failed" in conds(aborted)["PlacementRolledOut"][2]
    m["status"] = aborted
    m["metadata"]["annotations"] = {"rollout.ocm-rollout.io/retry": aborted["abortedTime"]}
    d = decide(mwrs=m, update=UPDATE, collision_count=None, current_available=True, breaches=[], complete=False,
               now=at(200))
    retried = finished(plan_of([], ["c1", "c2"], strategy), d, [], old=aborted)
    assert "abortedTime" not in retried
    assert conds(retried)["Progressing"][:2] == ("True", "NewRevisionCreated")
    m["status"] = retried
    d = decide(mwrs=m, update=UPDATE, collision_count=None, current_available=True, breaches=[], complete=True,
               now=at(300))
    complete = finished(plan_of(DONE, ["c1", "c2"], strategy), d, DONE, old=retried)
    assert complete["currentRevision"] == "upd"
    assert conds(complete)["Progressing"][:2] == ("True", "NewManifestWorkAvailable")
    assert conds(complete)["PlacementRolledOut"][:2] == ("True", "Complete")


def test_the_aborting_pass_stores_the_cause_with_aborted_time() -> None:
    old = {"conditions": [cond("PlacementRolledOut", "False", reason="Progressing"),
                          cond("PlacementVerified", "True", reason="AsExpected")]}
    d = decision_of("Reverting", aborted_time=ABORTED_AT, started_abort=True, cause="placement p: c1 (Failed)")
    found = {c["type"]: (c["status"], c["reason"], c["message"]) for c in abort_conditions(old, d, "test-work", NOW)}
    head = f"rollout of revision test-work-upd aborted at {ABORTED_AT}: placement p: c1 (Failed)"
    assert found["PlacementRolledOut"] == ("False", "RolloutDegraded", head)
    assert found["Progressing"] == ("False", "RolloutAborted", head + "; returning every cluster to revision test-work-cur")
    assert found["PlacementVerified"][:2] == ("True", "AsExpected")
