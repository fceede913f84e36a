"""Shared meta types: conditions, label selectors, Go durations, int-or-percent, wire form."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.api.cluster_v1beta1 import PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet
from ocm_rollout.api.meta import (
    MAX_DURATION_NS,
    Condition,
    DurationError,
    InvalidObject,
    LabelSelector,
    ObjectMeta,
    SelectorError,
    format_go_duration,
    format_time,
    label_value_errors,
    parse_go_duration,
    parse_progress_deadline,
    qualified_name_errors,
    set_condition,
)
from ocm_rollout.api.work_v1 import ManifestWork

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def cond(status: str = "True", reason: str = "Ready", message: str = "", at: datetime = T0) -> Condition:
    return Condition(type="Ready", status=status, reason=reason, message=message, last_transition_time=at)  # type: ignore[arg-type]


# ---------------------------------------------------------------- set_condition


def test_set_condition_appends_a_new_type_stamped_now() -> None:
    conditions: list[Condition] = []
    assert set_condition(conditions, cond(at=T1), T0) is True
    assert [c.last_transition_time for c in conditions] == [T0]


def test_set_condition_keeps_transition_time_when_status_is_unchanged() -> None:
    conditions = [cond(at=T0)]
    changed = set_condition(conditions, cond(reason="StillReady", message="new"), T1)
    assert changed is True
    assert conditions[0].reason == "StillReady"
    assert conditions[0].message == "new"
    assert conditions[0].last_transition_time == T0


def test_set_condition_moves_transition_time_when_status_flips() -> None:
    conditions = [cond(at=T0)]
    set_condition(conditions, cond(status="False", reason="Broken"), T1)
    assert conditions[0].status == "False"
    assert conditions[0].last_transition_time == T1


def test_set_condition_reports_no_change_for_the_same_condition() -> None:
    conditions = [cond(at=T0)]
    assert set_condition(conditions, cond(at=T1), T1) is False
    assert conditions[0].last_transition_time == T0


def test_set_condition_leaves_other_types_in_place() -> None:
    other = Condition(type="Other", status="False", reason="X", message="", last_transition_time=T0)
    conditions = [other, cond(at=T0)]
    set_condition(conditions, cond(status="False", reason="Broken"), T1)
    assert conditions[0] == other
    assert [c.type for c in conditions] == ["Other", "Ready"]


# ---------------------------------------------------------------- label selectors


def sel(**kwargs: Any) -> LabelSelector:
    return LabelSelector.model_validate(kwargs)


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def test_empty_selector_matches_everything() -> None:
    assert sel().matches({}) and sel().matches({"a": "b"})


def test_match_labels_need_every_pair() -> None:
    s = sel(matchLabels={"a": "1", "b": "2"})
    assert s.matches({"a": "1", "b": "2", "c": "3"})
    assert not s.matches({"a": "1"})


def test_in_needs_the_key_with_a_listed_value() -> None:
    s = sel(matchExpressions=[expr("env", "In", "prod", "qa")])
    assert s.matches({"env": "qa"})
    assert not s.matches({"env": "dev"})
    assert not s.matches({})


def test_not_in_matches_clusters_without_the_key() -> None:
    s = sel(matchExpressions=[expr("env", "NotIn", "prod")])
    assert s.matches({})
    assert s.matches({"env": "dev"})
    assert not s.matches({"env": "prod"})


def test_exists_and_does_not_exist_look_only_at_the_key() -> None:
    assert sel(matchExpressions=[expr("gpu", "Exists")]).matches({"gpu": ""})
    assert not sel(matchExpressions=[expr("gpu", "Exists")]).matches({})
    assert sel(matchExpressions=[expr("gpu", "DoesNotExist")]).matches({"cpu": "x"})
    assert not sel(matchExpressions=[expr("gpu", "DoesNotExist")]).matches({"gpu": "x"})


def test_match_labels_and_expressions_are_anded() -> None:
    s = sel(matchLabels={"a": "1"}, matchExpressions=[expr("b", "Exists")])
    assert s.matches({"a": "1", "b": "x"})
    assert not s.matches({"a": "1"})


@pytest.mark.parametrize(
    ("expression", "complaint"),
    [
        (expr("env", "Equals", "prod"), "operator"),
        (expr("env", "In"), "values"),
        (expr("env", "NotIn"), "values"),
        (expr("env", "Exists", "x"), "values"),
        (expr("bad key", "Exists"), "key"),
        (expr("env", "In", "not a value"), "values"),
        (expr("env", "In", "x" * 64), "values"),
    ],
)
def test_invalid_requirements_do_not_compile(expression: dict[str, Any], complaint: str) -> None:
    with pytest.raises(SelectorError, match=complaint):
        sel(matchExpressions=[expression]).matches({"env": "prod"})


def test_invalid_match_labels_value_is_reported_by_key() -> None:
    with pytest.raises(SelectorError, match=r"matchLabels\[env\]"):
        sel(matchLabels={"env": "-bad"}).check()


def test_qualified_name_rules() -> None:
    assert qualified_name_errors("example.com/MyName") == []
    assert qualified_name_errors("a/b/c") != []
    assert qualified_name_errors("Example.com/x")[0].startswith("prefix part")
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 characters"]


def test_label_value_rules() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("ns.name") == []
    assert label_value_errors("x" * 64)[0] == "must be no more than 63 characters"


# ---------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("90s", 90 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("0", 0),
        ("0s", 0),
        ("10ms", 10**7),
        ("1m30.5s", 90_500_000_000),
        ("1.5h", 5400 * 10**9),
        (".5s", 500_000_000),
        ("-5s", -5 * 10**9),
        ("+2m", 120 * 10**9),
        ("1µs", 1000),
        ("1us", 1000),
        ("3ns", 3),
        ("2562047h47m16.854775807s", MAX_DURATION_NS),
    ],
)
def test_go_durations_parse_to_nanoseconds(text: str, ns: int) -> None:
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize(
    "text", ["", "90", "2d", "h", "1.h5", ".s", "1s2", "ten minutes", "2562047h47m16.854775808s", "1e3s"]
)
def test_invalid_go_durations_are_rejected(text: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (90 * 10**9, "1m30s"),
        (5400 * 10**9, "1h30m0s"),
        (1_500_000_000, "1.5s"),
        (10**7, "10ms"),
        (1500, "1.5µs"),
        (-(5 * 10**9), "-5s"),
        (MAX_DURATION_NS, "2562047h47m16.854775807s"),
    ],
)
def test_durations_format_like_go(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text


@pytest.mark.parametrize("text", [None, "", "None"])
def test_progress_deadline_none_means_unlimited(text: str | None) -> None:
    assert parse_progress_deadline(text) is None


@pytest.mark.parametrize(("text", "ns"), [("90s", 90 * 10**9), ("0s", 0), ("10ms", 10**7)])
def test_progress_deadline_accepts_durations_starting_with_digits_and_a_unit(text: str, ns: int) -> None:
    assert parse_progress_deadline(text) == ns


@pytest.mark.parametrize("text", ["0", "90", "2d", "10g", "2d0s", "1.5h", "-5s", "5|", "xNone"])
def test_progress_deadline_rejects_what_ocm_rejects(text: str) -> None:
    with pytest.raises(DurationError):
        parse_progress_deadline(text)


# ---------------------------------------------------------------- wire form


def test_times_are_written_in_utc_with_whole_seconds() -> None:
    meta = ObjectMeta.model_validate({"creationTimestamp": "2024-01-01T02:00:00.75+02:00"})
    assert meta.creation_timestamp == datetime(2024, 1, 1, 0, 0, 0, 750000, tzinfo=UTC)
    assert meta.to_wire()["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert format_time(datetime(2024, 1, 1)) == "2024-01-01T00:00:00Z"


def test_fields_accept_python_names_and_wire_names() -> None:
    by_alias = PlacementDecision.model_validate(
        {"metadata": {"name": "p"}, "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}}
    )
    by_name = PlacementDecision(metadata=ObjectMeta(name="p"), status={"decisions": [{"cluster_name": "c1", "reason": ""}]})  # type: ignore[arg-type]
    assert by_alias == by_name


def test_wire_form_leaves_out_none_and_empty_optional_lists() -> None:
    wire = ManifestWork(metadata=ObjectMeta(name="w", namespace="c1")).to_wire()
    assert wire["metadata"] == {"name": "w", "namespace": "c1"}
    assert "manifestConfigs" not in wire["spec"]
    assert "deleteOption" not in wire["spec"]


def test_wire_form_keeps_fields_ocm_always_writes() -> None:
    wire = PlacementDecision(metadata=ObjectMeta(name="p")).to_wire()
    assert wire["status"] == {"decisions": []}


def test_wire_form_keeps_an_empty_selector_which_means_select_all() -> None:
    mcs = ManagedClusterSet.model_validate(
        {"metadata": {"name": "global"}, "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}}
    )
    assert mcs.to_wire()["spec"]["clusterSelector"]["labelSelector"] == {}


def test_metadata_keeps_keys_the_model_does_not_name() -> None:
    raw = {"name": "x", "managedFields": [{"manager": "kubectl"}], "selfLink": "/x"}
    assert ObjectMeta.model_validate(raw).to_wire() == raw


def test_unknown_fields_of_typed_models_are_dropped() -> None:
    pd = PlacementDecision.model_validate(
        {"metadata": {"name": "p"}, "status": {"decisions": [], "somethingNew": 1}, "extra": True}
    )
    assert "somethingNew" not in pd.to_wire()["status"]
    assert "extra" not in pd.to_wire()


def test_manifests_round_trip_untouched() -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "creationTimestamp": None},
        "data": {},
        "x-unknown": {"nested": [None, {}, [], 1.5, "z"]},
    }
    work = ManifestWork.model_validate({"metadata": {"name": "w"}, "spec": {"workload": {"manifests": [manifest]}}})
    assert work.to_wire()["spec"]["workload"]["manifests"] == [manifest]


def test_type_meta_is_filled_in_when_absent() -> None:
    wire = PlacementDecision(metadata=ObjectMeta(name="p")).to_wire()
    assert wire["apiVersion"] == "cluster.open-cluster-management.io/v1beta1"
    assert wire["kind"] == "PlacementDecision"


def test_wrong_api_version_is_rejected() -> None:
    expected = re.escape("apiVersion must be 'cluster.open-cluster-management.io/v1beta1'")
    with pytest.raises(InvalidObject, match=expected):
        PlacementDecision.parse({"apiVersion": "cluster.open-cluster-management.io/v1alpha1", "metadata": {}})


def test_parse_errors_name_the_field_path() -> None:
    with pytest.raises(InvalidObject) as info:
        PlacementDecision.parse({"metadata": {"name": "p"}, "status": {"decisions": [{"clusterName": "c1"}]}})
    assert "status.decisions[0].reason: Field required" in str(info.value)
    assert "'p'" in str(info.value)
