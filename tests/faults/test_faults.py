"""Rollouts through a misbehaving network: the controllers talk to the hub through the fault proxy.

One scenario runs once for the module (``outcome``); the tests then look at what it left.

- A local hub in this process, with simulated clusters cluster1..cluster10 whose agents talk to it
  directly (works take ``applyDelay`` + ``progressDuration`` to finish, so rollouts last).
- ``tests/faults/proxy.py`` in front of the hub, and the placement, workset and addon controllers
  as three ``ocm-rollout run`` processes (leader election on, JSON logs) pointed at the proxy.
- Once everything is installed, faults are switched on for ``FAULT_SECONDS``: latency, dropped
  and reset connections, answers lost after the write, 429 with ``Retry-After``, 500, hung
  requests (held for minutes) and watch streams cut mid-stream, drawn from a seeded generator
  (``OCM_ROLLOUT_FAULT_SEED`` changes the seed). Meanwhile a Progressive ManifestWorkReplicaSet
  (maxConcurrency 2) and a Progressive add-on configuration rollout (maxConcurrency 3, its
  AddOnDeploymentConfig changed) roll out over the ten clusters, again and again: each time one
  completes, its template (or configuration) changes, so both keep rolling for the whole window.
- Then the faults stop, and both rollouts in flight must complete within ``CONVERGE_SECONDS``
  plus the longest back-off a controller logged and had not yet waited out when they stopped (a
  key that failed seven times in a row waits 64 s, as client-go's rate limiter makes it wait:
  nothing wakes it sooner when the hub is quiet).

Watch-driven monitors on the hub itself (not through the proxy) check every change of every
ManifestWork and ManagedClusterAddOn against each strategy's bound, with the checkers of the
stress tests (tests/integration/test_workset_agents.py, test_addon_agents.py).

The tests: faults of every kind happened; both rollouts kept completing under faults and
complete once they stop; neither ever had more clusters in flight than its strategy allows; no
client waited on an unanswered request for more than ``GIVE_UP_SECONDS`` (a worker stuck on a
hung request); the processes exit on SIGTERM; and ``assert_backoff_respected`` over the
controllers' logs (back-off bursts, and Retry-After after a 429).

By hand: ``.venv/bin/python -m pytest -q -s -m faults tests/faults`` (``OCM_ROLLOUT_FAULT_SEED``,
``OCM_ROLLOUT_FAULT_SECONDS``); the controllers' logs stay in the scenario's directory
(``--basetemp`` keeps them in a place of your choosing).

The fault counts by kind and the outcomes are printed (``-s`` or ``-rA`` shows them), written to
``fault-summary.txt`` in the scenario's directory, recorded as the ``fault_summary`` property of
every test (junit XML), and repeated at the end of a run by ``tests/faults/conftest.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENTS,
)
from tests.faults.proxy import FaultProxy, FaultRates, FaultSummary, HungRequest
from tests.hubs import start_hub
from tests.integration.helpers import STARTUP_TIMEOUT, Check, RunProcess, WatchMonitor, start_run, wait_until
from tests.integration.test_addon_agents import applied, at_most
from tests.integration.test_addon_env import AddonEnv, adc_ref, desired_hashes
from tests.integration.test_workset_agents import done, in_flight_at_most, one_work_per_cluster, owned_by
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition

pytestmark = [pytest.mark.faults, pytest.mark.integration]

# How long the faults last (OCM_ROLLOUT_FAULT_SECONDS for a longer or shorter run by hand), and how long
# the controllers then have to finish both rollouts.
FAULT_SECONDS = float(os.environ.get("OCM_ROLLOUT_FAULT_SECONDS", "120"))
CONVERGE_SECONDS = 60.0
# A client that waits longer than this on a request nobody answers is stuck (the leader's write
# fence gives a write at most 15 s; the Lease client gives a renewal 10 s).
GIVE_UP_SECONDS = 60.0
# How long the processes get to exit after SIGTERM, all at once.
EXIT_SECONDS = 20.0

SEED = os.environ.get("OCM_ROLLOUT_FAULT_SEED", "20260601")
RATES = FaultRates(
    latency=0.10,
    latency_seconds=(0.05, 1.5),
    drop=0.02,
    lost_answer=0.02,
    reset=0.02,
    throttle=0.04,
    retry_after_seconds=1,
    error=0.04,
    hang=0.01,
    hang_seconds=600.0,
    # A hung watch stalls any informer until its read timeout (330 s here, like client-go's
    # timeoutSeconds): longer than this test. Watches are cut instead.
    hang_watches=False,
    watch_cut=0.5,
    watch_cut_after=(1, 20),
)

FLEET = 10
CLUSTERS = [f"cluster{i}" for i in range(1, FLEET + 1)]
# Every work (the MWRS's and the add-ons' deploy works) takes 1 s to apply and 5 s more to finish:
# a whole rollout (5 waves of the MWRS, 4 of the add-on) takes about 40 s without faults, so one
# started just before the faults stop still fits in CONVERGE_SECONDS.
PROFILE: JSON = {"defaults": {"mode": "rollout", "applyDelay": "1s", "progressDuration": "5s", "outcome": "Succeeded"}}
CONTROLLERS = ("placement", "workset", "addon")

NS = "default"  # the simulated fleet's ManagedClusterSets are bound here
MWRS = "web"
OWNER = f"{NS}.{MWRS}"
MWRS_PLACEMENT = "web-fleet"
MWRS_CONCURRENCY = 2
ADDON = "faulty"
ADDON_PLACEMENT = "addon-fleet"
ADC_NS = "addon-configs"
ADC = "faulty-config"
ADDON_CONCURRENCY = 3
SUMMARY_PROPERTY = "fault_summary"

# What the controllers log that the summary counts, per process.
LOGGED = (
    "reconcile failed",
    "watch failed; listing again",
    "became leader",
    "lost leadership",
    "leadership lost: stopping the operator now",
    "lease read failed",
    "event not recorded",
    "cannot write MCA status",
)


# -- the scenario -------------------------------------------------------------------------------


@dataclass
class Revision:
    """One rollout of one template / configuration: when it started and completed (seconds since
    the faults began)."""

    rollout: str
    number: int
    started: float
    completed: float | None = None


@dataclass
class FaultRun:
    """What the scenario left for the tests."""

    directory: Path
    counts: dict[str, int] = field(default_factory=dict)
    hung: list[HungRequest] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)
    fault_seconds: float = 0.0
    # Seconds after the faults stopped until each rollout in flight completed (None: never).
    converged: dict[str, float | None] = field(default_factory=dict)
    # The longest back-off still pending when the faults stopped (added to CONVERGE_SECONDS).
    pending_backoff: float = 0.0
    violations: dict[str, list[str]] = field(default_factory=dict)
    max_in_flight: dict[str, int] = field(default_factory=dict)
    monitor_changes: dict[str, int] = field(default_factory=dict)
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    state_at_end: dict[str, Any] = field(default_factory=dict)
    # The stacks of the threads of a process that did not exit after SIGTERM (faulthandler).
    thread_dumps: dict[str, str] = field(default_factory=dict)
    summary: str = ""


def pending_backoff(processes: Iterable[RunProcess], at: datetime) -> float:
    """Seconds until the last retry the processes' logs announced ("backing off", ``retry_in``)
    before ``at`` comes due; 0 when none is still waiting."""
    latest = at
    for proc in processes:
        for event in proc.events():
            if event.get("msg") != "backing off" or "retry_in" not in event:
                continue
            logged = datetime.fromisoformat(str(event["time"]).replace("Z", "+00:00"))
            if logged <= at:
                latest = max(latest, logged + timedelta(seconds=float(event["retry_in"])))
    return (latest - at).total_seconds()


def thread_dump(log: str) -> str:
    """faulthandler's dump at the end of a process's log (the lines from "Fatal Python error")."""
    start = log.rfind("Fatal Python error")
    return "" if start < 0 else log[start:]


def template(version: int) -> JSON:
    manifest = {**CONFIGMAP_TEMPLATE["workload"]["manifests"][0], "data": {"version": str(version)}}
    return {"workload": {"manifests": [manifest]}}


def version_of(work: JSON) -> str | None:
    manifests = (work.get("spec") or {}).get("workload", {}).get("manifests") or [{}]
    return (manifests[0].get("data") or {}).get("version")


def counting_works(seen: list[int]) -> Check:
    """Records how many of the MWRS's works are in flight at every change (for the summary)."""
    mine = owned_by(OWNER)

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        seen.append(sum(1 for w in works.values() if mine(w) and not done(w)))
        return None

    return check


