"""The CPU floor of a fleet-wide rollout: what its requests cost with no logic around them.

Every ManifestWork of a rollout goes through four writes, as with OCM's own work agent: the
controller creates it, the agent adds its finalizer (a patch), then writes its status twice
(applied and progressing; then available and done). This benchmark starts the local hub alone in
its own process (TLS, as users get it) and sends exactly those writes from this process through
the controllers' own client (``ocm_rollout.client.kube.Kube``: the official ``kubernetes``
client), with nothing planned. ``--watchers`` ManifestWork watches (``WatchCache``, as the
controller and the agents keep them; default 2, one each; 0 for the writes alone) receive every
event, in this process. It prints, per request, the CPU time the hub and the clients spent, and
from that the shortest time any build on this stack can roll out N works on this machine's cores,
next to the ideal the simulated agents' delays allow and the 1.5x target of ``bench/scale.py``.

The floor leaves out everything else a rollout also costs: heartbeats, planning, status
aggregation, the controller's reads. It is a lower bound.

    .venv/bin/python bench/floor.py [--works 2000] [--concurrency 8] [--fleet 10000] [--watchers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scale import MANIFEST  # noqa: E402  (bench/ is this script's directory)

from ocm_rollout.client.collector import tune_collector  # noqa: E402
from ocm_rollout.client.kube import MANIFEST_WORKS, NAMESPACES, Kube  # noqa: E402
from ocm_rollout.client.kubeconfig import load_client  # noqa: E402
from ocm_rollout.client.watchcache import WatchCache  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
NAMESPACE = "cluster1"
# bench/scale.py's rollout: five waves (maxConcurrency 20%) of applyDelay 1 s + progressDuration 2 s.
IDEAL_SECONDS = 5 * 3.0
FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup"


def _process_cpu(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _work(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {
            "name": f"bench-{index}",
            "namespace": NAMESPACE,
            "labels": {"work.open-cluster-management.io/manifestworkreplicaset": "default.bench"},
        },
        "spec": {"workload": {"manifests": [MANIFEST]}},
    }


def _status(done: bool) -> dict[str, Any]:
    stamp = "2026-01-01T00:00:00Z"
    conditions = [
        {
            "type": "Applied",
            "status": "True",
            "reason": "AppliedManifestWorkComplete",
            "message": "Apply manifest work complete",
            "lastTransitionTime": stamp,
            "observedGeneration": 1,
        },
        {
            "type": "Progressing",
            "status": "False" if done else "True",
            "reason": "AppliedManifestWorkComplete" if done else "Applying",
            "message": "done" if done else "applying",
            "lastTransitionTime": stamp,
            "observedGeneration": 1,
        },
    ]
    if done:
        conditions.append(
            {
                "type": "Available",
                "status": "True",
                "reason": "ResourcesAvailable",
                "message": "All resources are available",
                "lastTransitionTime": stamp,
                "observedGeneration": 1,
            }
        )
    return {
        "conditions": conditions,
        "resourceStatus": {
            "manifests": [
                {
                    "resourceMeta": {
                        "group": "",
                        "version": "v1",
                        "kind": "ConfigMap",
                        "resource": "configmaps",
                        "name": "scale-bench",
                        "namespace": "default",
                        "ordinal": 0,
                    },
                    "conditions": [
                        {
                            "type": "Applied",
                            "status": "True",
                            "reason": "AppliedManifestComplete",
                            "message": "Apply manifest complete",
                            "lastTransitionTime": stamp,
                        }
                    ],
                }
            ]
        },
    }


class Phase:
    """One kind of request sent ``count`` times, ``concurrency`` at a time; CPU per request."""

    def __init__(self, hub_pid: int, count: int, concurrency: int, seen: list[int]) -> None:
        self.hub_pid, self.count, self.concurrency = hub_pid, count, concurrency
        self.seen = seen  # events each watcher received so far

    async def _delivered(self, wanted: int) -> None:
        while any(n < wanted for n in self.seen):
            await asyncio.sleep(0.01)

    async def run(self, name: str, send: Callable[[int], Awaitable[None]]) -> float:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(index: int) -> None:
            async with gate:
                await send(index)

        wanted = (self.seen[0] if self.seen else 0) + self.count
        hub0, own0, wall0 = _process_cpu(self.hub_pid), _own_cpu(), time.monotonic()
        await asyncio.gather(*(one(i) for i in range(self.count)))
        await asyncio.wait_for(self._delivered(wanted), 120)
        hub1, own1, wall1 = _process_cpu(self.hub_pid), _own_cpu(), time.monotonic()
        hub_ms, client_ms = 1000 * (hub1 - hub0) / self.count, 1000 * (own1 - own0) / self.count
        print(
            f"  {name:<24} hub {hub_ms:5.2f} ms  client {client_ms:5.2f} ms  "
            f"together {hub_ms + client_ms:5.2f} ms  ({self.count / (wall1 - wall0):,.0f}/s)",
            flush=True,
        )
        return hub_ms + client_ms


async def measure(works: int, concurrency: int, watchers: int, kubeconfig: Path, hub_pid: int) -> float:
    """CPU milliseconds (hub and clients) of one work's four writes and their watch events."""
    kube = Kube(load_client(str(kubeconfig)))
    await kube.request(
        "POST",
        NAMESPACES.path(),
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    )
    seen = [0] * watchers
    stop = asyncio.Event()

    def counter(index: int) -> Callable[[str, Any, Any], None]:
        def count(kind: str, _obj: Any, _previous: Any) -> None:
            if kind:  # "" is the first listing
                seen[index] += 1

        return count

    caches = [
        WatchCache(Kube(load_client(str(kubeconfig))), MANIFEST_WORKS, on_change=counter(i))
        for i in range(watchers)
    ]
    tasks = [asyncio.create_task(cache.run(stop)) for cache in caches]
    for cache in caches:
        await asyncio.wait_for(cache.synced.wait(), 60)
    phase = Phase(hub_pid, works, concurrency, seen)
    stored: dict[int, dict[str, Any]] = {}

    async def create(index: int) -> None:
        stored[index] = await kube.request("POST", MANIFEST_WORKS.path(NAMESPACE), body=_work(index))

    async def finalizer(index: int) -> None:
        stored[index] = await kube.request(
            "PATCH",
            MANIFEST_WORKS.path(NAMESPACE, f"bench-{index}"),
            body={"metadata": {"finalizers": [FINALIZER]}},
            content_type="application/merge-patch+json",
        )

    def status_write(done: bool) -> Callable[[int], Awaitable[None]]:
        async def write(index: int) -> None:
            body = {**stored[index], "status": _status(done)}
            stored[index] = await kube.request(
                "PUT", MANIFEST_WORKS.path(NAMESPACE, f"bench-{index}", "status"), body=body
            )

        return write

    total = await phase.run("create (controller)", create)
    total += await phase.run("finalizer patch (agent)", finalizer)
    total += await phase.run("status: applied (agent)", status_write(False))
    total += await phase.run("status: done (agent)", status_write(True))
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return total


