"""Core kinds (namespaces, configmaps, secrets, events, leases, reviews), CRDs through the API,
and the request log."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import api, http, widget_crd


def test_default_namespaces_exist(toy_client: client.ApiClient) -> None:
    names = {n.metadata.name for n in api("CoreV1Api", toy_client).list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_new_namespace_is_active_with_the_kubernetes_finalizer(toy_client: client.ApiClient, toy_namespace: str) -> None:
    ns = api("CoreV1Api", toy_client).read_namespace(toy_namespace)
    assert ns.status.phase == "Active" and ns.spec.finalizers == ["kubernetes"]


def test_configmap_round_trip_and_strategic_merge_patch(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    core.create_namespaced_config_map(toy_namespace, {"metadata": {"name": "cfg"}, "data": {"a": "1", "b": "2"}})
    out = core.patch_namespaced_config_map(
        "cfg", toy_namespace, {"data": {"b": None, "c": "3"}}, _content_type="application/strategic-merge-patch+json"
    )
    assert out.data == {"a": "1", "c": "3"}


def test_immutable_configmap_data_cannot_change(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    core.create_namespaced_config_map(toy_namespace, {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": True})
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map("frozen", toy_namespace, {"data": {"a": "2"}}, _content_type="application/merge-patch+json")
    assert err.value.status == 422


def test_secret_string_data_is_encoded_into_data(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    out = core.create_namespaced_secret(toy_namespace, {"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}})
    assert out.type == "Opaque"
    assert base64.b64decode(out.data["password"]) == b"hunter2"
    assert out.string_data is None


def test_secret_data_must_be_base64(toy_client: client.ApiClient, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        api("CoreV1Api", toy_client).create_namespaced_secret(toy_namespace, {"metadata": {"name": "bad"}, "data": {"k": "***"}})
    assert err.value.status == 422


def test_lease_round_trip_with_optimistic_concurrency(toy_client: client.ApiClient, toy_namespace: str) -> None:
    coord = api("CoordinationV1Api", toy_client)
    now = datetime.now(UTC).isoformat()
    lease = coord.create_namespaced_lease(
        toy_namespace, {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": now}}
    )
    lease.spec.holder_identity = "you"
    coord.replace_namespaced_lease("leader", toy_namespace, lease)
    lease.spec.holder_identity = "third"
    with pytest.raises(client.ApiException) as err:
        coord.replace_namespaced_lease("leader", toy_namespace, lease)
    assert err.value.status == 409


def test_core_and_events_k8s_io_events_are_one_store(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    ev = api("EventsV1Api", toy_client)
    core.create_namespaced_event(
        toy_namespace,
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Widget", "name": "w", "namespace": toy_namespace},
            "reason": "Tested",
            "message": "hello",
            "type": "Normal",
            "eventTime": datetime.now(UTC).isoformat(),
            "reportingComponent": "test",
            "reportingInstance": "test-1",
            "action": "Check",
        },
    )
    seen = ev.read_namespaced_event("e1", toy_namespace)
    assert seen.note == "hello" and seen.regarding.name == "w"
    ev.create_namespaced_event(
        toy_namespace,
        {
            "metadata": {"name": "e2"},
            "eventTime": datetime.now(UTC).isoformat(),
            "reportingController": "test",
            "reportingInstance": "test-1",
            "action": "Check",
            "reason": "Tested",
            "regarding": {"kind": "Widget", "name": "w"},
            "note": "from events.k8s.io",
            "type": "Normal",
        },
    )
    assert core.read_namespaced_event("e2", toy_namespace).message == "from events.k8s.io"


def test_event_field_selector_on_involved_object(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    for name, target in (("f1", "a"), ("f2", "b")):
        core.create_namespaced_event(toy_namespace, {"metadata": {"name": name}, "involvedObject": {"kind": "Widget", "name": target}})
    found = core.list_namespaced_event(toy_namespace, field_selector="involvedObject.name=b")
    assert [e.metadata.name for e in found.items] == ["f2"]


def test_subject_access_review_allows(toy_client: client.ApiClient) -> None:
    auth = api("AuthorizationV1Api", toy_client)
    review = auth.create_subject_access_review(
        {"spec": {"user": "someone", "resourceAttributes": {"verb": "list", "group": "cluster.open-cluster-management.io", "resource": "managedclusters"}}}
    )
    assert review.status.allowed is True


def test_self_subject_access_review_allows(toy_client: client.ApiClient) -> None:
    auth = api("AuthorizationV1Api", toy_client)
    review = auth.create_self_subject_access_review({"spec": {"resourceAttributes": {"verb": "delete", "resource": "namespaces"}}})
    assert review.status.allowed is True


def test_crd_created_through_the_api_is_served(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]) -> None:
    hub = make_hub(crds=[])
    apic = client_for(hub)
    ext = api("ApiextensionsV1Api", apic)
    ext.create_custom_resource_definition(widget_crd())
    crd = ext.read_custom_resource_definition("widgets.test.ocm-rollout.io")
    assert {c.type: c.status for c in crd.status.conditions} == {"NamesAccepted": "True", "Established": "True"}
    crs = api("CustomObjectsApi", apic)
    body = {"apiVersion": "test.ocm-rollout.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    assert crs.create_namespaced_custom_object("test.ocm-rollout.io", "v1", "default", "widgets", body)["spec"]["mode"] == "Small"


def test_invalid_crd_is_rejected(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]) -> None:
    hub = make_hub(crds=[])
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong.name.io"
    with pytest.raises(client.ApiException) as err:
        api("ApiextensionsV1Api", client_for(hub)).create_custom_resource_definition(crd)
    assert err.value.status == 422
    assert json.loads(err.value.body or "{}")["details"]["causes"][0]["field"] == "metadata.name"


def test_deleting_a_crd_removes_its_objects_and_endpoint(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient], wait_for: Callable[..., Any]
) -> None:
    hub = make_hub(crds=[widget_crd()])
    apic = client_for(hub)
    crs = api("CustomObjectsApi", apic)
    body = {"apiVersion": "test.ocm-rollout.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    crs.create_namespaced_custom_object("test.ocm-rollout.io", "v1", "default", "widgets", body)
    api("ApiextensionsV1Api", apic).delete_custom_resource_definition("widgets.test.ocm-rollout.io")
    wait_for(lambda: http(hub, "GET", "/apis/test.ocm-rollout.io/v1/namespaces/default/widgets").status == 404)


def test_request_log_records_rbac_attributes(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient], tmp_path: Any) -> None:
    log_file = tmp_path / "requests.jsonl"
    hub = make_hub(crds=[widget_crd()], record_requests=True, request_log=log_file)
    apic = client_for(hub)
    apic.user_agent = "recorder-test/1.0"
    crs = api("CustomObjectsApi", apic)
    body = {"apiVersion": "test.ocm-rollout.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    crs.create_namespaced_custom_object("test.ocm-rollout.io", "v1", "default", "widgets", body)
    crs.patch_namespaced_custom_object_status("test.ocm-rollout.io", "v1", "default", "widgets", "w", {"status": {"phase": "x"}})
    crs.list_cluster_custom_object("test.ocm-rollout.io", "v1", "widgets")
    mine = [r for r in hub.hub.requests if r.user_agent == "recorder-test/1.0"]
    assert [(r.verb, r.resource, r.subresource, r.namespace, r.name) for r in mine] == [
        ("create", "widgets", "", "default", ""),
        ("patch", "widgets", "status", "default", "w"),
        ("list", "widgets", "", "", ""),
    ]
    assert all(r.group == "test.ocm-rollout.io" and r.user == "admin" for r in mine)
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [entry["verb"] for entry in lines if entry["user_agent"] == "recorder-test/1.0"] == ["create", "patch", "list"]
