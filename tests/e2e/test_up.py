"""`ocm-rollout up` as a user runs it: a subprocess, its kubeconfig, kubectl and the official
client against it, Ctrl-C, and a restart with --data."""

from __future__ import annotations

import json
import re
import signal
import socket
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.e2e.helpers import KUBECTL, OCM_ROLLOUT, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e


@pytest.fixture
def start_up(tmp_path: Path, hub_kind: str) -> Iterator[Callable[..., Up]]:
    started: list[Up] = []

    def start(*args: str) -> Up:
        up = Up(tmp_path, *up_args(hub_kind), *args)
        started.append(up)
        return up

    yield start
    for up in started:
        up.kill()


def clusters_api(kubeconfig: Path) -> Any:
    return kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))


def cluster_uids(api: Any) -> dict[str, str]:
    items = api.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"]
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in items}


def available_clusters(api: Any) -> list[str]:
    items = api.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"]
    out = []
    for item in items:
        for cond in (item.get("status") or {}).get("conditions") or []:
            if cond["type"] == "ManagedClusterConditionAvailable" and cond["status"] == "True":
                out.append(item["metadata"]["name"])
    return sorted(out)


def test_up_serves_available_clusters_and_stops_cleanly_on_ctrl_c(start_up: Callable[..., Up]) -> None:
    up = start_up("--clusters", "3")
    kubeconfig = up.wait_kubeconfig()
    assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
    api = clusters_api(kubeconfig)
    names = eventually(lambda: available_clusters(api) == ["cluster1", "cluster2", "cluster3"], message="3 available")
    assert names
    kubectl = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "managedclusters"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert kubectl.returncode == 0, kubectl.stderr
    lines = kubectl.stdout.splitlines()
    assert lines[0].split()[:2] == ["NAME", "HUB"]
    assert [line.split()[0] for line in lines[1:]] == ["cluster1", "cluster2", "cluster3"]
    assert up.interrupt() == 0, up.output()
    output = up.output()
    assert f"export KUBECONFIG={kubeconfig}" in output
    assert "Traceback" not in output


def test_restart_with_data_keeps_the_clusters(start_up: Callable[..., Up], tmp_path: Path) -> None:
    data = tmp_path / "hub.db"
    first = start_up("--clusters", "2", "--data", str(data), "--controllers", "none")
    api = clusters_api(first.wait_kubeconfig())
    eventually(lambda: len(available_clusters(api)) == 2, message="2 available")
    uids = cluster_uids(api)
    assert first.interrupt() == 0, first.output()
    first.kubeconfig.unlink()

    second = start_up("--clusters", "2", "--data", str(data), "--controllers", "none")
    api = clusters_api(second.wait_kubeconfig())
    eventually(lambda: len(available_clusters(api)) == 2, message="2 available after the restart")
    assert cluster_uids(api) == uids
    assert second.interrupt() == 0, second.output()


def test_sigterm_also_stops_cleanly(start_up: Callable[..., Up]) -> None:
    up = start_up("--clusters", "1", "--controllers", "none")
    api = clusters_api(up.wait_kubeconfig())
    eventually(lambda: available_clusters(api) == ["cluster1"], message="cluster1 available")
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(30) == 0, up.output()


