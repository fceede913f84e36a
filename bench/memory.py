"""Memory of the local hub over a long run of writes: it must level off, not grow with them.

Starts the hub in a child process as `ocm-rollout up` runs it (the project's CRDs, SQLite
persistence, TLS), keeps watches open on what is written (as controllers do), and drives a long
write loop over HTTP: merge patches of a fixed set of ConfigMaps, status patches of as many
ManifestWorks (the agents' traffic), and a new Event every fifth write. The child's resident
memory (VmRSS) is printed before the loop and after every phase, with the writes per second.

What bounds it: every resource's watch history keeps at most `--history` events, and fewer
when its writes are slow (the events of the last 75 s, at least 100, as kube-apiserver's watch
cache); Events expire `--event-ttl` seconds after their last write (kube-apiserver: one hour;
shorter here so that a run of a few minutes shows them go).

    .venv/bin/python bench/memory.py [--writes 60000] [--phases 6] [--objects 200] [--history 10000]
                                     [--event-ttl 30] [--rate 0] [--concurrency 16] [--watchers 3]

At full speed every resource's history soon holds `--history` events and memory levels off
there; at the pace of `ocm-rollout up` (`--rate 100`, say) it levels off at what 75 s of writes
hold, within the first phases.

`--repo PATH` runs the hub from another checkout of the project (e.g. an extracted `git archive`
of an older commit) to compare; a hub without Event expiry ignores `--event-ttl`.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKS = "/apis/work.open-cluster-management.io/v1/namespaces/{ns}/manifestworks"
MERGE = "application/merge-patch+json"


def serve(args: argparse.Namespace) -> None:
    """The child: the hub, with Events expiring after `--event-ttl` when the hub supports it."""
    from ocm_rollout.sandbox.server import LocalHub

    async def main() -> None:
        hub = LocalHub(port=0, data=args.data, history=args.history)
        await hub.start()
        if hub.engine is not None and hasattr(hub.engine, "event_ttl"):
            hub.engine.event_ttl = args.event_ttl
        hub.write_kubeconfig(args.kubeconfig)
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Hub:
    def __init__(self, args: argparse.Namespace) -> None:
        self.dir = tempfile.TemporaryDirectory()
        kubeconfig = Path(self.dir.name) / "kubeconfig"
        env = {**os.environ, "PYTHONPATH": str(args.repo), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", "--kubeconfig", str(kubeconfig),
             "--data", str(Path(self.dir.name) / "hub.sqlite"), "--history", str(args.history),
             "--event-ttl", str(args.event_ttl)],
            cwd=args.repo, env=env, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the hub did not start")
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.token = config["users"][0]["user"]["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.ssl = ssl.create_default_context(cadata=ca)

    def rss(self) -> float:
        return rss_mib(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()


async def send(session: aiohttp.ClientSession, hub: Hub, method: str, path: str, body: Any, ctype: str) -> None:
    async with session.request(method, hub.url + path, data=json.dumps(body), headers={"Content-Type": ctype}) as resp:
        await resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {await resp.text()}")


async def watch(session: aiohttp.ClientSession, hub: Hub, path: str) -> None:
    """A client that follows `path` forever, resuming from the last resourceVersion it saw."""
    rv = ""
    while True:
        params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "60", "resourceVersion": rv}
        async with session.get(hub.url + path, params=params, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            async for line in resp.content:
                event = json.loads(line)
                if event["type"] == "ERROR":
                    rv = ""  # too old: start again from the current state
                    break
                rv = event["object"]["metadata"].get("resourceVersion", rv)


def write(i: int, objects: int) -> tuple[str, str, Any, str]:
    n = i % objects
    if i % 5 == 4:
        event = {"metadata": {"name": f"e{i}"}, "involvedObject": {"kind": "ConfigMap", "name": f"cm{n}"},
                 "reason": "Bench", "message": f"write {i}", "type": "Normal"}
        return "POST", "/api/v1/namespaces/default/events", event, "application/json"
    if i % 2:
        status = {"status": {"conditions": [{"type": "Applied", "status": "True", "reason": "Bench",
                                              "message": f"write {i}", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
        return "PATCH", WORKS.format(ns="default") + f"/w{n}/status", status, MERGE
    return "PATCH", f"/api/v1/namespaces/default/configmaps/cm{n}", {"data": {"i": str(i)}}, MERGE


async def run(args: argparse.Namespace) -> None:
    hub = Hub(args)
    try:
        connector = aiohttp.TCPConnector(ssl=hub.ssl, limit=args.concurrency + args.watchers + 4)
        headers = {"Authorization": f"Bearer {hub.token}", "Accept": "application/json"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            for n in range(args.objects):
                await send(session, hub, "POST", "/api/v1/namespaces/default/configmaps",
                           {"metadata": {"name": f"cm{n}"}, "data": {"blob": "x" * 2000}}, "application/json")
                manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{n}", "namespace": "default"},
                            "data": {"blob": "y" * 2000}}
                work = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                        "metadata": {"name": f"w{n}"}, "spec": {"workload": {"manifests": [manifest]}}}
                await send(session, hub, "POST", WORKS.format(ns="default"), work, "application/json")
            paths = ["/api/v1/configmaps", "/apis/work.open-cluster-management.io/v1/manifestworks", "/api/v1/events"]
            watchers = [asyncio.create_task(watch(session, hub, paths[i % len(paths)])) for i in range(args.watchers)]
            await asyncio.sleep(1.0)
            before = hub.rss()
            print(f"before:  RSS {before:7.1f} MiB  ({args.objects} ConfigMaps and ManifestWorks, {args.watchers} watches)")
            per_phase = args.writes // args.phases
            done = 0
            for phase in range(1, args.phases + 1):
                queue: asyncio.Queue[int] = asyncio.Queue()
                for i in range(done, done + per_phase):
                    queue.put_nowait(i)

                start = time.perf_counter()

                async def worker(q: asyncio.Queue[int] = queue, first: int = done, began: float = start) -> None:
                    while not q.empty():
                        i = q.get_nowait()
                        if args.rate:
                            await asyncio.sleep(max(0.0, began + (i - first) / args.rate - time.perf_counter()))
                        await send(session, hub, *write(i, args.objects))

                await asyncio.gather(*(worker() for _ in range(args.concurrency)))
                elapsed = time.perf_counter() - start
                done += per_phase
                print(f"phase {phase}: RSS {hub.rss():7.1f} MiB  after {done:6d} writes  ({per_phase / elapsed:5.0f} writes/s)",
                      flush=True)
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
            print(f"after:   RSS {hub.rss():7.1f} MiB  (+{hub.rss() - before:.1f} MiB over {done} writes)")
    finally:
        hub.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=60_000)
    parser.add_argument("--phases", type=int, default=6)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--event-ttl", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=0.0, help="writes per second (0: as fast as the hub goes)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
