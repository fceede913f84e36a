"""The local hub converts a CRD's versions through its conversion webhook, as kube-apiserver does.

A toy CRD ``dials.convert.ocm-rollout.io`` stores ``v1`` (``spec.size``) and serves ``v2``
(``spec.replicas``); its webhook is ``controllers.runtime.webhook``'s server (TLS, POST /convert)
with a toy review function, on the hub's own loop. Every request goes through the real
``kubernetes`` client.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from ocm_rollout.controllers.runtime import webhook
from ocm_rollout.sandbox import tls
from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import wait_until

GROUP = "convert.ocm-rollout.io"
PLURAL = "dials"


class ToyWebhook:
    """Converts spec.size (v1) <-> spec.replicas (v2); refuses objects labelled refuse=yes; with
    ``rename`` set it also changes metadata.name, which the hub must refuse."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.rename = False
        self.lock = threading.Lock()

    def __call__(self, review: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.reviews.append(review)
        request = review["request"]
        desired = request["desiredAPIVersion"]
        out = []
        for obj in request["objects"]:
            if (obj.get("metadata") or {}).get("labels", {}).get("refuse") == "yes":
                return _answer(request["uid"], [], f"{obj['metadata']['name']}: refused by the toy webhook")
            converted = json.loads(json.dumps(obj))
            spec = converted.get("spec") or {}
            if desired.endswith("/v2") and "size" in spec:
                spec["replicas"] = spec.pop("size")
            elif desired.endswith("/v1") and "replicas" in spec:
                spec["size"] = spec.pop("replicas")
            converted["apiVersion"] = desired
            converted.setdefault("metadata", {}).setdefault("annotations", {})["converted-by"] = "toy"
            if self.rename:
                converted["metadata"]["name"] = "renamed"
            out.append(converted)
        return _answer(request["uid"], out, None)

    def desired(self) -> list[str]:
        with self.lock:
            return [r["request"]["desiredAPIVersion"] for r in self.reviews]


def _answer(uid: str, objects: list[dict[str, Any]], error: str | None) -> dict[str, Any]:
    result = {"status": "Failure", "message": error} if error else {"status": "Success"}
    response: dict[str, Any] = {"uid": uid, "result": result}
    if not error:
        response["convertedObjects"] = objects
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}


def _schema(field: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer", "minimum": 0}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }


def dial_crd(client_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Dial", "listKind": "DialList", "plural": PLURAL, "singular": "dial"},
            "scope": "Namespaced",
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
            },
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": _schema("size")}},
                {"name": "v2", "served": True, "storage": False, "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": _schema("replicas")}},
            ],
        },
    }


class Served:
    def __init__(self, handle: HubThread, toy: ToyWebhook, server: webhook.WebhookServer) -> None:
        self.handle = handle
        self.toy = toy
        self.server = server
        assert handle.kubeconfig is not None
        from kubernetes import config

        self.api_client = config.new_client_from_config(config_file=str(handle.kubeconfig))
        self.api = client.CustomObjectsApi(self.api_client)

    def stop_webhook(self) -> None:
        self.handle.run(self.server.stop())


@pytest.fixture
def served(make_hub: Callable[..., HubThread], tmp_path: Path) -> Iterator[Served]:
    creds = tls.generate(["127.0.0.1"])
    (tmp_path / webhook.CERT_FILE).write_bytes(creds.cert_pem + creds.ca_pem)
    (tmp_path / webhook.KEY_FILE).write_bytes(creds.key_pem)
    toy = ToyWebhook()
    server = webhook.WebhookServer(("127.0.0.1", 0), tmp_path, toy)
    # The port is known once the server listens; the CRD is created after that.
    handle = make_hub(crds=[])
    handle.run(server.start())
    config = {"url": f"https://127.0.0.1:{server.port}{webhook.PATH}", "caBundle": base64.b64encode(creds.ca_pem).decode()}
    ext = client.ApiextensionsV1Api(client.ApiClient(_configuration(handle)))
    ext.create_custom_resource_definition(dial_crd(config))
    wait_until(lambda: _served(handle), timeout=10, message="the Dial CRD is not served")
    served = Served(handle, toy, server)
    try:
        yield served
    finally:
        served.api_client.close()
        handle.run(server.stop())


def _configuration(handle: HubThread) -> client.Configuration:
    from kubernetes import config

    assert handle.kubeconfig is not None
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(handle.kubeconfig), client_configuration=configuration)
    return configuration


def _served(handle: HubThread) -> bool:
    assert handle.hub.engine is not None
    return handle.hub.engine.resolve(GROUP, "v2", PLURAL) is not None


def _dial(name: str, version: str, value: int, **labels: str) -> dict[str, Any]:
    field = "replicas" if version == "v2" else "size"
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Dial", "metadata": meta, "spec": {field: value}}


def test_an_object_written_in_v2_is_stored_in_v1_and_read_in_both(served: Served) -> None:
    api = served.api
    made = api.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, _dial("a", "v2", 3))
    assert made["apiVersion"] == f"{GROUP}/v2" and made["spec"] == {"replicas": 3}
    assert made["metadata"]["annotations"] == {"converted-by": "toy"}  # labels and annotations may change
    stored = served.handle.call(lambda: served.handle.hub.store.get(f"{GROUP}/{PLURAL}", "default", "a"))  # type: ignore[union-attr]
    assert stored["apiVersion"] == f"{GROUP}/v1" and stored["spec"] == {"size": 3}
    assert api.get_namespaced_custom_object(GROUP, "v1", "default", PLURAL, "a")["spec"] == {"size": 3}
    assert api.get_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "a")["spec"] == {"replicas": 3}
    listed = api.list_namespaced_custom_object(GROUP, "v2", "default", PLURAL)
    assert [i["spec"] for i in listed["items"]] == [{"replicas": 3}]
    assert {f"{GROUP}/v1", f"{GROUP}/v2"} <= set(served.toy.desired())