def test_a_bad_profile_is_a_one_line_error(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("clusters:\n- name: cluster1\n  outcome: Exploded\n")
    result = subprocess.run(
        [str(OCM_ROLLOUT), "up", "--profile", str(profile), "--kubeconfig", str(tmp_path / "kc")],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "clusters[0].outcome: 'Exploded' is not one of" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "kc").exists()


def _get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_banner_names_a_debug_endpoint_that_explains_placements(start_up: Callable[..., Up]) -> None:
    up = start_up("--clusters", "2", "--controllers", "placement")
    api = clusters_api(up.wait_kubeconfig())
    banner = eventually(
        lambda: re.search(r"^debug: (http://127\.0\.0\.1:\d+)/debug/placements/NAMESPACE/NAME$", up.output(), re.M),
        message="the debug line of the banner",
    )
    base = banner.group(1)
    eventually(lambda: len(available_clusters(api)) == 2, message="2 available")
    placement = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"clusterSets": ["global"]},
    }
    api.create_namespaced_custom_object("cluster.open-cluster-management.io", "v1beta1", "default", "placements", placement)
    _, body = eventually(
        lambda: got if (got := _get_json(f"{base}/debug/placements/default/web"))[0] == 200 else None,
        message="the placement's debug data",
    )
    assert {s["clusterName"] for s in body["aggregatedScores"]} == {"cluster1", "cluster2"}, body
    assert _get_json(f"{base}/debug/placements/default/nothing") == (404, {"error": "placement 'nothing' not found"})
    assert up.interrupt() == 0, up.output()


@pytest.mark.parametrize("flag", ["--debug-port", "--fleet-metrics-port"])
def test_a_busy_port_is_a_one_line_error(tmp_path: Path, flag: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [str(OCM_ROLLOUT), "up", flag, str(port), "--kubeconfig", str(tmp_path / "kc")],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )
    assert result.returncode == 1
    assert f"{flag}: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "kc").exists()


def test_negative_cluster_count_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(OCM_ROLLOUT), "up", "--clusters", "-1"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "--clusters: must be 0 or more" in result.stderr


ROLLOUT = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web, namespace: default}
spec:
  clusterSets: [global]
---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: web, namespace: default}
spec:
  placementRefs:
  - name: web
    rolloutStrategy:
      type: Progressive
      progressive: {maxConcurrency: 3, maxFailures: 1}
  manifestWorkTemplate:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: web, namespace: default}
        data: {version: "1"}
"""

FAILING_PROFILE = """\
defaults: {applyDelay: 200ms, progressDuration: 3s}
clusters:
- name: [cluster1, cluster2]       # they fail before any other cluster can succeed
  outcome: Degraded
  progressDuration: 300ms
  message: readiness probe failed
"""


def up_and_apply(
    start_up: Callable[..., Up], tmp_path: Path, clusters: int, profile: str, manifest: str, *, timeout: float = 60
) -> tuple[Up, Any]:
    """`ocm-rollout up` with ``clusters`` simulated clusters under ``profile`` (YAML text) and,
    once they are all available (within ``timeout``), ``manifest`` (YAML text) applied with
    kubectl; returns the running `up` and a client of its hub."""
    profile_path = tmp_path / "profile.yaml"
    profile_path.write_text(profile)
    up = start_up("--clusters", str(clusters), "--profile", str(profile_path))
    kubeconfig = up.wait_kubeconfig()
    api = clusters_api(kubeconfig)
    eventually(lambda: len(available_clusters(api)) == clusters, timeout=timeout, message=f"{clusters} available")
    manifest_path = tmp_path / "manifest.yaml"
    manifest_path.write_text(manifest)
    applied = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "apply", "-f", str(manifest_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert applied.returncode == 0, applied.stderr
    return up, api


def test_a_user_watches_a_rollout_stop_at_max_failures(start_up: Callable[..., Up], tmp_path: Path) -> None:
    up, api = up_and_apply(start_up, tmp_path, 6, FAILING_PROFILE, ROLLOUT)

    def works() -> dict[str, dict[str, Any]]:
        items = api.list_cluster_custom_object("work.open-cluster-management.io", "v1", "manifestworks")["items"]
        return {w["metadata"]["namespace"]: w for w in items}

    def degraded(work: dict[str, Any]) -> bool:
        return any(c["type"] == "Degraded" and c["status"] == "True" for c in work.get("status", {}).get("conditions", []))

    eventually(
        lambda: sum(degraded(w) for w in works().values()) == 2, timeout=60, message="cluster1 and cluster2 degraded"
    )
    assert sorted(works()) == ["cluster1", "cluster2", "cluster3"]

    def summary() -> dict[str, Any]:
        mwrs = api.get_namespaced_custom_object(
            "work.open-cluster-management.io", "v1alpha1", "default", "manifestworkreplicasets", "web"
        )
        return dict((mwrs.get("status") or {}).get("summary") or {})

    # cluster3 succeeding is what would start a fourth cluster. The controller writes a pass's
    # works before its status, so once its summary counts cluster3 as no longer progressing
    # (only the two degraded works are), that pass has started nothing more: the breach holds.
    eventually(
        lambda: summary().get("progressing") == 2 and summary().get("degraded") == 2,
        message="the controller to count cluster3 as succeeded",
    )
    assert sorted(works()) == ["cluster1", "cluster2", "cluster3"], up.output()
    assert "cluster2 failed" in up.output()
    assert up.interrupt() == 0, up.output()


ADDON_ROLLOUT = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: hello, namespace: default}
spec:
  clusterSets: [global]
  decisionStrategy:
    groupStrategy: {clustersPerDecisionGroup: 2}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: hello-config, namespace: default}
spec:
  customizedVariables: [{name: greeting, value: "v1"}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: hello}
spec:
  addOnMeta: {displayName: hello}
  supportedConfigs:
  - {group: addon.open-cluster-management.io, resource: addondeploymentconfigs}
  installStrategy:
    type: Placements
    placements:
    - name: hello
      namespace: default
      configs:
      - {group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: hello-config, namespace: default}
      rolloutStrategy:
        type: Progressive
        progressive: {maxConcurrency: 2}
"""

