"""Spec §1 (which Placements are processed) and §2 (cluster set resolution)."""

from __future__ import annotations

from tests.unit.test_sched_builders import (
    NOW,
    NS,
    binding,
    cluster,
    exclusive_set,
    label_set,
    placement,
    plain,
    run,
    world,
)


def test_deleting_placement_is_left_alone() -> None:
    p = placement()
    p.metadata.deletion_timestamp = NOW
    result = run(p, world(plain(2)))
    assert result.skipped is not None
    assert not result.acts
    assert result.new_status is None


def test_disable_annotation_true_leaves_placement_alone() -> None:
    p = placement(annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"})
    assert run(p, world(plain(2))).skipped is not None


def test_disable_annotation_other_value_is_scheduled() -> None:
    p = placement(annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "yes"})
    result = run(p, world(plain(2)))
    assert result.skipped is None
    assert result.selected == ["c1", "c2"]


def test_binding_to_missing_set_is_not_valid() -> None:
    snapshot = world(plain(2), sets=[label_set("global", {})], bindings=[binding("global"), binding("ghost")])
    assert run(placement(), snapshot).valid_bindings == ["global"]


def test_binding_status_is_not_consulted() -> None:
    b = binding("global")
    b.status.conditions = []
    snapshot = world(plain(1), bindings=[b])
    assert run(placement(), snapshot).selected == ["c1"]


def test_bindings_of_other_namespaces_do_not_count() -> None:
    snapshot = world(plain(2), bindings=[binding("global", "other")])
    result = run(placement(), snapshot)
    assert result.valid_bindings == []
    assert result.selected == []


def test_spec_cluster_sets_intersects_bound_sets() -> None:
    sets = [exclusive_set("a"), exclusive_set("b")]
    clusters = [cluster("c1", {"cluster.open-cluster-management.io/clusterset": "a"}),
                cluster("c2", {"cluster.open-cluster-management.io/clusterset": "b"})]  # fmt: skip
    snapshot = world(clusters, sets=sets)
    result = run(placement(clusterSets=["b", "zzz"]), snapshot)
    assert result.eligible_sets == ["b"]
    assert result.selected == ["c2"]


def test_eligible_sets_are_sorted() -> None:
    sets = [exclusive_set("zeta"), exclusive_set("Alpha"), exclusive_set("alpha")]
    result = run(placement(), world([], sets=sets))
    assert result.eligible_sets == ["Alpha", "alpha", "zeta"]


def test_exclusive_set_members_are_labelled_clusters() -> None:
    clusters = [cluster("c1", {"cluster.open-cluster-management.io/clusterset": "dev"}), cluster("c2")]
    result = run(placement(), world(clusters, sets=[exclusive_set("dev")]))
    assert result.available == ["c1"]


def test_empty_selector_type_means_exclusive_label() -> None:
    s = exclusive_set("dev")
    s.spec.cluster_selector.selector_type = ""  # type: ignore[assignment]
    clusters = [cluster("c1", {"cluster.open-cluster-management.io/clusterset": "dev"}), cluster("c2")]
    assert run(placement(), world(clusters, sets=[s])).available == ["c1"]


def test_label_selector_set_with_empty_selector_is_global() -> None:
    assert run(placement(), world(plain(3), sets=[label_set("global", {})])).available == ["c1", "c2", "c3"]


def test_label_selector_set_without_selector_has_no_member() -> None:
    assert run(placement(), world(plain(3), sets=[label_set("none")])).available == []


def test_label_selector_set_selects_by_labels() -> None:
    clusters = [cluster("c1", {"env": "prod"}), cluster("c2", {"env": "dev"})]
    snapshot = world(clusters, sets=[label_set("prod", {"matchLabels": {"env": "prod"}})])
    assert run(placement(), snapshot).available == ["c1"]


def test_available_clusters_are_union_of_sets() -> None:
    clusters = [cluster("c1", {"env": "prod"}), cluster("c2", {"env": "dev"}), cluster("c3")]
    sets = [label_set("prod", {"matchLabels": {"env": "prod"}}), label_set("dev", {"matchLabels": {"env": "dev"}})]
    assert run(placement(), world(clusters, sets=sets)).available == ["c1", "c2"]


def test_terminating_clusters_are_not_available() -> None:
    clusters = [cluster("c1"), cluster("c2", deleting=True)]
    assert run(placement(), world(clusters)).available == ["c1"]


def test_invalid_selector_of_eligible_set_aborts_pass() -> None:
    bad = label_set("bad", {"matchExpressions": [{"key": "a", "operator": "Foo"}]})
    result = run(placement(), world(plain(1), sets=[bad]))
    assert result.aborted is not None
    assert not result.acts


def test_invalid_selector_of_set_not_eligible_is_harmless() -> None:
    bad = label_set("bad", {"matchExpressions": [{"key": "a", "operator": "Foo"}]})
    snapshot = world(plain(1), sets=[bad, label_set("global", {})], bindings=[binding("global")])
    assert run(placement(), snapshot).selected == ["c1"]


def test_placement_never_sees_clusters_of_sets_bound_elsewhere() -> None:
    clusters = [cluster("c1", {"cluster.open-cluster-management.io/clusterset": "a"}),
                cluster("c2", {"cluster.open-cluster-management.io/clusterset": "b"})]  # fmt: skip
    snapshot = world(clusters, sets=[exclusive_set("a"), exclusive_set("b")], bindings=[binding("a"), binding("b", "other")])
    assert run(placement(namespace=NS), snapshot).selected == ["c1"]
