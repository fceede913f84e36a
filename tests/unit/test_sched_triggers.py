"""Spec §9 "Other triggers": which Placements a change re-queues."""

from __future__ import annotations

from ocm_rollout.controllers.placement.triggers import (
    PlacementIndex,
    PlacementRef,
    Topology,
    placements_for_binding,
    placements_for_cluster,
    placements_for_score,
    placements_for_sets,
)
from tests.unit.test_sched_builders import binding, exclusive_set, label_set, placement

SET_LABEL = "cluster.open-cluster-management.io/clusterset"
ADDON = {"configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "usage", "scoreName": "cpu"}}}]}

TOPOLOGY = Topology(
    [exclusive_set("dev"), exclusive_set("prod"), label_set("gpu", {"matchLabels": {"gpu": "true"}})],
    [binding("dev", "team-a"), binding("prod", "team-a"), binding("prod", "team-b"), binding("gpu", "team-c")],
)
INDEX = PlacementIndex(
    PlacementRef.of(p)
    for p in [
        placement("any", "team-a"),
        placement("dev-only", "team-a", clusterSets=["dev"]),
        placement("prod-only", "team-b", clusterSets=["prod"]),
        placement("scored", "team-b", prioritizerPolicy=ADDON),
        placement("gpu", "team-c", prioritizerPolicy=ADDON),
        placement("elsewhere", "team-z"),
    ]
)


def test_cluster_change_requeues_placements_of_its_sets() -> None:
    keys = placements_for_cluster(TOPOLOGY, INDEX, None, {SET_LABEL: "prod"})
    assert keys == {"team-a/any", "team-b/prod-only", "team-b/scored"}


def test_cluster_change_includes_old_labels() -> None:
    keys = placements_for_cluster(TOPOLOGY, INDEX, {SET_LABEL: "dev"}, {SET_LABEL: "prod"})
    assert "team-a/dev-only" in keys and "team-b/prod-only" in keys


def test_cluster_in_label_selector_set() -> None:
    assert placements_for_cluster(TOPOLOGY, INDEX, None, {"gpu": "true"}) == {"team-c/gpu"}


def test_cluster_in_no_set_requeues_nothing() -> None:
    assert placements_for_cluster(TOPOLOGY, INDEX, None, {}) == set()


def test_set_change_follows_its_bindings() -> None:
    assert placements_for_sets(TOPOLOGY, INDEX, ["dev"]) == {"team-a/any", "team-a/dev-only"}


def test_binding_change_requeues_placements_listing_it_or_none() -> None:
    assert placements_for_binding(INDEX, "team-b", "prod") == {"team-b/prod-only", "team-b/scored"}
    assert placements_for_binding(INDEX, "team-a", "prod") == {"team-a/any"}


def test_score_change_requeues_addon_placements_seeing_the_cluster() -> None:
    assert placements_for_score(TOPOLOGY, INDEX, {SET_LABEL: "prod"}, "usage") == {"team-b/scored"}


def test_score_of_other_resource_requeues_nothing() -> None:
    assert placements_for_score(TOPOLOGY, INDEX, {SET_LABEL: "prod"}, "other") == set()


def test_score_of_unknown_cluster_requeues_nothing() -> None:
    assert placements_for_score(TOPOLOGY, INDEX, None, "usage") == set()

