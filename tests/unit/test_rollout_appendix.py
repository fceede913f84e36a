"""The behaviours docs/behaviour/rollout.md's appendix marks as surprising (OCM's; matched on purpose), one test
each, plus the other surprising consequences of the rules found while implementing them."""

from __future__ import annotations

from tests.unit.test_rollout_planner import MIN, all_, entry, grp, many, names, ppg, prog, rep, run


def test_appendix_1_group_walk_subtracts_timed_out_clusters_and_walks_into_the_next_group() -> None:
    existing = [rep("a", "Progressing", -MIN), rep("b", "Progressing", -20 * MIN)]
    out = run(
        ppg(maxFailures=1, progressDeadline="10m"), [grp(0, "a", "b"), grp(1, "c"), grp(2, "d")], existing
    )
    assert names(out) == ["a", "c"]
    assert names(out, "clustersTimeOut") == ["b"]
    assert out["maxFailureBreach"] is False


def test_appendix_2_max_failures_above_the_group_size_tolerates_no_failure() -> None:
    groups = [grp(0, "a"), grp(1, "b")]
    out = run(ppg(maxFailures=2), groups, [rep("a", "TimeOut")])
    assert out["maxFailureBreach"] is True
    assert names(out) == []
    within = run(ppg(maxFailures=1), groups, [rep("a", "TimeOut")])
    assert within["maxFailureBreach"] is False
    assert names(within) == ["b"]


def test_appendix_2_max_failures_above_the_total_tolerates_no_failure() -> None:
    existing = [rep("a", "TimeOut")]
    for value in (5, "150%"):
        assert (
            run(prog(maxFailures=value), [grp(0, "a", "b", "c", "d")], existing)["maxFailureBreach"] is True
        )
    assert run(prog(maxFailures=4), [grp(0, "a", "b", "c", "d")], existing)["maxFailureBreach"] is False


def test_appendix_3_percentages_divide_by_100_before_multiplying_and_round_up() -> None:
    assert len(names(run(prog(maxConcurrency="7%"), [grp(0, *many(100))]))) == 8
    assert len(names(run(prog(maxConcurrency="14%"), [grp(0, *many(100))]))) == 15
    assert len(names(run(prog(maxConcurrency="28%"), [grp(0, *many(25))]))) == 8
    assert len(names(run(prog(maxConcurrency="56%"), [grp(0, *many(25))]))) == 15


def test_appendix_4_mandatory_phase_looks_at_every_reported_cluster() -> None:
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b", "c")], [rep("c", "Progressing", -MIN)])
    assert names(out) == ["a", "c"]


def test_appendix_4_reported_time_out_in_a_mandatory_group_counts_in_the_rest_phase() -> None:
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b", "c")], [rep("a", "TimeOut")])
    # the mandatory phase does not hold (the TimeOut is in no list), but the rest phase breaches
    assert out["maxFailureBreach"] is True
    assert names(out) == []


def test_appendix_5_malformed_max_concurrency_is_only_reported_in_the_rest_phase() -> None:
    strategy = prog(maxConcurrency="5", mandatoryDecisionGroups=[{"groupName": "m"}])
    out = run(strategy, [grp(0, "a", name="m"), grp(1, "b")])
    assert names(out) == ["a"]


def test_appendix_6_progressive_picks_new_clusters_by_name_across_groups() -> None:
    out = run(prog(maxConcurrency=2), [grp(0, "z1", "z2"), grp(1, "a1", "a2")])
    assert names(out) == ["a1", "a2"]
    assert entry(out, "a1")["groupIndex"] == 1


def test_appendix_6_a_timed_out_cluster_after_the_full_batch_is_neither_listed_nor_counted() -> None:
    existing = [
        rep("a", "Progressing", -MIN),
        rep("b", "Progressing", -MIN),
        rep("c", "Progressing", -20 * MIN),
    ]
    out = run(prog(maxConcurrency=2, progressDeadline="10m"), [grp(0, "a", "b", "c", "d")], existing)
    assert names(out) == ["a", "b"]
    assert names(out, "clustersTimeOut") == []
    assert out["maxFailureBreach"] is False


def test_appendix_7_a_group_index_beyond_the_number_of_indexes_is_invisible() -> None:
    out = run(all_(), [grp(0, "a"), grp(3, "d")], [rep("d", "Succeeded", -MIN)])
    assert names(out) == ["a"]
    assert names(out, "clustersRemoved") == ["d"]


