"""Informers for kinds with one object per cluster are fed by a WatchCache, not kopf
(ocm_rollout.controllers.runtime.informer.CachedInformer): same interface, synced only once listed."""

from __future__ import annotations

import kopf
from kubernetes.client import ApiClient

from ocm_rollout.client.kube import MANAGED_CLUSTERS, PLACEMENTS, Kube
from ocm_rollout.controllers.runtime.informer import CachedInformer, InformerSet


def cluster(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "resourceVersion": "1"}}


def test_a_cached_informer_reads_and_relays_its_watch_cache() -> None:
    informers = InformerSet(kopf.OperatorRegistry(), prefix="t")
    seen: list[tuple[str, str]] = []
    informer = informers.watch(MANAGED_CLUSTERS, lambda event, obj: seen.append((event, obj["metadata"]["name"])),
                               kube=Kube(ApiClient()))
    assert isinstance(informer, CachedInformer)
    cache = informer.cache
    cache.remember(cluster("cluster1"))
    for callback in cache.callbacks:
        callback("ADDED", cluster("cluster1"), None)
    assert seen == [("ADDED", "cluster1")]
    assert informer.get("cluster1") == cluster("cluster1")
    assert [o["metadata"]["name"] for o in informer] == ["cluster1"]
    assert len(informer) == 1
    assert informer.select(labels=None) == [cluster("cluster1")]


def test_the_set_is_synced_only_when_kopf_and_every_cache_have_listed() -> None:
    informers = InformerSet(kopf.OperatorRegistry(), prefix="t")
    placements = informers.watch(PLACEMENTS)
    cached = informers.watch(MANAGED_CLUSTERS, kube=Kube(ApiClient()))
    assert isinstance(cached, CachedInformer)
    informers._bind_all({placements.index_id: {}})
    assert not informers.synced.is_set()  # the clusters are not listed yet
    cached.cache.synced.set()
    informers._check_synced()
    assert informers.synced.is_set()


def test_a_set_of_cached_informers_alone_needs_no_kopf_event() -> None:
    informers = InformerSet(kopf.OperatorRegistry(), prefix="t")
    cached = informers.watch(MANAGED_CLUSTERS, kube=Kube(ApiClient()))
    assert isinstance(cached, CachedInformer)
    cached.cache.synced.set()
    informers._check_synced()
    assert informers.synced.is_set()
