"""Benchmark: does the ManifestWorkReplicaSet controller's cost follow the works it writes, not the
fleet's size? Its CPU seconds per ManifestWork at two fleet sizes, in one run.

For each size in ``--clusters`` (default 1,000 and 10,000), on a fresh local hub (its own process)
with that many cluster namespaces and one Placement deciding them all (pages of 100), the
controller (``ocm-rollout run --controllers workset``, its own process) rolls out one MWRS:

- **All**: from creating the MWRS until every work exists and the controller has been idle for
  ``--settle`` seconds (its own writes' watch events included);
- **Progressive** (``maxConcurrency`` ``--max-concurrency``, default 20%): a minimal agent in this
  process reports every new work generation as succeeded at once (Applied, Available,
  Progressing False); until every work succeeded in the MWRS's summary and the controller has
  been idle for ``--settle`` seconds.

The controller's CPU (utime + stime from ``/proc``) over each rollout, divided by the number of
works, is its cost per work; the last lines print the largest size's per-work cost as a ratio of
the smallest's. Target (issue 26): at most 1.2x, for All and for Progressive. The controller's
start-up and the warm-up rollout (one cluster) are outside the measured spans.

    .venv/bin/python bench/mwrs_scale.py [--clusters 1000,10000] [--runs 1] [--profile DIR]

``--profile DIR`` records the controller with py-spy (``pip install py-spy``) into
``DIR/mwrs-<size>.folded`` (folded stacks, for a flame graph), which slows it down: figures taken
with it are not comparable.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.addon import free_port, reconciles  # noqa: E402
from bench.mwrs import Agent, create_mwrs, parallel, setup_placement, start_hub, wait_file  # noqa: E402
from bench.scale import sample  # noqa: E402
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS, NAMESPACES  # noqa: E402
from tests.integration.helpers import Api  # noqa: E402

# The controller counts as idle once its CPU grew by less than this over a settle period.
IDLE_CPU_SECONDS = 0.05


def passes(metrics_port: int, wait: float = 300.0) -> float:
    """The controller's finished workset passes so far (waiting for its metrics endpoint to
    answer: on a loaded machine the controller takes a while to start)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return reconciles(metrics_port).get("workset", 0.0)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def cpu_of(pid: int) -> float:
    return sample(pid)[pid].cpu


def summary(client: Api, ns: str) -> JSON:
    status = client.get(MANIFEST_WORK_REPLICA_SETS, "bench", ns).get("status") or {}
    return status.get("summary") or {}


def settle(pid: int, seconds: float) -> float:
    """Wait until ``pid`` spent (almost) no CPU over ``seconds``; its CPU then."""
    before = cpu_of(pid)
    while True:
        time.sleep(seconds)
        now = cpu_of(pid)
        if now - before < IDLE_CPU_SECONDS:
            return now
        before = now


def rollout(client: Api, pid: int, metrics_port: int, ns: str, strategy: JSON, done: str, n: int, timeout: float,
            settle_seconds: float) -> tuple[float, float, float]:
    """(controller CPU seconds, wall seconds, passes) from creating the MWRS until
    ``summary[done] == n`` and the controller is idle again."""
    cpu_before = settle(pid, settle_seconds)
    passes_before = passes(metrics_port)
    started = time.perf_counter()
    create_mwrs(client, ns, strategy)
    deadline = started + timeout
    while summary(client, ns).get(done) != n:
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out: {ns} did not reach summary.{done} == {n} in {timeout}s")
        time.sleep(0.1)
    wall = time.perf_counter() - started
    cpu = settle(pid, settle_seconds) - cpu_before
    return cpu, wall, passes(metrics_port) - passes_before


def one_size(n: int, args: argparse.Namespace) -> dict[str, tuple[float, float, float]]:
    """Per strategy: (controller CPU seconds, wall seconds, passes) over ``n`` works."""
    results: dict[str, tuple[float, float, float]] = {}
    metrics_port = free_port()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        hub, kubeconfig = start_hub(tmp, max(10_000, 20 * n))
        controller: subprocess.Popen[bytes] | None = None
        spy: subprocess.Popen[bytes] | None = None
        try:
            wait_file(kubeconfig, hub, "the local hub")
            client = Api(str(kubeconfig), pool=32)
            pool = concurrent.futures.ThreadPoolExecutor(16)
            clusters = [f"cluster{i}" for i in range(1, n + 1)]
            parallel(pool, [lambda c=c: client.create(NAMESPACES, {"metadata": {"name": c}}) for c in clusters])
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            env.pop("KUBECONFIG", None)
            controller = subprocess.Popen(
                [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", "workset", "--kubeconfig",
                 str(kubeconfig), "--no-leader-elect", "--health-bind-address", "0",
                 "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
                 "--log-level", "warning"],
                cwd=REPO, env=env, stdout=(tmp / "controller.log").open("wb"), stderr=subprocess.STDOUT,
            )
            setup_placement(client, "bench-warmup", clusters[:1])
            rollout(client, controller.pid, metrics_port, "bench-warmup", {"type": "All"}, "total", 1, args.timeout, args.settle)
            if args.profile:
                out = Path(args.profile) / f"mwrs-{n}.folded"
                spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--gil", "-f", "raw", "-r", "50", "-o", str(out), "--pid",
                                        str(controller.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)

            setup_placement(client, "bench-all", clusters)
            results["All"] = rollout(client, controller.pid, metrics_port, "bench-all", {"type": "All"}, "total", n,
                                     args.timeout, args.settle)

            setup_placement(client, "bench-progressive", clusters)
            agent = Agent(str(kubeconfig), client, "bench-progressive.bench", 16)
            agent.start()
            try:
                strategy = {"type": "Progressive", "progressive": {"maxConcurrency": args.max_concurrency}}
                results["Progressive"] = rollout(client, controller.pid, metrics_port, "bench-progressive", strategy,
                                                 "applied", n, args.timeout, args.settle)
            finally:
                agent.close()
            pool.shutdown()
        finally:
            if spy is not None:
                spy.send_signal(2)
                spy.wait(60)
            if controller is not None:
                controller.terminate()
                controller.wait(30)
            hub.terminate()
            hub.wait(30)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", default="1000,10000", help="comma-separated fleet sizes, smallest first")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--max-concurrency", default="20%")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds without controller CPU that end a span")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--profile", metavar="DIR", help="record the controller with py-spy into DIR")
    args = parser.parse_args()
    sizes = [int(s) for s in args.clusters.split(",")]
    for run in range(1, args.runs + 1):
        per_work: dict[str, dict[int, float]] = {}
        for n in sizes:
            for strategy, (cpu, wall, count) in one_size(n, args).items():
                per_work.setdefault(strategy, {})[n] = cpu / n
                print(f"run {run}: {strategy:<11} {n:>6} works: controller CPU {cpu:7.2f} s = "
                      f"{1000 * cpu / n:6.3f} ms per work; {wall:7.2f} s wall; {count:.0f} passes", flush=True)
        small, large = sizes[0], sizes[-1]
        for strategy, costs in per_work.items():
            ratio = costs[large] / costs[small]
            print(f"run {run}: {strategy}: CPU per work at {large} = {ratio:.2f}x that at {small} "
                  f"(target <= 1.2x){'' if ratio <= 1.2 else '  ABOVE TARGET'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
