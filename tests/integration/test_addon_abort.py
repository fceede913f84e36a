"""failureStrategy AbortAll, retry and pause of add-on configuration rollouts, on a private local hub
with simulated add-on frameworks and work agents (ocm_rollout.sandbox.simulation) and the real addon operator.

The profile plays examples/profiles/addon-bad-config.yaml on a few clusters: from generation 2 on
their add-on deploy works fail to apply (ApplyFailed), so the ManagedClusterAddOns that get a new
configuration stay Progressing and time out at the progressDeadline."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORTED,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
    EVENT_ROLLOUT_ABORTED,
    EVENT_ROLLOUT_RETRIED,
    REASON_ROLLOUT_ABORTED,
    REASON_ROLLOUT_PAUSED,
)
from ocm_rollout.cli.main import main
from ocm_rollout.client.kube import CLUSTER_MANAGEMENT_ADDONS, JSON, MANAGED_CLUSTER_ADDONS
from ocm_rollout.controllers.addon import abort
from tests.integration.helpers import Check, WatchMonitor, decide_groups, holds_for, wait_for
from tests.integration.test_addon_env import AddonEnv, adc_ref

pytestmark = pytest.mark.integration

FLEET = 16
BAD = ["cluster1", "cluster2", "cluster5", "cluster6", "cluster11", "cluster12"]
PROFILE: JSON = {
    "defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "150ms", "outcome": "Succeeded"},
    "clusters": [
        {"name": BAD, "works": "addon-*", "minGeneration": 2, "outcome": "ApplyFailed",
         "message": "admission webhook denied the add-on agent: invalid customized variable in the new AddOnDeploymentConfig"},
        # The add-ons of the pause test take two seconds per cluster.
        {"works": "addon-slow*", "progressDuration": "2s"},
    ],
}
ADC_NS = "addon-configs"
# One add-on at a time, so both bad clusters fail in turn and the breach never depends on timing.
# With two at a time the bad pair's Progressing conditions can carry lastTransitionTimes a second
# apart (they have second precision): the first one then times out alone, one failure is within
# maxFailures, its slot is free, and the walk rightly gives the next (good) cluster the config.
ABORT_ALL: JSON = {
    "type": "Progressive",
    "progressive": {"maxConcurrency": 1, "maxFailures": 1, "progressDeadline": "2s"},
    "failureStrategy": "AbortAll",
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[AddonEnv]:
    """A private hub with simulated clusters cluster1..cluster16 and the addon operator."""
    environment = AddonEnv(tmp_path_factory.mktemp("addon-abort"), kind=hub_kind)
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


def desired_names(mca: JSON | None) -> list[tuple[str, str]]:
    """(name, spec hash) of each desired configuration of an MCA."""
    return [
        (str((r.get("desiredConfig") or {}).get("name")), str((r.get("desiredConfig") or {}).get("specHash") or ""))
        for r in ((mca or {}).get("status") or {}).get("configReferences") or []
    ]


class Addon:
    """An add-on installed on ``clusters`` by one placement with ADC ``<name>-config`` (variable
    v1), its configuration rollout Completed (so the placement has a last known good config)."""

    def __init__(self, env: AddonEnv, clusters: list[str], prefix: str = "addon") -> None:
        self.env = env
        self.clusters = clusters
        self.name = env.unique(prefix)
        self.ns = env.namespace(env.unique("abort"))
        self.config = f"{self.name}-config"
        env.adc(ADC_NS, self.config, "v1")
        self.v1 = env.adc_hash(ADC_NS, self.config)
        env.placement(self.ns, "p", [clusters])
        env.cma(self.name, placements=[self.placement(self.config, None)])
        wait_for(lambda: all(desired_names(self.mca(c)) == [(self.config, self.v1)] and applied(self.mca(c)) for c in clusters),
                 timeout=90, what=f"{self.name} installed")
        self.wait_reason("Completed")

    def placement(self, config: str, strategy: JSON | None) -> JSON:
        item: JSON = {"namespace": self.ns, "name": "p", "configs": [adc_ref(ADC_NS, config)]}
        if strategy is not None:
            item["rolloutStrategy"] = strategy
        return item

    def mca(self, cluster: str) -> JSON | None:
        return self.env.get_mca(cluster, self.name)

    def cma(self) -> JSON:
        return self.env.get_cma(self.name)

    def set_placement(self, config: str, strategy: JSON | None) -> None:
        """Point the placement at ``config`` under ``strategy``; wait until the operator saw it."""
        patched = self.env.api.patch(CLUSTER_MANAGEMENT_ADDONS, self.name, {"spec": {"installStrategy": {
            "type": "Placements", "placements": [self.placement(config, strategy)],
        }}})
        generation = patched["metadata"]["generation"]

        def seen() -> bool:
            controller = self.env.operator.controller
            cached = None if controller is None else controller.cma_cache.get(self.name)
            return (cached or {}).get("metadata", {}).get("generation") == generation

        wait_for(seen, what="the new install strategy seen by the operator")

    def annotate(self, key: str, value: str | None) -> None:
        self.env.api.patch(CLUSTER_MANAGEMENT_ADDONS, self.name, {"metadata": {"annotations": {key: value}}})

    def record(self) -> dict[str, abort.Abort]:
        return abort.parse(((self.cma().get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ROLLOUT_ABORTED))

    def condition(self) -> JSON:
        return self.env.progression_condition(self.name) or {}

    def wait_reason(self, reason: str, timeout: float = 90) -> JSON:
        return dict(wait_for(lambda: self.condition() if self.condition().get("reason") == reason else None,
                             timeout=timeout, what=f"{self.name} Progressing {reason}"))

    def wait_aborted(self, other_than: str = "") -> abort.Abort:
        """The placement's abort once recorded (one at another time than ``other_than``)."""

        def found() -> abort.Abort | None:
            record = self.record().get(f"{self.ns}/p")
            return record if record is not None and record.time != other_than else None

        return wait_for(found, timeout=60, what=f"{self.name} aborted")

    def events(self, reason: str) -> list[JSON]:
        return [e for e in self.env.events(self.name) if e.get("reason") == reason]

    def monitor(self, check: Check) -> WatchMonitor:
        return WatchMonitor(self.env.kubeconfig, MANAGED_CLUSTER_ADDONS, [check]).start()


