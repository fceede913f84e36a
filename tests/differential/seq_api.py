"""Sequences on validation (schema errors, CEL rules, defaults, pruning and its warnings,
ratcheting, the request size limit, dryRun), conversion between served versions, discovery and
OpenAPI documents, RBAC and the review APIs, and the table content type."""

from __future__ import annotations

import copy
from typing import Any

from tests.differential.engine import Sequence, Step
from tests.differential.kinds import CRDS, Kind, by_plural
from tests.differential.seq_objects import MERGE, _id

JSON = Any
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

MWRS = by_plural("manifestworkreplicasets")
PLACEMENT = by_plural("placements")
CMA_V1A1 = by_plural("clustermanagementaddons", "v1alpha1")
CMA_V1B1 = by_plural("clustermanagementaddons", "v1beta1")
MCA_V1A1 = by_plural("managedclusteraddons", "v1alpha1")
MCA_V1B1 = by_plural("managedclusteraddons", "v1beta1")
ADC_V1A1 = by_plural("addondeploymentconfigs", "v1alpha1")
ADC_V1B1 = by_plural("addondeploymentconfigs", "v1beta1")
WORK = by_plural("manifestworks")
CLUSTER = by_plural("managedclusters")


def _with_spec(kind: Kind, name: str, spec: JSON, **extra: Any) -> JSON:
    body = kind.body(name)
    body["spec"] = spec
    body.update(extra)
    return body


def invalid(kind: Kind, label: str, spec: JSON) -> Sequence:
    name = kind.name("bad")
    return Sequence(f"invalid-{_id(kind.label)}-{label}", "validation", [
        Step("POST", kind.collection(), _with_spec(kind, name, spec)),
        Step("POST", kind.collection(), _with_spec(kind, name, spec), query={"dryRun": "All"}),
    ])


def _mwrs_spec(strategy: JSON) -> JSON:
    return {"cascadeDeletionPolicy": "Background", "placementRefs": [{"name": "p", "rolloutStrategy": strategy}],
            "manifestWorkTemplate": {"workload": {"manifests": []}}}


INVALID: list[tuple[Kind, str, JSON]] = [
    (PLACEMENT, "negative-clusters", {"numberOfClusters": -1}),
    (PLACEMENT, "string-clusters", {"numberOfClusters": "two"}),
    (PLACEMENT, "no-coordinate", {"prioritizerPolicy": {"configurations": [{"weight": 2}]}}),
    (PLACEMENT, "bad-mode", {"prioritizerPolicy": {"mode": "Sometimes"}}),
    (PLACEMENT, "bad-percent", {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "1e400%"}}}),
    (PLACEMENT, "spec-not-object", "text"),
    (MWRS, "missing-placementrefs", {"cascadeDeletionPolicy": "Background"}),
    (MWRS, "bad-type", _mwrs_spec({"type": "Sometimes"})),
    (MWRS, "rollouttype-mismatch", _mwrs_spec({"type": "All", "rolloutType": "Progressive"})),
    (MWRS, "check-both", _mwrs_spec({"type": "All", "validation": {"checks": [{"name": "c",
        "feedback": {"successCondition": "true"}, "metric": {"provider": {"address": "http://x"}, "query": "q",
                                                             "successCondition": "true"}}]}})),
    (MWRS, "metric-count", _mwrs_spec({"type": "All", "validation": {"checks": [{"name": "c", "metric": {
        "provider": {"address": "http://x"}, "query": "q", "successCondition": "true", "count": 3}}]}})),
    (MWRS, "bad-policy", {**_mwrs_spec({"type": "All"}), "cascadeDeletionPolicy": "Never"}),
    (MWRS, "many-errors", {"cascadeDeletionPolicy": "Never", "placementRefs": [{"rolloutStrategy": {"type": "X"}}]}),
    (CMA_V1A1, "bad-default", {"supportedConfigs": [{"group": "g", "resource": "r",
                                                     "defaultConfig": {"name": "__reserved_no_default__"}}]}),
    (CMA_V1B1, "bad-strategy", {"installStrategy": {"type": "Sometimes"}}),
    (CLUSTER, "bad-url", {"managedClusterClientConfigs": [{"url": 5}]}),
    (WORK, "cel-condition", {"workload": {"manifests": []}, "manifestConfigs": [{"resourceIdentifier": {
        "resource": "configmaps", "name": "a", "namespace": "b"}, "conditionRules": [{"type": "CEL", "condition": ""}]}]}),
]


