"""Benchmark of the rollout planner: one planning call over 10,000 clusters in 100 groups.

Two scenarios, each timed for each strategy type:

- "in flight": the first (mandatory) group is done, half of the other clusters have reported a
  status (mostly Succeeded, some soaking, Progressing, Failed within deadline, a few timed out,
  Skip and ToApply), the rest are new. Progressive and ProgressivePerGroup answer from the
  mandatory phase (it judges every reported cluster).
- "between waves": the same, but nothing is in flight (reported clusters are Succeeded long
  ago, Skip or TimeOut), so Progressive and ProgressivePerGroup reach the non-mandatory phase
  (cluster walk and group walk) and All plans every remaining cluster.

The timed call is ``plan_rollout`` with the strategy as it appears in the API object.

    .venv/bin/python bench/rollout.py [--repeat N] [--all-cores]

By default the process pins itself to one core (like ``taskset -c 0``) where the OS allows it.

Target: <= 50 ms per call on one core.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ocm_rollout.controllers.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    RolloutStatus,
    plan_rollout,
)

CLUSTERS = 10_000
GROUPS = 100
TARGET_MS = 50.0

STRATEGIES: dict[str, dict[str, Any]] = {
    "All": {"type": "All", "all": {"progressDeadline": "10m"}},
    "Progressive": {
        "type": "Progressive",
        "progressive": {
            "mandatoryDecisionGroups": [{"groupName": "canary"}],
            "maxConcurrency": "25%",
            "maxFailures": "5%",
            "minSuccessTime": "5m",
            "progressDeadline": "10m",
        },
    },
    "ProgressivePerGroup": {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {
            "mandatoryDecisionGroups": [{"groupName": "canary"}],
            "maxFailures": "10%",
            "minSuccessTime": "5m",
            "progressDeadline": "10m",
        },
    },
}


def scenario(
    in_flight: bool, seed: int = 7
) -> tuple[list[DecisionGroup], list[ClusterRolloutStatus], datetime]:
    rng = random.Random(seed)
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    per_group = CLUSTERS // GROUPS
    names = [f"cluster-{number:05d}" for number in range(CLUSTERS)]
    rng.shuffle(names)
    groups = [
        DecisionGroup(
            group_name="canary" if index == 0 else f"wave-{index}",
            group_index=index,
            clusters=names[index * per_group : (index + 1) * per_group],
        )
        for index in range(GROUPS)
    ]
    existing: list[ClusterRolloutStatus] = []
    long_ago = now - timedelta(hours=2)
    for name in groups[0].clusters:
        existing.append(ClusterRolloutStatus(name, RolloutStatus.SUCCEEDED, long_ago))
    others = [name for group in groups[1:] for name in group.clusters]
    for name in rng.sample(others, len(others) // 2):
        roll = rng.random()
        if not in_flight:
            status = RolloutStatus.SUCCEEDED if roll < 0.97 else RolloutStatus.SKIP
            existing.append(ClusterRolloutStatus(name, status, long_ago))
        elif roll < 0.80:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.SUCCEEDED, long_ago))
        elif roll < 0.85:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.SUCCEEDED, now - timedelta(minutes=2)))
        elif roll < 0.92:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.PROGRESSING, now - timedelta(minutes=3)))
        elif roll < 0.94:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.FAILED, now - timedelta(minutes=1)))
        elif roll < 0.95:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.PROGRESSING, long_ago))
        elif roll < 0.97:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.SKIP, None))
        else:
            existing.append(ClusterRolloutStatus(name, RolloutStatus.TO_APPLY, None))
    # a few reported clusters that are no longer decided
    existing.extend(ClusterRolloutStatus(f"gone-{n}", RolloutStatus.SUCCEEDED, long_ago) for n in range(50))
    rng.shuffle(existing)
    return groups, existing, now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=15, help="timed calls per strategy type (default 15)")
    parser.add_argument("--all-cores", action="store_true", help="do not pin the process to one core")
    args = parser.parse_args(argv)
    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    print(
        f"rollout planner: {CLUSTERS} clusters in {GROUPS} groups, "
        f"{args.repeat} calls per type and scenario, CPUs allowed: {cores or 'unknown'}"
    )
    all_met = True
    for label, in_flight in (("in flight", True), ("between waves", False)):
        groups, existing, now = scenario(in_flight)
        print(f"scenario {label!r}: {len(existing)} reported statuses")
        for name, strategy in STRATEGIES.items():
            plan_rollout(strategy, groups, existing, now)  # warm-up
            timings = []
            result = None
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = plan_rollout(strategy, groups, existing, now)
                timings.append((time.perf_counter() - start) * 1000)
            assert result is not None
            best, median = min(timings), statistics.median(timings)
            met = median <= TARGET_MS
            all_met &= met
            print(
                f"  {name:<20} min {best:6.1f} ms  median {median:6.1f} ms  "
                f"[{result.trace.phase} phase; rollout {len(result.clusters_to_rollout)}, "
                f"timed out {len(result.clusters_timeout)}, removed {len(result.clusters_removed)}]  "
                f"{'OK' if met else 'OVER'}"
            )
    print(f"target <= {TARGET_MS:.0f} ms per call (median): {'met' if all_met else 'NOT met'}")
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