def status_text(addon: Addon, capsys: pytest.CaptureFixture[str]) -> str:
    """What `ocm-rollout status --kind addon NAME` prints."""
    capsys.readouterr()
    assert main(["status", "--kubeconfig", addon.env.kubeconfig, "--kind", "addon", addon.name]) == 0
    return capsys.readouterr().out


def never_given(addon: Addon, config: str, clusters: list[str]) -> Check:
    """A monitor check: none of ``clusters`` ever has ``config`` among its desired configurations."""

    def check(mcas: dict[tuple[str, str], JSON]) -> str | None:
        for cluster in clusters:
            names = [n for n, _ in desired_names(mcas.get((cluster, addon.name)))]
            if config in names:
                return f"{cluster} was given {config}"
        return None

    return check


def test_abort_all_returns_a_renamed_config_rollout_to_the_last_known_good_config(
    fleet: AddonEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    addon = Addon(fleet, ["cluster1", "cluster2", "cluster3", "cluster4"])
    v2 = f"{addon.name}-config-v2"
    fleet.adc(ADC_NS, v2, "v2")
    monitor = addon.monitor(never_given(addon, v2, ["cluster3", "cluster4"]))
    try:
        addon.set_placement(v2, ABORT_ALL)
        record = addon.wait_aborted()
        assert record.cause == abort.CAUSE_MAX_FAILURES and set(record.clusters) == {"cluster1", "cluster2"}
        # The add-ons that took v2 return to v1's name and spec hash.
        wait_for(lambda: all(desired_names(addon.mca(c)) == [(addon.config, addon.v1)] for c in addon.clusters),
                 timeout=30, what="every add-on back on the last known good config")
        condition = addon.wait_reason(REASON_ROLLOUT_ABORTED)
        assert condition["status"] == "False"
        assert (
            f"The add-ons return to the last known good configuration AddOnDeploymentConfig {ADC_NS}/{addon.config} "
            f"(spec hash {addon.v1[:12]})" in condition["message"]
        )
        assert f"{ANNOTATION_ROLLOUT_RETRY}={record.time}" in condition["message"]
        events = addon.events(EVENT_ROLLOUT_ABORTED)
        assert len(events) == 1 and events[0]["type"] == "Warning"
        assert "cluster1 (TimeOut" in events[0]["message"] and "cluster2 (TimeOut" in events[0]["message"]
        # Aborted: no add-on gets v2 any more.
        holds_for(lambda: all(v2 not in [n for n, _ in desired_names(addon.mca(c))] for c in addon.clusters), 3,
                  what="no add-on given the aborted config")
        assert addon.record()[f"{addon.ns}/p"] == record
        assert len(addon.events(EVENT_ROLLOUT_ABORTED)) == 1
        text = status_text(addon, capsys)
        assert f"ABORTED at {record.time} (failureStrategy AbortAll, maxFailures breached by 2 add-on(s)" in text
        assert f"the add-ons return to the last known good configuration AddOnDeploymentConfig {ADC_NS}/{addon.config}" in text
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])