def test_reads_in_the_storage_version_do_not_call_the_webhook(served: Served) -> None:
    served.api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL, _dial("plain", "v1", 1))
    before = len(served.toy.reviews)
    served.api.get_namespaced_custom_object(GROUP, "v1", "default", PLURAL, "plain")
    served.api.list_namespaced_custom_object(GROUP, "v1", "default", PLURAL)
    assert len(served.toy.reviews) == before


def test_a_list_is_converted_in_one_review(served: Served) -> None:
    for i in range(5):
        served.api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL, _dial(f"l{i}", "v1", i))
    before = len(served.toy.reviews)
    listed = served.api.list_namespaced_custom_object(GROUP, "v2", "default", PLURAL)
    assert sorted(i["spec"]["replicas"] for i in listed["items"]) == [0, 1, 2, 3, 4]
    assert len(served.toy.reviews) == before + 1


def test_patch_and_status_in_v2(served: Served) -> None:
    api = served.api
    api.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, _dial("p", "v2", 1))
    patched = api.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "p", {"spec": {"replicas": 7}})
    assert patched["spec"] == {"replicas": 7}
    assert api.get_namespaced_custom_object(GROUP, "v1", "default", PLURAL, "p")["spec"] == {"size": 7}
    status = api.patch_namespaced_custom_object_status(GROUP, "v2", "default", PLURAL, "p", {"status": {"phase": "Ready"}})
    assert status["status"] == {"phase": "Ready"} and status["spec"] == {"replicas": 7}
    assert status["metadata"]["generation"] == 2


def test_validation_runs_in_the_version_written(served: Served) -> None:
    with pytest.raises(ApiException) as caught:
        served.api.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, _dial("bad", "v2", -1))
    assert caught.value.status == 422
    assert "spec.replicas" in json.loads(caught.value.body)["message"]


def test_a_watch_in_v2_sees_converted_objects(served: Served) -> None:
    api = served.api
    seen: list[dict[str, Any]] = []
    done = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(api.list_namespaced_custom_object, GROUP, "v2", "default", PLURAL, timeout_seconds=10):
            seen.append(event["object"])
            if event["object"]["metadata"]["name"] == "w":
                stream.stop()
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL, _dial("w", "v1", 4))
    assert done.wait(15), "no watch event"
    assert [o["spec"] for o in seen if o["metadata"]["name"] == "w"] == [{"replicas": 4}]
    assert all(o["apiVersion"] == f"{GROUP}/v2" for o in seen)


def test_a_refusal_is_a_500_and_nothing_is_stored(served: Served) -> None:
    with pytest.raises(ApiException) as caught:
        served.api.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, _dial("no", "v2", 1, refuse="yes"))
    assert caught.value.status == 500
    body = json.loads(caught.value.body)
    assert body["reason"] == "InternalError"
    assert body["message"].startswith(f"Internal error occurred: conversion webhook for {GROUP}/v2, Kind=Dial failed: ")
    assert "refused by the toy webhook" in body["message"]
    with pytest.raises(ApiException) as missing:
        served.api.get_namespaced_custom_object(GROUP, "v1", "default", PLURAL, "no")
    assert missing.value.status == 404


def test_a_webhook_that_changes_the_name_is_refused(served: Served) -> None:
    served.api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL, _dial("n", "v1", 2))
    served.toy.rename = True
    with pytest.raises(ApiException) as caught:
        served.api.get_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "n")
    assert caught.value.status == 500
    assert "must not change metadata.name" in json.loads(caught.value.body)["message"]


def test_webhook_down_fails_the_request_as_kube_apiserver_does(served: Served) -> None:
    served.api.create_namespaced_custom_object(GROUP, "v1", "default", PLURAL, _dial("d", "v1", 5))
    served.stop_webhook()
    for call in (
        lambda: served.api.get_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "d"),
        lambda: served.api.list_namespaced_custom_object(GROUP, "v2", "default", PLURAL),
        lambda: served.api.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "d", {"spec": {"replicas": 9}}),
        lambda: served.api.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, _dial("e", "v2", 1)),
    ):
        with pytest.raises(ApiException) as caught:
            call()
        body = json.loads(caught.value.body)
        assert caught.value.status == 500 and body["reason"] == "InternalError", body
        assert body["message"].startswith(f"Internal error occurred: conversion webhook for {GROUP}/") and 'Post "https://127.0.0.1:' in body["message"]
    # Nothing stored changed; the storage version still reads.
    assert served.api.get_namespaced_custom_object(GROUP, "v1", "default", PLURAL, "d")["spec"] == {"size": 5}
    names = [i["metadata"]["name"] for i in served.api.list_namespaced_custom_object(GROUP, "v1", "default", PLURAL)["items"]]
    assert "e" not in names


def test_a_crd_with_a_bad_conversion_stanza_is_refused(served: Served) -> None:
    ext = client.ApiextensionsV1Api(served.api_client)
    crd = dial_crd({"url": "http://127.0.0.1:1/convert"})
    crd["metadata"]["name"] = f"knobs.{GROUP}"
    crd["spec"]["names"] = {"kind": "Knob", "listKind": "KnobList", "plural": "knobs", "singular": "knob"}
    with pytest.raises(ApiException) as caught:
        ext.create_custom_resource_definition(crd)
    assert caught.value.status == 422
    assert "'https' is the only allowed URL scheme" in json.loads(caught.value.body)["message"]
