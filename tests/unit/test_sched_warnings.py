"""What the scheduler ignores as OCM does is said out loud (ocm_rollout.controllers.placement.warnings), and a
pass that cannot resolve its cluster sets says why in PlacementMisconfigured."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.controllers.placement.explain import debug_result, explanation
from ocm_rollout.controllers.placement.warnings import SpecWarning, spec_warnings, untold
from tests.unit.test_sched_builders import (
    binding,
    cluster,
    label_set,
    misconfigured,
    placement,
    plain,
    run,
    taint,
    world,
)


def messages(**spec: Any) -> list[str]:
    return [w.message for w in spec_warnings(placement(**spec))]


def builtin(name: str, weight: int) -> dict[str, Any]:
    return {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}, "weight": weight}


# --- tolerations -----------------------------------------------------------------------------------


@pytest.mark.parametrize("operator", ["Equal", "Exists", ""])
def test_known_toleration_operators_give_no_warning(operator: str) -> None:
    assert messages(tolerations=[{"key": "gpu", "operator": operator}]) == []


def test_an_unknown_toleration_operator_is_named_with_its_toleration() -> None:
    tolerations = [{"key": "a", "operator": "Exists"}, {"key": "gpu", "operator": "In", "value": "x"}]
    assert messages(tolerations=tolerations) == [
        'spec.tolerations[1] (key "gpu") has operator "In", which is neither Equal nor Exists: it tolerates no taint'
    ]


def test_an_unknown_toleration_operator_keeps_the_outcome_ocm_gives() -> None:
    tainted = world([cluster("t", taints=[taint("gpu")]), cluster("plain")])
    result = run(placement(tolerations=[{"key": "gpu", "operator": "exists"}]), tainted)
    assert result.selected == ["plain"]
    assert misconfigured(result)[0] == "False"
    assert [w.reason_action[0] for w in result.warnings] == ["TolerationIgnored"]


# --- prioritizers ----------------------------------------------------------------------------------


def test_a_built_in_prioritizer_named_twice_is_reported() -> None:
    policy = {"mode": "Exact", "configurations": [builtin("Steady", 2), builtin("Balance", 1), builtin("Steady", 5)]}
    assert messages(prioritizerPolicy=policy) == [
        'spec.prioritizerPolicy.configurations[0] (BuiltIn "Steady") is overridden by configurations[2]: '
        "only the last weight (5) counts"
    ]


def test_overriding_a_default_weight_once_is_no_warning() -> None:
    assert messages(prioritizerPolicy={"configurations": [builtin("Steady", 3)]}) == []


def test_an_unknown_built_in_prioritizer_with_weight_zero_is_reported() -> None:
    assert messages(prioritizerPolicy={"configurations": [builtin("Nope", 0)]}) == [
        'spec.prioritizerPolicy.configurations[0] names no built-in prioritizer ("Nope"); it is skipped because '
        "its weight is 0"
    ]


def test_an_unknown_built_in_prioritizer_with_a_weight_is_misconfigured_not_warned() -> None:
    result = run(placement(prioritizerPolicy={"configurations": [builtin("Nope", 2)]}), world(plain(1)))
    assert misconfigured(result)[0] == "True"
    assert result.warnings == []


# --- telling once ---------------------------------------------------------------------------------


def test_a_warning_is_told_once_and_again_after_it_went_away() -> None:
    warning = SpecWarning(("TolerationIgnored", "Scheduled"), "m")
    fresh, told = untold([warning], frozenset())
    assert fresh == [warning]
    assert untold([warning], told)[0] == []
    _, told = untold([], told)
    assert untold([warning], told)[0] == [warning]


def test_the_explanation_and_the_debug_answer_list_the_warnings() -> None:
    result = run(placement(tolerations=[{"key": "gpu", "operator": "In"}]), world(plain(1)))
    assert explanation(result)["warnings"] == [w.message for w in result.warnings]
    assert debug_result(result)["warnings"] == [w.message for w in result.warnings]
    assert "warnings" not in explanation(run(placement(), world(plain(1))))


# --- a cluster set that cannot be resolved -------------------------------------------------------


def test_an_unresolvable_cluster_set_sets_misconfigured_and_keeps_the_rest_of_the_status() -> None:
    bad = label_set("bad", {"matchExpressions": [{"key": "a", "operator": "Foo"}]})
    result = run(placement(), world(plain(1), sets=[bad], bindings=[binding("bad")]))
    assert result.aborted is not None and not result.acts
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message == f":{result.aborted}"
    assert result.new_status is not None
    assert [c.type for c in result.new_status.conditions] == ["PlacementMisconfigured"]
    assert result.new_status.number_of_selected_clusters == 0
