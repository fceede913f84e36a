"""Verified configuration rollouts of add-ons (docs/behaviour/validation.md) on the local hub,
through the real add-on manager: a ClusterManagementAddOn placement's rolloutStrategy with feedback
checks (over the ManagedClusterAddOn's conditions and its agent's work feedback), metric checks
(against a stand-in Prometheus API), manual promotion (``ocm-rollout rollout promote --kind
addon``), a rollout plugin, and bad input. The add-on agents are played by a thread that answers
every new desired configuration with a ready deploy work. A Validating add-on is in flight: no
test here ever sees the rollout wider than its strategy allows."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import config_spec_hash_annotation
from ocm_rollout.cli.main import main
from ocm_rollout.client.kube import CLUSTER_MANAGEMENT_ADDONS, JSON, MANIFEST_WORKS
from ocm_rollout.controllers.common.wire import format_time
from ocm_rollout.controllers.rollout.plugin.config import parse as parse_work_config
from ocm_rollout.controllers.rollout.verification import ANNOTATION_VALIDATION
from ocm_rollout.controllers.runtime.metrics import REGISTRY
from tests.integration.fake_prometheus import FakePrometheus
from tests.integration.helpers import holds_for, operating, utc_now, wait_for
from tests.integration.smoke_plugin import smoke_plugin
from tests.integration.test_addon_env import ANNOTATION_CONFIG_SPEC_HASH, AddonEnv, adc_ref

pytestmark = pytest.mark.integration

READY = 'conditions["ManifestApplied"].status == "True"'


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, controller_hub: Any) -> Iterator[AddonEnv]:
    """The add-on manager on the module's hub, with the example smoke plugin (validating each add-on
    on its 2nd call) registered as ``smoke``."""
    with smoke_plugin("--succeed-after", "2") as port:
        environment = AddonEnv(tmp_path_factory.mktemp("addon-verified"), controller_hub)
        environment.operator.plugins = parse_work_config(
            f"plugins:\n  - name: smoke\n    endpoint: http://127.0.0.1:{port}\n", "work-config.yaml"
        )
        yield from operating(environment)


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    with FakePrometheus() as fake:
        yield fake


class Fleet(threading.Thread):
    """Four clusters, an add-on installed by placement ``p`` (``groups``) with one configuration
    under ``strategy``, and its agents: every add-on given new desired configurations gets its
    deploy work mirroring them, applied and available, with the feedback ``ready`` of its
    ConfigMap (``feedback["/ConfigMap/default/<name>-agent"].ready``)."""

    def __init__(
        self, env: AddonEnv, strategy: JSON, groups: list[list[int]] | None = None, *, feedback: bool = True
    ) -> None:
        super().__init__(name="addon-agents", daemon=True)
        self.env = env
        # Whether the agents report their ConfigMap's feedback with the work's conditions.
        self.feedback = feedback
        self.ns = env.namespace(env.unique("verified"))
        self.clusters = env.clusters(4)
        self.name = env.unique("addon")
        env.adc(self.ns, "config", "v1")
        env.placement(self.ns, "p", [[self.clusters[i] for i in g] for g in groups or [[0, 1, 2, 3]]])
        self.stopped = threading.Event()
        self.config = "config"
        self.set_strategy(strategy)

    @property
    def key(self) -> str:
        return f"{self.ns}/p"

    def set_strategy(self, strategy: JSON, config: str | None = None) -> None:
        """Create the add-on under ``strategy`` (and start the agents), or change its strategy (and
        the configuration the placement gives)."""
        self.config = config or self.config
        placement = {"namespace": self.ns, "name": "p", "configs": [adc_ref(self.ns, self.config)], "rolloutStrategy": strategy}
        if self.is_alive():
            install = {"type": "Placements", "placements": [placement]}
            self.env.api.patch(CLUSTER_MANAGEMENT_ADDONS, self.name, {"spec": {"installStrategy": install}})
            return
        self.env.cma(self.name, placements=[placement])
        wait_for(lambda: all(self.env.get_mca(c, self.name) for c in self.clusters), what="MCAs")
        for cluster in self.clusters:
            self.env.manifest_applied(cluster, self.name)
        self.start()

    def check(self, name: str, success: str = "", failure: str = "") -> JSON:
        feedback = {"successCondition": success or f'feedback["/ConfigMap/default/{self.name}-agent"].ready == true'}
        if failure:
            feedback["failureCondition"] = failure
        return {"name": name, "feedback": feedback}

    # -- the agents ---------------------------------------------------------------------------------
    def run(self) -> None:
        while not self.stopped.wait(0.1):
            for cluster in self.clusters:
                try:
                    self.serve(cluster)
                except Exception:  # a conflict or a race with the manager: the next round serves it
                    continue

    def serve(self, cluster: str) -> None:
        wanted = config_spec_hash_annotation(self.env.get_mca(cluster, self.name) or {})
        work_name = f"addon-{self.name}-deploy-0"
        work = self.env.api.get_or_none(MANIFEST_WORKS, work_name, cluster)
        if wanted is None or ((work or {}).get("metadata", {}).get("annotations") or {}).get(ANNOTATION_CONFIG_SPEC_HASH) == wanted:
            return
        work = self.env.deploy_work(cluster, self.name)
        conditions = [
            {"type": t, "status": "True", "reason": "Test", "message": "", "lastTransitionTime": format_time(utc_now()),
             "observedGeneration": work["metadata"].get("generation", 1)}
            for t in ("Applied", "Available")
        ]
        self.env.api.patch_status(MANIFEST_WORKS, work_name, {"status": {"conditions": conditions}}, cluster)
        if self.feedback:
            self.report_feedback(cluster)

    def report_feedback(self, cluster: str) -> None:
        """The deploy work's status feedback: its ConfigMap's ``ready`` is true."""
        meta = {"ordinal": 0, "group": "", "version": "v1", "kind": "ConfigMap", "resource": "configmaps",
                "namespace": "default", "name": f"{self.name}-agent"}
        feedback = {"values": [{"name": "ready", "fieldValue": {"type": "Boolean", "boolean": True}}]}
        manifests = [{"resourceMeta": meta, "statusFeedback": feedback, "conditions": []}]
        status = {"resourceStatus": {"manifests": manifests}}
        self.env.api.patch_status(MANIFEST_WORKS, f"addon-{self.name}-deploy-0", {"status": status}, cluster)

    def stop(self) -> None:
        self.stopped.set()
        self.join(10)

    # -- reading ----------------------------------------------------------------------------------------
    def configured(self) -> list[str]:
        """The clusters whose add-on has been given the desired configurations."""
        want = self.env.adc_hash(self.ns, self.config)
        return [
            c for c in self.clusters
            if [(r.get("desiredConfig") or {}).get("specHash") for r in self.env.config_refs(c, self.name)] == [want]
        ]

    def verdicts(self) -> dict[str, str]:
        out = {}
        for cluster in self.clusters:
            raw = ((self.env.get_mca(cluster, self.name) or {}).get("metadata", {}).get("annotations") or {}).get(ANNOTATION_VALIDATION)
            if raw:
                verdict = json.loads(raw).get("verdict")
                out[cluster] = verdict["status"] if verdict else "Validating"
        return out

    def explain(self) -> dict[str, Any]:
        """What a failed wait shows: the verdicts, and per cluster its desired and applied spec
        hashes (first 8 characters) and the revision and verdict its validation record names."""
        clusters: dict[str, Any] = {}
        for cluster in self.clusters:
            mca = self.env.get_mca(cluster, self.name) or {}
            refs = (mca.get("status") or {}).get("configReferences") or []
            raw = (mca.get("metadata", {}).get("annotations") or {}).get(ANNOTATION_VALIDATION)
            record = json.loads(raw) if raw else {}
            clusters[cluster] = {
                "desired": [((r.get("desiredConfig") or {}).get("specHash") or "")[:8] for r in refs],
                "applied": [((r.get("lastAppliedConfig") or {}).get("specHash") or "")[:8] for r in refs],
                "record": (str(record.get("revision") or "")[:8], (record.get("verdict") or {}).get("status")),
            }
        return {"verdicts": self.verdicts(), "want": self.env.adc_hash(self.ns, self.config)[:8], "clusters": clusters}

    def progression(self, type_: str = "Progressing") -> tuple[str, str, str] | None:
        for entry in (self.env.get_cma(self.name).get("status") or {}).get("installProgressions") or []:
            for c in entry.get("conditions") or []:
                if c["type"] == type_:
                    return c["status"], c["reason"], c.get("message", "")
        return None

    def reason(self) -> str:
        return (self.progression() or ("", "", ""))[1]

    def events(self, reason: str) -> list[JSON]:
        return [e for e in self.env.events(self.name) if e.get("reason") == reason]

    def status_text(self, capsys: pytest.CaptureFixture[str]) -> str:
        capsys.readouterr()
        assert main(["status", "--kubeconfig", self.env.kubeconfig, "--kind", "addon", self.name]) == 0
        return capsys.readouterr().out


def measured(address: str, query: str, **strategy: Any) -> JSON:
    """Progressive (maxConcurrency 1) with one metric check: ``query`` below 0.05, measured 3
    times 1s apart."""
    check = {"provider": {"address": address}, "query": query, "successCondition": "result[0] < 0.05",
             "count": 3, "interval": "1s"}
    return {"type": "Progressive", "progressive": {"maxConcurrency": 1},
            "validation": {"checks": [{"name": "errors", "metric": check}]}, **strategy}


@pytest.fixture
def fleets(env: AddonEnv) -> Iterator[list[Fleet]]:
    made: list[Fleet] = []
    yield made
    for fleet in made:
        fleet.stop()


def test_a_failing_feedback_check_stops_a_progressive_config_rollout(
    env: AddonEnv, fleets: list[Fleet], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0}})
    fleets.append(fleet)
    c1, c2, _c3, _c4 = fleet.clusters
    wait_for(lambda: len(fleet.configured()) == 4, timeout=30, what="the install", state=fleet.verdicts)
    # The install is over first: c4, the last add-on it gave a configuration, stays reserved until
    # a pass of the manager sees that write, and a reserved add-on takes its batch slot before any
    # other (docs/behaviour/addons.md, section 8). Changed sooner, the rollout of v2 could begin
    # with c4 (c4, c1, c2: as narrow, in another order).
    wait_for(lambda: fleet.reason() == "Completed", timeout=30, what="installed", state=fleet.progression)
    # The new configuration and the checks come in one write of the CMA. Checks added alone
    # validate the add-ons already applied (test_checks_added_alone_validate_what_is_applied): had
    # the checks come first (the manager may see the CMA's change before the configuration's), c3
    # and c4 would carry verdicts on v1.
    env.adc(fleet.ns, "config-v2", "v2")
    fleet.set_strategy({
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0},
        "validation": {"checks": [fleet.check("ready", failure=f'cluster == "{c2}"')]},
    }, config="config-v2")
    wait_for(lambda: fleet.verdicts() == {c1: "Succeeded", c2: "Failed"}, timeout=30,
             what="c1 validated, c2 failed", state=fleet.explain)
    events = wait_for(lambda: fleet.events("ValidationFailed"), what="ValidationFailed")
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == (
        f"placement {fleet.key}: cluster {c2} failed validation: check 'ready' Failed: "
        f'failureCondition is true: cluster == "{c2}"'
    )
    holds_for(lambda: set(fleet.configured()) <= {c1, c2}, 1.0, what="never wider than the breach allows",
              state=fleet.configured)
    counted = {
        result: REGISTRY.get_sample_value("ocm_rollout_validation_results_total", {
            "kind": "ClusterManagementAddOn", "namespace": "", "name": fleet.name, "placement": fleet.key,
            "check": "ready", "result": result})
        for result in ("Successful", "Failed")
    }
    assert counted == {"Successful": 1.0, "Failed": 1.0}
    text = fleet.status_text(capsys)
    assert f"! {c2} (Failed): validation failed: check 'ready' Failed: failureCondition is true: cluster == " in text


def test_checks_added_alone_validate_what_is_applied(env: AddonEnv, fleets: list[Fleet]) -> None:
    """Checks added to a placement's strategy, with its configurations unchanged, validate the
    add-ons that have already applied them: each gets a verdict on the configuration it has."""
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0}})
    fleets.append(fleet)
    c1, c2, c3, c4 = fleet.clusters
    wait_for(lambda: len(fleet.configured()) == 4, timeout=30, what="the install", state=fleet.verdicts)
    wait_for(lambda: fleet.reason() == "Completed", timeout=30, what="installed", state=fleet.progression)
    fleet.set_strategy({
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0},
        "validation": {"checks": [fleet.check("ready", failure=f'cluster == "{c2}"')]},
    })
    expected = {c1: "Succeeded", c2: "Failed", c3: "Succeeded", c4: "Succeeded"}
    wait_for(lambda: fleet.verdicts() == expected, timeout=30, what="every applied add-on judged", state=fleet.verdicts)
    assert fleet.configured() == [c1, c2, c3, c4]


def test_feedback_that_comes_later_validates_the_addon(env: AddonEnv, fleets: list[Fleet]) -> None:
    """The works' feedback is synced after they applied: the add-on validates once it comes (a
    change of the agent's works queues the CMA again)."""
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 1}}, feedback=False)
    fleet.set_strategy({"type": "Progressive", "progressive": {"maxConcurrency": 1},
                        "validation": {"checks": [fleet.check("ready")]}})
    fleets.append(fleet)
    c1, c2, *_ = fleet.clusters
    wait_for(lambda: fleet.verdicts() == {c1: "Validating"}, timeout=30, what="c1 validating", state=fleet.verdicts)
    holds_for(lambda: fleet.verdicts() == {c1: "Validating"} and fleet.configured() == [c1], 1.0,
              what="c1 waits for its feedback")
    fleet.report_feedback(c1)
    wait_for(lambda: fleet.verdicts().get(c1) == "Succeeded", timeout=10, what="c1 validated", state=fleet.verdicts)
    wait_for(lambda: fleet.configured() == [c1, c2], what="then c2")


