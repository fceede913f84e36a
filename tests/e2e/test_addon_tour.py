"""The README's add-on tour as a user runs it: `ocm-rollout up` with the addon-bad-config profile,
the tour's files applied with kubectl, the configuration rollout watched through
`ocm-rollout status` and `kubectl get`: canary groups first, then the stop at the failure."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import KUBECTL, OCM_ROLLOUT, REPO, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

TOUR = REPO / "examples" / "addons" / "tour"
PROFILE = REPO / "examples" / "profiles" / "addon-bad-config.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Path]:
    up = Up(tmp_path_factory.mktemp("addon-tour"), *up_args(hub_kind), "--clusters", "10", "--profile", str(PROFILE), "--no-view")
    try:
        kubeconfig = up.wait_kubeconfig()
        eventually(
            lambda: run(str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "managedclusters", "-o", "name")
            .stdout.count("managedcluster") == 10,
            message="10 registered clusters",
        )
        yield kubeconfig
    finally:
        up.stop()


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(str(KUBECTL), "--kubeconfig", str(kubeconfig), *args)


def status(kubeconfig: Path) -> str:
    result = run(str(OCM_ROLLOUT), "status", "--kubeconfig", str(kubeconfig), "--kind", "addon", "helloworld")
    return result.stdout if result.returncode == 0 else ""


def test_the_addon_tour_installs_then_rolls_a_config_canary_first_and_stops_on_failure(up: Path) -> None:
    applied = kubectl(up, "apply", "-f", str(TOUR / "setup.yaml"), "-f", str(TOUR / "clustermanagementaddon.yaml"))
    assert applied.returncode == 0, applied.stderr
    installed = "configured addons 4/4 completed with no errors, 0 failed 0 timeout."
    eventually(lambda: installed in status(up), timeout=180, message="the add-on installed on the 4 AWS clusters")
    listing = kubectl(up, "get", "managedclusteraddons", "-A")
    assert listing.returncode == 0
    assert listing.stdout.split("\n")[0].split() == ["NAMESPACE", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING"]
    assert sorted(line.split()[0] for line in listing.stdout.strip().split("\n")[1:]) == [
        "cluster1", "cluster10", "cluster4", "cluster7",
    ]

    changed = kubectl(up, "apply", "-f", str(TOUR / "deploy-config-v2.yaml"))
    assert changed.returncode == 0, changed.stderr
    stopped = eventually(
        lambda: (text := status(up)) and "0 failed 2 timeout." in text and text,
        timeout=240,
        message="the rollout to stop at the production canaries",
    )
    assert "group 0 (prod-canary-west)  [########################] 1/1 succeeded" in stopped
    assert "cluster1 (TimeOut)" in stopped and "cluster10 (TimeOut)" in stopped
    assert "invalid customized variable" in stopped, stopped
    assert "maxFailures breached" in stopped
    # cluster7 (after the canaries) never gets the new configuration.
    assert "group 2" in stopped and "0/1 succeeded" in stopped.split("group 2")[1]
    events = kubectl(up, "get", "events", "-n", "default")
    assert "MaxFailuresBreached" in events.stdout and "RolloutWaveStarted" in events.stdout
