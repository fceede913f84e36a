"""The live view of `ocm-rollout up` (sandbox.sim_view): snapshot, rendering, change lines."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from controllers.runtime.kube import MANAGED_CLUSTERS, MANIFEST_WORKS, Kube
from controllers.runtime.watchcache import WatchCache
from sandbox.sim_view import ClusterRow, LiveView, Snapshot, build_snapshot, changes, natural_key, render

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
    from sandbox.sim_view import fit_to_height

    lines = [f"line {i}" for i in range(30)]
    fitted = fit_to_height(lines, 10)
    assert len(fitted) == 9
    assert fitted[:8] == lines[:8]
    assert fitted[-1].startswith("... 22 more lines")
    assert fit_to_height(lines[:5], 10) == lines[:5]
