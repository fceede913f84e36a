"""The per-placement deploy plan (docs/behaviour/mwrs.md 5.2, 5.3, 5.6) over the shared rollout planner."""

from __future__ import annotations

import copy
import re
from typing import Any

from ocm_rollout.api.constants import LABEL_CONTROLLER_HASH
from ocm_rollout.controllers.common.decisions import decision_groups
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import (
    TEMPLATE,
    at,
    cond,
    decision,
    failed,
    mwrs,
    placement,
    succeeded,
    work,
)

PROGRESSIVE_2 = {"type": "Progressive", "progressive": {"maxConcurrency": 2}}


def run(
    works: list[dict[str, Any]],
    clusters: list[str] | None = None,
    *,
    m: dict[str, Any] | None = None,
    strategy: dict[str, Any] | None = None,
    decisions: list[dict[str, Any]] | None = None,
    now: float = 0,
    placements: dict[str, Any] | None = None,
) -> DeployPlan:
    if m is None:
        ref: dict[str, Any] = {"name": "test-placement"}
        if strategy is not None:
            ref["rolloutStrategy"] = strategy
        m = mwrs(refs=[ref])
    clusters = clusters or []
    if placements is None:
        placements = {"test-placement": placement(selected=len(clusters))}
    if decisions is None:
        decisions = [decision(clusters)]
    by_placement: dict[str, list[dict[str, Any]]] = {}
    for d in decisions:
        by_placement.setdefault(d["metadata"]["labels"]["cluster.open-cluster-management.io/placement"], []).append(d)
    return plan_deploy(
        mwrs=m,
        owner=owner_for(m["metadata"]["namespace"], m["metadata"]["name"]),
        works=works,
        placements=placements,
        decisions=by_placement,
        now=at(now),
    )


def created(plan: DeployPlan, ref: int = 0) -> list[str]:
    return sorted(w.cluster for w in plan.refs[ref].writes if w.is_create)


def patched(plan: DeployPlan, ref: int = 0) -> list[str]:
    return sorted(w.cluster for w in plan.refs[ref].writes if not w.is_create)


def deleted(plan: DeployPlan, ref: int = 0) -> list[str]:
    return sorted(d.namespace for d in plan.refs[ref].deletes)


# --- decision groups --------------------------------------------------------------------------


def test_decision_pages_with_the_same_group_merge() -> None:
    groups = decision_groups([decision(["b"], index=0, name="p1"), decision(["a"], index=0, name="p2"),
                              decision(["c"], index=1, group="canary")])
    assert [(g.group_name, g.group_index, sorted(g.clusters)) for g in groups] == [
        ("", 0, ["a", "b"]),
        ("canary", 1, ["c"]),
    ]


def test_unparsable_group_index_skips_the_ref_with_an_error() -> None:
    plan = run([], ["c1"], decisions=[decision(["c1"], index="x")])
    assert plan.refs[0].error is not None and "decision-group-index" in plan.refs[0].error
    assert plan.refs[0].writes == []


# --- All ---------------------------------------------------------------------------------------