def defaults_and_pruning(kind: Kind, spec: JSON) -> Sequence:
    name = kind.name("defaults")
    body = _with_spec(kind, name, {**copy.deepcopy(spec), "unknownField": 1}, unknownTop={"x": 1})
    return Sequence(f"defaults-pruning-{_id(kind.label)}", "validation", [
        Step("POST", kind.collection(), body, query={"dryRun": "All"}),
        Step("POST", kind.collection(), body),
        Step("POST", kind.collection(), body, query={"fieldValidation": "Strict"}),
        Step("POST", kind.collection(), body, query={"fieldValidation": "Ignore"}),
        Step("POST", kind.collection(), body, query={"fieldValidation": "Bogus"}),
        Step("GET", kind.path(name)),
        Step("GET", kind.collection(), query={"labelSelector": "none"}),
    ])


def ratcheting() -> Sequence:
    """An object stored before a rule existed: updates that leave the invalid part alone pass."""
    return Sequence("ratcheting-placements", "validation", [
        Step("POST", PLACEMENT.collection(), _with_spec(PLACEMENT, "r", {"numberOfClusters": 2})),
        Step("PATCH", PLACEMENT.path("r"), {"spec": {"numberOfClusters": -5}}, content_type=MERGE),
        Step("PATCH", PLACEMENT.path("r"), {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE),
        Step("PATCH", PLACEMENT.path("r"), {"spec": {"prioritizerPolicy": {"mode": "Never"}}}, content_type=MERGE),
        Step("GET", PLACEMENT.path("r")),
    ])


def too_large() -> Sequence:
    big = "x" * (3 * 1024 * 1024 + 10)
    configmaps = by_plural("configmaps")
    return Sequence("request-too-large", "validation", [
        Step("POST", configmaps.collection(), {**configmaps.body("big"), "data": {"a": big}}),
        Step("POST", configmaps.collection(), {**configmaps.body("big"), "data": {"a": "x" * (1024 * 1024 + 10)}}),
        Step("POST", ADC_V1A1.collection(), _with_spec(ADC_V1A1, "big", {"customizedVariables": [
            {"name": "V", "value": "x" * (1024 * 1024 + 10)}]})),
    ])


def dry_run() -> Sequence:
    configmaps = by_plural("configmaps")
    return Sequence("dry-run", "validation", [
        Step("POST", configmaps.collection(), configmaps.body("dry"), query={"dryRun": "All"}),
        Step("GET", configmaps.path("dry")),
        Step("POST", configmaps.collection(), configmaps.body("dry")),
        Step("PATCH", configmaps.path("dry"), {"data": {"b": "2"}}, query={"dryRun": "All"}, content_type=MERGE),
        Step("DELETE", configmaps.path("dry"), query={"dryRun": "All"}),
        Step("GET", configmaps.path("dry")),
        Step("POST", configmaps.collection(), configmaps.body("dry2"), query={"dryRun": "Some"}),
    ])


def conversion(write: Kind, read: Kind, spec: JSON, label: str) -> Sequence:
    name = write.name("conv")
    return Sequence(f"conversion-{label}", "conversion", [
        Step("POST", write.collection(), _with_spec(write, name, spec)),
        Step("GET", read.path(name)),
        Step("GET", read.collection()),
        Step("PATCH", read.path(name), {"metadata": {"labels": {"via": read.version}}}, content_type=MERGE),
        Step("GET", write.path(name)),
        Step("WATCH", read.collection(), query=lambda a: {"resourceVersion": a[0].rv()}, events=1),
    ])


CONVERSIONS = [
    (CMA_V1A1, CMA_V1B1, {"supportedConfigs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                                                "defaultConfig": {"name": "d", "namespace": "n"}}],
                          "installStrategy": {"type": "Manual"}}, "cma-v1alpha1-to-v1beta1"),
    (CMA_V1B1, CMA_V1A1, {"defaultConfigs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                                              "name": "d", "namespace": "n"}]}, "cma-v1beta1-to-v1alpha1"),
    (MCA_V1A1, MCA_V1B1, {"installNamespace": "custom", "configs": [{"group": "g", "resource": "r", "name": "n"}]},
     "mca-v1alpha1-to-v1beta1"),
    (MCA_V1B1, MCA_V1A1, {"configs": [{"group": "g", "resource": "r", "name": "n"}]}, "mca-v1beta1-to-v1alpha1"),
    (ADC_V1A1, ADC_V1B1, {"customizedVariables": [{"name": "V", "value": "1"}], "agentInstallNamespace": "x"},
     "adc-v1alpha1-to-v1beta1"),
    (ADC_V1B1, ADC_V1A1, {"customizedVariables": [{"name": "V", "value": "1"}]}, "adc-v1beta1-to-v1alpha1"),
]


def discovery() -> list[Sequence]:
    out = [Sequence("discovery-root", "discovery", [
        Step("GET", "/api"),
        Step("GET", "/api/v1", compare=False),
        Step("GET", "/apis/nonexistent.example.com/v1"),
        Step("GET", "/apis/nonexistent.example.com/v1/things"),
        Step("GET", "/api/v1/nonexistents"),
    ])]
    for group, versions in sorted({(k.group, tuple(sorted({v.version for v in CRDS if v.group == k.group}))) for k in CRDS}):
        steps = [Step("GET", f"/apis/{group}")]
        steps += [Step("GET", f"/apis/{group}/{version}") for version in versions]
        steps += [Step("GET", f"/openapi/v3/apis/{group}/{version}") for version in versions]
        out.append(Sequence(f"discovery-{group.split('.')[0]}", "discovery", steps))
    return out


def rbac() -> list[Sequence]:
    configmaps = by_plural("configmaps")
    roles = by_plural("roles")
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}
    reader = {**roles.body("reader"), "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["placements"], "verbs": ["get"]},
        {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["placements/status"], "verbs": ["patch"]}]}
    setup = [
        Step("POST", roles.collection(), reader, compare=False),
        Step("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", binding, compare=False),
        Step("POST", configmaps.collection(), configmaps.body("visible"), compare=False),
        Step("POST", PLACEMENT.collection(), _with_spec(PLACEMENT, "p", {}), compare=False),
    ]

    def review(user: str, verb: str, resource: str, group: str = "", subresource: str = "", name: str = "") -> Step:
        attributes = {"namespace": "{ns}", "verb": verb, "group": group, "resource": resource, "subresource": subresource,
                      "name": name}
        return Step("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                    {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                     "spec": {"resourceAttributes": attributes}}, user=user)

    return [
        Sequence("rbac-allowed-and-forbidden", "rbac", [*setup,
            Step("GET", configmaps.path("visible"), user="alice"),
            Step("GET", configmaps.collection(), user="alice"),
            Step("DELETE", configmaps.path("visible"), user="alice"),
            Step("POST", configmaps.collection(), configmaps.body("new"), user="alice"),
            Step("GET", configmaps.path("visible"), user="bob"),
            Step("GET", "/api/v1/configmaps", user="alice"),
            Step("GET", PLACEMENT.path("p"), user="alice"),
            Step("GET", PLACEMENT.collection(), user="alice"),
            Step("PATCH", PLACEMENT.path("p") + "/status", {"status": {}}, content_type=MERGE, user="alice"),
            Step("PATCH", PLACEMENT.path("p"), {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE, user="alice"),
            Step("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", user="alice"),
        ], users=("alice", "bob")),
        Sequence("rbac-selfsubjectaccessreview", "rbac", [*setup,
            review("alice", "get", "configmaps"),
            review("alice", "delete", "configmaps"),
            review("bob", "get", "configmaps"),
            review("alice", "patch", "placements", "cluster.open-cluster-management.io", "status"),
            review("alice", "update", "placements", "cluster.open-cluster-management.io", "status"),
            review("admin", "delete", "managedclusters", "cluster.open-cluster-management.io"),
        ], users=("alice", "bob")),
        Sequence("rbac-selfsubjectreview", "rbac", [
            Step("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                 {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, user="alice"),
        ], users=("alice",)),
        Sequence("rbac-tokenreview-bad-token", "rbac", [
            Step("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                 {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "not-a-token"}}),
        ]),
    ]


def tables() -> list[Sequence]:
    out = []
    for kind in [by_plural("configmaps"), PLACEMENT, MWRS, CLUSTER, MCA_V1A1, CMA_V1B1]:
        name = kind.name("t")
        out.append(Sequence(f"table-{_id(kind.label)}", "content-types", [
            Step("POST", kind.collection(), kind.body(name), compare=False),
            Step("GET", kind.path(name), accept=TABLE),
            Step("GET", kind.collection(), accept=TABLE, query={"fieldSelector": f"metadata.name={name}"}),
            Step("GET", kind.collection(), accept=TABLE, query={"fieldSelector": f"metadata.name={name}", "includeObject": "None"}),
            Step("GET", kind.path(name), accept="application/yaml"),
            Step("GET", kind.path(name), accept="text/html"),
        ]))
    return out


def sequences() -> list[Sequence]:
    out = [invalid(kind, label, spec) for kind, label, spec in INVALID]
    out += [defaults_and_pruning(k, k.spec or {}) for k in (PLACEMENT, MWRS, CMA_V1B1, WORK, CLUSTER, ADC_V1A1)]
    out += [ratcheting(), too_large(), dry_run()]
    out += [conversion(*c) for c in CONVERSIONS]
    out += discovery()
    out += rbac()
    out += tables()
    return out
