"""LIST: kinds, selectors, pagination, Table output; discovery and the non-resource endpoints."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api, http

G, V = WIDGET_GROUP, "v1"


@pytest.fixture
def crs(toy_client: client.ApiClient) -> Any:
    return api("CustomObjectsApi", toy_client)


@pytest.fixture
def labelled(crs: Any, toy_namespace: str) -> str:
    for name, labels in {
        "a": {"env": "prod", "tier": "web"},
        "b": {"env": "dev", "tier": "web"},
        "c": {"env": "prod"},
        "d": {},
    }.items():
        body = {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": name, "labels": labels}, "spec": {"size": 1}}
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
    return toy_namespace


def names(result: dict[str, Any]) -> list[str]:
    return [o["metadata"]["name"] for o in result["items"]]


def test_list_has_list_kind_api_version_and_resource_version(crs: Any, labelled: str) -> None:
    out = crs.list_namespaced_custom_object(G, V, labelled, "widgets")
    assert out["kind"] == "WidgetList" and out["apiVersion"] == f"{G}/{V}"
    assert int(out["metadata"]["resourceVersion"]) > 0
    assert names(out) == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("env=prod", ["a", "c"]),
        ("env==prod", ["a", "c"]),
        ("env!=prod", ["b", "d"]),
        ("env in (dev, prod)", ["a", "b", "c"]),
        ("env notin (prod)", ["b", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("env=prod,tier=web", ["a"]),
    ],
)
def test_label_selector(crs: Any, labelled: str, selector: str, expected: list[str]) -> None:
    assert names(crs.list_namespaced_custom_object(G, V, labelled, "widgets", label_selector=selector)) == expected


def test_malformed_label_selector_is_bad_request(crs: Any, labelled: str) -> None:
    with pytest.raises(client.ApiException) as err:
        crs.list_namespaced_custom_object(G, V, labelled, "widgets", label_selector="env in prod")
    assert err.value.status == 400


def test_field_selector_on_name(crs: Any, labelled: str) -> None:
    assert names(crs.list_namespaced_custom_object(G, V, labelled, "widgets", field_selector="metadata.name=b")) == ["b"]
    assert names(crs.list_namespaced_custom_object(G, V, labelled, "widgets", field_selector="metadata.name!=b")) == ["a", "c", "d"]


def test_field_selector_on_namespace_across_namespaces(crs: Any, labelled: str) -> None:
    out = crs.list_cluster_custom_object(G, V, "widgets", field_selector=f"metadata.namespace={labelled}")
    assert names(out) == ["a", "b", "c", "d"]


def test_unsupported_field_selector_is_bad_request(crs: Any, labelled: str) -> None:
    with pytest.raises(client.ApiException) as err:
        crs.list_namespaced_custom_object(G, V, labelled, "widgets", field_selector="spec.size=1")
    assert err.value.status == 400


def test_limit_and_continue_page_through_everything(crs: Any, labelled: str) -> None:
    first = crs.list_namespaced_custom_object(G, V, labelled, "widgets", limit=3)
    assert names(first) == ["a", "b", "c"]
    assert first["metadata"]["remainingItemCount"] == 1
    second = crs.list_namespaced_custom_object(G, V, labelled, "widgets", limit=3, _continue=first["metadata"]["continue"])
    # The last page: a custom resource list's continue is there and empty, as kube-apiserver sends it.
    assert names(second) == ["d"] and second["metadata"]["continue"] == ""


def test_list_across_namespaces(crs: Any, labelled: str) -> None:
    out = crs.list_cluster_custom_object(G, V, "widgets", label_selector="env=prod")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in out["items"]] == [(labelled, "a"), (labelled, "c")]


def test_table_has_printer_columns(toy_hub: HubThread, labelled: str, crs: Any) -> None:
    crs.patch_namespaced_custom_object_status(G, V, labelled, "widgets", "a", {"status": {"phase": "Ready"}})
    resp = http(
        toy_hub, "GET", f"/apis/{G}/{V}/namespaces/{labelled}/widgets?fieldSelector=metadata.name%3Da",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
    )
    tab = json.loads(resp.data)
    assert tab["kind"] == "Table"
    assert [c["name"] for c in tab["columnDefinitions"]] == ["Name", "Size", "Phase", "Age"]
    (row,) = tab["rows"]
    assert row["cells"][:3] == ["a", 1, "Ready"]
    assert row["cells"][3].endswith("s")
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_table_for_single_object(toy_hub: HubThread, labelled: str) -> None:
    resp = http(toy_hub, "GET", f"/apis/{G}/{V}/namespaces/{labelled}/widgets/b", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert json.loads(resp.data)["rows"][0]["cells"][0] == "b"


def test_discovery_lists_groups_and_preferred_versions(toy_hub: HubThread) -> None:
    groups = json.loads(http(toy_hub, "GET", "/apis").data)
    assert groups["kind"] == "APIGroupList"
    toy = next(g for g in groups["groups"] if g["name"] == G)
    assert toy["preferredVersion"] == {"groupVersion": f"{G}/v1", "version": "v1"}


def test_discovery_resource_list_has_verbs_short_names_categories_and_subresources(toy_hub: HubThread) -> None:
    listing = json.loads(http(toy_hub, "GET", f"/apis/{G}/{V}").data)
    by_name = {r["name"]: r for r in listing["resources"]}
    widgets = by_name["widgets"]
    assert widgets["namespaced"] and widgets["kind"] == "Widget" and widgets["shortNames"] == ["wd"]
    assert widgets["categories"] == ["toys"]
    assert set(widgets["verbs"]) == {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
    assert by_name["widgets/status"]["verbs"] == ["get", "patch", "update"]
    assert "gadgets/status" not in by_name


def test_core_discovery(toy_hub: HubThread) -> None:
    assert json.loads(http(toy_hub, "GET", "/api").data)["versions"] == ["v1"]
    core = {r["name"] for r in json.loads(http(toy_hub, "GET", "/api/v1").data)["resources"]}
    assert {"namespaces", "configmaps", "secrets", "events", "namespaces/status", "namespaces/finalize"} <= core


def test_version_and_health_endpoints(toy_hub: HubThread) -> None:
    assert json.loads(http(toy_hub, "GET", "/version").data)["major"] == "1"
    for path in ("/healthz", "/readyz", "/livez"):
        assert http(toy_hub, "GET", path).data == b"ok"


def test_openapi_v3_marks_field_validation_support(toy_hub: HubThread) -> None:
    root = json.loads(http(toy_hub, "GET", "/openapi/v3").data)
    url = root["paths"][f"apis/{G}/{V}"]["serverRelativeURL"]
    doc = json.loads(http(toy_hub, "GET", url).data)
    patch = doc["paths"][f"/apis/{G}/{V}/namespaces/{{namespace}}/widgets/{{name}}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": G, "version": V, "kind": "Widget"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])
    assert f"{'.'.join(reversed(G.split('.')))}.v1.Widget" in doc["components"]["schemas"]


def test_unknown_resource_is_not_found(toy_hub: HubThread) -> None:
    assert http(toy_hub, "GET", f"/apis/{G}/{V}/nothings").status == 404
