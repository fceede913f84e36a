"""docs/behaviour/addons.md 13 scenarios 16-22 and 24 (configuration rollout through the placements' strategies)
on the local hub, through the real kopf operator, with the add-on's framework and agent played by
hand (as OCM's own integration tests do), plus improvements 1 and 3 of the add-on manager."""

from __future__ import annotations

import time

import pytest

from ocm_rollout.api.constants import ADDON_CONDITION_CONFIGURED, ADDON_CONDITION_PROGRESSING
from ocm_rollout.client.kube import CLUSTER_MANAGEMENT_ADDONS, JSON, PLACEMENTS
from ocm_rollout.controllers.common.wire import parse_time
from tests.integration.helpers import condition, holds_for, wait_for
from tests.integration.test_addon_env import AddonEnv, adc_ref, env

pytestmark = pytest.mark.integration
__all__ = ["env"]


def desired_of(env: AddonEnv, cluster: str, name: str) -> str | None:
    items = env.config_refs(cluster, name)
    return items[0]["desiredConfig"].get("specHash") if items else None


def applied_of(env: AddonEnv, cluster: str, name: str) -> str | None:
    items = env.config_refs(cluster, name)
    return ((items[0].get("lastAppliedConfig") or {}).get("specHash")) if items else None


def message(env: AddonEnv, name: str, index: int = 0) -> str:
    cond = env.progression_condition(name, index)
    return "" if cond is None else str(cond.get("message"))


def set_strategy(env: AddonEnv, name: str, ns: str, placement: str, config: str, strategy: JSON) -> None:
    env.api.patch(CLUSTER_MANAGEMENT_ADDONS, name, {"spec": {"installStrategy": {"type": "Placements", "placements": [
        {"namespace": ns, "name": placement, "configs": [adc_ref(ns, config)], "rolloutStrategy": strategy}
    ]}}})


class Fleet:
    """Four clusters in two decision groups, an add-on installed by one placement with one ADC."""

    def __init__(self, env: AddonEnv) -> None:
        self.env = env
        self.ns = env.namespace(env.unique("roll"))
        self.clusters = env.clusters(4)
        env.adc(self.ns, "deploy-config", "test")
        env.placement(self.ns, "p", [self.clusters[:2], self.clusters[2:]])
        self.name = env.unique("addon")
        env.cma(self.name, placements=[{"namespace": self.ns, "name": "p", "configs": [adc_ref(self.ns, "deploy-config")]}])
        wait_for(lambda: all(env.get_mca(c, self.name) for c in self.clusters), what="MCAs")
        for cluster in self.clusters:
            env.manifest_applied(cluster, self.name)

    def desired(self) -> list[str | None]:
        return [desired_of(self.env, c, self.name) for c in self.clusters]

    def applied(self) -> list[str | None]:
        return [applied_of(self.env, c, self.name) for c in self.clusters]

    def agents(self, clusters: list[str], ready: bool = True) -> None:
        self.env.agent_step(clusters, self.name, ready)

    def state(self) -> JSON:
        return self.env.describe(self.clusters, self.name)

    def installed(self) -> str:
        """Scenario 16: the fresh install rolls out everywhere; returns H(test)."""
        expected = self.env.adc_hash(self.ns, "deploy-config")
        wait_for(lambda: self.desired() == [expected] * 4, what="desired everywhere", state=self.state)
        self.agents(self.clusters)
        wait_for(lambda: self.applied() == [expected] * 4, what="applied everywhere", state=self.state)
        # Over once a pass has seen it: until then an add-on the install gave its configuration may
        # still be reserved, and a reserved add-on takes the first slot of the next rollout
        # (docs/behaviour/addons.md, section 8), which the scenarios after this one do not expect.
        wait_for(lambda: "4/4 completed" in message(self.env, self.name), what="install Completed", state=self.state)
        return expected


