"""The verified-rollout tour end to end, as the README runs it: `ocm-rollout up` with the
verified-rollout profile, a real Prometheus scraping the fleet's metrics, the example smoke plugin,
and the tour's files applied with kubectl. Web 1.0 is validated on the canary (feedback, metric and
plugin), waits at the promotion gate until `ocm-rollout rollout promote`, then completes; web 2.0
serves errors on the canary: the metric check fails it there, and AbortAll reverts it to 1.0
before any other cluster gets 2.0."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import KUBECTL, OCM_ROLLOUT, REPO, Up, eventually
from tests.hub_kinds import up_args
from tests.prometheus_server import free_port, prometheus_binary, running_prometheus, values_by

pytestmark = pytest.mark.e2e

TOUR = REPO / "examples" / "workset" / "verified"
PROFILE = REPO / "examples" / "profiles" / "verified-rollout.yaml"
CLUSTERS = [f"cluster{i}" for i in range(1, 5)]
VALIDATION = "rollout.ocm-rollout.io/validation"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


class Tour:
    def __init__(self, kubeconfig: Path, prometheus: str) -> None:
        self.kubeconfig = kubeconfig
        self.prometheus = prometheus

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args)

    def ocm(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(str(OCM_ROLLOUT), *args, "--kubeconfig", str(self.kubeconfig))

    def works(self) -> dict[str, dict[str, object]]:
        """cluster -> {image, verdict} of the tour's works."""
        listed = self.kubectl("get", "manifestworks", "-A", "-l",
                              "work.open-cluster-management.io/manifestworkreplicaset=verified.web", "-o", "json")
        out: dict[str, dict[str, object]] = {}
        for work in json.loads(listed.stdout or '{"items": []}')["items"]:
            manifest = work["spec"]["workload"]["manifests"][0]
            image = manifest["spec"]["template"]["spec"]["containers"][0]["image"]
            record = json.loads((work["metadata"].get("annotations") or {}).get(VALIDATION) or "{}")
            verdict = (record.get("verdict") or {}).get("status", "Validating" if record else "")
            out[work["metadata"]["namespace"]] = {"image": image.rsplit(":", 1)[1], "verdict": verdict}
        return out

    def condition(self, type_: str) -> tuple[str, str, str]:
        got = self.kubectl("get", "manifestworkreplicaset", "-n", "verified", "web", "-o", "json")
        for cond in (json.loads(got.stdout or "{}").get("status") or {}).get("conditions") or []:
            if cond["type"] == type_:
                return cond["status"], cond["reason"], cond.get("message", "")
        return ("", "", "")

    def events(self, reason: str) -> list[str]:
        got = self.kubectl("get", "events", "-n", "verified", "--field-selector", f"reason={reason}", "-o", "json")
        return [e["message"] for e in json.loads(got.stdout or '{"items": []}')["items"]]


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Tour]:
    prometheus_binary()  # skip before starting anything when there is no Prometheus
    tmp = tmp_path_factory.mktemp("verified-tour")
    plugin_port, metrics_port = free_port(), free_port()
    plugin = subprocess.Popen(
        [sys.executable, str(REPO / "examples/plugins/smoke/server.py"), "--address", f"127.0.0.1:{plugin_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        with running_prometheus([f"127.0.0.1:{metrics_port}"], tmp / "prometheus") as prometheus:
            config = (TOUR / "work-config.yaml").read_text()
            config = config.replace("127.0.0.1:10843", f"127.0.0.1:{plugin_port}")
            config = config.replace("http://127.0.0.1:9090", prometheus)
            (tmp / "work-config.yaml").write_text(config)
            up = Up(tmp, *up_args(hub_kind), "--clusters", str(len(CLUSTERS)), "--profile", str(PROFILE), "--no-view",
                    "--fleet-metrics-port", str(metrics_port), "--work-config", str(tmp / "work-config.yaml"))
            try:
                kubeconfig = up.wait_kubeconfig()
                eventually(lambda: len(values_by(prometheus, "http_error_ratio", "cluster")) == len(CLUSTERS),
                           timeout=60, message="Prometheus scraping every cluster")
                yield Tour(kubeconfig, prometheus)
            finally:
                up.stop()
    finally:
        plugin.terminate()
        plugin.wait(10)


def test_a_healthy_version_is_validated_on_the_canary_waits_for_promotion_and_completes(tour: Tour) -> None:
    applied = tour.kubectl("apply", "-f", str(TOUR / "setup.yaml"), "-f", str(TOUR / "web.yaml"))
    assert applied.returncode == 0, applied.stderr
    eventually(lambda: tour.works() == {"cluster1": {"image": "1.0", "verdict": "Succeeded"}}, timeout=90,
               message="web 1.0 validated on the canary")
    eventually(lambda: tour.condition("Progressing")[1] == "WaitingForPromotion", timeout=30,
               message="the gate holds group 1")
    assert tour.condition("PluginLoaded") == ("True", "Available", "smoke plugin is available.")
    time.sleep(1.0)
    assert list(tour.works()) == ["cluster1"], "group 1 must wait for the promotion"
    status = tour.ocm("status", "-n", "verified", "web")
    assert "PROMOTION: placement web-fleet: decision group 1 waits for a promotion" in status.stdout

    promoted = tour.ocm("rollout", "promote", "-n", "verified", "web")
    assert promoted.returncode == 0, promoted.stderr
    done = {c: {"image": "1.0", "verdict": "Succeeded"} for c in CLUSTERS}
    eventually(lambda: tour.works() == done, timeout=120, message="web 1.0 validated everywhere")
    eventually(lambda: tour.condition("PlacementRolledOut")[:2] == ("True", "Complete"), timeout=30,
               message="rolled out")
    assert tour.events("RolloutPromoted")


def test_a_version_that_serves_errors_fails_its_check_on_the_canary_and_is_reverted(tour: Tour) -> None:
    assert tour.condition("PlacementRolledOut")[:2] == ("True", "Complete"), "runs after the healthy rollout"
    applied = tour.kubectl("apply", "-f", str(TOUR / "web-v2.yaml"))
    assert applied.returncode == 0, applied.stderr
    failed = eventually(lambda: tour.events("ValidationFailed"), timeout=90, message="the canary fails its check")
    assert failed[0].startswith("placement web-fleet: cluster cluster1 failed validation: check 'error-rate' Failed:")
    assert failed[0].endswith(
        "failed (1) > failureLimit (0): observed [0.3]: "
        "failureCondition is true: size(result) > 0 && result[0] >= 0.05"
    ), failed[0]
    eventually(lambda: tour.condition("Progressing")[1] == "RolloutAborted", timeout=60, message="aborted")
    eventually(lambda: all(w["image"] == "1.0" for w in tour.works().values()) and len(tour.works()) == len(CLUSTERS),
               timeout=60, message="every cluster back on web 1.0")
    # Never wider: no cluster but the canary ever got 2.0 (its group never opened).
    assert tour.events("RolloutAborted")


# -- the same for an add-on's configuration rollout ---------------------------------------------------------
ADDON_TOUR = REPO / "examples" / "addons" / "verified"


def addon_verdicts(tour: Tour) -> dict[str, str]:
    listed = tour.kubectl("get", "managedclusteraddons", "-A", "-o", "json")
    out = {}
    for mca in json.loads(listed.stdout or '{"items": []}')["items"]:
        if mca["metadata"]["name"] != "helloworld":
            continue
        record = json.loads((mca["metadata"].get("annotations") or {}).get(VALIDATION) or "{}")
        if record:
            out[mca["metadata"]["namespace"]] = (record.get("verdict") or {}).get("status", "Validating")
    return out


def addon_progression(tour: Tour) -> tuple[str, str, str]:
    got = tour.kubectl("get", "clustermanagementaddon", "helloworld", "-o", "json")
    for entry in (json.loads(got.stdout or "{}").get("status") or {}).get("installProgressions") or []:
        for cond in entry.get("conditions") or []:
            if cond["type"] == "Progressing":
                return cond["status"], cond["reason"], cond.get("message", "")
    return ("", "", "")


def addon_events(tour: Tour, reason: str) -> list[str]:
    got = tour.kubectl("get", "events", "-A", "--field-selector", f"reason={reason}", "-o", "json")
    return [e["message"] for e in json.loads(got.stdout or '{"items": []}')["items"]
            if (e.get("involvedObject") or {}).get("name") == "helloworld"]


def test_an_addon_configuration_is_validated_promoted_and_a_bad_one_reverted(tour: Tour) -> None:
    applied = tour.kubectl("apply", "-f", str(ADDON_TOUR / "setup.yaml"))
    assert applied.returncode == 0, applied.stderr
    eventually(lambda: addon_verdicts(tour) == {"cluster1": "Succeeded"}, timeout=90,
               message="the canary's add-on validated")
    eventually(lambda: addon_progression(tour)[1] == "WaitingForPromotion", timeout=30,
               message="the gate holds group 1")
    promoted = tour.ocm("rollout", "promote", "--kind", "addon", "helloworld")
    assert promoted.returncode == 0, promoted.stderr
    eventually(lambda: addon_verdicts(tour) == dict.fromkeys(CLUSTERS, "Succeeded"), timeout=120,
               message="every add-on validated")
    eventually(lambda: addon_progression(tour)[1] == "Completed", timeout=60, message="completed")

    applied = tour.kubectl("apply", "-f", str(ADDON_TOUR / "deploy-config-v2.yaml"))
    assert applied.returncode == 0, applied.stderr
    failed = eventually(lambda: addon_events(tour, "ValidationFailed"), timeout=90, message="the canary fails")
    assert "cluster cluster1 failed validation: check 'error-rate' Failed:" in failed[0], failed[0]
    assert "observed [0.3]" in failed[0], failed[0]
    eventually(lambda: addon_progression(tour)[1] == "RolloutAborted", timeout=60, message="aborted",)
