"""Benchmark of ``ocm-rollout up`` at fleet scale, run as a user runs it.

For each fleet size it starts ``ocm-rollout up --clusters N --no-view`` in a fresh directory and
measures, from outside, through the official ``kubernetes`` client:

- start-up: from spawning ``up`` to every ManagedCluster ``Available`` True;
- idle CPU (% of one core, per process of ``up``'s process tree) and RSS, over ``--idle`` seconds;
- a rollout: one Placement over every cluster and one ManifestWorkReplicaSet (Progressive,
  maxConcurrency 20%, a one-ConfigMap template), timed from creating the MWRS to its
  ``PlacementRolledOut`` condition True, next to the ideal the simulated agents' delays allow
  (waves x (applyDelay + progressDuration) of the default profile: 5 x 3 s);
- RSS of every process after the rollout (N clusters and N ManifestWorks) and idle CPU again;
- the CPU each process spent during the rollout;
- after ``up`` has stopped, ``bench/floor.py``'s floor measured in the same run (``--floor-works``
  works' four writes and their events, scaled to N works on this machine's cores), and the rollout
  as a ratio of it (issue 26's target: at most 1.5x at 10,000 clusters).

``--pyspy DIR`` records every process of ``up`` with py-spy (``--gil --nonblocking``, folded
stacks ``DIR/NAME-N.txt``) during the rollout.

Targets (issue 14): 10,000 clusters Available in <= 60 s; rollout within 1.5x of the ideal;
controller RSS <= 300 MB and hub RSS <= 1 GB at 10,000 clusters and 10,000 works; idle CPU
<= 25% of a core.

    .venv/bin/python bench/scale.py [--clusters 1000,5000,10000] [--idle 20] [--timeout 600]
        [--floor-works 2000] [--pyspy DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes

REPO = Path(__file__).resolve().parents[1]
OCM_ROLLOUT = Path(sys.executable).with_name("ocm-rollout")
CLUSTER_GROUP, CLUSTER_VERSION = "cluster.open-cluster-management.io", "v1"
WORK_GROUP, WORKSET_VERSION = "work.open-cluster-management.io", "v1alpha1"
PLACEMENT_VERSION = "v1beta1"
NAMESPACE = "default"  # `up` binds the `default` and `global` sets here
MAX_CONCURRENCY = "20%"
# The default profile: applyDelay 1 s + progressDuration 2 s per wave.
SECONDS_PER_WAVE = 3.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# What the rollout puts on every cluster (bench/floor.py sends the same).
MANIFEST: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "scale-bench", "namespace": "default"},
    "data": {"version": "1"},
}


@dataclass(frozen=True)
class Sample:
    """CPU seconds and RSS of one process at one instant."""

    name: str
    cpu: float
    rss: int


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "children").read_text()
        except OSError:
            continue
        out.extend(int(child) for child in text.split())
    return out


def _tree(pid: int) -> list[int]:
    pids = [pid]
    index = 0
    while index < len(pids):
        try:
            pids.extend(_children(pids[index]))
        except OSError:
            pass
        index += 1
    return pids


def _name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    words = [a.decode(errors="replace") for a in argv if a]
    if "--controllers" in words and words.index("--controllers") + 1 < len(words):
        return f"{words[words.index('--controllers') + 1]} controller ({pid})"
    if "up" in words:
        return f"hub and up ({pid})"
    if "--agents" in words and words.index("--agents") + 1 < len(words):
        return f"{words[words.index('--agents') + 1]} agents ({pid})"
    for marker in ("--role", "-m"):
        if marker in words and words.index(marker) + 1 < len(words):
            return f"{words[words.index(marker) + 1]} ({pid})"
    return f"{Path(words[0]).name if words else '?'} ({pid})"


def sample(pid: int) -> dict[int, Sample]:
    """CPU seconds and RSS of ``pid`` and every descendant."""
    out: dict[int, Sample] = {}
    for each in _tree(pid):
        try:
            stat = Path(f"/proc/{each}/stat").read_text()
            statm = Path(f"/proc/{each}/statm").read_text().split()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        out[each] = Sample(_name(each), cpu, int(statm[1]) * PAGE_SIZE)
    return out


def cpu_over(pid: int, seconds: float) -> dict[str, float]:
    """% of one core per process of the tree over ``seconds``."""
    before = sample(pid)
    start = time.monotonic()
    time.sleep(seconds)
    after = sample(pid)
    span = time.monotonic() - start
    return {
        s.name: 100.0 * (s.cpu - before[p].cpu) / span for p, s in after.items() if p in before
    }


def rss(pid: int) -> dict[str, float]:
    return {s.name: s.rss / 2**20 for s in sample(pid).values()}


def wait(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - start


def _available(items: list[dict[str, Any]]) -> int:
    count = 0
    for item in items:
        for cond in (item.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "ManagedClusterConditionAvailable" and cond.get("status") == "True":
                count += 1
    return count


def wait_available(api: Any, clusters: int, timeout: float) -> None:
    """Until ``clusters`` ManagedClusters are Available, followed through one watch (listing
    ten thousand clusters over and over would slow the hub it measures)."""
    deadline = time.monotonic() + timeout
    available: set[str] = set()
    version = ""
    while len(available) < clusters:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{len(available)} of {clusters} clusters Available after {timeout:.0f} s")
        stream = kubernetes.watch.Watch().stream(
            api.list_cluster_custom_object, CLUSTER_GROUP, CLUSTER_VERSION, "managedclusters",
            resource_version=version, timeout_seconds=max(int(left), 1),
        )
        try:
            for event in stream:
                obj = event["object"]
                version = str(obj["metadata"].get("resourceVersion") or version)
                name = obj["metadata"]["name"]
                if event["type"] != "DELETED" and _available([obj]):
                    available.add(name)
                else:
                    available.discard(name)
                if len(available) >= clusters:
                    return
        except kubernetes.client.ApiException as exc:
            if exc.status != 410:
                raise
            version = ""


def placement(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{CLUSTER_GROUP}/{PLACEMENT_VERSION}",
        "kind": "Placement",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"clusterSets": ["default"]},
    }


def workset(name: str, placement_name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{WORK_GROUP}/{WORKSET_VERSION}",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "placementRefs": [
                {
                    "name": placement_name,
                    "rolloutStrategy": {
                        "type": "Progressive",
                        "progressive": {"maxConcurrency": MAX_CONCURRENCY},
                    },
                }
            ],
            "manifestWorkTemplate": {
                "workload": {
                    "manifests": [MANIFEST]
                }
            },
        },
    }


def _rolled_out(obj: dict[str, Any]) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PlacementRolledOut":
            return bool(cond.get("status") == "True")
    return False


class Up:
    """``ocm-rollout up`` in a child process."""

    def __init__(self, clusters: int, extra: list[str]) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="scale-")
        self.kubeconfig = Path(self.dir.name) / "kubeconfig"
        self.log = (Path(self.dir.name) / "up.out").open("w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [str(OCM_ROLLOUT), "up", "--clusters", str(clusters), "--no-view",
             "--kubeconfig", str(self.kubeconfig), *extra],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
        )

    def client(self) -> Any:
        wait(self.kubeconfig.exists, 120, "kubeconfig")
        return kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.dir.cleanup()


def _show(title: str, values: dict[str, float], unit: str) -> None:
    parts = ", ".join(f"{name} {value:.0f}{unit}" for name, value in sorted(values.items()))
    print(f"  {title}: {parts}", flush=True)


class Recorder:
    """py-spy recording every process of a tree until ``stop``."""

    def __init__(self, pid: int, directory: Path | None, clusters: int) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        if directory is None:
            return
        directory.mkdir(parents=True, exist_ok=True)
        pyspy = Path(sys.executable).with_name("py-spy")
        for each, what in sample(pid).items():
            label = what.name.split(" (")[0].replace(" ", "-")
            out = directory / f"{label}-{clusters}.txt"
            self.procs.append(subprocess.Popen(
                [str(pyspy), "record", "--gil", "--nonblocking", "--format", "raw", "--rate", "50",
                 "-p", str(each), "-o", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass(frozen=True)
class Figures:
    """What one fleet size measured, for the summary."""

    clusters: int
    startup: float
    rollout: float
    idle: float


def run(clusters: int, idle: float, timeout: float, extra: list[str], pyspy: Path | None) -> Figures:
    print(f"== {clusters} clusters", flush=True)
    up = Up(clusters, extra)
    try:
        api = kubernetes.client.CustomObjectsApi(up.client())

        wait_available(api, clusters, timeout)
        startup = time.monotonic() - up.started
        print(f"  start-up to all Available: {startup:.1f} s", flush=True)
        idle_cpu = cpu_over(up.proc.pid, idle)
        _show("idle CPU (% of a core)", idle_cpu, "%")
        _show("RSS (MB)", rss(up.proc.pid), "")

        api.create_namespaced_custom_object(CLUSTER_GROUP, PLACEMENT_VERSION, NAMESPACE, "placements",
                                            placement("scale"))
        recorder = Recorder(up.proc.pid, pyspy, clusters)
        before = sample(up.proc.pid)
        start = time.monotonic()
        api.create_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE, "manifestworkreplicasets",
                                            workset("scale", "scale"))

        def done() -> bool:
            obj: dict[str, Any] = api.get_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE,
                                                   "manifestworkreplicasets", "scale")
            return _rolled_out(obj)

        wait(done, timeout, "the rollout")
        took = time.monotonic() - start
        after = sample(up.proc.pid)
        recorder.stop()
        spent = {s.name: s.cpu - before[p].cpu for p, s in after.items() if p in before}
        _show("CPU during the rollout (s)", spent, " s")
        ideal = math.ceil(100 / int(MAX_CONCURRENCY.rstrip("%"))) * SECONDS_PER_WAVE
        print(f"  rollout (Progressive {MAX_CONCURRENCY}) to Complete: {took:.1f} s; ideal {ideal:.0f} s "
              f"({took / ideal:.2f}x)", flush=True)
        _show(f"RSS with {clusters} works (MB)", rss(up.proc.pid), "")
        _show("idle CPU after the rollout (% of a core)", cpu_over(up.proc.pid, idle), "%")
        return Figures(clusters, startup, took, sum(idle_cpu.values()))
    finally:
        up.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", default="1000,5000,10000", help="comma-separated fleet sizes")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of each idle CPU sample")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each phase")
    parser.add_argument("--floor-works", type=int, default=2000,
                        help="works bench/floor.py's measurement sends (0: no floor)")
    parser.add_argument("--pyspy", type=Path, help="record every process of `up` during the rollout here")
    parser.add_argument("up_args", nargs="*", help="extra flags for `ocm-rollout up` (after --)")
    args = parser.parse_args()
    figures = [
        run(size, args.idle, args.timeout, args.up_args, args.pyspy)
        for size in (int(s) for s in args.clusters.split(",") if s.strip())
    ]
    summarise(figures, args.floor_works)
    return 0


def summarise(figures: list[Figures], floor_works: int) -> None:
    """The floor measured now, and each rollout as a ratio of it."""
    per_work = 0.0
    if floor_works > 0:
        import floor  # bench/floor.py, which imports this module's MANIFEST: imported late

        print("== floor (bench/floor.py, same run)", flush=True)
        per_work = floor.measure_floor(floor_works, 8, 2)
        print(f"  one work's four writes and their events: {per_work:.2f} ms of CPU", flush=True)
    print("== summary", flush=True)
    for each in figures:
        line = (f"  {each.clusters} clusters: start-up {each.startup:.1f} s, idle CPU {each.idle:.0f}% of a core "
                f"(all processes), rollout {each.rollout:.1f} s")
        if per_work:
            least = floor.floor_seconds(per_work, each.clusters)
            line += f", floor {least:.1f} s, rollout/floor {each.rollout / least:.2f}x (target 1.5x)"
        print(line, flush=True)
    print(f"  load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
