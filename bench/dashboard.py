"""Benchmark: what the dashboard costs with 2,000 clusters in one rollout.

The dashboard's server runs in this process over its real ``Store``, fed the objects of one
ManifestWorkReplicaSet rolling out (Progressive, decision groups of ``--group`` clusters) to
``--clusters`` clusters through the same callbacks its watches call: a Placement, its decision
pages, one ManifestWork per cluster in every rollout status (most Succeeded, some in flight, a
few failed). It measures, on the server:

- ``load``: the list's JSON and the rollout page's JSON computed from cold, and their sizes;
- ``update``: after one ManifestWork changes, the list and the rollout page computed again (what
  every open page asks after each change notice), the best and the median of ``--updates``;

and, when Chromium and Playwright are present, in a real browser over HTTP:

- ``page load``: from navigation to the rollout page drawn (its chips in the DOM);
- ``change shown``: from a work's status change in the store to its chip's new state drawn
  (stream notice, fetch, draw), the median of ``--updates``.

    .venv/bin/python bench/dashboard.py [--clusters 2000] [--group 500] [--updates 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT  # noqa: E402
from ocm_rollout.cli.dashboard.server import Dashboard  # noqa: E402
from ocm_rollout.client.kube import Kube  # noqa: E402
from ocm_rollout.controllers.workset.workbuild import owner_for  # noqa: E402

NS, NAME, PLACEMENT = "web", "web", "all"
CHROMIUM = "/usr/bin/chromium"
NOW = "2026-01-01T00:00:00Z"
TEMPLATE = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}, "data": {"v": "1"}}]}}
_version = 0


def version() -> str:
    global _version
    _version += 1
    return str(_version)


def condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason or kind, "message": message, "observedGeneration": 1,
            "lastTransitionTime": NOW}


def work_status(state: str) -> dict[str, Any]:
    if state == "Succeeded":
        return {"conditions": [condition("Applied", "True"), condition("Available", "True"), condition("Progressing", "False", "Completed"),
                               condition("Degraded", "False")]}
    if state == "Failed":
        return {"conditions": [condition("Applied", "True"), condition("Progressing", "True", "Progressing"),
                               condition("Degraded", "True", "ApplyFailed", "Back-off pulling image")]}
    return {"conditions": [condition("Applied", "True"), condition("Progressing", "True", "Progressing")]}


def objects(clusters: int, group: int) -> dict[str, list[dict[str, Any]]]:
    names = [f"cluster{i}" for i in range(1, clusters + 1)]
    owner = owner_for(NS, NAME)
    mwrs = {
        "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": NAME, "namespace": NS, "uid": "uid-web", "resourceVersion": version(), "creationTimestamp": NOW,
                     "generation": 1},
        "spec": {"placementRefs": [{"name": PLACEMENT, "rolloutStrategy": {"type": "Progressive", "progressive": {
            "maxConcurrency": 100, "maxFailures": "10%"}}}], "manifestWorkTemplate": TEMPLATE},
        "status": {"updateRevision": "abc", "currentRevision": "old"},
    }
    groups = [names[i:i + group] for i in range(0, clusters, group)]
    placement = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": PLACEMENT, "namespace": NS, "resourceVersion": version(), "generation": 1},
        "spec": {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": group}}},
        "status": {"numberOfSelectedClusters": clusters, "conditions": [condition("PlacementSatisfied", "True")],
                   "decisionGroups": [{"decisionGroupIndex": i, "decisionGroupName": "", "clustersCount": len(g),
                                       "decisions": [f"{PLACEMENT}-decision-{i}"]} for i, g in enumerate(groups)]},
    }
    decisions = [
        {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
         "metadata": {"name": f"{PLACEMENT}-decision-{i}", "namespace": NS, "resourceVersion": version(),
                      "labels": {LABEL_PLACEMENT: PLACEMENT, "cluster.open-cluster-management.io/decision-group-index": str(i),
                                 "cluster.open-cluster-management.io/decision-group-name": ""}},
         "status": {"decisions": [{"clusterName": c, "reason": ""} for c in g]}}
        for i, g in enumerate(groups)
    ]
    works = []
    for i, cluster in enumerate(names):
        state = "Succeeded" if i < clusters * 0.6 else "Progressing" if i < clusters * 0.65 else None
        if i % 97 == 5 and state is not None:
            state = "Failed"
        if state is None:
            continue  # not reached yet
        works.append({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": f"{NAME}-abc", "namespace": cluster, "resourceVersion": version(), "generation": 1,
                         "creationTimestamp": NOW, "uid": f"uid-{cluster}",
                         "labels": {LABEL_MANIFESTWORK_REPLICASET: owner.label_value, "work.open-cluster-management.io/placementname": PLACEMENT,
                                    "work.open-cluster-management.io/controller-hash": "abc"}},
            "spec": TEMPLATE,
            "status": work_status(state),
        })
    return {"replicasets": [mwrs], "placements": [placement], "decisions": decisions, "works": works}


def feed(dashboard: Dashboard, kind: str, obj: dict[str, Any]) -> None:
    """What the store's watch does with an event: cache it, then call back."""
    cache = dashboard.store[kind]
    key = ((obj["metadata"].get("namespace") or ""), obj["metadata"]["name"])
    previous = cache.objects.get(key)
    cache.objects[key] = obj
    for callback in cache.callbacks:
        callback("MODIFIED" if previous else "ADDED", obj, previous)


