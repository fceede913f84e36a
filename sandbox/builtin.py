"""The built-in kinds the hub serves besides CRDs, with structural schemas and table columns."""

from __future__ import annotations

from typing import Any

from sandbox.resources import Column, ResourceType, Version
from sandbox.table import age_column, age_of, name_column

S: dict[str, Any] = {"type": "string"}
I32: dict[str, Any] = {"type": "integer", "format": "int32"}
I64: dict[str, Any] = {"type": "integer", "format": "int64"}
B: dict[str, Any] = {"type": "boolean"}
STR_MAP: dict[str, Any] = {"type": "object", "additionalProperties": S}
BYTE_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}}
META: dict[str, Any] = {"type": "object"}
ANY_OBJECT: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

OBJECT_REFERENCE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": S,
        "fieldPath": S,
        "kind": S,
        "name": S,
        "namespace": S,
        "resourceVersion": S,
        "uid": S,
    },
}

CONDITION_LIST: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "type": S,
            "status": S,
            "lastTransitionTime": S,
            "reason": S,
            "message": S,
        },
    },
}


def _root(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"apiVersion": S, "kind": S, "metadata": META, **props}}


def _version(name: str, schema: dict[str, Any], columns: list[Column], *, status: bool = False) -> dict[str, Version]:
    return {name: Version(name, schema, storage=True, status=status, columns=columns)}


