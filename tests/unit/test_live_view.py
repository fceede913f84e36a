"""The live view computes from incremental state (ocm_rollout.cli.view.live_view, ocm_rollout.cli.view.view_state): a
change costs the parts it touches, not the whole fleet, and each part stays under its budget."""

from __future__ import annotations

import io
import itertools
from typing import Any

import pytest
from kubernetes.client import ApiClient

from ocm_rollout.cli.view import live_view, sim_view
from ocm_rollout.cli.view.live_view import LiveView
from ocm_rollout.cli.view.sim_view import ClusterRow, Snapshot, render, shown_clusters
from ocm_rollout.cli.view.view_state import Budget, WorkIndex
from ocm_rollout.client.kube import MANAGED_CLUSTERS, MANIFEST_WORKS, Kube
from ocm_rollout.client.watchcache import WatchCache
from tests.unit.test_sim_view import DECISION, MWRS, NOW, PLACEMENT, SUCCEEDED, Clock, cluster, cond, work


def arrive(cache: WatchCache, obj: dict[str, Any], event: str = "MODIFIED") -> None:
    previous = cache.get(obj["metadata"]["name"], obj["metadata"].get("namespace"))
    cache.remember(obj)
    for callback in cache.callbacks:
        callback(event, obj, previous)


def fleet_view(clock: Clock, clusters: int = 50) -> tuple[LiveView, WatchCache, WatchCache]:
    kube = Kube(ApiClient())
    cluster_cache, work_cache = WatchCache(kube, MANAGED_CLUSTERS), WatchCache(kube, MANIFEST_WORKS)
    for index in range(1, clusters + 1):
        cluster_cache.remember(cluster(f"cluster{index}"))
    view = LiveView(
        kube, clusters=cluster_cache, works=work_cache, out=io.StringIO(), interactive=False,
        clock=lambda: clock.now, monotonic=lambda: clock.tick,
    )
    view.placements.remember(PLACEMENT)
    view.decisions.remember(DECISION)
    view.replica_sets.remember(MWRS)
    return view, cluster_cache, work_cache


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(live_view, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(live_view, name, counted)
    return calls


def test_a_work_change_recomputes_its_cluster_row_only(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = counting(monkeypatch, "cluster_row")
    clock = Clock()
    view, _clusters, works = fleet_view(clock)
    first = view.snapshot()
    assert len(rows) == 50
    rows.clear()
    arrive(works, work("cluster7", *SUCCEEDED), "ADDED")
    second = view.snapshot()
    assert [args[0]["metadata"]["name"] for args in rows] == ["cluster7"]
    assert {r.name: r.works for r in second.clusters}["cluster7"] == 1
    assert [r for r in second.clusters if r.name != "cluster7"] == [r for r in first.clusters if r.name != "cluster7"]


def test_nothing_changed_means_the_same_snapshot_and_no_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    rows, reports = counting(monkeypatch, "cluster_row"), counting(monkeypatch, "rollout_row")
    clock = Clock()
    view, _clusters, _works = fleet_view(clock)
    first = view.snapshot()
    rows.clear()
    reports.clear()
    for _ in range(20):
        clock.advance(0.25)
        assert view.snapshot() is first
    assert rows == [] and reports == []


def test_a_rollout_is_reported_again_only_when_its_inputs_change(monkeypatch: pytest.MonkeyPatch) -> None:
    reports = counting(monkeypatch, "rollout_row")
    clock = Clock()
    view, clusters, works = fleet_view(clock)
    view.snapshot()
    assert len(reports) == 1
    clock.advance(1)
    arrive(clusters, cluster("cluster9", available="False"))  # no work of the rollout changed
    arrive(works, work("cluster9", owned=False), "ADDED")  # a work of nobody's rollout
    view.snapshot()
    assert len(reports) == 1
    clock.advance(1)
    arrive(works, work("cluster1", *SUCCEEDED), "ADDED")
    snap = view.snapshot()
    assert len(reports) == 2
    cells = {c: s for p in snap.rollouts[0].placements for g in p.groups for c, s in g.cells}
    assert cells["cluster1"] == "succeeded"


def test_a_costly_rollout_report_is_computed_at_most_as_its_budget_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    view, _clusters, works = fleet_view(clock)
    real = sim_view.rollout_row
    calls: list[float] = []

    def slow(*args: Any, **kwargs: Any) -> Any:
        calls.append(clock.tick)
        clock.advance(0.5)  # the report takes half a second of the view's time
        return real(*args, **kwargs)

    monkeypatch.setattr(live_view, "rollout_row", slow)
    view.snapshot()
    for _ in range(100):  # a work changes every 0.25 s for 25 s
        clock.advance(0.25)
        arrive(works, work("cluster1", cond("Progressing", "True"), generation=1), "MODIFIED")
        view.snapshot()
    spans = [b - a for a, b in itertools.pairwise(calls)]
    assert len(calls) >= 2, calls
    # 0.5 s of work may come back only after 0.5 / PART_SHARE seconds.
    assert min(spans) >= 0.5 / live_view.PART_SHARE


def test_a_forced_snapshot_ignores_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    reports = counting(monkeypatch, "rollout_row")
    clock = Clock()
    view, _clusters, works = fleet_view(clock)
    view.snapshot()
    arrive(works, work("cluster1", *SUCCEEDED), "ADDED")
    view.snapshot()  # within PART_REFRESH_SECONDS of the first: waits
    assert len(reports) == 1
    view.snapshot(force=True)
    assert len(reports) == 2


def test_the_log_has_no_line_when_nothing_changed() -> None:
    clock = Clock()
    view, clusters, _works = fleet_view(clock, clusters=3)
    view.draw()
    out = view.out
    assert isinstance(out, io.StringIO)
    before = out.getvalue()
    view.draw()
    assert out.getvalue() == before
    arrive(clusters, cluster("cluster2", available="Unknown"))
    view.draw()
    assert out.getvalue()[len(before):] == "12:00:00 cluster cluster2: Available True -> Unknown\n"


def test_a_screen_shows_clusters_needing_attention_first_and_counts_the_rest() -> None:
    rows = tuple(
        ClusterRow(f"cluster{i}", "True" if i != 700 else "Unknown", (), 1, 1, 1 if i == 900 else 0, 0)
        for i in range(1, 1001)
    )
    shown, hidden = shown_clusters(rows, 10)
    assert [r.name for r in shown[:2]] == ["cluster700", "cluster900"]
    assert len(shown) == 10 and hidden == 990
    text = render(Snapshot(clusters=rows), limit=10)
    assert "CLUSTERS  999/1000 available" in text
    assert "  ... and 990 more clusters" in text
    assert len(text.splitlines()) < 20


def test_a_large_decision_group_is_summarised_on_a_screen() -> None:
    cells = tuple((f"cluster{i}", "succeeded" if i % 2 else "waiting") for i in range(1, 501))
    cells += (("cluster999", "failed: image pull back-off"),)
    placement = sim_view.PlacementRow("placement web (Progressive)", "selected 501", (sim_view.GroupRow(0, "", cells),))
    rollout = sim_view.RolloutRow("default", "web", (), (), (placement,))
    text = render(Snapshot(rollouts=(rollout,)), limit=10, width=200)
    assert "succeeded 250, waiting 250, failed 1" in text
    assert "cluster999 failed: image pull back-off" in text
    assert "cluster2 " not in text
    assert len(text.splitlines()) < 20


def test_work_index_follows_moves_between_owners_and_deletions() -> None:
    index = WorkIndex()
    owned = work("cluster1")
    index.update("ADDED", owned, None)
    assert index.owned_by("default.web") == [owned]
    orphan = work("cluster1", owned=False)
    namespace, owners = index.update("MODIFIED", orphan, owned)
    assert (namespace, owners) == ("cluster1", {"default.web"})
    assert index.owned_by("default.web") == []
    assert index.in_namespace("cluster1") == [orphan]
    index.update("DELETED", orphan, orphan)
    assert index.in_namespace("cluster1") == []


def test_budget_waits_for_its_cost_over_its_share() -> None:
    tick = [10.0]
    budget = Budget(lambda: tick[0], min_interval=0.25, share=0.05)
    assert budget.due()
    started = tick[0]
    tick[0] += 0.1  # a 100 ms computation
    budget.spend(started)
    tick[0] += 1.9
    assert not budget.due()
    tick[0] += 0.1
    assert budget.due()


def test_a_snapshot_at_start_reads_what_the_caches_hold_already() -> None:
    clock = Clock()
    view, _clusters, _works = fleet_view(clock, clusters=2)
    snap = view.snapshot()
    assert [r.name for r in snap.clusters] == ["cluster1", "cluster2"]
    assert snap.rollouts and snap.placements
    assert NOW == clock.now


def test_a_large_placement_group_is_one_line_of_counts() -> None:
    cells = tuple((f"cluster{i}", "selected") for i in range(1, 301))
    placement = sim_view.PlacementRow("default/web", "selected 300", (sim_view.GroupRow(0, "", cells),))
    text = render(Snapshot(placements=(placement,)), limit=10)
    assert [line for line in text.splitlines() if "group 0" in line] == ["    group 0: selected 300"]
