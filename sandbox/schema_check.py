"""A compiled yes/no check of a Draft 4 JSON schema, run before ``jsonschema``.

``jsonschema`` walks a schema and builds an error object for every violation; on a valid object
(nearly every write) that work answers nothing but "valid", and for a ManifestWork's status it
was about a quarter of the local hub's CPU during a rollout. ``compile_check`` turns a schema
into nested closures that answer only that question. The hub asks ``jsonschema`` for the
detailed errors only when the check says no, so what a client sees is unchanged.

The check is exact for the keywords it knows (the subset our CRDs' schemas use once translated
to Draft 4, plus their close relatives), with ``jsonschema``'s Draft 4 semantics: ``integer``
excludes booleans and floats, ``number`` excludes booleans, keywords of one type ignore values of
another, ``minimum`` honours a boolean ``exclusiveMinimum``. A schema with any other keyword
(``$ref``, ``uniqueItems``, ``multipleOf``, an ``enum`` of anything but strings and null...) gets
no check at all (``None``), and the caller validates with ``jsonschema`` alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]
FormatCheck = Callable[[Any, str], bool]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
# Keywords that only annotate: they never make an object invalid.
_ANNOTATIONS = frozenset({"description", "title", "example", "examples", "$comment"})
_KNOWN = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "pattern",
    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "minProperties", "maxProperties", "format", "anyOf", "allOf", "oneOf",
    "not",
}) | _ANNOTATIONS


class Unsupported(Exception):
    """The schema uses something the compiled check does not reproduce exactly."""


def compile_check(schema: Any, conforms: FormatCheck) -> Check | None:
    """A function telling whether an instance is valid against ``schema``, or None when the
    schema is beyond the compiled subset. ``conforms(value, format)``: the validator's format
    checker (``jsonschema.FormatChecker.conforms``), so that formats are judged as it judges them."""
    try:
        return _compile(schema, conforms)
    except Unsupported:
        return None


def _compile(schema: Any, conforms: FormatCheck) -> Check:
    if not isinstance(schema, dict):
        raise Unsupported(f"schema {schema!r}")
    unknown = set(schema) - _KNOWN
    if unknown:
        raise Unsupported(", ".join(sorted(unknown)))
    checks: list[Check] = []
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    if "enum" in schema:
        checks.append(_enum_check(schema["enum"]))
    object_check = _object_check(schema, conforms)
    if object_check is not None:
        checks.append(object_check)
    if "items" in schema or "minItems" in schema or "maxItems" in schema:
        checks.append(_array_check(schema, conforms))
    string_check = _string_check(schema, conforms)
    if string_check is not None:
        checks.append(string_check)
    number_check = _number_check(schema)
    if number_check is not None:
        checks.append(number_check)
    for keyword in ("anyOf", "allOf", "oneOf"):
        if keyword in schema:
            checks.append(_combined(keyword, schema[keyword], conforms))
    if "not" in schema:
        negated = _compile(schema["not"], conforms)
        checks.append(lambda v: not negated(v))
    return _all(checks)


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda _v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    return lambda v: all(check(v) for check in checks)


def _type_check(declared: Any) -> Check:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        raise Unsupported(f"type {declared!r}")
    if len(names) == 1:
        return _TYPES[names[0]]
    tests = [_TYPES[n] for n in names]
    return lambda v: any(test(v) for test in tests)


def _enum_check(values: Any) -> Check:
    # jsonschema compares with its own equality (1 is not True, 1 equals 1.0): only strings and
    # null, where that is plain equality, are compiled.
    if not isinstance(values, list) or not all(v is None or isinstance(v, str) for v in values):
        raise Unsupported("enum of other values than strings and null")
    strings = frozenset(v for v in values if isinstance(v, str))
    allows_null = None in values
    return lambda v: (isinstance(v, str) and v in strings) or (v is None and allows_null)


def _bounds(schema: dict[str, Any], low: str, high: str) -> tuple[int | None, int | None]:
    """The integer bounds ``low`` and ``high`` of ``schema`` (None where absent)."""
    found = (schema.get(low), schema.get(high))
    for bound in found:
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise Unsupported(f"{low}/{high}")
    return found


def _within(size: int, low: int | None, high: int | None) -> bool:
    return (low is None or size >= low) and (high is None or size <= high)


def _object_check(schema: dict[str, Any], conforms: FormatCheck) -> Check | None:
    properties_raw = schema.get("properties")
    required_raw = schema.get("required")
    additional_raw = schema.get("additionalProperties", True)
    min_props, max_props = _bounds(schema, "minProperties", "maxProperties")
    if properties_raw is None and required_raw is None and additional_raw is True and min_props is None and max_props is None:
        return None
    if properties_raw is not None and not isinstance(properties_raw, dict):
        raise Unsupported("properties")
    properties = {k: _compile(v, conforms) for k, v in (properties_raw or {}).items()}
    if required_raw is not None and not (isinstance(required_raw, list) and all(isinstance(r, str) for r in required_raw)):
        raise Unsupported("required")
    required = tuple(required_raw or ())
    additional: Check | None
    if additional_raw is True:
        additional = None
    elif additional_raw is False:
        additional = lambda _v: False  # noqa: E731
    else:
        additional = _compile(additional_raw, conforms)

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for key in required:
            if key not in v:
                return False
        for key, value in v.items():
            sub = properties.get(key)
            if sub is None:
                if additional is not None and not additional(value):
                    return False
            elif not sub(value):
                return False
        return _within(len(v), min_props, max_props)

    return check


def _array_check(schema: dict[str, Any], conforms: FormatCheck) -> Check:
    items_raw = schema.get("items")
    if items_raw is not None and not isinstance(items_raw, dict):
        raise Unsupported("items as a list")  # Draft 4's tuple form, and additionalItems with it
    items = None if items_raw is None else _compile(items_raw, conforms)
    min_items, max_items = _bounds(schema, "minItems", "maxItems")

    def check(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        if not _within(len(v), min_items, max_items):
            return False
        if items is not None:
            for item in v:
                if not items(item):
                    return False
        return True

    return check


def _string_check(schema: dict[str, Any], conforms: FormatCheck) -> Check | None:
    pattern_raw = schema.get("pattern")
    min_length, max_length = _bounds(schema, "minLength", "maxLength")
    fmt = schema.get("format")
    if pattern_raw is None and min_length is None and max_length is None and fmt is None:
        return None
    try:
        pattern = None if pattern_raw is None else re.compile(pattern_raw)
    except (re.error, TypeError) as exc:
        raise Unsupported(f"pattern {pattern_raw!r}") from exc
    if fmt is not None and not isinstance(fmt, str):
        raise Unsupported("format")

    def check(v: Any) -> bool:
        # jsonschema's format checkers are asked about every value (each ignores other types).
        if fmt is not None and not conforms(v, fmt):
            return False
        if not isinstance(v, str):
            return True
        if not _within(len(v), min_length, max_length):
            return False
        return pattern is None or pattern.search(v) is not None

    return check


def _number_check(schema: dict[str, Any]) -> Check | None:
    minimum = schema.get("minimum")
    maximum = schema.get("maximum")
    if minimum is None and maximum is None:
        if "exclusiveMinimum" in schema or "exclusiveMaximum" in schema:
            return lambda _v: True  # Draft 4: they only modify minimum and maximum
        return None
    for bound in (minimum, maximum):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float))):
            raise Unsupported("minimum/maximum")
    exclusive_min = schema.get("exclusiveMinimum", False)
    exclusive_max = schema.get("exclusiveMaximum", False)
    if not isinstance(exclusive_min, bool) or not isinstance(exclusive_max, bool):
        raise Unsupported("exclusiveMinimum/exclusiveMaximum as numbers")

    def check(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return True
        if minimum is not None and (v <= minimum if exclusive_min else v < minimum):
            return False
        return maximum is None or not (v >= maximum if exclusive_max else v > maximum)

    return check


def _combined(keyword: str, subschemas: Any, conforms: FormatCheck) -> Check:
    if not isinstance(subschemas, list) or not subschemas:
        raise Unsupported(keyword)
    subs = [_compile(s, conforms) for s in subschemas]
    if keyword == "anyOf":
        return lambda v: any(sub(v) for sub in subs)
    if keyword == "allOf":
        return lambda v: all(sub(v) for sub in subs)
    return lambda v: sum(1 for sub in subs if sub(v)) == 1
