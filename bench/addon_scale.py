"""How the add-on manager's CPU per ManagedClusterAddOn grows with the fleet (issue 26).

For each strategy (``--strategies``, default ``All,Progressive``) and each fleet size
(``--clusters``, default ``1000,10000``), in one run of this script: a fresh local hub
(``python -m ocm_rollout.sandbox.server``) gets the ManagedClusters and their namespaces, one
Placement over all of them with its decision pages written by hand (100 per page, one decision
group) and an AddOnDeploymentConfig (ADC); then the add-on manager starts in a process of its own
(``ocm-rollout run --controllers addon``), as in a deployment, with ``bench/addon.py``'s helper
agent (``ManifestApplied`` on each new MCA, a deploy work carrying the MCA's desired hashes, ready
at once). Once the controller is idle (its caches listed), this script creates a Placements-type
ClusterManagementAddOn (CMA) over the Placement with the ADC and the strategy (``Progressive``:
maxConcurrency 20%), and measures the controller process's CPU seconds (``/proc/PID/stat`` utime +
stime, children excluded: it has none) over two phases:

- install: CMA created -> its installProgressions condition Progressing False/Completed
  ("N/N completed with no errors") for the ADC's hash (every MCA created, given the desired
  configuration under the strategy, applied by the agent);
- update: the ADC changed -> Completed again for the new hash (every MCA rolled under the strategy).

Each phase's CPU is divided by the number of MCAs; the table gives, per strategy and phase, CPU
per MCA at each size and the ratio of the largest size to the smallest, next to the target:
**CPU per MCA at 10,000 <= 1.2x CPU per MCA at 1,000**. ``--runs N`` measures every size N
times (one after the other, each on a fresh hub): the table has a row per run, and the target is
judged on the median ratio (the smaller fleet's figure moves by up to a third between runs on a
shared machine). The ``start`` column is the CPU the
process spent from its start to idle (imports, listing the clusters), reported but not divided.

``--pyspy DIR`` records the controller with py-spy during the largest fleet of each strategy
(``DIR/<strategy>-<n>.txt``, folded stacks; ``.venv/bin/pip install py-spy`` first); it slows the
controller down, so read its figures as a profile, not as a result.

    .venv/bin/python bench/addon_scale.py [--clusters 1000,10000] [--strategies All,Progressive]
                                          [--phases install,update] [--runs 1] [--timeout 3600]
                                          [--pyspy DIR]

A 10,000-cluster run takes several minutes on 2 cores (the hub, the agent and the controller share
them); other load moves wall times a lot, CPU seconds much less, and the ratio is taken within one run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.addon import (  # noqa: E402
    ADDON,
    CONFIG,
    DECISIONS_PER_PAGE,
    NAMESPACE,
    PLACEMENT,
    Agent,
    McaWatch,
    adc_body,
    completed,
    cpu_seconds,
    free_port,
    parallel,
    reconciles,
    start,
    wait_for,
    wait_idle,
)
from bench.mwrs import start_hub  # noqa: E402
from ocm_rollout.api.addon_hashing import spec_hash  # noqa: E402
from ocm_rollout.api.constants import ADDON_DEPLOYMENT_CONFIG_RESOURCE, ADDON_GROUP  # noqa: E402
from ocm_rollout.client.kube import (  # noqa: E402
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENTS,
)
from tests.integration.helpers import Api, decide  # noqa: E402

RATIO_TARGET = 1.2
CONCURRENCY = 16
STRATEGIES: dict[str, JSON] = {
    "All": {"type": "All"},
    "Progressive": {"type": "Progressive", "progressive": {"maxConcurrency": "20%"}},
}


@dataclass
class Phase:
    cpu: float
    seconds: float
    passes: dict[str, int] = field(default_factory=dict)


@dataclass
class Run:
    strategy: str
    clusters: int
    start_cpu: float
    phases: dict[str, Phase] = field(default_factory=dict)

    def per_mca_ms(self, phase: str) -> float:
        return 1000 * self.phases[phase].cpu / self.clusters


def one_run(strategy: str, n: int, phases: list[str], timeout: float, pyspy: Path | None) -> Run:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        hub, kubeconfig = start_hub(tmp, max(10_000, 20 * n))
        controller: subprocess.Popen[bytes] | None = None
        spy: subprocess.Popen[bytes] | None = None
        agent: Agent | None = None
        watch: McaWatch | None = None
        pool = concurrent.futures.ThreadPoolExecutor(CONCURRENCY, thread_name_prefix="bench-setup")
        try:
            wait_for(lambda: (kubeconfig.exists() and kubeconfig.stat().st_size > 0) or hub.poll() is not None,
                     60, "the local hub")
            if hub.poll() is not None:
                raise SystemExit(f"the local hub exited with {hub.returncode}: {(tmp / 'hub.log').read_text()[-2000:]}")
            client = Api(str(kubeconfig), pool=CONCURRENCY * 2)
            clusters = [f"cluster{i:05d}" for i in range(1, n + 1)]
            parallel(pool, [functools.partial(client.create, NAMESPACES, {"metadata": {"name": c}}) for c in clusters])
            parallel(pool, [functools.partial(client.create, MANAGED_CLUSTERS, {"metadata": {"name": c}, "spec": {"hubAcceptsClient": True}})
                            for c in clusters])
            client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            client.create(PLACEMENTS, {"metadata": {"name": PLACEMENT, "namespace": NAMESPACE}, "spec": {}}, NAMESPACE)
            decide(client, NAMESPACE, PLACEMENT, clusters, per_page=DECISIONS_PER_PAGE)
            adc = client.create(ADDON_DEPLOYMENT_CONFIGS, {"metadata": {"name": CONFIG, "namespace": NAMESPACE},
                                                           "spec": adc_body("v1")}, NAMESPACE)
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            env.pop("KUBECONFIG", None)
            metrics_port = free_port()
            controller = start(
                [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", "addon", "--kubeconfig", str(kubeconfig),
                 "--no-leader-elect", "--health-bind-address", "0", "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
                 "--log-level", "warning"],
                tmp / "controller.log", env,
            )
            agent = Agent(Api(str(kubeconfig), pool=CONCURRENCY * 2), CONCURRENCY)
            watch = McaWatch(str(kubeconfig), agent.offer)
            watch.start()

            def alive() -> None:
                assert controller is not None
                if controller.poll() is not None:
                    raise SystemExit(f"the controller exited with {controller.returncode}: "
                                     f"{(tmp / 'controller.log').read_text()[-2000:]}")

            def cpu() -> float:
                assert controller is not None
                value = cpu_seconds(controller.pid)
                if value is None:
                    raise SystemExit("cannot read the controller's CPU time (/proc)")
                return value

            def metrics_up() -> bool:
                alive()
                try:
                    reconciles(metrics_port)
                except OSError:
                    return False
                return True

            wait_for(metrics_up, 120, "the controller's metrics endpoint", interval=0.2)
            wait_idle(controller.pid, timeout=120)
            run = Run(strategy, n, cpu())
            if pyspy is not None:
                pyspy.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw",
                                        "-o", str(pyspy / f"{strategy}-{n}.txt"), "--pid", str(controller.pid),
                                        "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            def measure(phase: str, act: Callable[[], str]) -> None:
                """``act`` starts the phase and returns the spec hash the CMA must complete with."""
                before, passes_before, began = cpu(), reconciles(metrics_port), time.perf_counter()
                expected = act()

                def done() -> bool:
                    alive()
                    return completed(client, n, expected)

                wait_for(done, timeout, f"{phase}: the CMA to complete over {n} clusters", interval=0.2)
                seconds = time.perf_counter() - began
                used = cpu() - before
                passes_after = reconciles(metrics_port)
                passes = {what: int(passes_after.get(q, 0) - passes_before.get(q, 0)) for what, q in (("CMA", "addon"), ("MCA", "addon-mca"))}
                run.phases[phase] = Phase(used, seconds, passes)
                print(f"    {strategy} {n}: {phase} {used:.1f} CPU s in {seconds:.1f} s = {1000 * used / n:.2f} ms per MCA "
                      f"({passes['CMA']} CMA passes, {passes['MCA']} MCA passes)", flush=True)

            adc_ref = {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE, "namespace": NAMESPACE, "name": CONFIG}
            cma = {"metadata": {"name": ADDON}, "spec": {
                "addOnMeta": {"displayName": ADDON},
                "supportedConfigs": [{"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE}],
                "installStrategy": {"type": "Placements", "placements": [
                    {"namespace": NAMESPACE, "name": PLACEMENT, "configs": [adc_ref], "rolloutStrategy": STRATEGIES[strategy]},
                ]},
            }}
            def install() -> str:
                client.create(CLUSTER_MANAGEMENT_ADDONS, cma)
                return spec_hash(adc)

            def update() -> str:
                return spec_hash(client.patch(ADDON_DEPLOYMENT_CONFIGS, CONFIG, {"spec": adc_body("v2")}, NAMESPACE))

            measure("install", install)
            if "update" in phases:
                wait_idle(controller.pid, timeout=120)
                measure("update", update)
            if agent.errors:
                print(f"    (agent: {len(agent.errors)} errors, e.g. {agent.errors[0]})", flush=True)
            return run
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
                try:
                    spy.wait(30)
                except subprocess.TimeoutExpired:
                    spy.kill()
            if watch is not None:
                watch.close()
            if agent is not None:
                agent.close()
            pool.shutdown(wait=True, cancel_futures=True)
            if controller is not None:
                controller.terminate()
                controller.wait(30)
            hub.terminate()
            hub.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", default="1000,10000", help="fleet sizes, comma-separated (smallest first)")
    parser.add_argument("--strategies", default="All,Progressive", help=f"of {', '.join(STRATEGIES)}")
    parser.add_argument("--phases", default="install,update", help="install, or install,update")
    parser.add_argument("--runs", type=int, default=1, help="measurements of every size; the median ratio is judged")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--pyspy", type=Path, help="record the largest fleet with py-spy into this directory")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.clusters.split(","))
    strategies = [s.strip() for s in args.strategies.split(",")]
    phases = [p.strip() for p in args.phases.split(",")]
    print(f"add-on manager CPU per MCA (python {sys.version.split()[0]}, {os.cpu_count()} CPUs); "
          f"sizes {sizes}, strategies {strategies}, phases {phases}", flush=True)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    # (run index, strategy) -> one Run per size, smallest first
    measured: dict[tuple[int, str], list[Run]] = {}
    for index in range(args.runs):
        for strategy in strategies:
            for n in sizes:
                spy = args.pyspy if args.pyspy is not None and n == sizes[-1] and index == 0 else None
                measured.setdefault((index, strategy), []).append(one_run(strategy, n, phases, args.timeout, spy))
    ok = True
    print()
    print(f"{'strategy':<12} {'phase':<8} {'run':>4} " + " ".join(f"{f'{n} ms/MCA':>14}" for n in sizes)
          + f" {'start CPU s':>14} {'ratio':>7}  target")
    for strategy in strategies:
        for phase in phases:
            ratios = []
            for index in range(args.runs):
                mine = measured[(index, strategy)]
                per = [r.per_mca_ms(phase) for r in mine]
                ratios.append(per[-1] / per[0])
                print(f"{strategy:<12} {phase:<8} {index + 1:>4} " + " ".join(f"{v:14.3f}" for v in per)
                      + f" {' / '.join(f'{r.start_cpu:.1f}' for r in mine):>14} {ratios[-1]:7.2f}")
            median = statistics.median(ratios)
            met = median <= RATIO_TARGET
            ok &= met
            label = "median" if args.runs > 1 else ""
            print(f"{strategy:<12} {phase:<8} {label:>{4 + 15 * len(sizes) + 15}} {median:7.2f}  <= {RATIO_TARGET} "
                  + ("OK" if met else "MISSED"))
    print(f"targets: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