def test_abort_all_refuses_to_revert_a_config_changed_in_place(fleet: AddonEnv) -> None:
    addon = Addon(fleet, ["cluster5", "cluster6", "cluster7", "cluster8"])
    addon.set_placement(addon.config, ABORT_ALL)
    fleet.adc(ADC_NS, addon.config, "v2")
    v2 = fleet.adc_hash(ADC_NS, addon.config)
    monitor = addon.monitor(lambda mcas: next(
        (f"{c} was given {v2}" for c in ("cluster7", "cluster8")
         if (addon.config, v2) in desired_names(mcas.get((c, addon.name)))), None))
    try:
        record = addon.wait_aborted()
        assert set(record.clusters) == {"cluster5", "cluster6"}
        condition = addon.wait_reason(REASON_ROLLOUT_ABORTED)
        assert (
            f"It cannot be reverted: AddOnDeploymentConfig {ADC_NS}/{addon.config} was changed in place; its last "
            f"known good content (spec hash {addon.v1[:12]}) no longer exists" in condition["message"]
        )
        # The rollout stays stopped: the failing add-ons keep v2, the others v1.
        holds_for(lambda: [desired_names(addon.mca(c)) for c in addon.clusters]
                  == [[(addon.config, v2)]] * 2 + [[(addon.config, addon.v1)]] * 2, 3, what="nothing reverted, nothing widened")
        events = addon.events(EVENT_ROLLOUT_ABORTED)
        assert len(events) == 1 and "it cannot be reverted: AddOnDeploymentConfig" in events[0]["message"]
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])


def test_a_retry_resumes_an_aborted_rollout_and_a_stale_retry_never_undoes_a_later_abort(fleet: AddonEnv) -> None:
    addon = Addon(fleet, ["cluster11", "cluster12", "cluster13", "cluster14"])
    v2 = f"{addon.name}-config-v2"
    fleet.adc(ADC_NS, v2, "v2")
    v2_hash = fleet.adc_hash(ADC_NS, v2)
    addon.set_placement(v2, ABORT_ALL)
    first = addon.wait_aborted()
    wait_for(lambda: all(desired_names(addon.mca(c)) == [(addon.config, addon.v1)] for c in addon.clusters),
             timeout=30, what="reverted")

    # Retry without fixing anything: the rollout starts again, breaches again, is aborted again,
    # at another time; the retry annotation (still naming the first abort) does not undo it.
    addon.annotate(ANNOTATION_ROLLOUT_RETRY, first.time)
    second = addon.wait_aborted(other_than=first.time)
    assert second.time != first.time
    assert addon.events(EVENT_ROLLOUT_RETRIED)
    wait_for(lambda: all(desired_names(addon.mca(c)) == [(addon.config, addon.v1)] for c in addon.clusters),
             timeout=30, what="reverted again")
    holds_for(lambda: addon.record()[f"{addon.ns}/p"] == second, 3, what="the second abort holds")
    assert len(addon.events(EVENT_ROLLOUT_ABORTED)) == 2

    # The user takes the broken clusters out of the placement and retries: the rollout finishes.
    decide_groups(fleet.api, addon.ns, "p", [["cluster13", "cluster14"]])
    wait_for(lambda: addon.mca("cluster11") is None and addon.mca("cluster12") is None, what="broken clusters removed")
    holds_for(lambda: f"{addon.ns}/p" in addon.record(), 2, what="the abort holds when the failures are gone")
    addon.annotate(ANNOTATION_ROLLOUT_RETRY, second.time)
    wait_for(lambda: all(desired_names(addon.mca(c)) == [(v2, v2_hash)] and applied(addon.mca(c))
                         for c in ("cluster13", "cluster14")), timeout=60, what="v2 applied after the retry")
    condition = addon.wait_reason("Completed")
    assert "configured addons 2/2 completed" in condition["message"]
    assert addon.record() == {}
    good = addon.cma()["status"]["installProgressions"][0]["configReferences"][0]["lastKnownGoodConfig"]
    assert (good["name"], good["specHash"]) == (v2, v2_hash)


