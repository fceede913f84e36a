"""The placement controller on Placements stored before a CRD rule existed.

The current CRD requires ``scoreCoordinate`` in every ``prioritizerPolicy.configurations`` entry
and restricts ``clustersPerDecisionGroup`` to a pattern, so the hub refuses to create such a
Placement today. One created before those rules is still stored, and OCM's controller schedules
it: Misconfigured with docs/behaviour/scheduling.md's message (§4, §6), not a parse failure.

To store such an object the test does what a hub that has not had its CRDs upgraded does: it
replaces the Placement CRD with one without those two rules (an isolated hub, so no other test
sees it), creates the Placements, and runs the controller against that hub.

The CRD is not put back before the controller runs: the local hub ratchets validation only for
updates that leave everything but metadata unchanged, so once the stricter CRD is back it
rejects the controller's status patch of such a Placement (422 on the unchanged spec), where a
Kubernetes API server with CRD validation ratcheting (on by default since 1.30) accepts it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.client.kube import PLACEMENTS, Invalid, Resource
from tests.hubs import start_hub
from tests.integration.test_placement_env import Api, PlacementOperator

WaitFor = Callable[..., Any]
TIMEOUT = 30.0
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
PLACEMENT_CRD = "placements.cluster.open-cluster-management.io"
NO_COORDINATE = {"prioritizerPolicy": {"configurations": [{"weight": 2}]}}
HUGE_PERCENT = {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "1e400%"}}}


def pre_upgrade_crd(current: dict[str, Any]) -> dict[str, Any]:
    """The Placement CRD without the scoreCoordinate requirement and the group-size pattern."""
    crd = copy.deepcopy(current)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    entry = spec["prioritizerPolicy"]["properties"]["configurations"]["items"]
    entry["required"] = [r for r in entry.get("required", []) if r != "scoreCoordinate"]
    if not entry["required"]:
        del entry["required"]
    per_group = spec["decisionStrategy"]["properties"]["groupStrategy"]["properties"]["clustersPerDecisionGroup"]
    per_group.pop("pattern")
    return crd


def _created(api: Api, name: str, namespace: str, spec: dict[str, Any]) -> bool:
    try:
        api.placement(name, namespace, spec)
    except Invalid:
        return False
    return True


@pytest.fixture
def hub(hub_kind: str, tmp_path: Path) -> Iterator[Any]:
    """An isolated hub of either kind (its Placement CRD is replaced)."""
    handle = start_hub(hub_kind, tmp_path, kubeconfig=tmp_path / "kubeconfig")
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def operator() -> Iterator[Callable[[str], PlacementOperator]]:
    """Start the placement operator on a hub; stopped after the test (before the hub stops)."""
    started: list[PlacementOperator] = []

    def start(kubeconfig: str) -> PlacementOperator:
        runner = PlacementOperator(kubeconfig)
        runner.start()
        started.append(runner)
        return runner

    yield start
    for runner in started:
        runner.stop()


def test_placement_stored_without_score_coordinate_is_misconfigured(
    hub: Any, operator: Callable[[str], PlacementOperator], wait_for: WaitFor
) -> None:
    handle = hub
    assert handle.kubeconfig is not None
    api = Api(str(handle.kubeconfig))
    tag = uuid.uuid4().hex[:6]
    set_name = f"set-{tag}"
    api.cluster_set(set_name)
    namespace = api.namespace("stored")
    api.binding(set_name, namespace)
    clusters = [f"c{i}-{tag}" for i in range(1, 4)]
    for name in clusters:
        api.cluster(name, set_name)

    # Today's CRD refuses both objects.
    for name, spec in (("no-coordinate", NO_COORDINATE), ("huge-percent", HUGE_PERCENT)):
        with pytest.raises(Invalid):
            api.placement(name, namespace, spec)

    # A hub whose CRD predates the rules stores them.
    current = api.get(CRDS, PLACEMENT_CRD)
    api.kube.request_sync("PUT", CRDS.path(None, PLACEMENT_CRD), body=pre_upgrade_crd(current))
    # kube-apiserver swaps a CRD's validation in a moment after the update returns.
    for name, spec in (("no-coordinate", NO_COORDINATE), ("huge-percent", HUGE_PERCENT)):
        wait_for(lambda n=name, s=spec: _created(api, n, namespace, s), timeout=TIMEOUT, message=f"{name} stored under the old CRD")
    stored = api.get(PLACEMENTS, "no-coordinate", namespace)
    assert stored["spec"]["prioritizerPolicy"]["configurations"] == [{"weight": 2}]

    operator(str(handle.kubeconfig))

    def conditions(name: str) -> dict[str, tuple[str, str, str]] | None:
        obj = api.get(PLACEMENTS, name, namespace)
        found = {c["type"]: (c["status"], c["reason"], c["message"]) for c in (obj.get("status") or {}).get("conditions") or []}
        return found if "PlacementSatisfied" in found else None

    no_coordinate = wait_for(lambda: conditions("no-coordinate"), timeout=TIMEOUT, message="no-coordinate scheduled")
    assert no_coordinate["PlacementMisconfigured"] == ("True", "Misconfigured", ":scoreCoordinate field is required")
    assert no_coordinate["PlacementSatisfied"][:2] == ("False", "NoManagedClusterMatched")
    assert api.get(PLACEMENTS, "no-coordinate", namespace)["status"]["numberOfSelectedClusters"] == 0
    assert api.decided("no-coordinate", namespace) == []

    huge = wait_for(lambda: conditions("huge-percent"), timeout=TIMEOUT, message="huge-percent scheduled")
    assert huge["PlacementMisconfigured"] == ("True", "Misconfigured", ":1e400% invalid type: string is not a percentage")
    assert huge["PlacementSatisfied"][:2] == ("True", "AllDecisionsScheduled")
    status = api.get(PLACEMENTS, "huge-percent", namespace)["status"]
    assert status["numberOfSelectedClusters"] == 3
    assert status.get("decisionGroups", []) == []
    assert api.decisions("huge-percent", namespace) == []
