"""Add-on configuration rollouts driven by the simulated add-on frameworks and work agents
(ocm_rollout.sandbox.simulation), with a watch-driven monitor that checks the rollout's bounds at every single
ManagedClusterAddOn change, and restart safety (the controller killed mid-rollout)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_RESERVATIONS
from ocm_rollout.client.kube import CLUSTER_MANAGEMENT_ADDONS, JSON, MANAGED_CLUSTER_ADDONS
from tests.integration.helpers import (
    STRESS_RUNS,
    Check,
    ControllerProcess,
    ControllerThread,
    SecondInstance,
    WatchMonitor,
    condition,
    holds_for,
    wait_for,
)
from tests.integration.test_addon_env import AddonEnv, adc_ref, desired_hashes

pytestmark = pytest.mark.integration

FLEET = 54
PROFILE: JSON = {
    "defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "150ms", "outcome": "Succeeded"},
    "clusters": [
        {"name": ["cluster51", "cluster52"], "works": "addon-*", "minGeneration": 2, "outcome": "ApplyFailed",
         "message": "invalid customized variable"},
    ],
}
RELIABLE = [f"cluster{i}" for i in range(1, 51)]
ADC_NS = "addon-configs"


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[AddonEnv]:
    """A private hub with simulated clusters cluster1..cluster54 and the addon operator."""
    environment = AddonEnv(tmp_path_factory.mktemp("addon-agents"), kind=hub_kind)
    try:
        environment.simulate(FLEET, PROFILE)
        environment.namespace(ADC_NS)
        environment.operator.start()
        yield environment
    finally:
        environment.close()


def applied(mca: JSON | None) -> bool:
    refs = ((mca or {}).get("status") or {}).get("configReferences") or []
    return bool(refs) and all((r.get("lastAppliedConfig") or {}) == (r.get("desiredConfig") or {}) for r in refs)


def in_flight(addon: str, old: dict[str, str], mcas: dict[tuple[str, str], JSON]) -> list[str]:
    """MCAs of ``addon`` given another desired configuration than ``old`` and not applied yet."""
    return sorted(
        cluster for (cluster, name), mca in mcas.items()
        if name == addon and desired_hashes(mca) != old and not applied(mca)
    )


def at_most(addon: str, old: dict[str, str], bound: int, seen: list[int] | None = None) -> Check:
    """The bound check; ``seen`` (if given) collects the number in flight at every change."""

    def check(mcas: dict[tuple[str, str], JSON]) -> str | None:
        flying = in_flight(addon, old, mcas)
        if seen is not None:
            seen.append(len(flying))
        return f"{len(flying)} MCAs in flight (bound {bound}): {flying}" if len(flying) > bound else None

    return check


def monitor_mcas(env: AddonEnv, *checks: Check) -> WatchMonitor:
    """A started monitor of every ManagedClusterAddOn change."""
    return WatchMonitor(env.kubeconfig, MANAGED_CLUSTER_ADDONS, list(checks)).start()


class Rollout:
    """An add-on installed with the All strategy on ``clusters`` (one placement, one ADC), then
    ready for a configuration update under ``strategy``."""

    def __init__(self, env: AddonEnv, clusters: list[str], groups: list[list[str]] | None = None) -> None:
        self.env = env
        self.clusters = clusters
        self.name = env.unique("addon")
        self.ns = env.namespace(env.unique("agents"))
        self.config = f"{self.name}-config"
        env.adc(ADC_NS, self.config, "v1")
        env.placement(self.ns, "p", groups or [clusters])
        env.cma(self.name, placements=[{"namespace": self.ns, "name": "p", "configs": [adc_ref(ADC_NS, self.config)]}])
        self.old = self.wait_applied()

    def mcas(self) -> dict[str, JSON | None]:
        return {c: self.env.get_mca(c, self.name) for c in self.clusters}

    def wait_applied(self, clusters: list[str] | None = None, timeout: float = 90) -> dict[str, str]:
        """Wait until every MCA applied one same desired configuration (after ``update``, another
        one than the installed ``old``); return it."""
        old = getattr(self, "old", None)

        def same() -> dict[str, str] | None:
            found = [self.env.get_mca(c, self.name) for c in clusters or self.clusters]
            if not all(applied(m) for m in found):
                return None
            hashes = [desired_hashes(m) for m in found]
            ok = all(h == hashes[0] for h in hashes) and hashes[0] and hashes[0] != old
            return hashes[0] if ok else None

        return dict(wait_for(same, timeout=timeout, what=f"{self.name} applied everywhere"))

    def update(self, strategy: JSON, instances: Sequence[ControllerThread] = ()) -> None:
        """Give the placement ``strategy``, then a new configuration. The running controller
        ``instances`` (default: the env's operator, if running) see the strategy first; a
        controller process must be stopped meanwhile (it reads both when it starts)."""
        patched = self.env.api.patch(CLUSTER_MANAGEMENT_ADDONS, self.name, {"spec": {"installStrategy": {"type": "Placements", "placements": [
            {"namespace": self.ns, "name": "p", "configs": [adc_ref(ADC_NS, self.config)], "rolloutStrategy": strategy}
        ]}}})
        generation = patched["metadata"]["generation"]
        running = list(instances) or ([self.env.operator] if self.env.operator.thread is not None else [])

        def seen() -> bool:
            for instance in running:
                controller = instance.controller
                cached = None if controller is None else controller.cma_cache.get(self.name)
                if (cached or {}).get("metadata", {}).get("generation") != generation:
                    return False
            return True

        wait_for(seen, what="the new strategy seen by every running controller")
        self.env.adc(ADC_NS, self.config, "v2")

    def finished(self) -> bool:
        """Every MCA applied a new desired configuration."""
        return all(applied(m) and desired_hashes(m) != self.old for m in self.mcas().values())

    def progression_message(self) -> str:
        cond = self.env.progression_condition(self.name)
        return "" if cond is None else str(cond.get("message"))

    def settled(self, timeout: float = 180) -> None:
        """`wait_applied` and `completed`, each within ``timeout``."""
        self.wait_applied(timeout=timeout)
        self.completed(timeout=timeout)

    def completed(self, timeout: float = 120) -> None:
        total = len(self.clusters)
        wait_for(
            lambda: f"configured addons {total}/{total} completed with no errors" in self.progression_message(),
            timeout=timeout,
            what=f"{self.name} Completed",
        )


def test_progressive_config_rollout_never_exceeds_max_concurrency(agents: AddonEnv) -> None:
    rollout = Rollout(agents, RELIABLE[:20])
    seen: list[int] = []
    monitor = monitor_mcas(agents, at_most(rollout.name, rollout.old, 3, seen))
    try:
        rollout.update({"type": "Progressive", "progressive": {"maxConcurrency": 3}})
        new = rollout.wait_applied()
        rollout.completed()
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert new != rollout.old
    assert max(seen) >= 2, "the monitor saw several add-ons in flight at once"
    waves = [e for e in agents.events(rollout.name) if e.get("reason") == "RolloutWaveStarted"]
    assert len(waves) >= 7


def test_progressive_per_group_never_starts_a_group_early(agents: AddonEnv) -> None:
    groups = [RELIABLE[20:23], RELIABLE[23:27], RELIABLE[27:30]]
    rollout = Rollout(agents, RELIABLE[20:30], groups)
    group_of = {c: i for i, g in enumerate(groups) for c in g}

    def ordered(mcas: dict[tuple[str, str], JSON]) -> str | None:
        mine = {c: m for (c, n), m in mcas.items() if n == rollout.name}
        for cluster, mca in mine.items():
            if desired_hashes(mca) == rollout.old:
                continue
            index = group_of[cluster]
            behind = [c for g in groups[:index] for c in g
                      if desired_hashes(mine.get(c)) == rollout.old or not applied(mine.get(c))]
            if behind:
                return f"group {index} ({cluster}) started before {behind} finished"
        return None

    monitor = monitor_mcas(agents, ordered)
    try:
        rollout.update({"type": "ProgressivePerGroup"})
        rollout.wait_applied()
        rollout.completed()
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])


def test_a_progress_deadline_breaching_max_failures_stops_the_rollout(agents: AddonEnv) -> None:
    clusters = ["cluster51", "cluster52", "cluster53", "cluster54"]
    rollout = Rollout(agents, clusters)
    # One at a time: two in flight could time out a second apart (lastTransitionTime has second
    # precision), and the first time-out alone is within maxFailures and frees its slot.
    rollout.update({"type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 1, "progressDeadline": "2s"}})
    breach = wait_for(
        lambda: [e for e in agents.events(rollout.name) if e.get("reason") == "MaxFailuresBreached"],
        timeout=60, what="breach event",
    )[0]
    assert "cluster51" in breach["message"] and "cluster52" in breach["message"]
    assert "selected clusters 4. configured addons 0/4 progressing..., 0 failed 2 timeout." == rollout.progression_message()
    holds_for(
        lambda: all(desired_hashes(rollout.env.get_mca(c, rollout.name)) == rollout.old for c in clusters[2:]),
        1.5, what="no MCA configured after the breach",
    )


# --- restart safety ------------------------------------------------------------------------------------

PROGRESSIVE_2 = {"type": "Progressive", "progressive": {"maxConcurrency": 2}}
# The restart tests roll one cluster at a time, so that ten kills fit in the rollout.
PROGRESSIVE_1 = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
# The final state of an uninterrupted rollout over the 50 reliable clusters (set by the first test).
STEADY_SHAPE: dict[str, Any] = {}


def _shape(rollout: Rollout) -> dict[str, Any]:
    """What must be identical between an uninterrupted and an interrupted rollout."""
    cma = rollout.env.get_cma(rollout.name)
    progression = cma["status"]["installProgressions"][0]
    mcas = rollout.mcas()
    return {
        "conditions": sorted((c["type"], c["status"], c["reason"], c["message"]) for c in progression["conditions"]),
        "applied": sorted(
            (r["desiredConfig"]["name"], (r.get("lastAppliedConfig") or {}).get("name"), (r.get("lastKnownGoodConfig") or {}).get("name"))
            for r in progression["configReferences"]
        ),
        "mcas": sorted(
            (c, applied(m), tuple(sorted(
                (x["type"], x["status"], x["reason"]) for x in (m or {}).get("status", {}).get("conditions") or []
                if x["type"] in ("Configured", "Progressing")
            )))
            for c, m in mcas.items()
        ),
        "reservations": (cma["metadata"].get("annotations") or {}).get(ANNOTATION_ROLLOUT_RESERVATIONS),
    }


def _same_config(shape: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
    """The shape with this rollout's own config name replaced, to compare two rollouts."""
    shape = dict(shape)
    shape["applied"] = [tuple("CONFIG" if v == rollout.config else v for v in item) for item in shape["applied"]]
    return shape


def steady_shape(env: AddonEnv) -> dict[str, Any]:
    """The final state of an uninterrupted Progressive rollout over the 50 reliable clusters
    (computed once per module)."""
    if "shape" not in STEADY_SHAPE:
        steady = Rollout(env, RELIABLE)
        steady.update(PROGRESSIVE_1)
        steady.settled()
        STEADY_SHAPE["shape"] = _same_config(_shape(steady), steady)
    return dict(STEADY_SHAPE["shape"])


def test_killing_the_controller_mid_config_rollout_changes_nothing(agents: AddonEnv) -> None:
    expected = steady_shape(agents)

    rollout = Rollout(agents, RELIABLE)
    monitor = monitor_mcas(agents, at_most(rollout.name, rollout.old, 1))
    rng = random.Random(20261125)
    kills = 0
    try:
        rollout.update(PROGRESSIVE_1)
        while kills < 12:
            # A random moment (mid-write, mid-wave, idle), then kill: a pause on purpose.
            time.sleep(rng.uniform(0.05, 0.5))
            finished = rollout.finished()
            agents.operator.kill()
            agents.operator.start()
            if finished:
                break
            kills += 1
        rollout.settled()
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills >= 10
    assert _same_config(_shape(rollout), rollout) == expected


def test_a_sigkilled_controller_process_resumes_without_widening(agents: AddonEnv) -> None:
    """`ocm-rollout run --controllers addon` killed with SIGKILL at random moments after it is
    ready, ten times during a Progressive configuration rollout over 50 clusters."""
    steady = steady_shape(agents)
    agents.operator.kill()
    rollout: Rollout | None = None
    process = ControllerProcess("addon", agents.kubeconfig)
    kills = 0
    monitor: WatchMonitor | None = None
    try:
        process.start()
        rollout = Rollout(agents, RELIABLE)
        monitor = monitor_mcas(agents, at_most(rollout.name, rollout.old, 1))
        # The process reads the new strategy and the new configuration together when it starts.
        process.sigkill()
        rollout.update(PROGRESSIVE_1)
        process.start()
        kills = process.kill_at_random(random.Random(11), rollout.finished)
        rollout.settled()
    finally:
        if monitor is not None:
            monitor.stop()
        process.sigkill()
        agents.operator.start()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills == 10
    assert rollout is not None and _same_config(_shape(rollout), rollout) == steady


# --- overlapping instances under random kills (the rollout fence) ------------------------------------


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
def test_overlapping_instances_killed_at_random_never_widen(agents: AddonEnv, round_: int) -> None:
    """Two add-on managers run at once for the whole configuration rollout; at random moments one
    of them is aborted mid-flight and started again. Every MCA change is checked against the bound."""
    rollout = Rollout(agents, RELIABLE[:30])
    monitor = monitor_mcas(agents, at_most(rollout.name, rollout.old, 2))
    rng = random.Random(f"addon-{round_}")
    kills = 0
    try:
        with SecondInstance(agents.operator) as overlap:
            rollout.update(PROGRESSIVE_2, overlap.instances)
            while kills < 40:
                time.sleep(rng.uniform(0.02, 0.3))
                if rollout.finished():
                    break
                overlap.restart_one(rng)
                kills += 1
            rollout.settled()
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills >= 5
    assert condition(rollout.env.get_mca(RELIABLE[0], rollout.name), "Progressing") is not None
