"""The limits of a real hub, through the kubernetes client and raw HTTP: the bounded watch
history (410 Expired below it), kube-apiserver's 3 MiB request body (413) and 256 KiB of annotations
(422), etcd's 1.5 MiB object (500), OCM's 500 KiB of ManifestWork manifests (400 from its webhook),
and Events' time to live."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import api, http, wait_until

WORKS = ("work.open-cluster-management.io", "v1", "manifestworks")
LIMIT = 3 * 1024 * 1024


def status(exc: client.ApiException) -> dict[str, Any]:
    return dict(json.loads(exc.body))


def config_map(name: str, data_bytes: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"x": "a" * data_bytes}}


def test_a_watch_from_before_the_history_gets_an_expired_error_event(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]
) -> None:
    hub = make_hub(crds=[], history=5)
    core = api("CoreV1Api", client_for(hub))
    made = core.create_namespaced_config_map("default", config_map("w", 1))
    rvs = [int(made.metadata.resource_version)]
    for i in range(10):
        # Writes to another resource in between: resourceVersions of ConfigMaps are not consecutive.
        core.create_namespaced_secret("default", {"metadata": {"name": f"s{i}"}})
        changed = core.patch_namespaced_config_map("w", "default", {"data": {"i": str(i)}})
        rvs.append(int(changed.metadata.resource_version))
    path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion="
    (event,) = [json.loads(line) for line in http(hub, "GET", path + str(rvs[0])).data.splitlines() if line]
    # kube-apiserver's watch cache: the oldest event kept is rvs[-5]; it serves from rvs[-5] - 1.
    assert event == {
        "type": "ERROR",
        "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {rvs[0]} ({rvs[-5] - 1})", "reason": "Expired", "code": 410,
        },
    }
    resumed = [json.loads(line) for line in http(hub, "GET", path + str(rvs[-5] - 1)).data.splitlines() if line]
    assert [int(e["object"]["metadata"]["resourceVersion"]) for e in resumed if e["type"] == "MODIFIED"] == rvs[-5:]


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` as JSON padded with whitespace to exactly `size` bytes."""
    raw = json.dumps(body).encode()
    return raw + b" " * (size - len(raw))


def test_a_request_body_over_3_mib_gets_413_request_entity_too_large(hub: HubThread, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    at_limit = http(hub, "POST", path, body=padded(config_map("at-limit", 10), LIMIT))
    assert at_limit.status == 201
    over = http(hub, "POST", path, body=padded(config_map("over", 10), LIMIT + 1))
    assert over.status == 413
    assert json.loads(over.data) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Request entity too large: limit is {LIMIT}", "reason": "RequestEntityTooLarge", "code": 413,
    }
    assert http(hub, "GET", f"{path}/over").status == 404
    patch = http(hub, "PATCH", f"{path}/at-limit", body=padded({"data": {"y": "b"}}, LIMIT + 1),
                 headers={"Content-Type": "application/merge-patch+json"})
    assert patch.status == 413


def test_an_object_over_1_5_mib_gets_etcds_request_too_large(api_client: client.ApiClient, namespace: str) -> None:
    core = api("CoreV1Api", api_client)
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_config_map(namespace, config_map("big", 1600 * 1024))
    assert refused.value.status == 500
    assert status(refused.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: request is too large", "code": 500,
    }
    with pytest.raises(client.ApiException) as missing:
        core.read_namespaced_config_map("big", namespace)
    assert missing.value.status == 404
    stored = core.create_namespaced_config_map(namespace, config_map("grows", 1400 * 1024))
    with pytest.raises(client.ApiException) as grown:
        core.patch_namespaced_config_map("grows", namespace, {"data": {"y": "b" * 200 * 1024}})
    assert grown.value.status == 500
    kept = core.read_namespaced_config_map("grows", namespace)
    assert kept.metadata.resource_version == stored.metadata.resource_version and "y" not in kept.data


