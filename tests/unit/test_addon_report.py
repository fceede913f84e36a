"""The add-on configuration-rollout report (`ocm-rollout status`, the live view)."""

from __future__ import annotations

import json

from ocm_rollout.controllers.addon.report import (
    AddonReport,
    build_addon_report,
    progress_bar,
    render_addon_report,
)
from tests.unit.addon_fixtures import (
    NS,
    H,
    Hub,
    at,
    cma,
    cond,
    done,
    inputs,
    mca,
    one_placement,
    progressive,
    pstrategy,
    ref,
)


def rolling() -> Hub:
    """p1 (Progressive, 2 groups): a done, b in flight, c timed out, d failed, e just given the new
    configuration by the pass, f without MCA."""
    pending = [ref("new-config", H("new"), applied=H("old"))]
    mcas = {
        "a": done("a", "new-config", H("new")),
        "b": mca("b", refs=pending, conditions=[cond("Progressing", "True", "Progressing", 0, "progressing... work is not ready")]),
        "c": mca("c", refs=pending, conditions=[cond("Progressing", "True", "Progressing", -3600, "progressing... work is not ready")]),
        "d": mca("d", refs=pending, conditions=[cond("Progressing", "False", "Failed", 0, "image pull failed")]),
        "e": done("e", "old-config", H("old")),
    }
    rollout = progressive(maxConcurrency=3, progressDeadline="10m", maxFailures=5)
    hub = one_placement(list("abcdef"), rollout, mcas=mcas, groups=[["a", "b", "c"], ["d", "e", "f"]])
    hub.step(60)
    return hub


def report_of(hub: Hub) -> AddonReport:
    return build_addon_report(cma=hub.cma, mcas=hub.mcas, placements=hub.placements, now=at(60))


def test_report_counts_states_per_decision_group() -> None:
    report = report_of(rolling())
    [p1] = report.placements
    g0, g1 = p1.groups
    assert [(c.cluster, c.state) for c in g0.clusters] == [("a", "succeeded"), ("b", "progressing"), ("c", "timed out")]
    assert [(c.cluster, c.state) for c in g1.clusters] == [("d", "failed"), ("e", "progressing"), ("f", "waiting")]
    assert p1.counts() == {"succeeded": 1, "failed": 1, "timed out": 1, "progressing": 2, "validating": 0, "waiting": 1}
    assert p1.configured == 5 and g0.configured == 3 and p1.selected == 6


def test_report_gives_the_failing_clusters_reasons() -> None:
    lines = {c.cluster: c for g in report_of(rolling()).placements[0].groups for c in g.clusters}
    assert lines["d"].reason == "image pull failed" and lines["d"].rollout_status == "Failed"
    assert lines["c"].reason == "progressDeadline exceeded; progressing... work is not ready"
    assert lines["f"].reason == "no ManagedClusterAddOn yet"


def test_report_carries_the_progression_condition() -> None:
    p1 = report_of(rolling()).placements[0]
    assert p1.condition is not None and p1.condition[:2] == ("True", "Progressing")


def test_report_is_read_only() -> None:
    hub = rolling()
    before = json.dumps([hub.cma, hub.mcas], sort_keys=True)
    report_of(hub)
    assert json.dumps([hub.cma, hub.mcas], sort_keys=True) == before


def test_report_excludes_clusters_a_later_placement_configures() -> None:
    the_cma = cma(placements=[pstrategy("p1"), pstrategy("p2")])
    hub = Hub(the_cma, {c: done(c, "default-config", "h") for c in ("a", "b")}, inputs(("p1", [["a", "b"]]), ("p2", [["b"]])),
              {(NS, "default-config"): "h"})
    hub.step(0)
    p1, p2 = report_of(hub).placements
    assert p1.taken == 1 and [c.cluster for c in p1.groups[0].clusters] == ["a"]
    assert [c.cluster for c in p2.groups[0].clusters] == ["b"]


def test_report_of_a_missing_placement_and_the_held_defaults() -> None:
    hub = Hub(cma(placements=[pstrategy("p1")]), {"a": done("a", "default-config", "old")}, {}, {(NS, "default-config"): "new"})
    hub.step(0)
    report = report_of(hub)
    assert report.placements[0].error_reason == "PlacementNotFound"
    assert report.defaults is not None and [c.state for c in report.defaults.clusters] == ["waiting"]
    assert report.defaults_held is not None
    text = render_addon_report(report)
    assert "held, PlacementNotFound" in text and "default configurations (1 add-on(s)" in text


def test_render_shows_bars_counts_and_failures() -> None:
    text = render_addon_report(report_of(rolling()))
    assert text.splitlines()[0] == "ClusterManagementAddOn test (install strategy Placements)"
    assert "  placement default/p1 (Progressive, 6 selected)  [####!!!!!!!!~~~~~~~~....] 1/6 succeeded, 5 configured, 2 failed, 2 progressing, 1 waiting" in text
    assert "    group 0  [########!!!!!!!!~~~~~~~~] 1/3 succeeded  configured 3  failed 0  timed out 1  progressing 1  waiting 0" in text
    assert "      ! c (TimeOut): progressDeadline exceeded; progressing... work is not ready" in text
    assert "      ! d (Failed): image pull failed" in text
    assert "    Progressing True Progressing: selected clusters 6. configured addons 4/6 progressing..., 0 failed 1 timeout." in text
    assert "    next check in 540s" in text


def test_render_of_a_self_managed_manual_addon() -> None:
    the_cma = cma(lifecycle="self")
    text = render_addon_report(build_addon_report(cma=the_cma, mcas={}, placements={}, now=at(0)))
    assert "self-managed" in text and "install strategy Manual" in text


def test_progress_bar_of_nothing_is_empty() -> None:
    assert progress_bar({}) == "[" + " " * 24 + "]"
