"""The simulated fleet's workload metrics (ocm_rollout.sandbox.sim_metrics and
ocm_rollout.sandbox.agents.workload_metrics): which values a cluster reports as works come and go,
counters over time, and the Prometheus text exposition."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ocm_rollout.sandbox.agents.registration import fleet_member
from ocm_rollout.sandbox.agents.workload_metrics import MetricType, Sample
from ocm_rollout.sandbox.sim_metrics import FleetMetrics, render
from ocm_rollout.sandbox.sim_profile import parse_profile

WEB_1 = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:1.0"}}]}}
WEB_2 = {"workload": {"manifests": [{"kind": "Deployment", "spec": {"image": "web:2.0"}}]}}

PROFILE: dict[str, Any] = {
    "defaults": {"metrics": {"http_error_ratio": 0.001, "http_requests": {"counter": 10}}},
    "clusters": [
        {"name": "cluster1", "contains": "web:2.0", "metrics": {"http_error_ratio": 0.3, "http_requests": {"counter": 1}}},
    ],
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fleet(profile: dict[str, Any] = PROFILE, clusters: int = 2) -> tuple[FleetMetrics, Clock]:
    parsed = parse_profile(profile)
    plans = {plan.member.name: plan for plan in (parsed.plan(fleet_member(i)) for i in range(1, clusters + 1))}
    clock = Clock()
    return FleetMetrics(plans, clock), clock


def values(metrics: FleetMetrics, name: str) -> dict[str, float]:
    return {s.cluster: s.value for s in metrics.samples() if s.name == name}


def test_a_work_rule_holds_while_a_matching_work_is_applied() -> None:
    metrics, _ = fleet()
    assert values(metrics, "http_error_ratio") == {"cluster1": 0.001, "cluster2": 0.001}
    metrics.applied("cluster1", "web", 1, WEB_1)
    assert values(metrics, "http_error_ratio")["cluster1"] == 0.001
    metrics.applied("cluster1", "web", 2, WEB_2)
    metrics.applied("cluster2", "web", 2, WEB_2)  # the rule names cluster1 only
    assert values(metrics, "http_error_ratio") == {"cluster1": 0.3, "cluster2": 0.001}
    metrics.applied("cluster1", "web", 3, WEB_1)  # written back to 1.0
    assert values(metrics, "http_error_ratio")["cluster1"] == 0.001


def test_any_matching_work_holds_the_rule_until_the_last_one_goes() -> None:
    metrics, _ = fleet()
    metrics.applied("cluster1", "web-a", 1, WEB_2)
    metrics.applied("cluster1", "web-b", 1, WEB_2)
    metrics.released("cluster1", "web-a")
    assert values(metrics, "http_error_ratio")["cluster1"] == 0.3
    metrics.released("cluster1", "web-b")
    assert values(metrics, "http_error_ratio")["cluster1"] == 0.001


def test_the_same_generation_is_matched_once() -> None:
    metrics, _ = fleet()
    metrics.applied("cluster1", "web", 1, WEB_2)
    metrics.applied("cluster1", "web", 1, None)  # no spec text to match: the generation is known
    assert values(metrics, "http_error_ratio")["cluster1"] == 0.3


def test_counters_grow_at_the_rate_in_force() -> None:
    metrics, clock = fleet()
    clock.now = 2.0
    assert values(metrics, "http_requests_total") == {"cluster1": 20.0, "cluster2": 20.0}
    metrics.applied("cluster1", "web", 1, WEB_2)  # from 10/s to 1/s on cluster1
    clock.now = 5.0
    assert values(metrics, "http_requests_total") == {"cluster1": 23.0, "cluster2": 50.0}
    metrics.released("cluster1", "web")
    clock.now = 6.0
    assert values(metrics, "http_requests_total")["cluster1"] == 33.0


def test_a_counter_no_rule_sets_any_more_keeps_its_value() -> None:
    profile = {"clusters": [{"works": "batch", "metrics": {"jobs_total": {"counter": 2}}}]}
    metrics, clock = fleet(profile, clusters=1)
    assert values(metrics, "jobs_total") == {}
    metrics.applied("cluster1", "batch", 1, {})
    clock.now = 3.0
    metrics.released("cluster1", "batch")
    clock.now = 10.0
    assert values(metrics, "jobs_total") == {"cluster1": 6.0}


def test_only_the_clusters_shown_are_exposed() -> None:
    parsed = parse_profile(PROFILE)
    plans = {f"cluster{i}": parsed.plan(fleet_member(i)) for i in (1, 2)}
    metrics = FleetMetrics(plans, lambda: 0.0, shown=lambda name: name == "cluster2")
    assert {s.cluster for s in metrics.samples()} == {"cluster2"}


def test_works_on_clusters_without_work_rules_cost_nothing() -> None:
    metrics, _ = fleet({"defaults": {"metrics": {"up": 1}}})
    metrics.applied("cluster1", "web", 1, WEB_2)
    metrics.applied("elsewhere", "web", 1, WEB_2)
    metrics.released("elsewhere", "web")
    assert values(metrics, "up") == {"cluster1": 1.0, "cluster2": 1.0}


# -- exposition -------------------------------------------------------------------------------------


def test_the_exposition_has_help_type_and_one_series_per_cluster() -> None:
    text = render(
        [
            Sample("http_error_ratio", MetricType.GAUGE, "cluster1", 0.3),
            Sample("http_requests_total", MetricType.COUNTER, "cluster1", 12.5),
            Sample("http_error_ratio", MetricType.GAUGE, "cluster2", 0.001),
        ]
    ).decode()
    lines = text.splitlines()
    assert "# TYPE http_error_ratio gauge" in lines
    assert "# TYPE http_requests_total counter" in lines
    assert 'http_error_ratio{cluster="cluster1"} 0.3' in lines
    assert 'http_error_ratio{cluster="cluster2"} 0.001' in lines
    assert 'http_requests_total{cluster="cluster1"} 12.5' in lines
    assert lines.index("# TYPE http_error_ratio gauge") < lines.index('http_error_ratio{cluster="cluster2"} 0.001')
    assert sum(line.startswith("# TYPE") for line in lines) == 2
    assert text.endswith("\n")


def test_label_values_are_escaped() -> None:
    text = render([Sample("m", MetricType.GAUGE, 'a"b\\c\nd', 1.0)]).decode()
    assert 'm{cluster="a\\"b\\\\c\\nd"} 1.0' in text.splitlines()
    (family,) = text_string_to_metric_families(text)
    assert family.samples[0].labels == {"cluster": 'a"b\\c\nd'}


def test_nan_and_infinities_are_written_as_prometheus_spells_them() -> None:
    text = render(
        [
            Sample("m", MetricType.GAUGE, "c1", math.nan),
            Sample("m", MetricType.GAUGE, "c2", math.inf),
            Sample("m", MetricType.GAUGE, "c3", -math.inf),
        ]
    ).decode()
    assert {'m{cluster="c1"} NaN', 'm{cluster="c2"} +Inf', 'm{cluster="c3"} -Inf'} <= set(text.splitlines())


def test_nothing_to_expose_is_an_empty_body() -> None:
    assert render([]) == b""
