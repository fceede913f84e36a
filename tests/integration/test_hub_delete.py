"""DELETE: finalizers, deletionTimestamp, propagation policies, garbage collection, namespaces."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.integration.conftest import WIDGET_GROUP, api

G, V = WIDGET_GROUP, "v1"


def widget(name: str, *, finalizers: list[str] | None = None, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": meta, "spec": {"size": 1}}


def owner_ref(obj: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


@pytest.fixture
def crs(toy_client: client.ApiClient) -> Any:
    return api("CustomObjectsApi", toy_client)


def exists(crs: Any, ns: str, name: str) -> bool:
    try:
        crs.get_namespaced_custom_object(G, V, ns, "widgets", name)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_delete_without_finalizers_removes_it_and_answers_a_status(crs: Any, toy_namespace: str) -> None:
    created = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("gone"))
    out = crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "gone")
    # kube-apiserver's answer for a custom resource removed at once (tests/differential measures it).
    assert out == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                   "details": {"name": "gone", "group": G, "kind": "widgets", "uid": created["metadata"]["uid"]}}
    assert not exists(crs, toy_namespace, "gone")


def test_delete_with_finalizer_sets_deletion_timestamp_and_bumps_generation(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("held", finalizers=["test.io/hold"]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "held")
    obj = crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "held")
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["generation"] == 2


def test_removing_the_last_finalizer_deletes(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("fin", finalizers=["test.io/hold"]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "fin")
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "fin", {"metadata": {"finalizers": None}})
    assert not exists(crs, toy_namespace, "fin")


def test_no_new_finalizer_on_an_object_being_deleted(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("nf", finalizers=["test.io/a"]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "nf")
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "nf", {"metadata": {"finalizers": ["test.io/a", "test.io/b"]}})
    assert err.value.status == 422


def test_delete_precondition_on_stale_resource_version_is_conflict(crs: Any, toy_namespace: str) -> None:
    old = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("pre"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "pre", {"spec": {"size": 2}})
    with pytest.raises(client.ApiException) as err:
        crs.delete_namespaced_custom_object(
            G, V, toy_namespace, "widgets", "pre", body={"preconditions": {"resourceVersion": old["metadata"]["resourceVersion"]}}
        )
    assert err.value.status == 409


def test_background_deletion_collects_dependents(crs: Any, toy_namespace: str, wait_for: Callable[..., Any]) -> None:
    owner = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("owner"))
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("child", owners=[owner_ref(owner)]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "owner")
    wait_for(lambda: not exists(crs, toy_namespace, "child"), message="the dependent to be collected")


def test_dependent_with_another_live_owner_survives(crs: Any, toy_namespace: str, wait_for: Callable[..., Any]) -> None:
    one = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("one"))
    two = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("two"))
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("shared", owners=[owner_ref(one), owner_ref(two)]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "one")

    def refs() -> list[str]:
        obj = crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "shared")
        return [r["name"] for r in obj["metadata"].get("ownerReferences", [])]

    wait_for(lambda: refs() == ["two"], message="the dangling owner reference to be removed")


def test_foreground_deletion_waits_for_blocking_dependents(
    crs: Any, toy_namespace: str, wait_for: Callable[..., Any]
) -> None:
    owner = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("fg"))
    crs.create_namespaced_custom_object(
        G, V, toy_namespace, "widgets", widget("fg-child", finalizers=["test.io/slow"], owners=[owner_ref(owner, block=True)])
    )
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "fg", propagation_policy="Foreground")
    held = crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "fg")
    assert "foregroundDeletion" in held["metadata"]["finalizers"]
    wait_for(
        lambda: crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "fg-child")["metadata"].get("deletionTimestamp"),
        message="the dependent to be marked for deletion",
    )
    assert exists(crs, toy_namespace, "fg")
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "fg-child", {"metadata": {"finalizers": None}})
    wait_for(lambda: not exists(crs, toy_namespace, "fg"), message="the owner to go once its dependent is gone")


def test_orphan_deletion_keeps_dependents_and_unlinks_them(
    crs: Any, toy_namespace: str, wait_for: Callable[..., Any]
) -> None:
    owner = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("orph"))
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("orph-child", owners=[owner_ref(owner)]))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "orph", propagation_policy="Orphan")
    wait_for(lambda: not exists(crs, toy_namespace, "orph"), message="the owner to be deleted")
    child = crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "orph-child")
    assert "ownerReferences" not in child["metadata"]


def test_dependent_of_a_missing_owner_is_collected(crs: Any, toy_namespace: str, wait_for: Callable[..., Any]) -> None:
    ghost = {"apiVersion": f"{G}/{V}", "kind": "Widget", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("orphaned", owners=[ghost]))
    wait_for(lambda: not exists(crs, toy_namespace, "orphaned"), message="the dependent of a missing owner to be collected")


def test_cross_kind_garbage_collection(toy_client: client.ApiClient, toy_namespace: str, wait_for: Callable[..., Any]) -> None:
    crs = api("CustomObjectsApi", toy_client)
    core = api("CoreV1Api", toy_client)
    owner = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("cm-owner"))
    core.create_namespaced_config_map(toy_namespace, {"metadata": {"name": "owned", "ownerReferences": [owner_ref(owner)]}, "data": {"a": "b"}})
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "cm-owner")

    def gone() -> bool:
        try:
            core.read_namespaced_config_map("owned", toy_namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, message="the owned ConfigMap to be collected")


def test_delete_collection_with_label_selector(crs: Any, toy_namespace: str) -> None:
    for name, team in (("k1", "a"), ("k2", "a"), ("k3", "b")):
        body = widget(name)
        body["metadata"]["labels"] = {"team": team}
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    crs.delete_collection_namespaced_custom_object(G, V, toy_namespace, "widgets", label_selector="team=a")
    left = crs.list_namespaced_custom_object(G, V, toy_namespace, "widgets")
    assert [o["metadata"]["name"] for o in left["items"]] == ["k3"]


def test_namespace_deletion_cascades_to_its_objects(toy_client: client.ApiClient, wait_for: Callable[..., Any]) -> None:
    core = api("CoreV1Api", toy_client)
    crs = api("CustomObjectsApi", toy_client)
    core.create_namespace({"metadata": {"name": "doomed"}})
    crs.create_namespaced_custom_object(G, V, "doomed", "widgets", widget("inside", finalizers=["test.io/hold"]))
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "cm"}})
    core.delete_namespace("doomed")
    ns = core.read_namespace("doomed")
    assert ns.status.phase == "Terminating"
    wait_for(lambda: crs.get_namespaced_custom_object(G, V, "doomed", "widgets", "inside")["metadata"].get("deletionTimestamp"))
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert err.value.status == 403
    crs.patch_namespaced_custom_object(G, V, "doomed", "widgets", "inside", {"metadata": {"finalizers": None}})

    def ns_gone() -> bool:
        try:
            core.read_namespace("doomed")
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(ns_gone, message="the namespace to be deleted once empty")
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("cm", "doomed")
    assert json.loads(err.value.body or "{}")["reason"] == "NotFound"
