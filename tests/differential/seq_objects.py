"""Sequences on single objects: create, get, update, delete, generateName, finalizers,
owner references and garbage collection, the status subresource, generation, preconditions and
the four patch types."""

from __future__ import annotations

import copy
from typing import Any

from tests.differential.engine import Answer, Answers, Sequence, Step
from tests.differential.kinds import ALL, BUILTINS, CRDS, SPEC_CHANGES, Kind, by_plural

JSON = Any
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _id(text: str) -> str:
    return text.replace(".", "-").replace("_", "-").lower()[:55].rstrip("-")


def body_of(index: int) -> Any:
    """The body of answer ``index``."""
    return lambda answers: answers[index].body


def rv_of(index: int) -> Any:
    return lambda answers: answers[index].rv()


def gone(answer: Answer) -> bool:
    return answer.status == 404


def crud(kind: Kind) -> Sequence:
    name = kind.name("obj")
    return Sequence(f"crud-{_id(kind.label)}", "crud", [
        Step("POST", kind.collection(), kind.body(name)),
        Step("POST", kind.collection(), kind.body(name)),  # 409 AlreadyExists
        Step("GET", kind.path(name)),
        Step("GET", kind.collection(), query={"fieldSelector": f"metadata.name={name}"}),
        Step("PUT", kind.path(name), lambda a: kind.changed(a[2].body)),
        Step("PUT", kind.path(name), lambda a: kind.changed(a[2].body)),  # stale resourceVersion: 409
        Step("PUT", kind.path(name), lambda a: {**kind.changed(a[2].body), "metadata": {
            **a[2].body["metadata"], "name": "other"}}),  # name in body differs from the path
        Step("DELETE", kind.path(name)),
        Step("GET", kind.path(name)),
        Step("DELETE", kind.path(name)),
        Step("PUT", kind.path("missing"), kind.body("missing")),  # update of a missing object
    ])


def generate_name(kind: Kind) -> Sequence:
    return Sequence(f"generatename-{_id(kind.label)}", "crud", [
        Step("POST", kind.collection(), lambda a: {**kind.body(""), "metadata": {"generateName": "gen-"}}),
        Step("GET", lambda a: kind.path(a[0].body["metadata"]["name"])),
        Step("POST", kind.collection(), lambda a: {**kind.body(""), "metadata": {}}),  # neither name nor generateName
        Step("POST", kind.collection(), lambda a: {**kind.body("Bad_Name")}),
    ])


def finalizers(kind: Kind) -> Sequence:
    name = kind.name("held")
    return Sequence(f"finalizers-{_id(kind.label)}", "crud", [
        Step("POST", kind.collection(), kind.body(name, finalizers=["example.com/hold"])),
        Step("DELETE", kind.path(name)),
        Step("GET", kind.path(name)),  # deletionTimestamp set, still there
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"after": "delete"}}}, content_type=MERGE),
        Step("PATCH", kind.path(name), {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}, content_type=MERGE),
        Step("PATCH", kind.path(name), {"metadata": {"finalizers": None}}, content_type=MERGE),
        Step("GET", kind.path(name), until=gone),
    ])


def owners(propagation: str) -> Sequence:
    owner = by_plural("configmaps")
    dependent = by_plural("secrets")
    return Sequence(f"gc-{propagation.lower()}", "crud", [
        Step("POST", owner.collection(), owner.body("owner")),
        Step("POST", dependent.collection(), lambda a: {**dependent.body("dependent"), "metadata": {
            "name": "dependent", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                      "uid": a[0].body["metadata"]["uid"]}]}}),
        Step("DELETE", owner.path("owner"), {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}),
        Step("GET", owner.path("owner"), until=gone),
        Step("GET", dependent.path("dependent"),
             until=(gone if propagation != "Orphan" else (lambda r: not r.body.get("metadata", {}).get("ownerReferences")))),
    ])


