"""The configuration rollout (docs/behaviour/addons.md 7, 8, 10, 11 and 13), improvement 1, incomplete decisions
and the rollout fence."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.addon_core import bench_core
from ocm_rollout.controllers.addon import configrollout
from ocm_rollout.controllers.addon import operator as addon_operator
from ocm_rollout.controllers.addon.configrollout import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    TO_APPLY,
    addon_rollout_status,
    merged_config_references,
    plan_config_rollout,
    set_condition,
)
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs, cma_status_references
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.rollout.reservations import EMPTY, Reservations
from ocm_rollout.controllers.rollout.timefmt import to_ns
from tests.unit.addon_fixtures import (
    ADC,
    NS,
    H,
    Hub,
    at,
    cfg,
    cma,
    cond,
    decision,
    done,
    hashes,
    inputs,
    mca,
    one_placement,
    per_group,
    placement,
    progressive,
    pstrategy,
    ref,
    strategy_all,
    ts,
)

CONFIGURED_TRUE = ("True", "ConfigurationsConfigured", "Configurations configured")
CONFIGURED_FALSE = ("False", "ConfigurationsNotConfigured", "Configurations updated and not configured yet")


def desired(*items: tuple[str, str]) -> DesiredConfigs:
    groups: dict[tuple[str, str], list[Config]] = {}
    for name, spec_hash in items:
        groups.setdefault(ADC, []).append(Config(*ADC, NS, name, spec_hash))
    return DesiredConfigs(groups)


def configured(status: dict[str, Any]) -> tuple[str, str, str] | None:
    for c in status.get("conditions", []):
        if c["type"] == "Configured":
            return c["status"], c["reason"], c["message"]
    return None


# --- 7: rollout status of one MCA -----------------------------------------------------------------


def test_status_is_to_apply_when_the_number_of_configs_differs() -> None:
    assert addon_rollout_status(mca("c", refs=[]), desired(("a", "h"))) == (TO_APPLY, None)
    assert addon_rollout_status(mca("c", refs=[ref("a", "h", applied="h"), ref("b", "h", applied="h")]), desired(("a", "h")))[0] is TO_APPLY


def test_status_is_to_apply_when_an_item_is_not_desired_or_has_another_hash() -> None:
    assert addon_rollout_status(mca("c", refs=[ref("b", "h", applied="h")]), desired(("a", "h")))[0] is TO_APPLY
    assert addon_rollout_status(mca("c", refs=[ref("a", "old", applied="old")]), desired(("a", "h")))[0] is TO_APPLY


def test_status_is_to_apply_when_an_item_has_no_desired_config() -> None:
    item = ref("a", "h", applied="h")
    del item["desiredConfig"]
    assert addon_rollout_status(mca("c", refs=[item]), desired(("a", "h")))[0] is TO_APPLY


def test_to_apply_wins_over_an_earlier_item_still_progressing() -> None:
    refs = [ref("a", "h", applied="old"), ref("z", "h", applied="h")]
    assert addon_rollout_status(mca("c", refs=refs), desired(("a", "h"), ("b", "h")))[0] is TO_APPLY


def test_status_follows_the_progressing_reason_while_something_is_not_applied() -> None:
    refs = [ref("a", "h", applied="old")]
    want = desired(("a", "h"))
    failed = mca("c", refs=refs, conditions=[cond("Progressing", "False", "Failed", 5)])
    assert addon_rollout_status(failed, want) == (FAILED, to_ns(at(5)))
    progressing = mca("c", refs=refs, conditions=[cond("Progressing", "True", "Progressing", 7)])
    assert addon_rollout_status(progressing, want) == (PROGRESSING, to_ns(at(7)))
    waiting = mca("c", refs=refs, conditions=[cond("Progressing", "False", "WaitingForManifestApplied", 9)])
    assert addon_rollout_status(waiting, want) == (PROGRESSING, None)
    assert addon_rollout_status(mca("c", refs=refs), want) == (PROGRESSING, None)


def test_never_applied_counts_as_progressing() -> None:
    assert addon_rollout_status(mca("c", refs=[ref("a", "h")]), desired(("a", "h")))[0] is PROGRESSING


def test_succeeded_carries_the_progressing_time_only_when_completed() -> None:
    refs = [ref("a", "h", applied="h")]
    want = desired(("a", "h"))
    assert addon_rollout_status(mca("c", refs=refs, conditions=[cond("Progressing", "False", "Completed", 3)]), want) == (SUCCEEDED, to_ns(at(3)))
    assert addon_rollout_status(mca("c", refs=refs, conditions=[cond("Progressing", "False", "ConfigurationUnsupported", 3)]), want) == (SUCCEEDED, None)


def test_an_mca_without_configs_is_succeeded() -> None:
    assert addon_rollout_status(mca("c"), DesiredConfigs()) == (SUCCEEDED, None)


def test_odd_status_shapes_read_as_to_apply_without_crashing() -> None:
    want = desired(("a", "h"))
    for status in ({"configReferences": [None]}, {"configReferences": [{"desiredConfig": {"name": ["x"]}}]}, {"configReferences": "x"}):
        assert addon_rollout_status({"status": status}, want)[0] is TO_APPLY
    assert addon_rollout_status({"status": "broken"}, DesiredConfigs())[0] is SUCCEEDED


# --- 8: writes to MCAs ---------------------------------------------------------------------------------


def test_merge_keeps_desired_items_with_their_applied_and_generation_and_updates_the_hash() -> None:
    old = [ref("a", "old", applied="old", og=4)]
    merged = merged_config_references(old, desired(("a", "new")))
    assert merged == [{**old[0], "desiredConfig": {"namespace": NS, "name": "a", "specHash": "new"}}]


def test_merge_appends_new_items_with_generation_zero_and_drops_undesired_ones() -> None:
    merged = merged_config_references([ref("gone", "h", applied="h")], desired(("b", "hb")))
    assert merged == [{"group": ADC[0], "resource": ADC[1], "lastObservedGeneration": 0,
                       "desiredConfig": {"namespace": NS, "name": "b", "specHash": "hb"}, "name": "b", "namespace": NS}]


def test_merge_orders_by_group_then_resource_keeping_kept_items_first_in_a_group() -> None:
    want = DesiredConfigs({("b", "r"): [Config("b", "r", "", "x")], ("a", "z"): [Config("a", "z", "", "y")],
                           ADC: [Config(*ADC, NS, "first"), Config(*ADC, NS, "second")]})
    merged = merged_config_references([ref("second", "", applied="")], want)
    assert [(m["group"], m["resource"], m["name"]) for m in merged] == [
        ("a", "z", "y"), (ADC[0], ADC[1], "second"), (ADC[0], ADC[1], "first"), ("b", "r", "x"),
    ]
    assert "namespace" not in merged[0] and "namespace" not in merged[0]["desiredConfig"]


def test_set_condition_moves_the_transition_time_only_on_a_flip_and_drops_observed_generation() -> None:
    old = [{**cond("Configured", "True", "A", 0, "m"), "observedGeneration": 3}]
    same_status = set_condition(old, "Configured", "True", "B", "n", ts(50))
    assert same_status == [{"type": "Configured", "status": "True", "lastTransitionTime": ts(0), "reason": "B", "message": "n"}]
    flipped = set_condition(old, "Configured", "False", "B", "n", ts(50))
    assert flipped is not None and flipped[0]["lastTransitionTime"] == ts(50)
    assert set_condition(same_status, "Configured", "True", "B", "n", ts(60)) is None
    assert set_condition(None, "Configured", "True", "B", "n", ts(60)) == [
        {"type": "Configured", "status": "True", "lastTransitionTime": ts(60), "reason": "B", "message": "n"}]


def test_rollout_list_mcas_get_the_desired_configs_and_configured_true() -> None:
    hub = one_placement(["c1"], strategy_all())
    plan = hub.plan(0)
    status = plan.mca_status["c1"]
    assert configured(status) == CONFIGURED_TRUE
    assert [r["desiredConfig"]["name"] for r in status["configReferences"]] == ["new-config"]
    assert plan.widening == {"c1"}


def test_to_apply_mcas_outside_the_rollout_list_only_get_configured_false() -> None:
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1))
    plan = hub.plan(0)
    status = plan.mca_status["c2"]
    assert configured(status) == CONFIGURED_FALSE
    assert status["configReferences"] == hub.mcas["c2"]["status"]["configReferences"]
    assert plan.widening == {"c1"}


def test_succeeded_mcas_get_configured_true() -> None:
    hub = one_placement(["c1"], strategy_all(), mcas={"c1": mca("c1", refs=[ref("new-config", H("new"), applied=H("new"))])})
    assert configured(hub.plan(0).mca_status["c1"]) == CONFIGURED_TRUE


def test_nothing_is_written_when_every_mca_is_up_to_date() -> None:
    hub = one_placement(["c1", "c2"], strategy_all(), mcas={c: done(c, "new-config", H("new")) for c in ("c1", "c2")})
    plan = hub.plan(0)
    assert plan.mca_status == {} and plan.widening == frozenset()


def test_timed_out_mcas_outside_the_rollout_list_are_left_alone() -> None:
    stuck = mca("c1", refs=[ref("new-config", H("new"), applied=H("old"))],
                conditions=[cond("Progressing", "True", "Progressing", 0), cond("Configured", "False", "X", 0)])
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1, progressDeadline="10s"),
                        mcas={"c1": stuck, "c2": done("c2", "old-config", H("old"))})
    plan = hub.plan(10)
    assert "c1" not in plan.mca_status
    assert plan.nodes[0].timed_out == {"c1"}


def test_progressing_mcas_in_the_rollout_list_are_reordered_and_marked_configured() -> None:
    two = mca("c1", refs=[ref("b", "hb"), ref("a", "ha", applied="ha")], conditions=[cond("Progressing", "True", "Progressing", 0)])
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("a"), cfg("b")])])
    hub = Hub(the_cma, {"c1": two}, inputs(("p1", [["c1"]])), {(NS, "a"): "ha", (NS, "b"): "hb"})
    plan = hub.plan(1)
    assert [r["name"] for r in plan.mca_status["c1"]["configReferences"]] == ["b", "a"]  # one group: kept order
    assert configured(plan.mca_status["c1"]) == CONFIGURED_TRUE and plan.widening == frozenset()


def test_configured_condition_keeps_its_time_when_only_the_message_changes() -> None:
    old = mca("c1", refs=[ref("new-config", H("new"), applied=H("new"))],
              conditions=[cond("Configured", "True", "ConfigurationsConfigured", -50, "older text")])
    hub = one_placement(["c1"], strategy_all(), mcas={"c1": old})
    new = hub.plan(0).mca_status["c1"]["conditions"][0]
    assert new["lastTransitionTime"] == ts(-50) and new["message"] == "Configurations configured"


def test_desired_configs_that_vanish_are_cleared_with_an_empty_list() -> None:
    the_cma = cma(defaults=[])
    hub = Hub(the_cma, {"c1": done("c1", "old-config", H("old"))}, {})
    status = hub.plan(0).mca_status["c1"]
    assert status["configReferences"] == [] and configured(status) == CONFIGURED_TRUE


def test_defaults_node_writes_every_mca_not_succeeded_at_once_without_reservation() -> None:
    the_cma = cma()
    mcas = {f"c{i}": done(f"c{i}", "default-config", H("old")) for i in range(5)}
    mcas["c9"] = done("c9", "default-config", H("test"))
    hub = Hub(the_cma, mcas, {}, {(NS, "default-config"): H("test")})
    plan = hub.plan(0)
    assert plan.widening == {f"c{i}" for i in range(5)}
    assert plan.reservations == EMPTY and plan.recheck_after is None
    assert "c9" not in plan.mca_status


def test_self_managed_cma_plans_nothing() -> None:
    hub = one_placement(["c1"], strategy_all())
    hub.cma["metadata"]["annotations"] = {"addon.open-cluster-management.io/lifecycle": "self"}
    plan = hub.plan(0)
    assert not plan.managed and plan.mca_status == {} and plan.nodes == []


# --- 10: the CMA's installProgressions -------------------------------------------------------------


def test_progressing_message_counts_in_flight_and_done_against_configured_total() -> None:
    mcas = {"c1": done("c1", "new-config", H("new")), "c2": done("c2", "old-config", H("old")), "c3": done("c3", "old-config", H("old"))}
    hub = one_placement(["c1", "c2", "c3"], progressive(maxConcurrency=1), mcas=mcas)
    hub.step(0)
    assert hub.cma_condition()["status"] == "True" and hub.cma_condition()["reason"] == "Progressing"
    assert hub.cma_message() == "selected clusters 3. configured addons 2/3 progressing..., 0 failed 0 timeout."


def test_completed_sets_last_applied_and_last_known_good_to_desired() -> None:
    hub = one_placement(["c1"], strategy_all(), mcas={"c1": done("c1", "new-config", H("new"))})
    hub.step(0)
    entry = hub.progression()
    assert hub.cma_condition()["reason"] == "Completed" and hub.cma_condition()["status"] == "False"
    assert hub.cma_message() == "selected clusters 1. configured addons 1/1 completed with no errors, 0 failed 0 timeout."
    item = entry["configReferences"][0]
    assert item["lastAppliedConfig"] == item["desiredConfig"] == item["lastKnownGoodConfig"]


def test_progression_condition_time_moves_only_on_a_flip() -> None:
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1))
    hub.step(0)
    first = hub.cma_condition()["lastTransitionTime"]
    hub.agent(["c1"], 5, ready=True)
    hub.step(10)
    assert hub.cma_condition()["lastTransitionTime"] == first
    assert "2/2 progressing" in hub.cma_message()


def test_done_counts_mcas_whose_own_configs_override_a_type_with_the_same_number_of_items() -> None:
    own = mca("c2", configs=[cfg("mine")], refs=[ref("mine", "hm", applied="hm")],
              conditions=[cond("Progressing", "False", "Completed", -100)])
    hub = one_placement(["c1", "c2"], strategy_all(), mcas={"c1": done("c1", "new-config", H("new")), "c2": own})
    hub.step(0)
    assert hub.cma_message().startswith("selected clusters 2. configured addons 2/2 completed")


def test_duplicate_own_configs_never_count_as_done() -> None:
    own = mca("c2", configs=[cfg("mine"), cfg("mine")], refs=[ref("mine", "hm", applied="hm")],
              conditions=[cond("Progressing", "False", "Completed", -100)])
    hub = one_placement(["c1", "c2"], strategy_all(), mcas={"c1": done("c1", "new-config", H("new")), "c2": own})
    hub.step(0)
    assert hub.cma_message() == "selected clusters 2. configured addons 1/2 progressing..., 0 failed 0 timeout."


def test_a_failed_mca_past_its_deadline_counts_as_failed_and_as_timeout() -> None:
    bad = mca("c1", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "False", "Failed", 0, "boom")])
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1, progressDeadline="10s", maxFailures=1),
                        mcas={"c1": bad, "c2": done("c2", "old-config", H("old"))})
    hub.step(20)
    assert hub.cma_message() == "selected clusters 2. configured addons 1/2 progressing..., 1 failed 1 timeout."
    assert hub.last is not None and hub.last.nodes[0].failures() == {"c1": ("TimeOut", "boom")}


def test_scenario_24_placement_selecting_no_clusters_stays_progressing() -> None:
    hub = Hub(cma(placements=[pstrategy("p1")]), {}, inputs(("p1", [])))
    hub.step(0)
    assert hub.cma_condition()["status"] == "True"
    assert hub.cma_message() == "selected clusters 0. configured addons 0/0 progressing..., 0 failed 0 timeout."


def test_scenario_22_overlapping_placements_count_only_the_clusters_they_configure() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("p1-config")]), pstrategy("p2", configs=[cfg("p2-config")])])
    mcas = {"c1": done("c1", "p1-config", "h1"), "c2": done("c2", "p2-config", "h2"), "c3": done("c3", "p2-config", "h2")}
    hub = Hub(the_cma, mcas, inputs(("p1", [["c1", "c2"]]), ("p2", [["c2", "c3"]])), {(NS, "p1-config"): "h1", (NS, "p2-config"): "h2"})
    plan = hub.step(0)
    assert hub.cma_message("p1") == "selected clusters 2. configured addons 1/1 completed with no errors, 0 failed 0 timeout."
    assert hub.cma_message("p2") == "selected clusters 2. configured addons 2/2 completed with no errors, 0 failed 0 timeout."
    assert plan.mca_status == {}


# --- 8, 11: requeue --------------------------------------------------------------------------------------


def test_recheck_after_is_the_nearest_deadline_however_far() -> None:
    """A deadline beyond the 10-minute resync is still reported: the operator looks again after
    one resync period (controllers.common.requeue), where it used to forget it."""
    flight = mca("c1", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", 0)])
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1, progressDeadline="10m"),
                        mcas={"c1": flight, "c2": done("c2", "old-config", H("old"))})
    assert hub.plan(60).recheck_after == 540
    hub.cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] = progressive(maxConcurrency=1, progressDeadline="20m")
    assert hub.plan(60).recheck_after == 1140
    assert next_look(hub.plan(60).recheck_after, addon_operator.RESYNC_SECONDS) == 600


def test_deadline_is_measured_from_a_progressing_time_older_than_the_change() -> None:
    flight = mca("c1", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", -100)])
    hub = one_placement(["c1"], progressive(progressDeadline="60s"), mcas={"c1": flight})
    assert hub.plan(0).nodes[0].timed_out == {"c1"}


def test_soak_is_measured_from_the_completed_time() -> None:
    fresh = mca("c1", refs=[ref("new-config", H("new"), applied=H("new"))], conditions=[cond("Progressing", "False", "Completed", -1)])
    hub = one_placement(["c1", "c2"], progressive(maxConcurrency=1, minSuccessTime="3s"),
                        mcas={"c1": fresh, "c2": done("c2", "old-config", H("old"))})
    plan = hub.plan(0)
    assert plan.nodes[0].rollout == {"c1"} and plan.recheck_after == 2 and plan.widening == frozenset()


# --- 13: scenarios, step by step ------------------------------------------------------------------------


def test_scenario_9_manual_cma_default_config_reaches_a_user_mca() -> None:
    hub = Hub(cma(), {"c1": mca("c1")}, {}, {(NS, "default-config"): H("test")})
    plan = hub.step(0)
    assert "installProgressions" not in plan.cma_status
    assert plan.cma_status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] == H("test")
    assert hub.mcas["c1"]["status"]["configReferences"] == [{
        "group": ADC[0], "resource": ADC[1], "lastObservedGeneration": 0,
        "desiredConfig": {"namespace": NS, "name": "default-config", "specHash": H("test")},
        "name": "default-config", "namespace": NS,
    }]


def test_scenario_10_missing_placement_config_is_desired_with_an_empty_hash() -> None:
    hub = one_placement(["c1"], strategy_all(), config="another-config", mcas={"c1": mca("c1")}, objects={})
    hub.step(0)
    item = hub.mcas["c1"]["status"]["configReferences"][0]
    assert item["desiredConfig"] == {"namespace": NS, "name": "another-config", "specHash": ""}
    assert item["lastObservedGeneration"] == 0 and "lastAppliedConfig" not in item


def test_scenario_11_12_own_config_hash_comes_from_the_mca_and_bypasses_the_strategy() -> None:
    # c0 is in flight (maxConcurrency 1 used up); c1's own ADC changed from test1 to test2 through
    # the MCA's hash writer: c1 is Progressing (not ToApply), so nothing holds it back (QUIRK).
    flight = mca("c0", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", 0)])
    own = mca("c1", configs=[cfg("own")], refs=[ref("own", H("test2"), applied=H("test1"), og=2)],
              conditions=[cond("Progressing", "True", "Progressing", 0)])
    hub = one_placement(["c0", "c1"], progressive(maxConcurrency=1), mcas={"c0": flight, "c1": own})
    plan = hub.step(1)
    assert plan.nodes[0].statuses["c1"] == PROGRESSING
    assert hub.desired_hash("c1") == [H("test2")]


def test_scenario_13_unsupported_own_config_is_desired_next_to_the_default() -> None:
    own = mca("c1", configs=[cfg("x", group="other.io", resource="things")],
              refs=[ref("default-config", H("test"), applied=H("test"), og=1)])
    hub = Hub(cma(), {"c1": own}, {}, {(NS, "default-config"): H("test")})
    hub.step(0)
    items = hub.mcas["c1"]["status"]["configReferences"]
    assert [(i["group"], i["desiredConfig"]["specHash"], i["lastObservedGeneration"]) for i in items] == [
        (ADC[0], H("test"), 1), ("other.io", "", 0),
    ]


def test_scenario_14_two_placement_configs_keep_their_order_on_the_mca() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("config-first"), cfg("config-second")])])
    hub = Hub(the_cma, {"c1": mca("c1")}, inputs(("p1", [["c1"]])), {(NS, "config-first"): "h1", (NS, "config-second"): "h2"})
    hub.step(0)
    assert [r["name"] for r in hub.mcas["c1"]["status"]["configReferences"]] == ["config-first", "config-second"]
    assert hub.desired_hash("c1") == ["h1", "h2"]


def test_scenario_15_duplicate_own_configs_give_one_item_and_a_rename_starts_fresh() -> None:
    dup = mca("c1", configs=[cfg("own"), cfg("own")])
    hub = Hub(cma(), {"c1": dup}, {}, {(NS, "own"): "ho"})
    hub.step(0)
    assert [r["name"] for r in hub.mcas["c1"]["status"]["configReferences"]] == ["own"]

    hub = one_placement(["c1"], strategy_all(), config="renamed", mcas={"c1": done("c1", "old-config", H("old"))})
    hub.step(0)
    items = hub.mcas["c1"]["status"]["configReferences"]
    assert len(items) == 1 and items[0]["name"] == "renamed"
    assert items[0]["lastObservedGeneration"] == 0 and "lastAppliedConfig" not in items[0]


def _fleet() -> Hub:
    """docs/behaviour/addons.md 13.16 fixture: All, 4 clusters in 2 decision groups, placement config ``test-config``."""
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("test-config")], rollout=strategy_all())])
    mcas = {c: mca(c) for c in ("c0", "c1", "c2", "c3")}
    return Hub(the_cma, mcas, inputs(("p1", [["c0", "c1"], ["c2", "c3"]])), {(NS, "test-config"): H("test")})


def test_scenarios_16_to_21_step_by_step() -> None:
    hub = _fleet()
    everyone = ["c0", "c1", "c2", "c3"]

    # 16: fresh install, All.
    plan = hub.step(0)
    assert plan.widening == set(everyone)
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 progressing..., 0 failed 0 timeout."
    hub.agent(everyone, 5, ready=True)
    hub.step(10)
    for c in everyone:
        assert hub.desired_hash(c) == hub.applied_hash(c) == [H("test")]
        assert hub.mca_condition(c, "Configured")["reason"] == "ConfigurationsConfigured"  # type: ignore[index]
    assert hub.cma_condition()["reason"] == "Completed"
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 completed with no errors, 0 failed 0 timeout."
    item = hub.progression()["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["lastKnownGoodConfig"]["specHash"] == H("test")

    # 17: the ADC changes to test1 (All): every MCA at once; works stay ready.
    hub.objects[(NS, "test-config")] = H("test1")
    plan = hub.step(20)
    assert plan.widening == set(everyone)
    hub.agent(everyone, 21, ready=True)
    hub.step(22)
    assert all(hub.applied_hash(c) == [H("test1")] for c in everyone)
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 completed with no errors, 0 failed 0 timeout."

    # 18: works of c0, c1 unready; Progressive maxConcurrency 2, deadline 5s, maxFailures 1; new config.
    hub.agent(["c0", "c1"], 100, ready=False)
    placement_spec = hub.cma["spec"]["installStrategy"]["placements"][0]
    placement_spec["rolloutStrategy"] = progressive(maxConcurrency=2, progressDeadline="5s", maxFailures=1)
    placement_spec["configs"] = [cfg("update-config")]
    hub.objects[(NS, "update-config")] = H("test2")
    plan = hub.step(101)
    assert plan.widening == {"c0", "c1"}
    assert hub.desired_hash("c0") == hub.desired_hash("c1") == [H("test2")]
    assert hub.desired_hash("c2") == hub.applied_hash("c2") == [H("test1")]
    assert hub.mca_condition("c2", "Configured")["reason"] == "ConfigurationsNotConfigured"  # type: ignore[index]
    assert hub.mca_condition("c0", "Configured")["reason"] == "ConfigurationsConfigured"  # type: ignore[index]
    assert hub.cma_message() == "selected clusters 4. configured addons 2/4 progressing..., 0 failed 0 timeout."

    # 19: within 5 s of the Progressing time (100) no timeout; from 105 on, breach.
    hub.step(104)
    assert hub.cma_message() == "selected clusters 4. configured addons 2/4 progressing..., 0 failed 0 timeout."
    plan = hub.step(105)
    assert hub.cma_message() == "selected clusters 4. configured addons 0/4 progressing..., 0 failed 2 timeout."
    assert plan.nodes[0].breach and plan.widening == frozenset()
    assert hub.desired_hash("c2") == [H("test1")]

    # 20: c0, c1 ready, c3 unready: the rollout continues to c2, c3.
    hub.agent(["c0", "c1"], 200, ready=True)
    hub.agent(["c3"], 200, ready=False)
    plan = hub.step(201)
    assert plan.widening == {"c2", "c3"}
    assert hub.applied_hash("c0") == [H("test2")]
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 progressing..., 0 failed 0 timeout."
    hub.agent(["c2", "c3"], 210, ready=True)
    hub.step(211)
    assert hub.cma_condition()["reason"] == "Completed"
    item = hub.progression()["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["lastKnownGoodConfig"]["specHash"] == H("test2")

    # 21: ProgressivePerGroup minSuccessTime 3s; the ADC changes to test3; c0, c1 unready.
    placement_spec["rolloutStrategy"] = per_group(minSuccessTime="3s")
    hub.objects[(NS, "update-config")] = H("test3")
    hub.agent(["c0", "c1"], 300, ready=False)
    plan = hub.step(301)
    assert plan.widening == {"c0", "c1"}
    assert hub.desired_hash("c2") == [H("test2")]
    assert hub.mca_condition("c2", "Configured")["reason"] == "ConfigurationsNotConfigured"  # type: ignore[index]
    assert hub.cma_message() == "selected clusters 4. configured addons 2/4 progressing..., 0 failed 0 timeout."
    hub.agent(["c0", "c1"], 310, ready=True)
    for t in (310, 311, 312.9):  # soaking: group 1 must not start early
        plan = hub.step(t)
        assert plan.widening == frozenset() and hub.desired_hash("c2") == [H("test2")]
        assert hub.cma_message() == "selected clusters 4. configured addons 2/4 progressing..., 0 failed 0 timeout."
    plan = hub.step(313)
    assert plan.widening == {"c2", "c3"}
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 progressing..., 0 failed 0 timeout."
    assert hub.progression()["configReferences"][0]["lastAppliedConfig"]["specHash"] == H("test2")
    hub.agent(["c2", "c3"], 314, ready=False)  # their works lag behind the new config for a while
    hub.agent(["c2", "c3"], 320, ready=True)
    hub.step(322.5)
    assert hub.cma_condition()["reason"] == "Progressing"
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 progressing..., 0 failed 0 timeout."
    hub.step(323)
    assert hub.cma_message() == "selected clusters 4. configured addons 4/4 completed with no errors, 0 failed 0 timeout."
    item = hub.progression()["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["lastKnownGoodConfig"]["specHash"] == H("test3")


def test_quirk_a_false_to_false_progressing_change_keeps_the_older_time_and_shortens_the_soak() -> None:
    # WaitingForManifestApplied (False, since -100) -> Completed keeps the time: no soak left.
    waiting = mca("a", refs=[ref("new-config", H("new"))], conditions=[cond("Progressing", "False", "WaitingForManifestApplied", -100)])
    hub = one_placement(["a", "b"], per_group(minSuccessTime="60s"),
                        mcas={"a": waiting, "b": done("b", "old-config", H("old"))}, groups=[["a"], ["b"]])
    hub.agent(["a"], 0, ready=True)
    assert hub.mca_condition("a", "Progressing")["lastTransitionTime"] == ts(-100)  # type: ignore[index]
    assert hub.plan(1).widening == {"b"}


def test_progressive_uses_clusters_per_decision_group_as_batch() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("new-config")], rollout=progressive())])
    mcas = {c: done(c, "old-config", H("old")) for c in ("a", "b", "c", "d")}
    hub = Hub(the_cma, mcas, inputs(("p1", [["a", "b", "c", "d"]], placement("p1", per_group=3))), {(NS, "new-config"): H("new")})
    assert hub.plan(0).widening == {"a", "b", "c"}


def test_progressive_mandatory_group_goes_first() -> None:
    hub = one_placement(["a", "b", "c", "d"], progressive(mandatoryDecisionGroups=[{"groupIndex": 1}], maxConcurrency=1),
                        groups=[["a", "b"], ["c", "d"]])
    assert hub.plan(0).widening == {"c", "d"}


# --- improvement 1 -----------------------------------------------------------------------------------


def _two_placements(missing: str = "p1") -> Hub:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("new-config")]), pstrategy("p2", configs=[cfg("new-config")])])
    mcas = {c: done(c, "old-config", H("old")) for c in ("a", "b", "lonely")}
    placements = inputs(("p1", [["a"]]), ("p2", [["b"]]))
    placements.pop((NS, missing), None)
    return Hub(the_cma, mcas, placements, {(NS, "new-config"): H("new"), (NS, "default-config"): H("d")})


def test_a_missing_placement_holds_only_its_own_rollout_and_the_unselected_mcas() -> None:
    hub = _two_placements("p1")
    plan = hub.step(0)
    assert plan.widening == {"b"}
    assert "lonely" not in plan.mca_status and "a" not in plan.mca_status
    condition = hub.cma_condition("p1")
    assert (condition["status"], condition["reason"]) == ("True", "PlacementNotFound")
    assert "default/p1" in condition["message"] and "keep their current configuration" in condition["message"]
    assert hub.cma_message("p2") == "selected clusters 1. configured addons 1/1 progressing..., 0 failed 0 timeout."


def test_a_missing_placement_keeps_its_reservations() -> None:
    hub = _two_placements("p1")
    hub.reserved = Reservations({"default/p1": frozenset({"a"}), "default/gone": frozenset({"x"})})
    plan = hub.plan(0)
    assert plan.reservations.of("default/p1") == {"a"} and plan.reservations.of("default/gone") == frozenset()


def test_invalid_decisions_hold_the_placement_with_their_own_reason() -> None:
    hub = _two_placements("p2")
    hub.placements[(NS, "p2")] = PlacementInput(placement("p2"), [decision("p2", ["b"], index="first")])
    plan = hub.step(0)
    assert plan.widening == {"a"}
    condition = hub.cma_condition("p2")
    assert condition["reason"] == "InvalidPlacementDecisions" and "default/p2" in condition["message"]
    assert "lonely" not in plan.mca_status


def test_an_invalid_strategy_holds_only_that_placement() -> None:
    hub = _two_placements("nothing")
    hub.cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] = {"type": "Sometimes"}
    plan = hub.step(0)
    assert plan.widening == {"b", "lonely"}
    condition = hub.cma_condition("p1")
    assert (condition["status"], condition["reason"]) == ("True", "InvalidRolloutStrategy")
    assert "default/p1" in condition["message"] and "Sometimes" in condition["message"]
    assert plan.nodes[0].error is not None and "a" not in plan.mca_status


def test_rollout_type_contradicting_type_holds_only_that_placement_naming_rollout_type() -> None:
    hub = _two_placements("nothing")
    hub.cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] = {"type": "All", "rolloutType": "Progressive"}
    plan = hub.step(0)
    assert plan.widening == {"b", "lonely"}
    condition = hub.cma_condition("p1")
    assert (condition["status"], condition["reason"]) == ("True", "InvalidRolloutStrategy")
    assert "spec.installStrategy.placements[0].rolloutStrategy.rolloutType" in condition["message"]


def test_an_invalid_max_concurrency_found_while_planning_holds_the_placement() -> None:
    hub = one_placement(["a"], progressive(maxConcurrency="half"))
    plan = hub.plan(0)
    assert plan.nodes[0].error_reason == "InvalidRolloutStrategy" and plan.mca_status == {}


# --- incomplete decisions -------------------------------------------------------------------------------


def test_incomplete_decisions_put_no_new_cluster_in_flight_and_say_why() -> None:
    hub = one_placement(["a", "b"], strategy_all())
    hub.placements[(NS, "p1")] = PlacementInput(placement("p1", selected=3), hub.placements[(NS, "p1")].decisions)
    plan = hub.step(0)
    assert plan.widening == frozenset() and plan.reservations == EMPTY
    assert configured(plan.mca_status["a"]) == CONFIGURED_FALSE
    assert "Waiting for complete decisions" in hub.cma_message() and "2 of its 3" in hub.cma_message()


def test_incomplete_decisions_are_never_completed() -> None:
    hub = one_placement(["a"], strategy_all(), mcas={"a": done("a", "new-config", H("new"))})
    hub.placements[(NS, "p1")] = PlacementInput(placement("p1", selected=2), hub.placements[(NS, "p1")].decisions)
    hub.step(0)
    assert hub.cma_condition()["reason"] == "Progressing" and "1/1 progressing" in hub.cma_message()


def test_complete_decisions_with_a_selected_count_roll_out() -> None:
    hub = one_placement(["a", "b"], strategy_all())
    hub.placements[(NS, "p1")] = PlacementInput(placement("p1", selected=2), hub.placements[(NS, "p1")].decisions)
    assert hub.plan(0).widening == {"a", "b"}


# --- the fence ------------------------------------------------------------------------------------------


def test_widening_writes_are_reserved_under_the_placement() -> None:
    hub = one_placement(["a", "b", "c"], progressive(maxConcurrency=2))
    plan = hub.plan(0)
    assert plan.reservations == Reservations({"default/p1": frozenset({"a", "b"})})


def test_reserved_clusters_count_in_flight_before_new_ones() -> None:
    hub = one_placement(["a", "b", "c", "d"], progressive(maxConcurrency=2))
    hub.reserved = Reservations({"default/p1": frozenset({"c", "d"})})
    plan = hub.plan(0)
    assert plan.widening == {"c", "d"}  # carried out; OCM (no record) would pick a and b
    assert plan.reservations.of("default/p1") == {"c", "d"}


def test_a_reservation_is_dropped_once_the_mca_shows_the_desired_configs() -> None:
    shown = mca("c", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", 0)])
    hub = one_placement(["a", "b", "c"], progressive(maxConcurrency=2),
                        mcas={"a": done("a", "old-config", H("old")), "b": done("b", "old-config", H("old")), "c": shown})
    hub.reserved = Reservations({"default/p1": frozenset({"c"})})
    plan = hub.plan(1)
    assert plan.widening == {"a"} and plan.reservations.of("default/p1") == {"a"}


def test_a_reservation_of_a_cluster_that_left_the_placement_is_dropped() -> None:
    hub = one_placement(["a"], progressive(maxConcurrency=1))
    hub.reserved = Reservations({"default/p1": frozenset({"left"})})
    plan = hub.plan(0)
    assert plan.widening == {"a"} and plan.reservations.of("default/p1") == {"a"}


def test_a_reservation_of_a_decided_cluster_without_mca_is_kept_and_occupies_a_slot() -> None:
    hub = one_placement(["a", "b"], progressive(maxConcurrency=1))
    hub.placements = inputs(("p1", [["a", "b", "new"]]))
    hub.reserved = Reservations({"default/p1": frozenset({"new"})})
    plan = hub.plan(0)
    assert plan.widening == frozenset() and plan.reservations.of("default/p1") == {"new"}


def test_widening_beyond_the_per_pass_limit_is_deferred() -> None:
    hub = one_placement(["a", "b", "c"], strategy_all())
    status = cma_status_references(hub.cma, hashes(hub.objects))
    plan = plan_config_rollout(cma={**hub.cma, "status": status}, mcas=hub.mcas, placements=hub.placements,
                               reserved=EMPTY, now=at(0), max_new_reservations=1)
    assert plan.widening == {"a"} and plan.deferred == 2
    # The deferred ones are not written: the next pass configures them.
    assert set(plan.mca_status) == {"a"}
    assert plan.reservations.of("default/p1") == {"a"}


def test_widening_stops_at_the_bytes_of_the_new_names_in_the_record() -> None:
    # 1,100 names of 61 characters: 64 bytes each in the record, 1,024 in 64 KiB.
    clusters = [f"c{i:04d}".ljust(61, "x") for i in range(1100)]
    hub = one_placement(clusters, strategy_all())
    status = cma_status_references(hub.cma, hashes(hub.objects))
    plan = plan_config_rollout(cma={**hub.cma, "status": status}, mcas=hub.mcas, placements=hub.placements,
                               reserved=EMPTY, now=at(0))
    assert len(plan.widening) == 1024 and plan.deferred == 76
    assert plan.widening == set(sorted(clusters)[:1024])


def test_carrying_out_a_reservation_needs_no_new_budget() -> None:
    hub = one_placement(["a", "b"], strategy_all())
    status = cma_status_references(hub.cma, hashes(hub.objects))
    plan = plan_config_rollout(cma={**hub.cma, "status": status}, mcas=hub.mcas, placements=hub.placements,
                               reserved=Reservations({"default/p1": frozenset({"b"})}), now=at(0), max_new_reservations=0)
    assert plan.widening == {"b"} and plan.deferred == 1


def test_reservations_of_placements_no_longer_rolled_out_are_dropped() -> None:
    hub = Hub(cma(), {"a": mca("a")}, {}, {(NS, "default-config"): "h"})
    hub.reserved = Reservations({"default/p1": frozenset({"a"})})
    assert hub.plan(0).reservations == EMPTY


STATES = ("to_apply", "in_flight", "in_flight_no_time", "timed_out", "failed_in_time", "succeeded", "no_mca")


def _mca_in(state: str, cluster: str) -> dict[str, Any] | None:
    pending = [ref("new-config", H("new"), applied=H("old"))]
    if state == "to_apply":
        return done(cluster, "old-config", H("old"))
    if state == "in_flight":
        return mca(cluster, refs=pending, conditions=[cond("Progressing", "True", "Progressing", 40)])
    if state == "in_flight_no_time":
        return mca(cluster, refs=pending, conditions=[cond("Progressing", "False", "WaitingForManifestApplied", 0)])
    if state == "timed_out":
        return mca(cluster, refs=pending, conditions=[cond("Progressing", "True", "Progressing", -500)])
    if state == "failed_in_time":
        return mca(cluster, refs=pending, conditions=[cond("Progressing", "False", "Failed", 40)])
    if state == "succeeded":
        return done(cluster, "new-config", H("new"))
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=9),
    reserved_mask=st.lists(st.booleans(), min_size=9, max_size=9),
    concurrency=st.integers(min_value=1, max_value=9),
    group_size=st.integers(min_value=1, max_value=4),
    max_failures=st.integers(min_value=0, max_value=3),
)
def test_fence_in_flight_clusters_never_exceed_max_concurrency(
    states: list[str], reserved_mask: list[bool], concurrency: int, group_size: int, max_failures: int
) -> None:
    clusters = [f"c{i}" for i in range(len(states))]
    concurrency = min(concurrency, len(clusters))
    mcas = {c: m for c, s in zip(clusters, states, strict=True) if (m := _mca_in(s, c)) is not None}
    groups = [clusters[i:i + group_size] for i in range(0, len(clusters), group_size)]
    rollout = progressive(maxConcurrency=concurrency, progressDeadline="100s", maxFailures=max_failures)
    hub = one_placement(clusters, rollout, mcas=mcas, groups=groups)
    reserved = {c for c, s, r in zip(clusters, states, reserved_mask, strict=False) if r and s in ("to_apply", "no_mca")}
    in_flight = {c for c, s in zip(clusters, states, strict=True) if s in ("in_flight", "in_flight_no_time", "failed_in_time")}
    before = in_flight | reserved
    if len(before) > concurrency:
        return
    hub.reserved = Reservations({"default/p1": frozenset(reserved)} if reserved else {})
    plan = hub.plan(50)
    after = before | plan.widening
    assert len(after) <= concurrency
    assert plan.widening <= set(plan.reservations.of("default/p1"))
    assert set(plan.reservations.of("default/p1")) <= after
    # A second instance reading the record before the MCA writes land sees the same bound.
    hub.reserved = plan.reservations
    again = hub.plan(50)
    assert len(before | plan.widening | again.widening) <= concurrency


def test_defaults_held_do_not_get_written_even_when_not_succeeded() -> None:
    hub = _two_placements("p2")
    plan = hub.plan(0)
    assert plan.defaults is not None and plan.defaults.error is not None
    assert plan.defaults.statuses == {"b": TO_APPLY, "lonely": TO_APPLY}  # b may be p2's
    assert plan.mca_status.keys() == {"a"}


def test_timing_of_one_pass_over_10000_mcas() -> None:
    timings = bench_core(10_000, repeats=3)
    print("plan_config_rollout over 10,000 MCAs, best of 3 (ms): "
          + ", ".join(f"{state} {ms:.1f}" for state, ms in timings.items()))
    assert set(timings) == {"steady", "changed", "rolling"}


def test_a_pass_leaves_the_garbage_collector_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector is process-wide: a pass (in a worker thread beside others) never switches it off."""
    enabled_while_planning: list[bool] = []
    plan_rollout = configrollout.plan_rollout

    def spy(*args: Any, **kwargs: Any) -> Any:
        enabled_while_planning.append(gc.isenabled())
        return plan_rollout(*args, **kwargs)

    monkeypatch.setattr(configrollout, "plan_rollout", spy)
    assert gc.isenabled()
    one_placement(["a", "b"], progressive(maxConcurrency=1)).plan(0)
    assert enabled_while_planning == [True]
    assert gc.isenabled()


