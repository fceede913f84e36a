"""The same fleet-wide rollout on both hubs of ``ocm-rollout up``: the embedded local hub and a
real control plane (``--hub kube-apiserver``: etcd, kube-apiserver, kube-controller-manager, built
by ``make kube-hub``), one after the other in one run.

For each hub it starts ``ocm-rollout up --clusters N --no-view --hub HUB`` (``bench/scale.py``'s
``Up``), waits for every cluster Available, measures the hub's idle CPU over ``--idle`` seconds,
then applies bench/scale.py's rollout (one Placement over every cluster, one Progressive
ManifestWorkReplicaSet, maxConcurrency 20%, a one-ConfigMap template) and measures, from applying
the ManifestWorkReplicaSet until it is done (checked every half second: its ``PlacementRolledOut``
True and its summary counting every work applied, then a list of its ManifestWorks finding every
one ``Applied``):

- the rollout's time;
- the hub's CPU seconds during the rollout (``/proc/PID/stat``);
- the hub's RSS: before the rollout, the peak of the half-second samples during it, at its end,
  and the sum of the processes' own lifetime peaks (``VmHWM`` in ``/proc/PID/status``);

and the ratios kube-apiserver / local. The real hub is the sum over its etcd, kube-apiserver and
kube-controller-manager processes (children of ``up``). The local hub is served inside ``up``'s
own process, so its figures are that whole process (with ``--no-view`` it does little else: it
supervises its children). Every other process of ``up`` (agents, controllers, the conversion
webhook, the dashboard) is listed too, and how busy the machine's cores were during each rollout,
since they are shared. On the real hub it also prints the requests kube-apiserver answered (its
``/metrics``) while idle and during the rollout, and the watches it closed because their client
fell behind (with their keys and label selectors, from its log).

    .venv/bin/python bench/hubs.py [--clusters 1000] [--hubs local,kube-apiserver] [--idle 10] [--timeout 900]
        [-- extra flags for `ocm-rollout up`]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
from scale import (  # bench/ is this script's directory
    CLUSTER_GROUP,
    NAMESPACE,
    PLACEMENT_VERSION,
    WORK_GROUP,
    WORKSET_VERSION,
    Sample,
    Up,
    _rolled_out,
    _show,
    cpu_over,
    placement,
    sample,
    wait,
    wait_available,
    workset,
)

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET
from ocm_rollout.sandbox.kube_hub import HUB_NAME

LOCAL = "local"
HUBS = (LOCAL, HUB_NAME)
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager")
NAME = "hubs"
WORK_VERSION = "v1"
MB = 2**20
REQUEST_KINDS = 12  # the most frequent requests shown
TERMINATED = "TERMINATED"
# kube-apiserver's log line (cache_watcher.go, at --v 1) when it closes a watch whose client is behind
FORCED = re.compile(r'watcher close due to unresponsiveness: key: "(?P<key>[^"]*)", labels: "(?P<labels>[^"]*)"')


def _program(pid: int) -> str:
    """The base name of the program ``pid`` runs ("" once it is gone)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return ""
    return Path(argv0.decode(errors="replace")).name


def _label(pid: int, up_pid: int, name: str) -> str:
    """bench/scale.py's name of a process of ``up``, said plainly where it is not."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        argv = []
    if pid == up_pid:
        return f"up ({pid})"
    if b"dashboard" in argv:
        return f"dashboard ({pid})"
    if b"--webhook-bind-address" in argv:
        return f"conversion webhook ({pid})"
    return name


def _seconds(title: str, values: dict[str, float]) -> None:
    print(f"  {title}: " + ", ".join(f"{name} {v:.1f} s" for name, v in sorted(values.items())), flush=True)


def hub_pids(hub: str, up_pid: int) -> dict[int, str]:
    """The processes that make up the hub, by pid: ``up`` itself for the local hub, the control
    plane's processes (children of ``up``) for the real one."""
    if hub == LOCAL:
        return {up_pid: "up (serves the local hub)"}
    found = {pid: _program(pid) for pid in sample(up_pid)}
    return {pid: name for pid, name in found.items() if name in CONTROL_PLANE}


