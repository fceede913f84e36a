"""Verified rollouts of ManifestWorkReplicaSets on simulated clusters (docs/behaviour/validation.md):
feedback checks, metric checks (against a stand-in Prometheus API; the end-to-end tests use a
real one), manual promotion, a rollout plugin, and bad input. A Validating cluster is in flight:
no test here ever sees the rollout wider than its strategy allows."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from ocm_rollout.cli.main import main
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS
from ocm_rollout.controllers.rollout.plugin.config import parse as parse_work_config
from ocm_rollout.controllers.rollout.verification import ANNOTATION_VALIDATION
from ocm_rollout.controllers.runtime.metrics import REGISTRY
from ocm_rollout.sandbox import tls
from tests.integration.fake_prometheus import FakePrometheus
from tests.integration.helpers import holds_for, simulating, wait_for
from tests.integration.smoke_plugin import free_port, smoke_plugin
from tests.integration.test_workset_env import Env, condition, status_text

pytestmark = pytest.mark.integration

CLUSTERS = [f"cluster{i}" for i in range(1, 5)]
PROFILE: JSON = {"defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "100ms"}}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plugin_port() -> Iterator[int]:
    """The example smoke plugin (examples/plugins/smoke), validating each cluster on its 2nd call."""
    with smoke_plugin("--succeed-after", "2") as port:
        yield port


@pytest.fixture(scope="module")
def tls_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    """The smoke plugin serving TLS, and the PEM of a CA that did NOT sign its certificate."""
    tmp = tmp_path_factory.mktemp("tls-plugin")
    creds, other = tls.generate(["127.0.0.1"], days=1), tls.generate(["127.0.0.1"], days=1)
    (tmp / "tls.crt").write_bytes(creds.cert_pem + creds.ca_pem)
    (tmp / "tls.key").write_bytes(creds.key_pem)
    with smoke_plugin("--tls-cert", str(tmp / "tls.crt"), "--tls-key", str(tmp / "tls.key")) as port:
        yield port, other.ca_pem


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory, plugin_port: int, tls_plugin: tuple[int, bytes], hub_kind: str
) -> Iterator[Env]:
    environment = Env(tmp_path_factory.mktemp("workset-verified"), kind=hub_kind)
    tls_port, wrong_ca = tls_plugin
    environment.operator.plugins = parse_work_config(
        "plugins:\n"
        f"  - name: smoke\n    endpoint: http://127.0.0.1:{plugin_port}\n"
        f"  - name: gone\n    endpoint: http://127.0.0.1:{free_port()}\n"
        f"  - name: wrong-ca\n    endpoint: 127.0.0.1:{tls_port}\n"
        f"    caCertificate:\n      caBundle: {base64.b64encode(wrong_ca).decode()}\n",
        "work-config.yaml",
    )
    yield from simulating(environment, len(CLUSTERS), PROFILE)


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    fake = FakePrometheus()
    try:
        yield fake
    finally:
        fake.close()


def rollout(env: Env, strategy: JSON, groups: list[list[str]] | None = None, prefix: str = "verified") -> str:
    ns = env.namespace(env.unique(prefix))
    env.placement(ns, "fleet", groups or [CLUSTERS])
    env.mwrs(ns, "web", [{"name": "fleet", "rolloutStrategy": strategy}])
    return ns


def cond(env: Env, ns: str, type_: str) -> tuple[str, str, str] | None:
    for c in ((env.get_mwrs(ns, "web") or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return c["status"], c["reason"], c.get("message", "")
    return None


def verdicts(env: Env, ns: str) -> dict[str, str]:
    import json

    out = {}
    for work in env.works_of(ns, "web"):
        raw = (work["metadata"].get("annotations") or {}).get(ANNOTATION_VALIDATION)
        verdict = json.loads(raw).get("verdict") if raw else None
        out[work["metadata"]["namespace"]] = verdict["status"] if verdict else "Validating"
    return out


READY = 'conditions["Available"].status == "True"'


def test_a_failing_feedback_check_stops_a_progressive_rollout(fleet: Env, capsys: pytest.CaptureFixture[str]) -> None:
    strategy = {
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0},
        "validation": {"checks": [{"name": "ready", "feedback": {
            "successCondition": READY, "failureCondition": 'cluster == "cluster2"'}}]},
    }
    ns = rollout(fleet, strategy)
    wait_for(lambda: verdicts(fleet, ns) == {"cluster1": "Succeeded", "cluster2": "Failed"}, timeout=30,
             what="cluster1 validated, cluster2 failed", state=lambda: verdicts(fleet, ns))
    events = wait_for(lambda: fleet.events(ns, "ValidationFailed"), what="ValidationFailed")
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == (
        "placement fleet: cluster cluster2 failed validation: check 'ready' Failed: "
        'failureCondition is true: cluster == "cluster2"'
    )
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1", "cluster2"], 1.0,
              what="never wider than the breach allows")
    def counted(result: str) -> float | None:
        return REGISTRY.get_sample_value("ocm_rollout_validation_results_total", {
            "kind": "ManifestWorkReplicaSet", "namespace": ns, "name": "web", "placement": "fleet",
            "check": "ready", "result": result})

    assert (counted("Successful"), counted("Failed")) == (1.0, 1.0)
    text = status_text(fleet, ns, capsys)
    assert "! cluster2 (Failed): validation failed: check 'ready' Failed: failureCondition is true: cluster == " in text


def test_a_validating_cluster_is_in_flight(fleet: Env, prometheus: FakePrometheus,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """maxConcurrency 1 with a metric check measured 3 times 1s apart: while cluster1 validates no
    other cluster gets a work; then one at a time."""
    strategy = {
        "type": "Progressive", "progressive": {"maxConcurrency": 1},
        "validation": {"checks": [{"name": "errors", "metric": {
            "provider": {"address": prometheus.address}, "query": "max(error_ratio{cluster={{cluster}}})",
            "successCondition": "result[0] < 0.05", "count": 3, "interval": "1s"}}]},
    }
    ns = rollout(fleet, strategy)
    wait_for(lambda: prometheus.queried("cluster1") >= 1, what="cluster1 measured")
    text = status_text(fleet, ns, capsys)
    assert "? cluster1 (Validating): validating: check 'errors' Running:" in text
    assert fleet.clusters_with_works(ns, "web") == ["cluster1"]
    wait_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1", "cluster2"], timeout=30,
             what="cluster2 after cluster1 validated")
    assert prometheus.queried("cluster1") == 3
    wait_for(lambda: verdicts(fleet, ns) == dict.fromkeys(CLUSTERS, "Succeeded"), timeout=60,
             what="all validated", state=lambda: verdicts(fleet, ns))
    wait_for(lambda: condition(fleet.get_mwrs(ns, "web"), "PlacementRolledOut") == ("True", "Complete"),
             what="rollout complete")


def test_a_promotion_gate_holds_the_next_group_until_promoted(fleet: Env, capsys: pytest.CaptureFixture[str]) -> None:
    strategy = {"type": "ProgressivePerGroup", "promotion": {"type": "Manual"}}
    ns = rollout(fleet, strategy, [["cluster1"], ["cluster2", "cluster3"]])
    wait_for(lambda: (cond(fleet, ns, "Progressing") or ("", ""))[1] == "WaitingForPromotion", timeout=30,
             what="waiting for a promotion", state=lambda: cond(fleet, ns, "Progressing"))
    status, _reason, message = cond(fleet, ns, "Progressing") or ("", "", "")
    assert status == "True"
    assert "placement fleet: decision group 1 waits for a promotion (ocm-rollout rollout promote --placement fleet)" in message
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1"], 1.0, what="group 1 held")
    assert [e["message"] for e in fleet.events(ns, "RolloutAwaitingPromotion")] == [
        "placement fleet: decision group 1 waits for a promotion (ocm-rollout rollout promote --placement fleet)"
    ]
    assert "PROMOTION: placement fleet: decision group 1 waits" in status_text(fleet, ns, capsys)
    assert main(["rollout", "promote", "--kubeconfig", fleet.kubeconfig, "-n", ns, "web"]) == 0
    wait_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1", "cluster2", "cluster3"], timeout=30,
             what="group 1 after the promotion")
    wait_for(lambda: fleet.events(ns, "RolloutPromoted"), what="RolloutPromoted")
    wait_for(lambda: condition(fleet.get_mwrs(ns, "web"), "PlacementRolledOut") == ("True", "Complete"),
             timeout=30, what="complete")


def test_the_plugin_validates_each_cluster(fleet: Env) -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 2}, "plugin": "smoke"}
    ns = rollout(fleet, strategy)
    wait_for(lambda: cond(fleet, ns, "PluginLoaded") == ("True", "Available", "smoke plugin is available."),
             what="PluginLoaded", state=lambda: cond(fleet, ns, "PluginLoaded"))
    wait_for(lambda: verdicts(fleet, ns) == dict.fromkeys(CLUSTERS, "Succeeded"), timeout=60,
             what="the plugin validated every cluster", state=lambda: verdicts(fleet, ns))
    # MutateManifestWork: each work carries what the plugin added, and the record that makes the
    # mutated work count as holding the revision (written once: generation 1, never reverted).
    for work in fleet.works_of(ns, "web"):
        annotations = work["metadata"].get("annotations") or {}
        assert annotations.get("smoke.rollout-plugin.ocm-rollout.io/placement") == "fleet"
        assert "rollout.ocm-rollout.io/mutated" in annotations
        assert work["metadata"]["generation"] == 1
    wait_for(lambda: condition(fleet.get_mwrs(ns, "web"), "PlacementRolledOut") == ("True", "Complete"),
             what="complete")


# -- bad input: each shown as a condition or an event naming the check and the error; never wider ----------
def test_an_unknown_plugin_is_a_condition_and_holds_the_rollout(fleet: Env) -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}, "plugin": "nope"}
    ns = rollout(fleet, strategy, prefix="badplugin")
    wait_for(lambda: (cond(fleet, ns, "PluginLoaded") or ("",))[0] == "False", what="PluginLoaded False")
    _s, reason, message = cond(fleet, ns, "PluginLoaded") or ("", "", "")
    assert reason == "Failed"
    assert message == "plugin 'nope' is not registered in work-config.yaml (work-controller-config plugins)"
    # BeginRollout comes before any work: without the plugin nothing starts.
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == [], 1.5, what="nothing rolled out")


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ({"name": "broken", "feedback": {"successCondition": "feedback[ == 1"}},
         "placement fleet: check 'broken': feedback.successCondition does not compile:"),
        ({"name": "errors", "metric": {"provider": {"name": "thanos"}, "query": "up", "successCondition": "true"}},
         "placement fleet: check 'errors': metric provider 'thanos' is not registered"),
    ],
    ids=["cel", "provider"],
)
def test_a_check_that_cannot_run_is_a_condition(fleet: Env, check: JSON, expected: str) -> None:
    """A condition that does not compile, a provider that is not registered: PlacementVerified
    False InvalidCheck naming the check, and the first cluster stays Validating (in flight)."""
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}, "validation": {"checks": [check]}}
    ns = rollout(fleet, strategy, prefix="badcheck")
    wait_for(lambda: (cond(fleet, ns, "PlacementVerified") or ("", ""))[1] == "InvalidCheck",
             what="InvalidCheck", state=lambda: cond(fleet, ns, "PlacementVerified"))
    _s, _r, message = cond(fleet, ns, "PlacementVerified") or ("", "", "")
    assert message.startswith(expected), message
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1"], 1.5, what="held at cluster1")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("error", "Prometheus answered bad_data: 1:8: parse error: unexpected right parenthesis"),
        ("garbage", "the answer is not JSON"),
        ("down", "Cannot connect to host 127.0.0.1"),
    ],
)
def test_a_prometheus_that_fails_fails_the_check_by_name(
    fleet: Env, prometheus: FakePrometheus, mode: str, expected: str
) -> None:
    address = prometheus.address
    if mode == "down":
        address = f"http://127.0.0.1:{free_port()}"
    else:
        prometheus.mode = mode
    strategy = {
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0},
        "validation": {"checks": [{"name": "errors", "metric": {
            "provider": {"address": address}, "query": "error_ratio{cluster={{cluster}}}",
            "successCondition": "result[0] < 0.05", "consecutiveErrorLimit": 0}}]},
    }
    ns = rollout(fleet, strategy, prefix=f"prom{mode}")
    events = wait_for(lambda: fleet.events(ns, "ValidationFailed"), timeout=30, what="ValidationFailed")
    message = events[0]["message"]
    assert message.startswith(
        "placement fleet: cluster cluster1 failed validation: check 'errors' Error: "
        "consecutiveErrors (1) > consecutiveErrorLimit (0): "
    )
    assert expected in message, message
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1"], 1.0, what="stopped at cluster1")


def test_a_restart_keeps_the_measurements(fleet: Env, prometheus: FakePrometheus) -> None:
    """The measurements live on the works: a restarted controller measures on from there."""
    strategy = {
        "type": "All",
        "validation": {"checks": [{"name": "errors", "metric": {
            "provider": {"address": prometheus.address}, "query": "error_ratio{cluster={{cluster}}}",
            "successCondition": "result[0] < 0.05", "count": 3, "interval": "1s"}}]},
    }
    ns = rollout(fleet, strategy, [["cluster1"]], prefix="restart")
    wait_for(lambda: prometheus.queried("cluster1") >= 2, timeout=30, what="two measurements")
    fleet.operator.kill()
    taken = prometheus.queried("cluster1")
    fleet.operator.start()
    wait_for(lambda: verdicts(fleet, ns) == {"cluster1": "Succeeded"}, timeout=30, what="validated")
    assert prometheus.queried("cluster1") <= taken + 1  # at most the one lost with the killed instance
    body = fleet.api.get(MANIFEST_WORK_REPLICA_SETS, "web", ns)
    assert condition(body, "PlacementRolledOut") in {("True", "Complete"), ("False", "Progressing")}


@pytest.mark.parametrize(
    ("plugin", "expected"),
    [
        ("gone", "Initialize fails: UNAVAILABLE after 5 attempts: "),
        ("wrong-ca", "(TLS: check caCertificate.caBundle and the plugin's serving certificate)"),
    ],
)
def test_a_plugin_that_cannot_be_reached_is_a_condition(fleet: Env, plugin: str, expected: str) -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}, "plugin": plugin}
    ns = rollout(fleet, strategy, prefix=f"plugin{plugin.replace('-', '')}")
    wait_for(lambda: (cond(fleet, ns, "PluginLoaded") or ("",))[0] == "False", timeout=60,
             what="PluginLoaded False", state=lambda: cond(fleet, ns, "PluginLoaded"))
    _s, reason, message = cond(fleet, ns, "PluginLoaded") or ("", "", "")
    assert reason == "Failed" and expected in message, message
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == [], 1.0, what="nothing rolled out")


def test_a_check_still_inconclusive_at_the_deadline_times_the_cluster_out(
    fleet: Env, prometheus: FakePrometheus
) -> None:
    """Neither condition holds (no series): the cluster stays Validating, in flight, until its
    progressDeadline, then it is TimeOut and counts toward maxFailures."""
    prometheus.default = None
    strategy = {
        "type": "Progressive", "progressive": {"maxConcurrency": 1, "maxFailures": 0, "progressDeadline": "3s"},
        "validation": {"checks": [{"name": "errors", "metric": {
            "provider": {"address": prometheus.address}, "query": "error_ratio{cluster={{cluster}}}",
            "successCondition": "size(result) > 0 && result[0] < 0.05", "failureCondition": "size(result) > 0 && result[0] >= 0.05",
            "count": 2, "interval": "500ms", "inconclusiveLimit": 0}}]},
    }
    ns = rollout(fleet, strategy, prefix="inconclusive")
    events = wait_for(lambda: fleet.events(ns, "MaxFailuresBreached"), timeout=30, what="the breach at the deadline")
    assert "cluster1 (TimeOut" in events[0]["message"], events[0]["message"]
    assert verdicts(fleet, ns) == {"cluster1": "Validating"}
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1"], 1.0, what="stopped at cluster1")


def test_a_hung_prometheus_holds_only_its_own_rollout(fleet: Env, prometheus: FakePrometheus) -> None:
    """Every query hangs for 20 s (the check's timeout is 15 s): that rollout's cluster waits,
    while another rollout on the same controller completes meanwhile."""
    prometheus.delay = 20.0
    hung = {"type": "All", "validation": {"checks": [{"name": "errors", "metric": {
        "provider": {"address": prometheus.address}, "query": "error_ratio{cluster={{cluster}}}",
        "successCondition": "result[0] < 0.05", "timeout": "15s"}}]}}
    slow_ns = rollout(fleet, hung, [["cluster1"]], prefix="hung")
    wait_for(lambda: prometheus.queried("cluster1") >= 1, what="the hung query sent")
    plain_ns = rollout(fleet, {"type": "All"}, prefix="beside")
    wait_for(lambda: condition(fleet.get_mwrs(plain_ns, "web"), "PlacementRolledOut") == ("True", "Complete"),
             timeout=10, what="the other rollout completes while the query hangs")
    assert verdicts(fleet, slow_ns) == {"cluster1": "Validating"}
