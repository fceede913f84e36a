"""OpenAPI documents for kubectl.

kubectl (1.27+) reads `/openapi/v3`: it finds each kind's PATCH operation through the
`x-kubernetes-group-version-kind` extension and, because that operation lists the
`fieldValidation` query parameter, leaves schema validation to the server
(`?fieldValidation=Strict`), which the hub implements. The CRD schemas are included as
components so `kubectl explain` works. `/openapi/v2` is served as JSON when asked for JSON, and
as a minimal valid protobuf document (no definitions) when asked for protobuf, which is what
client-go requests; kubectl then falls back to its built-in knowledge of the core kinds. The
protobuf answer carries kube-openapi's content type, which Go's MIME parser accepts (the name
client-go asks for, with an "@", it does not).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from ocm_rollout.sandbox.negotiation import parse_accept
from ocm_rollout.sandbox.resources import ResourceType

OBJECT_META_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
STATUS_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
DELETE_OPTIONS_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
PATCH_REF = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"

_S = {"type": "string"}
_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}

SHARED_SCHEMAS: dict[str, Any] = {
    OBJECT_META_REF: {
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "type": "object",
        "properties": {
            "annotations": _MAP,
            "creationTimestamp": {"type": "string", "format": "date-time"},
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
            "deletionTimestamp": {"type": "string", "format": "date-time"},
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "generateName": _S,
            "generation": {"type": "integer", "format": "int64"},
            "labels": _MAP,
            "name": _S,
            "namespace": _S,
            "ownerReferences": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["apiVersion", "kind", "name", "uid"],
                    "properties": {
                        "apiVersion": _S,
                        "blockOwnerDeletion": {"type": "boolean"},
                        "controller": {"type": "boolean"},
                        "kind": _S,
                        "name": _S,
                        "uid": _S,
                    },
                    "x-kubernetes-map-type": "atomic",
                },
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-list-type": "map",
            },
            "resourceVersion": _S,
            "selfLink": _S,
            "uid": _S,
        },
    },
    LIST_META_REF: {
        "type": "object",
        "properties": {
            "continue": _S,
            "remainingItemCount": {"type": "integer", "format": "int64"},
            "resourceVersion": _S,
            "selfLink": _S,
        },
    },
    STATUS_REF: {
        "type": "object",
        "properties": {
            "apiVersion": _S,
            "code": {"type": "integer", "format": "int32"},
            "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "kind": _S,
            "message": _S,
            "metadata": {"allOf": [{"$ref": f"#/components/schemas/{LIST_META_REF}"}], "default": {}},
            "reason": _S,
            "status": _S,
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
    },
    DELETE_OPTIONS_REF: {
        "type": "object",
        "properties": {
            "apiVersion": _S,
            "dryRun": {"type": "array", "items": _S},
            "gracePeriodSeconds": {"type": "integer", "format": "int64"},
            "kind": _S,
            "orphanDependents": {"type": "boolean"},
            "preconditions": {"type": "object", "properties": {"resourceVersion": _S, "uid": _S}},
            "propagationPolicy": _S,
        },
    },
    PATCH_REF: {"type": "object", "description": "Patch is provided to give a concrete name and type to the request body."},
}


def schema_name(rt: ResourceType, version: str, kind: str | None = None) -> str:
    kind = kind or rt.kind
    if rt.group == "":
        return f"io.k8s.api.core.{version}.{kind}"
    if rt.group.endswith(".k8s.io"):
        return f"io.k8s.api.{rt.group[: -len('.k8s.io')].split('.')[0]}.{version}.{kind}"
    reversed_group = ".".join(reversed(rt.group.split(".")))
    return f"{reversed_group}.{version}.{kind}"


def _with_meta_ref(schema: dict[str, Any] | None, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(schema) if schema else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props: dict[str, Any] = out.setdefault("properties", {})
    props["metadata"] = {"allOf": [{"$ref": f"{prefix}{OBJECT_META_REF}"}], "default": {}}
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    return out


def _param(name: str, where: str, description: str, *, required: bool = False, kind: str = "string") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": where, "description": description, "schema": {"type": kind}}
    if required:
        out["required"] = True
    return out


_QUERY = {
    "dryRun": _param("dryRun", "query", "When present, indicates that modifications should not be persisted."),
    "fieldManager": _param("fieldManager", "query", "A name associated with the actor or entity making the changes."),
    "fieldValidation": _param(
        "fieldValidation",
        "query",
        "How the server handles unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
    ),
    "force": _param("force", "query", "Force is going to force Apply requests.", kind="boolean"),
    "labelSelector": _param("labelSelector", "query", "A selector to restrict the list of returned objects by their labels."),
    "fieldSelector": _param("fieldSelector", "query", "A selector to restrict the list of returned objects by their fields."),
    "limit": _param("limit", "query", "The maximum number of responses to return for a list call.", kind="integer"),
    "continue": _param("continue", "query", "The continue token of a previous list call."),
    "resourceVersion": _param("resourceVersion", "query", "Resource version to start a list or watch from."),
    "watch": _param("watch", "query", "Watch for changes to the described resources.", kind="boolean"),
    "allowWatchBookmarks": _param("allowWatchBookmarks", "query", "Requests watch events with type BOOKMARK.", kind="boolean"),
    "timeoutSeconds": _param("timeoutSeconds", "query", "Timeout for the list/watch call.", kind="integer"),
    "propagationPolicy": _param("propagationPolicy", "query", "Whether and how garbage collection is performed."),
    "gracePeriodSeconds": _param("gracePeriodSeconds", "query", "The duration in seconds before the object should be deleted.", kind="integer"),
}


_LIST_PARAMS = ["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch", "allowWatchBookmarks", "timeoutSeconds"]
_WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"]
_PATCH_MIMES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def _json_content(ref: str) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{ref}"}
    return {mime: {"schema": schema} for mime in ("application/json", "application/yaml")}


def _op(
    rt: ResourceType,
    version: str,
    action: str,
    op_id: str,
    params: list[str],
    *,
    body_ref: str | None = None,
    body_mimes: tuple[str, ...] = ("application/json", "application/yaml"),
    response_ref: str,
    codes: tuple[str, ...] = ("200",),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "tags": [f"{rt.group or 'core'}_{version}"],
        "description": f"{action} {rt.kind}",
        "operationId": op_id,
        "parameters": [_QUERY[p] for p in params],
        "responses": {c: {"description": "OK", "content": _json_content(response_ref)} for c in codes},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": version, "kind": rt.kind},
    }
    op["responses"]["401"] = {"description": "Unauthorized"}
    if body_ref is not None:
        op["requestBody"] = {
            "content": {m: {"schema": {"$ref": f"#/components/schemas/{body_ref}"}} for m in body_mimes},
            "required": True,
        }
    return op


def _read_write(rt: ResourceType, version: str, ident: str, name: str) -> dict[str, Any]:
    """GET, PUT and PATCH of one object (or of its status, with `ident` ending in Status)."""
    return {
        "get": _op(rt, version, "get", f"read{ident}", [], response_ref=name),
        "put": _op(rt, version, "put", f"replace{ident}", _WRITE_PARAMS, body_ref=name, response_ref=name, codes=("200", "201")),
        "patch": _op(rt, version, "patch", f"patch{ident}", [*_WRITE_PARAMS, "force"],
                     body_ref=PATCH_REF, body_mimes=_PATCH_MIMES, response_ref=name, codes=("200", "201")),
    }


def group_version_doc(group: str, version: str, types: list[ResourceType], server_version: str) -> dict[str, Any]:
    """The `/openapi/v3/apis/<group>/<version>` (or `/openapi/v3/api/v1`) document."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = copy.deepcopy(SHARED_SCHEMAS)
    ref_prefix = "#/components/schemas/"
    for rt in sorted(types, key=lambda t: t.plural):
        v = rt.versions[version]
        name = schema_name(rt, version)
        list_name = schema_name(rt, version, rt.list_kind)
        body = _with_meta_ref(v.schema_source, ref_prefix)
        body["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind, "version": version}]
        schemas[name] = body
        schemas[list_name] = {
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": _S,
                "kind": _S,
                "items": {"type": "array", "items": {"$ref": f"{ref_prefix}{name}"}},
                "metadata": {"allOf": [{"$ref": f"{ref_prefix}{LIST_META_REF}"}], "default": {}},
            },
            "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind, "version": version}],
        }
        base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
        scope_params = [_param("namespace", "path", "object name and auth scope", required=True)] if rt.namespaced else []
        ident = rt.kind + ("Namespaced" if rt.namespaced else "")
        collection: dict[str, Any] = {"parameters": scope_params}
        if rt.virtual:
            collection["post"] = _op(rt, version, "post", f"create{ident}", _WRITE_PARAMS,
                                     body_ref=name, response_ref=name, codes=("200", "201"))
            paths[base] = collection
            continue
        collection["get"] = _op(rt, version, "list", f"list{ident}", _LIST_PARAMS, response_ref=list_name)
        collection["post"] = _op(rt, version, "post", f"create{ident}", _WRITE_PARAMS,
                                 body_ref=name, response_ref=name, codes=("200", "201", "202"))
        if "deletecollection" in rt.verbs:
            collection["delete"] = _op(rt, version, "deletecollection", f"deletecollection{ident}",
                                       ["labelSelector", "fieldSelector", "propagationPolicy", "dryRun"],
                                       body_ref=DELETE_OPTIONS_REF, response_ref=STATUS_REF)
        paths[base] = collection
        if rt.namespaced:
            paths[f"{prefix}/{rt.plural}"] = {
                "get": _op(rt, version, "list", f"list{rt.kind}ForAllNamespaces", _LIST_PARAMS, response_ref=list_name)
            }
        item_params = [_param("name", "path", f"name of the {rt.kind}", required=True), *scope_params]
        paths[f"{base}/{{name}}"] = {
            "parameters": item_params,
            **_read_write(rt, version, ident, name),
            "delete": _op(rt, version, "delete", f"delete{ident}", ["dryRun", "gracePeriodSeconds", "propagationPolicy"],
                          body_ref=DELETE_OPTIONS_REF, response_ref=STATUS_REF, codes=("200", "202")),
        }
        for sub in rt.subresources(version):
            if sub != "finalize":  # a namespace's finalize is PUT only, and not in kube's document either
                ops = _read_write(rt, version, f"{ident}{sub.capitalize()}", name)
                paths[f"{base}/{{name}}/{sub}"] = {"parameters": item_params, **ops}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def doc_hash(doc: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()


def v2_json(docs: list[dict[str, Any]], server_version: str) -> dict[str, Any]:
    """A Swagger 2.0 rendering of the v3 documents (definitions only; kubectl does not need paths)."""
    definitions: dict[str, Any] = {}
    for doc in docs:
        for name, schema in doc["components"]["schemas"].items():
            definitions[name] = json.loads(json.dumps(schema).replace("#/components/schemas/", "#/definitions/"))
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": server_version}, "paths": {}, "definitions": definitions}


# What client-go asks for (an "@" is not allowed in a MIME subtype, so Go's mime parser rejects
# it) and what kube-openapi answers for both that and the corrected name.
V2_PROTOBUF_REQUESTED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_OFFERED = (
    ("application/json", "application/json"),
    (V2_PROTOBUF_REQUESTED, V2_PROTOBUF),
    (V2_PROTOBUF, V2_PROTOBUF),
)


def v2_media_type(accept: str | None) -> str | None:
    """The Content-Type `/openapi/v2` answers an Accept header with (None: 406), as
    kube-openapi chooses: the first clause, by preference, that names an offered type."""
    for clause in parse_accept(accept or "*/*"):
        for offered, answer in _V2_OFFERED:
            type_, _, subtype = offered.partition("/")
            if clause.type in (type_, "*") and clause.subtype in (subtype, "*"):
                return answer
    return None


def _field(number: int, payload: bytes) -> bytes:
    key = (number << 3) | 2
    return bytes([key]) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def v2_protobuf(server_version: str) -> bytes:
    """gnostic `openapi.v2.Document{swagger: "2.0", info: {title, version}, paths: {}}`."""
    info = _field(1, b"Kubernetes") + _field(2, server_version.encode())
    return _field(1, b"2.0") + _field(2, info) + _field(8, b"")