def peak_rss(pid: int) -> int:
    """``VmHWM``: the most RSS ``pid`` ever had, in bytes."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def machine_cpu() -> tuple[float, float]:
    """Busy and total CPU seconds of every core since boot (``/proc/stat``)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def apiserver_requests(client: Any) -> Counter[str]:
    """The requests kube-apiserver has answered so far, by verb and resource
    (``apiserver_request_total`` in its ``/metrics``; a watch counts when it ends), and the watches
    it closed because their client did not keep up (``apiserver_terminated_watchers_total``), by
    resource, as ``TERMINATED resource``."""
    method, url, headers, body, post = client.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
    answer = client.call_api(method, url, headers, body, post)
    counts: Counter[str] = Counter()
    for line in answer.read().decode().splitlines():
        metric, _, rest = line.partition("{")
        if metric not in ("apiserver_request_total", "apiserver_terminated_watchers_total"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', rest[: rest.rindex("}")]))
        resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        verb = labels.get("verb", "") if metric == "apiserver_request_total" else TERMINATED
        counts[f"{verb} {resource}"] += int(float(line.rsplit(" ", 1)[1]))
    return counts


def _requests(when: str, counts: Counter[str]) -> None:
    closed = {k.split(" ", 1)[1]: n for k, n in counts.items() if k.startswith(TERMINATED) and n}
    answered = Counter({k: n for k, n in counts.items() if not k.startswith(TERMINATED)})
    most = ", ".join(f"{what} {n}" for what, n in answered.most_common(REQUEST_KINDS))
    print(f"  requests kube-apiserver answered (its /metrics) {when}: {answered.total()} in all; {most}", flush=True)
    if closed:
        print("  watches kube-apiserver closed because their client did not keep up: "
              + ", ".join(f"{what} {n}" for what, n in sorted(closed.items())), flush=True)


def apiserver_log(pids: dict[int, str]) -> Path | None:
    """kube-apiserver's log file (``logs/`` beside its ``--cert-dir`` in the control plane's
    directory), or None."""
    for pid, name in pids.items():
        if name != "kube-apiserver":
            continue
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        if "--cert-dir" in argv:
            return Path(argv[argv.index("--cert-dir") + 1]).parent / "logs" / "kube-apiserver.log"
    return None


def forced_closes(log: Path | None, offset: int) -> Counter[str]:
    """The watches kube-apiserver's log says it closed for unresponsiveness after ``offset``
    bytes, by key (resource and namespace) and label selector."""
    closes: Counter[str] = Counter()
    if log is None:
        return closes
    with log.open("rb") as text:
        text.seek(offset)
        for line in text.read().decode(errors="replace").splitlines():
            found = FORCED.search(line)
            if found:
                closes[f"{found['key']} (labels {found['labels'] or 'none'})"] += 1
    return closes


def _applied(work: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Applied" and c.get("status") == "True"
        for c in (work.get("status") or {}).get("conditions") or []
    )


@dataclass(frozen=True)
class Figures:
    """One hub's rollout."""

    hub: str
    startup: float
    rollout: float
    cpu: float
    peak: int
    final: int
    hwm: int


class Rollout:
    """The MWRS ``hubs`` over every cluster, watched until it is complete and every work applied."""

    def __init__(self, api: Any, clusters: int, hub: dict[int, str], up_pid: int) -> None:
        self.api, self.clusters, self.hub, self.up_pid = api, clusters, hub, up_pid
        self.peak = 0
        self.samples: dict[int, Sample] = {}
        self.started = 0.0
        self.complete_at: float | None = None
        self.applied_at: float | None = None
        self.applied = 0
        self.lists = 0
        self.polls = 0
        self.work_bytes = 0
        self.managers = 0.0
        self.sampled_at = 0.0
        self.list_seconds = 0.0

    def hub_rss(self) -> int:
        return sum(s.rss for p, s in self.samples.items() if p in self.hub)

    def poll(self) -> bool:
        """One check: the MWRS first, complete and its summary counting every work applied (done
        when that answer comes back); then the works themselves, listed. When the list agrees, the
        rollout was done at the MWRS's answer; otherwise at the end of the list that agrees."""
        self.polls += 1
        self.samples = sample(self.up_pid)
        self.sampled_at = time.monotonic() - self.started
        self.peak = max(self.peak, self.hub_rss())
        if self.complete_at is None:
            obj = self.api.get_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE,
                                                        "manifestworkreplicasets", NAME)
            summary = (obj.get("status") or {}).get("summary") or {}
            if not _rolled_out(obj) or int(summary.get("applied") or 0) < self.clusters:
                return False
            self.complete_at = time.monotonic() - self.started
        listed = time.monotonic()
        works = self.api.list_cluster_custom_object(
            WORK_GROUP, WORK_VERSION, "manifestworks",
            label_selector=f"{LABEL_MANIFESTWORK_REPLICASET}={NAMESPACE}.{NAME}",
        )["items"]
        self.list_seconds = time.monotonic() - listed
        self.applied = sum(1 for work in works if _applied(work))
        self.lists += 1
        if works:
            self.work_bytes = sum(len(json.dumps(work, separators=(",", ":"))) for work in works) // len(works)
            self.managers = sum(len(work["metadata"].get("managedFields") or []) for work in works) / len(works)
        if self.applied < self.clusters:
            return False
        self.applied_at = self.complete_at if self.lists == 1 else time.monotonic() - self.started
        return True

    def run(self, timeout: float) -> float:
        self.api.create_namespaced_custom_object(CLUSTER_GROUP, PLACEMENT_VERSION, NAMESPACE, "placements",
                                                 placement(NAME))
        self.started = time.monotonic()
        self.api.create_namespaced_custom_object(WORK_GROUP, WORKSET_VERSION, NAMESPACE,
                                                 "manifestworkreplicasets", workset(NAME, NAME))
        try:
            wait(self.poll, timeout, "the rollout")
        except TimeoutError:
            complete = "not True" if self.complete_at is None else f"True at {self.complete_at:.1f} s"
            print(f"  after {timeout:.0f} s: PlacementRolledOut {complete}, "
                  f"{self.applied} of {self.clusters} works Applied", flush=True)
            raise
        assert self.applied_at is not None
        return self.applied_at


