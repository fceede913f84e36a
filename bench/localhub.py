"""Benchmark of the local hub API server.

Starts the hub in its own process (one core, TLS as users get it), drives it over HTTP from
this process with aiohttp, and prints:

- creates/s   POST of ManagedClusters (schema validation, defaulting, pruning);
- patches/s   merge-patches of those objects (labels);
- list latency of all 10,000 objects (JSON, and the Table `kubectl get` asks for);
- watch fan-out latency: time from a write to its delivery on every one of N watchers.

Targets (issue 3): >= 1,000 writes/s and a 10,000-object list in < 1 s on one core.

    .venv/bin/python bench/localhub.py [--objects 10000] [--concurrency 32] [--watchers 50]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

GROUP, VERSION, PLURAL = "cluster.open-cluster-management.io", "v1", "managedclusters"
BASE = f"/apis/{GROUP}/{VERSION}/{PLURAL}"


def cluster(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ManagedCluster",
        "metadata": {"name": f"cluster-{i:05d}", "labels": {"region": ["east", "west"][i % 2], "index": str(i)}},
        "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60},
    }


class Hub:
    """The hub in a child process."""

    def __init__(self, extra: list[str]) -> None:
        self.dir = tempfile.TemporaryDirectory()
        kubeconfig = Path(self.dir.name) / "kubeconfig"
        repo = Path(__file__).resolve().parents[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ocm_rollout.sandbox.server", "--port", "0", "--kubeconfig", str(kubeconfig), *extra],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("kubeconfig:"):
                break
        config = yaml.safe_load(kubeconfig.read_text())
        cluster_cfg = config["clusters"][0]["cluster"]
        self.url = cluster_cfg["server"]
        self.token = config["users"][0]["user"]["token"]
        self.ssl: ssl.SSLContext | bool = False
        if "certificate-authority-data" in cluster_cfg:
            ca = base64.b64decode(cluster_cfg["certificate-authority-data"]).decode()
            self.ssl = ssl.create_default_context(cadata=ca)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()


async def timed_requests(
    session: aiohttp.ClientSession, hub: Hub, requests: list[tuple[str, str, Any, str]], concurrency: int
) -> float:
    """Run (method, path, body, content-type) requests with `concurrency` in flight; returns seconds."""
    queue: asyncio.Queue[tuple[str, str, Any, str]] = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    failures: list[str] = []

    async def worker() -> None:
        while not queue.empty():
            method, path, body, ctype = queue.get_nowait()
            async with session.request(
                method, hub.url + path, data=json.dumps(body), headers={"Content-Type": ctype}, ssl=hub.ssl
            ) as resp:
                await resp.read()
                if resp.status >= 300:
                    failures.append(f"{method} {path}: {resp.status}")

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed, e.g. {failures[0]}")
    return elapsed


async def list_latency(session: aiohttp.ClientSession, hub: Hub, accept: str, runs: int) -> tuple[list[float], int, int]:
    times = []
    size = count = 0
    for _ in range(runs):
        start = time.perf_counter()
        async with session.get(hub.url + BASE, headers={"Accept": accept}, ssl=hub.ssl) as resp:
            data = await resp.read()
        times.append(time.perf_counter() - start)
        size = len(data)
        body = json.loads(data)
        count = len(body.get("items") or body.get("rows") or [])
    return times, size, count


async def fan_out(session: aiohttp.ClientSession, hub: Hub, watchers: int, updates: int) -> list[float]:
    """Latency from sending a patch until every watcher has received its event."""
    async with session.get(hub.url + BASE + "?limit=1", ssl=hub.ssl) as resp:
        rv = (await resp.json())["metadata"]["resourceVersion"]
    target = "cluster-00000"
    arrivals: dict[str, list[float]] = {}
    ready = asyncio.Event()
    opened = 0

    async def watch() -> None:
        nonlocal opened
        url = f"{hub.url}{BASE}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3D{target}"
        async with session.get(url, ssl=hub.ssl, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            opened += 1
            if opened == watchers:
                ready.set()
            async for line in resp.content:
                event = json.loads(line)
                mark = event["object"]["metadata"].get("labels", {}).get("mark")
                if mark is not None:
                    arrivals.setdefault(mark, []).append(time.perf_counter())
                    if mark == str(updates - 1):
                        return

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    await asyncio.wait_for(ready.wait(), 30)
    await asyncio.sleep(0.2)
    latencies = []
    for n in range(updates):
        sent = time.perf_counter()
        patch = {"metadata": {"labels": {"mark": str(n)}}}
        async with session.patch(
            hub.url + f"{BASE}/{target}", data=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"}, ssl=hub.ssl,
        ) as resp:
            await resp.read()
        while len(arrivals.get(str(n), [])) < watchers:
            await asyncio.sleep(0.0005)
        latencies.append(max(arrivals[str(n)]) - sent)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return latencies


async def run(args: argparse.Namespace) -> None:
    extra = ["--insecure-http"] if args.plain_http else []
    data_dir = tempfile.TemporaryDirectory() if args.sqlite else None
    if data_dir is not None:
        extra += ["--data", str(Path(data_dir.name) / "hub.sqlite")]
    hub = Hub(extra)
    try:
        connector = aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 4)
        headers = {"Authorization": f"Bearer {hub.token}", "Accept": "application/json"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            n = args.objects
            creates = [("POST", BASE, cluster(i), "application/json") for i in range(n)]
            t = await timed_requests(session, hub, creates, args.concurrency)
            print(f"creates:   {n / t:8.0f} /s   ({n} ManagedClusters in {t:.2f} s, concurrency {args.concurrency})")
            patches = [
                ("PATCH", f"{BASE}/cluster-{i:05d}", {"metadata": {"labels": {"patched": "yes"}}}, "application/merge-patch+json")
                for i in range(n)
            ]
            t = await timed_requests(session, hub, patches, args.concurrency)
            print(f"patches:   {n / t:8.0f} /s   ({n} merge patches in {t:.2f} s)")
            times, size, count = await list_latency(session, hub, "application/json", 5)
            print(
                f"list:      {statistics.median(times) * 1000:8.0f} ms  (median of 5; first {times[0] * 1000:.0f} ms; "
                f"{count} objects, {size / 1e6:.1f} MB JSON)"
            )
            times, size, count = await list_latency(
                session, hub, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", 3
            )
            print(f"list/table:{statistics.median(times) * 1000:8.0f} ms  (median of 3, {count} rows, as kubectl get asks)")
            lat = await fan_out(session, hub, args.watchers, args.updates)
            lat.sort()
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
            print(
                f"watch:     {statistics.median(lat) * 1000:8.1f} ms  median, {p99 * 1000:.1f} ms p99 "
                f"(write to delivery on all of {args.watchers} watchers, {args.updates} writes)"
            )
    finally:
        hub.stop()
        if data_dir is not None:
            data_dir.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--plain-http", action="store_true", help="measure without TLS")
    parser.add_argument("--sqlite", action="store_true", help="persist to a SQLite file (--data), as `ocm-rollout up --data`")
    args = parser.parse_args()
    mode = ("plain HTTP" if args.plain_http else "TLS") + (", SQLite --data" if args.sqlite else ", in memory")
    print(f"local hub benchmark (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, server in its own process, {mode})")
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