@contextmanager
def hub_process(prefix: str) -> Iterator[tuple[Path, int]]:
    """The local hub alone in a process of its own (TLS, as users get it), answering: its
    kubeconfig and pid; stopped on leaving."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        hub = subprocess.Popen(
            [sys.executable, "-m", "ocm_rollout.sandbox.server", "--kubeconfig", str(kubeconfig)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not kubeconfig.exists():
                if time.monotonic() > deadline or hub.poll() is not None:
                    raise RuntimeError("the local hub did not start")
                time.sleep(0.2)
            time.sleep(1.0)
            yield kubeconfig, hub.pid
        finally:
            hub.terminate()
            hub.wait()


def measure_floor(works: int, concurrency: int, watchers: int) -> float:
    """CPU milliseconds of one work's four writes and their events, on a hub of its own."""
    with hub_process("floor-") as (kubeconfig, pid):
        print(f"{works:,} ManifestWorks, {concurrency} requests in flight, {watchers} watchers:")
        return asyncio.run(measure(works, concurrency, watchers, kubeconfig, pid))


def floor_seconds(per_work_ms: float, fleet: int) -> float:
    """The shortest time ``fleet`` works' writes take on this machine's cores."""
    return fleet * per_work_ms / 1000 / len(os.sched_getaffinity(0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--works", type=int, default=2000, help="ManifestWorks to send the writes for")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--fleet", type=int, default=10000, help="fleet size the floor is computed for")
    parser.add_argument("--watchers", type=int, default=2, help="ManifestWork watches receiving every event")
    args = parser.parse_args()
    tune_collector()  # as the controllers and the simulated agents, whose writes this stands for, do
    try:
        per_work = measure_floor(args.works, args.concurrency, args.watchers)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    cores = len(os.sched_getaffinity(0))
    floor = floor_seconds(per_work, args.fleet)
    print(f"one work's four writes and their events: {per_work:.2f} ms of CPU (hub and clients together)")
    print(
        f"floor for {args.fleet:,} works on {cores} cores: {floor:.1f} s "
        f"({floor / IDEAL_SECONDS:.1f}x the ideal {IDEAL_SECONDS:.0f} s; target 1.5x = {1.5 * IDEAL_SECONDS:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