def test_all_creates_a_work_per_decided_cluster() -> None:
    plan = run([], ["c1", "c2", "c3"])
    assert created(plan) == ["c1", "c2", "c3"]
    # OCM's shape (generateName "<mwrs name>" + five characters), but chosen by the controller so
    # that every instance creating the work of a (cluster, placement) creates the same object.
    names = [w.desired["metadata"]["name"] for w in plan.refs[0].writes]
    assert all(re.fullmatch(r"test-work[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)
    assert "generateName" not in plan.refs[0].writes[0].desired["metadata"]
    assert names == [w.desired["metadata"]["name"] for w in run([], ["c1", "c2", "c3"]).refs[0].writes]


def test_existing_up_to_date_works_are_not_written() -> None:
    plan = run([work("c1"), work("c2")], ["c1", "c2"])
    assert plan.refs[0].writes == []


def test_cluster_leaving_the_decision_loses_its_work() -> None:
    plan = run([work("c1"), work("c2"), work("c3")], ["c1", "c2"])
    assert deleted(plan) == ["c3"]


def test_new_clusters_are_created_and_removed_ones_deleted_in_one_pass() -> None:
    plan = run([work("c1"), work("c2")], ["c2", "c3", "c4"])
    assert (created(plan), deleted(plan)) == (["c3", "c4"], ["c1"])


def test_outdated_work_of_an_undecided_cluster_is_deleted() -> None:
    old = work("c9", spec={"workload": {"manifests": []}})
    plan = run([old], ["c1"])
    assert deleted(plan) == ["c9"]


def test_outdated_work_of_a_decided_cluster_is_patched_under_its_name() -> None:
    old = work("c1", name="test-workabcde", spec={"workload": {"manifests": []}}, conditions=succeeded())
    plan = run([old], ["c1"])
    assert patched(plan) == ["c1"]
    write = plan.refs[0].writes[0]
    assert write.desired["metadata"]["name"] == "test-workabcde"
    assert write.patch is not None and "spec" in write.patch


def test_label_drift_of_a_to_apply_work_is_corrected() -> None:
    drifted = work("c1")
    drifted["metadata"]["labels"]["extra"] = "x"
    plan = run([drifted], ["c1"])
    assert patched(plan) == ["c1"]


def test_label_drift_of_a_succeeded_work_is_left_alone() -> None:
    drifted = work("c1", conditions=succeeded())
    drifted["metadata"]["labels"]["extra"] = "x"
    assert run([drifted], ["c1"], now=10).refs[0].writes == []


# --- placementRefs --------------------------------------------------------------------------------


def test_works_of_a_removed_placement_ref_are_deleted() -> None:
    m = mwrs(refs=[{"name": "p2"}])
    works = [work("c1", placement="p1"), work("c2", placement="p1")]
    plan = run(works, m=m, placements={"p2": placement("p2", 2)}, decisions=[decision(["c3", "c4"], "p2")])
    assert sorted(d.namespace for d in plan.stale_deletes) == ["c1", "c2"]
    assert created(plan) == ["c3", "c4"]


def test_work_without_placement_label_is_deleted() -> None:
    orphan = work("c1", labels={"work.open-cluster-management.io/manifestworkreplicaset": "ns.test-work"})
    plan = run([orphan], ["c1"])
    assert [d.namespace for d in plan.stale_deletes] == ["c1"]


def test_missing_placement_stops_the_pass_at_that_ref() -> None:
    m = mwrs(refs=[{"name": "p1"}, {"name": "missing"}, {"name": "p3"}])
    plan = run(
        [],
        m=m,
        placements={"p1": placement("p1", 1), "missing": None, "p3": placement("p3", 1)},
        decisions=[decision(["c1"], "p1"), decision(["c3"], "p3")],
    )
    assert plan.missing_placement == "missing"
    assert [r.name for r in plan.refs] == ["p1"]


def test_two_placements_selecting_one_cluster_get_one_work_each() -> None:
    m = mwrs(refs=[{"name": "p1"}, {"name": "p2"}])
    plan = run(
        [work("c1", placement="p1")],
        m=m,
        placements={"p1": placement("p1", 1), "p2": placement("p2", 1)},
        decisions=[decision(["c1"], "p1"), decision(["c1"], "p2")],
    )
    assert (created(plan, 0), created(plan, 1)) == ([], ["c1"])


def test_duplicate_works_for_one_cluster_and_placement_keep_the_current_oldest() -> None:
    works = [
        work("c1", name="b", created="2026-01-01T00:00:02Z"),
        work("c1", name="a", created="2026-01-01T00:00:03Z"),
        work("c1", name="c", created="2026-01-01T00:00:01Z", spec={"workload": {"manifests": []}}),
    ]
    plan = run(works, ["c1"])
    assert sorted(d.name for d in plan.stale_deletes) == ["a", "c"]
    assert plan.refs[0].current["c1"]["metadata"]["name"] == "b"


def test_to_apply_cluster_whose_work_is_being_deleted_waits() -> None:
    plan = run([work("c1", deleting=True, spec={"workload": {"manifests": []}})], ["c1"])
    assert plan.refs[0].writes == []
    assert plan.refs[0].waiting_for_deletion == ["c1"]


def test_invalid_strategy_skips_the_ref_naming_the_field() -> None:
    plan = run([], ["c1"], strategy={"type": "Progressive", "progressive": {"progressDeadline": "ten"}})
    ref = plan.refs[0]
    assert ref.error_is_strategy and ref.writes == []
    assert "spec.placementRefs[0].rolloutStrategy" in (ref.error or "")


def test_legacy_absent_strategy_means_all() -> None:
    m = mwrs(refs=[{"name": "test-placement"}])
    assert created(run([], ["c1", "c2"], m=m)) == ["c1", "c2"]


# --- Progressive ------------------------------------------------------------------------------------


def test_progressive_rolls_out_max_concurrency_clusters() -> None:
    plan = run([], [f"c{i}" for i in range(6)], strategy=PROGRESSIVE_2)
    assert created(plan) == ["c0", "c1"]


def test_progressive_moves_on_once_the_batch_succeeds() -> None:
    works = [work("c0", conditions=succeeded()), work("c1", conditions=succeeded())]
    plan = run(works, [f"c{i}" for i in range(6)], strategy=PROGRESSIVE_2, now=1)
    assert created(plan) == ["c2", "c3"]


def test_progressive_holds_while_the_batch_is_in_flight() -> None:
    works = [work("c0", conditions=succeeded()), work("c1")]
    plan = run(works, [f"c{i}" for i in range(6)], strategy=PROGRESSIVE_2, now=1)
    assert created(plan) == ["c2"]


def test_breach_of_max_failures_stops_new_works() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 2, "maxFailures": 1}}
    works = [work("c1", conditions=failed()), work("c2", conditions=failed())]
    plan = run(works, ["c1", "c2", "c3"], strategy=strategy, now=1)
    assert plan.refs[0].writes == []
    assert plan.refs[0].breach
    assert plan.refs[0].failed_clusters() == {"c1": "Failed", "c2": "Failed"}


