"""The add-on kinds on a hub started from the committed crds/ files: served in v1alpha1 (stored)
and v1beta1 like OCM's hub, so an object written in one version reads in the other (conversion
strategy None: only apiVersion changes), each version with its own schema and printer columns,
and discovery prefers v1beta1 as kube-apiserver does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from ocm_rollout.sandbox.crd import load_crd_files
from ocm_rollout.sandbox.server import HubThread
from tests.hubs import hub_thread
from tests.integration.conftest import api, http

REPO = Path(__file__).resolve().parents[2]
G = "addon.open-cluster-management.io"
V1ALPHA1, V1BETA1 = "v1alpha1", "v1beta1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
def addon_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubThread]:
    handle = hub_thread(
        kubeconfig=tmp_path_factory.mktemp("addon-versions") / "kubeconfig", crds=load_crd_files([REPO / "crds"])
    )
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def crs(addon_hub: HubThread) -> Iterator[Any]:
    api_client = config.new_client_from_config(config_file=str(addon_hub.kubeconfig))
    try:
        yield api("CustomObjectsApi", api_client)
    finally:
        api_client.close()


def _namespace(addon_hub: HubThread, name: str) -> str:
    resp = http(addon_hub, "POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    assert resp.status == 201, resp.data
    return name


def test_discovery_lists_both_versions_and_prefers_v1beta1(addon_hub: HubThread) -> None:
    group = json.loads(http(addon_hub, "GET", f"/apis/{G}").data)
    assert [v["version"] for v in group["versions"]] == [V1BETA1, V1ALPHA1]
    assert group["preferredVersion"] == {"groupVersion": f"{G}/{V1BETA1}", "version": V1BETA1}
    for version in (V1ALPHA1, V1BETA1):
        listing = json.loads(http(addon_hub, "GET", f"/apis/{G}/{version}").data)
        names = sorted(r["name"] for r in listing["resources"])
        assert names == [
            "addondeploymentconfigs",
            "addontemplates",
            "clustermanagementaddons",
            "clustermanagementaddons/status",
            "managedclusteraddons",
            "managedclusteraddons/status",
        ], version


def test_cma_created_in_v1alpha1_reads_in_v1beta1(crs: Any) -> None:
    body = {
        "apiVersion": f"{G}/{V1ALPHA1}",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "written-old"},
        "spec": {"addOnMeta": {"displayName": "Old"}, "installStrategy": {"type": "Manual"}},
    }
    crs.create_cluster_custom_object(G, V1ALPHA1, "clustermanagementaddons", body)
    new = crs.get_cluster_custom_object(G, V1BETA1, "clustermanagementaddons", "written-old")
    assert new["apiVersion"] == f"{G}/{V1BETA1}"
    assert new["spec"]["addOnMeta"] == {"displayName": "Old"}
    assert new["spec"]["installStrategy"] == {"type": "Manual"}
    listed = crs.list_cluster_custom_object(G, V1BETA1, "clustermanagementaddons")
    assert [(o["apiVersion"], o["metadata"]["name"]) for o in listed["items"]] == [(f"{G}/{V1BETA1}", "written-old")]
    crs.delete_cluster_custom_object(G, V1BETA1, "clustermanagementaddons", "written-old")


def test_mca_created_in_v1beta1_reads_in_v1alpha1(addon_hub: HubThread, crs: Any) -> None:
    ns = _namespace(addon_hub, "cluster-new")
    config_ref = {"group": G, "resource": "addondeploymentconfigs", "namespace": ns, "name": "deploy"}
    body = {
        "apiVersion": f"{G}/{V1BETA1}",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "written-new"},
        "spec": {"configs": [config_ref]},
    }
    made = crs.create_namespaced_custom_object(G, V1BETA1, ns, "managedclusteraddons", body)
    assert made["apiVersion"] == f"{G}/{V1BETA1}" and "installNamespace" not in made["spec"]
    old = crs.get_namespaced_custom_object(G, V1ALPHA1, ns, "managedclusteraddons", "written-new")
    assert old["apiVersion"] == f"{G}/{V1ALPHA1}"
    assert old["spec"]["configs"] == [config_ref]
    assert old["metadata"]["uid"] == made["metadata"]["uid"]


def test_the_deployment_config_and_template_read_in_both_versions(addon_hub: HubThread, crs: Any) -> None:
    ns = _namespace(addon_hub, "configs")
    adc = {
        "apiVersion": f"{G}/{V1BETA1}",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "deploy"},
        "spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": "debug"}]},
    }
    crs.create_namespaced_custom_object(G, V1BETA1, ns, "addondeploymentconfigs", adc)
    old = crs.get_namespaced_custom_object(G, V1ALPHA1, ns, "addondeploymentconfigs", "deploy")
    assert old["spec"]["customizedVariables"] == [{"name": "LOG_LEVEL", "value": "debug"}]
    assert old["spec"]["agentInstallNamespace"] == "open-cluster-management-agent-addon"  # defaulted
    template = {
        "apiVersion": f"{G}/{V1ALPHA1}",
        "kind": "AddOnTemplate",
        "metadata": {"name": "hello-1"},
        "spec": {
            "addonName": "hello",
            "agentSpec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}},
            "registration": [{"type": "KubeClient", "kubeClient": {"hubPermissions": [{"type": "CurrentCluster", "currentCluster": {"clusterRoleName": "r"}}]}}],
        },
    }
    crs.create_cluster_custom_object(G, V1ALPHA1, "addontemplates", template)
    new = crs.get_cluster_custom_object(G, V1BETA1, "addontemplates", "hello-1")
    assert new["apiVersion"] == f"{G}/{V1BETA1}"
    assert new["spec"]["registration"] == template["spec"]["registration"]
    assert new["spec"]["agentSpec"]["workload"] == template["spec"]["agentSpec"]["workload"]


def test_each_version_validates_with_its_own_schema(addon_hub: HubThread, crs: Any) -> None:
    ns = _namespace(addon_hub, "strict")
    body = {"kind": "ManagedClusterAddOn", "metadata": {"name": "a"}, "spec": {"installNamespace": "agents"}}
    crs.create_namespaced_custom_object(G, V1ALPHA1, ns, "managedclusteraddons", {**body, "apiVersion": f"{G}/{V1ALPHA1}"})
    with pytest.raises(client.ApiException) as caught:
        crs.create_namespaced_custom_object(
            G, V1BETA1, ns, "managedclusteraddons", {**body, "apiVersion": f"{G}/{V1BETA1}"}, field_validation="Strict"
        )
    assert caught.value.status == 400
    assert 'unknown field "spec.installNamespace"' in json.loads(caught.value.body)["message"]
    # A v1beta1 registration is typed; the v1alpha1 form (signerName at the top) is not one.
    status = {"registrations": [{"signerName": "example.com/signer"}]}
    with pytest.raises(client.ApiException) as invalid:
        crs.patch_namespaced_custom_object_status(G, V1BETA1, ns, "managedclusteraddons", "a", {"status": status})
    assert invalid.value.status == 422
    assert "status.registrations[0].type" in json.loads(invalid.value.body)["message"]
    crs.patch_namespaced_custom_object_status(G, V1ALPHA1, ns, "managedclusteraddons", "a", {"status": status})


def test_each_version_prints_its_own_columns(addon_hub: HubThread, crs: Any) -> None:
    body = {"apiVersion": f"{G}/{V1ALPHA1}", "kind": "ClusterManagementAddOn", "metadata": {"name": "columns"}, "spec": {}}
    crs.create_cluster_custom_object(G, V1ALPHA1, "clustermanagementaddons", body)

    def columns(version: str) -> list[str]:
        resp = http(addon_hub, "GET", f"/apis/{G}/{version}/clustermanagementaddons/columns", headers={"Accept": TABLE})
        assert resp.status == 200, resp.data
        return [c["name"] for c in json.loads(resp.data)["columnDefinitions"]]

    assert "CRD NAME" in columns(V1ALPHA1)
    assert "DISPLAY NAME" in columns(V1BETA1) and "CRD NAME" not in columns(V1BETA1)


def test_openapi_documents_each_version_with_its_own_schema(addon_hub: HubThread) -> None:
    def mca_spec(version: str) -> set[str]:
        resp = http(addon_hub, "GET", f"/openapi/v3/apis/{G}/{version}")
        assert resp.status == 200, resp.data
        schemas = json.loads(resp.data)["components"]["schemas"]
        (found,) = [
            s for s in schemas.values()
            if s.get("x-kubernetes-group-version-kind") == [{"group": G, "kind": "ManagedClusterAddOn", "version": version}]
        ]  # fmt: skip
        return set(found["properties"]["spec"]["properties"])

    assert mca_spec(V1ALPHA1) == {"configs", "installNamespace"}
    assert mca_spec(V1BETA1) == {"configs"}
