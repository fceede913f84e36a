"""Status feedback (``manifestConfigs[].feedbackRules``) read from a simulated resource.

``WellKnownStatus`` reads a fixed list of fields per exact group/version/kind; ``JSONPaths``
evaluates each Kubernetes JSONPath as ``{<path>}`` over the whole object, with missing keys
allowed. Values are typed the way the work agent types them (Integer, String, Boolean, and
JsonRaw when the ``RawFeedbackJsonString`` feature gate is on). Paths are evaluated with
jsonpath-ng after translating the Kubernetes dialect (leading ``.``, ``\\.`` escapes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse as _parse_jsonpath

from ocm_rollout.sandbox.agents import names

MAX_JSON_RAW_LENGTH = 1024

# (group, version, kind) -> [(value name, JSONPath)], in the order the values are reported.
WELL_KNOWN_STATUS: dict[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    ("apps", "v1", "Deployment"): (
        ("ReadyReplicas", ".status.readyReplicas"),
        ("Replicas", ".status.replicas"),
        ("AvailableReplicas", ".status.availableReplicas"),
    ),
    ("apps", "v1", "DaemonSet"): (
        ("NumberReady", ".status.numberReady"),
        ("DesiredNumberScheduled", ".status.desiredNumberScheduled"),
        ("NumberAvailable", ".status.numberAvailable"),
    ),
    ("batch", "v1", "Job"): (
        ("JobComplete", '.status.conditions[?(@.type=="Complete")].status'),
        ("JobSucceeded", ".status.succeeded"),
    ),
    ("", "v1", "Pod"): (
        ("PodReady", '.status.conditions[?(@.type=="Ready")].status'),
        ("PodPhase", ".status.phase"),
    ),
}


class FeedbackError(Exception):
    """One rule or path that could not produce its value."""


@dataclass(frozen=True)
class FeedbackResult:
    values: list[dict[str, Any]]
    errors: list[str]

    @property
    def error_text(self) -> str:
        """Errors joined the way Kubernetes aggregates them: one as is, several as ``[a, b]``."""
        if len(self.errors) == 1:
            return self.errors[0]
        return "[" + ", ".join(self.errors) + "]"


def split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


def gvk_string(group: str, version: str, kind: str) -> str:
    """The text of a schema.GroupVersionKind: ``apps/v1, Kind=Deployment`` or ``/v1, Kind=Pod``."""
    return f"{group}/{version}, Kind={kind}"


def _quote_escaped_segments(text: str) -> str:
    """Rewrite dotted segments holding ``\\.`` escapes as bracketed, quoted keys."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "[":
            end = text.find("]", i)
            end = len(text) - 1 if end < 0 else end
            out.append(text[i : end + 1])
            i = end + 1
            continue
        if char != ".":
            out.append(char)
            i += 1
            continue
        j = i + 1
        segment: list[str] = []
        escaped = False
        while j < len(text) and text[j] not in ".[":
            if text[j] == "\\" and j + 1 < len(text) and text[j + 1] == ".":
                segment.append(".")
                escaped = True
                j += 2
                continue
            segment.append(text[j])
            j += 1
        key = "".join(segment)
        out.append("['" + key + "']" if escaped else "." + key)
        i = j
    return "".join(out)


def translate_path(path: str) -> str:
    """A Kubernetes JSONPath (as written in a feedback rule) in jsonpath-ng syntax."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if "\\." in text:
        text = _quote_escaped_segments(text)
    if text.startswith("$"):
        return text
    if text.startswith(".") or text.startswith("["):
        return "$" + text
    return "$." + text


@lru_cache(maxsize=512)
def _compile(path: str) -> JSONPath:
    return _parse_jsonpath(translate_path(path))


def _go_type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, float):
        return "float64"
    return type(value).__name__


def value_by_path(name: str, path: str, obj: Mapping[str, Any], *, raw_json: bool = False) -> dict[str, Any] | None:
    """The feedback value ``{name, fieldValue}`` found at ``path``; ``None`` when nothing matches.

    Raises FeedbackError for an unparsable path or a value that cannot be reported.
    """
    try:
        compiled = _compile(path)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # jsonpath-ng raises bare Exception too
        raise FeedbackError(f"failed to parse json path {path} of {name} with error: {exc}") from None
    try:
        matches = [m.value for m in compiled.find(obj)]
    except Exception as exc:  # an evaluation failure inside jsonpath-ng
        raise FeedbackError(f"failed to find value for {name} with error: {exc}") from None
    if not matches:
        return None
    value: Any = matches if (raw_json and len(matches) > 1) else matches[0]
    if value is None:
        return None
    if isinstance(value, bool):
        return {"name": name, "fieldValue": {"type": names.FIELD_VALUE_BOOLEAN, "boolean": value}}
    if isinstance(value, int):
        return {"name": name, "fieldValue": {"type": names.FIELD_VALUE_INTEGER, "integer": value}}
    if isinstance(value, str):
        return {"name": name, "fieldValue": {"type": names.FIELD_VALUE_STRING, "string": value}}
    if raw_json:
        raw = json.dumps(value, sort_keys=True, separators=(",", ":"))
        if len(raw) > MAX_JSON_RAW_LENGTH:
            raise FeedbackError(
                f"the length of returned json raw string for name {name} is larger than "
                f"the maximum length {MAX_JSON_RAW_LENGTH}"
            )
        return {"name": name, "fieldValue": {"type": names.FIELD_VALUE_JSON_RAW, "jsonRaw": raw}}
    raise FeedbackError(f"the type {_go_type_name(value)} of the value for {name} is not found")


def values_by_rule(rule: Mapping[str, Any], obj: Mapping[str, Any], *, raw_json: bool = False) -> FeedbackResult:
    """The values one feedback rule produces for ``obj``, with the errors met on the way."""
    values: list[dict[str, Any]] = []
    errors: list[str] = []
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    rule_type = rule.get("type")
    if rule_type == names.FEEDBACK_WELL_KNOWN_STATUS:
        paths = WELL_KNOWN_STATUS.get((group, version, kind))
        if not paths:
            return FeedbackResult(
                [], [f"cannot find the wellknown statuses for resource with gvk {gvk_string(group, version, kind)}"]
            )
        for value_name, path in paths:
            try:
                found = value_by_path(value_name, path, obj, raw_json=raw_json)
            except FeedbackError as exc:
                errors.append(str(exc))
                continue
            if found is not None:
                values.append(found)
    elif rule_type == names.FEEDBACK_JSON_PATHS:
        for entry in rule.get("jsonPaths") or ():
            value_name = str(entry.get("name", ""))
            wanted_version = entry.get("version") or ""
            if wanted_version and wanted_version != version:
                errors.append(f"version set in the path {value_name} is not matched for the related resource")
                continue
            try:
                found = value_by_path(value_name, str(entry.get("path", "")), obj, raw_json=raw_json)
            except FeedbackError as exc:
                errors.append(str(exc))
                continue
            if found is not None:
                values.append(found)
    return FeedbackResult(values, errors)


def feedback_values(
    rules: Sequence[Mapping[str, Any]], obj: Mapping[str, Any], *, raw_json: bool = False
) -> FeedbackResult:
    """Values of every rule, rule by rule and path by path, and all errors."""
    values: list[dict[str, Any]] = []
    errors: list[str] = []
    for rule in rules:
        result = values_by_rule(rule, obj, raw_json=raw_json)
        values.extend(result.values)
        errors.extend(result.errors)
    return FeedbackResult(values, errors)
