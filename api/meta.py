"""Shared building blocks of every OCM model.

- ``OCMModel``: the base of every model. Python attributes are snake_case, the wire form is OCM's
  camelCase (``alias``); objects can be built with either spelling. Serialise with
  ``model.to_wire()`` (the same as ``model_dump(by_alias=True, exclude_none=True, mode="json")``).
  Like Go's ``omitempty``, ``None``, and the empty lists and maps of optional fields, are left
  out; required fields and the few optional ones OCM always writes (a class's
  ``__keep_empty__``) are kept.
- Unknown fields: typed models ignore fields they do not know (the way an API server prunes
  them); ``ObjectMeta`` keeps them (managedFields & co. round-trip); raw embedded objects (the
  manifests of a ManifestWork) are plain dicts and are kept exactly as given.
- ``KindInfo``: the class-level facts of a top-level kind that the CRD generator needs.
- ``CRD``: a marker placed in ``Annotated[...]`` to add Kubernetes schema facts to a field.
- ``Condition`` with ``set_condition``; ``LabelSelector`` with ``matches``; Go durations; int-or-percent.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

# Re-exported: the models' callers find every duration helper here.
from ocm_rollout.api.gosyntax import MAX_DURATION_NS as MAX_DURATION_NS
from ocm_rollout.api.gosyntax import DurationError as DurationError
from ocm_rollout.api.gosyntax import format_go_duration as format_go_duration
from ocm_rollout.api.gosyntax import parse_go_duration as parse_go_duration
from ocm_rollout.api.gosyntax import parse_go_float as parse_go_float
from ocm_rollout.api.gosyntax import parse_progress_deadline as parse_progress_deadline

# The one RFC 3339 formatter and parser (``ocm_rollout.api.times``), re-exported beside ``Time``.
from ocm_rollout.api.times import format_time as format_time
from ocm_rollout.api.times import parse_time

# --------------------------------------------------------------------------------------------
# Schema markers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CRD:
    """Kubernetes schema facts of a field, read by the CRD generator (``ocm_rollout.api.crdgen``).

    Put it in ``Annotated[type, CRD(...)]``; pydantic ignores it.
    """

    format: str | None = None
    int_or_string: bool = False
    embedded_resource: bool = False
    preserve_unknown_fields: bool = False
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None
    nullable: bool = False
    # A pattern for int-or-string fields (pydantic cannot put one on a union); strings only.
    pattern: str | None = None
    # Emit the field's Python default (or the dumped default_factory value) as the CRD default.
    defaulted: bool = False
    # An explicit CRD default (wire JSON), when it differs from what the Python default dumps to.
    default: Any = None


# Shorthands for the markers used most often.
DEFAULTED = CRD(defaulted=True)
LIST_MAP_BY_TYPE = CRD(list_type="map", list_map_keys=("type",))
ATOMIC_LIST = CRD(list_type="atomic")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _int32_range(value: int) -> int:
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{value} does not fit a 32-bit integer")
    return value


def _int64_range(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{value} does not fit a 64-bit integer")
    return value


Int32 = Annotated[int, AfterValidator(_int32_range), CRD(format="int32")]
Int64 = Annotated[int, AfterValidator(_int64_range), CRD(format="int64")]


def _parse_time(value: Any) -> Any:
    if isinstance(value, str):
        return parse_time(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    return value


Time = Annotated[
    datetime,
    BeforeValidator(_parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""A timestamp: parsed from RFC 3339 (any offset) into an aware UTC datetime, written as
``YYYY-MM-DDTHH:MM:SSZ`` (sub-seconds dropped, like metav1.Time)."""


# --------------------------------------------------------------------------------------------
# Base model
# --------------------------------------------------------------------------------------------

_EMPTY: tuple[Any, ...] = ([], {})


def _is_list_or_map(annotation: Any) -> bool:
    """Whether a field's type is a list or a dict (through Annotated and Optional)."""
    tp = annotation
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return False
            tp = members[0]
        else:
            return origin in (list, dict)


