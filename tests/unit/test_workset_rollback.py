"""Abort, retry, pause and completion of a ManifestWorkReplicaSet's rollout
(ocm_rollout.controllers.workset.rollback): what a pass does with the plan of the update revision."""

from __future__ import annotations

import copy
from typing import Any

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_ABORT, ANNOTATION_ROLLOUT_RETRY
from ocm_rollout.controllers.rollout.reservations import Reservations
from ocm_rollout.controllers.workset.history import CREATED, UpdateRevision
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.rollback import (
    HALTED,
    REVERT_STRATEGY,
    REVERTING,
    ROLLING,
    Breach,
    abort_breaches,
    decide,
    fields_patch,
    hold,
    revert_spec,
    rolled_out,
    updated_counts,
)
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import TEMPLATE, at, decision, failed, mwrs, placement, succeeded, work

UPDATE = UpdateRevision("upd", "test-work-upd", 2, TEMPLATE, CREATED)
NOW = at(100)
BREACH = Breach("test-placement", {"c1": "Failed: Degraded True"})
ABORT_ALL = {"type": "Progressive", "failureStrategy": "AbortAll",
             "progressive": {"maxConcurrency": 2, "maxFailures": 0}}


def body(status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
         paused: bool = False, refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    m = mwrs(refs=refs)
    m["status"] = status or {}
    if annotations:
        m["metadata"]["annotations"] = annotations
    if paused:
        m["spec"]["paused"] = True
    return m


def run(m: dict[str, Any], *, breaches: list[Breach] | None = None, complete: bool = False,
        current_available: bool = True) -> Any:
    return decide(mwrs=m, update=UPDATE, collision_count=None, current_available=current_available,
                  breaches=breaches or [], complete=complete, now=NOW)


ROLLING_STATUS = {"currentRevision": "cur", "updateRevision": "upd"}
ABORTED_STATUS = {**ROLLING_STATUS, "abortedTime": "2026-01-01T12:00:50Z"}


# -- rolling and completing -------------------------------------------------------------------


def test_a_rollout_in_progress_rolls_out() -> None:
    d = run(body(ROLLING_STATUS))
    assert (d.mode, d.aborted, d.current, d.started_abort) == (ROLLING, False, "cur", False)
    assert d.fields() == {"currentRevision": "cur", "updateRevision": "upd", "collisionCount": None, "abortedTime": None}


def test_completion_makes_the_update_revision_current() -> None:
    d = run(body(ROLLING_STATUS), complete=True)
    assert d.mode == ROLLING and d.current == "upd"


def test_the_first_revision_becomes_current_when_complete() -> None:
    assert run(body({}), complete=True).current == "upd"
    assert run(body({})).current is None


# -- abort ------------------------------------------------------------------------------------------


def test_an_abort_all_breach_aborts_and_reverts_to_the_current_revision() -> None:
    d = run(body(ROLLING_STATUS), breaches=[BREACH])
    assert (d.mode, d.started_abort, d.aborted_time) == (REVERTING, True, "2026-01-01T12:01:40Z")
    assert "c1 (Failed: Degraded True)" in d.cause and "AbortAll" in d.cause
    assert d.breaches == (BREACH,)
    assert d.current == "cur"


def test_the_abort_annotation_naming_the_update_revision_aborts() -> None:
    for value in ("upd", "test-work-upd"):
        d = run(body(ROLLING_STATUS, {ANNOTATION_ROLLOUT_ABORT: value}))
        assert d.mode == REVERTING and d.started_abort and ANNOTATION_ROLLOUT_ABORT in d.cause


def test_an_abort_annotation_for_another_revision_is_ignored() -> None:
    d = run(body(ROLLING_STATUS, {ANNOTATION_ROLLOUT_ABORT: "older"}))
    assert d.mode == ROLLING and not d.aborted


def test_no_abort_once_the_rollout_is_complete() -> None:
    d = run(body(ROLLING_STATUS, {ANNOTATION_ROLLOUT_ABORT: "upd"}), complete=True)
    assert d.mode == ROLLING and not d.aborted and d.current == "upd"


def test_no_abort_when_the_update_revision_is_the_current_one() -> None:
    """A cluster joining a finished rollout fails: there is nothing older to return to, so the
    rollout stops at maxFailures as usual."""
    d = run(body({"currentRevision": "upd", "updateRevision": "upd"}), breaches=[BREACH])
    assert d.mode == ROLLING and not d.aborted


def test_an_abort_stays_until_retried_or_the_template_changes() -> None:
    d = run(body(ABORTED_STATUS), complete=True)
    assert (d.mode, d.started_abort, d.aborted_time, d.current) == (REVERTING, False, "2026-01-01T12:00:50Z", "cur")


def test_a_new_template_clears_the_abort() -> None:
    d = run(body({**ABORTED_STATUS, "updateRevision": "older"}))
    assert d.mode == ROLLING and not d.aborted


def test_a_new_template_can_abort_again_at_once() -> None:
    d = run(body({**ABORTED_STATUS, "updateRevision": "older"}), breaches=[BREACH])
    assert d.started_abort and d.aborted_time == "2026-01-01T12:01:40Z"


def test_without_a_current_revision_the_abort_halts() -> None:
    d = run(body({"updateRevision": "upd"}), breaches=[BREACH])
    assert d.mode == HALTED and d.started_abort
    assert "status.currentRevision is unset" in d.halt_reason


def test_without_the_current_revisions_controller_revision_the_abort_halts() -> None:
    d = run(body(ABORTED_STATUS), current_available=False)
    assert d.mode == HALTED and "test-work-cur" in d.halt_reason and "gone" in d.halt_reason


# -- retry ------------------------------------------------------------------------------------------


def test_a_retry_naming_the_abort_clears_it() -> None:
    d = run(body(ABORTED_STATUS, {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T12:00:50Z"}))
    assert (d.mode, d.retried, d.aborted) == (ROLLING, True, False)
    assert not d.clear_abort_request


def test_a_retry_compares_times_not_spellings() -> None:
    d = run(body(ABORTED_STATUS, {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T12:00:50+00:00"}))
    assert d.retried


def test_a_retry_for_an_older_abort_is_ignored() -> None:
    d = run(body(ABORTED_STATUS, {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T11:00:00Z"}))
    assert d.mode == REVERTING and not d.retried


def test_a_retry_withdraws_the_abort_request_it_supersedes() -> None:
    annotations = {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T12:00:50Z", ANNOTATION_ROLLOUT_ABORT: "upd"}
    d = run(body(ABORTED_STATUS, annotations))
    assert d.retried and d.clear_abort_request and not d.aborted


def test_the_retry_pass_does_not_abort_again() -> None:
    d = run(body(ABORTED_STATUS, {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T12:00:50Z"}), breaches=[BREACH])
    assert d.retried and not d.aborted


def test_after_a_retry_a_new_breach_aborts_again() -> None:
    """The retry annotation stays; it names the old abort, so it cannot undo the new one."""
    retried = {**ROLLING_STATUS}
    d = run(body(retried, {ANNOTATION_ROLLOUT_RETRY: "2026-01-01T12:00:50Z"}), breaches=[BREACH])
    assert d.started_abort and d.aborted_time == "2026-01-01T12:01:40Z" and not d.retried


# -- pause ------------------------------------------------------------------------------------------


def test_pause_is_read_from_the_spec() -> None:
    assert run(body(ROLLING_STATUS, paused=True)).paused
    assert not run(body(ROLLING_STATUS)).paused


def test_an_abort_is_recorded_while_paused() -> None:
    d = run(body(ROLLING_STATUS, paused=True), breaches=[BREACH])
    assert d.paused and d.started_abort and d.mode == REVERTING


# -- the fields recorded first ------------------------------------------------------------------------


def test_fields_patch_sets_and_removes() -> None:
    assert fields_patch(ABORTED_STATUS, {**ABORTED_STATUS, "abortedTime": None}) == {"abortedTime": None}
    assert fields_patch(ROLLING_STATUS, {**ROLLING_STATUS, "collisionCount": 1}) == {"collisionCount": 1}
    assert fields_patch(ROLLING_STATUS, {**ROLLING_STATUS, "collisionCount": None, "abortedTime": None}) is None
    assert fields_patch({"abortedTime": "2026-01-01T12:00:50Z"}, {"abortedTime": "2026-01-01T12:00:50+00:00"}) is None


# -- plans ------------------------------------------------------------------------------------------


def plan_of(works: list[dict[str, Any]], clusters: list[str], strategy: dict[str, Any] | None = None) -> DeployPlan:
    ref: dict[str, Any] = {"name": "test-placement"}
    if strategy is not None:
        ref["rolloutStrategy"] = strategy
    return plan_deploy(
        mwrs=mwrs(refs=[ref]),
        owner=owner_for("ns", "test-work"),
        works=works,
        placements={"test-placement": placement(selected=len(clusters))},
        decisions={"test-placement": [decision(clusters)]},
        now=at(1),
    )


def test_abort_breaches_come_from_abort_all_refs_only() -> None:
    works = [work("c1", conditions=failed())]
    spec_abort = {"placementRefs": [{"name": "test-placement", "rolloutStrategy": ABORT_ALL}]}
    stopping = {**ABORT_ALL}
    del stopping["failureStrategy"]
    spec_stop = {"placementRefs": [{"name": "test-placement", "rolloutStrategy": stopping}]}
    plan = plan_of(works, ["c1", "c2", "c3"], ABORT_ALL)
    assert plan.refs[0].breach
    (found,) = abort_breaches(spec_abort, plan)
    assert found.placement == "test-placement" and set(found.failed) == {"c1"}
    assert found.failed["c1"].startswith("Failed")
    assert abort_breaches(spec_stop, plan) == []


def test_rolled_out_needs_every_decided_cluster_succeeded() -> None:
    done = [work("c1", conditions=succeeded()), work("c2", conditions=succeeded())]
    assert rolled_out(plan_of(done, ["c1", "c2"]))
    assert not rolled_out(plan_of(done[:1], ["c1", "c2"]))
    assert not rolled_out(plan_of(done, ["c1", "c2", "c3"]))
    assert updated_counts(plan_of(done, ["c1", "c2", "c3"])) == {"test-placement": 2}


def test_rolled_out_is_false_for_a_placement_selecting_nothing() -> None:
    assert not rolled_out(plan_of([], []))


def test_revert_spec_plans_the_current_template_at_once_everywhere() -> None:
    old = copy.deepcopy(TEMPLATE)
    spec = {"manifestWorkTemplate": {"new": True}, "placementRefs": [
        {"name": "a", "rolloutStrategy": ABORT_ALL}, {"name": "b"}], "paused": True}
    reverted = revert_spec(spec, old)
    assert reverted["manifestWorkTemplate"] == old
    assert reverted["placementRefs"] == [{"name": "a", "rolloutStrategy": REVERT_STRATEGY},
                                         {"name": "b", "rolloutStrategy": REVERT_STRATEGY}]
    assert reverted["paused"] is True


def test_hold_drops_every_write_and_delete_and_says_what_waits() -> None:
    stale = work("c9", placement="gone")
    outdated = work("c2", spec={"workload": {"manifests": []}}, conditions=succeeded())
    plan = plan_of([stale, outdated, work("c3")], ["c1", "c2"])
    assert plan.refs[0].writes and plan.stale_deletes and plan.refs[0].deletes
    record = Reservations({"test-placement": frozenset({"c7"})})
    held, waiting = hold(plan, record)
    assert held.stale_deletes == [] and held.refs[0].writes == [] and held.refs[0].deletes == []
    assert held.reservations == record and held.refs[0].reserved == frozenset({"c7"})
    assert (waiting.creates, waiting.updates, waiting.deletes) == (1, 1, 2)
    assert waiting.describe() == "4 work(s) wait (1 to create, 1 to update, 2 to delete): c1, c2, c3, c9"
    assert held.refs[0].statuses == plan.refs[0].statuses


def test_hold_of_nothing_says_so() -> None:
    _, waiting = hold(plan_of([], []), Reservations())
    assert waiting.describe() == "no work waits"


def test_the_clusters_an_abort_names_are_read_back_from_its_cause() -> None:
    from ocm_rollout.controllers.workset.rollback import Breach, breached_clusters

    first = Breach("all", {
        "cluster1": 'Failed: Degraded True (ApplyFailed): Back-off pulling image "web:2.0": manifest unknown',
        "cluster10": "TimeOut", "c-3": "Failed: a, b (c) d; e",
    })
    second = Breach("p2", {"x": "Failed: why (1)"})
    cause = "rollout of revision web-1 aborted at T: " + "; ".join(b.describe() for b in (first, second)) + " (failureStrategy AbortAll)"
    assert breached_clusters(cause) == {"all": dict(first.failed), "p2": dict(second.failed)}
    assert breached_clusters("rollout of revision web-1 aborted at T: requested by annotation x") == {}
