"""Simulation profiles (ocm_rollout.sandbox.sim_profile): format, resolution per cluster, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocm_rollout.sandbox.agents.registration import fleet_member
from ocm_rollout.sandbox.agents.work import Mode, Outcome, WorkBehaviour
from ocm_rollout.sandbox.sim_profile import ProfileError, Window, load_profile, parse_duration, parse_profile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"


def test_empty_profile_gives_the_default_behaviour() -> None:
    plan = parse_profile(None).plan(fleet_member(1))
    assert plan.work_behaviour("w", 1) == WorkBehaviour()
    assert plan.lease_duration_seconds == 60


def test_defaults_apply_to_every_cluster() -> None:
    profile = parse_profile({"defaults": {"applyDelay": "3s", "mode": "faithful", "leaseDurationSeconds": 7}})
    plan = profile.plan(fleet_member(4))
    behaviour = plan.work_behaviour("w", 1)
    assert (behaviour.apply_delay, behaviour.mode, plan.lease_duration_seconds) == (3.0, Mode.FAITHFUL, 7)


def test_name_glob_selects_clusters() -> None:
    profile = parse_profile({"clusters": [{"name": "cluster1*", "outcome": "Degraded"}]})
    assert profile.plan(fleet_member(12)).work_behaviour("w", 1).outcome is Outcome.DEGRADED
    assert profile.plan(fleet_member(2)).work_behaviour("w", 1).outcome is Outcome.SUCCEEDED


def test_name_list_selects_clusters() -> None:
    profile = parse_profile({"clusters": [{"name": ["cluster2", "cluster3"], "outcome": "Stuck"}]})
    assert profile.plan(fleet_member(3)).work_behaviour("w", 1).outcome is Outcome.STUCK


def test_label_selector_selects_clusters() -> None:
    profile = parse_profile(
        {"clusters": [{"selector": {"matchLabels": {"environment": "staging"}}, "outcome": "ApplyFailed"}]}
    )
    assert profile.plan(fleet_member(3)).work_behaviour("w", 1).outcome is Outcome.APPLY_FAILED
    assert profile.plan(fleet_member(1)).work_behaviour("w", 1).outcome is Outcome.SUCCEEDED


def test_selector_sees_labels_set_by_earlier_rules() -> None:
    profile = parse_profile(
        {
            "clusters": [
                {"name": "cluster1", "labels": {"tier": "edge"}},
                {"selector": {"matchLabels": {"tier": "edge"}}, "outcome": "Degraded"},
            ]
        }
    )
    plan = profile.plan(fleet_member(1))
    assert plan.member.labels["tier"] == "edge"
    assert plan.work_behaviour("w", 1).outcome is Outcome.DEGRADED


def test_later_rule_overrides_an_earlier_one() -> None:
    profile = parse_profile(
        {"clusters": [{"name": "*", "applyDelay": 5}, {"name": "cluster2", "applyDelay": "250ms"}]}
    )
    assert profile.plan(fleet_member(2)).work_behaviour("w", 1).apply_delay == 0.25
    assert profile.plan(fleet_member(1)).work_behaviour("w", 1).apply_delay == 5.0


def test_work_rules_match_work_names_and_generations() -> None:
    profile = parse_profile({"clusters": [{"works": "web-*", "minGeneration": 2, "outcome": "Degraded"}]})
    plan = profile.plan(fleet_member(1))
    assert plan.work_behaviour("web-x", 2).outcome is Outcome.DEGRADED
    assert plan.work_behaviour("web-x", 1).outcome is Outcome.SUCCEEDED
    assert plan.work_behaviour("db", 3).outcome is Outcome.SUCCEEDED


def test_claims_and_resources_override_the_fleet_values() -> None:
    profile = parse_profile({"clusters": [{"name": "cluster1", "claims": {"gpu": "true"}, "capacity": {"cpu": "96"}}]})
    member = profile.plan(fleet_member(1)).member
    assert ("gpu", "true") in member.claims
    assert member.capacity["cpu"] == "96"


def test_unreachable_window_controls_reachability() -> None:
    profile = parse_profile({"clusters": [{"name": "cluster1", "unreachable": [{"after": "10s", "for": "5s"}]}]})
    plan = profile.plan(fleet_member(1))
    assert [plan.reachable(t) for t in (9.9, 10, 14.9, 15)] == [True, False, False, True]
    assert plan.next_change(0) == 10 and plan.next_change(12) == 15 and plan.next_change(20) is None


def test_repeating_window() -> None:
    window = Window(after=10, duration=5, every=60)
    assert [window.active(t) for t in (12, 20, 71, 76)] == [True, False, True, False]
    assert window.next_change(20) == 70 and window.next_change(71) == 75


def test_unavailable_window_controls_api_server_health() -> None:
    profile = parse_profile({"defaults": {"unavailable": [{"after": 0, "for": "1m"}]}})
    plan = profile.plan(fleet_member(2))
    assert not plan.api_server_healthy(30) and plan.api_server_healthy(60)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5s", 1.5), (3, 3.0), ("0", 0.0)],
)
def test_duration_forms(text: object, seconds: float) -> None:
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"clusters": [{"name": "c", "outcome": "Fail"}]}, "clusters[0].outcome: 'Fail' is not one of Succeeded"),
        ({"clusters": [{"name": "c", "applyDelay": "soon"}]}, "clusters[0].applyDelay: 'soon' is not a duration"),
        ({"clusters": [{"nmae": "c"}]}, "clusters[0]: unknown field(s) nmae"),
        ({"defaults": {"mode": "fast"}}, "defaults.mode: 'fast' is not one of rollout, faithful"),
        ({"clusters": [{"works": "w", "labels": {"a": "b"}}]}, "clusters[0]: labels cannot be combined with works"),
        (
            {"clusters": [{"unreachable": [{"after": "1s", "for": "2m", "every": "1m"}]}]},
            "clusters[0].unreachable[0].every: must be longer than `for`",
        ),
        ({"clusters": [{"unreachable": [{"after": "1s"}]}]}, "clusters[0].unreachable[0].for: required"),
        (
            {"clusters": [{"selector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}]},
            "clusters[0].selector.matchExpressions[0].operator",
        ),
        ({"clusters": [{"leaseDurationSeconds": 0}]}, "clusters[0].leaseDurationSeconds"),
        ({"extra": 1}, "unknown top-level field(s) extra"),
        ({"clusters": {"name": "x"}}, "clusters: expected a list of rules"),
    ],
)
def test_invalid_profiles_name_the_field(data: object, message: str) -> None:
    with pytest.raises(ProfileError) as excinfo:
        parse_profile(data)
    assert message in str(excinfo.value)


def test_missing_profile_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read the profile"):
        load_profile(tmp_path / "nope.yaml")


def test_unparsable_profile_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(ProfileError, match=r"bad\.yaml: not valid YAML"):
        load_profile(bad)


def test_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("clusters:\n- outcome: Nope\n")
    with pytest.raises(ProfileError, match=r"p.yaml.clusters\[0\].outcome"):
        load_profile(bad)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_profiles_load(path: Path) -> None:
    profile = load_profile(path)
    for index in range(1, 11):
        profile.plan(fleet_member(index))


def test_bad_update_example_fails_generation_two_on_production_only() -> None:
    profile = load_profile(EXAMPLES / "bad-update.yaml")
    production, staging = profile.plan(fleet_member(1)), profile.plan(fleet_member(3))
    assert production.work_behaviour("web", 2).outcome is Outcome.DEGRADED
    assert production.work_behaviour("web", 1).outcome is Outcome.SUCCEEDED
    assert staging.work_behaviour("web", 2).outcome is Outcome.SUCCEEDED


def test_contains_matches_works_by_their_content_whatever_the_generation() -> None:
    profile = parse_profile({"clusters": [{"contains": "web:2.0", "outcome": "Degraded", "message": "pull back-off"}]})
    plan = profile.plan(fleet_member(1))
    bad = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:2.0"}}]}}
    good = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:1.0"}}]}}
    assert plan.work_behaviour("w", 2, bad).outcome is Outcome.DEGRADED
    # the same work reverted to the good content (a later generation) succeeds again
    assert plan.work_behaviour("w", 3, good).outcome is Outcome.SUCCEEDED
    assert plan.work_behaviour("w", 2).outcome is Outcome.SUCCEEDED


def test_contains_takes_a_list_and_refuses_cluster_fields() -> None:
    profile = parse_profile({"clusters": [{"contains": ["a:2", "b:2"], "outcome": "Stuck"}]})
    assert profile.plan(fleet_member(1)).work_behaviour("w", 1, {"x": "b:2"}).outcome is Outcome.STUCK
    with pytest.raises(ProfileError, match=r"clusters\[0\]: labels cannot be combined with works/minGeneration/contains"):
        parse_profile({"clusters": [{"contains": "x", "labels": {"a": "b"}}]})
    with pytest.raises(ProfileError, match=r"clusters\[0\].contains: expected a text"):
        parse_profile({"clusters": [{"contains": ""}]})
