"""A synthetic fleet for timing the pure add-on configuration core: one ClusterManagementAddOn
with one placement over ``n`` clusters in decision groups, its ManagedClusterAddOns in the states a
real fleet shows, and the time one ``cma_status_references`` + ``plan_config_rollout`` pass takes.
No I/O. A benchmark fixture, not part of the package: ``tests/unit/test_addon_configrollout.py``
imports it, and ``.venv/bin/python bench/addon_core.py`` prints the best of 5 passes over 10,000
MCAs per fleet state (``bench/addon.py`` times its own, richer fleet), each MCA judged afresh and
with the controller's memo of the judgements of the previous pass (``judge_memo``: the repeated
passes over unchanged MCAs are what a CMA pass meets between two MCA changes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    LABEL_DECISION_GROUP_INDEX,
    LABEL_PLACEMENT,
)
from ocm_rollout.controllers.addon.configrollout import (
    ConfigRolloutPlan,
    Judge,
    judge_direct,
    plan_config_rollout,
)
from ocm_rollout.controllers.addon.configs import cma_status_references
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.judge_memo import JudgeMemo
from ocm_rollout.controllers.common.wire import JSON, format_time
from ocm_rollout.controllers.rollout.reservations import EMPTY

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
OLD_HASH = "1" * 64
NEW_HASH = "2" * 64
PLACEMENT = ("default", "fleet")
CONFIG = ("default", "fleet-config")
GROUP_SIZE = 500


def _refs(spec_hash: str, applied: str | None) -> list[JSON]:
    desired = {"namespace": CONFIG[0], "name": CONFIG[1], "specHash": spec_hash}
    item: JSON = {
        "group": ADDON_GROUP,
        "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE,
        "namespace": CONFIG[0],
        "name": CONFIG[1],
        "lastObservedGeneration": 1,
        "desiredConfig": desired,
    }
    if applied is not None:
        item["lastAppliedConfig"] = {**desired, "specHash": applied}
    return [item]


def _mca(cluster: str, refs: list[JSON], progressing: tuple[str, str], since: datetime) -> JSON:
    status, reason = progressing
    return {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "bench-addon", "namespace": cluster, "resourceVersion": "1"},
        "spec": {"installNamespace": "open-cluster-management-agent-addon"},
        "status": {
            "conditions": [
                {"type": "Available", "status": "True", "reason": "ManagedClusterAddOnLeaseUpdated",
                 "message": "ok", "lastTransitionTime": format_time(since)},
                {"type": "ManifestApplied", "status": "True", "reason": "AddonManifestApplied",
                 "message": "ok", "lastTransitionTime": format_time(since)},
                {"type": "Progressing", "status": status, "reason": reason, "message": reason,
                 "lastTransitionTime": format_time(since)},
                {"type": "Configured", "status": "True", "reason": "ConfigurationsConfigured",
                 "message": "Configurations configured", "lastTransitionTime": format_time(since)},
            ],
            "configReferences": refs,
        },
    }


@dataclass
class Fleet:
    cma: JSON
    mcas: dict[str, JSON]
    placements: dict[tuple[str, str], PlacementInput]
    hash_of: Callable[[str, str, str, str], str | None]
    now: datetime = NOW


def synthetic_fleet(n: int = 10_000, *, state: str = "steady", strategy: Any = None) -> Fleet:
    """A CMA over ``n`` clusters. ``state``: ``steady`` (every MCA has applied the current
    configuration), ``changed`` (the configuration just changed: every MCA is ToApply) or
    ``rolling`` (a Progressive rollout under way: some applied, some in flight, some failed, the
    rest waiting)."""
    clusters = [f"cluster-{i:05d}" for i in range(n)]
    current = OLD_HASH if state == "steady" else NEW_HASH
    strategy = strategy or {"type": "Progressive", "progressive": {"maxConcurrency": "10%", "maxFailures": "5%",
                                                                    "progressDeadline": "10m"}}
    cma: JSON = {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "bench-addon", "resourceVersion": "1"},
        "spec": {
            "supportedConfigs": [
                {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE,
                 "defaultConfig": {"namespace": CONFIG[0], "name": CONFIG[1]}},
            ],
            "installStrategy": {
                "type": "Placements",
                "placements": [{"namespace": PLACEMENT[0], "name": PLACEMENT[1], "rolloutStrategy": strategy}],
            },
        },
    }
    decisions = []
    for start in range(0, n, GROUP_SIZE):
        decisions.append({
            "metadata": {"name": f"fleet-decision-{start // GROUP_SIZE + 1}", "namespace": PLACEMENT[0],
                         "labels": {LABEL_PLACEMENT: PLACEMENT[1], LABEL_DECISION_GROUP_INDEX: str(start // GROUP_SIZE)}},
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters[start:start + GROUP_SIZE]]},
        })
    placement = {"metadata": {"name": PLACEMENT[1], "namespace": PLACEMENT[0], "generation": 1},
                 "spec": {}, "status": {"numberOfSelectedClusters": n}}
    long_ago = NOW - timedelta(days=3)
    mcas: dict[str, JSON] = {}
    for position, cluster in enumerate(clusters):
        if state == "steady":
            mcas[cluster] = _mca(cluster, _refs(OLD_HASH, OLD_HASH), ("False", "Completed"), long_ago)
        elif state == "changed":
            mcas[cluster] = _mca(cluster, _refs(OLD_HASH, OLD_HASH), ("False", "Completed"), long_ago)
        elif position < n // 3:
            mcas[cluster] = _mca(cluster, _refs(NEW_HASH, NEW_HASH), ("False", "Completed"), NOW - timedelta(hours=1))
        elif position < n // 3 + n // 20:
            mcas[cluster] = _mca(cluster, _refs(NEW_HASH, OLD_HASH), ("True", "Progressing"), NOW - timedelta(minutes=2))
        elif position < n // 3 + n // 20 + n // 100:
            mcas[cluster] = _mca(cluster, _refs(NEW_HASH, OLD_HASH), ("False", "Failed"), NOW - timedelta(minutes=30))
        else:
            mcas[cluster] = _mca(cluster, _refs(OLD_HASH, OLD_HASH), ("False", "Completed"), long_ago)

    def hash_of(group: str, resource: str, namespace: str, name: str) -> str | None:
        if (group, resource) != (ADDON_GROUP, ADDON_DEPLOYMENT_CONFIG_RESOURCE):
            return None
        return current if (namespace, name) == CONFIG else ""

    cma["status"] = cma_status_references(cma, hash_of)
    return Fleet(cma, mcas, {PLACEMENT: PlacementInput(placement, decisions)}, hash_of)


def run_pass(fleet: Fleet, judge: Judge = judge_direct) -> ConfigRolloutPlan:
    """One controller pass over the fleet: the CMA status references, then the rollout plan."""
    status = cma_status_references(fleet.cma, fleet.hash_of)
    return plan_config_rollout(
        cma={**fleet.cma, "status": status}, mcas=fleet.mcas, placements=fleet.placements, reserved=EMPTY, now=fleet.now,
        judge=judge,
    )


def bench_core(
    n: int = 10_000, repeats: int = 5, states: tuple[str, ...] = ("steady", "changed", "rolling"), *, memo: bool = False
) -> dict[str, float]:
    """Best-of-``repeats`` milliseconds of one pass over ``n`` MCAs, per fleet state; with
    ``memo``, one ``JudgeMemo`` serves the repeated passes over the fleet (filled by a first one)."""
    timings: dict[str, float] = {}
    for state in states:
        fleet = synthetic_fleet(n, state=state)
        judge: Judge = judge_direct
        if memo:
            judge = JudgeMemo()
            run_pass(fleet, judge)
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            run_pass(fleet, judge)
            best = min(best, time.perf_counter() - started)
        timings[state] = best * 1000
    return timings


if __name__ == "__main__":  # pragma: no cover
    afresh, remembered = bench_core(), bench_core(memo=True)
    print(f"{'state':>8}  {'afresh ms':>10}  {'memo ms':>10}")
    for name, ms in afresh.items():
        print(f"{name:>8}  {ms:10.1f}  {remembered[name]:10.1f}")