def test_a_fresh_install_rolls_out_and_completes(env: AddonEnv) -> None:
    fleet = Fleet(env)
    expected = fleet.installed()
    for cluster in fleet.clusters:
        mca = env.get_mca(cluster, fleet.name)
        progressing = condition(mca, ADDON_CONDITION_PROGRESSING)
        assert progressing is not None
        assert (progressing["status"], progressing["reason"], progressing["message"]) == ("False", "Completed", "completed with no errors.")
        configured = condition(mca, ADDON_CONDITION_CONFIGURED)
        assert configured is not None and (configured["status"], configured["reason"]) == ("True", "ConfigurationsConfigured")
    wait_for(
        lambda: message(env, fleet.name) == "selected clusters 4. configured addons 4/4 completed with no errors, 0 failed 0 timeout.",
        what="CMA Completed",
    )
    item = env.get_cma(fleet.name)["status"]["installProgressions"][0]["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["lastKnownGoodConfig"]["specHash"] == expected
    # The event is recorded after the status that it tells of is written.
    wait_for(lambda: [e for e in env.events(fleet.name) if e.get("reason") == "RolloutComplete"], what="a RolloutComplete event", state=fleet.state)


def test_an_all_update_reaches_every_cluster_at_once(env: AddonEnv) -> None:
    fleet = Fleet(env)
    fleet.installed()
    env.adc(fleet.ns, "deploy-config", "test1")
    expected = env.adc_hash(fleet.ns, "deploy-config")
    wait_for(lambda: fleet.desired() == [expected] * 4, what="new desired everywhere", state=fleet.state)
    # The manifests did not change: the works stay ready and the agents apply at once.
    fleet.agents(fleet.clusters)
    wait_for(lambda: fleet.applied() == [expected] * 4, what="applied everywhere", state=fleet.state)
    wait_for(lambda: "4/4 completed" in message(env, fleet.name), what="CMA Completed", state=fleet.state)


def progressing_since(env: AddonEnv, cluster: str, name: str) -> str | None:
    """The lastTransitionTime of the MCA's Progressing condition while it is True."""
    cond = condition(env.get_mca(cluster, name), ADDON_CONDITION_PROGRESSING)
    return str(cond["lastTransitionTime"]) if cond is not None and cond["status"] == "True" else None


def progressive_update_started(env: AddonEnv) -> tuple[Fleet, str, str, str]:
    """Scenario 18: c0 and c1 take the update and stay unready; returns the fleet, H(test1),
    H(test2) and the time c0's Progressing turned True."""
    fleet = Fleet(env)
    old = fleet.installed()
    c0, c1, c2, c3 = fleet.clusters
    fleet.agents([c0, c1], ready=False)
    env.adc(fleet.ns, "update-config", "test2")
    new = env.adc_hash(fleet.ns, "update-config")
    set_strategy(env, fleet.name, fleet.ns, "p", "update-config", {
        "type": "Progressive", "progressive": {"maxConcurrency": 2, "progressDeadline": "5s", "maxFailures": 1},
    })
    wait_for(lambda: fleet.desired()[:2] == [new, new], what="c0 and c1 get the update", state=fleet.state)
    fleet.agents([c0, c1], ready=False)
    assert fleet.desired()[2:] == [old, old]
    wait_for(lambda: message(env, fleet.name) == "selected clusters 4. configured addons 2/4 progressing..., 0 failed 0 timeout.", what="2/4", state=fleet.state)
    for cluster in (c2, c3):
        configured = condition(env.get_mca(cluster, fleet.name), ADDON_CONDITION_CONFIGURED)
        assert configured is not None and configured["reason"] == "ConfigurationsNotConfigured"

    def both() -> tuple[str, str] | None:
        first, second = (progressing_since(env, c, fleet.name) for c in (c0, c1))
        return (first, second) if first and second else None

    first, second = wait_for(both, what="c0 and c1 Progressing", state=fleet.state)
    return fleet, old, new, first if first == second else ""


def test_progressive_update_honours_concurrency_deadline_and_max_failures(env: AddonEnv) -> None:
    """Scenarios 18-20.

    The scenario assumes that c0's and c1's Progressing conditions turn True within the same
    second (their deadlines are counted from those times, in whole seconds). When a loaded machine
    splits them across a second, c0 times out first, one failure is within maxFailures 1 and the
    rollout rightly moves on to c2 before c1's timeout stops it: that is a different scenario, so
    the test starts again with a fresh fleet (the strategy's planner tests cover that one).
    """
    for _ in range(3):
        fleet, old, new, since = progressive_update_started(env)
        if since:
            break
    else:
        pytest.fail("c0 and c1 never turned Progressing within the same second in three tries")
    c0, c1, c2, c3 = fleet.clusters
    started = parse_time(since)
    assert started is not None
    timeout_text = "selected clusters 4. configured addons 0/4 progressing..., 0 failed 2 timeout."
    # Not before the deadline (measured from the Progressing condition's transition).
    while time.time() < started.timestamp() + 4:
        assert message(env, fleet.name) != timeout_text
        time.sleep(0.1)
    wait_for(lambda: message(env, fleet.name) == timeout_text, timeout=30, what="timeouts breach maxFailures", state=fleet.state)
    breach = wait_for(lambda: [e for e in env.events(fleet.name) if e.get("reason") == "MaxFailuresBreached"], what="breach event", state=fleet.state)
    assert c0 in breach[0]["message"] and c1 in breach[0]["message"]
    holds_for(lambda: fleet.desired()[2:] == [old, old], 1.0, what="the rollout stopped")
    # Scenario 20: c0 and c1 recover, c3 goes unready: the rollout goes on to c2 and c3.
    fleet.agents([c0, c1])
    fleet.agents([c3], ready=False)
    wait_for(lambda: fleet.applied()[:2] == [new, new], what="c0 and c1 applied", state=fleet.state)
    wait_for(lambda: fleet.desired() == [new] * 4, what="c2 and c3 get the update", state=fleet.state)
    wait_for(lambda: message(env, fleet.name) == "selected clusters 4. configured addons 4/4 progressing..., 0 failed 0 timeout.", what="4/4", state=fleet.state)
    fleet.agents([c2, c3])
    wait_for(lambda: "4/4 completed with no errors" in message(env, fleet.name), what="Completed", state=fleet.state)
    item = env.get_cma(fleet.name)["status"]["installProgressions"][0]["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["lastKnownGoodConfig"]["specHash"] == new


def test_progressive_per_group_soaks_before_the_next_group(env: AddonEnv) -> None:
    """Scenario 21."""
    fleet = Fleet(env)
    old = fleet.installed()
    c0, c1, c2, c3 = fleet.clusters
    # The soak (6 s) is counted from the agents' condition times, which have whole seconds: the
    # 2 s during which the next group must stay untouched keep well inside it even when seeing
    # the first group applied takes a second or two on a loaded machine.
    set_strategy(env, fleet.name, fleet.ns, "p", "deploy-config", {"type": "ProgressivePerGroup", "progressivePerGroup": {"minSuccessTime": "6s"}})
    fleet.agents([c0, c1], ready=False)
    env.adc(fleet.ns, "deploy-config", "test3")
    new = env.adc_hash(fleet.ns, "deploy-config")
    wait_for(lambda: fleet.desired() == [new, new, old, old], what="first group only", state=fleet.state)
    fleet.agents([c0, c1], ready=False)
    wait_for(lambda: "2/4 progressing..." in message(env, fleet.name), what="2/4", state=fleet.state)
    fleet.agents([c0, c1])
    wait_for(lambda: fleet.applied()[:2] == [new, new], what="first group applied", state=fleet.state)
    holds_for(lambda: fleet.desired()[2:] == [old, old], 2.0, what="soak before the next group")
    wait_for(lambda: fleet.desired() == [new] * 4, timeout=30, what="second group after the soak", state=fleet.state)
    fleet.agents([c2, c3])
    wait_for(lambda: "4/4 completed" in message(env, fleet.name), timeout=30, what="Completed", state=fleet.state)


def test_rollout_type_is_read_as_type_and_warned_about_once(env: AddonEnv) -> None:
    fleet = Fleet(env)
    old = fleet.installed()
    c0, c1, _, _ = fleet.clusters
    set_strategy(env, fleet.name, fleet.ns, "p", "deploy-config", {"rolloutType": "ProgressivePerGroup"})

    def warnings() -> list[JSON]:
        return [e for e in env.events(fleet.name) if e.get("reason") == "DeprecatedRolloutType"]

    # The warning also shows that the manager read the new strategy before the configuration changes.
    (warning,) = wait_for(warnings, what="DeprecatedRolloutType")
    assert warning["type"] == "Warning"
    assert warning["message"] == (
        f"installStrategy.placements[0] ({fleet.ns}/p): rolloutStrategy.rolloutType is the older spelling "
        "of type; it is read as type: ProgressivePerGroup. Write type instead."
    )
    fleet.agents([c0, c1], ready=False)
    env.adc(fleet.ns, "deploy-config", "test-rollout-type")
    new = env.adc_hash(fleet.ns, "deploy-config")
    # Read as All (what the CRD used to make of it), all four would get it at once.
    wait_for(lambda: fleet.desired() == [new, new, old, old], what="first group only", state=fleet.state)
    holds_for(lambda: fleet.desired()[2:] == [old, old], 1.0, what="the second group waits")
    assert len(warnings()) == 1


def test_overlapping_placements_count_each_cluster_once_the_last_wins(env: AddonEnv) -> None:
    """Scenario 22."""
    ns = env.namespace(env.unique("roll"))
    c1, c2, c3 = env.clusters(3)
    env.adc(ns, "a", "1")
    env.adc(ns, "b", "2")
    env.placement(ns, "p1", [[c1, c2]])
    env.placement(ns, "p2", [[c2, c3]])
    name = env.unique("addon")
    env.cma(name, placements=[
        {"namespace": ns, "name": "p1", "configs": [adc_ref(ns, "a")]},
        {"namespace": ns, "name": "p2", "configs": [adc_ref(ns, "b")]},
    ])
    wait_for(lambda: all(env.get_mca(c, name) for c in (c1, c2, c3)), what="MCAs")
    wait_for(lambda: desired_of(env, c2, name) == env.adc_hash(ns, "b"), what="the last placement wins")
    # The hand-driven agent mirrors each MCA's desired configs as they are when it steps, once:
    # every MCA must have its own before it does (c3's may come a moment after c2's).
    wait_for(lambda: (desired_of(env, c1, name), desired_of(env, c3, name)) == (env.adc_hash(ns, "a"), env.adc_hash(ns, "b")),
             what="every MCA's desired configs")
    for cluster in (c1, c2, c3):
        env.manifest_applied(cluster, name)
    env.agent_step([c1, c2, c3], name)
    wait_for(lambda: message(env, name, 0) == "selected clusters 2. configured addons 1/1 completed with no errors, 0 failed 0 timeout.", what="p1")
    wait_for(lambda: message(env, name, 1) == "selected clusters 2. configured addons 2/2 completed with no errors, 0 failed 0 timeout.", what="p2",
             state=lambda: (env.get_cma(name).get("status"), {c: (env.get_mca(c, name) or {}).get("status") for c in (c1, c2, c3)}))


def test_a_placement_selecting_no_cluster_stays_progressing(env: AddonEnv) -> None:
    """Scenario 24."""
    ns = env.namespace(env.unique("roll"))
    env.placement(ns, "p", [[]])
    name = env.unique("addon")
    env.cma(name, placements=[{"namespace": ns, "name": "p"}])
    wait_for(lambda: message(env, name) == "selected clusters 0. configured addons 0/0 progressing..., 0 failed 0 timeout.", what="0/0")
    assert env.progression_condition(name)["status"] == "True"  # type: ignore[index]


def test_a_missing_placement_holds_back_only_its_own_rollout(env: AddonEnv) -> None:
    """Improvement 1: OCM stops the configuration of every placement of the add-on."""
    ns = env.namespace(env.unique("roll"))
    c1, c2 = env.clusters(2)
    env.adc(ns, "a", "1")
    env.placement(ns, "p1", [[c1]])
    env.placement(ns, "p2", [[c2]])
    name = env.unique("addon")
    env.cma(name, placements=[
        {"namespace": ns, "name": "p1", "configs": [adc_ref(ns, "a")]},
        {"namespace": ns, "name": "p2", "configs": [adc_ref(ns, "a")]},
    ])
    wait_for(lambda: desired_of(env, c1, name) and desired_of(env, c2, name), what="both configured")
    env.api.delete(PLACEMENTS, "p2", ns)
    wait_for(lambda: (c := env.progression_condition(name, 1)) and c.get("reason") == "PlacementNotFound", what="p2 says why")
    env.adc(ns, "a", "2")
    wait_for(lambda: desired_of(env, c1, name) == env.adc_hash(ns, "a"), what="p1 still rolls out")
