"""Simulation profiles (ocm_rollout.sandbox.sim_profile): format, resolution per cluster, errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ocm_rollout.sandbox.agents.registration import fleet_member
from ocm_rollout.sandbox.agents.work import Mode, Outcome, WorkBehaviour
from ocm_rollout.sandbox.agents.workload_metrics import MetricSetting, MetricType
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


# -- metrics ---------------------------------------------------------------------------------------

WEB_2 = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:2.0"}}]}}
WEB_1 = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:1.0"}}]}}


def gauge(value: float) -> MetricSetting:
    return MetricSetting(MetricType.GAUGE, value)


def test_metrics_come_from_the_defaults_and_the_cluster_rules_in_order() -> None:
    profile = parse_profile(
        {
            "defaults": {"metrics": {"http_error_ratio": 0.001, "latency_seconds": 0.2}},
            "clusters": [
                {"selector": {"matchLabels": {"environment": "production"}}, "metrics": {"latency_seconds": 0.5}},
                {"name": "cluster1", "metrics": {"latency_seconds": 0.7}},
            ],
        }
    )
    assert profile.plan(fleet_member(1)).metrics() == {"http_error_ratio": gauge(0.001), "latency_seconds": gauge(0.7)}
    assert profile.plan(fleet_member(2)).metrics()["latency_seconds"] == gauge(0.5)  # production
    assert profile.plan(fleet_member(3)).metrics()["latency_seconds"] == gauge(0.2)  # staging
    assert not profile.plan(fleet_member(3)).work_metrics


def test_a_work_rule_sets_metrics_only_while_a_matching_work_is_applied() -> None:
    profile = parse_profile(
        {
            "defaults": {"metrics": {"http_error_ratio": 0.001}},
            "clusters": [{"name": "cluster1", "contains": "web:2.0", "metrics": {"http_error_ratio": 0.3}}],
        }
    )
    plan = profile.plan(fleet_member(1))
    assert plan.work_metrics
    assert plan.metric_rules_matching("web", 2, WEB_2) == {0}
    assert plan.metric_rules_matching("web", 3, WEB_1) == frozenset()
    assert plan.metrics() == {"http_error_ratio": gauge(0.001)}
    assert plan.metrics(frozenset({0})) == {"http_error_ratio": gauge(0.3)}
    assert profile.plan(fleet_member(2)).metric_rules == ()  # the rule names cluster1 only
    # a metrics-only work rule does not change how the work is handled
    assert plan.work_behaviour("web", 2, WEB_2) == WorkBehaviour()


def test_a_later_cluster_rule_overrides_an_earlier_work_rule() -> None:
    profile = parse_profile(
        {
            "clusters": [
                {"works": "web", "metrics": {"up": 0, "errors": 5}},
                {"name": "cluster1", "metrics": {"up": 1}},
            ]
        }
    )
    plan = profile.plan(fleet_member(1))
    assert plan.metrics(plan.metric_rules_matching("web", 1)) == {"up": gauge(1), "errors": gauge(5)}


def test_metric_values_may_be_nan_or_infinite_and_counters_take_a_rate() -> None:
    profile = parse_profile(
        {"defaults": {"metrics": {"a": float("nan"), "b": float("inf"), "c": -float("inf"), "requests": {"counter": 5}}}}
    )
    metrics = profile.plan(fleet_member(1)).metrics()
    assert math.isnan(metrics["a"].value) and metrics["b"] == gauge(math.inf) and metrics["c"] == gauge(-math.inf)
    assert metrics["requests_total"] == MetricSetting(MetricType.COUNTER, 5.0)


def test_metrics_from_yaml_special_numbers(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("defaults:\n  metrics: {ratio: .nan, high: .inf, served_total: {counter: 0.5}}\n")
    metrics = load_profile(path).plan(fleet_member(1)).metrics()
    assert math.isnan(metrics["ratio"].value)
    assert metrics["high"] == gauge(math.inf)
    assert metrics["served_total"] == MetricSetting(MetricType.COUNTER, 0.5)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"defaults": {"metrics": [1]}}, "defaults.metrics: expected a mapping"),
        ({"clusters": [{"metrics": {"http-errors": 1}}]}, "clusters[0].metrics.http-errors: 'http-errors' is not a Prometheus metric name"),
        ({"clusters": [{"metrics": {"9lives": 1}}]}, "clusters[0].metrics.9lives: '9lives' is not a Prometheus"),
        ({"clusters": [{"name": "c", "metrics": {"ratio": "high"}}]}, "clusters[0].metrics.ratio: expected a number (a gauge) or {counter: RATE}"),
        ({"clusters": [{"metrics": {"ratio": True}}]}, "clusters[0].metrics.ratio: expected a number"),
        ({"clusters": [{"metrics": {"ratio": None}}]}, "clusters[0].metrics.ratio: expected a number"),
        ({"clusters": [{"metrics": {"r": {"counter": -1}}}]}, "clusters[0].metrics.r.counter: expected a rate per second, a finite number >= 0"),
        ({"clusters": [{"metrics": {"r": {"counter": float("inf")}}}]}, "clusters[0].metrics.r.counter: expected a rate"),
        ({"clusters": [{"metrics": {"r": {"counter": 1, "start": 0}}}]}, "clusters[0].metrics.r: expected a number"),
        (
            {"clusters": [{"metrics": {"r": {"counter": 1}, "r_total": {"counter": 2}}}]},
            "clusters[0].metrics.r_total: names the same series as another entry (r_total)",
        ),
        (
            {"defaults": {"metrics": {"r": 1}}, "clusters": [{"contains": "x", "metrics": {"r": {"counter": 1}}}]},
            "",  # r and r_total: two series
        ),
        (
            {"clusters": [{"contains": "x", "metrics": {"r": 1}}, {"name": "c", "metrics": {"r": {"counter": 1}}}]},
            "",
        ),
        (
            {"clusters": [{"contains": "x", "metrics": {"r_total": 1}}, {"metrics": {"r": {"counter": 1}}}]},
            "clusters[1].metrics: r_total is a counter here and a gauge in profile.clusters[0]",
        ),
        (
            {"defaults": {"metrics": {"r_total": 1}}, "clusters": [{"name": "c", "metrics": {"r": {"counter": 1}}}]},
            "clusters[0].metrics: r_total is a counter here and a gauge in profile.defaults (a metric has one type)",
        ),
    ],
)
def test_invalid_metrics_name_the_rule_and_field(data: object, message: str) -> None:
    if not message:
        parse_profile(data)
        return
    with pytest.raises(ProfileError) as excinfo:
        parse_profile(data)
    assert message in str(excinfo.value)


def test_bad_version_example_raises_the_error_ratio_of_web_2_on_production() -> None:
    profile = load_profile(EXAMPLES / "bad-version.yaml")
    production, staging = profile.plan(fleet_member(1)), profile.plan(fleet_member(3))
    spec = {"workload": {"manifests": [{"image": "registry.example.com/web:2.0"}]}}
    assert production.metrics(production.metric_rules_matching("web", 2, spec))["http_error_ratio"].value > 0.1
    assert staging.metrics(staging.metric_rules_matching("web", 2, spec))["http_error_ratio"].value < 0.01
