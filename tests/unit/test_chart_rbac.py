"""The chart's RBAC: least privilege by construction, and the machinery of the measured check."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.controllers.runtime.rbac import (
    Request,
    Rule,
    check,
    exempt_triples,
    load_catalog,
    request_from_http,
    rules_from_objects,
)
from tests.unit.helpers import CHART, template_objects

CATALOG = CHART / "files" / "rbac.yaml"
CONTROLLERS = ("placement", "workset", "addon")
# Every controller on, so that each one's rules are rendered (the add-on manager is off by default).
ALL_ON: dict[str, Any] = {"controllers": {name: {"enabled": True} for name in CONTROLLERS}}
CONTROLLER_LABEL = "ocm-rollout.open-cluster-management.io/controller"

FORBIDDEN_VERBS = {"*", "escalate", "bind", "impersonate", "approve", "sign", "deletecollection"}


def rendered(chart: Any, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return template_objects(chart.render(chart.merge_values(values or {}), name="ocm", namespace="ocm-system"))


def controller_roles(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["labels"][CONTROLLER_LABEL]: o
        for o in objects
        if o["kind"] == "ClusterRole" and CONTROLLER_LABEL in o["metadata"]["labels"]
    }


def test_every_catalog_rule_says_why_it_is_needed() -> None:
    for controller, entries in load_catalog(CATALOG).items():
        for entry in entries:
            assert len(entry.why) > 20, (controller, entry.rule)


def test_no_rule_uses_a_wildcard_or_a_dangerous_verb(chart: Any) -> None:
    for role in controller_roles(rendered(chart)).values():
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] and "*" not in rule["resources"]
            assert not FORBIDDEN_VERBS & set(rule["verbs"]), rule
            assert rule["verbs"], rule


def test_no_rule_touches_pods_secrets_tokens_or_rbac(chart: Any) -> None:
    for role in controller_roles(rendered(chart)).values():
        for rule in role["rules"]:
            for resource in rule["resources"]:
                assert resource.split("/")[0] not in {"pods", "secrets", "serviceaccounts", "roles", "clusterroles",
                                                      "rolebindings", "clusterrolebindings", "tokenrequests"}, rule
                assert not resource.endswith("/token"), rule
            assert "rbac.authorization.k8s.io" not in rule["apiGroups"]


def test_core_api_access_is_limited_to_creating_events(chart: Any) -> None:
    for role in controller_roles(rendered(chart)).values():
        core = [r for r in role["rules"] if "" in r["apiGroups"]]
        assert core == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]


def test_rendered_cluster_roles_are_exactly_the_catalog(chart: Any) -> None:
    catalog = load_catalog(CATALOG)
    roles = controller_roles(rendered(chart, ALL_ON))
    assert sorted(roles) == sorted(CONTROLLERS)
    for controller, role in roles.items():
        expected = [e.rule for e in catalog["common"] + catalog[controller]]
        assert rules_from_objects([role]) == expected


def test_per_controller_service_accounts_hold_only_their_own_role(chart: Any) -> None:
    objects = rendered(chart, {**ALL_ON, "deploymentMode": "perController"})
    bindings = {
        o["roleRef"]["name"]: [s["name"] for s in o["subjects"]] for o in objects if o["kind"] == "ClusterRoleBinding"
    }
    for controller in CONTROLLERS:
        assert bindings[f"ocm-ocm-rollout-{controller}"] == [f"ocm-ocm-rollout-{controller}"]


def test_lease_role_is_namespaced_and_limited_to_its_lease(chart: Any) -> None:
    roles = [o for o in rendered(chart) if o["kind"] == "Role"]
    assert len(roles) == 1
    assert roles[0]["metadata"]["namespace"] == "ocm-system"
    named = [r for r in roles[0]["rules"] if r.get("resourceNames")]
    unnamed = [r for r in roles[0]["rules"] if not r.get("resourceNames")]
    assert named == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                      "resourceNames": ["ocm-ocm-rollout"], "verbs": ["get", "update"]}]
    # create cannot be limited by name (the object does not exist yet).
    assert unnamed == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]}]


# -- the measured check ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/apis/cluster.open-cluster-management.io/v1beta1/placements", {}, Request("list", "cluster.open-cluster-management.io", "placements")),
        ("GET", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/ns/placements", {"watch": "true"},
         Request("watch", "cluster.open-cluster-management.io", "placements")),
        ("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters/c1", {}, Request("get", "cluster.open-cluster-management.io", "managedclusters")),
        ("PATCH", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/ns/placements/p/status", {},
         Request("patch", "cluster.open-cluster-management.io", "placements", "status")),
        ("POST", "/api/v1/namespaces/ns/events", {}, Request("create", "", "events")),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", {}, Request("update", "coordination.k8s.io", "leases")),
        ("DELETE", "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks/w", {}, Request("delete", "work.open-cluster-management.io", "manifestworks")),
        ("DELETE", "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks", {},
         Request("deletecollection", "work.open-cluster-management.io", "manifestworks")),
        ("GET", "/api/v1/namespaces/ns", {}, Request("get", "", "namespaces")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, Request("update", "", "namespaces", "finalize")),
        ("GET", "/apis", {}, None),
        ("GET", "/apis/cluster.open-cluster-management.io/v1beta1", {}, None),
        ("GET", "/version", {}, None),
    ],
)
def test_http_requests_map_to_authorization_attributes(
    method: str, path: str, query: dict[str, str], expected: Request | None
) -> None:
    assert request_from_http(method, path, query) == expected


def test_check_reports_requests_no_rule_grants() -> None:
    rules = [Rule(("g",), ("things",), ("list", "watch"))]
    report = check([Request("list", "g", "things"), Request("patch", "g", "things", "status")], rules)
    assert report.ungranted == [Request("patch", "g", "things", "status")]


def test_check_reports_granted_triples_no_request_used() -> None:
    rules = [Rule(("g",), ("things", "others"), ("list", "delete"))]
    report = check([Request("list", "g", "things")], rules)
    assert report.unused == [Request("delete", "g", "others"), Request("delete", "g", "things"), Request("list", "g", "others")]


def test_check_does_not_call_exempt_permissions_unused() -> None:
    rules = [Rule(("g",), ("things/finalizers",), ("update",))]
    assert check([], rules, exempt={Request("update", "g", "things", "finalizers")}).ok


def test_a_subresource_is_not_granted_by_its_parent_resource() -> None:
    report = check([Request("patch", "g", "things", "status")], [Rule(("g",), ("things",), ("patch",))])
    assert report.ungranted == [Request("patch", "g", "things", "status")]


def test_unmeasured_catalog_rules_are_exempt_for_their_controller_only() -> None:
    catalog = load_catalog(CATALOG)
    placement = exempt_triples(catalog, ["placement"])
    assert Request("update", "cluster.open-cluster-management.io", "placements", "finalizers") in placement
    assert Request("update", "addon.open-cluster-management.io", "clustermanagementaddons", "finalizers") not in placement


def test_report_describes_each_finding_on_its_own_line() -> None:
    report = check([Request("get", "g", "x")], [Rule(("g",), ("y",), ("list",))])
    assert report.describe().splitlines() == ["not granted: get g/x", "granted but unused: list g/y"]
