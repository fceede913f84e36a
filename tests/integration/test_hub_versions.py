"""A CRD served at two versions (conversion strategy None): one object, visible at both."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api, http, widget_crd

G = WIDGET_GROUP


def two_versions() -> dict[str, Any]:
    crd = widget_crd()
    v1 = crd["spec"]["versions"][0]
    v2 = copy.deepcopy(v1)
    v2["name"] = "v2"
    v2["storage"] = False
    crd["spec"]["versions"] = [v1, v2]
    return crd


def test_object_written_at_one_version_is_read_at_the_other(
    make_hub: Callable[..., HubThread], client_for: Callable[..., Any]
) -> None:
    hub = make_hub(crds=[two_versions()])
    crs = api("CustomObjectsApi", client_for(hub))
    body = {"apiVersion": f"{G}/v2", "kind": "Widget", "metadata": {"name": "both"}, "spec": {"size": 4}}
    crs.create_namespaced_custom_object(G, "v2", "default", "widgets", body)
    at_v1 = crs.get_namespaced_custom_object(G, "v1", "default", "widgets", "both")
    assert at_v1["apiVersion"] == f"{G}/v1" and at_v1["spec"]["size"] == 4
    listed = crs.list_namespaced_custom_object(G, "v2", "default", "widgets")
    assert [o["apiVersion"] for o in listed["items"]] == [f"{G}/v2"]


def test_discovery_prefers_the_highest_version(make_hub: Callable[..., HubThread]) -> None:
    hub = make_hub(crds=[two_versions()])
    group = json.loads(http(hub, "GET", f"/apis/{G}").data)
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"


def test_watch_at_a_non_storage_version_converts_events(make_hub: Callable[..., HubThread], client_for: Callable[..., Any]) -> None:
    hub = make_hub(crds=[two_versions()])
    crs = api("CustomObjectsApi", client_for(hub))
    body = {"apiVersion": f"{G}/v1", "kind": "Widget", "metadata": {"name": "seen"}, "spec": {"size": 1}}
    made = crs.create_namespaced_custom_object(G, "v1", "default", "widgets", body)
    crs.patch_namespaced_custom_object(G, "v1", "default", "widgets", "seen", {"spec": {"size": 2}})
    resp = http(hub, "GET", f"/apis/{G}/v2/namespaces/default/widgets?watch=1&timeoutSeconds=5&resourceVersion={made['metadata']['resourceVersion']}", stream=True)
    line = b""
    while not line.endswith(b"\n"):
        line += resp.read(1)
    resp.release_conn()
    event = json.loads(line)
    assert event["type"] == "MODIFIED" and event["object"]["apiVersion"] == f"{G}/v2"