def test_a_validating_addon_is_in_flight(
    env: AddonEnv, fleets: list[Fleet], prometheus: FakePrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    """maxConcurrency 1 with a metric check measured 3 times 1s apart: while c1 validates no other
    add-on is given the configurations; then one at a time."""
    fleet = Fleet(env, measured(prometheus.address, "max(error_ratio{cluster={{cluster}}})"))
    fleets.append(fleet)
    c1, c2, *_ = fleet.clusters
    wait_for(lambda: prometheus.queried(c1) >= 1, timeout=30, what="c1 measured", state=fleet.verdicts)
    assert fleet.configured() == [c1]
    wait_for(lambda: fleet.reason() == "Validating", what="the progression says Validating", state=fleet.progression)
    status, _reason, message = fleet.progression() or ("", "", "")
    assert status == "True"
    assert f"placement {fleet.key}: validating 1 add-on(s): {c1} (validating: check 'errors' Running:" in message
    assert f"? {c1} (Validating): validating: check 'errors' Running:" in fleet.status_text(capsys)
    wait_for(lambda: fleet.configured() == [c1, c2], timeout=30, what="c2 after c1 validated", state=fleet.verdicts)
    assert prometheus.queried(c1) == 3
    wait_for(lambda: fleet.verdicts() == dict.fromkeys(fleet.clusters, "Succeeded"), timeout=60,
             what="all validated", state=fleet.verdicts)
    wait_for(lambda: fleet.reason() == "Completed", what="the rollout completes", state=fleet.progression)


def test_a_promotion_gate_holds_the_next_group_until_promoted(
    env: AddonEnv, fleets: list[Fleet], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = Fleet(env, {"type": "ProgressivePerGroup", "promotion": {"type": "Manual"}}, [[0], [1, 2, 3]])
    fleets.append(fleet)
    c1, c2, c3, c4 = fleet.clusters
    waiting = (
        f"placement {fleet.key}: decision group 1 waits for a promotion "
        f"(ocm-rollout rollout promote --kind addon {fleet.name} --placement {fleet.key})"
    )
    wait_for(lambda: fleet.reason() == "WaitingForPromotion", timeout=30, what="waiting for a promotion",
             state=fleet.progression)
    status, _reason, message = fleet.progression() or ("", "", "")
    assert status == "True" and waiting in message
    # group 1 held: none of its clusters is given the configuration (c1's own reading may blink
    # on kube-apiserver while its agent and the controller both write its status)
    holds_for(lambda: not {c2, c3, c4} & set(fleet.configured()), 1.0, what="group 1 held", state=fleet.configured)
    assert [e["message"] for e in fleet.events("RolloutAwaitingPromotion")] == [waiting]
    assert f"PROMOTION: {waiting}" in fleet.status_text(capsys)
    assert main(["rollout", "promote", "--kubeconfig", env.kubeconfig, "--kind", "addon", fleet.name]) == 0
    assert "promoted (placement " + fleet.key + ", decision group 1, revision " in capsys.readouterr().out
    wait_for(lambda: fleet.configured() == [c1, c2, c3, c4], timeout=30, what="group 1 after the promotion")
    wait_for(lambda: fleet.events("RolloutPromoted"), what="RolloutPromoted")
    wait_for(lambda: fleet.reason() == "Completed", timeout=30, what="complete", state=fleet.progression)


def test_the_plugin_validates_each_addon(env: AddonEnv, fleets: list[Fleet]) -> None:
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 2}, "plugin": "smoke"})
    fleets.append(fleet)
    wait_for(lambda: fleet.progression("PluginLoaded") == ("True", "Available", "smoke plugin is available."),
             timeout=30, what="PluginLoaded", state=lambda: fleet.progression("PluginLoaded"))
    wait_for(lambda: fleet.verdicts() == dict.fromkeys(fleet.clusters, "Succeeded"), timeout=60,
             what="the plugin validated every add-on", state=fleet.verdicts)
    wait_for(lambda: fleet.reason() == "Completed", what="complete", state=fleet.progression)