def status_subresource(kind: Kind) -> Sequence:
    name = kind.name("st")

    def with_status(answers: Answers) -> JSON:
        obj = copy.deepcopy(answers[0].body)
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Test", "message": "m",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        return obj

    return Sequence(f"status-{_id(kind.label)}", "status", [
        Step("POST", kind.collection(), kind.body(name)),
        Step("PUT", kind.path(name) + "/status", with_status),  # status written, spec ignored
        Step("GET", kind.path(name)),
        Step("PUT", kind.path(name), lambda a: {**with_status(a), "metadata": a[2].body["metadata"]}),  # status ignored on main
        Step("PATCH", kind.path(name) + "/status", {"metadata": {"labels": {"via": "status"}}, "status": {"conditions": []}},
             content_type=MERGE),
        Step("GET", kind.path(name) + "/status"),
        Step("PATCH", kind.path("missing") + "/status", {"status": {}}, content_type=MERGE),
    ])


def generation(kind: Kind) -> Sequence:
    name = kind.name("gen")
    change = SPEC_CHANGES[kind.plural]
    return Sequence(f"generation-{_id(kind.label)}", "status", [
        Step("POST", kind.collection(), kind.body(name)),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"only": "metadata"}}}, content_type=MERGE),
        Step("PATCH", kind.path(name), {"spec": change}, content_type=MERGE),
        Step("PATCH", kind.path(name), {"spec": change}, content_type=MERGE),  # no change: same generation
        Step("PUT", kind.path(name) + "/status", lambda a: {**a[3].body, "spec": kind.spec}),  # spec ignored
    ])


def preconditions(kind: Kind) -> Sequence:
    name = kind.name("pre")
    return Sequence(f"preconditions-{_id(kind.label)}", "status", [
        Step("POST", kind.collection(), kind.body(name)),
        Step("PATCH", kind.path(name), lambda a: {"metadata": {"resourceVersion": a[0].rv(), "labels": {"x": "1"}}},
             content_type=MERGE),
        Step("PATCH", kind.path(name), lambda a: {"metadata": {"resourceVersion": a[0].rv(), "labels": {"x": "2"}}},
             content_type=MERGE),  # stale: 409
        Step("DELETE", kind.path(name), lambda a: {"kind": "DeleteOptions", "apiVersion": "v1",
                                                   "preconditions": {"resourceVersion": a[0].rv()}}),
        Step("DELETE", kind.path(name), lambda a: {"kind": "DeleteOptions", "apiVersion": "v1",
                                                   "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        Step("DELETE", kind.path(name), lambda a: {"kind": "DeleteOptions", "apiVersion": "v1",
                                                   "preconditions": {"uid": a[0].body["metadata"]["uid"],
                                                                     "resourceVersion": a[1].rv()}}),
    ])


def patches(kind: Kind) -> Sequence:
    name = kind.name("patched")
    steps = [
        Step("POST", kind.collection(), kind.body(name, labels={"a": "1", "b": "2"})),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"a": None, "c": "3"}}}, content_type=MERGE),
        Step("PATCH", kind.path(name), [{"op": "add", "path": "/metadata/labels/d", "value": "4"},
                                        {"op": "remove", "path": "/metadata/labels/b"}], content_type=JSON_PATCH),
        Step("PATCH", kind.path(name), [{"op": "test", "path": "/metadata/labels/d", "value": "no"}], content_type=JSON_PATCH),
        Step("PATCH", kind.path(name), [{"op": "remove", "path": "/metadata/labels/missing"}], content_type=JSON_PATCH),
        Step("PATCH", kind.path(name), [{"op": "bogus", "path": "/x"}], content_type=JSON_PATCH),
        Step("PATCH", kind.path(name), "{not json", content_type=MERGE),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"e": "5"}}}, content_type=STRATEGIC),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"f": "6"}}}, content_type="text/plain"),
        Step("PATCH", kind.path("missing"), {"metadata": {"labels": {"a": "1"}}}, content_type=MERGE),
        Step("GET", kind.path(name)),
    ]
    return Sequence(f"patch-{_id(kind.label)}", "patch", steps)


