"""failureStrategy AbortAll, the abort/retry/paused annotations of a ClusterManagementAddOn's
configuration rollout (controllers/addon/abort.py and its use in configrollout, events, report)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_ABORTED,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.controllers.addon import abort
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs
from ocm_rollout.controllers.addon.events import rollout_events
from ocm_rollout.controllers.addon.report import build_addon_report, render_addon_report
from tests.unit.addon_fixtures import (
    ADC,
    NS,
    H,
    Hub,
    at,
    cfg,
    cma,
    done,
    hashes,
    inputs,
    progressive,
    pstrategy,
)

CLUSTERS = ["c0", "c1", "c2", "c3"]
ABORT_ALL = progressive(maxConcurrency=2, progressDeadline="5s", maxFailures=1) | {"failureStrategy": "AbortAll"}


def _installed(config: str = "deploy-config", value: str = "v1") -> Hub:
    """Four add-ons that completed a rollout of ``config`` (so the placement has a last known good
    configuration): every MCA applied it, the installProgression is Completed."""
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg(config)], rollout=progressive(maxConcurrency=2))])
    mcas = {c: done(c, config, H(value)) for c in CLUSTERS}
    hub = Hub(the_cma, mcas, inputs(("p1", [CLUSTERS])), {(NS, config): H(value)})
    hub.step(0)
    assert hub.cma_condition()["reason"] == "Completed"
    return hub


def _update(hub: Hub, config: str, rollout: dict[str, Any] = ABORT_ALL) -> None:
    item = hub.cma["spec"]["installStrategy"]["placements"][0]
    item["configs"] = [cfg(config)]
    item["rolloutStrategy"] = rollout


def _breach(hub: Hub) -> None:
    """The first batch (c0, c1) gets the new configuration at 10, never gets ready, and times out
    at 15: maxFailures 1 is breached by two."""
    plan = hub.step(10)
    assert plan.widening == {"c0", "c1"}
    hub.agent(["c0", "c1"], 10, ready=False)
    hub.step(12)


def _record(hub: Hub) -> dict[str, abort.Abort]:
    return abort.of_owner(hub.cma)


def _rename_breached() -> Hub:
    hub = _installed()
    _update(hub, "deploy-config-v2")
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    _breach(hub)
    return hub


# --- the record, the requests ------------------------------------------------------------------------


def test_the_record_round_trips_and_names_the_placement() -> None:
    record = {"ns/p": abort.Abort("2024-05-01T10:00:00.000001Z", "rev", abort.CAUSE_MAX_FAILURES, ("c0",), 3)}
    text = abort.render(record)
    assert text is not None and abort.parse(text) == record
    assert abort.render({}) is None and abort.parse(None) == {} and abort.parse("") == {}


@pytest.mark.parametrize("text", ["nope", "[]", '{"ns/p": 1}', '{"ns/p": {"time": "t"}}',
                                  '{"ns/p": {"time": "t", "revision": "r", "cause": "other"}}',
                                  '{"ns/p": {"time": "t", "revision": "r", "cause": "requested", "clusters": [1]}}'])
def test_a_damaged_record_is_refused(text: str) -> None:
    with pytest.raises(abort.AbortRecordError):
        abort.parse(text)


def test_abort_time_has_microseconds_and_never_takes_the_time_a_retry_names() -> None:
    now = datetime(2024, 5, 1, 10, 0, 0, 5, tzinfo=UTC)
    assert abort.abort_time(now, "") == "2024-05-01T10:00:00.000005Z"
    assert abort.abort_time(now, "2024-05-01T10:00:00.000005Z") == "2024-05-01T10:00:00.000006Z"


def test_only_true_pauses() -> None:
    assert abort.is_paused({"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: "true"}}})
    assert abort.is_paused({"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: "True"}}})
    assert not abort.is_paused({"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: "yes"}}})
    assert not abort.is_paused({"metadata": {}})


def test_the_revision_changes_with_any_name_or_hash() -> None:
    def rev(name: str, spec_hash: str) -> str:
        return abort.revision(DesiredConfigs({ADC: [Config(*ADC, NS, name, spec_hash)]}))

    assert rev("a", "h") == rev("a", "h")
    assert len({rev("a", "h"), rev("b", "h"), rev("a", "g")}) == 3


# --- what an aborted placement returns to --------------------------------------------------------------


def _progression(desired: tuple[str, str], good: tuple[str, str] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"group": ADC[0], "resource": ADC[1], "desiredConfig": {"namespace": NS, "name": desired[0], "specHash": desired[1]}}
    if good is not None:
        item["lastKnownGoodConfig"] = {"namespace": NS, "name": good[0], "specHash": good[1]}
    return {"namespace": NS, "name": "p1", "configReferences": [item]}


def test_a_renamed_config_returns_to_the_old_object_while_it_has_its_hash() -> None:
    target = abort.revert_target(DesiredConfigs(), _progression(("v2", "h2"), ("v1", "h1")), hashes({(NS, "v1"): "h1", (NS, "v2"): "h2"}), {})
    assert target.blocked is None and target.desired is not None
    assert [(c.name, c.spec_hash) for c in target.desired.configs] == [("v1", "h1")]
    assert [c.name for c in target.changed] == ["v2"] and [c.name for c in target.good] == ["v1"]


def test_a_config_changed_in_place_cannot_be_reverted_and_says_why() -> None:
    target = abort.revert_target(DesiredConfigs(), _progression(("cfg", "h2"), ("cfg", "h1")), hashes({(NS, "cfg"): "h2"}), {})
    assert target.desired is None
    assert target.blocked == "AddOnDeploymentConfig default/cfg was changed in place; its last known good content (spec hash h1) no longer exists"


def test_an_old_object_changed_since_or_deleted_cannot_be_reverted() -> None:
    progression = _progression(("v2", "h2"), ("v1", "h1"))
    changed = abort.revert_target(DesiredConfigs(), progression, hashes({(NS, "v1"): "h9", (NS, "v2"): "h2"}), {})
    assert changed.blocked == "AddOnDeploymentConfig default/v1 was changed since; its last known good content (spec hash h1) no longer exists"
    gone = abort.revert_target(DesiredConfigs(), progression, hashes({(NS, "v2"): "h2"}), {})
    assert gone.blocked == "AddOnDeploymentConfig default/v1 (the last known good configuration) no longer exists"


def test_without_a_last_known_good_config_nothing_can_be_reverted() -> None:
    target = abort.revert_target(DesiredConfigs(), _progression(("v2", "h2"), None), hashes({(NS, "v2"): "h2"}), {})
    assert target.desired is None and target.blocked is not None and "no last known good configuration" in target.blocked
    same = abort.revert_target(DesiredConfigs(), _progression(("v1", "h1"), ("v1", "h1")), hashes({(NS, "v1"): "h1"}), {})
    assert same.desired is None and same.blocked is not None and "nothing to return to" in same.blocked


def test_an_unhashed_type_blocks_the_controller_but_not_a_read_only_report() -> None:
    progression = _progression(("v2", "h2"), ("v1", "h1"))
    assert abort.revert_target(DesiredConfigs(), progression, hashes({}, supported=()), {}).desired is None
    assert abort.revert_target(DesiredConfigs(), progression, None, {}, strict=False).desired is not None
    # An in-place change is known without a lookup: the CMA status holds the current hash.
    assert abort.revert_target(DesiredConfigs(), _progression(("cfg", "h2"), ("cfg", "h1")), None,
                               {(*ADC, NS, "cfg"): "h2"}, strict=False).desired is None


# --- AbortAll through the configuration rollout ----------------------------------------------------------


def test_abort_all_returns_the_add_ons_that_took_a_renamed_config_to_the_last_known_good_one() -> None:
    hub = _installed()
    _update(hub, "deploy-config-v2")
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    _breach(hub)
    plan = hub.step(15)
    node = plan.nodes[0]
    assert node.new_abort and node.reverted == {"c0", "c1"}
    for cluster in CLUSTERS:
        refs = hub.mcas[cluster]["status"]["configReferences"]
        assert [(r["desiredConfig"]["name"], r["desiredConfig"]["specHash"]) for r in refs] == [("deploy-config", H("v1"))]
    record = _record(hub)["default/p1"]
    assert record.cause == "maxFailures" and record.clusters == ("c0", "c1") and record.failed == 2
    condition = hub.cma_condition()
    assert (condition["status"], condition["reason"]) == ("False", "RolloutAborted")
    assert condition["message"].startswith(
        f"Rollout of AddOnDeploymentConfig default/deploy-config-v2 (spec hash {H('v2')}) aborted at {record.time}: "
        "maxFailures breached by 2 failed or timed-out add-on(s) (c0, c1). The add-ons return to the last known good "
        f"configuration AddOnDeploymentConfig default/deploy-config (spec hash {H('v1')}): 2/4 have it."
    )
    assert f"annotation {ANNOTATION_ROLLOUT_RETRY}={record.time}" in condition["message"]
    assert plan.reservations.of("default/p1") == frozenset()


def test_an_aborted_placement_gives_no_further_add_on_the_new_config() -> None:
    hub = _rename_breached()
    hub.step(15)
    for now in (16, 30, 60, 600):
        hub.agent(CLUSTERS, now, ready=True)
        plan = hub.step(now + 1)
        assert plan.widening == frozenset() and not plan.nodes[0].new_abort
        assert all(hub.desired_hash(c) == [H("v1")] for c in CLUSTERS)
    assert hub.cma_condition()["message"].count("4/4 have it") == 1
    assert hub.cma_condition()["reason"] == "RolloutAborted"


def test_the_abort_is_recorded_in_the_same_pass_as_the_revert_and_replanning_is_idempotent() -> None:
    hub = _rename_breached()
    plan = hub.plan(15)
    assert plan.aborts_changed and plan.new_aborts and plan.nodes[0].reverted == {"c0", "c1"}
    # c2, c3 only turn Configured True (they have the configuration their placement returns to).
    for cluster in ("c2", "c3"):
        assert plan.mca_status[cluster]["configReferences"] == hub.mcas[cluster]["status"]["configReferences"]
    hub.step(15)
    again = hub.plan(15)  # a restart planning from the stored objects
    assert not again.aborts_changed and not again.new_aborts and again.mca_status == {}


def test_a_retry_naming_the_abort_resumes_the_rollout_and_a_later_abort_gets_another_time() -> None:
    hub = _rename_breached()
    hub.step(15)
    first = _record(hub)["default/p1"]
    hub.annotate(ANNOTATION_ROLLOUT_RETRY, first.time)
    plan = hub.step(20)
    assert plan.nodes[0].retried == first and _record(hub) == {}
    assert plan.widening == {"c0", "c1"}  # the rollout starts again with the first batch
    reasons = [e.reason for e in rollout_events(plan=plan, old_cma_status=None, written=set(plan.widening), breaches={})[0]]
    assert "RolloutRetried" in reasons
    hub.agent(["c0", "c1"], 20, ready=False)
    hub.step(30)  # breached again: aborted again, at another time the stale retry does not name
    second = _record(hub)["default/p1"]
    assert second.time != first.time
    for now in (31, 40):
        hub.step(now)
        assert _record(hub)["default/p1"] == second
        assert all(hub.desired_hash(c) == [H("v1")] for c in CLUSTERS)


def test_a_new_desired_configuration_ends_the_abort() -> None:
    hub = _rename_breached()
    hub.step(15)
    _update(hub, "deploy-config-v3")
    hub.objects[(NS, "deploy-config-v3")] = H("v3")
    plan = hub.step(20)
    assert _record(hub) == {} and plan.widening == {"c0", "c1"}
    assert hub.desired_hash("c0") == [H("v3")]


def test_a_config_changed_in_place_stops_the_rollout_and_says_it_cannot_be_reverted() -> None:
    hub = _installed()
    _update(hub, "deploy-config")
    hub.objects[(NS, "deploy-config")] = H("v2")
    _breach(hub)
    plan = hub.step(15)
    assert plan.nodes[0].new_abort and plan.nodes[0].reverted == frozenset()
    assert [hub.desired_hash(c) for c in CLUSTERS] == [[H("v2")], [H("v2")], [H("v1")], [H("v1")]]
    condition = hub.cma_condition()
    assert (condition["status"], condition["reason"]) == ("False", "RolloutAborted")
    assert (
        f"It cannot be reverted: AddOnDeploymentConfig default/deploy-config was changed in place; its last known good "
        f"content (spec hash {H('v1')}) no longer exists; the add-ons keep their configurations." in condition["message"]
    )
    # Even when the failing add-ons recover, no other one gets the new configuration.
    hub.agent(["c0", "c1"], 20, ready=True)
    plan = hub.step(21)
    assert plan.widening == frozenset() and hub.desired_hash("c2") == [H("v1")]
    assert _record(hub)["default/p1"].cause == "maxFailures"


def test_an_unrevertible_abort_ends_once_every_add_on_succeeded_after_all() -> None:
    hub = _installed()
    _update(hub, "deploy-config", progressive(maxConcurrency=4, progressDeadline="5s", maxFailures=1) | {"failureStrategy": "AbortAll"})
    hub.objects[(NS, "deploy-config")] = H("v2")
    hub.step(10)
    hub.agent(["c0", "c1"], 10, ready=False)
    hub.agent(["c2", "c3"], 10, ready=True)
    hub.step(15)
    assert "default/p1" in _record(hub)
    hub.agent(["c0", "c1"], 20, ready=True)
    hub.step(21)
    assert _record(hub) == {} and hub.cma_condition()["reason"] == "Completed"


def test_without_a_failure_strategy_a_breach_only_stops_the_rollout() -> None:
    hub = _installed()
    _update(hub, "deploy-config-v2", progressive(maxConcurrency=2, progressDeadline="5s", maxFailures=1))
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    _breach(hub)
    plan = hub.step(15)
    assert plan.nodes[0].breach and _record(hub) == {}
    assert hub.desired_hash("c0") == [H("v2")]


def test_the_abort_event_is_told_once_and_replaces_the_breach_event() -> None:
    hub = _rename_breached()
    plan = hub.step(15)
    found, memory = rollout_events(plan=plan, old_cma_status=None, written=set(plan.mca_status), breaches={})
    aborted = [e for e in found if e.reason == "RolloutAborted"]
    assert len(aborted) == 1 and aborted[0].type == "Warning"
    assert "c0 (TimeOut" in aborted[0].message and "c1 (TimeOut" in aborted[0].message
    assert "returning the add-ons to the last known good configuration AddOnDeploymentConfig default/deploy-config" in aborted[0].message
    assert not [e for e in found if e.reason == "MaxFailuresBreached"]
    later = hub.step(16)
    assert [e.reason for e in rollout_events(plan=later, old_cma_status=None, written=set(), breaches=memory)[0]] == []


def test_a_requested_abort_lasts_while_the_annotation_names_the_revision() -> None:
    hub = _installed()
    _update(hub, "deploy-config-v2", progressive(maxConcurrency=2))
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    plan = hub.step(10)
    revision = plan.nodes[0].revision
    hub.annotate(ANNOTATION_ROLLOUT_ABORT, "some-other-revision")
    assert hub.step(11).nodes[0].aborted is None
    hub.annotate(ANNOTATION_ROLLOUT_ABORT, revision)
    plan = hub.step(12)
    assert plan.nodes[0].new_abort and _record(hub)["default/p1"].cause == "requested"
    assert all(hub.desired_hash(c) == [H("v1")] for c in CLUSTERS)
    hub.annotate(ANNOTATION_ROLLOUT_RETRY, _record(hub)["default/p1"].time)
    hub.step(13)
    assert "default/p1" in _record(hub)  # a retry does not end a requested abort: removing the request does
    hub.annotate(ANNOTATION_ROLLOUT_ABORT, None)
    plan = hub.step(14)
    assert plan.nodes[0].retried is not None and _record(hub) == {} and plan.widening == {"c0", "c1"}


def test_a_record_of_a_placement_no_longer_rolled_out_is_dropped() -> None:
    hub = _rename_breached()
    hub.step(15)
    hub.cma["spec"]["installStrategy"]["placements"] = []
    plan = hub.step(20)
    assert plan.aborts == {} and plan.aborts_changed


def test_a_damaged_record_is_reported_and_ignored() -> None:
    hub = _installed()
    hub.annotate(ANNOTATION_ROLLOUT_ABORTED, "{broken")
    plan = hub.plan(1)
    assert plan.abort_record_error is not None and plan.aborts == {}


# --- pause ---------------------------------------------------------------------------------------------


def test_paused_gives_no_add_on_a_new_config_and_resuming_continues_where_it_stopped() -> None:
    hub = _installed()
    _update(hub, "deploy-config-v2", progressive(maxConcurrency=2))
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    plan = hub.step(10)
    assert plan.widening == {"c0", "c1"}
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    hub.agent(["c0", "c1"], 11, ready=True)
    for now in (12, 20, 30):
        plan = hub.step(now)
        assert plan.widening == frozenset()
        assert [hub.desired_hash(c) for c in CLUSTERS] == [[H("v2")], [H("v2")], [H("v1")], [H("v1")]]
    condition = hub.cma_condition()
    assert (condition["status"], condition["reason"]) == ("Unknown", "RolloutPaused")
    assert condition["message"].startswith(f"Rollout paused (annotation {ANNOTATION_ROLLOUT_PAUSED}=true)")
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, None)
    plan = hub.step(31)
    assert plan.widening == {"c2", "c3"}
    hub.agent(["c2", "c3"], 32, ready=True)
    hub.step(33)
    assert hub.cma_condition()["reason"] == "Completed"


def test_paused_does_not_carry_out_a_reservation() -> None:
    hub = _installed()
    _update(hub, "deploy-config-v2", progressive(maxConcurrency=2))
    hub.objects[(NS, "deploy-config-v2")] = H("v2")
    plan = hub.plan(10)  # reserved, but the writes were never sent
    hub.reserved = plan.reservations
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    plan = hub.step(11)
    assert plan.reservations.of("default/p1") == {"c0", "c1"}  # still counted in flight
    assert all(hub.desired_hash(c) == [H("v1")] for c in CLUSTERS)


def test_paused_holds_the_default_configurations_too() -> None:
    the_cma = cma(defaults=None)
    mcas = {c: done(c, "default-config", H("old")) for c in CLUSTERS}
    hub = Hub(the_cma, mcas, {}, {(NS, "default-config"): H("new")})
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    plan = hub.step(1)
    assert plan.widening == frozenset() and all(hub.desired_hash(c) == [H("old")] for c in CLUSTERS)
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, None)
    assert hub.step(2).widening == set(CLUSTERS)


def test_paused_holds_a_revert_until_resumed() -> None:
    hub = _rename_breached()
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    plan = hub.step(15)
    assert plan.nodes[0].new_abort and plan.nodes[0].reverted == frozenset()
    assert hub.desired_hash("c0") == [H("v2")]
    assert "paused: the add-ons are returned once annotation" in hub.cma_condition()["message"]
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, None)
    assert hub.step(16).nodes[0].reverted == {"c0", "c1"}


# --- ocm-rollout status ------------------------------------------------------------------------------------


def test_status_shows_an_aborted_placement_and_a_paused_add_on() -> None:
    hub = _rename_breached()
    hub.step(15)
    record = _record(hub)["default/p1"]
    hub.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    report = build_addon_report(cma=hub.cma, mcas=hub.mcas, placements=hub.placements, now=at(16))
    text = render_addon_report(report)
    assert report.paused and report.placements[0].aborted == record
    assert f"PAUSED (annotation {ANNOTATION_ROLLOUT_PAUSED}=true)" in text
    assert f"ABORTED at {record.time} (failureStrategy AbortAll, maxFailures breached by 2 add-on(s): c0, c1)" in text
    assert "the add-ons return to the last known good configuration AddOnDeploymentConfig default/deploy-config" in text
    assert f"retry: annotation {ANNOTATION_ROLLOUT_RETRY}={record.time}" in text
    assert "maxFailures breached: no new clusters" not in text


def test_status_shows_why_an_aborted_placement_cannot_be_reverted() -> None:
    hub = _installed()
    _update(hub, "deploy-config")
    hub.objects[(NS, "deploy-config")] = H("v2")
    _breach(hub)
    hub.step(15)
    text = render_addon_report(build_addon_report(cma=hub.cma, mcas=hub.mcas, placements=hub.placements, now=at(16)))
    assert "cannot be reverted: AddOnDeploymentConfig default/deploy-config was changed in place" in text


def test_an_abort_request_for_a_completed_rollout_aborts_nothing() -> None:
    hub = _installed()
    revision = hub.step(1).nodes[0].revision
    hub.annotate(ANNOTATION_ROLLOUT_ABORT, revision)
    plan = hub.step(2)
    assert not plan.nodes[0].new_abort and plan.aborts == {} and hub.cma_condition()["reason"] == "Completed"
    found = rollout_events(plan=plan, old_cma_status=None, written=set(), breaches={})[0]
    assert [e.reason for e in found if e.reason.startswith("RolloutAbort")] == []
