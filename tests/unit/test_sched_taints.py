"""Spec §3 (TaintToleration) and §9 (requeue after tolerationSeconds)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ocm_rollout.controllers.placement.filters import FAR_FUTURE, toleration_expiry
from ocm_rollout.controllers.placement.snapshot import ZERO_TIME
from tests.unit.test_sched_builders import (
    NOW,
    cluster,
    decision,
    misconfigured,
    placement,
    run,
    taint,
    world,
)

ADDED = "2026-01-01T11:00:00Z"  # one hour before NOW


def selected(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], *, in_decisions: bool = False) -> list[str]:
    decisions = [decision("p-decision-1", ["t"])] if in_decisions else []
    snapshot = world([cluster("t", taints=taints), cluster("plain")], decisions=decisions)
    return run(placement(tolerations=tolerations), snapshot).selected


def test_untolerated_no_select_taint_excludes_cluster() -> None:
    assert selected([], [taint("gpu", value="true")]) == ["plain"]


def test_prefer_no_select_is_always_tolerated() -> None:
    assert "t" in selected([], [taint("gpu", "PreferNoSelect")])


def test_no_select_if_new_tolerated_for_current_decision() -> None:
    assert "t" in selected([], [taint("gpu", "NoSelectIfNew")], in_decisions=True)


def test_no_select_if_new_excludes_new_cluster() -> None:
    assert "t" not in selected([], [taint("gpu", "NoSelectIfNew")])


def test_no_select_excludes_even_current_decision() -> None:
    assert "t" not in selected([], [taint("gpu")], in_decisions=True)


def test_current_decisions_need_placement_label_and_namespace() -> None:
    other = decision("x-decision-1", ["t"], placement_name="other")
    elsewhere = decision("p-decision-1", ["t"], namespace="elsewhere")
    snapshot = world([cluster("t", taints=[taint("gpu", "NoSelectIfNew")])], decisions=[other, elsewhere])
    assert run(placement(), snapshot).selected == []


def test_equal_toleration_matches_key_and_value() -> None:
    assert "t" in selected([{"key": "gpu", "operator": "Equal", "value": "true"}], [taint("gpu", value="true")])


def test_equal_toleration_with_other_value_does_not_match() -> None:
    assert "t" not in selected([{"key": "gpu", "operator": "Equal", "value": "no"}], [taint("gpu", value="true")])


def test_missing_toleration_value_equals_empty_taint_value() -> None:
    assert "t" in selected([{"key": "gpu"}], [taint("gpu")])


def test_empty_operator_means_equal() -> None:
    assert "t" in selected([{"key": "gpu", "operator": "", "value": "true"}], [taint("gpu", value="true")])


def test_exists_toleration_matches_any_value() -> None:
    assert "t" in selected([{"key": "gpu", "operator": "Exists"}], [taint("gpu", value="whatever")])


def test_exists_without_key_tolerates_every_taint() -> None:
    assert "t" in selected([{"operator": "Exists"}], [taint("a"), taint("b", value="x")])


def test_toleration_effect_must_match_when_set() -> None:
    tol = {"key": "gpu", "operator": "Exists", "effect": "NoSelectIfNew"}
    assert "t" not in selected([tol], [taint("gpu", "NoSelect")])


def test_unknown_operator_matches_nothing() -> None:
    assert "t" not in selected([{"key": "gpu", "operator": "Like", "value": "true"}], [taint("gpu", value="true")])


def test_every_taint_must_be_tolerated() -> None:
    assert "t" not in selected([{"key": "a", "operator": "Exists"}], [taint("a"), taint("b")])


def test_empty_key_with_equal_is_misconfigured() -> None:
    result = run(placement(tolerations=[{"operator": "Equal"}]), world([cluster("c")]))
    assert misconfigured(result) == ("True", "Misconfigured", "TaintToleration:If the key is empty, operator must be Exists.")


def test_exists_with_value_is_misconfigured() -> None:
    result = run(placement(tolerations=[{"key": "a", "operator": "Exists", "value": "v"}]), world([cluster("c")]))
    assert misconfigured(result)[2] == "TaintToleration:If the operator is Exists, the value should be empty."


def test_invalid_toleration_not_validated_without_clusters() -> None:
    result = run(placement(tolerations=[{"operator": "Equal"}]), world([]))
    assert misconfigured(result)[0] == "False"


def test_invalid_toleration_not_validated_when_predicates_leave_nothing() -> None:
    p = placement(
        tolerations=[{"operator": "Equal"}],
        predicates=[{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"x": "y"}}}}],
    )
    assert misconfigured(run(p, world([cluster("c")])))[0] == "False"


def test_toleration_seconds_tolerates_until_expiry() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 3601}]
    assert "t" in selected(tol, [taint("gpu", added=ADDED)])


def test_toleration_expired_at_exact_instant() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 3600}]
    assert "t" not in selected(tol, [taint("gpu", added=ADDED)])


def test_expired_toleration_lets_a_later_one_tolerate() -> None:
    tols = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 60}, {"key": "gpu", "operator": "Exists"}]
    assert "t" in selected(tols, [taint("gpu", added=ADDED)])


def test_taint_without_time_added_never_tolerated_with_seconds() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 10**9}]
    assert "t" not in selected(tol, [taint("gpu")])


def test_prefer_no_select_needs_no_toleration_even_with_expired_seconds() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 1}]
    assert "t" in selected(tol, [taint("gpu", "PreferNoSelect", added=ADDED)])


def test_requeue_at_next_toleration_expiry_of_current_decision() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 7200}]
    snapshot = world([cluster("t", taints=[taint("gpu", added=ADDED)])], decisions=[decision("p-decision-1", ["t"])])
    result = run(placement(tolerations=tol), snapshot)
    assert result.toleration_requeue_at == NOW + timedelta(hours=1)
    assert result.requeue_at() == NOW + timedelta(hours=1)


def test_requeue_takes_earliest_expiry() -> None:
    tols = [{"key": "a", "operator": "Exists", "tolerationSeconds": 7200}, {"key": "b", "operator": "Exists", "tolerationSeconds": 4000}]
    clusters = [cluster("t", taints=[taint("a", added=ADDED), taint("b", added=ADDED)])]
    result = run(placement(tolerations=tols), world(clusters, decisions=[decision("p-decision-1", ["t"])]))
    assert result.toleration_requeue_at == NOW + timedelta(seconds=400)


def test_no_requeue_for_clusters_not_in_current_decisions() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 7200}]
    result = run(placement(tolerations=tol), world([cluster("t", taints=[taint("gpu", added=ADDED)])]))
    assert result.selected == ["t"]
    assert result.toleration_requeue_at is None


def test_requeue_considers_decided_cluster_outside_bound_sets() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 7200}]
    clusters = [cluster("t", {"cluster.open-cluster-management.io/clusterset": "none"}, taints=[taint("gpu", added=ADDED)])]
    snapshot = world(clusters, sets=[], bindings=[], decisions=[decision("p-decision-1", ["t"])])
    assert run(placement(tolerations=tol), snapshot).toleration_requeue_at == NOW + timedelta(hours=1)


def test_no_requeue_for_deleted_decided_cluster() -> None:
    tol = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 7200}]
    result = run(placement(tolerations=tol), world([], decisions=[decision("p-decision-1", ["gone"])]))
    assert result.toleration_requeue_at is None


def test_no_requeue_when_pass_is_misconfigured() -> None:
    tols = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 7200}, {"operator": "Equal"}]
    snapshot = world([cluster("t", taints=[taint("gpu", added=ADDED)])], decisions=[decision("p-decision-1", ["t"])])
    assert run(placement(tolerations=tols), snapshot).requeue_at() is None


@pytest.mark.parametrize(("seconds", "expected"), [(0, ZERO_TIME), (60, ZERO_TIME + timedelta(seconds=60))])
def test_toleration_expiry_adds_seconds(seconds: int, expected: object) -> None:
    assert toleration_expiry(ZERO_TIME, seconds) == expected


def test_toleration_expiry_wraps_like_go_duration() -> None:
    # 2^63 ns overflows to a negative duration in Go: the toleration has long expired.
    seconds = 9_223_372_037  # just over (2^63 - 1) / 1e9
    assert toleration_expiry(NOW, seconds) < NOW


def test_toleration_expiry_saturates_beyond_datetime_range() -> None:
    assert toleration_expiry(NOW.replace(year=9999), 9_000_000_000) == FAR_FUTURE
