"""Spec §7 (Placement status) and §8 (failure codes and their order)."""

from __future__ import annotations

from datetime import timedelta

from ocm_rollout.api.cluster_v1beta1 import PlacementStatus
from ocm_rollout.api.meta import Condition
from tests.unit.test_sched_builders import (
    BAD_PREDICATE,
    NOW,
    binding,
    cluster,
    condition,
    exclusive_set,
    label_set,
    misconfigured,
    placement,
    plain,
    run,
    satisfied,
    score,
    world,
)

BAD_TOLERATION = [{"operator": "Equal"}]
BAD_MODE = {"mode": "Weird"}


def test_no_bindings() -> None:
    result = run(placement(), world(plain(1), sets=[], bindings=[]))
    assert satisfied(result) == (
        "False", "NoManagedClusterSetBindings", "No valid ManagedClusterSetBindings found in placement namespace"
    )  # fmt: skip


def test_no_intersection_names_spec_sets() -> None:
    result = run(placement(clusterSets=["x", "y"]), world(plain(1)))
    assert satisfied(result) == ("False", "NoIntersection", "None of ManagedClusterSets [x,y] is bound to placement namespace")


def test_all_sets_empty_names_eligible_sets() -> None:
    result = run(placement(), world([], sets=[exclusive_set("b"), exclusive_set("a")]))
    assert satisfied(result) == ("False", "AllManagedClusterSetsEmpty", "All ManagedClusterSets [a,b] have no member ManagedCluster")


def test_sets_with_only_terminating_clusters_are_empty() -> None:
    assert satisfied(run(placement(), world([cluster("c", deleting=True)])))[1] == "AllManagedClusterSetsEmpty"


def test_no_cluster_matched() -> None:
    p = placement(predicates=[{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"a": "b"}}}}])
    assert satisfied(run(p, world(plain(2)))) == (
        "False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate"
    )  # fmt: skip


def test_all_decisions_scheduled() -> None:
    assert satisfied(run(placement(numberOfClusters=2), world(plain(2)))) == (
        "True", "AllDecisionsScheduled", "All cluster decisions scheduled"
    )  # fmt: skip


def test_success_reports_succeedconfigured() -> None:
    assert misconfigured(run(placement(), world(plain(1)))) == ("False", "Succeedconfigured", "Placement configurations check pass")


def test_number_of_selected_clusters() -> None:
    result = run(placement(numberOfClusters=2), world(plain(5)))
    assert result.new_status is not None and result.new_status.number_of_selected_clusters == 2


def test_misconfigured_pass_selects_nothing_and_keeps_one_empty_page() -> None:
    result = run(placement(predicates=BAD_PREDICATE, numberOfClusters=3), world(plain(3)))
    assert result.new_status is not None
    assert result.new_status.number_of_selected_clusters == 0
    assert result.unscheduled == 0
    assert [(p.name, p.clusters) for p in result.pages] == [("p-decision-1", ())]


def test_new_conditions_appended_misconfigured_first() -> None:
    result = run(placement(), world(plain(1)))
    assert result.new_status is not None
    assert [c.type for c in result.new_status.conditions] == ["PlacementMisconfigured", "PlacementSatisfied"]


def test_existing_conditions_keep_position_and_other_types() -> None:
    p = placement()
    p.status = PlacementStatus(
        conditions=[
            Condition(type="Other", status="True", reason="X", message="", last_transition_time=NOW),
            Condition(type="PlacementSatisfied", status="False", reason="Old", message="", last_transition_time=NOW),
        ]
    )
    result = run(p, world(plain(1)))
    assert result.new_status is not None
    assert [c.type for c in result.new_status.conditions] == ["Other", "PlacementSatisfied", "PlacementMisconfigured"]


def test_transition_time_moves_only_when_status_changes() -> None:
    before = NOW - timedelta(days=1)
    p = placement()
    p.status = PlacementStatus(
        conditions=[
            Condition(type="PlacementSatisfied", status="True", reason="Other", message="m", last_transition_time=before),
            Condition(type="PlacementMisconfigured", status="True", reason="Misconfigured", message="m", last_transition_time=before),
        ]
    )
    result = run(p, world(plain(1)))
    assert condition(result, "PlacementSatisfied").last_transition_time == before
    assert condition(result, "PlacementSatisfied").reason == "AllDecisionsScheduled"
    assert condition(result, "PlacementMisconfigured").last_transition_time == NOW


# -- §8 failure order ------------------------------------------------------------------------


def test_predicate_failure_reported_before_toleration_failure() -> None:
    p = placement(predicates=BAD_PREDICATE, tolerations=BAD_TOLERATION, prioritizerPolicy=BAD_MODE)
    assert misconfigured(run(p, world(plain(1))))[2].startswith("Predicate:")


def test_toleration_failure_reported_before_mode_failure() -> None:
    p = placement(tolerations=BAD_TOLERATION, prioritizerPolicy=BAD_MODE)
    assert misconfigured(run(p, world(plain(1))))[2].startswith("TaintToleration:")


def test_mode_failure_when_filters_get_no_cluster() -> None:
    p = placement(predicates=BAD_PREDICATE, tolerations=BAD_TOLERATION, prioritizerPolicy=BAD_MODE)
    assert misconfigured(run(p, world([])))[2] == ":incorrect prioritizer policy mode: Weird"


def test_mode_checked_before_builtin_names() -> None:
    p = placement(prioritizerPolicy={"mode": "Weird", "configurations": [{"scoreCoordinate": {"builtIn": "Nope"}}]})
    assert misconfigured(run(p, world(plain(1))))[2] == ":incorrect prioritizer policy mode: Weird"


def test_misconfigured_pass_without_bindings_reports_no_bindings() -> None:
    result = run(placement(prioritizerPolicy=BAD_MODE), world(plain(1), sets=[label_set("g", {})], bindings=[binding("x")]))
    assert satisfied(result)[1] == "NoManagedClusterSetBindings"
    assert misconfigured(result)[0] == "True"


def test_warning_is_not_misconfigured() -> None:
    p = placement(prioritizerPolicy={"configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "r", "scoreName": "s"}}}]})
    result = run(p, world(plain(1), scores=[score("c1", "r", {"s": 1}, valid_until="2020-01-01T00:00:00Z")]))
    assert result.status.code == "Warning"
    assert misconfigured(result)[0] == "False"
    assert satisfied(result)[0] == "True"


def test_conditions_record_the_generation_they_were_computed_for() -> None:
    """OCM leaves observedGeneration 0; ours says which spec the decisions answer, so a rollout
    can tell a Placement not yet scheduled for its current spec (MWRS never Complete early)."""
    p = placement()
    p.metadata.generation = 4
    result = run(p, world(plain(1)))
    assert result.new_status is not None
    assert {c.type: c.observed_generation for c in result.new_status.conditions} == {
        "PlacementMisconfigured": 4, "PlacementSatisfied": 4
    }