def test_abort_all_on_a_failed_check_returns_the_addons(env: AddonEnv, fleets: list[Fleet]) -> None:
    """A failed check counts toward maxFailures: under AbortAll the rollout aborts and the add-on
    returns to the last known good configuration."""
    fleet = Fleet(env, {"type": "All"})
    fleets.append(fleet)
    c1, *_ = fleet.clusters
    wait_for(lambda: len(fleet.configured()) == 4, timeout=30, what="the install", state=fleet.verdicts)
    wait_for(lambda: fleet.reason() == "Completed", timeout=30, what="installed", state=fleet.progression)
    good = env.adc_hash(fleet.ns, "config")
    env.adc(fleet.ns, "config-v2", "v2")
    fleet.set_strategy({
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0}, "failureStrategy": "AbortAll",
        "validation": {"checks": [fleet.check("ready", failure=f'cluster == "{c1}"')]},
    }, config="config-v2")
    wait_for(lambda: fleet.reason() == "RolloutAborted", timeout=30, what="aborted", state=fleet.progression)
    assert fleet.verdicts() == {c1: "Failed"}
    wait_for(lambda: [r["desiredConfig"]["specHash"] for r in env.config_refs(c1, fleet.name)] == [good],
             timeout=30, what="c1 returns to the last known good configuration")
    assert fleet.events("ValidationFailed") and fleet.events("RolloutAborted")


