"""The placement controller on the local hub, through the real kopf operator.

Each test builds its own cluster set (named uniquely), clusters, namespace and bindings, so
the tests do not see each other's objects.
"""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.client.kube import (
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from tests.integration.helpers import free_port
from tests.integration.test_placement_env import Api, PlacementOperator, first

WaitFor = Callable[..., Any]
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def debug_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def operator(controller_kubeconfig: Path, debug_port: int) -> Iterator[PlacementOperator]:
    runner = PlacementOperator(str(controller_kubeconfig), debug_port=debug_port)
    runner.start()
    try:
        yield runner
    finally:
        runner.stop()


@pytest.fixture(scope="module")
def api(controller_kubeconfig: Path) -> Api:
    return Api(str(controller_kubeconfig))


def barrier(operator: PlacementOperator, api: Api, namespace: str, wait_for: WaitFor) -> None:
    """Touch a marker Placement and wait for its pass: with one worker the queue is FIFO, so
    everything queued before the touch has been processed."""
    if api.get_or_none(PLACEMENTS, "marker", namespace) is None:
        api.placement("marker", namespace, {"clusterSets": ["none"]})
        wait_for(lambda: operator.passes(namespace, "marker") > 0, timeout=TIMEOUT)
    before = operator.passes(namespace, "marker")
    api.patch(PLACEMENTS, "marker", {"metadata": {"annotations": {"touch": uuid.uuid4().hex}}}, namespace)
    wait_for(lambda: operator.passes(namespace, "marker") > before, timeout=TIMEOUT)


def settled_passes(operator: PlacementOperator, api: Api, namespace: str, name: str, wait_for: WaitFor) -> int:
    """The pass count of a Placement once its own writes have stopped re-queuing it."""

    def stable() -> int | None:
        count = operator.passes(namespace, name)
        barrier(operator, api, namespace, wait_for)
        return count + 1 if operator.passes(namespace, name) == count else None

    return int(wait_for(stable, timeout=TIMEOUT, message=f"{name} settled")) - 1


class Fleet:
    """One test's set, namespace and clusters (removed again after the test)."""

    made: list[Fleet] = []

    def __init__(self, api: Api, size: int = 3, memory: list[str] | None = None) -> None:
        Fleet.made.append(self)
        self.api = api
        self.extra_namespaces: list[str] = []
        self.tag = uuid.uuid4().hex[:6]
        self.set = f"set-{self.tag}"
        api.cluster_set(self.set)
        self.namespace = api.namespace(f"pl-{self.tag}")
        api.binding(self.set, self.namespace)
        self.clusters = [f"c{i}-{self.tag}" for i in range(1, size + 1)]
        for i, name in enumerate(self.clusters):
            api.cluster(name, self.set, {"index": str(i)}, memory=memory[i] if memory else None)


@pytest.fixture(autouse=True)
def remove_fleets(api: Api) -> Iterator[None]:
    yield
    while Fleet.made:
        fleet = Fleet.made.pop()
        for name in fleet.clusters:
            api.delete(MANAGED_CLUSTERS, name)
        api.delete(MANAGED_CLUSTER_SETS, fleet.set)
        for namespace in [fleet.namespace, *fleet.extra_namespaces]:
            api.delete(NAMESPACES, namespace)


def test_decisions_status_and_events_appear(operator: PlacementOperator, api: Api, wait_for: WaitFor) -> None:
    fleet = Fleet(api)
    placement = api.placement("p", fleet.namespace, {"numberOfClusters": 2})
    wait_for(lambda: len(api.decided("p", fleet.namespace)) == 2, timeout=TIMEOUT, message="two decisions")
    page = api.decisions("p", fleet.namespace)[0]
    assert page["metadata"]["name"] == "p-decision-1"
    assert page["metadata"]["labels"] == {
        "cluster.open-cluster-management.io/placement": "p",
        "cluster.open-cluster-management.io/decision-group-name": "",
        "cluster.open-cluster-management.io/decision-group-index": "0",
    }
    owner = page["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Placement", "p", placement["metadata"]["uid"], True)
    satisfied = wait_for(lambda: api.condition("p", fleet.namespace, "PlacementSatisfied"), timeout=TIMEOUT)
    assert (satisfied["status"], satisfied["reason"]) == ("True", "AllDecisionsScheduled")
    obj = api.get_or_none(PLACEMENTS, "p", fleet.namespace) or {}
    assert obj["status"]["numberOfSelectedClusters"] == 2
    assert obj["status"]["decisionGroups"] == [
        {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["p-decision-1"], "clusterCount": 2}
    ]
    reasons = wait_for(
        lambda: (r := {e["reason"] for e in api.events(fleet.namespace, "p")}) >= {"DecisionCreate", "DecisionUpdate", "ScoreUpdate"} and r,
        timeout=TIMEOUT,
        message="DecisionCreate, DecisionUpdate and ScoreUpdate events",
    )
    assert "DecisionDelete" not in reasons
    score = first(api.events(fleet.namespace, "p"), lambda e: e["reason"] == "ScoreUpdate")
    assert score is not None and score["message"].startswith(f"{fleet.clusters[0]}:")
    assert score["source"]["component"] == "placementController"


def test_label_change_reschedules_exactly_the_affected_placement(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    fleet = Fleet(api)
    other = Fleet(api)
    selector = {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]}
    api.placement("gold", fleet.namespace, selector)
    api.placement("bystander", other.namespace, {})
    wait_for(lambda: len(api.decided("bystander", other.namespace)) == 3, timeout=TIMEOUT)
    wait_for(lambda: api.condition("gold", fleet.namespace, "PlacementSatisfied"), timeout=TIMEOUT)
    assert api.decided("gold", fleet.namespace) == []
    bystander_passes = settled_passes(operator, api, other.namespace, "bystander", wait_for)

    api.patch(MANAGED_CLUSTERS, fleet.clusters[1], {"metadata": {"labels": {"tier": "gold"}}})
    wait_for(lambda: api.decided("gold", fleet.namespace) == [fleet.clusters[1]], timeout=TIMEOUT, message="gold decision")
    barrier(operator, api, other.namespace, wait_for)
    assert operator.passes(other.namespace, "bystander") == bystander_passes


def test_taint_removes_cluster_from_decisions(operator: PlacementOperator, api: Api, wait_for: WaitFor) -> None:
    fleet = Fleet(api)
    api.placement("p", fleet.namespace, {})
    wait_for(lambda: len(api.decided("p", fleet.namespace)) == 3, timeout=TIMEOUT)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.patch(MANAGED_CLUSTERS, fleet.clusters[0], {"spec": {"taints": [{"key": "maintenance", "effect": "NoSelect", "timeAdded": now}]}})
    wait_for(lambda: api.decided("p", fleet.namespace) == fleet.clusters[1:], timeout=TIMEOUT, message="tainted cluster dropped")


def test_toleration_expiry_requeues_without_any_other_change(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    fleet = Fleet(api, size=2)
    added = (datetime.now(UTC) - timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.patch(MANAGED_CLUSTERS, fleet.clusters[0], {"spec": {"taints": [{"key": "flaky", "effect": "NoSelect", "timeAdded": added}]}})
    api.placement("p", fleet.namespace, {"tolerations": [{"key": "flaky", "operator": "Exists", "tolerationSeconds": 64}]})
    wait_for(lambda: api.decided("p", fleet.namespace) == fleet.clusters, timeout=TIMEOUT, message="tolerated at first")
    wait_for(lambda: api.decided("p", fleet.namespace) == fleet.clusters[1:], timeout=TIMEOUT, message="dropped at expiry")


def test_allocatable_change_moves_decision(operator: PlacementOperator, api: Api, wait_for: WaitFor) -> None:
    fleet = Fleet(api, memory=["1Gi", "2Gi", "3Gi"])
    policy = {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, "weight": 10}]}
    api.placement("p", fleet.namespace, {"numberOfClusters": 1, "prioritizerPolicy": policy})
    wait_for(lambda: api.decided("p", fleet.namespace) == [fleet.clusters[2]], timeout=TIMEOUT)
    api.set_memory(fleet.clusters[0], "8Gi")
    wait_for(lambda: api.decided("p", fleet.namespace) == [fleet.clusters[0]], timeout=TIMEOUT, message="moved to the biggest")


def test_addon_score_change_reschedules_addon_placements_only(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    fleet = Fleet(api, size=2)
    for name in fleet.clusters:
        api.create(NAMESPACES, {"metadata": {"name": name}})
        fleet.extra_namespaces.append(name)
    api.score(fleet.clusters[0], "usage", {"free": 90})
    api.score(fleet.clusters[1], "usage", {"free": 10})
    policy = {"mode": "Exact", "configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "usage", "scoreName": "free"}}}]}
    api.placement("scored", fleet.namespace, {"numberOfClusters": 1, "prioritizerPolicy": policy})
    api.placement("plain", fleet.namespace, {})
    wait_for(lambda: api.decided("scored", fleet.namespace) == [fleet.clusters[0]], timeout=TIMEOUT)
    wait_for(lambda: len(api.decided("plain", fleet.namespace)) == 2, timeout=TIMEOUT)
    plain_passes = settled_passes(operator, api, fleet.namespace, "plain", wait_for)
    api.score(fleet.clusters[1], "usage", {"free": 99})
    wait_for(lambda: api.decided("scored", fleet.namespace) == [fleet.clusters[1]], timeout=TIMEOUT, message="score moved it")
    barrier(operator, api, fleet.namespace, wait_for)
    assert operator.passes(fleet.namespace, "plain") == plain_passes


def test_binding_without_status_is_used_and_its_removal_unschedules(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    fleet = Fleet(api, size=2)
    api.placement("p", fleet.namespace, {})
    wait_for(lambda: len(api.decided("p", fleet.namespace)) == 2, timeout=TIMEOUT)
    barrier(operator, api, fleet.namespace, wait_for)
    binding = api.get_or_none(MANAGED_CLUSTER_SET_BINDINGS, fleet.set, fleet.namespace) or {}
    assert not (binding.get("status") or {}).get("conditions"), "the placement controller wrote binding status"
    api.delete(MANAGED_CLUSTER_SET_BINDINGS, fleet.set, fleet.namespace)
    wait_for(lambda: api.decided("p", fleet.namespace) == [], timeout=TIMEOUT, message="decisions emptied")
    cond = wait_for(
        lambda: (c := api.condition("p", fleet.namespace, "PlacementSatisfied")) and c["reason"] == "NoManagedClusterSetBindings" and c,
        timeout=TIMEOUT,
    )
    assert cond["status"] == "False"


def test_deleting_placement_deletes_its_decisions(operator: PlacementOperator, api: Api, wait_for: WaitFor) -> None:
    fleet = Fleet(api, size=2)
    api.placement("p", fleet.namespace, {})
    wait_for(lambda: len(api.decisions("p", fleet.namespace)) == 1, timeout=TIMEOUT)
    api.delete(PLACEMENTS, "p", fleet.namespace)
    wait_for(lambda: api.list(PLACEMENT_DECISIONS, fleet.namespace) == [], timeout=TIMEOUT, message="decisions garbage-collected")


def test_misconfigured_placement_reports_condition(operator: PlacementOperator, api: Api, wait_for: WaitFor) -> None:
    fleet = Fleet(api, size=1)
    api.placement("p", fleet.namespace, {"prioritizerPolicy": {"mode": "Sometimes"}})
    cond = wait_for(lambda: api.condition("p", fleet.namespace, "PlacementMisconfigured"), timeout=TIMEOUT)
    assert (cond["status"], cond["message"]) == ("True", ":incorrect prioritizer policy mode: Sometimes")
    assert len(api.decisions("p", fleet.namespace)) == 1


def test_debug_endpoint_shows_filters_and_scores(
    operator: PlacementOperator, api: Api, wait_for: WaitFor, debug_port: int
) -> None:
    fleet = Fleet(api, size=2)
    api.placement("p", fleet.namespace, {})
    wait_for(lambda: len(api.decided("p", fleet.namespace)) == 2, timeout=TIMEOUT)
    url = f"http://127.0.0.1:{debug_port}/debug/placements/{fleet.namespace}/p"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    assert body["placement"]["metadata"] == {"name": "p", "namespace": fleet.namespace}
    assert [r["name"] for r in body["filteredPipelineResults"]] == ["Predicate", "Predicate,TaintToleration"]
    assert body["filteredPipelineResults"][1]["filteredClusters"] == fleet.clusters
    assert [r["name"] for r in body["prioritizeResults"]] == ["Balance", "Steady"]
    assert [s["clusterName"] for s in body["aggregatedScores"]] == fleet.clusters


def test_debug_endpoint_unknown_placement_is_404(operator: PlacementOperator, debug_port: int) -> None:
    url = f"http://127.0.0.1:{debug_port}/debug/placements/nowhere/nothing"
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(url, timeout=10)
    assert info.value.code == 404
    assert json.loads(info.value.read()) == {"error": "placement 'nothing' not found"}


def test_a_negative_number_of_clusters_is_reported_as_misconfigured(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    """OCM's scheduler panics on it and the Placement never gets a status; ours says why."""
    fleet = Fleet(api)
    api.placement("negative", fleet.namespace, {"numberOfClusters": -3})

    def misconfigured() -> dict[str, Any] | None:
        stored = api.get_or_none(PLACEMENTS, "negative", fleet.namespace) or {}
        for cond in (stored.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PlacementMisconfigured" and cond.get("status") == "True":
                return dict(cond)
        return None

    cond = wait_for(misconfigured, timeout=TIMEOUT, message="PlacementMisconfigured True")
    assert (cond["reason"], cond["message"]) == ("Misconfigured", ":numberOfClusters must not be negative (got -3)")
    assert api.decided("negative", fleet.namespace) == []


def test_a_toleration_with_an_unknown_operator_is_reported_once(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    """OCM lets such a toleration match no taint and says nothing; ours schedules the same and
    records one Warning event, not one per pass."""
    fleet = Fleet(api, size=2)
    api.patch(MANAGED_CLUSTERS, fleet.clusters[0], {"spec": {"taints": [{"key": "gpu", "effect": "NoSelect"}]}})
    api.placement("p", fleet.namespace, {"tolerations": [{"key": "gpu", "operator": "exists"}]})
    wait_for(lambda: api.decided("p", fleet.namespace) == fleet.clusters[1:], timeout=TIMEOUT, message="taint not tolerated")

    def warnings() -> list[dict[str, Any]]:
        return [e for e in api.events(fleet.namespace, "p") if e["reason"] == "TolerationIgnored"]

    wait_for(lambda: warnings(), timeout=TIMEOUT, message="a TolerationIgnored event")
    passes = operator.passes(fleet.namespace, "p")
    api.patch(PLACEMENTS, "p", {"metadata": {"annotations": {"touch": "1"}}}, fleet.namespace)
    wait_for(lambda: operator.passes(fleet.namespace, "p") > passes, timeout=TIMEOUT, message="another pass")
    settled_passes(operator, api, fleet.namespace, "p", wait_for)
    (event,) = warnings()
    assert event["type"] == "Warning"
    assert event["message"] == (
        'spec.tolerations[0] (key "gpu") has operator "exists", which is neither Equal nor Exists: it tolerates no taint'
    )


def test_a_cluster_set_whose_members_cannot_be_computed_is_misconfigured(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    """OCM only logs the error and retries, writing nothing; ours also says why on the Placement."""
    fleet = Fleet(api, size=1)
    bad = f"bad-{fleet.tag}"
    selector = {"selectorType": "LabelSelector", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Foo"}]}}
    api.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": bad}, "spec": {"clusterSelector": selector}})
    try:
        api.binding(bad, fleet.namespace)
        api.placement("p", fleet.namespace, {})
        cond = wait_for(
            lambda: (c := api.condition("p", fleet.namespace, "PlacementMisconfigured")) and c["status"] == "True" and c,
            timeout=TIMEOUT,
            message="PlacementMisconfigured True",
        )
        assert cond["reason"] == "Misconfigured"
        assert cond["message"].startswith(f":invalid label selector of ManagedClusterSet {bad}: ")
        assert api.decisions("p", fleet.namespace) == []
    finally:
        api.delete(MANAGED_CLUSTER_SETS, bad)


def test_a_placement_whose_pass_fails_is_retried_with_a_growing_back_off(
    operator: PlacementOperator, api: Api, wait_for: WaitFor
) -> None:
    """A set whose selector has ``In`` with no values cannot be resolved: every pass fails. The
    retries must back off exponentially (the queue's failures grow) instead of coming back at
    the base delay for ever (2,169 warnings in 13 s on ``up`` before)."""
    fleet = Fleet(api, size=1)
    bad = f"empty-in-{fleet.tag}"
    selector = {"selectorType": "LabelSelector", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}
    api.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": bad}, "spec": {"clusterSelector": selector}})
    key = f"{fleet.namespace}/p"
    runtime = operator.handles.runtime("placement")
    try:
        api.binding(bad, fleet.namespace)
        api.placement("p", fleet.namespace, {})
        wait_for(lambda: len([r for r in runtime.recent_passes("placement") if r.key == key]) >= 6,
                 timeout=TIMEOUT, message="six passes of the placement")
        delays = [r.requeued_after for r in runtime.recent_passes("placement") if r.key == key and r.outcome.startswith("back off")]
        assert len(delays) >= 5
        assert all(d is not None for d in delays)
        growing = [b / a for a, b in itertools.pairwise(delays) if a]  # type: ignore[operator]
        assert growing and all(ratio == 2 for ratio in growing), delays
        assert runtime.queues["placement"].queue.failures(key) >= 5
    finally:
        api.delete(MANAGED_CLUSTER_SETS, bad)