def test_appendix_8_all_ignores_min_success_time_but_lists_succeeded_with_a_future_transition() -> None:
    existing = [rep("a", "Succeeded", -MIN), rep("b", "Succeeded", MIN)]
    out = run(all_(minSuccessTime="1h"), [grp(0, "a", "b")], existing)
    assert names(out) == ["b"]
    assert entry(out, "b")["recheckTime"] == entry(out, "b")["lastTransitionTime"]


# --- further consequences of the rules that a user may not expect ---------------------------------


def test_surprise_group_that_breaches_still_gets_its_unreported_clusters_planned() -> None:
    out = run(ppg(), [grp(0, "a", "b", "c")], [rep("b", "TimeOut")])
    assert out["maxFailureBreach"] is True
    assert names(out) == ["a", "c"]


def test_surprise_out_of_range_mandatory_group_is_planned_again_on_every_plan() -> None:
    # Its reported clusters count as removed, so the mandatory walk sees them as new each time:
    # the mandatory phase never ends and the rest never starts.
    strategy = prog(mandatoryDecisionGroups=[{"groupName": "late"}])
    out = run(strategy, [grp(0, "a"), grp(5, "z", name="late")], [rep("z", "Succeeded", -60 * MIN)])
    assert names(out) == ["z"]
    assert entry(out, "z")["status"] == "ToApply"
    assert names(out, "clustersRemoved") == ["z"]


def test_surprise_group_walk_drops_the_transition_time_of_reported_to_apply() -> None:
    out = run(ppg(), [grp(0, "a")], [rep("a", "ToApply", -MIN)])
    assert entry(out, "a")["lastTransitionTime"] is None


def test_surprise_all_reports_no_breach_even_when_everything_failed() -> None:
    out = run(
        all_(progressDeadline="1m"), [grp(0, "a", "b")], [rep("a", "Failed", -MIN), rep("b", "TimeOut")]
    )
    assert out["maxFailureBreach"] is False


def test_surprise_removed_clusters_keep_their_status_past_any_deadline() -> None:
    out = run(all_(progressDeadline="1m"), [grp(0, "a")], [rep("gone", "Failed", -60 * MIN)])
    assert entry(out, "gone", "clustersRemoved")["status"] == "Failed"


def test_surprise_negative_min_success_time_is_accepted() -> None:
    out = run(prog(minSuccessTime="-5m"), [grp(0, "a", "b")], [rep("a", "Succeeded", 10 * MIN)])
    assert entry(out, "a")["recheckTime"] is not None
    assert names(out) == ["a", "b"]


def test_surprise_reported_time_out_in_a_mandatory_group_skips_the_later_mandatory_groups() -> None:
    # The mandatory walk breaches at group 0 with nothing to list, so the mandatory phase is over:
    # mandatory group 1 is never started while the rest proceeds.
    strategy = prog(maxFailures=1, mandatoryDecisionGroups=[{"groupIndex": 0}, {"groupIndex": 1}])
    out = run(strategy, [grp(0, "a"), grp(1, "b"), grp(2, "c")], [rep("a", "TimeOut")])
    assert names(out) == ["c"]
    assert out["maxFailureBreach"] is False


def test_surprise_with_mandatory_groups_a_timed_out_cluster_anywhere_holds_the_rollout() -> None:
    # The mandatory walk judges every reported cluster; a non-mandatory cluster past its deadline
    # lands in its timed-out list, so the mandatory phase answers on every plan, whatever
    # maxFailures tolerates. Without mandatory groups the same failure is tolerated.
    groups = [grp(0, "a", name="m"), grp(1, "b", "c")]
    existing = [rep("a", "Succeeded", -60 * MIN), rep("b", "Failed", -60 * MIN)]
    held = run(
        prog(maxFailures=1, progressDeadline="10m", mandatoryDecisionGroups=[{"groupName": "m"}]),
        groups,
        existing,
    )
    assert (names(held), names(held, "clustersTimeOut")) == ([], ["b"])
    free = run(prog(maxFailures=1, progressDeadline="10m"), groups, existing)
    assert (names(free), names(free, "clustersTimeOut")) == (["c"], ["b"])
