"""Benchmark of the ManifestWorkReplicaSet controller on the local hub.

The hub (``python -m ocm_rollout.sandbox.server``) and the controller (``ocm-rollout run --controllers
workset``) each run in their own process, as they would in a deployment. This process registers
the cluster namespaces, measures the hub's raw ManifestWork create rate (the official client,
``--concurrency`` requests in flight), then times, for an MWRS over all clusters:

- strategy All: from creating the MWRS to ``status.summary.total == N``;
- strategy Progressive with maxConcurrency 10%: the same, with a minimal work agent in this
  process that reports every new work generation as succeeded at once (Applied, Available,
  Progressing False), so the time is the controller's (plus the agent's round trips).

and prints the controller's ManifestWork writes per second next to the raw rate.
Target (issue 6): the controller reaches >= 70% of the raw rate for All.

    .venv/bin/python bench/mwrs.py [--clusters 1000] [--concurrency 16] [--runs 3]

Each run starts a fresh hub and controller; the figures of every run and the median are printed
(the machine's other load moves single runs by +-15%).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import kubernetes

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocm_rollout.client.kube import (  # noqa: E402
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    NAMESPACES,
    PLACEMENTS,
)
from ocm_rollout.client.kubeconfig import load_client  # noqa: E402
from tests.integration.helpers import Api, decide  # noqa: E402

TEMPLATE: JSON = {
    "workload": {
        "manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench", "namespace": "default"},
             "data": {"key": "value"}}
        ]
    }
}
DECISIONS_PER_PAGE = 100


def start(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    return subprocess.Popen(cmd, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def start_hub(tmp: Path, history: int) -> tuple[subprocess.Popen[bytes], Path]:
    """The local hub in its own process, keeping ``history`` watch events; it writes its
    kubeconfig into ``tmp`` (returned with the process: wait for it with ``wait_file``)."""
    kubeconfig = tmp / "kubeconfig"
    cmd = [sys.executable, "-m", "ocm_rollout.sandbox.server", "--port", "0", "--kubeconfig", str(kubeconfig),
           "--history", str(history)]
    return start(cmd, tmp / "hub.log"), kubeconfig


def create_mwrs(client: Api, ns: str, strategy: JSON) -> None:
    """The bench's MWRS ``bench`` in ``ns``: placement ``fleet`` under ``strategy``, ``TEMPLATE``."""
    client.create(MANIFEST_WORK_REPLICA_SETS, {"metadata": {"name": "bench", "namespace": ns}, "spec": {
        "placementRefs": [{"name": "fleet", "rolloutStrategy": strategy}],
        "manifestWorkTemplate": TEMPLATE,
    }}, ns)


