"""`ocm-rollout status` as a user runs it: `ocm-rollout up`, the seed's ManifestWorkReplicaSet
example applied with kubectl, and the rollout watched through the status command."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import KUBECTL, OCM_ROLLOUT, REPO, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

EXAMPLE_PLACEMENTS = REPO / "examples" / "workset" / "cronjob-placements.yaml"
EXAMPLE_MWRS = REPO / "examples" / "work" / "manifestworkreplicaset-cronjob.yaml"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Path]:
    """A running `ocm-rollout up` with 5 simulated clusters; yields its kubeconfig."""
    up = Up(tmp_path_factory.mktemp("status-cli"), *up_args(hub_kind), "--clusters", "5", "--no-view")
    try:
        kubeconfig = up.wait_kubeconfig()
        eventually(
            lambda: run(str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "managedclusters",
                        "-o", "name").stdout.count("managedcluster") == 5,
            message="5 registered clusters",
        )
        yield kubeconfig
    finally:
        up.stop()


def status(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(str(OCM_ROLLOUT), "status", "--kubeconfig", str(kubeconfig), *args)


def test_seed_example_rolls_out_and_status_shows_it(up: Path) -> None:
    applied = run(str(KUBECTL), "--kubeconfig", str(up), "apply", "-f", str(EXAMPLE_PLACEMENTS),
                  "-f", str(EXAMPLE_MWRS))
    assert applied.returncode == 0, applied.stderr

    def shows_progress() -> str | None:
        result = status(up, "-n", "ocm-ns", "mwrset-cronjob")
        text = result.stdout
        wanted = [
            "placement placement-rollout-all (All, 5 selected)",
            "5/5 succeeded, 5 applied, 0 failed",
            "group 0 (prod-canary-west)",
            "group 1 (prod-canary-east)",
            "placement placement-rollout-progressive-per-group (ProgressivePerGroup, 5 selected)",
        ]
        return text if result.returncode == 0 and all(w in text for w in wanted) else None

    text = eventually(shows_progress, message="the example's rollout in `ocm-rollout status`")
    assert "ManifestWorkReplicaSet ocm-ns/mwrset-cronjob" in text
    assert "[########################]" in text
    # minSuccessTime 5m: the second canary group waits for the first one to soak.
    assert "next check in" in text


def test_status_lists_every_replica_set_without_a_name(up: Path) -> None:
    result = status(up)
    assert result.returncode == 0
    assert "ManifestWorkReplicaSet" in result.stdout or "No ManifestWorkReplicaSets" in result.stdout


def test_status_of_an_unknown_name_is_a_one_line_error(up: Path) -> None:
    result = status(up, "-n", "ocm-ns", "nosuch")
    assert result.returncode == 1
    assert result.stderr.strip() == 'error: ManifestWorkReplicaSet "nosuch" not found in namespace "ocm-ns"'


def test_status_reads_the_kubeconfig_from_the_environment(up: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(up)}
    result = run(str(OCM_ROLLOUT), "status", "-n", "empty-namespace", env=env)
    assert result.returncode == 0
    assert result.stdout.strip() == 'No ManifestWorkReplicaSets in namespace "empty-namespace".'


def test_status_without_a_kubeconfig_explains_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    result = subprocess.run([str(OCM_ROLLOUT), "status"], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=60, check=False)
    assert result.returncode == 1
    assert "kubeconfig .ocm-rollout/kubeconfig does not exist" in result.stderr
    assert "ocm-rollout up" in result.stderr