async def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = await fn()
    return time.perf_counter() - started, value


async def both(pages: Any) -> tuple[Any, Any]:
    return await pages.overview(), await pages.mwrs_page(NS, NAME)


def change_one(dashboard: Dashboard, works: list[dict[str, Any]], index: int, state: str) -> str:
    work = dict(works[index])
    work["metadata"] = {**work["metadata"], "resourceVersion": version()}
    work["status"] = work_status(state)
    works[index] = work
    feed(dashboard, "works", work)
    return str(work["metadata"]["namespace"])


async def browser_part(dashboard: Dashboard, works: list[dict[str, Any]], updates: int) -> dict[str, float] | None:
    if not os.path.exists(CHROMIUM):
        print(f"browser part skipped: no Chromium at {CHROMIUM}")
        return None
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        print("browser part skipped: playwright is not installed")
        return None
    from aiohttp import web

    runner = web.AppRunner(dashboard.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/#/rollouts/mwrs/{NS}/{NAME}"
    out: dict[str, float] = {}
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = await browser.new_page()
            started = time.perf_counter()
            await page.goto(url)
            await page.wait_for_selector('[data-testid="chip"]')
            out["page load"] = time.perf_counter() - started
            chips = await page.locator('[data-testid="chip"]').count()
            print(f"  chips drawn: {chips}")
            shown = []
            in_flight = [i for i, w in enumerate(works) if len(w["status"]["conditions"]) == 2]
            for n in range(updates):
                index = in_flight[n % len(in_flight)]
                started = time.perf_counter()
                cluster = change_one(dashboard, works, index, "Failed")
                await page.wait_for_selector(f'[data-testid="chip"][data-cluster="{cluster}"][data-state="Failed"]', timeout=10000)
                shown.append(time.perf_counter() - started)
            out["change shown (median)"] = statistics.median(shown)
            out["change shown (max)"] = max(shown)
            await browser.close()
    finally:
        await runner.cleanup()
    return out


async def main_async(args: argparse.Namespace) -> None:
    dashboard = Dashboard(Kube(ApiClient()), read_only=False)
    for cache in dashboard.store.caches.values():
        cache.synced.set()
    found = objects(args.clusters, args.group)
    started = time.perf_counter()
    for kind, items in found.items():
        for obj in items:
            feed(dashboard, kind, obj)
    print(f"{args.clusters} clusters, {len(found['works'])} works, groups of {args.group}: fed in {time.perf_counter() - started:.2f}s")
    pages = dashboard.pages
    cold_list, overview = await timed(pages.overview)
    cold_page, rollout = await timed(lambda: pages.mwrs_page(NS, NAME))
    list_bytes, page_bytes = len(json.dumps(overview)), len(json.dumps(rollout))
    print(f"load:   list {cold_list * 1000:.1f} ms ({list_bytes:,} bytes), rollout page {cold_page * 1000:.1f} ms ({page_bytes:,} bytes)")
    chips = sum(len(g["clusters"]) for p in rollout["placements"] for g in p["groups"])
    print(f"        {chips} chips sent for {rollout['total']} clusters (groups over the chip limit are aggregated)")
    costs = []
    works = found["works"]
    for n in range(args.updates):
        change_one(dashboard, works, len(works) - 1 - n, "Progressing")
        cost, _ = await timed(lambda: both(pages))
        costs.append(cost)
    print(f"update: list + rollout page after one work changed: best {min(costs) * 1000:.1f} ms, "
          f"median {statistics.median(costs) * 1000:.1f} ms")
    warm, _ = await timed(lambda: both(pages))
    print(f"        nothing changed: {warm * 1000:.1f} ms")
    measured = await browser_part(dashboard, works, args.updates)
    if measured:
        for key, value in measured.items():
            print(f"browser: {key}: {value * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--group", type=int, default=500)
    parser.add_argument("--updates", type=int, default=10)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