def wait_file(path: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def parallel(pool: concurrent.futures.ThreadPoolExecutor, calls: list[Any]) -> float:
    started = time.perf_counter()
    for future in [pool.submit(call) for call in calls]:
        future.result()
    return time.perf_counter() - started


def setup_placement(client: Api, ns: str, clusters: list[str]) -> None:
    client.create(NAMESPACES, {"metadata": {"name": ns}})
    client.create(PLACEMENTS, {"metadata": {"name": "fleet", "namespace": ns}, "spec": {}}, ns)
    decide(client, ns, "fleet", clusters, per_page=DECISIONS_PER_PAGE)


def time_rollout(client: Api, ns: str, strategy: JSON, total: int, timeout: float) -> float:
    started = time.perf_counter()
    create_mwrs(client, ns, strategy)
    deadline = started + timeout
    while time.perf_counter() < deadline:
        status = client.get(MANIFEST_WORK_REPLICA_SETS, "bench", ns).get("status") or {}
        if (status.get("summary") or {}).get("total") == total:
            return time.perf_counter() - started
        time.sleep(0.02)
    raise SystemExit(f"timed out: {ns} did not reach summary.total == {total} in {timeout}s")


class CreationClock:
    """Watches the works of one owner and notes when the first and the last one appeared."""

    def __init__(self, kubeconfig: str, owner: str, expected: int) -> None:
        self.kubeconfig = kubeconfig
        self.owner = owner
        self.expected = expected
        self.times: list[float] = []
        self.done = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        api = kubernetes.client.CustomObjectsApi(load_client(self.kubeconfig))
        self.ready.set()
        seen: set[tuple[str, str]] = set()
        while not self.done.is_set():
            for event in kubernetes.watch.Watch().stream(
                api.list_cluster_custom_object, "work.open-cluster-management.io", "v1", "manifestworks",
                label_selector=f"work.open-cluster-management.io/manifestworkreplicaset={self.owner}",
                timeout_seconds=2,
            ):
                meta = event["object"]["metadata"]
                key = (meta["namespace"], meta["name"])
                if event["type"] == "ADDED" and key not in seen:
                    seen.add(key)
                    self.times.append(time.perf_counter())
                    if len(seen) >= self.expected:
                        self.done.set()
                        break

    def start(self) -> None:
        self.thread.start()
        self.ready.wait(10)

    def write_seconds(self) -> float:
        self.done.wait(60)
        return self.times[-1] - self.times[0]


class Agent:
    """Reports every new generation of the benchmark's works as succeeded, at once."""

    def __init__(self, kubeconfig: str, client: Api, owner: str, workers: int) -> None:
        self.kubeconfig = kubeconfig
        self.client = client
        self.owner = owner
        self.pool = concurrent.futures.ThreadPoolExecutor(workers)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()

    def _succeed(self, ns: str, name: str, generation: int) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [
            {"type": t, "status": s, "observedGeneration": generation, "lastTransitionTime": now,
             "reason": "Bench", "message": ""}
            for t, s in (("Applied", "True"), ("Available", "True"), ("Progressing", "False"))
        ]
        self.client.patch_status(MANIFEST_WORKS, name, {"status": {"conditions": conditions}}, ns)

    def _run(self) -> None:
        api = kubernetes.client.CustomObjectsApi(load_client(self.kubeconfig))
        seen: set[tuple[str, str, int]] = set()
        self.ready.set()
        while not self.stop.is_set():
            for event in kubernetes.watch.Watch().stream(
                api.list_cluster_custom_object, "work.open-cluster-management.io", "v1", "manifestworks",
                label_selector=f"work.open-cluster-management.io/manifestworkreplicaset={self.owner}",
                timeout_seconds=2,
            ):
                obj = event["object"]
                meta = obj["metadata"]
                key = (meta["namespace"], meta["name"], meta.get("generation", 0))
                if event["type"] in ("ADDED", "MODIFIED") and key not in seen:
                    seen.add(key)
                    self.pool.submit(self._succeed, *key)
                if self.stop.is_set():
                    break

    def start(self) -> None:
        self.thread.start()
        self.ready.wait(10)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.pool.shutdown(wait=True)


def one_run(n: int, concurrency: int, timeout: float) -> tuple[float, float, float, float]:
    """(raw create seconds, All seconds, All write-phase seconds, Progressive seconds)."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        hub, kubeconfig = start_hub(tmp, max(10_000, 20 * n))
        controller: subprocess.Popen[bytes] | None = None
        try:
            wait_file(kubeconfig, hub, "the local hub")
            client = Api(str(kubeconfig), pool=concurrency * 2)
            pool = concurrent.futures.ThreadPoolExecutor(concurrency)
            clusters = [f"cluster{i}" for i in range(1, n + 1)]
            parallel(pool, [lambda c=c: client.create(NAMESPACES, {"metadata": {"name": c}}) for c in clusters])

            raw_seconds = parallel(pool, [
                lambda c=c: client.create(MANIFEST_WORKS, {"metadata": {"name": "raw", "namespace": c,
                                                                        "labels": {"bench": "raw"}},
                                                           "spec": TEMPLATE}, c)
                for c in clusters
            ])

            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            env.pop("KUBECONFIG", None)
            controller = subprocess.Popen(
                [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", "workset", "--kubeconfig",
                 str(kubeconfig), "--no-leader-elect", "--health-bind-address", "0", "--metrics-bind-address", "0",
                 "--log-level", "warning"],
                cwd=REPO, env=env, stdout=(tmp / "controller.log").open("wb"), stderr=subprocess.STDOUT,
            )
            # Warm-up: the controller has started and listed everything once this one is done.
            setup_placement(client, "bench-warmup", clusters[:1])
            time_rollout(client, "bench-warmup", {"type": "All"}, 1, timeout)

            setup_placement(client, "bench-all", clusters)
            clock = CreationClock(str(kubeconfig), "bench-all.bench", n)
            clock.start()
            all_seconds = time_rollout(client, "bench-all", {"type": "All"}, n, timeout)
            write_seconds = clock.write_seconds()

            setup_placement(client, "bench-progressive", clusters)
            agent = Agent(str(kubeconfig), client, "bench-progressive.bench", concurrency)
            agent.start()
            try:
                progressive_seconds = time_rollout(
                    client, "bench-progressive",
                    {"type": "Progressive", "progressive": {"maxConcurrency": "10%"}}, n, timeout,
                )
            finally:
                agent.close()
            pool.shutdown()
        finally:
            if controller is not None:
                controller.terminate()
                controller.wait(30)
            hub.terminate()
            hub.wait(30)
    return raw_seconds, all_seconds, write_seconds, progressive_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight for the raw rate")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    n = args.clusters
    ratios: list[float] = []
    end_to_end: list[float] = []
    progressive_ratios: list[float] = []
    print(f"clusters: {n}; raw = the hub's ManifestWork creates with {args.concurrency} in flight")
    for run in range(1, args.runs + 1):
        raw_seconds, all_seconds, write_seconds, progressive_seconds = one_run(n, args.concurrency, args.timeout)
        raw_rate, write_rate = n / raw_seconds, (n - 1) / write_seconds
        ratios.append(write_rate / raw_rate)
        end_to_end.append(n / all_seconds / raw_rate)
        progressive_ratios.append(n / progressive_seconds / raw_rate)
        print(
            f"run {run}: raw {raw_rate:.0f} works/s | All: {all_seconds:.2f}s from creating the MWRS to "
            f"summary.total == {n} ({n / all_seconds:.0f} works/s end to end = {100 * end_to_end[-1]:.0f}% of raw); "
            f"the controller writes at {write_rate:.0f} works/s = {100 * ratios[-1]:.0f}% of raw | "
            f"Progressive 10%: {progressive_seconds:.2f}s (10 waves, agent included) = "
            f"{100 * progressive_ratios[-1]:.0f}% of raw",
            flush=True,
        )
    print(
        f"median: the controller writes at {100 * statistics.median(ratios):.0f}% of the raw create rate "
        f"(target >= 70%); All end to end {100 * statistics.median(end_to_end):.0f}%; "
        f"Progressive end to end {100 * statistics.median(progressive_ratios):.0f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
