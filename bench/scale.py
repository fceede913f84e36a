"""Benchmark of ``ocm-rollout up`` at fleet scale, run as a user runs it.

For each fleet size it starts ``ocm-rollout up --clusters N --no-view`` in a fresh directory and
measures, from outside, through the official ``kubernetes`` client:

- start-up: from spawning ``up`` to every ManagedCluster ``Available`` True;
- idle CPU (% of one core, per process of ``up``'s process tree) and RSS, over ``--idle`` seconds;
- a rollout: one Placement over every cluster and one ManifestWorkReplicaSet (Progressive,
  maxConcurrency 20%, a one-ConfigMap template), timed from creating the MWRS to its
  ``PlacementRolledOut`` condition True, next to the ideal the simulated agents' delays allow
  (waves x (applyDelay + progressDuration) of the default profile: 5 x 3 s);
- RSS of every process after the rollout (N clusters and N ManifestWorks) and idle CPU again.

Targets (issue 14): 10,000 clusters Available in <= 60 s; rollout within 1.5x of the ideal;
controller RSS <= 300 MB and hub RSS <= 1 GB at 10,000 clusters and 10,000 works; idle CPU
<= 25% of a core.

    .venv/bin/python bench/scale.py [--clusters 1000,5000,10000] [--idle 20] [--timeout 600]
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


def run(clusters: int, idle: float, timeout: float, extra: list[str]) -> None:
    print(f"== {clusters} clusters", flush=True)
    up = Up(clusters, extra)
    try:
        api = kubernetes.client.CustomObjectsApi(up.client())

        wait_available(api, clusters, timeout)
        print(f"  start-up to all Available: {time.monotonic() - up.started:.1f} s", flush=True)
        _show("idle CPU (% of a core)", cpu_over(up.proc.pid, idle), "%")
        _show("RSS (MB)", rss(up.proc.pid), "")

        api.create_namespaced_custom_object(CLUSTER_GROUP, PLACEMENT_VERSION, NAMESPACE, "placements",
                                            placement("scale"))
        start = time.monotonic()
        api.create_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE, "manifestworkreplicasets",
                                            workset("scale", "scale"))

        def done() -> bool:
            obj: dict[str, Any] = api.get_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE,
                                                   "manifestworkreplicasets", "scale")
            return _rolled_out(obj)

        wait(done, timeout, "the rollout")
        took = time.monotonic() - start
        ideal = math.ceil(100 / int(MAX_CONCURRENCY.rstrip("%"))) * SECONDS_PER_WAVE
        print(f"  rollout (Progressive {MAX_CONCURRENCY}) to Complete: {took:.1f} s; ideal {ideal:.0f} s "
              f"({took / ideal:.2f}x)", flush=True)
        _show(f"RSS with {clusters} works (MB)", rss(up.proc.pid), "")
        _show("idle CPU after the rollout (% of a core)", cpu_over(up.proc.pid, idle), "%")
    finally:
        up.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", default="1000,5000,10000", help="comma-separated fleet sizes")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of each idle CPU sample")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each phase")
    parser.add_argument("up_args", nargs="*", help="extra flags for `ocm-rollout up` (after --)")
    args = parser.parse_args()
    for size in (int(s) for s in args.clusters.split(",") if s.strip()):
        run(size, args.idle, args.timeout, args.up_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
