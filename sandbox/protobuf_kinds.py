"""The protobuf messages of the kinds the hub serves, with their field numbers.

Field numbers and types follow the `generated.proto` files of k8s.io/api,
k8s.io/apimachinery and k8s.io/apiextensions-apiserver (Kubernetes 1.35). `KINDS` maps
(apiVersion, kind) to the message of every built-in kind and its list; `STATUS`,
`DELETE_OPTIONS` and the partial-metadata messages are the meta.k8s.io types that travel
around them. `keep=True` marks Go pointers and fields without `omitempty`.
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.protobuf_schema import (
    BOOL,
    BYTES,
    DOUBLE,
    INT32,
    INT64,
    MICROTIME,
    TIME,
    Custom,
    Field,
    MapOf,
    Message,
    decode_message,
    encode_message,
    list_of,
    raw_json,
    string_list,
)
from ocm_rollout.sandbox.protobuf_wire import ProtobufError, bytes_field, fields, varint_field

F = Field

# meta.k8s.io/v1 -----------------------------------------------------------------------------------

FIELDS_V1 = raw_json("FieldsV1")
RAW_EXTENSION = raw_json("RawExtension")

OWNER_REFERENCE = Message("OwnerReference", [
    F(1, "kind"), F(3, "name"), F(4, "uid"), F(5, "apiVersion"),
    F(6, "controller", BOOL, keep=True), F(7, "blockOwnerDeletion", BOOL, keep=True),
])
MANAGED_FIELDS_ENTRY = Message("ManagedFieldsEntry", [
    F(1, "manager"), F(2, "operation"), F(3, "apiVersion"), F(4, "time", TIME), F(6, "fieldsType"),
    F(7, "fieldsV1", FIELDS_V1), F(8, "subresource"),
])
OBJECT_META = Message("ObjectMeta", [
    F(1, "name"), F(2, "generateName"), F(3, "namespace"), F(4, "selfLink"), F(5, "uid"),
    F(6, "resourceVersion"), F(7, "generation", INT64), F(8, "creationTimestamp", TIME),
    F(9, "deletionTimestamp", TIME), F(10, "deletionGracePeriodSeconds", INT64, keep=True),
    F(11, "labels", MapOf("string")), F(12, "annotations", MapOf("string")),
    F(13, "ownerReferences", OWNER_REFERENCE, repeated=True), F(14, "finalizers", repeated=True),
    F(17, "managedFields", MANAGED_FIELDS_ENTRY, repeated=True),
])
LIST_META = Message("ListMeta", [
    F(1, "selfLink"), F(2, "resourceVersion"), F(3, "continue"), F(4, "remainingItemCount", INT64, keep=True),
])
STATUS_CAUSE = Message("StatusCause", [F(1, "reason"), F(2, "message"), F(3, "field")])
STATUS_DETAILS = Message("StatusDetails", [
    F(1, "name"), F(2, "group"), F(3, "kind"), F(6, "uid"), F(4, "causes", STATUS_CAUSE, repeated=True),
    F(5, "retryAfterSeconds", INT32),
])
STATUS = Message("Status", [
    F(1, "metadata", LIST_META), F(2, "status"), F(3, "message"), F(4, "reason"),
    F(5, "details", STATUS_DETAILS), F(6, "code", INT32),
])
PRECONDITIONS = Message("Preconditions", [F(1, "uid", keep=True), F(2, "resourceVersion", keep=True)])
DELETE_OPTIONS = Message("DeleteOptions", [
    F(1, "gracePeriodSeconds", INT64, keep=True), F(2, "preconditions", PRECONDITIONS),
    F(3, "orphanDependents", BOOL, keep=True), F(4, "propagationPolicy", keep=True), F(5, "dryRun", repeated=True),
    F(6, "ignoreStoreReadErrorWithClusterBreakingPotential", BOOL, keep=True),
])
PARTIAL_OBJECT_METADATA = Message("PartialObjectMetadata", [F(1, "metadata", OBJECT_META)])
PARTIAL_OBJECT_METADATA_LIST = list_of(PARTIAL_OBJECT_METADATA, LIST_META)
_REQUIREMENT = [F(1, "key"), F(2, "operator"), F(3, "values", repeated=True)]
FIELD_SELECTOR_REQUIREMENT = Message("FieldSelectorRequirement", list(_REQUIREMENT))
LABEL_SELECTOR_REQUIREMENT = Message("LabelSelectorRequirement", list(_REQUIREMENT))

# core/v1 ------------------------------------------------------------------------------------------

OBJECT_REFERENCE = Message("ObjectReference", [
    F(1, "kind"), F(2, "namespace"), F(3, "name"), F(4, "uid"), F(5, "apiVersion"), F(6, "resourceVersion"),
    F(7, "fieldPath"),
])
EVENT_SOURCE = Message("EventSource", [F(1, "component"), F(2, "host")])
CORE_EVENT_SERIES = Message("EventSeries", [F(1, "count", INT32), F(2, "lastObservedTime", MICROTIME)])
CORE_EVENT = Message("Event", [
    F(1, "metadata", OBJECT_META), F(2, "involvedObject", OBJECT_REFERENCE), F(3, "reason"), F(4, "message"),
    F(5, "source", EVENT_SOURCE), F(6, "firstTimestamp", TIME), F(7, "lastTimestamp", TIME), F(8, "count", INT32),
    F(9, "type"), F(10, "eventTime", MICROTIME), F(11, "series", CORE_EVENT_SERIES), F(12, "action"),
    F(13, "related", OBJECT_REFERENCE), F(14, "reportingComponent"), F(15, "reportingInstance"),
])
CONFIG_MAP = Message("ConfigMap", [
    F(1, "metadata", OBJECT_META), F(2, "data", MapOf("string")), F(3, "binaryData", MapOf(BYTES)),
    F(4, "immutable", BOOL, keep=True),
])
SECRET = Message("Secret", [
    F(1, "metadata", OBJECT_META), F(2, "data", MapOf(BYTES)), F(3, "type"), F(4, "stringData", MapOf("string")),
    F(5, "immutable", BOOL, keep=True),
])
NAMESPACE_CONDITION = Message("NamespaceCondition", [
    F(1, "type"), F(2, "status"), F(4, "lastTransitionTime", TIME), F(5, "reason"), F(6, "message"),
])
NAMESPACE = Message("Namespace", [
    F(1, "metadata", OBJECT_META),
    F(2, "spec", Message("NamespaceSpec", [F(1, "finalizers", repeated=True)])),
    F(3, "status", Message("NamespaceStatus", [
        F(1, "phase"), F(2, "conditions", NAMESPACE_CONDITION, repeated=True),
    ])),
])

LOCAL_OBJECT_REFERENCE = Message("LocalObjectReference", [F(1, "name")])
SERVICE_ACCOUNT = Message("ServiceAccount", [
    F(1, "metadata", OBJECT_META), F(2, "secrets", OBJECT_REFERENCE, repeated=True),
    F(3, "imagePullSecrets", LOCAL_OBJECT_REFERENCE, repeated=True),
    F(4, "automountServiceAccountToken", BOOL, keep=True),
])

# events.k8s.io/v1 ---------------------------------------------------------------------------------

EVENT_SERIES = Message("EventSeries", [F(1, "count", INT32, keep=True), F(2, "lastObservedTime", MICROTIME)])
EVENT = Message("Event", [
    F(1, "metadata", OBJECT_META), F(2, "eventTime", MICROTIME), F(3, "series", EVENT_SERIES),
    F(4, "reportingController"), F(5, "reportingInstance"), F(6, "action"), F(7, "reason"),
    F(8, "regarding", OBJECT_REFERENCE), F(9, "related", OBJECT_REFERENCE), F(10, "note"), F(11, "type"),
    F(12, "deprecatedSource", EVENT_SOURCE), F(13, "deprecatedFirstTimestamp", TIME),
    F(14, "deprecatedLastTimestamp", TIME), F(15, "deprecatedCount", INT32),
])

# coordination.k8s.io/v1 and apps/v1 ---------------------------------------------------------------

LEASE = Message("Lease", [
    F(1, "metadata", OBJECT_META),
    F(2, "spec", Message("LeaseSpec", [
        F(1, "holderIdentity", keep=True), F(2, "leaseDurationSeconds", INT32, keep=True),
        F(3, "acquireTime", MICROTIME), F(4, "renewTime", MICROTIME), F(5, "leaseTransitions", INT32, keep=True),
        F(6, "strategy", keep=True), F(7, "preferredHolder", keep=True),
    ])),
])
CONTROLLER_REVISION = Message("ControllerRevision", [
    F(1, "metadata", OBJECT_META), F(2, "data", RAW_EXTENSION), F(3, "revision", INT64, keep=True),
])

# rbac.authorization.k8s.io/v1 ----------------------------------------------------------------------

LABEL_SELECTOR = Message("LabelSelector", [
    F(1, "matchLabels", MapOf("string")), F(2, "matchExpressions", LABEL_SELECTOR_REQUIREMENT, repeated=True),
])
POLICY_RULE = Message("PolicyRule", [
    F(1, "verbs", repeated=True), F(2, "apiGroups", repeated=True), F(3, "resources", repeated=True),
    F(4, "resourceNames", repeated=True), F(5, "nonResourceURLs", repeated=True),
])
SUBJECT = Message("Subject", [F(1, "kind", keep=True), F(2, "apiGroup"), F(3, "name", keep=True), F(4, "namespace")])
ROLE_REF = Message("RoleRef", [F(1, "apiGroup", keep=True), F(2, "kind", keep=True), F(3, "name", keep=True)])
ROLE = Message("Role", [F(1, "metadata", OBJECT_META), F(2, "rules", POLICY_RULE, repeated=True)])
CLUSTER_ROLE = Message("ClusterRole", [
    F(1, "metadata", OBJECT_META), F(2, "rules", POLICY_RULE, repeated=True),
    F(3, "aggregationRule", Message("AggregationRule", [F(1, "clusterRoleSelectors", LABEL_SELECTOR, repeated=True)])),
])
ROLE_BINDING = Message("RoleBinding", [
    F(1, "metadata", OBJECT_META), F(2, "subjects", SUBJECT, repeated=True), F(3, "roleRef", ROLE_REF),
])
CLUSTER_ROLE_BINDING = Message("ClusterRoleBinding", [
    F(1, "metadata", OBJECT_META), F(2, "subjects", SUBJECT, repeated=True), F(3, "roleRef", ROLE_REF),
])

# certificates.k8s.io/v1 ---------------------------------------------------------------------------

CSR_CONDITION = Message("CertificateSigningRequestCondition", [
    F(1, "type", keep=True), F(6, "status", keep=True), F(2, "reason"), F(3, "message"), F(4, "lastUpdateTime", TIME),
    F(5, "lastTransitionTime", TIME),
])
CERTIFICATE_SIGNING_REQUEST = Message("CertificateSigningRequest", [
    F(1, "metadata", OBJECT_META),
    F(2, "spec", Message("CertificateSigningRequestSpec", [
        F(1, "request", BYTES, keep=True), F(7, "signerName", keep=True), F(8, "expirationSeconds", INT32, keep=True),
        F(5, "usages", repeated=True), F(2, "username"), F(3, "uid"), F(4, "groups", repeated=True),
        F(6, "extra", MapOf(string_list("ExtraValue"))),
    ])),
    F(3, "status", Message("CertificateSigningRequestStatus", [
        F(1, "conditions", CSR_CONDITION, repeated=True), F(2, "certificate", BYTES),
    ])),
])

# authorization.k8s.io/v1 and authentication.k8s.io/v1 ---------------------------------------------

EXTRA_VALUE = string_list("ExtraValue")
RESOURCE_ATTRIBUTES = Message("ResourceAttributes", [
    F(1, "namespace"), F(2, "verb"), F(3, "group"), F(4, "version"), F(5, "resource"), F(6, "subresource"),
    F(7, "name"),
    F(8, "fieldSelector", Message("FieldSelectorAttributes", [
        F(1, "rawSelector"), F(2, "requirements", FIELD_SELECTOR_REQUIREMENT, repeated=True),
    ])),
    F(9, "labelSelector", Message("LabelSelectorAttributes", [
        F(1, "rawSelector"), F(2, "requirements", LABEL_SELECTOR_REQUIREMENT, repeated=True),
    ])),
])
NON_RESOURCE_ATTRIBUTES = Message("NonResourceAttributes", [F(1, "path"), F(2, "verb")])
REVIEW_STATUS = Message("SubjectAccessReviewStatus", [
    F(1, "allowed", BOOL, keep=True), F(4, "denied", BOOL), F(2, "reason"), F(3, "evaluationError"),
])
REVIEW_SPEC = Message("SubjectAccessReviewSpec", [
    F(1, "resourceAttributes", RESOURCE_ATTRIBUTES), F(2, "nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
    F(3, "user"), F(4, "groups", repeated=True), F(5, "extra", MapOf(EXTRA_VALUE)), F(6, "uid"),
])
SELF_REVIEW_SPEC = Message("SelfSubjectAccessReviewSpec", [
    F(1, "resourceAttributes", RESOURCE_ATTRIBUTES), F(2, "nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
])


def _review(kind: str, spec: Message) -> Message:
    return Message(kind, [F(1, "metadata", OBJECT_META), F(2, "spec", spec), F(3, "status", REVIEW_STATUS)])


USER_INFO = Message("UserInfo", [
    F(1, "username"), F(2, "uid"), F(3, "groups", repeated=True), F(4, "extra", MapOf(EXTRA_VALUE)),
])
TOKEN_REVIEW = Message("TokenReview", [
    F(1, "metadata", OBJECT_META),
    F(2, "spec", Message("TokenReviewSpec", [F(1, "token"), F(2, "audiences", repeated=True)])),
    F(3, "status", Message("TokenReviewStatus", [
        F(1, "authenticated", BOOL), F(2, "user", USER_INFO), F(4, "audiences", repeated=True), F(3, "error"),
    ])),
])
SELF_SUBJECT_REVIEW = Message("SelfSubjectReview", [
    F(1, "metadata", OBJECT_META),
    F(2, "status", Message("SelfSubjectReviewStatus", [F(1, "userInfo", USER_INFO)])),
])

# apiextensions.k8s.io/v1 --------------------------------------------------------------------------

JSON_VALUE = raw_json("JSON")
JSON_SCHEMA = Message("JSONSchemaProps")


def _schema_or_array() -> Custom:
    """JSONSchemaPropsOrArray: one schema {1} or a list of them {2}."""

    def enc(value: Any) -> bytes:
        if isinstance(value, list):
            return b"".join(bytes_field(2, encode_message(JSON_SCHEMA, item)) for item in value)
        if isinstance(value, dict):
            return bytes_field(1, encode_message(JSON_SCHEMA, value))
        raise ProtobufError("items: expected a schema or a list of schemas")

    def dec(data: bytes) -> Any:
        one: dict[str, Any] | None = None
        many: list[dict[str, Any]] = []
        for n, _, v in fields(data):
            if isinstance(v, bytes) and n == 1:
                one = decode_message(JSON_SCHEMA, v)
            elif isinstance(v, bytes) and n == 2:
                many.append(decode_message(JSON_SCHEMA, v))
        return many if many else one

    return Custom("JSONSchemaPropsOrArray", enc, dec)


def _schema_or_bool() -> Custom:
    """JSONSchemaPropsOrBool: {1: allows, 2: schema}; a schema means allows=true."""

    def enc(value: Any) -> bytes:
        if isinstance(value, bool):
            return varint_field(1, int(value))
        if isinstance(value, dict):
            return varint_field(1, 1) + bytes_field(2, encode_message(JSON_SCHEMA, value))
        raise ProtobufError("expected a boolean or a schema")

    def dec(data: bytes) -> Any:
        allows = False
        schema: dict[str, Any] | None = None
        for n, _, v in fields(data):
            if n == 1 and isinstance(v, int):
                allows = bool(v)
            elif n == 2 and isinstance(v, bytes):
                schema = decode_message(JSON_SCHEMA, v)
        return schema if schema is not None else allows

    return Custom("JSONSchemaPropsOrBool", enc, dec)


def _schema_or_strings() -> Custom:
    """JSONSchemaPropsOrStringArray: a schema {1} or a list of property names {2}."""

    def enc(value: Any) -> bytes:
        if isinstance(value, list):
            return b"".join(bytes_field(2, str(item).encode()) for item in value)
        if isinstance(value, dict):
            return bytes_field(1, encode_message(JSON_SCHEMA, value))
        raise ProtobufError("expected a schema or a list of strings")

    def dec(data: bytes) -> Any:
        schema: dict[str, Any] | None = None
        names: list[str] = []
        for n, _, v in fields(data):
            if n == 1 and isinstance(v, bytes):
                schema = decode_message(JSON_SCHEMA, v)
            elif n == 2 and isinstance(v, bytes):
                names.append(v.decode("utf-8"))
        return names if names else schema

    return Custom("JSONSchemaPropsOrStringArray", enc, dec)


SCHEMA_OR_BOOL = _schema_or_bool()
VALIDATION_RULE = Message("ValidationRule", [
    F(1, "rule"), F(2, "message"), F(3, "messageExpression"), F(4, "reason", keep=True), F(5, "fieldPath"),
    F(6, "optionalOldSelf", BOOL, keep=True),
])
JSON_SCHEMA.define([
    F(1, "id"), F(2, "$schema"), F(3, "$ref", keep=True), F(4, "description"), F(5, "type"), F(6, "format"),
    F(7, "title"), F(8, "default", JSON_VALUE), F(9, "maximum", DOUBLE, keep=True), F(10, "exclusiveMaximum", BOOL),
    F(11, "minimum", DOUBLE, keep=True), F(12, "exclusiveMinimum", BOOL), F(13, "maxLength", INT64, keep=True),
    F(14, "minLength", INT64, keep=True), F(15, "pattern"), F(16, "maxItems", INT64, keep=True),
    F(17, "minItems", INT64, keep=True), F(18, "uniqueItems", BOOL), F(19, "multipleOf", DOUBLE, keep=True),
    F(20, "enum", JSON_VALUE, repeated=True), F(21, "maxProperties", INT64, keep=True),
    F(22, "minProperties", INT64, keep=True), F(23, "required", repeated=True), F(24, "items", _schema_or_array()),
    F(25, "allOf", JSON_SCHEMA, repeated=True), F(26, "oneOf", JSON_SCHEMA, repeated=True),
    F(27, "anyOf", JSON_SCHEMA, repeated=True), F(28, "not", JSON_SCHEMA), F(29, "properties", MapOf(JSON_SCHEMA)),
    F(30, "additionalProperties", SCHEMA_OR_BOOL), F(31, "patternProperties", MapOf(JSON_SCHEMA)),
    F(32, "dependencies", MapOf(_schema_or_strings())), F(33, "additionalItems", SCHEMA_OR_BOOL),
    F(34, "definitions", MapOf(JSON_SCHEMA)),
    F(35, "externalDocs", Message("ExternalDocumentation", [F(1, "description"), F(2, "url")])),
    F(36, "example", JSON_VALUE), F(37, "nullable", BOOL), F(38, "x-kubernetes-preserve-unknown-fields", BOOL, keep=True),
    F(39, "x-kubernetes-embedded-resource", BOOL), F(40, "x-kubernetes-int-or-string", BOOL),
    F(41, "x-kubernetes-list-map-keys", repeated=True), F(42, "x-kubernetes-list-type", keep=True),
    F(43, "x-kubernetes-map-type", keep=True), F(44, "x-kubernetes-validations", VALIDATION_RULE, repeated=True),
])
CRD_NAMES = Message("CustomResourceDefinitionNames", [
    F(1, "plural", keep=True), F(2, "singular"), F(3, "shortNames", repeated=True), F(4, "kind", keep=True),
    F(5, "listKind"), F(6, "categories", repeated=True),
])
CRD_VERSION = Message("CustomResourceDefinitionVersion", [
    F(1, "name", keep=True), F(2, "served", BOOL, keep=True), F(3, "storage", BOOL, keep=True),
    F(7, "deprecated", BOOL), F(8, "deprecationWarning", keep=True),
    F(4, "schema", Message("CustomResourceValidation", [F(1, "openAPIV3Schema", JSON_SCHEMA)])),
    F(5, "subresources", Message("CustomResourceSubresources", [
        F(1, "status", Message("CustomResourceSubresourceStatus", [])),
        F(2, "scale", Message("CustomResourceSubresourceScale", [
            F(1, "specReplicasPath", keep=True), F(2, "statusReplicasPath", keep=True),
            F(3, "labelSelectorPath", keep=True),
        ])),
    ])),
    F(6, "additionalPrinterColumns", Message("CustomResourceColumnDefinition", [
        F(1, "name", keep=True), F(2, "type", keep=True), F(3, "format"), F(4, "description"),
        F(5, "priority", INT32), F(6, "jsonPath", keep=True),
    ]), repeated=True),
    F(9, "selectableFields", Message("SelectableField", [F(1, "jsonPath", keep=True)]), repeated=True),
])
WEBHOOK_CLIENT_CONFIG = Message("WebhookClientConfig", [
    F(3, "url", keep=True),
    F(1, "service", Message("ServiceReference", [
        F(1, "namespace", keep=True), F(2, "name", keep=True), F(3, "path", keep=True), F(4, "port", INT32, keep=True),
    ])),
    F(2, "caBundle", BYTES),
])
CRD = Message("CustomResourceDefinition", [
    F(1, "metadata", OBJECT_META),
    F(2, "spec", Message("CustomResourceDefinitionSpec", [
        F(1, "group", keep=True), F(3, "names", CRD_NAMES), F(4, "scope", keep=True),
        F(7, "versions", CRD_VERSION, repeated=True),
        F(9, "conversion", Message("CustomResourceConversion", [
            F(1, "strategy", keep=True),
            F(2, "webhook", Message("WebhookConversion", [
                F(2, "clientConfig", WEBHOOK_CLIENT_CONFIG), F(3, "conversionReviewVersions", repeated=True),
            ])),
        ])),
        F(10, "preserveUnknownFields", BOOL),
    ])),
    F(3, "status", Message("CustomResourceDefinitionStatus", [
        F(1, "conditions", Message("CustomResourceDefinitionCondition", [
            F(1, "type"), F(2, "status"), F(3, "lastTransitionTime", TIME), F(4, "reason"), F(5, "message"),
            F(6, "observedGeneration", INT64),
        ]), repeated=True),
        F(2, "acceptedNames", CRD_NAMES), F(3, "storedVersions", repeated=True), F(4, "observedGeneration", INT64),
    ])),
])

# the table ----------------------------------------------------------------------------------------

_OBJECTS: dict[tuple[str, str], Message] = {
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Secret"): SECRET,
    ("v1", "Event"): CORE_EVENT,
    ("events.k8s.io/v1", "Event"): EVENT,
    ("coordination.k8s.io/v1", "Lease"): LEASE,
    ("apps/v1", "ControllerRevision"): CONTROLLER_REVISION,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): CERTIFICATE_SIGNING_REQUEST,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): CRD,
}
_CREATE_ONLY: dict[tuple[str, str], Message] = {
    ("authorization.k8s.io/v1", "SubjectAccessReview"): _review("SubjectAccessReview", REVIEW_SPEC),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): _review("LocalSubjectAccessReview", REVIEW_SPEC),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _review("SelfSubjectAccessReview", SELF_REVIEW_SPEC),
    ("authentication.k8s.io/v1", "SelfSubjectReview"): SELF_SUBJECT_REVIEW,
    ("authentication.k8s.io/v1", "TokenReview"): TOKEN_REVIEW,
}

KINDS: dict[tuple[str, str], Message] = {
    **_OBJECTS,
    **{(api_version, f"{kind}List"): list_of(message, LIST_META) for (api_version, kind), message in _OBJECTS.items()},
    **_CREATE_ONLY,
    ("v1", "Status"): STATUS,
    **{
        (f"meta.k8s.io/{v}", kind): message
        for v in ("v1", "v1beta1")
        for kind, message in (("PartialObjectMetadata", PARTIAL_OBJECT_METADATA),
                              ("PartialObjectMetadataList", PARTIAL_OBJECT_METADATA_LIST))
    },
}
