"""The seed's ManifestWorkReplicaSet example, verbatim (its strategy key spelled `rolloutType`),
applied with kubectl to `ocm-rollout up` as a user would, with the Placements of the README's
tour: the Progressive placement starts with its first canary group only and, during the
5-minute soak, never has works on every cluster; each spelling is warned about once."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.e2e.helpers import KUBECTL, REPO, Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

SEED_MWRS = REPO / "examples" / "work" / "manifestworkreplicaset-seed-spelling.yaml"
PLACEMENTS = REPO / "examples" / "workset" / "cronjob-placements.yaml"
NS = "ocm-ns"
PROGRESSIVE = "placement-rollout-progressive"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index"
GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name"
WORK_PLACEMENT_LABEL = "work.open-cluster-management.io/placementname"
# How long the soak is watched (the seed's minSuccessTime is 5m): long enough for the first canary
# group to succeed and for the controller to have planned again, short enough for the suite.
OBSERVATION_SECONDS = 5.0


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[tuple[Path, Any]]:
    up = Up(tmp_path_factory.mktemp("seed-rollout-type"), *up_args(hub_kind), "--clusters", "10", "--no-view")
    try:
        kubeconfig = up.wait_kubeconfig()
        api = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))
        # Every cluster available before anything is applied: the Placements are scheduled once.
        eventually(lambda: len(available_clusters(api)) == 10, message="10 available clusters")
        yield kubeconfig, api
    finally:
        up.stop()


def available_clusters(api: Any) -> dict[str, dict[str, str]]:
    """Name -> labels of the ManagedClusters whose Available condition is True."""
    items = api.list_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters")["items"]
    return {
        c["metadata"]["name"]: c["metadata"].get("labels") or {}
        for c in items
        if any(
            cond["type"] == "ManagedClusterConditionAvailable" and cond["status"] == "True"
            for cond in (c.get("status") or {}).get("conditions") or []
        )
    }


def decision_groups(api: Any, placement: str) -> dict[tuple[int, str], list[str]]:
    """(group index, group name) -> clusters, from the stored PlacementDecisions."""
    pages = api.list_namespaced_custom_object(
        "cluster.open-cluster-management.io", "v1beta1", NS, "placementdecisions", label_selector=f"{PLACEMENT_LABEL}={placement}"
    )["items"]
    groups: dict[tuple[int, str], list[str]] = {}
    for page in pages:
        labels = page["metadata"]["labels"]
        key = (int(labels[GROUP_INDEX_LABEL]), labels.get(GROUP_NAME_LABEL, ""))
        groups.setdefault(key, []).extend(d["clusterName"] for d in page["status"]["decisions"])
    return groups


def works(api: Any, placement: str) -> dict[str, dict[str, Any]]:
    """Cluster -> the stored ManifestWork of ``placement``."""
    items = api.list_cluster_custom_object(
        "work.open-cluster-management.io", "v1", "manifestworks", label_selector=f"{WORK_PLACEMENT_LABEL}={placement}"
    )["items"]
    return {w["metadata"]["namespace"]: w for w in items}


def succeeded(work: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in (work.get("status") or {}).get("conditions") or []}
    return conditions.get("Available") == "True" and conditions.get("Progressing") == "False"


def test_the_seed_example_verbatim_rolls_out_canary_first_and_soaks(hub: tuple[Path, Any]) -> None:
    kubeconfig, api = hub
    applied = kubectl(kubeconfig, "apply", "-f", str(PLACEMENTS), "-f", str(SEED_MWRS))
    assert applied.returncode == 0, applied.stderr

    # Stored as written: rolloutType kept, no type defaulted beside it.
    mwrs = api.get_namespaced_custom_object(
        "work.open-cluster-management.io", "v1alpha1", NS, "manifestworkreplicasets", "mwrset-cronjob"
    )
    strategies = [ref["rolloutStrategy"] for ref in mwrs["spec"]["placementRefs"]]
    assert [(s.get("rolloutType"), s.get("type")) for s in strategies] == [
        ("All", None), ("Progressive", None), ("ProgressivePerGroup", None),
    ]

    # The progressive placement selects the production clusters, the canary groups first.
    production = {name for name, labels in available_clusters(api).items() if labels.get("environment") == "production"}
    groups = eventually(
        lambda: (g := decision_groups(api, PROGRESSIVE)) and {c for cs in g.values() for c in cs} == production and g,
        message=f"the progressive placement's decisions of {sorted(production)}",
    )
    first_key = min(groups)
    assert first_key[1] == "prod-canary-west", groups
    first = set(groups[first_key])
    everyone = production
    assert len(everyone) > len(first), groups

    # The All placement gets every cluster at once: the controller is running and reads rolloutType: All.
    eventually(lambda: len(works(api, "placement-rollout-all")) == 10, message="All: a work on every cluster")

    # The first canary group is rolled out, and succeeds...
    eventually(
        lambda: (w := works(api, PROGRESSIVE)) and set(w) == first and all(succeeded(x) for x in w.values()),
        timeout=30,
        message=f"the first canary group {sorted(first)} rolled out and succeeded",
    )
    # ...then soaks for minSuccessTime (5m): nothing else starts, never every cluster.
    deadline = time.monotonic() + OBSERVATION_SECONDS
    while time.monotonic() < deadline:
        present = set(works(api, PROGRESSIVE))
        assert present == first, f"works of {sorted(present)} during the soak (canary group: {sorted(first)})"
        assert present != everyone
        time.sleep(0.2)
    summary = {
        s["name"]: s["summary"]["total"]
        for s in api.get_namespaced_custom_object(
            "work.open-cluster-management.io", "v1alpha1", NS, "manifestworkreplicasets", "mwrset-cronjob"
        )["status"]["placementSummary"]
    }
    assert summary[PROGRESSIVE] == len(first)

    # One Warning per placementRef, suggesting type, however many passes the controller made.
    listed = kubectl(kubeconfig, "get", "events", "-n", NS, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    warnings = sorted(
        e["message"] for e in json.loads(listed.stdout)["items"] if e["reason"] == "DeprecatedRolloutType"
    )
    assert warnings == [
        "placementRefs[0] (placement-rollout-all): rolloutStrategy.rolloutType is the older spelling of type; "
        "it is read as type: All. Write type instead.",
        f"placementRefs[1] ({PROGRESSIVE}): rolloutStrategy.rolloutType is the older spelling of type; "
        "it is read as type: Progressive. Write type instead.",
        "placementRefs[2] (placement-rollout-progressive-per-group): rolloutStrategy.rolloutType is the older "
        "spelling of type; it is read as type: ProgressivePerGroup. Write type instead.",
    ]