def test_plan_leaves_inputs_unchanged() -> None:
    import copy

    hub = one_placement(["a", "b"], progressive(maxConcurrency=1))
    before = copy.deepcopy((hub.cma, hub.mcas))
    hub.plan(0)
    assert (hub.cma, hub.mcas) == before


def test_a_pass_over_its_own_result_writes_nothing_more() -> None:
    hub = one_placement(["a", "b", "c"], progressive(maxConcurrency=2))
    hub.step(0)
    hub.agent(["a", "b"], 1, ready=True)
    hub.step(2)
    hub.agent(["c"], 3, ready=True)
    hub.step(4)
    status = hub.cma["status"]
    plan = hub.plan(5)
    assert plan.mca_status == {} and plan.cma_status == status and plan.reservations == EMPTY


def test_node_report_counts_statuses_per_cluster_for_metrics() -> None:
    stuck = mca("b", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", 0)])
    hub = one_placement(["a", "b"], progressive(maxConcurrency=1, progressDeadline="5s"),
                        mcas={"a": done("a", "new-config", H("new")), "b": stuck})
    hub.placements = inputs(("p1", [["a", "b"], ["no-mca"]]))
    node = hub.plan(10).nodes[0]
    assert node.status_counts() == {"Succeeded": 1, "TimeOut": 1, "ToApply": 1}
    assert node.group_of("no-mca") == ("", 1) and node.group_of("x") is None


def test_the_whole_record_stays_within_its_bound_when_no_mca_write_is_ever_observed() -> None:
    """MCA writes the API server keeps refusing leave their reservations in the record: each
    pass adds no more than keeps the record within MAX_RECORD_BYTES (it used to add 64 KiB per
    pass, until the CMA's annotations passed 256 KiB and its own write was refused)."""
    from ocm_rollout.controllers.rollout import reservations

    clusters = [f"c{i:04d}".ljust(61, "x") for i in range(4000)]
    hub = one_placement(clusters, strategy_all())
    status = cma_status_references(hub.cma, hashes(hub.objects))
    record = EMPTY
    sizes = []
    for _ in range(5):  # the MCAs never change: no write is observed
        plan = plan_config_rollout(cma={**hub.cma, "status": status}, mcas=hub.mcas, placements=hub.placements,
                                   reserved=record, now=at(0))
        record = plan.reservations
        sizes.append(reservations.record_bytes(record))
    assert [s // 64 for s in sizes] == [1024, 2047, 2047, 2047, 2047]
    assert record.of("default/p1") == set(sorted(clusters)[:2047])
    assert plan.deferred == 4000 - 2047
    assert not reservations.repass_now(plan.deferred, record, plan.reservations)
