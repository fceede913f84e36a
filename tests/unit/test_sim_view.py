"""The live view of `ocm-rollout up` (ocm_rollout.cli.view.sim_view): snapshot, rendering, change lines."""

from __future__ import annotations

import copy
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client import ApiClient

from ocm_rollout.cli.view import sim_view
from ocm_rollout.cli.view.live_view import LiveView
from ocm_rollout.cli.view.sim_view import ClusterRow, Snapshot, build_snapshot, changes, natural_key, render
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    Kube,
)
from ocm_rollout.client.watchcache import WatchCache

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}
TEMPLATE = {"workload": {"manifests": [CM]}}


def cond(type_: str, status: str, generation: int = 1, reason: str = "R") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": "2024-05-01T11:59:00Z",
        "reason": reason,
        "message": "",
    }


def cluster(name: str, available: str = "True", taints: list[str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": [{"key": f"cluster.open-cluster-management.io/{t}", "effect": "NoSelect"} for t in taints or []]},
        "status": {"conditions": [cond("ManagedClusterConditionAvailable", available, 0)]},
    }


def work(namespace: str, *conditions: dict[str, Any], generation: int = 1, owned: bool = True) -> dict[str, Any]:
    labels = (
        {
            "work.open-cluster-management.io/manifestworkreplicaset": "default.web",
            "work.open-cluster-management.io/placementname": "web",
        }
        if owned
        else {}
    )
    return {
        "metadata": {
            "name": "web-x",
            "namespace": namespace,
            "generation": generation,
            "labels": labels,
            "creationTimestamp": "2024-05-01T11:58:00Z",
        },
        "spec": TEMPLATE,
        "status": {"conditions": list(conditions)},
    }


PLACEMENT = {
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {},
    "status": {
        "numberOfSelectedClusters": 2,
        "conditions": [cond("PlacementSatisfied", "True", 0, "AllDecisionsScheduled")],
    },
}
DECISION = {
    "metadata": {
        "name": "web-decision-1",
        "namespace": "default",
        "labels": {
            "cluster.open-cluster-management.io/placement": "web",
            "cluster.open-cluster-management.io/decision-group-name": "",
            "cluster.open-cluster-management.io/decision-group-index": "0",
        },
    },
    "status": {"decisions": [{"clusterName": "cluster2", "reason": ""}, {"clusterName": "cluster1", "reason": ""}]},
}
MWRS = {
    "metadata": {"name": "web", "namespace": "default", "generation": 1},
    "spec": {
        "placementRefs": [{"name": "web", "rolloutStrategy": {"type": "Progressive"}}],
        "manifestWorkTemplate": TEMPLATE,
    },
    "status": {"conditions": [cond("PlacementRolledOut", "False", 1, "Progressing")], "summary": {"total": 1}},
}

SUCCEEDED = (cond("Applied", "True"), cond("Available", "True"), cond("Progressing", "False"))


def snapshot(**kwargs: Any) -> Snapshot:
    defaults: dict[str, Any] = {
        "clusters": [cluster("cluster1"), cluster("cluster2")],
        "works": [work("cluster1", *SUCCEEDED)],
        "placements": [PLACEMENT],
        "decisions": [DECISION],
        "replica_sets": [MWRS],
        "now": NOW,
    }
    defaults.update(kwargs)
    return build_snapshot(**defaults)


def test_clusters_sort_naturally() -> None:
    assert sorted(["cluster10", "cluster2", "cluster1"], key=natural_key) == ["cluster1", "cluster2", "cluster10"]


def test_cluster_rows_count_works_at_their_current_generation() -> None:
    stale = work("cluster1", cond("Applied", "True", 1), cond("Progressing", "True", 1), generation=2, owned=False)
    rows = snapshot(works=[work("cluster1", *SUCCEEDED), stale]).clusters
    assert rows[0] == ClusterRow("cluster1", "True", (), 2, 1, 0, 0)


def test_cluster_rows_show_availability_and_taints() -> None:
    rows = snapshot(clusters=[cluster("cluster1", "Unknown", ["unreachable"])]).clusters
    assert (rows[0].available, rows[0].taints) == ("Unknown", ("unreachable",))


def test_rollout_shows_each_decided_cluster_state() -> None:
    rollout = snapshot().rollouts[0]
    cells = dict(rollout.placements[0].groups[0].cells)
    assert cells == {"cluster1": "succeeded", "cluster2": "waiting"}
    assert ("PlacementRolledOut", "False", "Progressing") in rollout.conditions


def test_failed_cluster_state_carries_the_reason() -> None:
    failed = work("cluster1", cond("Applied", "True"), cond("Progressing", "True"), cond("Degraded", "True", 1, "ApplyFailed"))
    cells = dict(snapshot(works=[failed]).rollouts[0].placements[0].groups[0].cells)
    assert cells["cluster1"].startswith("failed")


def test_a_cluster_whose_work_failed_to_apply_is_shown_with_the_agents_error() -> None:
    """Improvement 9: not "progressing" but "apply failed", with the first error, marked x."""
    failing = work("cluster1", cond("Applied", "False", 1, "AppliedManifestWorkFailed"), cond("Progressing", "True"))
    failing["status"]["resourceStatus"] = {"manifests": [{
        "resourceMeta": {"ordinal": 0, "group": "example.com", "version": "v1", "kind": "Widget",
                         "namespace": "default", "name": "w"},
        "conditions": [{**cond("Applied", "False"),
                        "message": 'Failed to apply manifest: the server doesn\'t have a resource type "Widget"'}],
    }]}
    snap = snapshot(works=[failing])
    cells = dict(snap.rollouts[0].placements[0].groups[0].cells)
    assert cells["cluster1"] == (
        'apply failed: the server doesn\'t have a resource type "Widget" (manifest 0: example.com/v1 Widget default/w)'
    )
    text = render(snap, width=200)
    assert "xcluster1 .cluster2" in text
    assert 'cluster1 apply failed: the server doesn\'t have a resource type "Widget"' in text
    assert "x apply failed" in text


def test_placement_groups_list_their_clusters() -> None:
    placement = snapshot().placements[0]
    assert placement.title == "default/web"
    assert [c for c, _ in placement.groups[0].cells] == ["cluster1", "cluster2"]
    assert "PlacementSatisfied=True" in placement.detail


def test_render_shows_clusters_rollouts_and_placements() -> None:
    text = render(snapshot(), header=["hub"], width=120)
    assert text.splitlines()[0] == "hub"
    assert "CLUSTERS  2/2 available" in text
    assert "default/web  PlacementRolledOut=False(Progressing)" in text
    assert "+cluster1 .cluster2" in text
    assert "PLACEMENTS" in text


def test_render_cuts_lines_to_the_width() -> None:
    assert max(len(line) for line in render(snapshot(), width=40).splitlines()) <= 40


def test_no_change_lines_for_the_same_snapshot() -> None:
    assert changes(snapshot(), snapshot()) == []


def test_change_lines_for_availability_and_rollout_progress() -> None:
    before = snapshot()
    after = snapshot(
        clusters=[cluster("cluster1"), cluster("cluster2", "Unknown")],
        works=[work("cluster1", *SUCCEEDED), work("cluster2", cond("Applied", "True"), cond("Progressing", "True"))],
    )
    lines = changes(before, after)
    assert "cluster cluster2: Available True -> Unknown" in lines
    assert "rollout default/web placement web (Progressive) group 0: cluster2 progressing" in lines


def test_first_snapshot_reports_every_cluster() -> None:
    lines = changes(None, snapshot())
    assert "cluster cluster1: registered (Available=True)" in lines


def offline_view(out: io.StringIO, *, interactive: bool) -> LiveView:
    kube = Kube(ApiClient())
    clusters, works = WatchCache(kube, MANAGED_CLUSTERS), WatchCache(kube, MANIFEST_WORKS)
    clusters.remember(cluster("cluster1"))
    return LiveView(kube, clusters=clusters, works=works, header=["hub"], out=out, interactive=interactive, clock=lambda: NOW)


def test_non_interactive_view_logs_one_timed_line_per_change() -> None:
    out = io.StringIO()
    view = offline_view(out, interactive=False)
    view.draw()
    view.draw()
    assert out.getvalue() == "12:00:00 cluster cluster1: registered (Available=True)\n"


def test_interactive_view_redraws_in_place() -> None:
    out = io.StringIO()
    offline_view(out, interactive=True).draw()
    screen = out.getvalue()
    assert screen.startswith("\x1b[H" + "hub\x1b[K\n")
    assert screen.endswith("\x1b[J")
    assert "cluster1" in screen


def test_the_screen_keeps_its_top_and_says_what_it_cut_when_the_terminal_is_short() -> None:
    from ocm_rollout.cli.view.sim_view import fit_to_height

    lines = [f"line {i}" for i in range(30)]
    fitted = fit_to_height(lines, 10)
    assert len(fitted) == 9
    assert fitted[:8] == lines[:8]
    assert fitted[-1].startswith("... 22 more lines")
    assert fit_to_height(lines[:5], 10) == lines[:5]


# --- add-ons ---------------------------------------------------------------------------------------

ADC = {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}
PROGRESSING_MESSAGE = "selected clusters 2. configured addons 1/2 progressing..., 0 failed 0 timeout."


def stamp(ago: timedelta = timedelta(0), now: datetime = NOW) -> str:
    return (now - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def config(spec_hash: str) -> dict[str, str]:
    return {"namespace": "default", "name": "hello-config", "specHash": spec_hash}


def cma(message: str = PROGRESSING_MESSAGE, *, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    """The add-on ``hello`` installed by placement ``web`` with config hash ``new`` desired."""
    rollout = strategy or {"type": "Progressive", "progressive": {"maxConcurrency": 2, "progressDeadline": "10m"}}
    return {
        "metadata": {"name": "hello", "resourceVersion": "5"},
        "spec": {
            "supportedConfigs": [ADC],
            "installStrategy": {
                "type": "Placements",
                "placements": [
                    {"namespace": "default", "name": "web", "configs": [{**ADC, "namespace": "default", "name": "hello-config"}],
                     "rolloutStrategy": rollout},
                ],
            },
        },
        "status": {
            "installProgressions": [
                {
                    "namespace": "default",
                    "name": "web",
                    "configReferences": [{**ADC, "desiredConfig": config("new")}],
                    "conditions": [
                        {"type": "Progressing", "status": "True", "reason": "Progressing", "message": message,
                         "lastTransitionTime": stamp()},
                    ],
                },
            ],
        },
    }


def mca(
    cluster: str, *, applied: str = "new", progressing: tuple[str, str, str] | None = None, since: timedelta = timedelta(0),
    now: datetime = NOW,
) -> dict[str, Any]:
    """The MCA of ``hello`` on ``cluster``, given config hash ``new``, having applied ``applied``;
    ``progressing`` is its Progressing condition (status, reason, message), set ``since`` ago."""
    status, reason, message = progressing or ("False", "Completed", "completed with no errors.")
    return {
        "metadata": {"name": "hello", "namespace": cluster, "resourceVersion": "7"},
        "spec": {},
        "status": {
            "conditions": [
                {"type": "Progressing", "status": status, "reason": reason, "message": message,
                 "lastTransitionTime": stamp(since, now)},
            ],
            "configReferences": [
                {**ADC, "namespace": "default", "name": "hello-config", "lastObservedGeneration": 1,
                 "desiredConfig": config("new"), "lastAppliedConfig": config(applied)},
            ],
        },
    }


IN_FLIGHT = ("True", "Progressing", "progressing... work is not ready")


def addon_snapshot(*mcas: dict[str, Any], the_cma: dict[str, Any] | None = None) -> Snapshot:
    return snapshot(cmas=[the_cma or cma()], mcas=list(mcas))


def addon_cells(snap: Snapshot) -> dict[str, str]:
    return {c: state for p in snap.addons[0].placements for g in p.groups for c, state in g.cells}


def test_addon_rollout_shows_each_decided_clusters_state_and_the_progression_condition() -> None:
    snap = addon_snapshot(mca("cluster1"), mca("cluster2", applied="old", progressing=IN_FLIGHT))
    [addon] = snap.addons
    assert (addon.name, addon.detail) == ("hello", "install strategy Placements")
    [placement] = addon.placements
    assert placement.title == "placement default/web (Progressive)"
    assert [(g.index, dict(g.cells)) for g in placement.groups] == [(0, {"cluster1": "succeeded", "cluster2": "progressing"})]
    assert dict(placement.counts) == {
        "selected": 2, "configured": 2, "succeeded": 1, "failed": 0, "timed out": 0, "progressing": 1, "validating": 0,
        "waiting": 0,
    }
    assert placement.condition == f"Progressing=True(Progressing): {PROGRESSING_MESSAGE}"


def test_addon_failed_timed_out_and_waiting_clusters() -> None:
    failed = mca("cluster1", applied="old", progressing=("False", "Failed", "image pull failed"))
    late = mca("cluster2", applied="old", progressing=IN_FLIGHT, since=timedelta(minutes=11))
    assert addon_cells(addon_snapshot(failed, late)) == {
        "cluster1": "failed: image pull failed",
        "cluster2": "timed out: progressDeadline exceeded; progressing... work is not ready",
    }
    assert addon_cells(addon_snapshot(mca("cluster1"))) == {"cluster1": "succeeded", "cluster2": "waiting"}


def test_addon_validating_clusters_and_a_waiting_promotion_gate() -> None:
    strategy = {"type": "All", "validation": {"checks": [{"name": "ok", "feedback": {"successCondition": "true"}}]},
                "promotion": {"type": "Manual", "decisionGroups": [{"groupIndex": 0}]}}
    snap = addon_snapshot(mca("cluster1"), the_cma=cma(strategy=strategy))
    [placement] = snap.addons[0].placements
    assert addon_cells(snap) == {"cluster1": "validating", "cluster2": "waiting"}
    assert placement.notes == (
        "placement default/web: decision group 0 waits for a promotion "
        "(ocm-rollout rollout promote --kind addon hello --placement default/web)",
    )


def test_addon_held_by_a_missing_placement_says_why() -> None:
    snap = snapshot(cmas=[cma()], mcas=[mca("cluster1")], placements=[], decisions=[])
    placement, defaults = snap.addons[0].placements
    assert placement.notes[0].startswith("held, PlacementNotFound: Placement default/web not found"), placement.notes
    # The MCA no readable placement selects falls to the default configurations, held meanwhile.
    assert defaults.title == "default configurations"
    assert defaults.groups[0].cells == (("cluster1", "waiting"),)
    assert defaults.notes[0].startswith("held: Placement default/web not found")
    text = render(snap, width=200)
    assert "    default configurations: selected 1, configured 0; waiting 1" in text
    assert "      group all:" in text


def test_a_self_managed_addon_says_so() -> None:
    the_cma = cma()
    the_cma["metadata"]["annotations"] = {"addon.open-cluster-management.io/lifecycle": "self"}
    assert "self-managed" in addon_snapshot(mca("cluster1"), the_cma=the_cma).addons[0].detail


def test_an_addon_that_cannot_be_reported_is_a_note_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_kwargs: Any) -> None:
        raise ValueError("half-written")

    monkeypatch.setattr(sim_view, "build_addon_report", broken)
    snap = addon_snapshot(mca("cluster1"))
    assert snap.addons == ()
    assert snap.notes == ("add-on hello: cannot show the rollout (half-written)",)
    assert snap.clusters


def test_no_addons_no_addon_section() -> None:
    snap = snapshot(mcas=[mca("cluster1")])
    assert snap.addons == ()
    assert "ADD-ONS" not in render(snap, width=120)


def test_render_shows_addon_rollouts() -> None:
    failed = mca("cluster2", applied="old", progressing=("False", "Failed", "image pull failed"))
    text = render(addon_snapshot(mca("cluster1"), failed), width=120)
    lines = text.splitlines()
    assert lines.index("ADD-ONS (ClusterManagementAddOns)   + succeeded  ~ progressing  ! failed or timed out  . waiting") < (
        lines.index("PLACEMENTS")
    )
    assert "  hello  install strategy Placements" in lines
    assert "    placement default/web (Progressive): selected 2, configured 2; succeeded 1, failed 1" in lines
    assert f"      Progressing=True(Progressing): {PROGRESSING_MESSAGE}" in lines
    assert "        +cluster1 !cluster2" in lines
    assert "        cluster2 failed: image pull failed" in lines
    narrow = render(addon_snapshot(mca("cluster1"), failed), width=60).splitlines()
    assert max(len(line) for line in narrow) <= 60
    start = narrow.index("      Progressing=True(Progressing): selected clusters 2.")
    assert narrow[start + 1 : start + 3] == ["        configured addons 1/2 progressing..., 0 failed 0", "        timeout."]


def test_render_lists_only_a_few_failure_reasons_per_group() -> None:
    names = [f"cluster{i}" for i in range(1, 13)]
    decision = {**DECISION, "status": {"decisions": [{"clusterName": n, "reason": ""} for n in names]}}
    failing = [mca(n, applied="old", progressing=("False", "Failed", "boom")) for n in names]
    text = render(snapshot(cmas=[cma()], mcas=failing, decisions=[decision]), width=200)
    assert text.count(" failed: boom") == sim_view.SHOWN_ADDON_FAILURES
    assert f"... and {12 - sim_view.SHOWN_ADDON_FAILURES} more failed or timed out" in text


def test_addon_change_lines() -> None:
    first = addon_snapshot(mca("cluster1", applied="old", progressing=IN_FLIGHT))
    assert [line for line in changes(None, first) if line.startswith("addon ")] == [
        "addon hello: install strategy Placements",
        f"addon hello placement default/web (Progressive): Progressing=True(Progressing): {PROGRESSING_MESSAGE}",
        "addon hello placement default/web (Progressive) group 0: cluster1 progressing",
        "addon hello placement default/web (Progressive) group 0: cluster2 waiting",
    ]
    assert changes(first, first) == []
    done = "selected clusters 2. configured addons 1/2 completed with no errors, 0 failed 0 timeout."
    second = addon_snapshot(mca("cluster1"), the_cma=cma(done))
    assert changes(first, second) == [
        f"addon hello placement default/web (Progressive): Progressing=True(Progressing): {done}",
        "addon hello placement default/web (Progressive) group 0: cluster1 succeeded",
    ]
    assert changes(second, snapshot()) == ["addon hello: gone"]


def test_addon_change_lines_for_a_cluster_that_leaves_and_a_placement_that_goes() -> None:
    before = addon_snapshot(mca("cluster1"))
    one = {**DECISION, "status": {"decisions": [{"clusterName": "cluster1", "reason": ""}]}}
    placement: dict[str, Any] = copy.deepcopy(PLACEMENT)
    placement["status"]["numberOfSelectedClusters"] = 1
    after = snapshot(cmas=[cma()], mcas=[mca("cluster1")], placements=[placement], decisions=[one])
    addon_lines = [line for line in changes(before, after) if line.startswith("addon ")]
    assert addon_lines == ["addon hello placement default/web (Progressive): cluster2 no longer configured"]
    all_at_once = snapshot(
        cmas=[cma(strategy={"type": "All"})], mcas=[mca("cluster1")], placements=[placement], decisions=[one]
    )
    lines = changes(after, all_at_once)
    assert "addon hello placement default/web (Progressive): gone" in lines
    assert "addon hello placement default/web (All) group 0: cluster1 succeeded" in lines


class Clock:
    """The view's wall clock and monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = NOW
        self.tick = 1000.0

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.tick += seconds


def addon_view(out: io.StringIO, clock: Clock) -> tuple[LiveView, WatchCache, WatchCache]:
    kube = Kube(ApiClient())
    clusters, works = WatchCache(kube, MANAGED_CLUSTERS), WatchCache(kube, MANIFEST_WORKS)
    cmas, mcas = WatchCache(kube, CLUSTER_MANAGEMENT_ADDONS), WatchCache(kube, MANAGED_CLUSTER_ADDONS)
    view = LiveView(
        kube, clusters=clusters, works=works, addon_managers=cmas, addons=mcas, out=out, interactive=False,
        clock=lambda: clock.now, monotonic=lambda: clock.tick,
    )
    for obj in (PLACEMENT,):
        view.placements.remember(obj)
    view.decisions.remember(DECISION)
    cmas.remember(cma())
    return view, cmas, mcas


def arrive(cache: WatchCache, obj: dict[str, Any]) -> None:
    """A watch event for ``obj``: cached, then the cache's callbacks told."""
    previous = cache.get(obj["metadata"]["name"], obj["metadata"].get("namespace"))
    cache.remember(obj)
    for callback in cache.callbacks:
        callback("MODIFIED", obj, previous)


def test_view_computes_the_addon_part_only_after_a_change_and_at_most_once_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[datetime] = []
    real = sim_view.addon_part

    def counted(**kwargs: Any) -> sim_view.AddonPart:
        calls.append(kwargs["now"])
        return real(**kwargs)

    monkeypatch.setattr(sim_view, "addon_part", counted)
    out, clock = io.StringIO(), Clock()
    view, _cmas, mcas = addon_view(out, clock)
    arrive(mcas, mca("cluster1", applied="old", progressing=IN_FLIGHT))
    view.draw()
    assert len(calls) == 1
    for _ in range(8):  # nothing changed: the last part is reused
        clock.advance(0.25)
        view.draw()
    assert len(calls) == 1
    arrive(mcas, mca("cluster1", now=clock.now))
    clock.advance(0.25)
    view.draw()  # 2.25 s since the last computation: at once
    assert len(calls) == 2
    arrive(mcas, mca("cluster2", applied="old", progressing=IN_FLIGHT, now=clock.now))
    clock.advance(0.25)
    view.draw()  # 0.25 s since the last one: not yet
    assert len(calls) == 2
    clock.advance(1.0)
    view.draw()
    assert len(calls) == 3
    lines = out.getvalue().splitlines()
    assert "12:00:00 addon hello placement default/web (Progressive) group 0: cluster1 progressing" in lines
    assert "12:00:02 addon hello placement default/web (Progressive) group 0: cluster1 succeeded" in lines
    assert "12:00:03 addon hello placement default/web (Progressive) group 0: cluster2 progressing" in lines


def test_view_looks_again_when_a_progress_deadline_passes() -> None:
    out, clock = io.StringIO(), Clock()
    view, _cmas, mcas = addon_view(out, clock)
    arrive(mcas, mca("cluster1", applied="old", progressing=IN_FLIGHT, since=timedelta(minutes=9)))
    view.draw()
    assert "cluster1 progressing" in out.getvalue()
    clock.advance(61)  # no event: the deadline alone makes cluster1 time out
    view.draw()
    assert "12:01:01 addon hello placement default/web (Progressive) group 0: cluster1 timed out: progressDeadline exceeded; progressing... work is not ready" in out.getvalue().splitlines()


def test_the_last_log_draw_has_the_latest_addon_states() -> None:
    out, clock = io.StringIO(), Clock()
    view, _cmas, mcas = addon_view(out, clock)
    arrive(mcas, mca("cluster1", applied="old", progressing=IN_FLIGHT))
    view.draw()
    arrive(mcas, mca("cluster1"))
    view.draw()  # at once after the first: the add-on part waits
    assert "cluster1 succeeded" not in out.getvalue()
    view.draw(force=True)
    assert "cluster1 succeeded" in out.getvalue()


def test_a_validating_cluster_is_shown_with_its_checks_and_a_waiting_gate_with_what_to_do() -> None:
    """A verified rollout (docs/behaviour/validation.md): cluster1's work applied, its check runs."""
    strategy = {"type": "ProgressivePerGroup", "promotion": {"type": "Manual", "decisionGroups": [{"groupIndex": 0}]},
                "validation": {"checks": [{"name": "ready", "feedback": {"successCondition": "false"}}]}}
    mwrs = {**MWRS, "spec": {**MWRS["spec"], "placementRefs": [{"name": "web", "rolloutStrategy": strategy}]}}
    record = json.dumps({"generation": 1, "since": "2024-05-01T11:59:00.000000Z",
                         "message": "check 'ready' Running: successCondition is false"})
    validating = work("cluster1", *SUCCEEDED)
    validating["metadata"]["annotations"] = {"rollout.ocm-rollout.io/validation": record}
    snap = snapshot(works=[validating], replica_sets=[mwrs])
    placement = snap.rollouts[0].placements[0]
    cells = dict(placement.groups[0].cells)
    assert cells["cluster1"] == "validating: validating: check 'ready' Running: successCondition is false"
    assert "PROMOTION: placement web: decision group 0 waits for a promotion" in placement.detail
