"""Decoding, errors and the effective strategy (docs/behaviour/rollout.md sections 2 and 3)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.controllers.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    RolloutStatus,
    RolloutStrategyError,
    decode_strategy,
    plan_rollout,
)
from ocm_rollout.controllers.rollout.model import RolloutInputError, RolloutType
from ocm_rollout.controllers.rollout.strategy import effective_type, legacy_type_read
from ocm_rollout.controllers.rollout.wire import decode_plan_input, encode_plan, plan_document

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
GROUPS = [DecisionGroup(group_name="g", group_index=0, clusters=["a", "b"])]


def error_field(strategy: Any, groups: list[DecisionGroup] | None = None, existing: Any = ()) -> str:
    with pytest.raises(RolloutStrategyError) as info:
        plan_rollout(strategy, GROUPS if groups is None else groups, existing, NOW)
    return info.value.field


def effective(strategy: Any) -> dict[str, Any]:
    return plan_rollout(strategy, GROUPS, [], NOW).strategy.to_dict()


# --- type -------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [{"all": {}}, {"type": None}, {"type": None, "rolloutType": None}])
def test_absent_type_is_an_error_naming_type_in_the_plan_contract(strategy: Any) -> None:
    # docs/behaviour/rollout.md section 2: the input document of `ocm-rollout plan`.
    doc = {"now": "2024-05-01T12:00:00Z", "strategy": strategy, "decisionGroups": [], "existing": []}
    with pytest.raises(RolloutStrategyError) as info:
        plan_document(doc)
    assert info.value.field == "strategy.type"


@pytest.mark.parametrize("strategy", [{"all": {}}, {"type": None}, {}])
def test_absent_type_of_an_api_object_is_all(strategy: Any) -> None:
    # The CRD no longer defaults type (it would contradict a rolloutType); OCM's defaulting gave All.
    assert effective(strategy) == {"type": "All", "all": {}}
    assert decode_strategy(strategy).type is RolloutType.ALL


@pytest.mark.parametrize("value", ["Canary", "all", "", 3])
def test_unknown_type_is_an_error_naming_type(value: Any) -> None:
    assert error_field({"type": value}) == "strategy.type"


# --- rolloutType, the older spelling of type ------------------------------------------------------


@pytest.mark.parametrize("kind", ["All", "Progressive", "ProgressivePerGroup"])
def test_rollout_type_is_read_as_type(kind: str) -> None:
    key = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}[kind]
    strategy = {"rolloutType": kind, key: {"progressDeadline": "10m"}}
    assert effective(strategy) == {"type": kind, key: {"progressDeadline": "10m"}}
    assert decode_strategy(strategy).type is RolloutType(kind)


def test_rollout_type_agreeing_with_type_is_read_as_type() -> None:
    strategy = {"type": "Progressive", "rolloutType": "Progressive", "progressive": {"maxConcurrency": 1}}
    assert effective(strategy) == {"type": "Progressive", "progressive": {"maxConcurrency": 1}}


def test_seed_progressive_strategy_spelled_rollout_type_rolls_out_the_first_canary_group_first() -> None:
    strategy = {
        "rolloutType": "Progressive",
        "progressive": {
            "minSuccessTime": "5m",
            "progressDeadline": "10m",
            "maxFailures": "5%",
            "mandatoryDecisionGroups": [{"groupName": "prod-canary-west"}, {"groupName": "prod-canary-east"}],
        },
    }
    groups = [
        DecisionGroup(group_name="prod-canary-west", group_index=0, clusters=["c1"]),
        DecisionGroup(group_name="prod-canary-east", group_index=1, clusters=["c2"]),
        DecisionGroup(group_name="", group_index=2, clusters=["c3", "c4", "c5"]),
    ]
    result = plan_rollout(strategy, groups, [], NOW)
    # Mandatory groups go one after the other, in order; read as All it would be all five.
    assert sorted(entry.cluster_name for entry in result.clusters_to_rollout) == ["c1"]


@pytest.mark.parametrize(("type_", "legacy"), [("All", "Progressive"), ("Progressive", "ProgressivePerGroup")])
def test_rollout_type_disagreeing_with_type_is_an_error_naming_rollout_type(type_: str, legacy: str) -> None:
    with pytest.raises(RolloutStrategyError) as info:
        plan_rollout(
            {"type": type_, "rolloutType": legacy}, GROUPS, [], NOW, field_path="spec.placementRefs[1].rolloutStrategy"
        )
    assert info.value.field == "spec.placementRefs[1].rolloutStrategy.rolloutType"
    assert "older spelling of type" in info.value.reason
    assert repr(type_) in info.value.reason and repr(legacy) in info.value.reason


@pytest.mark.parametrize("value", ["Canary", "", 3])
def test_unknown_rollout_type_is_an_error_naming_rollout_type(value: Any) -> None:
    assert error_field({"rolloutType": value}) == "strategy.rolloutType"


def test_rollout_type_is_read_in_the_plan_contract_too() -> None:
    doc = {
        "now": "2024-05-01T12:00:00Z",
        "strategy": {"rolloutType": "ProgressivePerGroup"},
        "decisionGroups": [{"groupName": "g", "groupIndex": 0, "clusters": ["a"]}],
        "existing": [],
    }
    assert encode_plan(plan_document(doc))["strategy"] == {"type": "ProgressivePerGroup", "progressivePerGroup": {}}


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ({"type": "Progressive"}, None),
        ({"rolloutType": "Progressive"}, "Progressive"),
        ({"type": "Progressive", "rolloutType": "Progressive"}, "Progressive"),
        ({"type": "All", "rolloutType": "Progressive"}, None),
        ({"rolloutType": "Canary"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_legacy_type_read_names_only_a_rollout_type_read_as_type(strategy: Any, expected: str | None) -> None:
    assert legacy_type_read(strategy) == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ({"type": "All", "rolloutType": "Progressive"}, "All"),
        ({"rolloutType": "Progressive"}, "Progressive"),
        ({"progressive": {}}, None),
        (None, None),
    ],
)
def test_effective_type_prefers_type_then_rollout_type(strategy: Any, expected: str | None) -> None:
    assert effective_type(strategy) == expected


def test_a_strategy_that_is_not_an_object_is_an_error_naming_it() -> None:
    assert error_field("All") == "strategy"


def test_error_names_the_field_under_the_given_path() -> None:
    with pytest.raises(RolloutStrategyError) as info:
        plan_rollout(
            {"type": "Progressive", "progressive": {"maxFailures": "5"}},
            GROUPS,
            [],
            NOW,
            field_path="spec.placementRefs[0].rolloutStrategy",
        )
    assert info.value.field == "spec.placementRefs[0].rolloutStrategy.progressive.maxFailures"
    assert str(info.value).startswith("spec.placementRefs[0].rolloutStrategy.progressive.maxFailures: ")


def test_strategy_errors_are_value_errors() -> None:
    assert issubclass(RolloutStrategyError, ValueError)
    assert issubclass(RolloutStrategyError, RolloutInputError)


# --- bodies -------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [None, "absent"])
def test_absent_or_null_body_is_an_empty_body(body: Any) -> None:
    strategy: dict[str, Any] = {"type": "Progressive"}
    if body != "absent":
        strategy["progressive"] = body
    assert effective(strategy) == {"type": "Progressive", "progressive": {}}


def test_bodies_of_other_types_are_ignored_even_when_malformed() -> None:
    strategy = {
        "type": "All",
        "all": {"progressDeadline": "10m"},
        "progressive": {"maxFailures": "bad", "progressDeadline": "2d"},
        "progressivePerGroup": 17,
    }
    assert effective(strategy) == {"type": "All", "all": {"progressDeadline": "10m"}}


def test_a_body_that_is_not_an_object_is_an_error_naming_it() -> None:
    assert (
        error_field({"type": "ProgressivePerGroup", "progressivePerGroup": []})
        == "strategy.progressivePerGroup"
    )


# --- effective strategy (section 3) -------------------------------------------------------------


def test_effective_strategy_keeps_only_the_fields_of_the_type() -> None:
    body = {
        "progressDeadline": "10m",
        "minSuccessTime": "5m",
        "maxFailures": 2,
        "maxConcurrency": "25%",
        "mandatoryDecisionGroups": [{"groupName": "g"}],
        "unknown": True,
    }
    assert effective({"type": "All", "all": body}) == {
        "type": "All",
        "all": {"progressDeadline": "10m", "minSuccessTime": "5m", "maxFailures": 2},
    }
    assert effective({"type": "ProgressivePerGroup", "progressivePerGroup": body}) == {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {
            "progressDeadline": "10m",
            "minSuccessTime": "5m",
            "maxFailures": 2,
            "mandatoryDecisionGroups": [{"groupName": "g"}],
        },
    }
    progressive = dict(body)
    del progressive["unknown"]
    assert effective({"type": "Progressive", "progressive": body}) == {
        "type": "Progressive",
        "progressive": progressive,
    }


def test_effective_strategy_fills_in_and_computes_nothing() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": "50%"}}
    assert effective(strategy) == {"type": "Progressive", "progressive": {"maxConcurrency": "50%"}}


def test_effective_strategy_of_the_documented_default_is_itself() -> None:
    strategy = {"type": "All", "all": {"progressDeadline": "None"}}
    assert effective(strategy) == strategy


def test_decoded_values_treat_absent_and_zero_forms_alike() -> None:
    absent = decode_strategy({"type": "Progressive"})
    spelled = decode_strategy(
        {
            "type": "Progressive",
            "progressive": {
                "progressDeadline": "None",
                "minSuccessTime": "0s",
                "maxFailures": 0,
                "maxConcurrency": 0,
                "mandatoryDecisionGroups": [],
            },
        }
    )
    for name in ("progress_deadline_ns", "min_success_time_ns", "max_failures", "max_concurrency"):
        assert getattr(absent, name) == getattr(spelled, name)
    assert absent.mandatory_decision_groups == spelled.mandatory_decision_groups == ()
    assert absent.progress_deadline_ns is None


def test_a_model_with_model_dump_is_accepted_as_strategy() -> None:
    class Model:
        def model_dump(self, **kwargs: Any) -> dict[str, Any]:
            assert kwargs.get("by_alias") is True
            return {"type": "Progressive", "progressive": {"maxConcurrency": 1}}

    result = plan_rollout(Model(), GROUPS, [], NOW)
    assert [entry.cluster_name for entry in result.clusters_to_rollout] == ["a"]


# --- shapes, durations and thresholds (section 2) --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"progressDeadline": 10}, "progressDeadline"),
        ({"minSuccessTime": 300}, "minSuccessTime"),
        ({"maxFailures": 1.5}, "maxFailures"),
        ({"maxFailures": True}, "maxFailures"),
        ({"maxFailures": 2**31}, "maxFailures"),
        ({"maxConcurrency": [1]}, "maxConcurrency"),
        ({"mandatoryDecisionGroups": {"groupName": "g"}}, "mandatoryDecisionGroups"),
        ({"mandatoryDecisionGroups": ["g"]}, "mandatoryDecisionGroups[0]"),
        ({"mandatoryDecisionGroups": [{"groupName": 1}]}, "mandatoryDecisionGroups[0].groupName"),
        ({"mandatoryDecisionGroups": [{}, {"groupIndex": "1"}]}, "mandatoryDecisionGroups[1].groupIndex"),
    ],
)
def test_fields_of_the_wrong_json_shape_are_errors_naming_them(body: dict[str, Any], field: str) -> None:
    assert error_field({"type": "Progressive", "progressive": body}) == f"strategy.progressive.{field}"


@pytest.mark.parametrize("deadline", ["0", "90", "2d", "10g", "2d0s", "1.5h", "-5s"])
def test_malformed_progress_deadline_is_an_error_naming_it(deadline: str) -> None:
    for kind, key in (
        ("All", "all"),
        ("Progressive", "progressive"),
        ("ProgressivePerGroup", "progressivePerGroup"),
    ):
        assert (
            error_field({"type": kind, key: {"progressDeadline": deadline}})
            == f"strategy.{key}.progressDeadline"
        )


@pytest.mark.parametrize("deadline", ["90s", "1h30m", "0s", "10ms", "1m30.5s", "", "None"])
def test_well_formed_progress_deadlines_are_accepted(deadline: str) -> None:
    plan_rollout({"type": "Progressive", "progressive": {"progressDeadline": deadline}}, GROUPS, [], NOW)


def test_malformed_min_success_time_is_an_error_naming_it() -> None:
    assert error_field({"type": "All", "all": {"minSuccessTime": "5x"}}) == "strategy.all.minSuccessTime"


def test_min_success_time_accepts_any_go_duration_including_negative() -> None:
    for value in ("1.5h", "-5m", "0", "250ms"):
        plan_rollout(
            {"type": "ProgressivePerGroup", "progressivePerGroup": {"minSuccessTime": value}}, GROUPS, [], NOW
        )


@pytest.mark.parametrize("value", ["5", "50 %", "1e400%", "five%"])
def test_malformed_max_failures_is_an_error_for_progressive_types(value: str) -> None:
    assert error_field({"type": "Progressive", "progressive": {"maxFailures": value}}) == (
        "strategy.progressive.maxFailures"
    )
    assert error_field({"type": "ProgressivePerGroup", "progressivePerGroup": {"maxFailures": value}}) == (
        "strategy.progressivePerGroup.maxFailures"
    )


@pytest.mark.parametrize("value", ["50%", "12.5%", ".5%", "1e1%", 3, 0, None])
def test_well_formed_thresholds_are_accepted(value: Any) -> None:
    plan_rollout(
        {"type": "Progressive", "progressive": {"maxFailures": value, "maxConcurrency": value}},
        GROUPS,
        [],
        NOW,
    )


def test_all_never_validates_max_failures() -> None:
    result = plan_rollout({"type": "All", "all": {"maxFailures": "5"}}, GROUPS, [], NOW)
    assert result.strategy.to_dict() == {"type": "All", "all": {"maxFailures": "5"}}


def test_all_has_no_max_concurrency_field() -> None:
    result = plan_rollout({"type": "All", "all": {"maxConcurrency": "not a number"}}, GROUPS, [], NOW)
    assert result.strategy.to_dict() == {"type": "All", "all": {}}
    assert len(result.clusters_to_rollout) == 2


def test_progressive_per_group_has_no_max_concurrency_field() -> None:
    strategy = {"type": "ProgressivePerGroup", "progressivePerGroup": {"maxConcurrency": "bad"}}
    assert plan_rollout(strategy, GROUPS, [], NOW).strategy.to_dict() == {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {},
    }


def test_malformed_max_concurrency_is_reported_when_the_plan_reaches_the_rest_phase() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": "5"}}
    assert error_field(strategy) == "strategy.progressive.maxConcurrency"


def test_malformed_max_concurrency_is_not_reported_when_the_mandatory_phase_answers() -> None:
    strategy = {
        "type": "Progressive",
        "progressive": {"maxConcurrency": "5", "mandatoryDecisionGroups": [{"groupName": "g"}]},
    }
    result = plan_rollout(strategy, GROUPS, [], NOW)
    assert [entry.cluster_name for entry in result.clusters_to_rollout] == ["a", "b"]


def test_progress_deadline_is_checked_before_max_failures() -> None:
    strategy = {"type": "Progressive", "progressive": {"progressDeadline": "2d", "maxFailures": "5"}}
    assert error_field(strategy) == "strategy.progressive.progressDeadline"


def test_max_failures_is_checked_before_max_concurrency() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxFailures": "5", "maxConcurrency": "5"}}
    assert error_field(strategy) == "strategy.progressive.maxFailures"


def test_json_shapes_are_checked_before_progress_deadline() -> None:
    strategy = {"type": "Progressive", "progressive": {"progressDeadline": "2d", "maxConcurrency": True}}
    assert error_field(strategy) == "strategy.progressive.maxConcurrency"


def test_min_success_time_is_decoded_with_the_shapes_before_progress_deadline() -> None:
    strategy = {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {"progressDeadline": "2d", "minSuccessTime": "x"},
    }
    assert error_field(strategy) == "strategy.progressivePerGroup.minSuccessTime"


# --- the rest of the input document ---------------------------------------------------------------


def document(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "now": "2024-05-01T12:00:00Z",
        "strategy": {"type": "All"},
        "decisionGroups": [{"groupName": "g", "groupIndex": 0, "clusters": ["a"]}],
        "existing": [{"clusterName": "a", "status": "Succeeded", "lastTransitionTime": None}],
    }
    doc.update(overrides)
    return doc


def input_error_field(doc: dict[str, Any]) -> str:
    with pytest.raises(RolloutInputError) as info:
        plan_document(doc)
    return info.value.field


@pytest.mark.parametrize("status", ["Done", "succeeded", "", None, 3])
def test_unknown_status_is_an_error_naming_it(status: Any) -> None:
    doc = document(
        existing=[{"clusterName": "a", "status": "ToApply"}, {"clusterName": "b", "status": status}]
    )
    assert input_error_field(doc) == "existing[1].status"


def test_every_status_name_is_accepted() -> None:
    names = [status.value for status in RolloutStatus]
    doc = document(existing=[{"clusterName": f"c{i}", "status": name} for i, name in enumerate(names)])
    plan_document(doc)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"now": None}, "now"),
        ({"now": "yesterday"}, "now"),
        ({"strategy": None}, "strategy"),
        ({"decisionGroups": {}}, "decisionGroups"),
        ({"decisionGroups": [{"groupIndex": 1.0, "clusters": []}]}, "decisionGroups[0].groupIndex"),
        ({"decisionGroups": [{"groupIndex": 0, "groupName": 7}]}, "decisionGroups[0].groupName"),
        ({"decisionGroups": [{"groupIndex": 0, "clusters": "a"}]}, "decisionGroups[0].clusters"),
        ({"decisionGroups": [{"groupIndex": 0, "clusters": ["a", 2]}]}, "decisionGroups[0].clusters[1]"),
        ({"existing": [{"clusterName": 1, "status": "Skip"}]}, "existing[0].clusterName"),
        ({"existing": [{"clusterName": "a", "status": "Skip", "lastTransitionTime": "now"}]},
         "existing[0].lastTransitionTime"),
        ({"existing": ["a"]}, "existing[0]"),
    ],
)  # fmt: skip
def test_malformed_documents_are_errors_naming_the_field(overrides: dict[str, Any], field: str) -> None:
    assert input_error_field(document(**overrides)) == field


def test_group_name_defaults_to_empty() -> None:
    doc = document(decisionGroups=[{"groupIndex": 0, "clusters": ["a"]}], existing=[])
    output = encode_plan(plan_document(doc))
    assert output["clustersToRollout"][0]["groupName"] == ""


def test_decoded_document_carries_typed_inputs() -> None:
    decoded = decode_plan_input(document())
    assert decoded.decision_groups == (DecisionGroup(group_name="g", group_index=0, clusters=("a",)),)
    assert decoded.existing == (ClusterRolloutStatus("a", RolloutStatus.SUCCEEDED, None),)