def apply(kind: Kind) -> Sequence:
    name = kind.name("applied")
    applied = kind.body(name, labels={"owner": "one"})
    query_one = {"fieldManager": "one"}
    query_two = {"fieldManager": "two"}
    return Sequence(f"apply-{_id(kind.label)}", "patch", [
        Step("PATCH", kind.path(name), applied, query=query_one, content_type=APPLY),  # create by apply
        Step("PATCH", kind.path(name), {**applied, "metadata": {"name": name, "labels": {"owner": "two"}}},
             query=query_two, content_type=APPLY),  # conflict
        Step("PATCH", kind.path(name), {**applied, "metadata": {"name": name, "labels": {"owner": "two"}}},
             query={**query_two, "force": "true"}, content_type=APPLY),
        Step("PATCH", kind.path(name), applied, content_type=APPLY),  # no fieldManager: 400
        Step("PATCH", kind.path(name), {**applied, "metadata": {"name": name}}, query=query_one, content_type=APPLY),
        Step("GET", kind.path(name)),
        Step("PATCH", kind.path(name), {"metadata": {"labels": {"by": "merge"}}}, query={"fieldManager": "merger"},
             content_type=MERGE),
        Step("GET", kind.path(name)),
    ])


def apply_list_map() -> Sequence:
    """Server-side apply of a list-map (a ManifestWork's manifestConfigs, keyed by resourceIdentifier)
    by two managers, and of a Role's atomic rules."""
    work = by_plural("manifestworks")

    def config(resource: str, name: str, manager_field: str) -> JSON:
        return {"resourceIdentifier": {"group": "", "resource": resource, "name": name, "namespace": "default"},
                "feedbackRules": [{"type": manager_field}]}

    def spec(*configs: JSON) -> JSON:
        return {**work.body("listmap"), "spec": {"workload": {"manifests": []}, "manifestConfigs": list(configs)}}

    return Sequence("apply-list-map-manifestworks", "patch", [
        Step("PATCH", work.path("listmap"), spec(config("configmaps", "a", "WellKnownStatus")),
             query={"fieldManager": "one"}, content_type=APPLY),
        Step("PATCH", work.path("listmap"), spec(config("configmaps", "b", "WellKnownStatus")),
             query={"fieldManager": "two"}, content_type=APPLY),
        Step("PATCH", work.path("listmap"), spec(config("configmaps", "a", "JSONPaths")),
             query={"fieldManager": "two"}, content_type=APPLY),  # conflict on one's item
        Step("GET", work.path("listmap")),
    ])


def apply_status(kind: Kind) -> Sequence:
    name = kind.name("apstatus")
    status = {"conditions": [{"type": "Ready", "status": "True", "reason": "R", "message": "m",
                              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return Sequence(f"apply-status-{_id(kind.label)}", "patch", [
        Step("POST", kind.collection(), kind.body(name)),
        Step("PATCH", kind.path(name) + "/status", {"apiVersion": kind.api_version, "kind": kind.kind,
                                                    "metadata": {"name": name}, "status": status},
             query={"fieldManager": "status-writer"}, content_type=APPLY),
        Step("PATCH", kind.path(name), {"apiVersion": kind.api_version, "kind": kind.kind,
                                        "metadata": {"name": name}, "status": {"conditions": []}},
             query={"fieldManager": "main-writer"}, content_type=APPLY),  # status ignored on the main resource
        Step("GET", kind.path(name)),
    ])


def _status_kinds() -> list[Kind]:
    return [k for k in CRDS if k.status]


def sequences() -> list[Sequence]:
    out: list[Sequence] = []
    out += [crud(k) for k in ALL]
    out += [generate_name(k) for k in ALL]
    out += [finalizers(k) for k in BUILTINS[:2] + CRDS]
    out += [owners(p) for p in ("Background", "Foreground", "Orphan")]
    out += [status_subresource(k) for k in _status_kinds()]
    out += [generation(k) for k in CRDS if k.plural in SPEC_CHANGES and k.status]
    out += [preconditions(k) for k in BUILTINS[:1] + CRDS]
    out += [patches(k) for k in BUILTINS[:2] + CRDS]
    out += [apply(k) for k in BUILTINS[:2] + CRDS]
    out += [apply_list_map()]
    out += [apply_status(k) for k in _status_kinds()[:4]]
    return out