# Every add-on agent takes 3 s to apply, so each state lasts longer than the view's add-on refresh.
SLOW_AGENTS_PROFILE = """\
defaults: {applyDelay: 3s, progressDuration: 1s}
"""
ADDON_WHERE = "addon hello placement default/hello (Progressive)"
ADDON_COMPLETED = "Progressing=False(Completed): selected clusters 4. configured addons 4/4 completed with no errors"


def addon_log(output: str) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The add-on lines of the log (without their time), the states each cluster was logged in,
    and the placement's logged Progressing conditions."""
    lines = [line.split(" ", 1)[1] for line in output.splitlines() if re.match(r"\d\d:\d\d:\d\d addon ", line)]
    states: dict[str, list[str]] = {}
    for line in lines:
        cell = re.fullmatch(rf"{re.escape(ADDON_WHERE)} group \d+: (cluster\d) (\w+)", line)
        if cell is not None:
            states.setdefault(cell.group(1), []).append(cell.group(2))
    conditions = [line for line in lines if line.startswith(f"{ADDON_WHERE}: Progressing=")]
    return lines, states, conditions


def test_the_log_shows_an_addon_rolling_out(start_up: Callable[..., Up], tmp_path: Path) -> None:
    # stdout is a file: the view logs changes.
    up, _ = up_and_apply(start_up, tmp_path, 4, SLOW_AGENTS_PROFILE, ADDON_ROLLOUT, timeout=120)

    def rolled_out() -> tuple[list[str], dict[str, list[str]], list[str]] | None:
        # The CMA's condition and the MCAs come through different watches: either may be logged first.
        lines, states, conditions = addon_log(up.output())
        done = len(states) == 4 and all(seen[-1] == "succeeded" for seen in states.values())
        return (lines, states, conditions) if done and conditions and ADDON_COMPLETED in conditions[-1] else None

    lines, states, conditions = eventually(rolled_out, timeout=180, message="the add-on rollout logged as completed")
    assert lines[0] == "addon hello: install strategy Placements", lines
    assert sorted(states) == ["cluster1", "cluster2", "cluster3", "cluster4"], states
    # Two at a time: some clusters waited for their turn while others were applying.
    assert any("waiting" in seen for seen in states.values()), states
    assert any("progressing" in seen for seen in states.values()), states
    assert conditions[0].startswith(f"{ADDON_WHERE}: Progressing=True(Progressing): selected clusters"), conditions
    assert up.interrupt() == 0, up.output()
    assert "Traceback" not in up.output()
