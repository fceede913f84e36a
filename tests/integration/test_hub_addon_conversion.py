"""The add-on kinds through the local hub and the conversion webhook (``ocm-rollout run``'s,
served beside the hub as on an OCM hub): written in one version, read in the other with OCM's
rules, and back unchanged; the reserved name refused before anything is stored."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

G = "addon.open-cluster-management.io"
A, B = "v1alpha1", "v1beta1"
ADC = {"group": G, "resource": "addondeploymentconfigs"}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _cma(name: str, spec: dict[str, Any], version: str = A) -> dict[str, Any]:
    return {"apiVersion": f"{G}/{version}", "kind": "ClusterManagementAddOn", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def crs(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def test_a_cma_written_in_v1alpha1_reads_in_v1beta1_with_ocms_rules_and_back(crs: client.CustomObjectsApi) -> None:
    name = _name("cma")
    spec = {
        "addOnMeta": {"displayName": "hello"},
        "supportedConfigs": [
            {**ADC, "defaultConfig": {"name": "defaults", "namespace": "open-cluster-management"}},
            {"group": "example.com", "resource": "widgets"},
        ],
        "installStrategy": {"type": "Manual"},
    }
    written = crs.create_cluster_custom_object(G, A, "clustermanagementaddons", _cma(name, spec))
    beta = crs.get_cluster_custom_object(G, B, "clustermanagementaddons", name)
    assert beta["apiVersion"] == f"{G}/{B}"
    assert beta["spec"]["defaultConfigs"] == [
        {**ADC, "name": "defaults", "namespace": "open-cluster-management"},
        {"group": "example.com", "resource": "widgets", "name": "__reserved_no_default__"},
    ]
    assert "supportedConfigs" not in beta["spec"]
    alpha = crs.get_cluster_custom_object(G, A, "clustermanagementaddons", name)
    assert alpha["spec"] == written["spec"]
    listed = crs.list_cluster_custom_object(G, B, "clustermanagementaddons")
    assert name in {i["metadata"]["name"] for i in listed["items"]}
    assert all(i["apiVersion"] == f"{G}/{B}" for i in listed["items"])


def test_a_cma_written_in_v1beta1_is_stored_in_v1alpha1(crs: client.CustomObjectsApi) -> None:
    name = _name("beta")
    body = _cma(name, {"defaultConfigs": [{**ADC, "name": "__reserved_no_default__"}], "installStrategy": {"type": "Manual"}}, B)
    made = crs.create_cluster_custom_object(G, B, "clustermanagementaddons", body)
    assert made["spec"]["defaultConfigs"] == [{**ADC, "name": "__reserved_no_default__"}]
    alpha = crs.get_cluster_custom_object(G, A, "clustermanagementaddons", name)
    assert alpha["spec"]["supportedConfigs"] == [ADC]
    patched = crs.patch_cluster_custom_object(
        G, B, "clustermanagementaddons", name, {"spec": {"defaultConfigs": [{**ADC, "name": "d", "namespace": "ns"}]}}
    )
    assert patched["spec"]["defaultConfigs"] == [{**ADC, "name": "d", "namespace": "ns"}]
    alpha = crs.get_cluster_custom_object(G, A, "clustermanagementaddons", name)
    assert alpha["spec"]["supportedConfigs"] == [{**ADC, "defaultConfig": {"name": "d", "namespace": "ns"}}]


def test_an_mca_install_namespace_is_an_annotation_in_v1beta1(crs: client.CustomObjectsApi, namespace: str) -> None:
    name = _name("mca")
    body = {"apiVersion": f"{G}/{A}", "kind": "ManagedClusterAddOn", "metadata": {"name": name},
            "spec": {"installNamespace": "agents"}}
    crs.create_namespaced_custom_object(G, A, namespace, "managedclusteraddons", body)
    beta = crs.get_namespaced_custom_object(G, B, namespace, "managedclusteraddons", name)
    assert beta["metadata"]["annotations"][f"{G}/v1alpha1-install-namespace"] == "agents"
    assert "installNamespace" not in (beta.get("spec") or {})
    status = {"registrations": [{"signerName": "kubernetes.io/kube-apiserver-client",
                                 "subject": {"user": "u", "groups": ["g"]}}]}
    crs.patch_namespaced_custom_object_status(G, A, namespace, "managedclusteraddons", name, {"status": status})
    beta = crs.get_namespaced_custom_object(G, B, namespace, "managedclusteraddons", name)
    assert beta["status"]["registrations"] == [{"type": "kubeClient", "kubeClient": {"subject": {"user": "u", "groups": ["g"]}}}]
    alpha = crs.get_namespaced_custom_object(G, A, namespace, "managedclusteraddons", name)
    assert alpha["spec"] == {"installNamespace": "agents"} and alpha["status"]["registrations"] == status["registrations"]


def test_a_watch_in_v1beta1_sees_converted_cmas(crs: client.CustomObjectsApi) -> None:
    name = _name("watched")
    seen: list[dict[str, Any]] = []
    done = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(crs.list_cluster_custom_object, G, B, "clustermanagementaddons", timeout_seconds=15):
            if event["object"]["metadata"]["name"] == name:
                seen.append(event["object"])
                stream.stop()
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    crs.create_cluster_custom_object(G, A, "clustermanagementaddons", _cma(name, {"supportedConfigs": [ADC]}))
    assert done.wait(20), "no watch event"
    assert seen[0]["spec"]["defaultConfigs"] == [{**ADC, "name": "__reserved_no_default__"}]


def test_the_reserved_name_is_refused_in_v1alpha1_naming_the_field(crs: client.CustomObjectsApi) -> None:
    name = _name("reserved")
    spec = {"supportedConfigs": [{**ADC, "defaultConfig": {"name": "__reserved_no_default__", "namespace": "x"}}]}
    with pytest.raises(ApiException) as caught:
        crs.create_cluster_custom_object(G, A, "clustermanagementaddons", _cma(name, spec))
    assert caught.value.status == 422
    message = json.loads(caught.value.body)["message"]
    assert "spec.supportedConfigs[0].defaultConfig" in message and "reserved" in message
    with pytest.raises(ApiException) as missing:
        crs.get_cluster_custom_object(G, A, "clustermanagementaddons", name)
    assert missing.value.status == 404


def test_a_client_written_carried_annotation_cannot_make_a_cma_unreadable(crs: client.CustomObjectsApi) -> None:
    name = _name("tampered")
    body = _cma(name, {"supportedConfigs": [ADC]})
    body["metadata"]["annotations"] = {f"{G}/v1beta1-fields": "not json", f"{G}/v1alpha1-fields": "[]"}
    crs.create_cluster_custom_object(G, A, "clustermanagementaddons", body)
    beta = crs.get_cluster_custom_object(G, B, "clustermanagementaddons", name)
    assert beta["spec"]["defaultConfigs"] == [{**ADC, "name": "__reserved_no_default__"}]
    assert crs.list_cluster_custom_object(G, B, "clustermanagementaddons")["items"]