def test_min_success_time_delays_the_next_cluster_and_asks_for_a_recheck() -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1, "minSuccessTime": "5s"}}
    works = [work("c1", conditions=succeeded(ltt=at(10)))]
    early = run(works, ["c1", "c2"], strategy=strategy, now=12)
    assert early.refs[0].writes == []
    assert early.recheck_after == 3
    late = run(works, ["c1", "c2"], strategy=strategy, now=15)
    assert created(late) == ["c2"]


def test_progress_deadline_times_out_a_failed_cluster_and_moves_on() -> None:
    strategy = {"type": "Progressive",
                "progressive": {"maxConcurrency": 1, "progressDeadline": "5s", "maxFailures": 1}}
    works = [work("c1", conditions=failed(ltt=at(10)))]
    early = run(works, ["c1", "c2"], strategy=strategy, now=11)
    assert early.refs[0].writes == [] and early.recheck_after == 4
    late = run(works, ["c1", "c2"], strategy=strategy, now=15)
    assert created(late) == ["c2"]
    assert late.refs[0].failed_clusters() == {"c1": "TimeOut"}


# --- ProgressivePerGroup: template change -----------------------------------------------------------


def test_template_change_updates_only_the_first_group_under_the_same_names() -> None:
    old_spec = {"workload": {"manifests": []}}
    groups = [decision(["a1", "a2", "a3"], index=0, name="d0"), decision(["b1", "b2"], index=1, name="d1")]
    works = [work(c, name=f"w-{c}", spec=old_spec, conditions=succeeded())
             for c in ["a1", "a2", "a3", "b1", "b2"]]
    plan = run(works, strategy={"type": "ProgressivePerGroup"}, decisions=groups,
               placements={"test-placement": placement(selected=5, groups=2)}, now=1)
    assert patched(plan) == ["a1", "a2", "a3"]
    assert created(plan) == []
    assert [w.desired["metadata"]["name"] for w in plan.refs[0].writes] == ["w-a1", "w-a2", "w-a3"]


# --- never widening with condition rules ------------------------------------------------------------


def _agent_step(w: dict[str, Any], step: int, now: float) -> None:
    """Rule-driven agent: first update carries Applied, Available and Progressing True together,
    the next one flips Progressing to False (docs/behaviour/work-agent.md recipe 5)."""
    g = w["metadata"]["generation"]
    if step == 0:
        w["status"]["conditions"] = [cond("Applied", "True", g, at(now)), cond("Available", "True", g, at(now)),
                                     cond("Progressing", "True", g, at(now))]
    else:
        w["status"]["conditions"] = [cond("Applied", "True", g, at(now)), cond("Available", "True", g, at(now)),
                                     cond("Progressing", "False", g, at(now))]


def test_rule_driven_agent_never_widens_a_progressive_rollout() -> None:
    clusters = [f"c{i:02d}" for i in range(9)]
    store: dict[str, dict[str, Any]] = {}
    steps: dict[str, int] = {}
    now = 0.0
    for _ in range(40):
        plan = run(list(store.values()), clusters, strategy=PROGRESSIVE_2, now=now)
        for write in plan.refs[0].writes:
            body = copy.deepcopy(write.desired)
            body["metadata"]["name"] = f"w-{write.cluster}"
            body["metadata"]["generation"] = 1
            body["status"] = {"conditions": []}
            store[write.cluster] = body
            steps[write.cluster] = -1
        # In flight for real: a work exists and the agent has not reported Progressing False.
        assert len([c for c in store if steps[c] < 1]) <= 2
        # The agent advances one cluster by one status update.
        pending = sorted(c for c in store if steps[c] < 1)
        if not pending and len(store) == len(clusters):
            break
        if pending:
            steps[pending[0]] += 1
            _agent_step(store[pending[0]], steps[pending[0]], now)
        now += 1
    assert sorted(store) == clusters
    assert all(w["spec"] == TEMPLATE for w in store.values())


# -- the controller-hash label (OCM enhancement 229) ----------------------------------------------


def test_written_works_carry_the_hash_of_their_template_revision() -> None:
    m = mwrs()
    plan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=[work("c2", conditions=[])],
                       placements={"test-placement": placement(selected=2)},
                       decisions={"test-placement": [decision(["c1", "c2"])]}, now=at(0), revision_hash="h4sh")
    by_cluster = {w.cluster: w for w in plan.refs[0].writes}
    assert by_cluster["c1"].desired["metadata"]["labels"][LABEL_CONTROLLER_HASH] == "h4sh"
    # The current work without the label gets it through a metadata-only patch: not widening.
    relabel = by_cluster["c2"]
    assert relabel.patch is not None and "spec" not in relabel.patch and not relabel.widens
    assert relabel.patch["metadata"]["labels"] == {LABEL_CONTROLLER_HASH: "h4sh"}
