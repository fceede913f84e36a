"""The built-in kinds the hub serves besides CRDs, with structural schemas and table columns.

Every kind is served at `v1` only, under Kubernetes' default names: plural `<kind>s` and list
kind `<Kind>List`, both derived from the kind by `_kind`; `builtin_types` is the table of them.
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox import builtin_csr, builtin_rbac
from ocm_rollout.sandbox.builtin_common import (
    ANY_OBJECT,
    BYTE_MAP,
    I32,
    STR_MAP,
    STRING_LIST,
    B,
    S,
)
from ocm_rollout.sandbox.builtin_common import column as _col
from ocm_rollout.sandbox.builtin_common import get_path as _get
from ocm_rollout.sandbox.builtin_common import kind_type as _kind
from ocm_rollout.sandbox.builtin_common import obj as _object
from ocm_rollout.sandbox.resources import Column, ResourceType
from ocm_rollout.sandbox.table import age_column, age_of, name_column

OBJECT_REFERENCE = _object(apiVersion=S, fieldPath=S, kind=S, name=S, namespace=S, resourceVersion=S, uid=S)
CONDITION_LIST: dict[str, Any] = {
    "type": "array",
    "items": _object(type=S, status=S, lastTransitionTime=S, reason=S, message=S),
}
EVENT_SOURCE = _object(component=S, host=S)
SERIES = _object(count=I32, lastObservedTime=S)
RESOURCE_ATTRIBUTES = _object(
    namespace=S, verb=S, group=S, version=S, resource=S, subresource=S, name=S,
    fieldSelector=ANY_OBJECT, labelSelector=ANY_OBJECT,
)
NON_RESOURCE_ATTRIBUTES = _object(path=S, verb=S)
REVIEW_STATUS = _object(allowed=B, denied=B, reason=S, evaluationError=S)
# What the access reviews ask about; SubjectAccessReviews name the subject too.
SELF_REVIEW_SPEC = _object(resourceAttributes=RESOURCE_ATTRIBUTES, nonResourceAttributes=NON_RESOURCE_ATTRIBUTES)
REVIEW_SPEC = _object(
    resourceAttributes=RESOURCE_ATTRIBUTES,
    nonResourceAttributes=NON_RESOURCE_ATTRIBUTES,
    user=S,
    groups=STRING_LIST,
    extra={"type": "object", "additionalProperties": STRING_LIST},
    uid=S,
)


# Events --------------------------------------------------------------------------------------------

CORE_EVENT_PROPS: dict[str, Any] = {
    "involvedObject": OBJECT_REFERENCE,
    "reason": S,
    "message": S,
    "source": EVENT_SOURCE,
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
NEW_EVENT_FIELDS = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "regarding.kind",
        "regarding.name",
        "regarding.namespace",
        "regarding.uid",
        "reason",
        "reportingController",
        "type",
    }
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


# The same fields under their events.k8s.io/v1 names, in that API's order.
NEW_EVENT_PROPS: dict[str, Any] = {
    name: CORE_EVENT_PROPS[_EVENT_RENAMES.get(name, name)]
    for name in (
        "eventTime",
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "regarding",
        "related",
        "note",
        "type",
        "deprecatedSource",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedCount",
    )
}


def event_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = {_EVENT_RENAMES.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "v1"
    return out


def event_from_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = {_EVENT_RENAMES_BACK.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "events.k8s.io/v1"
    return out


def _last_seen(obj: dict[str, Any]) -> str | None:
    stamp = obj.get("lastTimestamp") or _get(obj, "series", "lastObservedTime") or obj.get("eventTime")
    stamp = stamp or obj.get("firstTimestamp") or _get(obj, "metadata", "creationTimestamp")
    return age_of(stamp)


def _involved(obj: dict[str, Any]) -> str:
    ref = obj.get("involvedObject")
    if not isinstance(ref, dict):
        return ""
    kind = str(ref.get("kind") or "").lower()
    return f"{kind}/{ref.get('name', '')}" if kind else str(ref.get("name", ""))


def _event_columns() -> list[Column]:
    """`kubectl get events` columns, computed on the core/v1 form."""
    return [
        Column("Last Seen", "string", _last_seen),
        _col("Type", "type"),
        _col("Reason", "reason"),
        Column("Object", "string", _involved),
        _col("Message", "message"),
    ]


def _on_core_form(column: Column) -> Column:
    """The same column for an events.k8s.io/v1 Event."""
    cell = column.cell
    return Column(column.name, column.type, lambda o: cell(event_to_core(o)))


# The table -----------------------------------------------------------------------------------------


def _controller_of(obj: dict[str, Any]) -> str:
    """``<kind>.<group>/<name>`` of the controller owner, as kubectl shows ControllerRevisions."""
    for ref in _get(obj, "metadata", "ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "").lower()
            return f"{kind}.{group}/{ref.get('name', '')}" if group else f"{kind}/{ref.get('name', '')}"
    return "<none>"


def _data_count(obj: dict[str, Any]) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def builtin_types() -> list[ResourceType]:
    """Fresh ResourceTypes of every built-in kind (each hub has its own)."""
    return [
        _kind(
            "",
            "Namespace",
            {"spec": _object(finalizers=STRING_LIST), "status": _object(phase=S, conditions=CONDITION_LIST)},
            [name_column(), _col("Status", "status.phase", description="The status of the namespace"), age_column()],
            namespaced=False,
            status=True,
            short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            field_selectors=frozenset({"metadata.name", "status.phase"}),
            extra_subresources=("finalize",),
        ),
        _kind(
            "",
            "ConfigMap",
            {"data": STR_MAP, "binaryData": BYTE_MAP, "immutable": B},
            [name_column(), Column("Data", "string", _data_count), age_column()],
            short_names=("cm",),
        ),
        _kind(
            "",
            "Secret",
            {"data": BYTE_MAP, "stringData": STR_MAP, "type": S, "immutable": B},
            [name_column(), _col("Type", "type"), Column("Data", "string", lambda o: len(o.get("data") or {})), age_column()],
            field_selectors=frozenset({"metadata.name", "metadata.namespace", "type"}),
        ),
        _kind(
            "",
            "Event",
            CORE_EVENT_PROPS,
            [
                *_event_columns(),
                _col("Name", "metadata.name", format="name", priority=1),
                _col("Count", "count", "integer", priority=1),
            ],
            short_names=("ev",),
            field_selectors=EVENT_FIELDS,
            allow_create_on_update=True,
        ),
        _kind(
            "events.k8s.io",
            "Event",
            NEW_EVENT_PROPS,
            [_on_core_form(c) for c in _event_columns()],
            short_names=("ev",),
            bucket="/events",
            field_selectors=NEW_EVENT_FIELDS,
            allow_create_on_update=True,
            to_storage=event_to_core,
            from_storage=event_from_core,
        ),
        _kind(
            "coordination.k8s.io",
            "Lease",
            {
                "spec": _object(
                    holderIdentity=S,
                    leaseDurationSeconds=I32,
                    acquireTime=S,
                    renewTime=S,
                    leaseTransitions=I32,
                    strategy=S,
                    preferredHolder=S,
                )
            },
            [name_column(), _col("Holder", "spec.holderIdentity"), age_column()],
            allow_create_on_update=True,
        ),
        _kind(
            "apps",
            "ControllerRevision",
            {"data": {"type": "object", "x-kubernetes-embedded-resource": False,
                      "x-kubernetes-preserve-unknown-fields": True},
             "revision": {"type": "integer", "format": "int64"}},
            [name_column(), Column("Controller", "string", _controller_of), _col("Revision", "revision", "integer"),
             age_column()],
        ),
        *(
            _kind(
                "authorization.k8s.io",
                kind,
                {"spec": spec, "status": REVIEW_STATUS},
                [],
                namespaced=kind.startswith("Local"),
                verbs=("create",),
                virtual=True,
            )
            for kind, spec in (
                ("SubjectAccessReview", REVIEW_SPEC),
                ("SelfSubjectAccessReview", SELF_REVIEW_SPEC),
                ("LocalSubjectAccessReview", REVIEW_SPEC),
            )
        ),
        _kind(
            "authentication.k8s.io",
            "TokenReview",
            {"spec": _object(token=S, audiences=STRING_LIST), "status": ANY_OBJECT},
            [],
            namespaced=False,
            verbs=("create",),
            virtual=True,
        ),
        _kind(
            "authentication.k8s.io",
            "SelfSubjectReview",
            {"status": ANY_OBJECT},
            [],
            namespaced=False,
            verbs=("create",),
            virtual=True,
        ),
        _kind(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            {"spec": ANY_OBJECT, "status": ANY_OBJECT},
            [
                name_column(),
                _col(
                    "Created At",
                    "metadata.creationTimestamp",
                    "date",
                    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
                ),
            ],
            namespaced=False,
            status=True,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            has_generation=True,
        ),
        *builtin_rbac.types(),
        *builtin_csr.types(),
    ]
