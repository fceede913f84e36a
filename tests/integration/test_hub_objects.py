"""Object semantics of the local hub, through the real `kubernetes` client."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3
from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api

G, V = WIDGET_GROUP, "v1"


def widget(name: str, size: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size, **spec}}


def body_of(exc: client.ApiException) -> dict[str, Any]:
    return dict(json.loads(exc.body or "{}"))


@pytest.fixture
def crs(toy_client: client.ApiClient) -> Any:
    return api("CustomObjectsApi", toy_client)


def test_create_sets_uid_creation_timestamp_resource_version_and_generation(crs: Any, toy_namespace: str) -> None:
    obj = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("w1"))
    meta = obj["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert meta["namespace"] == toy_namespace


def test_resource_version_is_one_global_increasing_counter(crs: Any, toy_namespace: str) -> None:
    a = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("a"))
    b = crs.create_cluster_custom_object(G, V, "gadgets", {"apiVersion": f"{G}/{V}", "kind": "Gadget", "metadata": {"generateName": "g-"}})
    c = crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "a", {"metadata": {"labels": {"x": "1"}}})
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, b, c)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_generation_bumps_on_spec_change_only(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("gen"))
    labelled = crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "gen", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 1
    status = crs.patch_namespaced_custom_object_status(G, V, toy_namespace, "widgets", "gen", {"status": {"phase": "Up"}})
    assert status["metadata"]["generation"] == 1
    spec = crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "gen", {"spec": {"size": 2}})
    assert spec["metadata"]["generation"] == 2


def test_noop_update_keeps_resource_version(crs: Any, toy_namespace: str) -> None:
    created = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("same", 3))
    again = crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "same", {"spec": {"size": 3}})
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_generate_name_appends_a_random_suffix(crs: Any, toy_namespace: str) -> None:
    body = widget("")
    body["metadata"] = {"generateName": "gen-"}
    first = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    second = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("gen-") and len(n) == len("gen-") + 5 for n in names)


def test_namespace_is_taken_from_the_url(crs: Any, toy_namespace: str) -> None:
    obj = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("where"))
    assert obj["metadata"]["namespace"] == toy_namespace


def test_body_namespace_different_from_url_is_rejected(crs: Any, toy_namespace: str) -> None:
    body = widget("elsewhere")
    body["metadata"]["namespace"] = "other"
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    assert err.value.status == 400


def test_object_in_missing_namespace_is_rejected(crs: Any) -> None:
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(G, V, "no-such-namespace", "widgets", widget("w"))
    assert err.value.status == 404
    assert body_of(err.value)["details"] == {"name": "no-such-namespace", "kind": "namespaces"}


@pytest.mark.parametrize("field", ["labels", "annotations"])
def test_labels_or_annotations_that_are_not_a_map_are_invalid_not_a_server_error(
    crs: Any, toy_namespace: str, field: str
) -> None:
    body = widget("bad-meta")
    body["metadata"][field] = ["not", "a", "map"]
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    assert err.value.status == 422
    causes = body_of(err.value)["details"]["causes"]
    assert [c["field"] for c in causes] == [f"metadata.{field}"]


def test_create_twice_is_already_exists(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("dup"))
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("dup"))
    assert err.value.status == 409
    status = body_of(err.value)
    assert status["kind"] == "Status" and status["reason"] == "AlreadyExists"


def test_get_missing_is_not_found_status(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "ghost")
    status = body_of(err.value)
    assert err.value.status == 404
    assert status["reason"] == "NotFound"
    assert status["message"] == f'widgets.{G} "ghost" not found'


def test_cluster_scoped_kind_has_no_namespace(crs: Any) -> None:
    obj = crs.create_cluster_custom_object(G, V, "gadgets", {"apiVersion": f"{G}/{V}", "kind": "Gadget", "metadata": {"name": "top"}})
    assert "namespace" not in obj["metadata"]
    assert crs.get_cluster_custom_object(G, V, "gadgets", "top")["metadata"]["name"] == "top"


def test_namespaced_kind_is_not_served_on_a_cluster_path(toy_hub: HubThread, toy_namespace: str, crs: Any) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("scoped"))
    with pytest.raises(client.ApiException) as err:
        crs.get_cluster_custom_object(G, V, "widgets", "scoped")
    assert err.value.status == 404


def test_put_replaces_the_object(crs: Any, toy_namespace: str) -> None:
    obj = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("put", color="red"))
    obj["spec"] = {"size": 9}
    out = crs.replace_namespaced_custom_object(G, V, toy_namespace, "widgets", "put", obj)
    assert out["spec"]["size"] == 9 and "color" not in out["spec"]


def test_put_of_missing_object_is_not_found(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        crs.replace_namespaced_custom_object(G, V, toy_namespace, "widgets", "nobody", widget("nobody"))
    assert err.value.status == 404


def test_json_patch_is_applied(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("jp", tags=["a"]))
    ops = [{"op": "add", "path": "/spec/tags/-", "value": "b"}, {"op": "replace", "path": "/spec/size", "value": 5}]
    out = crs.patch_namespaced_custom_object(
        G, V, toy_namespace, "widgets", "jp", ops, _content_type="application/json-patch+json"
    )
    assert out["spec"]["tags"] == ["a", "b"] and out["spec"]["size"] == 5


def test_json_patch_test_failure_is_rejected(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("jpt"))
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(
            G, V, toy_namespace, "widgets", "jpt", [{"op": "test", "path": "/spec/size", "value": 7}],
            _content_type="application/json-patch+json",
        )
    assert err.value.status == 422


def test_strategic_merge_patch_is_unsupported_for_custom_resources(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("smp"))
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(
            G, V, toy_namespace, "widgets", "smp", {"spec": {"size": 2}}, _content_type="application/strategic-merge-patch+json"
        )
    assert err.value.status == 415


def test_request_without_token_is_unauthorized(toy_hub: HubThread) -> None:
    assert toy_hub.hub.ca_pem is not None
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_cert_data=toy_hub.hub.ca_pem.decode())
    resp = pool.request("GET", f"{toy_hub.url}/api/v1/namespaces")
    assert resp.status == 401
    assert json.loads(resp.data)["reason"] == "Unauthorized"


def test_request_with_wrong_token_is_unauthorized(toy_hub: HubThread) -> None:
    assert toy_hub.hub.ca_pem is not None
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_cert_data=toy_hub.hub.ca_pem.decode())
    resp = pool.request("GET", f"{toy_hub.url}/version", headers={"Authorization": "Bearer not-the-token"})
    assert resp.status == 401


def test_hub_listens_on_loopback_only(toy_hub: HubThread) -> None:
    assert toy_hub.url.startswith("https://127.0.0.1:")


def test_kubeconfig_is_private_and_holds_the_token(toy_hub: HubThread) -> None:
    assert toy_hub.kubeconfig is not None
    assert toy_hub.kubeconfig.stat().st_mode & 0o777 == 0o600
    assert toy_hub.token in toy_hub.kubeconfig.read_text()