def manifest_work(name: str, data_bytes: int) -> dict[str, Any]:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                "data": {"x": "a" * data_bytes}}
    return {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork", "metadata": {"name": name},
            "spec": {"workload": {"manifests": [manifest]}}}


DENIED = re.compile(
    r'admission webhook "manifestworkvalidators\.admission\.work\.open-cluster-management\.io" denied the request: '
    r"the size of manifests is (\d+) bytes which exceeds the 512000 limit"
)


def test_manifestwork_manifests_over_500_kib_are_denied_by_ocms_webhook(
    api_client: client.ApiClient, namespace: str
) -> None:
    crs = api("CustomObjectsApi", api_client)
    crs.create_namespaced_custom_object(*WORKS[:2], namespace, WORKS[2], manifest_work("small", 400 * 1024))
    for dry_run in ("All", None):
        with pytest.raises(client.ApiException) as denied:
            crs.create_namespaced_custom_object(
                *WORKS[:2], namespace, WORKS[2], manifest_work("big", 600 * 1024), dry_run=dry_run
            )
        assert denied.value.status == 400
        body = status(denied.value)
        assert (body["reason"], body["status"], body["code"]) == ("BadRequest", "Failure", 400)
        found = DENIED.fullmatch(body["message"])
        assert found is not None and 600 * 1024 < int(found.group(1)) < 601 * 1024
    # An update is checked too; the work keeps its spec.
    grown = {"spec": {"workload": {"manifests": [manifest_work("small", 600 * 1024)["spec"]["workload"]["manifests"][0]]}}}
    with pytest.raises(client.ApiException) as update:
        crs.patch_namespaced_custom_object(*WORKS[:2], namespace, WORKS[2], "small", grown)
    assert update.value.status == 400 and DENIED.fullmatch(status(update.value)["message"])


def test_events_are_deleted_once_their_time_to_live_has_passed(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]
) -> None:
    hub = make_hub(crds=[])
    assert hub.hub.engine is not None
    engine = hub.hub.engine
    hub.call(lambda: setattr(engine, "event_ttl", 0.5))
    core = api("CoreV1Api", client_for(hub))
    event = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
             "reason": "Test", "message": "short-lived"}
    core.create_namespaced_event("default", event)
    core.create_namespaced_config_map("default", config_map("kept", 1))

    def gone() -> bool:
        try:
            core.read_namespaced_event("e1", "default")
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone, timeout=10, message="the event expired")
    assert core.read_namespaced_config_map("kept", "default").data == {"x": "a"}


def test_annotations_over_256_kib_in_all_are_refused_as_kube_apiserver_does(
    make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]
) -> None:
    hub = make_hub(crds=[])
    core = api("CoreV1Api", client_for(hub))
    limit = 256 * 1024
    # Keys and values count together, in bytes: "a/b" (3) + "é" * n (2 bytes each) + "k" (1) + value.
    at_limit = {"a/b": "é" * 1000, "k": "x" * (limit - 3 - 2000 - 1)}
    made = core.create_namespaced_config_map("default", {"metadata": {"name": "at", "annotations": at_limit}})
    assert made.metadata.annotations == at_limit
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "over", "annotations": {**at_limit, "k": at_limit["k"] + "x"}}}
        )
    assert refused.value.status == 422
    answer = status(refused.value)
    assert answer["reason"] == "Invalid"
    assert answer["message"] == f'ConfigMap "over" is invalid: metadata.annotations: Too long: may not be more than {limit} bytes'
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": f"Too long: may not be more than {limit} bytes", "field": "metadata.annotations"}
    ]
    # An update that would pass the limit is refused too, and what is stored stays as it was.
    with pytest.raises(client.ApiException) as patched:
        core.patch_namespaced_config_map("at", "default", {"metadata": {"annotations": {"more": "y"}}})
    assert patched.value.status == 422
    assert core.read_namespaced_config_map("at", "default").metadata.annotations == at_limit
