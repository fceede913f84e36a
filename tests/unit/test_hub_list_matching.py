"""What a list with a label selector matches (ocm_rollout.sandbox.store.Store.matching_keys):
kept between pages while statuses change, looked at again once an object of the resource is
added, removed or relabelled."""

from __future__ import annotations

import copy
from typing import Any

from ocm_rollout.sandbox.selectors import LabelSelector
from ocm_rollout.sandbox.store import ADDED, DELETED, MODIFIED, Store

BUCKET = "/work.open-cluster-management.io/manifestworks"


def work(namespace: str, name: str, owner: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"owner": owner}}}


def matching(store: Store, text: str, namespace: str | None = None) -> list[tuple[str, str]]:
    selector = LabelSelector.parse(text)
    return store.matching_keys(BUCKET, namespace, tuple(selector.requirements), selector.matches)


def filled() -> Store:
    store = Store()
    for ns in ("c2", "c1", "c3"):
        store.write(BUCKET, ADDED, work(ns, "w", "a" if ns != "c3" else "b"), None)
    return store


def test_the_matching_keys_are_in_key_order() -> None:
    store = filled()
    assert matching(store, "owner=a") == [("c1", "w"), ("c2", "w")]
    assert matching(store, "owner=a", "c2") == [("c2", "w")]


def test_a_status_write_keeps_the_answer() -> None:
    store = filled()
    first = matching(store, "owner=a")
    current = store.get(BUCKET, "c1", "w")
    assert current is not None
    updated = {**copy.deepcopy(current), "status": {"done": True}}
    store.write(BUCKET, MODIFIED, updated, current)
    assert matching(store, "owner=a") is first


def test_added_removed_and_relabelled_objects_are_matched_again() -> None:
    store = filled()
    assert matching(store, "owner=a") == [("c1", "w"), ("c2", "w")]
    store.write(BUCKET, ADDED, work("c0", "w", "a"), None)
    assert matching(store, "owner=a") == [("c0", "w"), ("c1", "w"), ("c2", "w")]
    current = store.get(BUCKET, "c1", "w")
    assert current is not None
    store.write(BUCKET, MODIFIED, work("c1", "w", "b"), current)
    assert matching(store, "owner=a") == [("c0", "w"), ("c2", "w")]
    gone = store.get(BUCKET, "c0", "w")
    assert gone is not None
    store.write(BUCKET, DELETED, copy.deepcopy(gone), gone)
    assert matching(store, "owner=a") == [("c2", "w")]
    assert matching(store, "owner=b") == [("c1", "w"), ("c3", "w")]
