"""The store's limits (ocm_rollout.sandbox.store): etcd's request size and the bounded watch history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.sandbox.errors import ApiError
from ocm_rollout.sandbox.store import ADDED, ETCD_MAX_REQUEST_BYTES, MODIFIED, Event, Store, etcd_key


def config_map(name: str, data_bytes: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"},
            "data": {"x": "a" * data_bytes}}


def test_an_object_over_etcds_limit_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    store = Store(data=tmp_path / "hub.sqlite")
    seen: list[Event] = []
    store.listeners.append(lambda bucket, event: seen.append(event))
    rv = store.rv
    big = config_map("big", 1600 * 1024)
    with pytest.raises(ApiError) as refused:
        store.write("/configmaps", ADDED, big, None)
    assert refused.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: request is too large", "code": 500,
    }
    assert store.rv == rv and store.get("/configmaps", "ns", "big") is None and not seen
    assert "resourceVersion" not in big["metadata"]
    store.close()
    reopened = Store(data=tmp_path / "hub.sqlite")
    assert reopened.get("/configmaps", "ns", "big") is None
    reopened.close()


def test_the_limit_counts_the_stored_json_and_the_etcd_key() -> None:
    store = Store()
    empty = config_map("edge", 0)
    empty["metadata"]["resourceVersion"] = "1"
    base = len(store.encode_stored("/configmaps", empty)) + len(etcd_key(("/configmaps", "ns", "edge")))
    fits = config_map("edge", ETCD_MAX_REQUEST_BYTES - base)
    store.write("/configmaps", ADDED, fits, None)
    grown = config_map("edge", ETCD_MAX_REQUEST_BYTES - base + 1)
    with pytest.raises(ApiError):
        store.write("/configmaps", MODIFIED, grown, fits)
    assert store.get("/configmaps", "ns", "edge") is fits
    assert fits["metadata"]["resourceVersion"] == "1"


def test_etcd_keys_follow_kube_apiservers_layout() -> None:
    assert etcd_key(("/configmaps", "ns", "a")) == "/registry/configmaps/ns/a"
    assert etcd_key(("cluster.open-cluster-management.io/managedclusters", "", "c1")) == (
        "/registry/cluster.open-cluster-management.io/managedclusters/c1"
    )


def test_a_write_is_serialised_once_for_reads_and_watches() -> None:
    store = Store()
    obj = store.write("/configmaps", ADDED, config_map("a", 10), None)
    (event,) = list(store.history["/configmaps"].events)
    assert store.encode_stored("/configmaps", obj) is event.encoded[("", "")]


def test_each_resource_keeps_a_bounded_history_and_410s_below_it() -> None:
    now = [0.0]
    store = Store(history=50, history_min=10, clock=lambda: now[0])
    obj = store.write("/configmaps", ADDED, config_map("a", 1), None)
    first = int(obj["metadata"]["resourceVersion"])
    for i in range(500):
        now[0] += 0.01
        new = {**obj, "metadata": dict(obj["metadata"]), "data": {"i": str(i)}}
        obj = store.write("/configmaps", MODIFIED, new, obj)
    window = store.history["/configmaps"]
    assert len(window) == 50
    oldest = window.events[0].rv
    assert store.oldest_resumable("/configmaps") == oldest - 1
    assert store.events_since("/configmaps", first) is None
    assert [e.rv for e in store.events_since("/configmaps", oldest - 1) or []] == [e.rv for e in window.events]
    # A resource nobody wrote since the start resumes from the start.
    assert store.events_since("/secrets", store.base_floor) == []
