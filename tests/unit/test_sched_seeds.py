"""The seeds' worked examples, scheduled by the pure core.

- The decision strategy over 310 clusters (seed 004): groups 10/10/150/140, six pages.
- The three-cluster memory examples (seed 003): scores 0/100/200; a 100 MB newcomer changes
  nothing; a 150 MB newcomer moves the decision; weight 3 on memory moves it; Steady weight 3
  pins it.
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.controllers.placement.decisions import desired_decisions, plan_decision_writes, score_note
from ocm_rollout.controllers.placement.scheduler import ScheduleResult
from tests.unit.test_sched_builders import (
    binding,
    cluster,
    decision,
    label_set,
    memory_cluster,
    placement,
    run,
    satisfied,
    world,
)

GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"
GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"


def canary_placement() -> Any:
    def group(name: str) -> dict[str, Any]:
        return {"groupName": name, "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": name, "operator": "Exists"}]}}}

    return placement(
        "placement1",
        clusterSets=["global"],
        decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": 150,
                                            "decisionGroups": [group("prod-canary-west"), group("prod-canary-east")]}},
    )  # fmt: skip


def fleet_310() -> list[ManagedCluster]:
    clusters = []
    for i in range(310):
        labels = {"prod-canary-west": "true"} if i < 10 else {"prod-canary-east": "true"} if i < 20 else {}
        clusters.append(cluster(f"cluster{i:03d}", labels))
    return clusters


def test_310_cluster_decision_strategy_groups() -> None:
    result = run(canary_placement(), world(fleet_310()))
    assert result.new_status is not None
    status = result.new_status.to_wire()
    assert status["numberOfSelectedClusters"] == 310
    assert status["decisionGroups"] == [
        {"clusterCount": 10, "decisionGroupIndex": 0, "decisionGroupName": "prod-canary-west", "decisions": ["placement1-decision-1"]},
        {"clusterCount": 10, "decisionGroupIndex": 1, "decisionGroupName": "prod-canary-east", "decisions": ["placement1-decision-2"]},
        {"clusterCount": 150, "decisionGroupIndex": 2, "decisionGroupName": "",
         "decisions": ["placement1-decision-3", "placement1-decision-4"]},
        {"clusterCount": 140, "decisionGroupIndex": 3, "decisionGroupName": "",
         "decisions": ["placement1-decision-5", "placement1-decision-6"]},
    ]  # fmt: skip


def test_310_cluster_decision_pages_and_labels() -> None:
    p = canary_placement()
    result = run(p, world(fleet_310()))
    pages = desired_decisions(p, result.pages, result.decision_scores)
    first = pages[0]["metadata"]
    assert first["name"] == "placement1-decision-1"
    assert first["namespace"] == "default"
    assert first["labels"] == {
        "cluster.open-cluster-management.io/placement": "placement1",
        GROUP_INDEX: "0",
        GROUP_NAME: "prod-canary-west",
    }
    assert [(p["metadata"]["labels"][GROUP_INDEX], len(p["status"]["decisions"])) for p in pages] == [
        ("0", 10), ("1", 10), ("2", 100), ("2", 50), ("3", 100), ("3", 40)
    ]  # fmt: skip
    assert {d["clusterName"] for d in pages[0]["status"]["decisions"]} == {f"cluster{i:03d}" for i in range(10)}


# -- the memory examples -----------------------------------------------------------------------

MEMORY = {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]}
MEMORY_X3 = {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, "weight": 3}]}
STEADY_X3 = {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}},
                                {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 3}]}  # fmt: skip

THREE = [memory_cluster("cluster1", "60Mi"), memory_cluster("cluster2", "80Mi"), memory_cluster("cluster3", "100Mi")]


def schedule_demo(policy: dict[str, Any], clusters: list[ManagedCluster], decided: list[str] | None = None) -> ScheduleResult:
    decisions = [decision("demo-decision-1", decided, placement_name="demo", namespace="ns1")] if decided else []
    p = placement("demo", "ns1", numberOfClusters=2, prioritizerPolicy=policy)
    snapshot = world(clusters, sets=[label_set("global", {})], bindings=[binding("global", "ns1")], decisions=decisions)
    return run(p, snapshot)


def test_case1_scores_0_100_200() -> None:
    result = schedule_demo(MEMORY, THREE)
    assert score_note(result.scores) == "cluster1:0 cluster2:100 cluster3:200 "
    assert result.selected == ["cluster3", "cluster2"]
    assert satisfied(result)[1] == "AllDecisionsScheduled"


def test_case1_decision_lists_clusters_by_name() -> None:
    result = schedule_demo(MEMORY, THREE)
    assert result.pages[0].clusters == ("cluster2", "cluster3")


def test_case1_small_newcomer_changes_nothing() -> None:
    result = schedule_demo(MEMORY, [*THREE, memory_cluster("cluster4", "100Mi")], ["cluster2", "cluster3"])
    assert sorted(result.selected) == ["cluster2", "cluster3"]
    p = placement("demo", "ns1")
    pages = desired_decisions(p, result.pages, result.decision_scores)
    existing = desired_decisions(p, result.pages, result.decision_scores)
    assert plan_decision_writes(pages, {x["metadata"]["name"]: x for x in existing}) == []


def test_case1_large_newcomer_moves_decision() -> None:
    result = schedule_demo(MEMORY, [*THREE, memory_cluster("cluster4", "150Mi")], ["cluster2", "cluster3"])
    assert result.scores == {"cluster1": 0, "cluster2": 145, "cluster3": 189, "cluster4": 200}
    assert sorted(result.selected) == ["cluster3", "cluster4"]


def test_case2_memory_weight_3_scores() -> None:
    assert schedule_demo(MEMORY_X3, THREE).scores == {"cluster1": -200, "cluster2": 100, "cluster3": 400}


def test_case2_memory_weight_3_moves_decision() -> None:
    result = schedule_demo(MEMORY_X3, [*THREE, memory_cluster("cluster4", "100Mi")], ["cluster2", "cluster3"])
    assert score_note(result.scores) == "cluster1:-200 cluster2:200 cluster3:500 cluster4:400 "
    assert sorted(result.selected) == ["cluster3", "cluster4"]


def test_case3_steady_weight_3_initial_scores() -> None:
    assert schedule_demo(STEADY_X3, THREE).scores == {"cluster1": 0, "cluster2": 100, "cluster3": 200}


def test_case3_steady_weight_3_pins_decision() -> None:
    result = schedule_demo(STEADY_X3, [*THREE, memory_cluster("cluster4", "150Mi")], ["cluster2", "cluster3"])
    assert sorted(result.selected) == ["cluster2", "cluster3"]
