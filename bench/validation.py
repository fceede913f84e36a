"""Benchmark: what a verified rollout costs the ManifestWorkReplicaSet controller per cluster.

The hub (``python -m ocm_rollout.sandbox.server``) and the controller (``ocm-rollout run
--controllers workset``) run in their own processes; this process plays the work agent (every
new work generation succeeds at once, with one status feedback value) and a Prometheus HTTP API
(a stand-in answering every query with a healthy error ratio). For an MWRS over all clusters
with strategy All it rolls out, on fresh namespaces of the same hub and controller:

- ``plain``: no checks;
- ``checked``: a feedback check and a metric check (``count`` measurements, ``interval`` apart)
  on every cluster;

and prints, for each, the time from creating the MWRS to ``PlacementRolledOut`` Complete and the
controller's CPU seconds over that time, then the cost of validation per cluster: the CPU
difference divided by the clusters (and by the measurements taken).

    .venv/bin/python bench/validation.py [--clusters 1000] [--count 1] [--runs 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.mwrs import TEMPLATE, Agent, parallel, setup_placement, start_hub, wait_file  # noqa: E402
from bench.scale import sample  # noqa: E402
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS, NAMESPACES  # noqa: E402
from tests.integration.fake_prometheus import FakePrometheus  # noqa: E402
from tests.integration.helpers import Api  # noqa: E402


def controller_cpu(pid: int) -> float:
    return sum(s.cpu for s in sample(pid).values())


def strategy(prometheus: str | None, count: int) -> JSON:
    if prometheus is None:
        return {"type": "All"}
    return {"type": "All", "validation": {"checks": [
        {"name": "available", "feedback": {"successCondition": 'conditions["Available"].status == "True"'}},
        {"name": "errors", "metric": {
            "provider": {"address": prometheus}, "query": "max(error_ratio{cluster={{cluster}}})",
            "successCondition": "size(result) == 0 || result[0] < 0.05", "count": count, "interval": "1s"}},
    ]}}


def rolled_out(client: Api, ns: str) -> bool:
    status = client.get(MANIFEST_WORK_REPLICA_SETS, "bench", ns).get("status") or {}
    return any(c.get("type") == "PlacementRolledOut" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def one_rollout(client: Api, kubeconfig: str, pid: int, ns: str, clusters: list[str], spec: JSON,
                timeout: float) -> tuple[float, float]:
    """(seconds, controller CPU seconds) from creating the MWRS to PlacementRolledOut True."""
    setup_placement(client, ns, clusters)
    agent = Agent(kubeconfig, client, f"{ns}.bench", 16)
    agent.start()
    try:
        cpu0, started = controller_cpu(pid), time.perf_counter()
        client.create(MANIFEST_WORK_REPLICA_SETS, {"metadata": {"name": "bench", "namespace": ns}, "spec": {
            "placementRefs": [{"name": "fleet", "rolloutStrategy": spec}], "manifestWorkTemplate": TEMPLATE,
        }}, ns)
        while not rolled_out(client, ns):
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"timed out: {ns} not rolled out in {timeout}s")
            time.sleep(0.05)
        return time.perf_counter() - started, controller_cpu(pid) - cpu0
    finally:
        agent.close()


def one_run(n: int, count: int, timeout: float) -> tuple[tuple[float, float], tuple[float, float], int]:
    with tempfile.TemporaryDirectory() as tmp_name, FakePrometheus() as prometheus:
        tmp = Path(tmp_name)
        hub, kubeconfig = start_hub(tmp, max(10_000, 40 * n))
        controller: subprocess.Popen[bytes] | None = None
        try:
            wait_file(kubeconfig, hub, "the local hub")
            client = Api(str(kubeconfig), pool=32)
            pool = concurrent.futures.ThreadPoolExecutor(16)
            clusters = [f"cluster{i}" for i in range(1, n + 1)]
            parallel(pool, [lambda c=c: client.create(NAMESPACES, {"metadata": {"name": c}}) for c in clusters])
            pool.shutdown()
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            env.pop("KUBECONFIG", None)
            controller = subprocess.Popen(
                [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", "workset", "--kubeconfig",
                 str(kubeconfig), "--no-leader-elect", "--health-bind-address", "0", "--metrics-bind-address", "0",
                 "--log-level", "warning"],
                cwd=REPO, env=env, stdout=(tmp / "controller.log").open("wb"), stderr=subprocess.STDOUT,
            )
            # Warm-up, also of the checks (the CEL parser and environment are built on first use).
            one_rollout(client, str(kubeconfig), controller.pid, "warmup", clusters[:1],
                        strategy(prometheus.address, 1), timeout)
            plain = one_rollout(client, str(kubeconfig), controller.pid, "plain", clusters, strategy(None, 1), timeout)
            queries = len(prometheus.queries)
            checked = one_rollout(client, str(kubeconfig), controller.pid, "checked", clusters,
                                  strategy(prometheus.address, count), timeout)
            return plain, checked, len(prometheus.queries) - queries
        finally:
            if controller is not None:
                controller.terminate()
                controller.wait(30)
            hub.terminate()
            hub.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--count", type=int, default=1, help="measurements per metric check")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    n = args.clusters
    per_cluster: list[float] = []
    print(f"clusters: {n}; strategy All; checked = a feedback check + a metric check of {args.count} measurement(s)")
    for run in range(1, args.runs + 1):
        (plain_s, plain_cpu), (checked_s, checked_cpu), queries = one_run(n, args.count, args.timeout)
        extra = (checked_cpu - plain_cpu) / n
        per_cluster.append(extra)
        print(
            f"run {run}: plain {plain_s:.1f}s, controller CPU {plain_cpu:.2f}s ({1000 * plain_cpu / n:.2f} ms/cluster) | "
            f"checked {checked_s:.1f}s, controller CPU {checked_cpu:.2f}s ({1000 * checked_cpu / n:.2f} ms/cluster), "
            f"{queries} queries | validation costs {1000 * extra:.2f} ms of controller CPU per cluster "
            f"({1000 * extra / max(queries / n, 1):.2f} ms per measurement)",
            flush=True,
        )
    print(f"median: validation costs {1000 * statistics.median(per_cluster):.2f} ms of controller CPU per cluster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
