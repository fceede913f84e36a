"""Benchmark: the CPU of one simulated heartbeat (a merge patch of a cluster's Lease), sent through
the controllers' client (``Kube.patch``: the official ``kubernetes`` client, urllib3 in a worker
thread) and through the simulation's ``LeaseRenewer`` (aiohttp on the event loop).

It starts the local hub alone in its own process (TLS, as users get it), creates ``--leases``
cluster namespaces with their Lease, keeps one Lease watch in this process (as the registration
agents do: their own renewals come back as events), and renews ``--renewals`` times, 16 at a
time (the agents' workers), each way. It prints, per renewal, the CPU the hub and this process
spent. At 10,000 clusters the fleet sends 148 renewals a second, so every 0.1 ms per renewal is
1.5% of a core for as long as the fleet runs.

    .venv/bin/python bench/heartbeat.py [--leases 500] [--renewals 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from floor import _own_cpu, _process_cpu, hub_process  # noqa: E402  (bench/ is this script's directory)

from ocm_rollout.client.kube import LEASES, NAMESPACES, Kube  # noqa: E402
from ocm_rollout.client.kubeconfig import load_client  # noqa: E402
from ocm_rollout.client.watchcache import WatchCache  # noqa: E402
from ocm_rollout.sandbox.agents import names  # noqa: E402
from ocm_rollout.sandbox.lease_renewer import LeaseRenewer  # noqa: E402

CONCURRENCY = 16


def _lease(namespace: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": names.CLUSTER_LEASE_NAME,
            "namespace": namespace,
            "labels": {names.CLUSTER_NAME_LABEL: namespace},
        },
        "spec": {"holderIdentity": names.CLUSTER_LEASE_NAME, "renewTime": "2026-01-01T00:00:00.000000Z"},
    }


def _stamp(index: int) -> str:
    return f"2026-01-01T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}.{index % 1_000_000:06d}Z"


async def _renewals(
    name: str, leases: int, count: int, offset: int, hub_pid: int, seen: list[int],
    renew: Callable[[str, str], Awaitable[Any]],
) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> None:
        async with gate:
            await renew(f"bench{index % leases}", _stamp(offset + index))

    wanted = seen[0] + count
    hub0, own0, wall0 = _process_cpu(hub_pid), _own_cpu(), time.monotonic()
    await asyncio.gather(*(one(i) for i in range(count)))
    deadline = time.monotonic() + 60
    while seen[0] < wanted and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    hub1, own1, wall1 = _process_cpu(hub_pid), _own_cpu(), time.monotonic()
    hub_ms, own_ms = 1000 * (hub1 - hub0) / count, 1000 * (own1 - own0) / count
    print(
        f"  {name:<34} hub {hub_ms:5.2f} ms  simulation {own_ms:5.2f} ms  together {hub_ms + own_ms:5.2f} ms"
        f"  ({count / (wall1 - wall0):,.0f}/s)",
        flush=True,
    )


async def measure(leases: int, renewals: int, kubeconfig: Path, hub_pid: int) -> None:
    kube = Kube(load_client(str(kubeconfig)), field_manager="ocm-rollout-simulator")
    for index in range(leases):
        namespace = f"bench{index}"
        await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
        await kube.create(LEASES, _lease(namespace), namespace)
    seen = [0]

    def count(kind: str, _obj: Any, _previous: Any) -> None:
        if kind:  # "" is the first listing
            seen[0] += 1

    stop = asyncio.Event()
    watch = WatchCache(Kube(load_client(str(kubeconfig))), LEASES, label_selector=names.CLUSTER_NAME_LABEL, on_change=count)
    task = asyncio.create_task(watch.run(stop))
    await asyncio.wait_for(watch.synced.wait(), 60)
    renewer = LeaseRenewer(kube)
    if not renewer.direct():
        raise SystemExit("the local hub's kubeconfig does not go through LeaseRenewer's own requests")

    async def through_kube(namespace: str, stamp: str) -> Any:
        return await kube.patch(LEASES, names.CLUSTER_LEASE_NAME, {"spec": {"renewTime": stamp}}, namespace)

    async def through_renewer(namespace: str, stamp: str) -> Any:
        return await renewer.renew(namespace, names.CLUSTER_LEASE_NAME, stamp)

    print(f"{leases:,} Leases, {renewals:,} renewals each way, {CONCURRENCY} at a time, 1 Lease watch:")
    await through_renewer("bench0", _stamp(0))  # connections opened outside the measured span
    await _renewals("Kube.patch (kubernetes client)", leases, renewals, 1, hub_pid, seen, through_kube)
    await _renewals("LeaseRenewer (aiohttp)", leases, renewals, renewals + 1, hub_pid, seen, through_renewer)
    await renewer.close()
    stop.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=500, help="cluster namespaces, one Lease each")
    parser.add_argument("--renewals", type=int, default=4000, help="renewals sent each way")
    args = parser.parse_args()
    with hub_process("heartbeat-") as (kubeconfig, pid):
        asyncio.run(measure(args.leases, args.renewals, kubeconfig, pid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