class AddonBound:
    """The add-on rollout's bound, against the configuration the current rollout started from
    (``old``, changed by the scenario before each new configuration)."""

    def __init__(self) -> None:
        self.old: dict[str, str] = {}
        self.seen: list[int] = []

    def check(self, mcas: dict[tuple[str, str], JSON]) -> str | None:
        return at_most(ADDON, self.old, ADDON_CONCURRENCY, self.seen)(mcas)


class Scenario:
    """The hub, the fleet, the proxy and the three controller processes of one run."""

    def __init__(self, directory: Path, hub_kind: str) -> None:
        self.directory = directory
        self.run = FaultRun(directory)
        self.hub = start_hub(hub_kind, directory, kubeconfig=directory / "hub.kubeconfig")
        assert self.hub.kubeconfig is not None
        self.proxy = FaultProxy(self.hub.kubeconfig, RATES, seed=SEED)
        self.workset = Env(directory, self.hub)
        self.addons = AddonEnv(directory, self.hub)
        self.api = self.workset.api
        self.processes: dict[str, RunProcess] = {}
        self.monitors: dict[str, WatchMonitor] = {}
        self.work_seen: list[int] = []
        self.addon_bound = AddonBound()
        self.mwrs_version = 0
        self.adc_version = 1
        self.started = time.monotonic()

    # -- set-up (no faults yet) ---------------------------------------------------------------
    def set_up(self) -> None:
        self.proxy.start()
        self.proxy.faults_off()
        kubeconfig = self.proxy.write_kubeconfig(self.directory / "proxy.kubeconfig")
        self.workset.simulate(FLEET, PROFILE)
        for name in CONTROLLERS:
            self.processes[name] = start_run(
                name, kubeconfig, self.directory,
                "--controllers", name, "--lease-namespace", NS, "--lease-name", f"faults-{name}",
                "--identity", f"faults-{name}",
                env={"PYTHONFAULTHANDLER": "1"},  # SIGABRT dumps every thread's stack into the log
            )  # fmt: skip
        for name, proc in self.processes.items():
            wait_until(lambda p=proc: p.logged("operator started"), timeout=STARTUP_TIMEOUT, message=f"the {name} operator")
        for placement in (MWRS_PLACEMENT, ADDON_PLACEMENT):
            self.addons.placement(NS, placement)
        for placement in (MWRS_PLACEMENT, ADDON_PLACEMENT):
            wait_until(lambda p=placement: self.selected(p) == FLEET, timeout=90, message=f"{placement} to select the fleet",
                       state=lambda p=placement: self.api.get(PLACEMENTS, p, NS).get("status"))
        self.addons.adc(ADC_NS, ADC, "v1")
        strategy = {"type": "Progressive", "progressive": {"maxConcurrency": ADDON_CONCURRENCY}}
        self.addons.cma(ADDON, placements=[
            {"namespace": NS, "name": ADDON_PLACEMENT, "configs": [adc_ref(ADC_NS, ADC)], "rolloutStrategy": strategy}
        ])  # fmt: skip
        wait_until(lambda: self.addon_complete(self.adc_hash()), timeout=120, message="the add-on installed everywhere",
                   state=self.addon_state)

    def selected(self, placement: str) -> int:
        status = self.api.get(PLACEMENTS, placement, NS).get("status") or {}
        return int(status.get("numberOfSelectedClusters") or 0)

    # -- the two rollouts -------------------------------------------------------------------------
    def adc_hash(self) -> str:
        return spec_hash(self.api.get(ADDON_DEPLOYMENT_CONFIGS, ADC, ADC_NS))

    def mcas(self) -> dict[str, JSON]:
        found = self.api.list(MANAGED_CLUSTER_ADDONS)
        return {m["metadata"]["namespace"]: m for m in found if m["metadata"]["name"] == ADDON}

    def addon_complete(self, expected_hash: str) -> bool:
        want = {f"addondeploymentconfigs/{ADC_NS}/{ADC}": expected_hash}
        mcas = self.mcas()
        if sorted(mcas) != sorted(CLUSTERS):
            return False
        if not all(applied(m) and desired_hashes(m) == want for m in mcas.values()):
            return False
        progressing = self.addons.progression_condition(ADDON) or {}
        return f"configured addons {FLEET}/{FLEET} completed with no errors" in str(progressing.get("message"))

    def addon_state(self) -> dict[str, Any]:
        return {
            "mcas": {c: (desired_hashes(m), applied(m)) for c, m in sorted(self.mcas().items())},
            "progressing": self.addons.progression_condition(ADDON),
        }

    def workset_complete(self, version: int) -> bool:
        works = self.workset.works_of(NS, MWRS)
        if len(works) != FLEET or not all(version_of(w) == str(version) and done(w) for w in works):
            return False
        return condition(self.workset.get_mwrs(NS, MWRS), "PlacementRolledOut") == ("True", "Complete")

    def workset_state(self) -> dict[str, Any]:
        mwrs = self.workset.get_mwrs(NS, MWRS) or {}
        return {
            "works": {w["metadata"]["namespace"]: (version_of(w), done(w)) for w in self.workset.works_of(NS, MWRS)},
            "conditions": [(c.get("type"), c.get("status"), c.get("reason")) for c in (mwrs.get("status") or {}).get("conditions") or []],
            "summary": (mwrs.get("status") or {}).get("summary"),
        }

    def start_monitors(self) -> None:
        hub_kubeconfig = str(self.hub.kubeconfig)
        works: list[Check] = [in_flight_at_most(OWNER, MWRS_CONCURRENCY), one_work_per_cluster(OWNER),
                              counting_works(self.work_seen)]
        self.monitors["workset"] = WatchMonitor(hub_kubeconfig, MANIFEST_WORKS, works).start()
        self.addon_bound.old = desired_hashes(next(iter(self.mcas().values())))
        self.monitors["addon"] = WatchMonitor(hub_kubeconfig, MANAGED_CLUSTER_ADDONS, [self.addon_bound.check]).start()

    def next_workset_revision(self, now: float) -> None:
        self.mwrs_version += 1
        self.run.revisions.append(Revision("workset", self.mwrs_version, now))
        rollout = {"type": "Progressive", "progressive": {"maxConcurrency": MWRS_CONCURRENCY}}
        if self.mwrs_version == 1:
            self.workset.mwrs(NS, MWRS, [{"name": MWRS_PLACEMENT, "rolloutStrategy": rollout}],
                              template=template(self.mwrs_version))
        else:
            self.api.patch(MANIFEST_WORK_REPLICA_SETS, MWRS, {"spec": {"manifestWorkTemplate": template(self.mwrs_version)}}, NS)

    def next_addon_revision(self, now: float) -> None:
        self.adc_version += 1
        self.run.revisions.append(Revision("addon", self.adc_version - 1, now))
        self.addon_bound.old = desired_hashes(next(iter(self.mcas().values())))
        self.addons.adc(ADC_NS, ADC, f"v{self.adc_version}")

    def current(self, rollout: str) -> Revision:
        return [r for r in self.run.revisions if r.rollout == rollout][-1]

    def step(self, now: float, *, start_new: bool) -> None:
        """Record the completion of each rollout's current revision; start the next one if told."""
        workset, addon = self.current("workset"), self.current("addon")
        if workset.completed is None and self.workset_complete(self.mwrs_version):
            workset.completed = now
            if start_new:
                self.next_workset_revision(now)
        if addon.completed is None and self.addon_complete(self.adc_hash()):
            addon.completed = now
            if start_new:
                self.next_addon_revision(now)

    def roll_under_faults(self) -> None:
        self.start_monitors()
        self.proxy.faults_on()
        began = time.monotonic()
        self.next_workset_revision(0.0)
        self.next_addon_revision(0.0)
        while (now := time.monotonic() - began) < FAULT_SECONDS:
            self.step(now, start_new=True)
            time.sleep(0.5)
        self.proxy.faults_off()
        self.run.fault_seconds = time.monotonic() - began
        off = self.run.fault_seconds
        self.run.pending_backoff = pending_backoff(self.processes.values(), datetime.now(UTC))
        while (now := time.monotonic() - began) < off + CONVERGE_SECONDS + self.run.pending_backoff:
            self.step(now, start_new=False)
            if all(self.current(r).completed is not None for r in ("workset", "addon")):
                break
            time.sleep(0.5)
        for rollout in ("workset", "addon"):
            completed = self.current(rollout).completed
            self.run.converged[rollout] = None if completed is None else max(0.0, completed - off)
        self.run.state_at_end = {"workset": self.workset_state(), "addon": self.addon_state()}

    # -- collecting -------------------------------------------------------------------------------
    def collect(self) -> None:
        for name, monitor in self.monitors.items():
            monitor.stop()
            self.run.violations[name] = list(monitor.violations)
            self.run.monitor_changes[name] = monitor.changes
        self.run.max_in_flight = {"workset": max(self.work_seen, default=0),
                                  "addon": max(self.addon_bound.seen, default=0)}
        self.run.hung = self.proxy.hung()
        self.run.counts = self.proxy.counts()
        for proc in self.processes.values():
            if proc.process.poll() is None:
                proc.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + EXIT_SECONDS
        for name, proc in self.processes.items():
            try:
                self.run.exit_codes[name] = proc.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # Still running: SIGABRT makes Python's faulthandler write every thread's stack.
                self.run.exit_codes[name] = None
                proc.process.send_signal(signal.SIGABRT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.process.wait(timeout=5)
                proc.kill()
                self.run.thread_dumps[name] = thread_dump(proc.log_path.read_text(encoding="utf-8", errors="replace"))
            self.run.logs[name] = proc.events()

    def close(self) -> None:
        for monitor in self.monitors.values():
            monitor.stop()
        for proc in self.processes.values():
            proc.kill()
        self.proxy.stop()
        self.workset.close()
        self.hub.stop()


def scenario(directory: Path, hub_kind: str) -> FaultRun:
    env = Scenario(directory, hub_kind)
    try:
        env.set_up()
        env.roll_under_faults()
        env.collect()
    finally:
        env.close()
    env.run.summary = "\n".join(summary_lines(env.run))
    (directory / "fault-summary.txt").write_text(env.run.summary + "\n", encoding="utf-8")
    print("\n" + env.run.summary)
    return env.run


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> FaultRun:
    return scenario(tmp_path_factory.mktemp("faults"), hub_kind)


@pytest.fixture(autouse=True)
def _summary_property(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> Iterator[None]:
    """Every test of the module carries the run's summary (junit XML; tests/faults/conftest.py)."""
    yield
    if "outcome" in request.fixturenames:
        record_property(SUMMARY_PROPERTY, request.getfixturevalue("outcome").summary)


# -- the summary --------------------------------------------------------------------------------


def logged_counts(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["msg"] for e in events if e.get("msg") in LOGGED)


def summary_lines(run: FaultRun) -> list[str]:
    out = [f"fault run (seed {SEED}): {run.fault_seconds:.0f}s of faults over {FLEET} clusters; "
           f"a back-off of {run.pending_backoff:.0f}s still pending when they stopped"]
    out += ["  " + line for line in FaultSummary(run.counts, run.hung).lines()]
    for rollout in ("workset", "addon"):
        revisions = [r for r in run.revisions if r.rollout == rollout]
        finished = [r for r in revisions if r.completed is not None]
        durations = ", ".join(f"{r.completed - r.started:.0f}s" for r in finished if r.completed is not None)
        converged = run.converged.get(rollout)
        bound = MWRS_CONCURRENCY if rollout == "workset" else ADDON_CONCURRENCY
        out.append(
            f"  {rollout}: {len(revisions)} rollouts started, {len(finished)} completed ({durations}); "
            + ("the last one never completed" if converged is None else f"converged {converged:.0f}s after the faults")
            + f"; max in flight {run.max_in_flight.get(rollout)} (bound {bound}) over {run.monitor_changes.get(rollout)} changes"
            + f", {len(run.violations.get(rollout) or [])} violations"
        )
    for hang in run.hung:
        if hang.waited() > GIVE_UP_SECONDS:
            out.append(f"  stuck: {hang.method} {hang.path} waited {hang.waited():.0f}s ({hang.how or 'still waiting'})")
    backoff = backoff_report(run.logs, retry_after_seconds=RATES.retry_after_seconds)
    for name, events in run.logs.items():
        counted = logged_counts(events)
        text = ", ".join(f"{msg!r} {n}" for msg, n in sorted(counted.items())) or "nothing of note"
        out.append(f"  {name}: exit {run.exit_codes.get(name)}; logged {text}")
        bursts = backoff.bursts.get(name) or {}
        if bursts:
            (queue, key), densest = max(bursts.items(), key=lambda item: item[1])
            early = [gap for process, _, _, gap in backoff.early_after_throttle if process == name]
            out.append(f"    {len(bursts)} keys failed; densest: {queue} {key!r} {densest} times within 2s; "
                       f"{len(early)} retries sooner than Retry-After {RATES.retry_after_seconds}s"
                       + (f" (after {', '.join(f'{g * 1000:.0f}' for g in sorted(early)[:5])} ms ...)" if early else ""))
    return out


# -- the back-off check ---------------------------------------------------------------------------

# The controllers' work queues (client/queue.py): a failed key is retried after base * 2^n
# seconds (n: its failures since its last success), at most max.
QUEUE_BASE_DELAY = 0.005
QUEUE_MAX_DELAY = 300.0
# A failure that sent nothing (the lease fence refused the write) does not count as a retry.
_NOT_SENT = ("LeaseLost",)
# A 429 as the client reports it: ``KubeError('429 TooManyRequests: ...')`` (the status code, then
# the reason). A bare "429" is not enough: a connection error names the proxy's port
# (``HTTPSConnectionPool(host='127.0.0.1', port=42917): Read timed out``), and a port may hold it.
_THROTTLED = re.compile(r"(?<![\w.=:])429 |TooManyRequests")


def throttled(error: str) -> bool:
    """Whether a logged error (a failed pass's, or a back-off's reason) is a 429 answer."""
    return _THROTTLED.search(error) is not None


@dataclass(frozen=True)
class Failure:
    """One "reconcile failed" warning: when (epoch seconds), and the error it names."""

    at: float
    error: str

    @property
    def throttled(self) -> bool:
        return throttled(self.error)


def _log_time(event: Mapping[str, Any]) -> float:
    return datetime.strptime(str(event["time"]), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def failures_by_key(events: list[dict[str, Any]]) -> dict[tuple[str, str], list[Failure]]:
    """The "reconcile failed" warnings of one process, by (queue, key), in time order. The
    logging format puts the queue key in ``object`` (``client/logging.py`` renders an ``extra``
    ``key`` so); ``key`` is read too, should the format ever keep it."""
    found: dict[tuple[str, str], list[Failure]] = defaultdict(list)
    for event in events:
        if event.get("msg") != "reconcile failed":
            continue
        key = str(event.get("key") or event.get("object") or "")
        found[(str(event.get("queue") or ""), key)].append(Failure(_log_time(event), str(event.get("error") or "")))
    for failures in found.values():
        failures.sort(key=lambda f: f.at)
    return dict(found)


def consecutive_failure_bound(window: float, base: float = QUEUE_BASE_DELAY, cap: float = QUEUE_MAX_DELAY) -> int:
    """How many times one key can fail within ``window`` seconds when nothing but its back-off
    brings it back: the n-th retry waits min(cap, base * 2^(n-1))."""
    count, elapsed, delay = 1, 0.0, base
    while elapsed + delay <= window:
        elapsed += delay
        count += 1
        delay = min(cap, delay * 2)
    return count


@dataclass
class BackoffReport:
    """Per process: for each (queue, key) that failed, its failures and its densest burst; and
    what breaks the rules of ``assert_backoff_respected``."""

    bursts: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict)
    failures: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict)
    # Retries sooner than the server's Retry-After: (process, queue, key, seconds after the 429).
    early_after_throttle: list[tuple[str, str, str, float]] = field(default_factory=list)
    # How many back-offs the runtime logged, per process (rule 3 checks each).
    backoffs: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def assert_backoff_respected(
    logs: Mapping[str, list[dict[str, Any]]],
    *,
    retry_after_seconds: float | None = None,
    window: float = 2.0,
    slack: int = 2,
) -> BackoffReport:
    """The place for the check that no key is retried faster than its back-off allows.

    ``logs``: each controller process's JSON log lines (``RunProcess.events()``); each failed
    pass is a "reconcile failed" warning naming its ``queue``, its key (in ``object``) and the
    ``error``. What it checks now, per process and per (queue, key):

    1. Back-off: no ``window``-second stretch holds more failures than back-off allows for
       consecutive failures (``consecutive_failure_bound``: 5 ms, 10 ms, 20 ms ... between
       retries, so 9 failures within 2 s), times ``slack``. A key retried without back-off (a
       hot loop) fails hundreds of times per second and is caught.
    2. Retry-After (when ``retry_after_seconds`` is given: what the server sent with its 429s):
       after a pass failed with 429 Too Many Requests, the key does not fail again sooner than
       that. A second failure within it proves the key was tried again (a pass ran and sent a
       request) before the server allowed it, whatever queued the key.

    3. The retry itself: the runtime logs every back-off it schedules ("backing off", with the
       key's consecutive ``failures`` and the ``retry_in`` it queued the key after). Each must
       wait at least the exponential bound for that many failures (``min(cap, 5 ms * 2^(n-1))``,
       the smallest base of any queue), and, for a 429, at least the server's Retry-After.

    Rule 1 has slack because a watch event queues a key at once whatever its back-off
    (client-go's semantics too: ``add`` supersedes a pending ``add_after``), and a successful
    pass in between resets it; rule 3 checks the delay the runtime chose for every retry.
    """
    report = backoff_report(logs, retry_after_seconds=retry_after_seconds, window=window, slack=slack)
    assert report.problems == [], "\n".join(report.problems)
    return report


def backoff_report(
    logs: Mapping[str, list[dict[str, Any]]],
    *,
    retry_after_seconds: float | None = None,
    window: float = 2.0,
    slack: int = 2,
) -> BackoffReport:
    """What ``assert_backoff_respected`` checks, without asserting (the summary shows it)."""
    allowed = consecutive_failure_bound(window) * slack
    report = BackoffReport()
    for process, events in logs.items():
        per_key = failures_by_key(events)
        report.failures[process] = {key: len(failures) for key, failures in per_key.items()}
        report.bursts[process] = {}
        for (queue, key), failures in per_key.items():
            times = [f.at for f in failures]
            densest, start = 0, 0
            for end, at in enumerate(times):
                while at - times[start] > window:
                    start += 1
                densest = max(densest, end - start + 1)
            report.bursts[process][queue, key] = densest
            if densest > allowed:
                report.problems.append(
                    f"{process}: {queue} key {key!r} failed {densest} times within {window:g}s "
                    f"(back-off allows {allowed // slack}, {allowed} with slack)"
                )
            if retry_after_seconds is None:
                continue
            for first, second in itertools.pairwise(failures):
                if not first.throttled or any(word in second.error for word in _NOT_SENT):
                    continue
                gap = second.at - first.at
                if gap < retry_after_seconds:
                    report.early_after_throttle.append((process, queue, key, gap))
                    report.problems.append(
                        f"{process}: {queue} key {key!r} failed again {gap * 1000:.0f} ms after a 429 that said "
                        f"Retry-After {retry_after_seconds:g}s ({second.error[:80]})"
                    )
        check_retry_delays(process, events, report, retry_after_seconds)
    return report


def check_retry_delays(
    process: str, events: list[dict[str, Any]], report: BackoffReport, retry_after_seconds: float | None
) -> None:
    """Rule 3 of ``assert_backoff_respected``: every back-off the runtime scheduled."""
    for event in events:
        if event.get("msg") != "backing off":
            continue
        failures, retry_in = int(event.get("failures") or 0), float(event.get("retry_in") or 0.0)
        report.backoffs[process] = report.backoffs.get(process, 0) + 1
        bound = min(QUEUE_MAX_DELAY, QUEUE_BASE_DELAY * 2 ** max(0, failures - 1))
        key = str(event.get("key") or event.get("object") or "")
        if retry_in + 1e-9 < bound:
            report.problems.append(f"{process}: {key!r} retried after {retry_in:g}s at failure {failures} (< {bound:g}s)")
        if throttled(str(event.get("reason") or "")) and retry_after_seconds is not None and retry_in + 1e-9 < retry_after_seconds:
            report.problems.append(f"{process}: {key!r} retried {retry_in:g}s after a 429 (Retry-After {retry_after_seconds:g}s)")


# -- the tests ------------------------------------------------------------------------------------


def test_faults_of_every_kind_were_injected(outcome: FaultRun) -> None:
    kinds = ("latency", "drop", "lost_answer", "reset", "throttle", "error", "hang", "watch_cut")
    assert {k: outcome.counts[k] for k in kinds if outcome.counts[k] == 0} == {}, outcome.summary
    assert outcome.fault_seconds >= FAULT_SECONDS


def test_both_rollouts_keep_completing_under_faults(outcome: FaultRun) -> None:
    for rollout in ("workset", "addon"):
        completed = [r for r in outcome.revisions if r.rollout == rollout and r.completed is not None
                     and r.completed <= outcome.fault_seconds]
        assert completed, f"no {rollout} rollout completed during the faults\n{outcome.summary}"


def test_both_rollouts_complete_once_the_faults_stop(outcome: FaultRun) -> None:
    stuck = {r: outcome.state_at_end[r] for r, took in outcome.converged.items() if took is None}
    window = CONVERGE_SECONDS + outcome.pending_backoff
    assert stuck == {}, (f"not complete {window:.0f}s after the faults stopped ({CONVERGE_SECONDS:g}s and a pending "
                         f"back-off of {outcome.pending_backoff:.0f}s): {stuck}\n{outcome.summary}")


def test_the_manifestworks_never_exceed_max_concurrency(outcome: FaultRun) -> None:
    assert outcome.violations["workset"] == [], "\n".join(outcome.violations["workset"][:5])
    assert outcome.monitor_changes["workset"] > 0
    assert 0 < outcome.max_in_flight["workset"] <= MWRS_CONCURRENCY


def test_the_addon_configurations_never_exceed_max_concurrency(outcome: FaultRun) -> None:
    assert outcome.violations["addon"] == [], "\n".join(outcome.violations["addon"][:5])
    assert outcome.monitor_changes["addon"] > 0
    assert 0 < outcome.max_in_flight["addon"] <= ADDON_CONCURRENCY


def test_no_client_waits_on_a_hung_request_for_ever(outcome: FaultRun) -> None:
    """Every request the proxy left unanswered was given up by its client within
    ``GIVE_UP_SECONDS`` (a worker waiting longer is stuck; "proxy stopped" means the client was
    still waiting when the run ended)."""
    stuck = [h for h in outcome.hung if h.waited() > GIVE_UP_SECONDS]
    listed = "\n".join(f"{h.method} {h.path}: waited {h.waited():.0f}s, {h.how}" for h in stuck)
    assert stuck == [], f"{len(stuck)} of {len(outcome.hung)} hung requests waited over {GIVE_UP_SECONDS:g}s:\n{listed}"


def test_the_controllers_exit_cleanly_on_sigterm(outcome: FaultRun) -> None:
    dumps = "\n".join(f"--- {name} ---\n{dump[-6000:]}" for name, dump in outcome.thread_dumps.items())
    assert outcome.exit_codes == dict.fromkeys(CONTROLLERS, 0), f"still running {EXIT_SECONDS:g}s after SIGTERM:\n{dumps}"


def test_no_key_is_retried_faster_than_its_backoff(outcome: FaultRun) -> None:
    report = assert_backoff_respected(outcome.logs, retry_after_seconds=RATES.retry_after_seconds)
    assert any(report.failures.values()), "no reconcile failed under faults: were the faults injected?"


def test_consecutive_failure_bound_follows_the_queue_backoff() -> None:
    assert consecutive_failure_bound(0.004) == 1
    assert consecutive_failure_bound(0.005) == 2
    assert consecutive_failure_bound(0.035) == 4  # 5 + 10 + 20 ms
    assert consecutive_failure_bound(2.0) == 9


def test_failures_are_read_by_queue_and_key() -> None:
    events = [
        {"time": "2026-01-01T00:00:00.000000Z", "msg": "reconcile failed", "object": "ns/a", "queue": "workset",
         "error": "KubeError('429 TooManyRequests: slow down')"},
        {"time": "2026-01-01T00:00:00.100000Z", "msg": "reconcile failed", "object": "ns/a", "queue": "workset",
         "error": "KubeError('500 InternalError')"},
        {"time": "2026-01-01T00:00:00.200000Z", "msg": "something else", "object": "ns/a", "queue": "workset"},
    ]
    found = failures_by_key(events)
    assert list(found) == [("workset", "ns/a")]
    first, second = found["workset", "ns/a"]
    assert abs(second.at - first.at - 0.1) < 1e-6
    assert first.throttled and not second.throttled


def test_a_retry_sooner_than_retry_after_is_reported() -> None:
    events = [
        {"time": "2026-01-01T00:00:00.000000Z", "msg": "reconcile failed", "object": "a", "queue": "addon",
         "error": "KubeError('429 TooManyRequests: slow down')"},
        {"time": "2026-01-01T00:00:00.050000Z", "msg": "reconcile failed", "object": "a", "queue": "addon",
         "error": "ProtocolError('Connection aborted.')"},
        {"time": "2026-01-01T00:00:05.000000Z", "msg": "reconcile failed", "object": "a", "queue": "addon",
         "error": "KubeError('429 TooManyRequests: slow down')"},
        {"time": "2026-01-01T00:00:06.500000Z", "msg": "reconcile failed", "object": "a", "queue": "addon",
         "error": "KubeError('500 InternalError')"},
    ]
    report = backoff_report({"addon": events}, retry_after_seconds=1.0)
    assert [(p, q, k, round(gap, 3)) for p, q, k, gap in report.early_after_throttle] == [("addon", "addon", "a", 0.05)]
    assert len(report.problems) == 1
    with pytest.raises(AssertionError, match="Retry-After"):
        assert_backoff_respected({"addon": events}, retry_after_seconds=1.0)


def test_only_a_429_answer_counts_as_throttled() -> None:
    """A connection error naming a port that holds "429" is no 429: two of them within a second
    break no Retry-After (CI once failed so, on a proxy listening on a port 429xx)."""
    timeout = "ReadTimeoutError(\"HTTPSConnectionPool(host='127.0.0.1', port=42917): Read timed out.\")"
    assert throttled("KubeError('429 TooManyRequests: slow down')")
    assert throttled("KubeError('429 Too Many Requests: slow down')")
    assert not throttled(timeout)
    assert not throttled("MaxRetryError(\"HTTPSConnectionPool(host='127.0.0.1', port=34291): Max retries\")")
    events = [
        {"time": "2026-01-01T00:00:00.000000Z", "msg": "reconcile failed", "object": "a", "queue": "workset",
         "error": timeout},
        {"time": "2026-01-01T00:00:00.046000Z", "msg": "reconcile failed", "object": "a", "queue": "workset",
         "error": "ProtocolError('Connection aborted.')"},
        {"time": "2026-01-01T00:00:00.040000Z", "msg": "backing off", "object": "a", "queue": "workset",
         "failures": 4, "retry_in": 0.04, "reason": timeout},
    ]
    assert backoff_report({"workset": events}, retry_after_seconds=1.0).problems == []


def test_a_hot_loop_is_reported() -> None:
    events = [
        {"time": f"2026-01-01T00:00:00.{i:02d}0000Z", "msg": "reconcile failed", "object": "k", "queue": "workset",
         "error": "KubeError('500 InternalError')"}
        for i in range(30)
    ]
    with pytest.raises(AssertionError, match="30 times within 2s"):
        assert_backoff_respected({"workset": events})
