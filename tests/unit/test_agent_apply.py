"""A simulated cluster refuses what a real one refuses (ocm_rollout.sandbox.agents.apply, objectnames, kinds)."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.sandbox.agents.apply import ManifestResult, apply_manifests
from ocm_rollout.sandbox.agents.cluster import EMPTY_VIEW, ClusterObject, view_of
from ocm_rollout.sandbox.agents.objectnames import name_errors

SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def manifest(api_version: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


def configmap(name: str = "cm", namespace: str = "default") -> dict[str, Any]:
    return manifest("v1", "ConfigMap", name, namespace)


def namespace(name: str) -> dict[str, Any]:
    return manifest("v1", "Namespace", name)


def crd(plural: str = "widgets", kind: str = "Widget", group: str = "example.com", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group": group,
        "names": {"plural": plural, "kind": kind},
        "scope": "Namespaced",
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ],
    }
    body.update(spec)
    return manifest("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{plural}.{group}", spec=body)


def one(m: dict[str, Any], view: Any = EMPTY_VIEW) -> ManifestResult:
    return apply_manifests([m], view)[0]


# --- kinds -----------------------------------------------------------------------------------------


def test_a_kind_the_cluster_does_not_serve_is_not_applied() -> None:
    result = one(manifest("nothing.example.com/v9", "Ghost", "boo", "default"))
    assert result.error == 'the server doesn\'t have a resource type "Ghost"'
    assert result.obj is None
    assert result.identity.meta["resource"] == ""
    assert (result.identity.meta["group"], result.identity.meta["version"]) == ("nothing.example.com", "v9")


def test_a_version_the_cluster_no_longer_serves_is_not_applied() -> None:
    assert one(manifest("apps/v1beta1", "Deployment", "web", "default")).error == (
        'the server doesn\'t have a resource type "Deployment"'
    )


@pytest.mark.parametrize(
    ("api_version", "kind", "resource"),
    [
        ("v1", "ConfigMap", "configmaps"),
        ("apps/v1", "StatefulSet", "statefulsets"),
        ("batch/v1", "CronJob", "cronjobs"),
        ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
        ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
        ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
        ("coordination.k8s.io/v1", "Lease", "leases"),
    ],
)
def test_built_in_namespaced_kinds_map_to_their_resource(api_version: str, kind: str, resource: str) -> None:
    result = one(manifest(api_version, kind, "x", "default"))
    assert result.error is None
    assert (result.identity.meta["resource"], result.identity.meta["namespace"]) == (resource, "default")


def test_a_cluster_scoped_kind_ignores_its_namespace() -> None:
    result = one(manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", "no-such-namespace"))
    assert result.error is None
    assert result.identity.meta["namespace"] == ""
    assert result.obj == ClusterObject("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", "", "reader")


def test_a_kind_defined_by_a_crd_in_the_same_work_is_applied() -> None:
    results = apply_manifests([manifest("example.com/v1", "Widget", "w", "default"), crd()], EMPTY_VIEW)
    assert [r.error for r in results] == [None, None]
    assert results[0].identity.meta["resource"] == "widgets"
    assert results[1].obj is not None and [r.kind for r in results[1].obj.serves] == ["Widget"]


def test_a_cluster_scoped_custom_kind_drops_the_namespace() -> None:
    results = apply_manifests([crd(scope="Cluster"), manifest("example.com/v1", "Widget", "w", "default")], EMPTY_VIEW)
    assert results[1].error is None and results[1].identity.meta["namespace"] == ""


def test_a_crd_version_that_is_not_served_maps_nothing() -> None:
    unserved = crd(versions=[{"name": "v1", "served": False, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}])
    results = apply_manifests([unserved, manifest("example.com/v1", "Widget", "w", "default")], EMPTY_VIEW)
    assert results[0].error is None
    assert results[1].error == 'the server doesn\'t have a resource type "Widget"'


def test_an_invalid_crd_is_refused_and_defines_nothing() -> None:
    bad = crd()
    bad["metadata"]["name"] = "widgets"
    results = apply_manifests([bad, manifest("example.com/v1", "Widget", "w", "default")], EMPTY_VIEW)
    assert results[0].error == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets" is invalid: '
        'metadata.name: Invalid value: "widgets": must be spec.names.plural+"."+spec.group'
    )
    assert results[1].error == 'the server doesn\'t have a resource type "Widget"'


def test_a_kind_from_a_crd_another_work_applied_is_served() -> None:
    (applied,) = [r.obj for r in apply_manifests([crd()], EMPTY_VIEW)]
    assert applied is not None
    assert one(manifest("example.com/v1", "Widget", "w", "default"), view_of([applied])).error is None


# --- namespaces ------------------------------------------------------------------------------------


def test_an_object_in_a_missing_namespace_is_refused() -> None:
    assert one(configmap(namespace="team")).error == 'namespaces "team" not found'


def test_an_object_in_an_invalid_namespace_is_refused_as_missing() -> None:
    assert one(configmap(namespace="Not_Valid!")).error == 'namespaces "Not_Valid!" not found'


@pytest.mark.parametrize(
    "name",
    ["default", "kube-system", "kube-public", "kube-node-lease", "open-cluster-management-agent",
     "open-cluster-management-agent-addon"],
)  # fmt: skip
def test_the_clusters_own_namespaces_exist(name: str) -> None:
    assert one(configmap(namespace=name)).error is None


def test_a_namespaced_object_without_a_namespace_is_refused() -> None:
    assert one(configmap(namespace=None)).error == "the server does not allow this method on the requested resource"  # type: ignore[arg-type]


def test_a_namespace_created_by_the_same_work_counts_whatever_the_order() -> None:
    results = apply_manifests([configmap(namespace="team"), namespace("team")], EMPTY_VIEW)
    assert [r.error for r in results] == [None, None]


def test_an_invalid_namespace_in_the_same_work_creates_nothing() -> None:
    results = apply_manifests([namespace("Team"), configmap(namespace="Team")], EMPTY_VIEW)
    assert results[0].error == f'Namespace "Team" is invalid: metadata.name: Invalid value: "Team": {LABEL_RULE}'
    assert results[1].error == 'namespaces "Team" not found'


def test_a_namespace_from_another_work_counts() -> None:
    team = ClusterObject("", "Namespace", "namespaces", "", "team")
    assert one(configmap(namespace="team"), view_of([team])).error is None


# --- names ------------------------------------------------------------------------------------------


def test_an_invalid_configmap_name_gets_kube_apiservers_message() -> None:
    assert one(configmap(name="Not_Valid!")).error == (
        f'ConfigMap "Not_Valid!" is invalid: metadata.name: Invalid value: "Not_Valid!": {SUBDOMAIN_RULE}'
    )


def test_an_invalid_name_of_a_grouped_kind_names_the_group() -> None:
    error = one(manifest("apps/v1", "Deployment", "Web", "default")).error
    assert error is not None and error.startswith('Deployment.apps "Web" is invalid: metadata.name: Invalid value: "Web": ')


def test_a_name_too_long_and_malformed_lists_both_causes() -> None:
    name = "X" * 254
    error = one(configmap(name=name)).error
    assert error == (
        f'ConfigMap "{name}" is invalid: [metadata.name: Invalid value: "{name}": must be no more than 253 characters, '
        f'metadata.name: Invalid value: "{name}": {SUBDOMAIN_RULE}]'
    )


def test_a_name_that_cannot_be_a_path_segment_is_refused_by_the_client() -> None:
    assert one(configmap(name="a/b")).error == "invalid resource name \"a/b\": [may not contain '/']"


def test_rbac_names_may_hold_colons() -> None:
    role = manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "open-cluster-management:klusterlet-work:my-role")
    assert one(role).error is None


@pytest.mark.parametrize(
    ("group", "kind", "name", "valid"),
    [
        ("", "Namespace", "a.b", False),
        ("", "Service", "1web", False),
        ("", "Service", "web-1", True),
        ("apps", "StatefulSet", "db.main", False),
        ("apps", "Deployment", "web.main", True),
        ("batch", "CronJob", "c" * 52, True),
        ("batch", "CronJob", "c" * 53, False),
        ("example.com", "Widget", "Upper", False),
    ],
)
def test_name_rules_by_kind(group: str, kind: str, name: str, valid: bool) -> None:
    assert (name_errors(group, kind, name) == []) is valid


def test_a_namespace_name_with_dots_says_so() -> None:
    assert name_errors("", "Namespace", "a.b") == ["must not contain dots"]
