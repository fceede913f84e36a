"""The placement controller's decision cache holds each cluster's name once
(ocm_rollout.controllers.placement.decision_cache), and the controller declares it so."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from ocm_rollout.client.kube import MANAGED_CLUSTERS, PLACEMENT_DECISIONS, Kube
from ocm_rollout.client.watchcache import WatchCache
from ocm_rollout.controllers.placement.decision_cache import intern_cluster_names
from ocm_rollout.controllers.placement.operator import PlacementController
from ocm_rollout.controllers.runtime.cache import WatchSource
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.shell import KOPF, Runtime


def page(name: str, *clusters: str) -> dict[str, Any]:
    text = json.dumps({
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "status": {"decisions": [{"clusterName": c, "reason": "", "score": 7} for c in clusters]},
    })  # fmt: skip
    return cast(dict[str, Any], json.loads(text))  # as decoded from the API: strings of its own


def test_pages_listing_a_cluster_share_one_string_for_its_name() -> None:
    first, second = page("a", "cluster-one", "cluster-two"), page("b", "cluster-two", "cluster-one")
    assert first["status"]["decisions"][0]["clusterName"] is not second["status"]["decisions"][1]["clusterName"]
    before = json.dumps([first, second])
    shared = [intern_cluster_names(first), intern_cluster_names(second)]
    assert json.dumps(shared) == before  # equal values only
    assert shared[0]["status"]["decisions"][0]["clusterName"] is shared[1]["status"]["decisions"][1]["clusterName"]
    assert shared[0]["status"]["decisions"][1]["clusterName"] is shared[1]["status"]["decisions"][0]["clusterName"]


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p"}, "status": None},
        {"metadata": {"name": "p"}, "status": {"decisions": None}},
        {"metadata": {"name": "p"}, "status": {"decisions": ["not an entry", {"clusterName": 3}, {}]}},
        {"metadata": {"name": "p"}, "status": "not a status"},
    ],
)
def test_pages_of_any_shape_come_back_unchanged(body: dict[str, Any]) -> None:
    before = json.dumps(body)
    assert json.dumps(intern_cluster_names(body)) == before


def test_the_controller_caches_decisions_with_names_shared_and_clusters_as_they_come() -> None:
    runtime = Runtime("placement", ControllerContext(kube=cast(Kube, None)))
    PlacementController(runtime)
    caches = {cache.resource.plural: cache for cache in runtime.caches}

    def watch_caches(plural: str) -> list[WatchCache]:
        source = caches[plural].source
        assert isinstance(source, WatchSource)
        return list(source.caches.values())

    assert [c.transform for c in watch_caches(PLACEMENT_DECISIONS.plural)] == [intern_cluster_names]
    assert [c.transform for c in watch_caches(MANAGED_CLUSTERS.plural)] == [None]


def test_a_kopf_fed_cache_refuses_a_transform() -> None:
    runtime = Runtime("placement", ControllerContext(kube=cast(Kube, None)))
    with pytest.raises(ValueError, match="no transform"):
        runtime.watch(PLACEMENT_DECISIONS, source=KOPF, transform=intern_cluster_names)
