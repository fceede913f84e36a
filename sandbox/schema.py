"""Structural-schema handling for custom resources (and the hub's built-in kinds).

A `CompiledSchema` is built once per (CRD, version) and does what kube-apiserver does with a
CRD's openAPIV3Schema on every write:

1. prunes fields the schema does not know (unless `x-kubernetes-preserve-unknown-fields`),
   and `null`s where the field is not `nullable`, remembering the pruned paths so that
   `fieldValidation=Strict` can reject them;
2. applies `default`s, recursively, including inside defaults;
3. validates with `jsonschema` (Draft 4, the dialect OpenAPI v3.0 schemas are written in),
   asked only when the compiled yes/no check of `schema_check` says no (the errors are
   jsonschema's either way: `Judge`), plus the Kubernetes extensions `jsonschema` knows nothing
   about: `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource`, `x-kubernetes-list-type` (set/map uniqueness) and
   `x-kubernetes-validations` (CEL, through cel-python).

Errors come back as Kubernetes `StatusCause`s (reason, message, field).
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import celpy
import jsonschema
from celpy import celtypes

from ocm_rollout.sandbox.errors import cause
from ocm_rollout.sandbox.schema_check import compile_check

# Fields ObjectMeta has; anything else in `metadata` is dropped, as the real decoder does.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

_MISSING = object()
# Compiled schemas are shared by hubs running in different threads; cel-python's evaluator is
# not documented as thread-safe, so evaluations are serialised.
_CEL_LOCK = threading.Lock()


@dataclass
class CelRule:
    rule: str
    message: str
    reason: str
    field_path: str
    program: Any
    uses_old: bool


@dataclass
class Node:
    """One compiled schema node."""

    types: tuple[str, ...] = ()
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    additional_any: bool = False  # additionalProperties: true
    items: Node | None = None
    preserve: bool = False
    embedded: bool = False
    nullable: bool = False
    int_or_string: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)
    list_type: str | None = None
    map_keys: tuple[str, ...] = ()
    rules: list[CelRule] = field(default_factory=list)
    # Whether anything below needs a walk (defaults, list checks, CEL, pruning).
    deep: bool = True


def _json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (dict, list)):
        return '"' + _json_type_of(value) + '"'
    return json.dumps(value)


def _path_str(path: list[str | int] | tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out


_FORMAT_CHECKER = jsonschema.FormatChecker(formats=())


@_FORMAT_CHECKER.checks("date-time", raises=ValueError)
def _check_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", value):
        raise ValueError("not RFC 3339")
    datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    return True


@_FORMAT_CHECKER.checks("byte", raises=(binascii.Error, ValueError))
def _check_byte(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True


def _to_jsonschema(schema: dict[str, Any], *, root: bool = False) -> dict[str, Any]:
    """Translate an OpenAPI v3.0 structural schema into a Draft 4 JSON schema."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-") or key in ("nullable", "description", "example", "externalDocs", "default"):
            continue
        if key == "properties":
            props = {k: _to_jsonschema(v) for k, v in value.items() if not (root and k == "metadata")}
            out[key] = props
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _to_jsonschema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_to_jsonschema(v) for v in value]
        elif key == "required" and root:
            out[key] = [r for r in value if r != "metadata"]
        else:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["type"] = ["integer", "string"]
    if schema.get("x-kubernetes-embedded-resource"):
        req = list(out.get("required", []))
        for name in ("apiVersion", "kind"):
            if name not in req:
                req.append(name)
        out["required"] = req
        props = dict(out.get("properties", {}))
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
        out["properties"] = props
    if schema.get("nullable") and "type" in out:
        t = out["type"]
        out["type"] = [*t, "null"] if isinstance(t, list) else [t, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


class SchemaError(ValueError):
    """The CRD's schema itself is unusable (bad CEL rule, unknown type...)."""


def _compile_node(schema: dict[str, Any], env: celpy.Environment, where: str) -> Node:
    node = Node()
    t = schema.get("type")
    if isinstance(t, str):
        node.types = (t,)
    node.nullable = bool(schema.get("nullable"))
    node.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    node.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    node.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    for name, sub in (schema.get("properties") or {}).items():
        child = _compile_node(sub, env, f"{where}.{name}")
        node.properties[name] = child
        if "default" in sub:
            node.defaults[name] = sub["default"]
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict):
        node.additional = _compile_node(ap, env, f"{where}[*]")
    elif ap is True:
        node.additional_any = True
    items = schema.get("items")
    if isinstance(items, dict):
        node.items = _compile_node(items, env, f"{where}[*]")
    node.list_type = schema.get("x-kubernetes-list-type")
    node.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    for rule in schema.get("x-kubernetes-validations") or ():
        text = rule.get("rule", "")
        try:
            program = env.program(env.compile(text))
        except Exception as exc:  # cel-python raises several parser error types
            raise SchemaError(f"{where}: x-kubernetes-validations rule {text!r} does not compile: {exc}") from exc
        node.rules.append(
            CelRule(
                rule=text,
                message=rule.get("message") or f"failed rule: {text}",
                reason=rule.get("reason") or "FieldValueInvalid",
                field_path=rule.get("fieldPath") or "",
                program=program,
                uses_old=bool(re.search(r"\boldSelf\b", text)),
            )
        )
    node.deep = bool(
        node.properties
        or node.additional is not None
        or node.items is not None
        or node.list_type in ("set", "map")
        or node.rules
        or (node.types == ("object",) and not node.preserve and not node.additional_any)
        or not node.nullable
    )
    return node


