"""The informer cache rule (sandbox.sim_client.apply_event)."""

from __future__ import annotations

from typing import Any

from sandbox.sim_client import Key, apply_event, key_of, newer


def obj(name: str, rv: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, **extra}


def test_added_object_is_cached_by_namespace_and_name() -> None:
    cache: dict[Key, dict[str, Any]] = {}
    assert apply_event(cache, "ADDED", obj("a", "1")) is None
    assert key_of(obj("a", "1")) == ("ns", "a")
    assert cache[("ns", "a")]["metadata"]["resourceVersion"] == "1"


def test_modified_object_replaces_and_returns_the_previous_one() -> None:
    cache = {("ns", "a"): obj("a", "1")}
    previous = apply_event(cache, "MODIFIED", obj("a", "2", spec=1))
    assert previous is not None and previous["metadata"]["resourceVersion"] == "1"
    assert cache[("ns", "a")]["spec"] == 1


def test_stale_event_leaves_a_newer_cached_copy_alone() -> None:
    cache = {("ns", "a"): obj("a", "10")}
    apply_event(cache, "MODIFIED", obj("a", "9"))
    assert cache[("ns", "a")]["metadata"]["resourceVersion"] == "10"


def test_resource_versions_compare_as_numbers() -> None:
    assert newer(obj("a", "10"), obj("a", "9"))
    assert not newer(obj("a", "9"), obj("a", "10"))


def test_deleted_object_leaves_the_cache() -> None:
    cache = {("ns", "a"): obj("a", "3")}
    apply_event(cache, "DELETED", obj("a", "4"))
    assert cache == {}


def test_cluster_scoped_objects_have_an_empty_namespace() -> None:
    assert key_of({"metadata": {"name": "cluster1"}}) == ("", "cluster1")
