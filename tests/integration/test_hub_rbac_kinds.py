"""RBAC kinds (Role, RoleBinding, ClusterRole, ClusterRoleBinding) and ServiceAccounts, served as
kube-apiserver serves them: CRUD, selectors, watch, defaulting, validation (422 with field
causes), roleRef immutability, discovery and protobuf."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from kubernetes import client, watch

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import api, http
from tests.unit.pb_bytes import envelope, ld, one, parse, text, unenvelope

RBAC = "rbac.authorization.k8s.io"
PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO = {"Accept": f"{PROTOBUF}, application/json", "Content-Type": PROTOBUF}


def _causes(err: pytest.ExceptionInfo[client.ApiException]) -> list[tuple[str, str, str]]:
    assert err.value.status == 422, err.value.body
    status = json.loads(err.value.body)
    assert status["reason"] == "Invalid"
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_role_crud_with_a_colon_name_and_label_selector(toy_client: client.ApiClient, toy_namespace: str) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    created = rbac.create_namespaced_role(
        toy_namespace, {"metadata": {"name": "open-cluster-management:addon:reader", "labels": {"app": "a"}}, "rules": [rule]}
    )
    assert created.metadata.uid and created.metadata.generation is None
    rbac.create_namespaced_role(toy_namespace, {"metadata": {"name": "other"}, "rules": [rule]})
    names = [r.metadata.name for r in rbac.list_namespaced_role(toy_namespace, label_selector="app=a").items]
    assert names == ["open-cluster-management:addon:reader"]

    patched = rbac.patch_namespaced_role(
        "other", toy_namespace, {"rules": [{**rule, "verbs": ["*"]}]}, _content_type="application/strategic-merge-patch+json"
    )
    assert patched.rules[0].verbs == ["*"]
    rbac.delete_namespaced_role("other", toy_namespace)
    assert [r.metadata.name for r in rbac.list_namespaced_role(toy_namespace).items] == ["open-cluster-management:addon:reader"]


def test_put_creates_rbac_objects_but_not_service_accounts(toy_hub: HubThread, toy_namespace: str) -> None:
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "put-made"}, "rules": []}
    resp = http(toy_hub, "PUT", f"/apis/{RBAC}/v1/namespaces/{toy_namespace}/roles/put-made", body=role)
    assert resp.status == 201, resp.data
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "put-made"}}
    resp = http(toy_hub, "PUT", f"/api/v1/namespaces/{toy_namespace}/serviceaccounts/put-made", body=sa)
    assert resp.status == 404


def test_role_rules_are_validated(toy_client: client.ApiClient, toy_namespace: str) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    with pytest.raises(client.ApiException) as err:
        rbac.create_namespaced_role(
            toy_namespace,
            {"metadata": {"name": "bad"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}, {"verbs": ["get"]},
                                                   {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]},
        )
    assert _causes(err) == [
        ("FieldValueRequired", "rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("FieldValueRequired", "rules[1].apiGroups", "Required value: resource rules must supply at least one api group"),
        ("FieldValueRequired", "rules[1].resources", "Required value: resource rules must supply at least one resource"),
        ("FieldValueInvalid", "rules[2].nonResourceURLs",
         'Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs'),
    ]
    assert 'Role.rbac.authorization.k8s.io "bad" is invalid' in json.loads(err.value.body)["message"]
    with pytest.raises(client.ApiException) as err:
        rbac.create_namespaced_role(toy_namespace, {"metadata": {"name": "a/b"}, "rules": []})
    assert err.value.status in (404, 422)  # a "/" cannot even be addressed


def test_cluster_role_non_resource_urls_and_aggregation_rule(toy_client: client.ApiClient) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    name = _unique("system:probe")
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]})
    assert rbac.read_cluster_role(name).rules[0].non_resource_urls == ["/healthz"]
    with pytest.raises(client.ApiException) as err:
        rbac.create_cluster_role({"metadata": {"name": _unique("agg")}, "aggregationRule": {"clusterRoleSelectors": []}})
    assert _causes(err) == [
        ("FieldValueRequired", "aggregationRule.clusterRoleSelectors",
         "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"),
    ]
    aggregated = rbac.create_cluster_role(
        {"metadata": {"name": _unique("agg")},
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-x": "true"}}]}}
    )
    assert aggregated.aggregation_rule.cluster_role_selectors[0].match_labels == {"rbac.example.com/aggregate-to-x": "true"}
    rbac.delete_cluster_role(name)
    rbac.delete_cluster_role(aggregated.metadata.name)


def test_role_binding_defaults_and_immutable_role_ref(toy_client: client.ApiClient, toy_namespace: str) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    body = {
        "metadata": {"name": "binding"},
        "roleRef": {"kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                     {"kind": "ServiceAccount", "name": "agent", "namespace": toy_namespace}],
    }
    created = rbac.create_namespaced_role_binding(toy_namespace, body)
    assert created.role_ref.api_group == RBAC
    assert [s.api_group for s in created.subjects] == [RBAC, RBAC, None]

    # anything but the roleRef may change
    rbac.patch_namespaced_role_binding("binding", toy_namespace, {"subjects": [{"kind": "User", "name": "bob"}]})
    with pytest.raises(client.ApiException) as err:
        rbac.patch_namespaced_role_binding("binding", toy_namespace, {"roleRef": {"name": "writer"}})
    assert _causes(err) == [
        ("FieldValueInvalid", "roleRef",
         'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"writer"}: cannot change roleRef'),
    ]
    current = rbac.read_namespaced_role_binding("binding", toy_namespace)
    assert current.role_ref.name == "reader" and [s.name for s in current.subjects] == ["bob"]


def test_bindings_are_validated(toy_client: client.ApiClient, toy_namespace: str) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    with pytest.raises(client.ApiException) as err:
        rbac.create_namespaced_role_binding(
            toy_namespace,
            {"metadata": {"name": "bad"}, "roleRef": {"apiGroup": "example.com", "kind": "Thing", "name": "x"},
             "subjects": [{"kind": "Robot", "name": "r"}, {"kind": "User", "name": "u", "apiGroup": "example.com"},
                          {"kind": "ServiceAccount", "name": "Not_Valid"}]},
        )
    causes = _causes(err)
    assert [(r, f) for r, f, _ in causes] == [
        ("FieldValueNotSupported", "roleRef.apiGroup"),
        ("FieldValueNotSupported", "roleRef.kind"),
        ("FieldValueNotSupported", "subjects[0].kind"),
        ("FieldValueNotSupported", "subjects[1].apiGroup"),
        ("FieldValueInvalid", "subjects[2].name"),
    ]
    assert causes[1][2] == 'Unsupported value: "Thing": supported values: "Role", "ClusterRole"'

    with pytest.raises(client.ApiException) as err:
        rbac.create_cluster_role_binding(
            {"metadata": {"name": _unique("crb")}, "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "x"},
             "subjects": [{"kind": "ServiceAccount", "name": "agent"}]},
        )
    assert _causes(err) == [
        ("FieldValueNotSupported", "roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"'),
        ("FieldValueRequired", "subjects[0].namespace", "Required value"),
    ]


def test_watch_cluster_role_bindings(toy_client: client.ApiClient) -> None:
    rbac = api("RbacAuthorizationV1Api", toy_client)
    name = _unique("open-cluster-management:watched")
    rv = rbac.list_cluster_role_binding().metadata.resource_version
    rbac.create_cluster_role_binding(
        {"metadata": {"name": name}, "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "system:authenticated"}]}
    )
    rbac.delete_cluster_role_binding(name)
    seen = []
    for event in watch.Watch().stream(rbac.list_cluster_role_binding, resource_version=rv, timeout_seconds=2,
                                      field_selector=f"metadata.name={name}"):
        seen.append((event["type"], event["object"].metadata.name, event["object"].subjects[0].name))
        if event["type"] == "DELETED":
            break
    assert seen == [("ADDED", name, "system:authenticated"), ("DELETED", name, "system:authenticated")]


def test_service_accounts(toy_client: client.ApiClient, toy_namespace: str) -> None:
    core = api("CoreV1Api", toy_client)
    sa = core.create_namespaced_service_account(toy_namespace, {"metadata": {"name": "addon-agent"}})
    assert sa.metadata.name == "addon-agent" and sa.secrets is None
    core.patch_namespaced_service_account("addon-agent", toy_namespace, {"secrets": [{"name": "a"}]})
    merged = core.patch_namespaced_service_account(
        "addon-agent", toy_namespace, {"secrets": [{"name": "b"}], "automountServiceAccountToken": False},
        _content_type="application/strategic-merge-patch+json",
    )
    assert [s.name for s in merged.secrets] == ["a", "b"]  # merged by name
    assert merged.automount_service_account_token is False
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_service_account(toy_namespace, {"metadata": {"name": "system:nope"}})
    assert _causes(err)[0][:2] == ("FieldValueInvalid", "metadata.name")


def _resources(handle: HubThread, path: str) -> dict[str, dict[str, Any]]:
    resp = http(handle, "GET", path)
    assert resp.status == 200
    return {r["name"]: r for r in json.loads(resp.data)["resources"]}


def test_discovery(toy_hub: HubThread) -> None:
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    rbac = _resources(toy_hub, f"/apis/{RBAC}/v1")
    assert sorted(rbac) == ["clusterrolebindings", "clusterroles", "rolebindings", "roles"]
    assert {name: (r["namespaced"], r["kind"], r["verbs"]) for name, r in rbac.items()} == {
        "clusterrolebindings": (False, "ClusterRoleBinding", verbs),
        "clusterroles": (False, "ClusterRole", verbs),
        "rolebindings": (True, "RoleBinding", verbs),
        "roles": (True, "Role", verbs),
    }
    core = _resources(toy_hub, "/api/v1")
    assert core["serviceaccounts"]["shortNames"] == ["sa"] and core["serviceaccounts"]["verbs"] == verbs
    groups = json.loads(http(toy_hub, "GET", "/apis").data)["groups"]
    assert {"name": RBAC, "versions": [{"groupVersion": f"{RBAC}/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": f"{RBAC}/v1", "version": "v1"}} in groups
    openapi = json.loads(http(toy_hub, "GET", f"/openapi/v3/apis/{RBAC}/v1").data)
    assert "io.k8s.api.rbac.v1.RoleBinding" in openapi["components"]["schemas"]


def test_protobuf_round_trip(toy_hub: HubThread, toy_namespace: str) -> None:
    base = f"/apis/{RBAC}/v1/namespaces/{toy_namespace}"
    rule = ld(2, ld(1, "get"), ld(1, "list"), ld(2, ""), ld(3, "secrets"), ld(4, "hub-kubeconfig"))
    role = envelope(f"{RBAC}/v1", "Role", ld(1, ld(1, "pb-role"), ld(3, toy_namespace)) + rule)
    created = http(toy_hub, "POST", f"{base}/roles", body=role, headers=CLIENT_GO)
    assert created.status == 201, created.data
    assert created.headers["Content-Type"] == PROTOBUF
    api_version, kind, msg = unenvelope(created.data)
    assert (api_version, kind) == (f"{RBAC}/v1", "Role")
    got = parse(one(msg, 2))
    assert [v.decode() for v in got[1] if isinstance(v, bytes)] == ["get", "list"] and text(got, 4) == "hub-kubeconfig"

    binding = (
        ld(1, ld(1, "pb-binding"), ld(3, toy_namespace))
        + ld(2, ld(1, "ServiceAccount"), ld(3, "agent"), ld(4, toy_namespace))
        + ld(2, ld(1, "User"), ld(3, "alice"))
        + ld(3, ld(2, "Role"), ld(3, "pb-role"))
    )
    resp = http(toy_hub, "POST", f"{base}/rolebindings", body=envelope(f"{RBAC}/v1", "RoleBinding", binding), headers=CLIENT_GO)
    assert resp.status == 201, resp.data
    stored = json.loads(http(toy_hub, "GET", f"{base}/rolebindings/pb-binding").data)
    assert stored["roleRef"] == {"apiGroup": RBAC, "kind": "Role", "name": "pb-role"}
    assert stored["subjects"] == [
        {"kind": "ServiceAccount", "name": "agent", "namespace": toy_namespace},
        {"kind": "User", "apiGroup": RBAC, "name": "alice"},
    ]
    listing = http(toy_hub, "GET", f"{base}/rolebindings", headers=CLIENT_GO)
    _, kind, items = unenvelope(listing.data)
    assert kind == "RoleBindingList"
    (item,) = items[2]
    assert isinstance(item, bytes)
    ref = parse(one(parse(item), 3))
    assert (text(ref, 1), text(ref, 2), text(ref, 3)) == (RBAC, "Role", "pb-role")

    sa = envelope("v1", "ServiceAccount", ld(1, ld(1, "pb-sa"), ld(3, toy_namespace)) + ld(3, ld(1, "pull")))
    resp = http(toy_hub, "POST", f"/api/v1/namespaces/{toy_namespace}/serviceaccounts", body=sa, headers=CLIENT_GO)
    assert resp.status == 201, resp.data
    assert text(parse(one(unenvelope(resp.data)[2], 3)), 1) == "pull"