@dataclass
class Outcome:
    """What normalising an object produced."""

    obj: dict[str, Any]
    unknown: list[str]


class Judge:
    """A Draft 4 validator, with the compiled yes/no check of the same schema asked first
    (``check`` is None beyond the compiled subset: the validator alone)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.validator = jsonschema.Draft4Validator(schema, format_checker=_FORMAT_CHECKER)
        self.check = compile_check(schema, _FORMAT_CHECKER.conforms)

    def errors(self, value: Any) -> list[jsonschema.ValidationError]:
        if self.check is not None and self.check(value):
            return []
        return list(self.validator.iter_errors(value))


class CompiledSchema:
    """Prune, default and validate objects of one kind/version."""

    def __init__(self, schema: dict[str, Any] | None) -> None:
        self.source = schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        env = celpy.Environment()
        self.root = _compile_node(self.source, env, "")
        draft = _to_jsonschema(self.source, root=True)
        jsonschema.Draft4Validator.check_schema(draft)
        self.whole = Judge(draft)
        # For updates: the root's own keywords, and one judge per top-level property, so that
        # a section the update leaves as it was is not validated again (validation ratcheting,
        # as kube-apiserver does since 1.30, at the granularity of spec / status / ...).
        raw_sections = draft.get("properties")
        sections: dict[str, Any] = raw_sections if isinstance(raw_sections, dict) else {}
        self.root_only = Judge({k: v for k, v in draft.items() if k != "properties"})
        self.sections = {key: Judge(sub) for key, sub in sections.items()}
        self.ratchets = "additionalProperties" not in draft and "patternProperties" not in draft

    # pruning and defaulting ---------------------------------------------------------------------

    def normalize(self, obj: dict[str, Any]) -> Outcome:
        """Return a pruned and defaulted copy of `obj` (metadata, apiVersion, kind kept)."""
        unknown: list[str] = []
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key in ("apiVersion", "kind"):
                out[key] = value
            elif key == "metadata":
                out[key] = _prune_meta(value, "metadata", unknown)
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        walked = self._walk(body, self.root, [], unknown)
        if isinstance(walked, dict):
            out.update(walked)
        return Outcome(out, unknown)

    def _walk(self, value: Any, node: Node, path: list[str | int], unknown: list[str]) -> Any:
        if value is None:
            return None if node.nullable else _MISSING
        if isinstance(value, dict):
            if node.types and node.types != ("object",) and not node.int_or_string:
                return value  # wrong type: left for validation to report
            if node.embedded and not node.preserve and not node.properties:
                return dict(value)
            out: dict[str, Any] = {}
            for key, sub in value.items():
                child = node.properties.get(key)
                if child is not None:
                    res = self._walk(sub, child, [*path, key], unknown)
                elif node.additional is not None:
                    res = self._walk(sub, node.additional, [*path, key], unknown)
                elif node.preserve or node.additional_any or (node.embedded and key in ("apiVersion", "kind")):
                    res = copy.deepcopy(sub)
                elif node.embedded and key == "metadata":
                    res = _prune_meta(sub, _path_str([*path, key]), unknown)
                elif not node.types and not node.properties:
                    res = copy.deepcopy(sub)  # schema-less node (e.g. `{}`): nothing to prune against
                else:
                    unknown.append(_path_str([*path, key]))
                    continue
                if res is not _MISSING:
                    out[key] = res
            for key, default in node.defaults.items():
                if key not in out:
                    res = self._walk(copy.deepcopy(default), node.properties[key], [*path, key], unknown)
                    if res is not _MISSING:
                        out[key] = res
            return out
        if isinstance(value, list):
            if node.items is None:
                return copy.deepcopy(value) if node.preserve or not node.types else value
            items = node.items
            if not items.deep:
                return list(value)
            res_list = []
            for i, item in enumerate(value):
                res = self._walk(item, items, [*path, i], unknown)
                res_list.append(None if res is _MISSING else res)
            return res_list
        return value

    # validation ---------------------------------------------------------------------------------

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[dict[str, str]]:
        """StatusCauses for every violation in `obj` (already normalised)."""
        body = {k: v for k, v in obj.items() if k != "metadata"}
        causes = [_cause_for(err) for err in self._schema_errors(body, old)]
        if not causes:
            old_body = None if old is None else {k: v for k, v in old.items() if k != "metadata"}
            self._extensions(body, old_body, self.root, [], causes, root=True)
        causes.sort(key=lambda c: c["field"])
        return causes

    def _schema_errors(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[jsonschema.ValidationError]:
        """The JSON-schema errors of ``body``; on an update, of its changed top-level sections
        only (what was stored passed then: unchanged, it is not judged again)."""
        if old is None or not self.ratchets:
            return self.whole.errors(body)
        errors = self.root_only.errors(body)
        for key, value in body.items():
            judge = self.sections.get(key)
            if judge is None or (key in old and old[key] == value):
                continue
            for err in judge.errors(value):
                err.path.appendleft(key)
                errors.append(err)
        return errors

    def _extensions(
        self,
        value: Any,
        old: Any,
        node: Node,
        path: list[str | int],
        causes: list[dict[str, str]],
        *,
        root: bool = False,
    ) -> None:
        if value is None:
            return
        if node.rules:
            self._run_rules(value, old, node, path, causes, root=root)
        if isinstance(value, dict):
            for key, sub in value.items():
                child = node.properties.get(key) or node.additional
                if child is not None and child.deep:
                    sub_old = old.get(key) if isinstance(old, dict) else None
                    self._extensions(sub, sub_old, child, [*path, key], causes)
        elif isinstance(value, list):
            if node.list_type == "set":
                seen: list[Any] = []
                for i, item in enumerate(value):
                    if item in seen:
                        causes.append(cause("FieldValueDuplicate", _path_str([*path, i]), f"Duplicate value: {_fmt(item)}"))
                    else:
                        seen.append(item)
            elif node.list_type == "map" and node.map_keys:
                keys_seen: set[str] = set()
                for i, item in enumerate(value):
                    if not isinstance(item, dict):
                        continue
                    marker = _map_key(item, node.map_keys)
                    if marker in keys_seen:
                        shown = json.dumps({k: item.get(k) for k in node.map_keys})
                        causes.append(cause("FieldValueDuplicate", _path_str([*path, i]), f"Duplicate value: {shown}"))
                    keys_seen.add(marker)
            items = node.items
            if items is not None and items.deep:
                olds: dict[str, Any] = {}
                if node.list_type == "map" and node.map_keys and isinstance(old, list):
                    for item in old:
                        if isinstance(item, dict):
                            olds[_map_key(item, node.map_keys)] = item
                for i, item in enumerate(value):
                    item_old = None
                    if olds and isinstance(item, dict):
                        item_old = olds.get(_map_key(item, node.map_keys))
                    self._extensions(item, item_old, items, [*path, i], causes)

    def _run_rules(
        self,
        value: Any,
        old: Any,
        node: Node,
        path: list[str | int],
        causes: list[dict[str, str]],
        *,
        root: bool,
    ) -> None:
        activation: dict[str, Any] = {"self": celpy.json_to_cel(value)}
        for rule in node.rules:
            if rule.uses_old:
                if old is None:
                    continue
                activation["oldSelf"] = celpy.json_to_cel(old)
            where = _path_str(path) if path else "<root>"
            if rule.field_path:
                where = (where if path else "") + rule.field_path
                where = where.lstrip(".")
            try:
                with _CEL_LOCK:
                    result = rule.program.evaluate(activation)
                failed = not (isinstance(result, celtypes.BoolType) and bool(result))
                message = rule.message
            except Exception as exc:  # an evaluation error fails the rule, as in kube-apiserver
                failed = True
                message = f"{exc.args[0] if exc.args else exc} evaluating rule: {rule.rule}"
            if failed:
                shown = '"object"' if isinstance(value, dict) else '"array"' if isinstance(value, list) else _fmt(value)
                causes.append(cause(rule.reason, where, f"Invalid value: {shown}: {message}"))


def _map_key(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    """What identifies an item of a `x-kubernetes-list-type: map` list."""
    return json.dumps({k: item.get(k) for k in keys}, sort_keys=True)


def _prune_meta(value: Any, where: str, unknown: list[str]) -> Any:
    if not isinstance(value, dict):
        return value
    out = {}
    for key, sub in value.items():
        if key in OBJECT_META_FIELDS:
            out[key] = sub
        else:
            unknown.append(f"{where}.{key}")
    return out


_REASONS = {
    "required": "FieldValueRequired",
    "type": "FieldValueTypeInvalid",
    "enum": "FieldValueNotSupported",
    "maxLength": "FieldValueTooLong",
    "maxItems": "FieldValueTooMany",
    "maxProperties": "FieldValueTooMany",
}


# What kube-apiserver says for each failed keyword: {shown} is the value, {in_body} where it is,
# {limit} the keyword's value and {count} the length of the list.
_MESSAGES = {
    "type": "Invalid value: {shown}: {in_body} must be of type {limit}: {shown}",
    "format": "Invalid value: {shown}: {in_body} must be of type {limit}: {shown}",
    "enum": "Unsupported value: {shown}: supported values: {limit}",
    "pattern": "Invalid value: {shown}: {in_body} should match '{limit}'",
    "maxLength": "Too long: may not be more than {limit} bytes",
    "minLength": "Invalid value: {shown}: {in_body} should be at least {limit} chars long",
    "maxItems": "Too many: {count}: must have at most {limit} items",
    "minItems": "Invalid value: {count}: {in_body} should have at least {limit} items",
    "maximum": "Invalid value: {shown}: {in_body} should be less than or equal to {limit}",
    "minimum": "Invalid value: {shown}: {in_body} should be greater than or equal to {limit}",
}


def _cause_for(err: jsonschema.ValidationError) -> dict[str, str]:
    path = list(err.absolute_path)
    where = _path_str(path)
    v = str(err.validator)
    reason = _REASONS.get(v, "FieldValueInvalid")
    shown = _fmt(err.instance)
    if v == "required":
        missing = re.match(r"'([^']*)' is a required property", err.message)
        name = missing.group(1) if missing else str(err.message)
        return cause(reason, _path_str([*path, name]), "Required value")
    template = _MESSAGES.get(v)
    if template is None:
        return cause(reason, where, f"Invalid value: {shown}: {err.message}")
    limit = err.validator_value
    if v == "type" and isinstance(limit, list):
        limit = " or ".join(limit)
    elif v == "enum":
        limit = ", ".join(_fmt(x) for x in limit)
    count = len(err.instance) if isinstance(err.instance, list) else 0
    return cause(reason, where, template.format(shown=shown, in_body=f"{where or 'body'} in body", limit=limit, count=count))