def test_pause_holds_the_rollout_and_resume_finishes_it(fleet: AddonEnv, capsys: pytest.CaptureFixture[str]) -> None:
    addon = Addon(fleet, ["cluster3", "cluster4", "cluster7", "cluster8"], prefix="slow")
    v2 = f"{addon.name}-config-v2"
    fleet.adc(ADC_NS, v2, "v2")
    v2_hash = fleet.adc_hash(ADC_NS, v2)
    addon.set_placement(v2, {"type": "Progressive", "progressive": {"maxConcurrency": 1}})
    wait_for(lambda: desired_names(addon.mca("cluster3")) == [(v2, v2_hash)], what="the first add-on given v2")
    addon.annotate(ANNOTATION_ROLLOUT_PAUSED, "true")
    condition = addon.wait_reason(REASON_ROLLOUT_PAUSED, timeout=30)
    assert condition["status"] == "Unknown"
    held = {c: desired_names(addon.mca(c)) for c in addon.clusters}
    assert any(names == [(addon.config, addon.v1)] for names in held.values()), f"nothing left to hold: {held}"

    def unchanged(mcas: dict[tuple[str, str], JSON]) -> str | None:
        for cluster in addon.clusters:
            now = desired_names(mcas.get((cluster, addon.name)))
            if now != held[cluster]:
                return f"{cluster} changed while paused: {held[cluster]} -> {now}"
        return None

    monitor = addon.monitor(unchanged)
    try:
        holds_for(lambda: addon.condition().get("reason") == REASON_ROLLOUT_PAUSED, 10, what="paused for 10 s")
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert f"PAUSED (annotation {ANNOTATION_ROLLOUT_PAUSED}=true)" in status_text(addon, capsys)

    addon.annotate(ANNOTATION_ROLLOUT_PAUSED, None)
    wait_for(lambda: all(desired_names(addon.mca(c)) == [(v2, v2_hash)] and applied(addon.mca(c)) for c in addon.clusters),
             timeout=90, what="resumed and finished")
    addon.wait_reason("Completed")


def test_killing_the_controller_around_an_abort_converges_without_widening(fleet: AddonEnv) -> None:
    """The operator killed at random moments while the rollout breaches, aborts and reverts: the same
    abort (one record, its time unchanged once written), every add-on back on v1, and the clusters
    after the first batch never given v2."""
    addon = Addon(fleet, ["cluster1", "cluster2", "cluster3", "cluster4"])
    v2 = f"{addon.name}-config-v2"
    fleet.adc(ADC_NS, v2, "v2")
    monitor = addon.monitor(never_given(addon, v2, ["cluster3", "cluster4"]))
    rng = random.Random(20261126)
    try:
        addon.set_placement(v2, ABORT_ALL)
        deadline = time.monotonic() + 8
        kills = 0
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.05, 0.6))
            fleet.operator.kill()
            fleet.operator.start()
            kills += 1
        record = addon.wait_aborted()
        wait_for(lambda: all(desired_names(addon.mca(c)) == [(addon.config, addon.v1)] for c in addon.clusters),
                 timeout=30, what="every add-on back on the last known good config")
        fleet.operator.kill()
        fleet.operator.start()
        holds_for(lambda: addon.record() == {f"{addon.ns}/p": record}, 3, what="the same abort after a restart")
        assert addon.wait_reason(REASON_ROLLOUT_ABORTED)["status"] == "False"
    finally:
        monitor.stop()
    assert kills >= 8
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert len(addon.events(EVENT_ROLLOUT_ABORTED)) <= 1