def _get(obj: dict[str, Any], *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def namespaces() -> ResourceType:
    schema = _root(
        {
            "spec": {"type": "object", "properties": {"finalizers": {"type": "array", "items": S}}},
            "status": {"type": "object", "properties": {"phase": S, "conditions": CONDITION_LIST}},
        }
    )
    columns = [
        name_column(),
        Column("Status", "string", lambda o: _get(o, "status", "phase"), description="The status of the namespace"),
        age_column(),
    ]
    return ResourceType(
        group="",
        plural="namespaces",
        singular="namespace",
        kind="Namespace",
        list_kind="NamespaceList",
        namespaced=False,
        versions=_version("v1", schema, columns, status=True),
        short_names=("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        field_selectors=frozenset({"metadata.name", "status.phase"}),
        extra_subresources=("finalize",),
    )


def _data_count(obj: dict[str, Any]) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def configmaps() -> ResourceType:
    schema = _root({"data": STR_MAP, "binaryData": BYTE_MAP, "immutable": B})
    columns = [name_column(), Column("Data", "string", _data_count), age_column()]
    return ResourceType(
        group="",
        plural="configmaps",
        singular="configmap",
        kind="ConfigMap",
        list_kind="ConfigMapList",
        namespaced=True,
        versions=_version("v1", schema, columns),
        short_names=("cm",),
    )


def secrets() -> ResourceType:
    schema = _root({"data": BYTE_MAP, "stringData": STR_MAP, "type": S, "immutable": B})
    columns = [
        name_column(),
        Column("Type", "string", lambda o: o.get("type")),
        Column("Data", "string", lambda o: len(o.get("data") or {})),
        age_column(),
    ]
    return ResourceType(
        group="",
        plural="secrets",
        singular="secret",
        kind="Secret",
        list_kind="SecretList",
        namespaced=True,
        versions=_version("v1", schema, columns),
        field_selectors=frozenset({"metadata.name", "metadata.namespace", "type"}),
    )


EVENT_FIELDS = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)

SERIES = {"type": "object", "properties": {"count": I32, "lastObservedTime": S}}


def _last_seen(obj: dict[str, Any]) -> str | None:
    stamp = obj.get("lastTimestamp") or _get(obj, "series", "lastObservedTime") or obj.get("eventTime")
    stamp = stamp or obj.get("firstTimestamp") or _get(obj, "metadata", "creationTimestamp")
    return age_of(stamp)


def _involved(ref: Any) -> str:
    if not isinstance(ref, dict):
        return ""
    kind = str(ref.get("kind") or "").lower()
    return f"{kind}/{ref.get('name', '')}" if kind else str(ref.get("name", ""))


def core_events() -> ResourceType:
    schema = _root(
        {
            "involvedObject": OBJECT_REFERENCE,
            "reason": S,
            "message": S,
            "source": {"type": "object", "properties": {"component": S, "host": S}},
            "firstTimestamp": S,
            "lastTimestamp": S,
            "count": I32,
            "type": S,
            "eventTime": S,
            "series": SERIES,
            "action": S,
            "related": OBJECT_REFERENCE,
            "reportingComponent": S,
            "reportingInstance": S,
        }
    )
    columns = [
        Column("Last Seen", "string", _last_seen),
        Column("Type", "string", lambda o: o.get("type")),
        Column("Reason", "string", lambda o: o.get("reason")),
        Column("Object", "string", lambda o: _involved(o.get("involvedObject"))),
        Column("Message", "string", lambda o: o.get("message")),
        Column("Name", "string", lambda o: _get(o, "metadata", "name"), format="name", priority=1),
        Column("Count", "integer", lambda o: o.get("count"), priority=1),
    ]
    return ResourceType(
        group="",
        plural="events",
        singular="event",
        kind="Event",
        list_kind="EventList",
        namespaced=True,
        versions=_version("v1", schema, columns),
        short_names=("ev",),
        field_selectors=EVENT_FIELDS,
        allow_create_on_update=True,
    )


# events.k8s.io/v1 field name -> core/v1 field name
_EVENT_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_EVENT_RENAMES_BACK = {v: k for k, v in _EVENT_RENAMES.items()}


def event_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = {_EVENT_RENAMES.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "v1"
    return out


def event_from_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = {_EVENT_RENAMES_BACK.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "events.k8s.io/v1"
    return out


def new_events() -> ResourceType:
    schema = _root(
        {
            "eventTime": S,
            "series": SERIES,
            "reportingController": S,
            "reportingInstance": S,
            "action": S,
            "reason": S,
            "regarding": OBJECT_REFERENCE,
            "related": OBJECT_REFERENCE,
            "note": S,
            "type": S,
            "deprecatedSource": {"type": "object", "properties": {"component": S, "host": S}},
            "deprecatedFirstTimestamp": S,
            "deprecatedLastTimestamp": S,
            "deprecatedCount": I32,
        }
    )
    columns = [
        Column("Last Seen", "string", lambda o: _last_seen(event_to_core(o))),
        Column("Type", "string", lambda o: o.get("type")),
        Column("Reason", "string", lambda o: o.get("reason")),
        Column("Object", "string", lambda o: _involved(o.get("regarding"))),
        Column("Message", "string", lambda o: o.get("note")),
    ]
    return ResourceType(
        group="events.k8s.io",
        plural="events",
        singular="event",
        kind="Event",
        list_kind="EventList",
        namespaced=True,
        versions=_version("v1", schema, columns),
        short_names=("ev",),
        bucket="/events",
        field_selectors=frozenset(
            {"metadata.name", "metadata.namespace", "regarding.kind", "regarding.name", "regarding.namespace",
             "regarding.uid", "reason", "reportingController", "type"}
        ),
        allow_create_on_update=True,
        to_storage=event_to_core,
        from_storage=event_from_core,
    )


def leases() -> ResourceType:
    schema = _root(
        {
            "spec": {
                "type": "object",
                "properties": {
                    "holderIdentity": S,
                    "leaseDurationSeconds": I32,
                    "acquireTime": S,
                    "renewTime": S,
                    "leaseTransitions": I32,
                    "strategy": S,
                    "preferredHolder": S,
                },
            }
        }
    )
    columns = [
        name_column(),
        Column("Holder", "string", lambda o: _get(o, "spec", "holderIdentity")),
        age_column(),
    ]
    return ResourceType(
        group="coordination.k8s.io",
        plural="leases",
        singular="lease",
        kind="Lease",
        list_kind="LeaseList",
        namespaced=True,
        versions=_version("v1", schema, columns),
    )


RESOURCE_ATTRIBUTES = {
    "type": "object",
    "properties": {
        "namespace": S,
        "verb": S,
        "group": S,
        "version": S,
        "resource": S,
        "subresource": S,
        "name": S,
        "fieldSelector": ANY_OBJECT,
        "labelSelector": ANY_OBJECT,
    },
}
NON_RESOURCE_ATTRIBUTES = {"type": "object", "properties": {"path": S, "verb": S}}
REVIEW_STATUS = {
    "type": "object",
    "properties": {"allowed": B, "denied": B, "reason": S, "evaluationError": S},
}


def _review(plural: str, kind: str, spec: dict[str, Any], namespaced: bool = False) -> ResourceType:
    schema = _root({"spec": spec, "status": REVIEW_STATUS})
    return ResourceType(
        group="authorization.k8s.io",
        plural=plural,
        singular=plural[:-1],
        kind=kind,
        list_kind=f"{kind}List",
        namespaced=namespaced,
        versions=_version("v1", schema, []),
        verbs=("create",),
        virtual=True,
    )


def reviews() -> list[ResourceType]:
    sar_spec = {
        "type": "object",
        "properties": {
            "resourceAttributes": RESOURCE_ATTRIBUTES,
            "nonResourceAttributes": NON_RESOURCE_ATTRIBUTES,
            "user": S,
            "groups": {"type": "array", "items": S},
            "extra": {"type": "object", "additionalProperties": {"type": "array", "items": S}},
            "uid": S,
        },
    }
    self_spec = {
        "type": "object",
        "properties": {"resourceAttributes": RESOURCE_ATTRIBUTES, "nonResourceAttributes": NON_RESOURCE_ATTRIBUTES},
    }
    whoami = ResourceType(
        group="authentication.k8s.io",
        plural="selfsubjectreviews",
        singular="selfsubjectreview",
        kind="SelfSubjectReview",
        list_kind="SelfSubjectReviewList",
        namespaced=False,
        versions=_version("v1", _root({"status": ANY_OBJECT}), []),
        verbs=("create",),
        virtual=True,
    )
    return [
        _review("subjectaccessreviews", "SubjectAccessReview", sar_spec),
        _review("selfsubjectaccessreviews", "SelfSubjectAccessReview", self_spec),
        _review("localsubjectaccessreviews", "LocalSubjectAccessReview", sar_spec, namespaced=True),
        whoami,
    ]


def crds() -> ResourceType:
    schema = _root({"spec": ANY_OBJECT, "status": ANY_OBJECT})
    columns = [
        name_column(),
        Column(
            "Created At",
            "date",
            lambda o: _get(o, "metadata", "creationTimestamp"),
            description="CreationTimestamp is a timestamp representing the server time when this object was created.",
        ),
    ]
    return ResourceType(
        group="apiextensions.k8s.io",
        plural="customresourcedefinitions",
        singular="customresourcedefinition",
        kind="CustomResourceDefinition",
        list_kind="CustomResourceDefinitionList",
        namespaced=False,
        versions=_version("v1", schema, columns, status=True),
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        has_generation=True,
    )


def builtin_types() -> list[ResourceType]:
    return [namespaces(), configmaps(), secrets(), core_events(), new_events(), leases(), *reviews(), crds()]
