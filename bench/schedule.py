"""Benchmark of the pure scheduler (run: ``.venv/bin/python bench/schedule.py``).

Prints the time of one scheduling pass over 1,000 / 10,000 / 50,000 clusters (every built-in
prioritizer plus one AddOn score, with decision groups and 100-cluster pages), and of a full
pass of 1,000 Placements over 3,500 clusters (one snapshot, as the controller shares it).
Also a 10,000-cluster pass with two spread terms (DoNotSchedule zone within region,
numberOfClusters 1,000).
Targets: <= 250 ms for 10,000 clusters, with or without spread; <= 60 s for the full pass on one
core.

Parsing the objects into models and building the per-cluster views happens once per object
version in the controller (it is cached across passes), so it is measured separately.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.controllers.placement.decisions import desired_decisions
from ocm_rollout.controllers.placement.scheduler import schedule
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REGIONS = ["us-east", "us-west", "eu-central", "ap-south"]


def clusters(count: int, rng: random.Random) -> list[ManagedCluster]:
    out = []
    for i in range(count):
        memory = f"{rng.randint(8, 512)}Gi"
        cpu = str(rng.randint(4, 128))
        taints = []
        if i % 50 == 0:
            taints.append({"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect",
                           "timeAdded": "2025-12-31T23:00:00Z"})
        out.append(
            ManagedCluster.model_validate(
                {
                    "metadata": {"name": f"cluster-{i:05d}",
                                 "labels": {"region": REGIONS[i % 4], "zone": f"{REGIONS[i % 4]}-{chr(97 + (i // 4) % 3)}",
                                            "env": "prod" if i % 3 else "dev",
                                            "canary": "true" if i % 100 == 0 else "false"}},
                    "spec": {"hubAcceptsClient": True, "taints": taints},
                    "status": {"allocatable": {"cpu": cpu, "memory": memory}, "capacity": {"cpu": cpu, "memory": memory},
                               "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}]},
                }
            )
        )
    return out


def scores(names: list[str], rng: random.Random) -> list[AddOnPlacementScore]:
    return [
        AddOnPlacementScore.model_validate(
            {"metadata": {"name": "usage", "namespace": name},
             "status": {"scores": [{"name": "cpuratio", "value": rng.randint(-100, 100)}], "validUntil": "2026-01-02T00:00:00Z"}}
        )
        for name in names
    ]


def placement(
    name: str, namespace: str = "default", number: int | None = None, spread: list[dict[str, Any]] | None = None
) -> Placement:
    spec: dict[str, Any] = {
        "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]},
                                                    "claimSelector": {"matchExpressions": [{"key": "platform.open-cluster-management.io", "operator": "Exists"}]}}}],
        "tolerations": [{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
        "prioritizerPolicy": {"mode": "Additive", "configurations": [
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2},
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, "weight": 2},
            {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "usage", "scoreName": "cpuratio"}}, "weight": 1}]},
        "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25%", "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}}}}]}},
    }
    if number is not None:
        spec["numberOfClusters"] = number
    if spread is not None:
        spec["spreadPolicy"] = {"spreadConstraints": spread}
    return Placement.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": spec})


def world(count: int, rng: random.Random, decisions: list[PlacementDecision] | None = None) -> tuple[Snapshot, float]:
    models = clusters(count, rng)
    started = time.perf_counter()
    views = [ClusterView.of(c) for c in models]
    prepared = time.perf_counter() - started
    sets = [ManagedClusterSet.model_validate({"metadata": {"name": "global"}, "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}})]
    bindings = [ManagedClusterSetBinding.model_validate({"metadata": {"name": "global", "namespace": f"ns-{i}"}, "spec": {"clusterSet": "global"}})
                for i in range(10)] + [ManagedClusterSetBinding.model_validate({"metadata": {"name": "global", "namespace": "default"}, "spec": {"clusterSet": "global"}})]
    return Snapshot(views, sets, bindings, decisions or [], scores([c.name for c in models], rng)), prepared


def best_of(runs: int, fn: Any) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def one_pass(count: int) -> None:
    rng = random.Random(count)
    snapshot, prepared = world(count, rng)
    p = placement("bench")
    result = schedule(p, snapshot, NOW)
    assert result.new_status is not None and result.pages
    runs = 5 if count <= 10_000 else 2

    def work() -> None:
        result = schedule(p, snapshot, NOW)
        desired_decisions(p, result.pages, result.decision_scores)

    seconds = best_of(runs, work)
    print(
        f"one pass, {count:>6,} clusters: {seconds * 1000:8.1f} ms "
        f"({len(result.selected)} selected, {len(result.groups)} groups, {len(result.pages)} pages; "
        f"cluster views built once in {prepared * 1000:.0f} ms)"
    )


def spread_pass(count: int = 10_000, number: int = 1_000) -> None:
    """Two DoNotSchedule terms, zone within region, choosing ``number`` of ``count`` clusters."""
    rng = random.Random(11)
    snapshot, _ = world(count, rng)
    terms = [
        {"topologyKey": "region", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"},
        {"topologyKey": "zone", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"},
    ]
    p = placement("spread", number=number, spread=terms)
    result = schedule(p, snapshot, NOW)
    assert result.spread is not None and len(result.selected) == number, result.unscheduled

    def work() -> None:
        result = schedule(p, snapshot, NOW)
        desired_decisions(p, result.pages, result.decision_scores)

    seconds = best_of(5, work)
    zones = len(result.spread.terms[1].topologies)
    print(
        f"spread pass, {count:,} clusters, zone within region (DoNotSchedule), {number:,} selected over "
        f"{zones} zones: {seconds * 1000:.1f} ms (target <= 250 ms)"
    )


def full_pass(placements: int = 1000, count: int = 3500) -> None:
    rng = random.Random(7)
    existing = []
    for i in range(placements):
        names = [f"cluster-{rng.randrange(count):05d}" for _ in range(20)]
        existing.append(
            PlacementDecision.model_validate(
                {"metadata": {"name": f"p{i}-decision-1", "namespace": f"ns-{i % 10}",
                              "labels": {"cluster.open-cluster-management.io/placement": f"p{i}"}},
                 "status": {"decisions": [{"clusterName": n, "reason": ""} for n in sorted(set(names))]}}
            )
        )
    snapshot, _ = world(count, rng, existing)
    items = [placement(f"p{i}", f"ns-{i % 10}", number=rng.choice([None, 5, 20, 100])) for i in range(placements)]
    started = time.perf_counter()
    for p in items:
        result = schedule(p, snapshot, NOW)
        desired_decisions(p, result.pages, result.decision_scores)
    seconds = time.perf_counter() - started
    print(f"full pass, {placements:,} Placements over {count:,} clusters: {seconds:.2f} s ({seconds / placements * 1000:.1f} ms each)")


def main() -> int:
    for count in (1_000, 10_000, 50_000):
        one_pass(count)
    spread_pass()
    full_pass()
    return 0


if __name__ == "__main__":
    sys.exit(main())