def _kubeconfig_written(up: Up) -> bool:
    if up.proc.poll() is not None:
        raise RuntimeError(f"`ocm-rollout up` exited with code {up.proc.returncode} "
                           f"(its output: {Path(up.dir.name) / 'up.out'})")
    return up.kubeconfig.exists()


def _end_leftovers(pids: dict[int, str]) -> None:
    """SIGTERM to any control-plane process still running after ``up`` stopped (they do not get
    ``up``'s death signal, so a killed ``up`` would leave them behind)."""
    for pid, name in pids.items():
        if _program(pid) == name.split(" ")[0]:
            print(f"  {name} ({pid}) outlived `up`: terminating it", flush=True)
            os.kill(pid, signal.SIGTERM)


def _idle(hub: str, up_pid: int, pids: dict[int, str], client: Any, seconds: float) -> None:
    """The hub's CPU over ``seconds`` with the fleet up and nothing rolling out (and, on the real
    hub, the requests kube-apiserver answered meanwhile)."""
    names = {s.name: pids[p] for p, s in sample(up_pid).items() if p in pids}
    counted = apiserver_requests(client) if hub != LOCAL else Counter()
    quiet = {names[name]: v for name, v in cpu_over(up_pid, seconds).items() if name in names}
    each = f" ({', '.join(f'{n} {v:.0f}%' for n, v in sorted(quiet.items()))})" if len(quiet) > 1 else ""
    print(f"  hub CPU idle before the rollout (over {seconds:.0f} s): {sum(quiet.values()):.0f}% of a core{each}",
          flush=True)
    if hub != LOCAL:
        _requests("in that time", apiserver_requests(client) - counted)


