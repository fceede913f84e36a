"""Restart with `--data`: objects, their resourceVersions and the credentials survive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import api, http, widget_crd

G, V = "test.ocm-rollout.io", "v1"


def widget(name: str) -> dict[str, object]:
    return {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1}}


def test_restart_keeps_objects_and_resource_versions(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient], tmp_path: Path
) -> None:
    data = tmp_path / "hub.sqlite"
    first = make_hub(data=data, crds=[widget_crd()])
    crs = api("CustomObjectsApi", client_for(first))
    api("CoreV1Api", client_for(first)).create_namespace({"metadata": {"name": "kept"}})
    made = crs.create_namespaced_custom_object(G, V, "kept", "widgets", widget("w"))
    patched = crs.patch_namespaced_custom_object_status(G, V, "kept", "widgets", "w", {"status": {"phase": "Up"}})
    first.stop()

    second = make_hub(data=data, crds=[widget_crd()])
    crs2 = api("CustomObjectsApi", client_for(second))
    again = crs2.get_namespaced_custom_object(G, V, "kept", "widgets", "w")
    assert again["metadata"]["uid"] == made["metadata"]["uid"]
    assert again["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert again["status"] == {"phase": "Up"}
    later = crs2.patch_namespaced_custom_object(G, V, "kept", "widgets", "w", {"spec": {"size": 2}})
    assert int(later["metadata"]["resourceVersion"]) > int(patched["metadata"]["resourceVersion"])


def test_restart_keeps_deletions(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient], tmp_path: Path) -> None:
    data = tmp_path / "hub.sqlite"
    first = make_hub(data=data, crds=[widget_crd()])
    crs = api("CustomObjectsApi", client_for(first))
    crs.create_namespaced_custom_object(G, V, "default", "widgets", widget("short-lived"))
    crs.delete_namespaced_custom_object(G, V, "default", "widgets", "short-lived")
    first.stop()
    second = make_hub(data=data, crds=[widget_crd()])
    listed = api("CustomObjectsApi", client_for(second)).list_namespaced_custom_object(G, V, "default", "widgets")
    assert listed["items"] == []


def test_restart_keeps_the_token_and_certificate(make_hub: Callable[..., HubThread], tmp_path: Path) -> None:
    data = tmp_path / "hub.sqlite"
    first = make_hub(data=data, crds=[])
    token, ca = first.token, first.hub.ca_pem
    first.stop()
    second = make_hub(data=data, crds=[])
    assert second.token == token and second.hub.ca_pem == ca
    assert http(second, "GET", "/version").status == 200


def test_watch_from_before_a_restart_is_gone(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient], tmp_path: Path
) -> None:
    data = tmp_path / "hub.sqlite"
    first = make_hub(data=data, crds=[widget_crd()])
    made = api("CustomObjectsApi", client_for(first)).create_namespaced_custom_object(G, V, "default", "widgets", widget("w"))
    api("CustomObjectsApi", client_for(first)).patch_namespaced_custom_object(G, V, "default", "widgets", "w", {"spec": {"size": 3}})
    first.stop()
    second = make_hub(data=data, crds=[widget_crd()])
    resp = http(second, "GET", f"/apis/{G}/{V}/namespaces/default/widgets?watch=1&resourceVersion={made['metadata']['resourceVersion']}")
    assert b'"code":410' in resp.data
