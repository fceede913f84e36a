"""Placements stored before a CRD rule existed are scheduled as OCM's controller schedules them.

The CRD requires ``scoreCoordinate`` and restricts ``clustersPerDecisionGroup`` to a pattern, but
an object created before those rules (the API server never validated it against them) can lack
the one or break the other. The models accept such objects, and the scheduler reports them as
docs/behaviour/scheduling.md says: §4 Misconfigured "scoreCoordinate field is required", §6 the group-length
messages, or a group length when §6 defines one ("150%", "0%").
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ocm_rollout.api.cluster_v1beta1 import GroupStrategy, Placement, PrioritizerConfig
from ocm_rollout.api.crdgen import crd_for
from ocm_rollout.api.meta import GROUP_SIZE_PATTERN, InvalidObject
from ocm_rollout.controllers.placement.groups import group_length
from tests.unit.test_sched_builders import misconfigured, placement, plain, run, satisfied, world

NO_COORDINATE = {"configurations": [{"weight": 2}]}


def groups_of(per_group: Any) -> dict[str, Any]:
    return {"groupStrategy": {"clustersPerDecisionGroup": per_group}}


# --------------------------------------------------------------------------------------------
# The models
# --------------------------------------------------------------------------------------------


def test_configuration_without_score_coordinate_parses() -> None:
    config = PrioritizerConfig.model_validate({"weight": 3})
    assert config.score_coordinate is None
    assert config.weight == 3
    assert config.to_wire() == {"weight": 3}


def test_explicit_null_score_coordinate_parses() -> None:
    assert PrioritizerConfig.model_validate({"scoreCoordinate": None}).score_coordinate is None


def test_placement_without_score_coordinate_parses_and_round_trips() -> None:
    wire = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"prioritizerPolicy": NO_COORDINATE}}
    parsed = Placement.parse(wire)
    assert parsed.spec.prioritizer_policy is not None
    assert parsed.spec.prioritizer_policy.configurations[0].score_coordinate is None
    assert parsed.to_wire()["spec"]["prioritizerPolicy"]["configurations"] == [{"weight": 2}]


@pytest.mark.parametrize("value", ["1e400%", "-1e400%", "25", "150%", "0%", "12.5%", "abc", "abc%", "", "Inf%", 0, -3, 1000])
def test_any_group_size_string_or_integer_parses(value: int | str) -> None:
    assert GroupStrategy.model_validate({"clustersPerDecisionGroup": value}).clusters_per_decision_group == value


@pytest.mark.parametrize("value", [True, 1.5, None, ["25%"], {"n": 1}])
def test_group_size_of_another_type_is_still_rejected(value: Any) -> None:
    with pytest.raises(ValidationError):
        GroupStrategy.model_validate({"clustersPerDecisionGroup": value})


def test_other_rules_still_apply_to_a_configuration() -> None:
    wire = {"metadata": {"name": "p"}, "spec": {"prioritizerPolicy": {"configurations": [{"weight": 11}]}}}
    with pytest.raises(InvalidObject, match=r"configurations\[0\]\.weight"):
        Placement.parse(wire)


def test_the_crd_still_requires_score_coordinate_and_emits_the_group_size_pattern() -> None:
    spec = crd_for(Placement)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    config = spec["prioritizerPolicy"]["properties"]["configurations"]["items"]
    assert "scoreCoordinate" in config["required"]
    per_group = spec["decisionStrategy"]["properties"]["groupStrategy"]["properties"]["clustersPerDecisionGroup"]
    assert per_group["pattern"] == GROUP_SIZE_PATTERN
    assert per_group["x-kubernetes-int-or-string"] is True


# --------------------------------------------------------------------------------------------
# group_length (§6 step 1) on the values the CRD pattern rejects
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "length"),
    [("150%", 4, 4), ("0%", 4, 4), ("12.5%", 8, 1), ("-50%", 4, 4), ("Inf%", 4, 4), ("NaN%", 4, 4), (0, 4, 4), (-3, 4, 4), (9, 4, 4)],
)
def test_group_length_of_values_outside_the_pattern(value: int | str, total: int, length: int) -> None:
    assert group_length(value, total) == (length, group_length("100%", total)[1])


@pytest.mark.parametrize("value", ["1e400%", "-1e400%", "abc%", "%", "25", "abc", ""])
def test_group_length_misconfigured_values(value: str) -> None:
    _, status = group_length(value, 4)
    assert status.is_error
    assert status.message == f"{value} invalid type: string is not a percentage"


# --------------------------------------------------------------------------------------------
# A full scheduling pass
# --------------------------------------------------------------------------------------------


def test_schedule_without_score_coordinate_is_misconfigured_as_scheduling_says() -> None:
    result = run(placement(prioritizerPolicy=NO_COORDINATE), world(plain(3)))
    assert result.acts
    assert misconfigured(result) == ("True", "Misconfigured", ":scoreCoordinate field is required")
    assert satisfied(result)[:2] == ("False", "NoManagedClusterMatched")
    assert result.selected == []
    assert [(page.name, page.clusters) for page in result.pages] == [("p-decision-1", ())]
    assert result.new_status is not None and result.new_status.number_of_selected_clusters == 0


def test_missing_score_coordinate_is_reported_even_without_clusters() -> None:
    result = run(placement(prioritizerPolicy=NO_COORDINATE), world([], sets=[], bindings=[]))
    assert misconfigured(result) == ("True", "Misconfigured", ":scoreCoordinate field is required")
    assert satisfied(result)[1] == "NoManagedClusterSetBindings"


def test_missing_score_coordinate_after_a_valid_entry_still_fails() -> None:
    policy = {"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}, {"weight": 1}]}
    result = run(placement(prioritizerPolicy=policy), world(plain(2)))
    assert misconfigured(result)[2] == ":scoreCoordinate field is required"


def test_mode_is_checked_before_score_coordinate() -> None:
    policy = {"mode": "Sometimes", "configurations": [{"weight": 1}]}
    result = run(placement(prioritizerPolicy=policy), world(plain(2)))
    assert misconfigured(result)[2] == ":incorrect prioritizer policy mode: Sometimes"


@pytest.mark.parametrize("value", ["1e400%", "25", "abc%"])
def test_schedule_with_a_bad_group_size_keeps_the_selection_and_drops_the_groups(value: str) -> None:
    result = run(placement(decisionStrategy=groups_of(value)), world(plain(3)))
    assert misconfigured(result) == ("True", "Misconfigured", f":{value} invalid type: string is not a percentage")
    assert satisfied(result)[:2] == ("True", "AllDecisionsScheduled")
    assert result.selected == ["c1", "c2", "c3"]
    assert result.groups == [] and result.pages == []
    assert result.new_status is not None
    assert result.new_status.number_of_selected_clusters == 3
    assert result.new_status.decision_groups == []


@pytest.mark.parametrize(("value", "sizes"), [("150%", [4]), ("0%", [4]), ("12.5%", [1, 1, 1, 1]), (-3, [4])])
def test_schedule_with_a_group_size_outside_the_pattern_but_defined_by_scheduling(value: int | str, sizes: list[int]) -> None:
    result = run(placement(decisionStrategy=groups_of(value)), world(plain(4)))
    assert misconfigured(result) == ("False", "Succeedconfigured", "Placement configurations check pass")
    assert [len(group.clusters) for group in result.groups] == sizes