def run(hub: str, clusters: int, idle: float, timeout: float, extra: list[str]) -> Figures:
    print(f"== {hub} hub, {clusters} clusters", flush=True)
    up = Up(clusters, ["--hub", hub, *extra])
    pids: dict[int, str] = {}
    try:
        ready = wait(lambda: _kubeconfig_written(up), timeout, "the kubeconfig")
        client = up.client()
        api = kubernetes.client.CustomObjectsApi(client)
        wait_available(api, clusters, timeout)
        startup = time.monotonic() - up.started
        print(f"  start-up to all Available: {startup:.1f} s (the hub answering, its kubeconfig written, "
              f"at {ready:.1f} s)", flush=True)
        pids = hub_pids(hub, up.proc.pid)
        print(f"  the hub: {', '.join(f'{name} ({pid})' for pid, name in pids.items())}", flush=True)
        if idle > 0:
            _idle(hub, up.proc.pid, pids, client, idle)

        rollout = Rollout(api, clusters, pids, up.proc.pid)
        requests0 = apiserver_requests(client) if hub != LOCAL else Counter()
        log = apiserver_log(pids)
        log_offset = log.stat().st_size if log is not None else 0
        before, busy0 = sample(up.proc.pid), machine_cpu()
        took = rollout.run(timeout)
        after, busy1 = rollout.samples, machine_cpu()
        requests = apiserver_requests(client) - requests0 if hub != LOCAL else Counter()
        closes = forced_closes(log, log_offset)
        assert rollout.complete_at is not None and rollout.applied_at is not None
        print(f"  rollout (Progressive 20%): {took:.1f} s (the MWRS PlacementRolledOut True, its summary "
              f"{clusters} applied, at {rollout.complete_at:.1f} s; a list of its works found all {clusters} "
              f"Applied{' then' if rollout.lists == 1 else f' at {took:.1f} s, in {rollout.lists} lists'}; "
              f"the last list took {rollout.list_seconds:.2f} s; a work in it: {rollout.work_bytes:,} bytes of JSON, "
              f"{rollout.managers:.1f} managedFields entries)", flush=True)
        spent = {p: s.cpu - before[p].cpu for p, s in after.items() if p in before}
        cpu = sum(v for p, v in spent.items() if p in pids)
        final = sum(s.rss for p, s in after.items() if p in pids)
        hwm = sum(peak_rss(p) for p in pids)
        print(f"  hub CPU during the rollout: {cpu:.1f} s ({100 * cpu / rollout.sampled_at:.0f}% of a core)"
              + (" (the local hub is served inside `up`'s own process: this is all of it)" if hub == LOCAL else ""),
              flush=True)
        _seconds("  per hub process", {pids[p]: v for p, v in spent.items() if p in pids})
        start_rss = sum(s.rss for p, s in before.items() if p in pids)
        print(f"  hub RSS: {start_rss / MB:.0f} MB before the rollout, peak {rollout.peak / MB:.0f} MB during it, "
              f"{final / MB:.0f} MB at its end "
              f"(the processes' own peaks since start, VmHWM: {hwm / MB:.0f} MB)", flush=True)
        _show("  per hub process at the end (MB)",
              {pids[p]: s.rss / MB for p, s in after.items() if p in pids}, "")
        _seconds("CPU during the rollout, the other processes",
                 {_label(p, up.proc.pid, after[p].name): v for p, v in spent.items() if p not in pids})
        if hub != LOCAL:
            _requests(f"during the rollout, this benchmark's own {rollout.polls} polls included", requests)
            if closes:
                print("    by its log: " + ", ".join(f"{what} {n}" for what, n in closes.most_common()), flush=True)
        busy, total = busy1[0] - busy0[0], busy1[1] - busy0[1]
        ours = sum(spent.values())
        print(f"  the machine's {len(os.sched_getaffinity(0))} cores: {100 * busy / total:.0f}% busy during the "
              f"rollout, {100 * ours / total:.0f}% of it `up`'s processes, {100 * max(busy - ours, 0) / total:.0f}% "
              f"others; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
        return Figures(hub, startup, took, cpu, rollout.peak, final, hwm)
    finally:
        up.stop()
        _end_leftovers(pids if hub != LOCAL else {})


def summarise(figures: list[Figures]) -> None:
    print("== summary", flush=True)
    for f in figures:
        where = " (inside `up`'s own process)" if f.hub == LOCAL else " (etcd + kube-apiserver + kube-controller-manager)"
        print(f"  {f.hub}{where}: start-up {f.startup:.1f} s, rollout {f.rollout:.1f} s, hub CPU {f.cpu:.1f} s, "
              f"hub RSS peak {f.peak / MB:.0f} MB, final {f.final / MB:.0f} MB, VmHWM {f.hwm / MB:.0f} MB", flush=True)
    by_hub = {f.hub: f for f in figures}
    if LOCAL in by_hub and HUB_NAME in by_hub:
        real, local = by_hub[HUB_NAME], by_hub[LOCAL]
        ratios = {
            "start-up": real.startup / local.startup,
            "rollout": real.rollout / local.rollout,
            "hub CPU": real.cpu / local.cpu,
            "RSS peak": real.peak / local.peak,
            "RSS final": real.final / local.final,
        }
        print(f"  {HUB_NAME} / local: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()), flush=True)
    print(f"  load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000, help="simulated clusters (and works)")
    parser.add_argument("--hubs", default=",".join(HUBS), help=f"comma-separated, run in this order: {', '.join(HUBS)}")
    parser.add_argument("--idle", type=float, default=10.0,
                        help="seconds over which the hub's idle CPU is measured before the rollout (0: not at all)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for each phase")
    parser.add_argument("up_args", nargs="*", help="extra flags for `ocm-rollout up` (after --)")
    args = parser.parse_args()
    hubs = [h.strip() for h in args.hubs.split(",") if h.strip()]
    unknown = [h for h in hubs if h not in HUBS]
    if unknown:
        parser.error(f"--hubs: unknown {', '.join(unknown)} (known: {', '.join(HUBS)})")
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    summarise([run(hub, args.clusters, args.idle, args.timeout, args.up_args) for hub in hubs])
    return 0


if __name__ == "__main__":
    sys.exit(main())
