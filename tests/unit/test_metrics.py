"""The Prometheus metrics API the controllers call."""

from __future__ import annotations

import re

import pytest

from ocm_rollout.controllers.runtime import metrics


def value(metric: str, **labels: str) -> float:
    found = metrics.sample(metric, labels)
    return 0.0 if found is None else found


def test_reconcile_hook_counts_reconciles_and_observes_duration() -> None:
    metrics.on_reconcile("t-count", 0.25, None)
    metrics.on_reconcile("t-count", 0.5, None)
    assert value("ocm_rollout_reconcile_total", controller="t-count") == 2
    assert value("ocm_rollout_reconcile_duration_seconds_sum", controller="t-count") == pytest.approx(0.75)
    assert metrics.sample("ocm_rollout_reconcile_errors_total", {"controller": "t-count"}) == 0


def test_reconcile_hook_counts_errors() -> None:
    metrics.on_reconcile("t-errors", 0.1, RuntimeError("boom"))
    assert value("ocm_rollout_reconcile_errors_total", controller="t-errors") == 1
    assert value("ocm_rollout_reconcile_total", controller="t-errors") == 1


def test_reconcile_timer_counts_an_exception_as_an_error_and_reraises_it() -> None:
    with pytest.raises(ValueError), metrics.reconcile_timer("t-timer"):
        raise ValueError("bad")
    with metrics.reconcile_timer("t-timer"):
        pass
    assert value("ocm_rollout_reconcile_total", controller="t-timer") == 2
    assert value("ocm_rollout_reconcile_errors_total", controller="t-timer") == 1


def test_queue_depth_hook_sets_the_gauge() -> None:
    metrics.on_queue_depth("t-queue", 7)
    metrics.on_queue_depth("t-queue", 3)
    assert value("ocm_rollout_queue_depth", controller="t-queue") == 3


def test_scheduling_timer_observes_one_pass() -> None:
    before = value("ocm_rollout_scheduling_duration_seconds_count")
    with metrics.scheduling_timer():
        pass
    assert value("ocm_rollout_scheduling_duration_seconds_count") == before + 1


def test_rollout_clusters_publishes_every_status_with_zero_for_missing_ones() -> None:
    metrics.set_rollout_clusters("ManifestWorkReplicaSet", "ns", "w1", "p1", {"Succeeded": 3, "ToApply": 2})
    labels = {"kind": "ManifestWorkReplicaSet", "namespace": "ns", "name": "w1", "placement": "p1"}
    assert value("ocm_rollout_rollout_clusters", **labels, status="Succeeded") == 3
    assert value("ocm_rollout_rollout_clusters", **labels, status="ToApply") == 2
    assert metrics.sample("ocm_rollout_rollout_clusters", {**labels, "status": "Failed"}) == 0


def test_rollout_clusters_rejects_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="Done"):
        metrics.set_rollout_clusters("ManifestWorkReplicaSet", "ns", "w2", "p1", {"Done": 1})


def test_forget_rollout_removes_every_series_of_the_object() -> None:
    metrics.set_rollout_clusters("ManifestWorkReplicaSet", "ns", "w3", "p1", {"Progressing": 1})
    metrics.set_rollout_clusters("ManifestWorkReplicaSet", "ns", "w3", "p2", {"Progressing": 1})
    metrics.forget_rollout("ManifestWorkReplicaSet", "ns", "w3")
    text = metrics.render()[0].decode()
    assert 'name="w3"' not in text


def test_dropped_placement_loses_its_series_and_others_stay() -> None:
    metrics.set_rollout_clusters("ClusterManagementAddOn", "", "a1", "p1", {"Succeeded": 1})
    metrics.set_rollout_clusters("ClusterManagementAddOn", "", "a1", "p2", {"Succeeded": 1})
    metrics.set_rollout_placements("ClusterManagementAddOn", "", "a1", {"p2"})
    labels = {"kind": "ClusterManagementAddOn", "namespace": "", "name": "a1", "status": "Succeeded"}
    assert metrics.sample("ocm_rollout_rollout_clusters", {**labels, "placement": "p1"}) is None
    assert value("ocm_rollout_rollout_clusters", **labels, placement="p2") == 1


def test_leader_gauge_and_transitions() -> None:
    metrics.set_leader("ns/t-lease", True, change="acquired")
    assert value("ocm_rollout_leader", lease="ns/t-lease") == 1
    metrics.set_leader("ns/t-lease", False, change="lost")
    assert value("ocm_rollout_leader", lease="ns/t-lease") == 0
    assert value("ocm_rollout_leader_transitions_total", lease="ns/t-lease", change="lost") == 1


def test_every_project_metric_is_prefixed_and_the_exposition_is_text_format() -> None:
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain")
    names = set(re.findall(r"^# TYPE (\S+) ", body.decode(), flags=re.MULTILINE))
    ours = {n for n in names if not n.startswith(("process_", "python_"))}
    assert ours and all(n.startswith(metrics.PREFIX) for n in ours)
    assert "ocm_rollout_build_info" in ours
