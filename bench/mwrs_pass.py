"""Benchmark: the pure part of one ManifestWorkReplicaSet pass over a large rollout in progress, and
what each piece of it costs. No I/O.

The fleet: one MWRS, Progressive with maxConcurrency 20%, one placement over ``--clusters``
clusters (pages of 100); 40% of the works succeeded, 20% progressing, the rest not written yet.
A pass plans (``plan_and_decide``) and aggregates the status (``aggregation.build_status``) from
the works as stored; nothing changed since the last pass, which is the common case (a status event
of one work re-queues the whole MWRS). Prints the best of ``--repeat`` for each piece, per pass
and per cluster.

    .venv/bin/python bench/mwrs_pass.py [--clusters 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX, LABEL_PLACEMENT  # noqa: E402
from ocm_rollout.client.kube import JSON  # noqa: E402
from ocm_rollout.controllers.common.wire import format_time  # noqa: E402
from ocm_rollout.controllers.rollout.reservations import EMPTY  # noqa: E402
from ocm_rollout.controllers.workset import aggregation, history  # noqa: E402
from ocm_rollout.controllers.workset.aggregation import DeployOutcome  # noqa: E402
from ocm_rollout.controllers.workset.indexes import Forms  # noqa: E402
from ocm_rollout.controllers.workset.plan import plan_deploy  # noqa: E402
from ocm_rollout.controllers.workset.planning import PlanInputs, plan_and_decide  # noqa: E402
from ocm_rollout.controllers.workset.template import form_hash, normal_spec  # noqa: E402
from ocm_rollout.controllers.workset.work_memo import DIRECT, WorkMemo  # noqa: E402
from ocm_rollout.controllers.workset.workbuild import owner_for  # noqa: E402

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
TEMPLATE: JSON = {"workload": {"manifests": [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench", "namespace": "default"},
     "data": {"key": "value"}}]}}


def fleet(n: int, memo: WorkMemo = DIRECT) -> tuple[PlanInputs, list[JSON], Forms]:
    owner = owner_for("bench", "bench")
    mwrs: JSON = {
        "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "bench", "namespace": "bench", "uid": "u-bench", "resourceVersion": "7",
                     "generation": 1},
        "spec": {"placementRefs": [{"name": "fleet", "rolloutStrategy": {
            "type": "Progressive", "progressive": {"maxConcurrency": "20%"}}}],
            "manifestWorkTemplate": TEMPLATE},
    }
    clusters = [f"cluster{i}" for i in range(1, n + 1)]
    pages = [clusters[i : i + 100] for i in range(0, n, 100)]
    decisions = [
        {"metadata": {"name": f"fleet-decision-{k + 1}", "namespace": "bench", "resourceVersion": str(k + 1),
                      "labels": {LABEL_PLACEMENT: "fleet", LABEL_DECISION_GROUP_INDEX: "0"}},
         "status": {"decisions": [{"clusterName": c, "reason": ""} for c in page]}}
        for k, page in enumerate(pages)
    ]
    placement = {"metadata": {"name": "fleet", "namespace": "bench", "generation": 1},
                 "spec": {}, "status": {"numberOfSelectedClusters": n, "decisionGroups": [
                     {"decisionGroupIndex": 0, "decisionGroupName": "",
                      "decisions": [d["metadata"]["name"] for d in decisions], "clusterCount": n}],
                     "conditions": [{"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled",
                                     "message": "", "lastTransitionTime": format_time(NOW),
                                     "observedGeneration": 1}]}}
    step = history.resolve_update(mwrs=mwrs, owner_label_value=owner.label_value, revisions=[], collision_count=None)
    written = int(n * 0.6)
    first = plan_deploy(mwrs=mwrs, owner=owner, works=[], placements={"fleet": placement},
                        decisions={"fleet": decisions}, now=NOW, max_new_reservations=n)
    works: list[JSON] = []
    rollout = first.refs[0]
    desired = {w.cluster: w.desired for w in rollout.writes}
    for i, cluster in enumerate(clusters[:written]):
        work = desired.get(cluster) or plan_deploy(
            mwrs=mwrs, owner=owner, works=[], placements={"fleet": placement},
            decisions={"fleet": [{**decisions[0], "status": {"decisions": [{"clusterName": cluster}]}}]},
            now=NOW, max_new_reservations=1).refs[0].writes[0].desired
        work = {**work, "metadata": {**work["metadata"], "uid": f"u{i}", "resourceVersion": str(100 + i),
                                     "generation": 1, "creationTimestamp": format_time(NOW)}}
        done = i < n * 0.4
        since = format_time(NOW - timedelta(seconds=30))
        work["status"] = {"conditions": [
            {"type": t, "status": s, "observedGeneration": 1, "lastTransitionTime": since, "reason": "Bench",
             "message": ""}
            for t, s in (("Applied", "True"), ("Available", "True"), ("Progressing", "False" if done else "True"))
        ]}
        works.append(work)
    forms = Forms()
    inputs = PlanInputs(
        body=mwrs, planned_body=mwrs, owner=owner, step=step, current_template=None,
        matches=memo.matcher(form_hash(normal_spec(TEMPLATE)), forms.spec_matcher(TEMPLATE)), revert_matches=None,
        placements={"fleet": placement}, decisions={"fleet": decisions}, record=EMPTY, now=NOW, memo=memo,
    )
    return inputs, works, forms


def best(repeat: int, call: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def pieces(n: int, memo: WorkMemo, repeat: int) -> None:
    inputs, works, _forms = fleet(n, memo)
    plans = plan_and_decide(inputs, works)
    calls: dict[str, Callable[[], Any]] = {
        "plan_and_decide": lambda: plan_and_decide(inputs, works),
        "build_status": lambda: aggregation.build_status(
            old_status=None, plan=plans.plan, outcome=DeployOutcome(), works=works,
            is_current=plans.is_current, now=NOW, namespace="bench", memo=memo),
    }
    total = 0.0
    for piece, call in calls.items():
        seconds = best(repeat, call)
        total += seconds
        print(f"  {piece:<16} {1000 * seconds:8.1f} ms per pass = {1e6 * seconds / n:6.2f} us per cluster")
    print(f"  {'pass (pure)':<16} {1000 * total:8.1f} ms per pass = {1e6 * total / n:6.2f} us per cluster")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for label, memo in (("derived afresh", DIRECT), ("kept (WorkMemo)", WorkMemo())):
        print(f"each work's status {label}:")
        pieces(args.clusters, memo, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