# -- bad input: each shown as a condition naming the check and the error; never wider -----------------
def test_an_unknown_plugin_is_a_condition_and_holds_the_rollout(env: AddonEnv, fleets: list[Fleet]) -> None:
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 1}, "plugin": "nope"})
    fleets.append(fleet)
    wait_for(lambda: (fleet.progression("PluginLoaded") or ("",))[0] == "False", timeout=30, what="PluginLoaded False")
    assert fleet.progression("PluginLoaded") == (
        "False", "Failed", "plugin 'nope' is not registered in work-config.yaml (work-controller-config plugins)"
    )
    # BeginRollout comes before any add-on is given the configurations: without the plugin nothing starts.
    holds_for(lambda: fleet.configured() == [], 1.5, what="nothing rolled out")


def test_a_check_that_does_not_compile_is_a_condition(env: AddonEnv, fleets: list[Fleet]) -> None:
    fleet = Fleet(env, {"type": "Progressive", "progressive": {"maxConcurrency": 1},
                        "validation": {"checks": [{"name": "broken", "feedback": {"successCondition": "feedback[ == 1"}}]}})
    fleets.append(fleet)
    wait_for(lambda: fleet.reason() == "InvalidCheck", timeout=30, what="InvalidCheck", state=fleet.progression)
    _s, _r, message = fleet.progression() or ("", "", "")
    assert f"placement {fleet.key}: check 'broken': feedback.successCondition does not compile:" in message
    # The condition can be read before the first add-on's desired configuration (another object):
    # wait for that, then nothing may go past it.
    wait_for(lambda: fleet.configured() == fleet.clusters[:1], timeout=30, what="the first add-on configured",
             state=fleet.configured)
    holds_for(lambda: set(fleet.configured()) <= set(fleet.clusters[:1]), 1.5, what="held at the first add-on",
              state=fleet.configured)


def test_a_restart_keeps_the_measurements(env: AddonEnv, fleets: list[Fleet], prometheus: FakePrometheus) -> None:
    """The measurements live on the MCAs: a restarted manager measures on from there."""
    fleet = Fleet(env, measured(prometheus.address, "error_ratio{cluster={{cluster}}}"))
    fleets.append(fleet)
    c1 = fleet.clusters[0]
    wait_for(lambda: prometheus.queried(c1) >= 2, timeout=30, what="two measurements")
    env.operator.kill()
    taken = prometheus.queried(c1)
    env.operator.start()
    wait_for(lambda: fleet.verdicts().get(c1) == "Succeeded", timeout=30, what="validated", state=fleet.verdicts)
    assert prometheus.queried(c1) <= taken + 1  # at most the one lost with the killed instance
