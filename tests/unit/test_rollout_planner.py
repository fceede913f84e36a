"""The planner, rule by rule (docs/behaviour/rollout.md sections 4 to 13), through the JSON contract of
``ocm-rollout plan`` (``plan_document`` + ``encode_plan``) and, where the Python API matters,
through ``plan_rollout``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.controllers.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    RolloutStatus,
    decode_strategy,
    plan_rollout,
)
from ocm_rollout.controllers.rollout.wire import encode_plan, plan_document

NOW_DT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NOW = "2024-05-01T12:00:00Z"


def at(seconds: float) -> str:
    """RFC 3339 time ``seconds`` after NOW (negative: before)."""
    return (NOW_DT + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def grp(index: int, *clusters: str, name: str | None = None) -> dict[str, Any]:
    return {
        "groupName": f"g{index}" if name is None else name,
        "groupIndex": index,
        "clusters": list(clusters),
    }


def rep(cluster: str, status: str, ltt: float | None = None) -> dict[str, Any]:
    """A reported status; ``ltt`` in seconds relative to NOW (None: null)."""
    return {"clusterName": cluster, "status": status, "lastTransitionTime": None if ltt is None else at(ltt)}


def run(
    strategy: dict[str, Any], groups: list[dict[str, Any]], existing: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    doc = {"now": NOW, "strategy": strategy, "decisionGroups": groups, "existing": list(existing)}
    return encode_plan(plan_document(doc))


def names(out: dict[str, Any], key: str = "clustersToRollout") -> list[str]:
    return [entry["clusterName"] for entry in out[key]]


def entry(out: dict[str, Any], cluster: str, key: str = "clustersToRollout") -> dict[str, Any]:
    (found,) = [item for item in out[key] if item["clusterName"] == cluster]
    return found


def all_(**body: Any) -> dict[str, Any]:
    return {"type": "All", "all": body}


def prog(**body: Any) -> dict[str, Any]:
    return {"type": "Progressive", "progressive": body}


def ppg(**body: Any) -> dict[str, Any]:
    return {"type": "ProgressivePerGroup", "progressivePerGroup": body}


MIN = 60.0


# --- section 4: decision groups ----------------------------------------------------------------


def test_groups_with_the_same_name_and_index_merge() -> None:
    groups = [grp(0, "a", "b"), grp(0, "c", "d")]
    existing = [rep("a", "TimeOut"), rep("b", "TimeOut")]
    out = run(ppg(maxFailures="50%"), groups, existing)
    # one group of 4 tolerates 2 failures: no breach, the two unreported clusters go
    assert out["maxFailureBreach"] is False
    assert names(out) == ["c", "d"]


def test_groups_are_walked_by_ascending_index_whatever_the_input_order() -> None:
    out = run(ppg(), [grp(1, "b"), grp(0, "a")])
    assert names(out) == ["a"]


def test_groups_with_an_index_at_or_above_the_number_of_indexes_are_never_rolled_out() -> None:
    out = run(all_(), [grp(0, "a"), grp(2, "c")])
    assert names(out) == ["a"]


def test_group_visibility_counts_distinct_indexes() -> None:
    out = run(all_(), [grp(1, "b"), grp(2, "c")])
    assert names(out) == ["b"]


def test_mandatory_reference_by_name_selects_every_index_with_that_name() -> None:
    groups = [grp(0, "a", name="canary"), grp(1, "b", name="prod"), grp(2, "c", name="canary")]
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "canary", "groupIndex": 5}])
    out = run(strategy, groups, [rep("a", "Succeeded", -MIN)])
    assert names(out) == ["c"]


def test_mandatory_reference_without_name_selects_by_index_and_empty_reference_means_index_0() -> None:
    groups = [grp(0, "a"), grp(1, "b")]
    assert names(run(prog(mandatoryDecisionGroups=[{}]), groups)) == ["a"]
    assert names(run(prog(mandatoryDecisionGroups=[{"groupName": "", "groupIndex": 1}]), groups)) == ["b"]


def test_mandatory_references_matching_nothing_are_ignored() -> None:
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "nope"}, {"groupIndex": 9}])
    assert names(run(strategy, [grp(0, "a"), grp(1, "b")])) == ["a", "b"]


def test_an_out_of_range_group_selected_as_mandatory_is_rolled_out() -> None:
    out = run(prog(mandatoryDecisionGroups=[{"groupIndex": 5}]), [grp(0, "a"), grp(5, "z")])
    assert names(out) == ["z"]


# --- section 5: current and removed clusters ----------------------------------------------------


def test_removed_clusters_are_reported_as_given_without_judging() -> None:
    out = run(all_(progressDeadline="10m"), [grp(0, "a")], [rep("gone", "Progressing", -60 * MIN)])
    assert out["clustersRemoved"] == [
        {
            "clusterName": "gone",
            "groupName": "",
            "groupIndex": 0,
            "status": "Progressing",
            "lastTransitionTime": at(-60 * MIN),
            "recheckTime": None,
        }
    ]
    assert out["clustersTimeOut"] == []


def test_removed_clusters_keep_input_order_in_the_python_api() -> None:
    existing = [ClusterRolloutStatus(name, RolloutStatus.SUCCEEDED) for name in ("z", "b", "y")]
    result = plan_rollout({"type": "All"}, [DecisionGroup(group_index=0, clusters=["b"])], existing, NOW_DT)
    assert [item.cluster_name for item in result.clusters_removed] == ["z", "y"]


def test_removed_clusters_are_not_counted_as_failures() -> None:
    out = run(prog(), [grp(0, "a")], [rep("gone", "TimeOut")])
    assert out["maxFailureBreach"] is False
    assert names(out) == ["a"]


def test_reported_and_new_clusters_are_labelled_with_their_group() -> None:
    out = run(all_(), [grp(0, "a", name="canary"), grp(1, "b", name="prod")], [rep("b", "Progressing")])
    assert (entry(out, "a")["groupName"], entry(out, "a")["groupIndex"]) == ("canary", 0)
    assert (entry(out, "b")["groupName"], entry(out, "b")["groupIndex"]) == ("prod", 1)


def test_a_removed_cluster_still_in_an_out_of_range_group_carries_that_group() -> None:
    out = run(all_(), [grp(0, "a"), grp(3, "z", name="late")], [rep("z", "Succeeded")])
    assert (
        entry(out, "z", "clustersRemoved")["groupName"],
        entry(out, "z", "clustersRemoved")["groupIndex"],
    ) == (
        "late",
        3,
    )


def test_an_entry_with_an_empty_cluster_name_is_removed_and_never_judged() -> None:
    out = run(prog(), [grp(0, "a")], [rep("", "Failed")])
    assert names(out, "clustersRemoved") == [""]
    assert out["maxFailureBreach"] is False
    assert names(out) == ["a"]


def test_an_empty_cluster_name_in_a_group_is_not_a_cluster() -> None:
    assert names(run(all_(), [grp(0, "", "a")])) == ["a"]


# --- section 6: judging one reported cluster -------------------------------------------------------


def test_reported_to_apply_goes_to_rollout_unchanged() -> None:
    out = run(all_(progressDeadline="10m"), [grp(0, "a")], [rep("a", "ToApply", -5 * MIN)])
    assert entry(out, "a") == {
        "clusterName": "a",
        "groupName": "g0",
        "groupIndex": 0,
        "status": "ToApply",
        "lastTransitionTime": at(-5 * MIN),
        "recheckTime": None,
    }


def test_succeeded_within_soak_time_is_rolled_out_until_the_soak_ends() -> None:
    out = run(prog(minSuccessTime="5m"), [grp(0, "a")], [rep("a", "Succeeded", -2 * MIN)])
    assert entry(out, "a")["status"] == "Succeeded"
    assert entry(out, "a")["recheckTime"] == at(3 * MIN)
    assert out["recheckAfterSeconds"] == 180.0


def test_succeeded_after_soak_time_is_dropped() -> None:
    out = run(prog(minSuccessTime="5m"), [grp(0, "a", "b")], [rep("a", "Succeeded", -6 * MIN)])
    assert names(out) == ["b"]


def test_succeeded_without_soak_is_dropped_unless_its_transition_is_in_the_future() -> None:
    existing = [rep("a", "Succeeded", -1), rep("b", "Succeeded", MIN)]
    out = run(prog(), [grp(0, "a", "b")], existing)
    assert names(out) == ["b"]
    assert entry(out, "b")["recheckTime"] == at(MIN)


def test_time_out_and_skip_are_in_no_list() -> None:
    out = run(all_(), [grp(0, "a", "b")], [rep("a", "TimeOut"), rep("b", "Skip")])
    assert names(out) == names(out, "clustersTimeOut") == names(out, "clustersRemoved") == []


def test_progressing_and_failed_within_deadline_stay_in_flight_until_it() -> None:
    existing = [rep("a", "Progressing", -2 * MIN), rep("b", "Failed", -4 * MIN)]
    out = run(all_(progressDeadline="10m"), [grp(0, "a", "b")], existing)
    assert (entry(out, "a")["status"], entry(out, "a")["recheckTime"]) == ("Progressing", at(8 * MIN))
    assert (entry(out, "b")["status"], entry(out, "b")["recheckTime"]) == ("Failed", at(6 * MIN))


def test_in_flight_without_deadline_has_no_recheck_time() -> None:
    out = run(all_(progressDeadline="None"), [grp(0, "a")], [rep("a", "Progressing", -100 * 24 * 60 * MIN)])
    assert (entry(out, "a")["status"], entry(out, "a")["recheckTime"]) == ("Progressing", None)
    assert out["recheckAfterSeconds"] is None


def test_past_deadline_goes_to_the_timed_out_list_as_time_out() -> None:
    existing = [rep("a", "Progressing", -20 * MIN), rep("b", "Failed", -11 * MIN)]
    out = run(all_(progressDeadline="10m"), [grp(0, "a", "b")], existing)
    assert names(out) == []
    assert entry(out, "a", "clustersTimeOut") == {
        "clusterName": "a",
        "groupName": "g0",
        "groupIndex": 0,
        "status": "TimeOut",
        "lastTransitionTime": at(-20 * MIN),
        "recheckTime": at(-10 * MIN),
    }
    assert entry(out, "b", "clustersTimeOut")["status"] == "TimeOut"


def test_failed_within_deadline_is_rolled_out_again_and_counts_as_a_failure() -> None:
    out = run(prog(progressDeadline="10m"), [grp(0, "a", "b")], [rep("a", "Failed", -MIN)])
    assert names(out) == ["a"]
    assert out["maxFailureBreach"] is True


def test_progressing_past_deadline_counts_as_a_failure() -> None:
    out = run(prog(progressDeadline="10m"), [grp(0, "a", "b")], [rep("a", "Progressing", -20 * MIN)])
    assert names(out, "clustersTimeOut") == ["a"]
    assert names(out) == []
    assert out["maxFailureBreach"] is True


def test_reported_time_out_counts_as_a_failure_though_in_no_list() -> None:
    out = run(prog(), [grp(0, "a", "b")], [rep("a", "TimeOut")])
    assert out["maxFailureBreach"] is True
    assert names(out) == names(out, "clustersTimeOut") == []


# --- section 7: thresholds -------------------------------------------------------------------------


def many(count: int, prefix: str = "c") -> list[str]:
    return [f"{prefix}{number:03d}" for number in range(count)]


def test_max_concurrency_percentage_rounds_up_in_doubles() -> None:
    assert len(names(run(prog(maxConcurrency="7%"), [grp(0, *many(100))]))) == 8
    assert len(names(run(prog(maxConcurrency="28%"), [grp(0, *many(25))]))) == 8
    assert len(names(run(prog(maxConcurrency="50%"), [grp(0, *many(9))]))) == 5


def test_max_concurrency_integer_is_the_batch_size() -> None:
    assert names(run(prog(maxConcurrency=2), [grp(0, "a", "b", "c")])) == ["a", "b"]


def test_max_concurrency_zero_absent_or_above_total_means_all() -> None:
    groups = [grp(0, "a", "b", "c")]
    for value in (0, None, 4, "150%", "Inf%", "NaN%", -1):
        body = {} if value is None else {"maxConcurrency": value}
        assert names(run(prog(**body), groups)) == ["a", "b", "c"], value


def test_max_failures_tolerates_up_to_its_value() -> None:
    existing = [rep("a", "TimeOut"), rep("b", "TimeOut")]
    groups = [grp(0, "a", "b", "c", "d")]
    assert run(prog(maxFailures=2), groups, existing)["maxFailureBreach"] is False
    assert run(prog(maxFailures=1), groups, existing)["maxFailureBreach"] is True
    assert run(prog(maxFailures="50%"), groups, existing)["maxFailureBreach"] is False


def test_max_failures_zero_or_zero_percent_tolerates_none() -> None:
    for value in (0, "0%"):
        assert (
            run(prog(maxFailures=value), [grp(0, "a", "b")], [rep("a", "TimeOut")])["maxFailureBreach"]
            is True
        )


def test_max_failures_non_finite_tolerates_none() -> None:
    assert (
        run(prog(maxFailures="Inf%"), [grp(0, "a", "b")], [rep("a", "TimeOut")])["maxFailureBreach"] is True
    )


# --- section 8: the cluster walk ------------------------------------------------------------------


def test_reported_clusters_come_first_and_take_batch_slots() -> None:
    out = run(prog(maxConcurrency=2), [grp(0, "a", "b", "c", "d")], [rep("d", "Progressing")])
    assert names(out) == ["a", "d"]
    assert entry(out, "d")["status"] == "Progressing"


def test_soaking_and_failed_within_deadline_clusters_take_batch_slots() -> None:
    existing = [rep("c", "Succeeded", -MIN), rep("d", "Failed", -MIN)]
    out = run(prog(maxConcurrency=2, maxFailures=5, minSuccessTime="5m", progressDeadline="10m"),
              [grp(0, "a", "b", "c", "d")], existing)  # fmt: skip
    assert names(out) == ["c", "d"]


def test_entries_after_the_batch_fills_are_not_examined() -> None:
    existing = [rep("a", "Progressing", -MIN), rep("z", "Progressing", -20 * MIN)]
    out = run(prog(maxConcurrency=1, progressDeadline="10m"), [grp(0, "a", "m", "z")], existing)
    assert names(out) == ["a"]
    assert names(out, "clustersTimeOut") == []
    assert out["maxFailureBreach"] is False


def test_a_zero_batch_stops_the_walk_after_the_first_reported_entry() -> None:
    # Every group is mandatory and finished, so the rest phase has no cluster: batch size 0.
    existing = [rep("a", "TimeOut"), rep("b", "TimeOut")]
    strategy = prog(maxFailures=1, mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", "b", name="m")], existing)
    # Only "a" is examined: one failure, within the tolerance of 1.
    assert out["maxFailureBreach"] is False
    assert names(out) == names(out, "clustersTimeOut") == []


def test_after_a_breach_later_to_apply_entries_are_skipped_but_in_flight_ones_still_listed() -> None:
    existing = [
        rep("a", "ToApply"),
        rep("b", "Failed", -MIN),
        rep("c", "ToApply"),
        rep("d", "Progressing", -MIN),
    ]
    out = run(prog(progressDeadline="10m"), [grp(0, "a", "b", "c", "d", "e")], existing)
    assert out["maxFailureBreach"] is True
    assert names(out) == ["a", "b", "d"]


def test_a_breach_adds_no_new_cluster() -> None:
    out = run(prog(), [grp(0, "a", "b"), grp(1, "c")], [rep("a", "TimeOut")])
    assert out["maxFailureBreach"] is True
    assert names(out) == []


def test_new_clusters_fill_the_batch_in_name_order() -> None:
    assert names(run(prog(maxConcurrency=3), [grp(0, "e", "b", "d", "a", "c")])) == ["a", "b", "c"]


# --- section 9: the group walk --------------------------------------------------------------------


def test_group_walk_forgets_reported_to_apply_and_plans_it_anew_without_its_time() -> None:
    out = run(ppg(), [grp(0, "a")], [rep("a", "ToApply", -5 * MIN)])
    assert entry(out, "a") == {
        "clusterName": "a",
        "groupName": "g0",
        "groupIndex": 0,
        "status": "ToApply",
        "lastTransitionTime": None,
        "recheckTime": None,
    }


def test_group_walk_stops_at_the_first_group_while_any_cluster_is_in_flight() -> None:
    existing = [rep("a", "Succeeded", -60 * MIN), rep("c", "Progressing", -MIN)]
    out = run(ppg(), [grp(0, "a"), grp(1, "b"), grp(2, "c")], existing)
    assert names(out) == ["c"]


def test_group_walk_moves_to_the_next_group_once_a_group_is_done() -> None:
    out = run(ppg(), [grp(0, "a"), grp(1, "b", "c"), grp(2, "d")], [rep("a", "Succeeded", -MIN)])
    assert names(out) == ["b", "c"]


def test_group_walk_offsets_new_clusters_by_failures_and_continues() -> None:
    out = run(ppg(maxFailures=1), [grp(0, "a", "b"), grp(1, "c")], [rep("a", "TimeOut")])
    assert names(out) == ["b", "c"]
    assert out["maxFailureBreach"] is False


def test_group_walk_runs_the_stop_test_after_an_empty_group() -> None:
    out = run(ppg(), [grp(0), grp(1, "a", "b")], [rep("b", "Progressing", -MIN)])
    assert names(out) == ["b"]


def test_group_walk_tolerates_max_failures_of_each_group_size() -> None:
    groups = [grp(0, "a", "b", "c", "d")]
    two = run(ppg(maxFailures="50%"), groups, [rep("a", "TimeOut"), rep("b", "TimeOut")])
    assert (two["maxFailureBreach"], names(two)) == (False, ["c", "d"])
    three = run(
        ppg(maxFailures="50%"), groups, [rep("a", "TimeOut"), rep("b", "TimeOut"), rep("c", "TimeOut")]
    )
    assert three["maxFailureBreach"] is True


def test_group_walk_still_adds_the_unreported_clusters_of_the_group_that_breaches() -> None:
    out = run(ppg(), [grp(0, "a", "b"), grp(1, "c")], [rep("a", "TimeOut")])
    assert out["maxFailureBreach"] is True
    assert names(out) == ["b"]


def test_group_walk_judges_reported_clusters_of_every_group() -> None:
    out = run(ppg(progressDeadline="10m"), [grp(0, "a"), grp(1, "b")], [rep("b", "Progressing", -20 * MIN)])
    assert names(out, "clustersTimeOut") == ["b"]
    assert names(out) == ["a"]


# --- section 10: the three strategies --------------------------------------------------------------


def test_all_rolls_out_every_visible_cluster_at_once() -> None:
    assert names(run(all_(), [grp(0, "a"), grp(1, "b", "c"), grp(2, "d")])) == ["a", "b", "c", "d"]


def test_all_never_reports_a_breach() -> None:
    existing = [rep(name, "Failed", -20 * MIN) for name in ("a", "b")] + [rep("c", "TimeOut")]
    out = run(all_(progressDeadline="10m"), [grp(0, "a", "b", "c", "d")], existing)
    assert out["maxFailureBreach"] is False
    assert names(out) == ["d"]
    assert names(out, "clustersTimeOut") == ["a", "b"]


def test_mandatory_phase_answer_carries_its_breach_flag_whatever_max_failures_says() -> None:
    strategy = prog(maxFailures=5, progressDeadline="10m", mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", "b", name="m"), grp(1, "c")], [rep("a", "Failed", -20 * MIN)])
    assert (names(out), names(out, "clustersTimeOut"), out["maxFailureBreach"]) == (["b"], ["a"], True)


def test_progressive_batch_size_counts_only_non_mandatory_clusters() -> None:
    done = [rep(name, "Succeeded", -60 * MIN) for name in many(6, "m")]
    groups = [grp(0, *many(6, "m"), name="m"), grp(1, "a", "b", "c", "d")]
    out = run(prog(maxConcurrency="50%", mandatoryDecisionGroups=[{"groupName": "m"}]), groups, done)
    assert names(out) == ["a", "b"]


def test_progressive_discards_a_breach_seen_in_the_mandatory_phase() -> None:
    strategy = prog(maxFailures=1, mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b")], [rep("a", "TimeOut")])
    assert out["maxFailureBreach"] is False
    assert names(out) == ["b"]


def test_progressive_max_failures_is_resolved_over_all_clusters() -> None:
    # 25% of 8 clusters = 2 (not 25% of the 4 non-mandatory ones = 1)
    existing = [rep(name, "Succeeded", -60 * MIN) for name in many(4, "m")] + [
        rep("a", "TimeOut"),
        rep("b", "TimeOut"),
    ]
    strategy = prog(maxFailures="25%", mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, *many(4, "m"), name="m"), grp(1, "a", "b", "c", "d")], existing)
    assert out["maxFailureBreach"] is False
    assert names(out) == ["c", "d"]


def test_an_empty_mandatory_group_still_makes_a_mandatory_phase() -> None:
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, name="m"), grp(1, "n", "p")], [rep("p", "Progressing", -MIN)])
    assert names(out) == ["p"]
    without = run(prog(), [grp(0, name="m"), grp(1, "n", "p")], [rep("p", "Progressing", -MIN)])
    assert names(without) == ["n", "p"]


def test_a_soaking_mandatory_cluster_holds_the_rest() -> None:
    strategy = prog(minSuccessTime="5m", mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b")], [rep("a", "Succeeded", -MIN)])
    assert names(out) == ["a"]


def test_a_mandatory_cluster_failed_past_its_deadline_holds_the_rest_forever() -> None:
    strategy = ppg(progressDeadline="10m", mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b")], [rep("a", "Failed", -30 * 24 * 60 * MIN)])
    assert names(out, "clustersTimeOut") == ["a"]
    assert names(out) == []


def test_mandatory_phase_answer_includes_in_flight_clusters_of_other_groups() -> None:
    strategy = ppg(mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b", "c")], [rep("b", "Progressing", -MIN)])
    assert names(out) == ["a", "b"]


def test_progressive_per_group_rest_phase_walks_groups_with_max_failures() -> None:
    existing = [rep("m", "Succeeded", -60 * MIN), rep("a", "TimeOut")]
    strategy = ppg(maxFailures=1, mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "m", name="m"), grp(1, "a", "b"), grp(2, "c")], existing)
    assert names(out) == ["b", "c"]
    assert out["maxFailureBreach"] is False


# --- section 11: recheckAfterSeconds -------------------------------------------------------------


def test_recheck_after_is_the_earliest_future_recheck_time_in_the_rollout_list() -> None:
    existing = [
        rep("a", "Succeeded", -4 * MIN),
        rep("b", "Progressing", -9.5 * MIN),
        rep("c", "Succeeded", -MIN),
    ]
    out = run(
        prog(minSuccessTime="5m", progressDeadline="10m", maxFailures=3), [grp(0, "a", "b", "c")], existing
    )
    assert out["recheckAfterSeconds"] == 30.0


def test_recheck_after_is_null_without_any_recheck_time() -> None:
    assert run(all_(), [grp(0, "a")])["recheckAfterSeconds"] is None


def test_timed_out_clusters_never_set_recheck_after() -> None:
    out = run(all_(progressDeadline="10m"), [grp(0, "a")], [rep("a", "Progressing", -20 * MIN)])
    assert out["recheckAfterSeconds"] is None


def test_recheck_after_keeps_fractions_of_a_second() -> None:
    out = run(all_(progressDeadline="90s"), [grp(0, "a")], [rep("a", "Progressing", -59.5)])
    assert out["recheckAfterSeconds"] == 30.5


def test_recheck_after_has_nanosecond_precision() -> None:
    doc = {
        "now": NOW,
        "strategy": prog(minSuccessTime="2ns"),
        "decisionGroups": [grp(0, "a")],
        "existing": [
            {
                "clusterName": "a",
                "status": "Succeeded",
                "lastTransitionTime": "2024-05-01T11:59:59.999999999Z",
            }
        ],
    }
    out = encode_plan(plan_document(doc))
    assert entry(out, "a")["recheckTime"] == "2024-05-01T12:00:00.000000001Z"
    assert out["recheckAfterSeconds"] == 1e-9


def test_recheck_after_is_exposed_as_a_timedelta_in_the_python_api() -> None:
    result = plan_rollout(
        {"type": "All", "all": {"progressDeadline": "10m"}},
        [DecisionGroup(group_index=0, clusters=["a"])],
        [ClusterRolloutStatus("a", RolloutStatus.PROGRESSING, NOW_DT - timedelta(minutes=4))],
        NOW_DT,
    )
    assert result.recheck_after == timedelta(minutes=6)
    assert result.clusters_to_rollout[0].recheck_time_ns == int((NOW_DT + timedelta(minutes=6)).timestamp()) * 10**9


# --- section 12: output ---------------------------------------------------------------------------


def test_output_has_the_contract_keys() -> None:
    out = run(all_(), [grp(0, "a")], [rep("x", "Skip")])
    assert list(out) == [
        "strategy",
        "clustersToRollout",
        "clustersTimeOut",
        "clustersRemoved",
        "maxFailureBreach",
        "recheckAfterSeconds",
    ]
    assert list(out["clustersToRollout"][0]) == [
        "clusterName",
        "groupName",
        "groupIndex",
        "status",
        "lastTransitionTime",
        "recheckTime",
    ]


def test_output_lists_are_sorted_by_cluster_name() -> None:
    existing = [rep("z", "Progressing", -MIN), rep("y", "Skip"), rep("x", "Skip")]
    out = run(all_(), [grp(0, "b", "z"), grp(1, "a")], existing)
    assert names(out) == ["a", "b", "z"]
    assert names(out, "clustersRemoved") == ["x", "y"]


def test_output_times_are_utc() -> None:
    existing = [
        {"clusterName": "a", "status": "Progressing", "lastTransitionTime": "2024-05-01T13:58:00+02:00"}
    ]
    doc = {"now": "2024-05-01T14:00:00+02:00", "strategy": all_(progressDeadline="10m"),
           "decisionGroups": [grp(0, "a")], "existing": existing}  # fmt: skip
    out = encode_plan(plan_document(doc))
    assert entry(out, "a")["lastTransitionTime"] == "2024-05-01T11:58:00Z"
    assert entry(out, "a")["recheckTime"] == "2024-05-01T12:08:00Z"


# --- section 13: edge cases ---------------------------------------------------------------------


def test_without_groups_every_reported_cluster_is_removed() -> None:
    for strategy in (all_(), prog(), ppg()):
        out = run(strategy, [], [rep("a", "Progressing"), rep("b", "Succeeded")])
        assert names(out) == names(out, "clustersTimeOut") == []
        assert names(out, "clustersRemoved") == ["a", "b"]
        assert out["maxFailureBreach"] is False


def test_a_window_ending_exactly_now_has_ended() -> None:
    existing = [rep("a", "Succeeded", -5 * MIN), rep("b", "Progressing", -10 * MIN)]
    out = run(prog(minSuccessTime="5m", progressDeadline="10m", maxFailures=1), [grp(0, "a", "b")], existing)
    assert names(out) == []
    assert names(out, "clustersTimeOut") == ["b"]


def test_a_null_transition_time_starts_windows_now() -> None:
    existing = [rep("a", "Progressing"), rep("b", "Succeeded")]
    out = run(prog(minSuccessTime="5m", progressDeadline="10m"), [grp(0, "a", "b")], existing)
    assert entry(out, "a")["recheckTime"] == at(10 * MIN)
    assert entry(out, "b")["recheckTime"] == at(5 * MIN)
    assert entry(out, "a")["lastTransitionTime"] is None


def test_zero_deadline_times_out_everything_in_flight_at_once() -> None:
    out = run(all_(progressDeadline="0s"), [grp(0, "a", "b")], [rep("a", "Progressing"), rep("b", "Failed")])
    assert names(out, "clustersTimeOut") == ["a", "b"]
    assert entry(out, "a", "clustersTimeOut")["recheckTime"] == NOW


def test_skip_is_never_rolled_out_nor_counted() -> None:
    for strategy in (all_(), prog(), ppg()):
        out = run(strategy, [grp(0, "a", "b"), grp(1, "c")], [rep("a", "Skip")])
        assert "a" not in names(out)
        assert out["maxFailureBreach"] is False


def test_progressive_without_max_concurrency_rolls_out_every_cluster_at_once() -> None:
    assert names(run(prog(), [grp(0, "a", "b"), grp(1, "c"), grp(2, "d")])) == ["a", "b", "c", "d"]


def test_largest_go_duration_as_deadline_means_unlimited() -> None:
    out = run(
        all_(progressDeadline="2562047h47m16.854775807s"), [grp(0, "a")], [rep("a", "Progressing", -1e6)]
    )
    assert (names(out), entry(out, "a")["recheckTime"]) == (["a"], None)


def test_largest_go_duration_as_min_success_time_means_no_soak() -> None:
    out = run(
        prog(minSuccessTime="2562047h47m16.854775807s"), [grp(0, "a", "b")], [rep("a", "Succeeded", -1)]
    )
    assert names(out) == ["b"]


def test_planning_is_repeatable_with_the_same_inputs() -> None:
    args = (prog(maxConcurrency=2), [grp(0, "a", "b", "c")], [rep("b", "Progressing", -MIN)])
    assert run(*args) == run(*args)


def test_a_cluster_in_several_groups_is_labelled_with_the_lowest_index() -> None:
    out = run(all_(), [grp(1, "a", name="late"), grp(0, "a", name="early")], [rep("a", "Progressing")])
    assert (entry(out, "a")["groupName"], entry(out, "a")["groupIndex"]) == ("early", 0)


# --- the Python API -------------------------------------------------------------------------------


def test_python_api_accepts_status_names_and_nanosecond_times() -> None:
    ltt_ns = int((NOW_DT - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 1_000_000_000 - 60_000_000_000
    result = plan_rollout(
        {"type": "Progressive", "progressive": {"minSuccessTime": "5m"}},
        [DecisionGroup(group_name="g", group_index=0, clusters={"a", "b"})],
        [ClusterRolloutStatus("a", "Succeeded", ltt_ns)],  # type: ignore[arg-type]
        NOW_DT,
    )
    (soaking, new) = result.clusters_to_rollout
    assert (soaking.cluster_name, soaking.status, soaking.recheck_time_ns) == (
        "a",
        RolloutStatus.SUCCEEDED,
        ltt_ns + 300_000_000_000,
    )
    assert (new.cluster_name, new.status, new.last_transition_time) == ("b", RolloutStatus.TO_APPLY, None)


def test_python_api_rejects_unknown_status_names() -> None:
    with pytest.raises(ValueError):
        ClusterRolloutStatus("a", "Done")  # type: ignore[arg-type]


def test_python_api_accepts_a_decoded_strategy() -> None:
    strategy = decode_strategy({"type": "Progressive", "progressive": {"maxConcurrency": 1}})
    result = plan_rollout(strategy, [DecisionGroup(group_index=0, clusters=["b", "a"])], [], NOW_DT)
    assert [item.cluster_name for item in result.clusters_to_rollout] == ["a"]
    assert result.strategy is strategy