class OCMModel(BaseModel):
    """Base of every OCM model: camelCase on the wire, Go-style omission of empty values."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=True,
    )

    # Python field names whose empty list / map is written anyway (Go fields without omitempty).
    __keep_empty__: ClassVar[frozenset[str]] = frozenset()
    # Python field names the CRD marks required although the model has a default for them.
    __crd_required__: ClassVar[tuple[str, ...]] = ()
    # CEL rules (x-kubernetes-validations) of this object in the CRD: (rule, message) pairs.
    __crd_validations__: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def _omittable_fields(cls) -> tuple[tuple[str, str], ...]:
        """(python name, alias) of the optional list and map fields, whose empty value is omitted."""
        cached = cls.__dict__.get("_omittable_cache")
        if cached is not None:
            return cached
        result = []
        for name, info_field in cls.model_fields.items():
            if name in cls.__keep_empty__ or info_field.is_required():
                continue
            if _is_list_or_map(info_field.annotation):
                result.append((name, info_field.alias or name))
        found = tuple(result)
        type.__setattr__(cls, "_omittable_cache", found)
        return found

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for name, alias in type(self)._omittable_fields():
            key = alias if info.by_alias else name
            value = data.get(key, None)
            if isinstance(value, list | dict) and value in _EMPTY:
                del data[key]
        return data

    def to_wire(self) -> dict[str, Any]:
        """The OCM wire JSON of this model (camelCase keys, empty values left out)."""
        result: dict[str, Any] = self.model_dump(by_alias=True, exclude_none=True, mode="json")
        return result


# --------------------------------------------------------------------------------------------
# Validation errors with field paths
# --------------------------------------------------------------------------------------------


def field_path(loc: Sequence[int | str]) -> str:
    """``("spec", "placementRefs", 0, "name")`` -> ``spec.placementRefs[0].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def format_validation_error(error: ValidationError, prefix: str = "") -> str:
    """One line per problem: ``<field path>: <message>``."""
    lines = []
    for item in error.errors(include_url=False):
        loc = [p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = field_path(loc)
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        message = item["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        lines.append(f"{path or '<object>'}: {message}")
    return "\n".join(lines)


class InvalidObject(ValueError):
    """An object that does not satisfy its OCM schema. ``str()`` names every offending field."""

    def __init__(self, message: str, kind: str = "", name: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


# --------------------------------------------------------------------------------------------
# Names (Kubernetes validation rules, with the API server's messages)
# --------------------------------------------------------------------------------------------

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")

# Regular expressions used by OCM's CRDs (the same text appears in the generated schemas).
QUALIFIED_NAME_PATTERN = (
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
DNS1123_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_PATTERN = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$"
CONDITION_REASON_PATTERN = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
QUANTITY_PATTERN = (
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"
)


def _regex_error(fmt: str, examples: Sequence[str], what: str) -> str:
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{what} (e.g. {shown}, regex used for validation is '{fmt}')"


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why ``value`` is not a lowercase RFC 1123 subdomain (empty list when it is one)."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(
            _regex_error(
                _DNS1123_SUBDOMAIN_FMT,
                ["example.com"],
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
            )
        )
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (a label key): ``[prefix/]name``."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            _regex_error(
                _QUALIFIED_NAME_FMT,
                ["MyName", "my.name", "123-abc"],
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_RE.match(name):
        errors.append(
            _regex_error(
                _QUALIFIED_NAME_FMT,
                ["MyName", "my.name", "123-abc"],
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character",
            )
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (at most 63 characters of the name form)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            _regex_error(
                _LABEL_VALUE_FMT,
                ["MyValue", "my_value", "12345"],
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
            )
        )
    return errors


# --------------------------------------------------------------------------------------------
# Object metadata
# --------------------------------------------------------------------------------------------


class OwnerReference(OCMModel):
    """A reference from a dependent object to its owner (metav1.OwnerReference)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(OCMModel):
    """The part of metav1.ObjectMeta the controllers use. Other metadata keys are kept as given."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Conditions
# --------------------------------------------------------------------------------------------

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(OCMModel):
    """One aspect of an object's current state (metav1.Condition)."""

    type: Annotated[
        str,
        Field(
            max_length=316,
            pattern=QUALIFIED_NAME_PATTERN,
            description="Condition type in CamelCase or foo.example.com/CamelCase.",
        ),
    ]
    status: Annotated[ConditionStatus, Field(description="True, False or Unknown.")]
    observed_generation: Annotated[
        int | None,
        Field(ge=0, description="The metadata.generation the condition was computed from."),
        CRD(format="int64"),
    ] = None
    last_transition_time: Annotated[
        Time, Field(description="When the status last changed from one value to another.")
    ]
    reason: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1024,
            pattern=CONDITION_REASON_PATTERN,
            description="A CamelCase word saying why the condition is in its current status.",
        ),
    ]
    message: Annotated[
        str, Field(max_length=32768, description="Human-readable details about the transition.")
    ]


ConditionList = Annotated[
    list[Condition],
    LIST_MAP_BY_TYPE,
    Field(description="The latest observations of the object's state, one per condition type."),
]
PlainConditionList = Annotated[
    list[Condition],
    Field(description="The latest observations of the object's state, one per condition type."),
]


def set_condition(conditions: list[Condition], new: Condition, now: datetime) -> bool:
    """Set ``new`` in ``conditions`` (in place, matched by type); return True if anything changed.

    status, reason, message and observedGeneration are replaced. lastTransitionTime becomes
    ``now`` when the condition is new or its status flips, and is kept otherwise (the
    ``last_transition_time`` carried by ``new`` is ignored). New types are appended.
    """
    for index, old in enumerate(conditions):
        if old.type != new.type:
            continue
        ltt = old.last_transition_time if old.status == new.status else now
        updated = new.model_copy(update={"last_transition_time": ltt})
        if updated == old:
            return False
        conditions[index] = updated
        return True
    conditions.append(new.model_copy(update={"last_transition_time": now}))
    return True


# --------------------------------------------------------------------------------------------
# Label selectors
# --------------------------------------------------------------------------------------------


class SelectorError(ValueError):
    """A label selector that cannot be compiled (bad operator, key, value or value count)."""


class LabelSelectorRequirement(OCMModel):
    """One requirement: a key, an operator (In, NotIn, Exists, DoesNotExist) and values."""

    key: Annotated[str, Field(description="The label key the requirement applies to.")]
    operator: Annotated[
        str, Field(description="How the key relates to the values: In, NotIn, Exists or DoesNotExist.")
    ]
    values: Annotated[
        list[str],
        ATOMIC_LIST,
        Field(
            description=(
                "Values for In and NotIn (at least one); must be empty for Exists and DoesNotExist."
            )
        ),
    ] = Field(default_factory=list)

    def check(self) -> None:
        """Raise SelectorError when this requirement would not compile in Kubernetes."""
        errors = qualified_name_errors(self.key)
        if errors:
            raise SelectorError(f"key: Invalid value: {self.key!r}: {'; '.join(errors)}")
        if self.operator in ("In", "NotIn"):
            if not self.values:
                raise SelectorError(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                )
        elif self.operator in ("Exists", "DoesNotExist"):
            if self.values:
                raise SelectorError(
                    "values: Invalid value: "
                    f"{self.values!r}: values set must be empty for exists and does not exist"
                )
        else:
            raise SelectorError(f"operator: Unsupported value: {self.operator!r}: not a valid selector operator")
        for value in self.values:
            errors = label_value_errors(value)
            if errors:
                raise SelectorError(f"values: Invalid value: {value!r}: {'; '.join(errors)}")

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (assumes ``check()`` passed)."""
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        raise SelectorError(f"operator: Unsupported value: {self.operator!r}: not a valid selector operator")


class LabelSelector(OCMModel):
    """A label query (metav1.LabelSelector): matchLabels AND matchExpressions.

    An empty selector matches everything; a missing (None) selector is the caller's business
    (OCM treats it as matching nothing).
    """

    match_labels: Annotated[
        dict[str, str],
        Field(description="key=value pairs that must all be present (each is an In requirement)."),
    ] = Field(default_factory=dict)
    match_expressions: Annotated[
        list[LabelSelectorRequirement],
        ATOMIC_LIST,
        Field(description="Requirements that must all hold."),
    ] = Field(default_factory=list)

    def requirements(self) -> list[LabelSelectorRequirement]:
        """The selector as one list of requirements (matchLabels first, sorted by key)."""
        reqs = [
            LabelSelectorRequirement(key=k, operator="In", values=[v])
            for k, v in sorted(self.match_labels.items())
        ]
        reqs.extend(self.match_expressions)
        return reqs

    def check(self) -> None:
        """Raise SelectorError when this selector would not compile in Kubernetes."""
        for index, req in enumerate(self.requirements()):
            try:
                req.check()
            except SelectorError as exc:
                where = (
                    f"matchLabels[{req.key}]"
                    if index < len(self.match_labels)
                    else f"matchExpressions[{index - len(self.match_labels)}]"
                )
                raise SelectorError(f"{where}.{exc}") from None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` match, with Kubernetes semantics; raises SelectorError if invalid."""
        self.check()
        return all(req.matches(labels) for req in self.requirements())


LabelSelectorField = Annotated[LabelSelector, CRD(map_type="atomic")]


# --------------------------------------------------------------------------------------------
# Go durations
# --------------------------------------------------------------------------------------------

# OCM's CRD pattern for progressDeadline (searched, not anchored at both ends, as in Kubernetes).
PROGRESS_DEADLINE_PATTERN = "^(([0-9])+[h|m|s])|None$"


def _check_progress_deadline(value: str) -> str:
    parse_progress_deadline(value)
    if value == "":
        raise DurationError("must not be empty: use a duration such as 10m, or None")
    return value


def _check_go_duration(value: str) -> str:
    parse_go_duration(value)
    return value


ProgressDeadline = Annotated[
    str,
    Field(
        pattern=PROGRESS_DEADLINE_PATTERN,
        description=(
            "How long to wait for a cluster to succeed before counting it as timed out: a duration "
            "in hours, minutes or seconds such as 90s, 10m or 1h30m, or None to wait forever."
        ),
    ),
    AfterValidator(_check_progress_deadline),
]
MinSuccessTime = Annotated[
    str,
    Field(
        description=(
            "How long a successful cluster soaks before the rollout moves on: a Go duration such "
            "as 5m; 0 means no soak."
        )
    ),
    AfterValidator(_check_go_duration),
]


# --------------------------------------------------------------------------------------------
# Int or percent
# --------------------------------------------------------------------------------------------

# OCM's pattern for rollout thresholds (maxFailures, maxConcurrency).
THRESHOLD_PATTERN = "^((100|[0-9]{1,2})%|[0-9]+)$"
_THRESHOLD_RE = re.compile(THRESHOLD_PATTERN)
# OCM's pattern for clustersPerDecisionGroup (emitted in the CRD; the model does not enforce it).
GROUP_SIZE_PATTERN = "^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$"

def _int_or_string(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError("must be an integer or a string")
    return value


def _check_threshold(value: int | str) -> int | str:
    if isinstance(value, str) and not _THRESHOLD_RE.search(value):
        raise ValueError(
            f"{value!r} must be a whole number or a percentage from 0% to 100% (e.g. 2 or 25%)"
        )
    return value


Threshold = Annotated[
    int | str,
    BeforeValidator(_int_or_string),
    AfterValidator(_check_threshold),
    CRD(int_or_string=True, pattern=THRESHOLD_PATTERN),
]
"""maxFailures / maxConcurrency: an integer or a percentage string (OCM's pattern)."""
GroupSize = Annotated[
    int | str,
    BeforeValidator(_int_or_string),
    CRD(int_or_string=True, pattern=GROUP_SIZE_PATTERN),
]
"""clustersPerDecisionGroup: an integer or a percentage string.

The CRD carries OCM's pattern, so the API server rejects new values outside it; the model
accepts any integer or string, because a Placement stored before that rule existed can hold one
("25", "150%", "1e400%", "abc"), and docs/behaviour/scheduling.md §6 says what the scheduler makes of it
(``ocm_rollout.controllers.placement.groups.group_length``: a group length, or Misconfigured)."""


def _check_quantity(value: int | str) -> int | str:
    if isinstance(value, str) and not re.search(QUANTITY_PATTERN, value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 12, 500m, 16Gi)")
    return value


Quantity = Annotated[
    int | str,
    BeforeValidator(_int_or_string),
    AfterValidator(_check_quantity),
    CRD(int_or_string=True, pattern=QUANTITY_PATTERN),
]
"""A Kubernetes resource quantity (``"12"``, ``500m``, ``16Gi`` or an integer)."""


# --------------------------------------------------------------------------------------------
# Top-level kinds
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry of a CRD."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int | None = None
    format: str | None = None


@dataclass(frozen=True)
class KindInfo:
    """The facts about a kind that are not fields: its API coordinates and CRD presentation."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    scope: Literal["Namespaced", "Cluster"]
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    categories: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"


class OCMObject(OCMModel):
    """A top-level object: apiVersion, kind, metadata, then the kind's own spec and status.

    Subclasses set ``KIND``. apiVersion and kind are filled in when absent and must match
    when present.
    """

    KIND: ClassVar[KindInfo]

    api_version: Annotated[str, Field(description="The versioned schema of this object.")] = ""
    kind: Annotated[str, Field(description="The REST resource this object represents.")] = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @model_validator(mode="before")
    @classmethod
    def _fill_type_meta(cls, data: Any) -> Any:
        info = getattr(cls, "KIND", None)
        if info is None or not isinstance(data, dict):
            return data
        data = dict(data)
        for wire, py, expected in (
            ("apiVersion", "api_version", info.api_version),
            ("kind", "kind", info.kind),
        ):
            given = data.get(wire, data.get(py))
            if given in (None, ""):
                data.pop(py, None)
                data[wire] = expected
            elif given != expected:
                raise ValueError(f"{wire} must be {expected!r}, got {given!r}")
        return data

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Any:
        """Validate a wire object; raise InvalidObject naming every bad field."""
        try:
            return cls.model_validate(obj)
        except ValidationError as exc:
            meta = obj.get("metadata") if isinstance(obj, Mapping) else None
            name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
            raise InvalidObject(
                f"invalid {cls.KIND.kind} {name!r}:\n{format_validation_error(exc)}",
                kind=cls.KIND.kind,
                name=name,
            ) from None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def key(self) -> str:
        """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
        return f"{self.metadata.namespace}/{self.name}" if self.metadata.namespace else self.name
