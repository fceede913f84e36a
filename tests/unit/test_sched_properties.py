"""Property tests (hypothesis) of the scheduler's invariants."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.controllers.placement.groups import PAGE_SIZE, group_length
from tests.unit.test_sched_builders import binding, cluster, decision, exclusive_set, placement, run, world

SETS = ["s1", "s2", "s3"]
CLUSTERSET = "cluster.open-cluster-management.io/clusterset"


@st.composite
def clusters(draw: st.DrawFn) -> list[ManagedCluster]:
    count = draw(st.integers(min_value=0, max_value=40))
    out = []
    for i in range(count):
        labels = {CLUSTERSET: draw(st.sampled_from(SETS))}
        if draw(st.booleans()):
            labels["env"] = draw(st.sampled_from(["prod", "dev"]))
        memory = draw(st.sampled_from([None, "1Gi", "2Gi", "3Gi", "512Mi"]))
        taints = [{"key": "t", "effect": draw(st.sampled_from(["NoSelect", "PreferNoSelect", "NoSelectIfNew"]))}] if draw(
            st.booleans()
        ) else []
        allocatable = {"memory": memory} if memory else None
        out.append(cluster(f"c{i:02d}", labels, taints=taints, allocatable=allocatable))
    return out


@st.composite
def placements(draw: st.DrawFn) -> Any:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["numberOfClusters"] = draw(st.integers(min_value=0, max_value=50))
    if draw(st.booleans()):
        spec["clusterSets"] = draw(st.lists(st.sampled_from(SETS), max_size=3, unique=True))
    if draw(st.booleans()):
        spec["predicates"] = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": draw(st.sampled_from(["prod", "dev"]))}}}}]
    if draw(st.booleans()):
        spec["prioritizerPolicy"] = {"configurations": [
            {"scoreCoordinate": {"builtIn": draw(st.sampled_from(["ResourceAllocatableMemory", "Steady", "Balance"]))},
             "weight": draw(st.integers(min_value=-10, max_value=10))}]}  # fmt: skip
    group: dict[str, Any] = {}
    if draw(st.booleans()):
        group["clustersPerDecisionGroup"] = draw(st.one_of(st.integers(min_value=1, max_value=30),
                                                           st.sampled_from(["10%", "33%", "50%", "100%"])))  # fmt: skip
    if draw(st.booleans()):
        group["decisionGroups"] = [{"groupName": "prod", "groupClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]
    if group:
        spec["decisionStrategy"] = {"groupStrategy": group}
    return placement(**spec)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Any, list[ManagedCluster], list[str]]:
    cs = draw(clusters())
    bound = draw(st.lists(st.sampled_from(SETS), max_size=3, unique=True))
    decided = draw(st.lists(st.sampled_from([c.name for c in cs] or ["none"]), max_size=5, unique=True))
    snapshot = world(
        cs,
        sets=[exclusive_set(s) for s in SETS],
        bindings=[binding(s) for s in bound] + [binding(s, "other") for s in SETS],
        decisions=[decision("p-decision-1", decided)],
    )
    return snapshot, cs, bound


SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds(), placements())
def test_decisions_are_a_subset_of_feasible_clusters(w: Any, p: Any) -> None:
    result = run(p, w[0])
    assert set(result.selected) <= set(result.feasible)
    decided = {c for page in result.pages for c in page.clusters}
    assert decided <= set(result.feasible)


@SETTINGS
@given(worlds(), placements())
def test_at_most_number_of_clusters(w: Any, p: Any) -> None:
    result = run(p, w[0])
    if p.spec.number_of_clusters is not None:
        assert len(result.selected) <= p.spec.number_of_clusters


@SETTINGS
@given(worlds(), placements())
def test_no_page_over_100(w: Any, p: Any) -> None:
    assert all(len(page.clusters) <= PAGE_SIZE for page in run(p, w[0]).pages)


@SETTINGS
@given(worlds(), placements())
def test_groups_never_exceed_clusters_per_group(w: Any, p: Any) -> None:
    result = run(p, w[0])
    limit, _ = group_length(p.spec.effective_group_strategy().clusters_per_decision_group, len(result.selected))
    assert all(len(g.clusters) <= max(limit, 0) for g in result.groups)


@SETTINGS
@given(worlds(), placements())
def test_same_input_same_output(w: Any, p: Any) -> None:
    first, second = run(p, w[0]), run(p, w[0])
    assert first.selected == second.selected
    assert first.pages == second.pages
    assert first.new_status == second.new_status


@SETTINGS
@given(worlds(), placements())
def test_never_selects_cluster_outside_sets_bound_to_namespace(w: Any, p: Any) -> None:
    snapshot, cs, bound = w
    allowed = {c.name for c in cs if c.metadata.labels[CLUSTERSET] in bound}
    assert set(run(p, snapshot).selected) <= allowed


@SETTINGS
@given(worlds(), placements())
def test_every_selected_cluster_is_in_exactly_one_page(w: Any, p: Any) -> None:
    result = run(p, w[0])
    if result.status.code == "Misconfigured":
        return
    paged = [c for page in result.pages for c in page.clusters]
    assert sorted(paged) == sorted(result.selected)
