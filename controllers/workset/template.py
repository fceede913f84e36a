"""Does a ManifestWork's spec equal the ManifestWorkReplicaSet's template? (docs/behaviour/mwrs.md 5.5)

- Every manifest is compared as a JSON object after dropping ``metadata.creationTimestamp`` and
  ``spec.template.metadata.creationTimestamp``; inside a manifest a missing key differs from an
  empty value, and key order never matters.
- Every other spec field is compared with Go zero-value semantics: a missing field, ``null``,
  ``""``, ``0``, ``false``, ``[]`` and ``{}`` are all the same thing.
Labels and annotations are not part of the comparison.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

_ABSENT = object()


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {} or (
        isinstance(value, int | float) and not isinstance(value, bool) and value == 0
    )


def _zero_normal(value: Any) -> Any:
    """``value`` with every zero-valued field removed, recursively; a zero value becomes _ABSENT."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            normal = _zero_normal(item)
            if normal is not _ABSENT:
                out[str(key)] = normal
        return out if out else _ABSENT
    if isinstance(value, list):
        items = [_zero_normal(item) for item in value]
        # A zero element keeps its place in a list (Go compares element by element).
        items = [None if item is _ABSENT else item for item in items]
        return items if items else _ABSENT
    if _is_zero(value):
        return _ABSENT
    return value


def _manifest_normal(manifest: Any) -> Any:
    if not isinstance(manifest, Mapping):
        return ("raw", json.dumps(manifest, sort_keys=True))
    body = copy.deepcopy(dict(manifest))
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("creationTimestamp", None)
    spec = body.get("spec")
    if isinstance(spec, dict):
        template = spec.get("template")
        if isinstance(template, dict):
            template_meta = template.get("metadata")
            if isinstance(template_meta, dict):
                template_meta.pop("creationTimestamp", None)
    return ("json", json.dumps(body, sort_keys=True, separators=(",", ":")))


def normal_spec(spec: Mapping[str, Any] | None) -> Any:
    """A canonical, comparable form of a ManifestWork spec."""
    body = dict(spec or {})
    workload = body.pop("workload", None)
    manifests: list[Any] = []
    rest_of_workload: Any = _ABSENT
    if isinstance(workload, Mapping):
        raw = workload.get("manifests")
        if isinstance(raw, list):
            manifests = [_manifest_normal(m) for m in raw]
        rest_of_workload = _zero_normal({k: v for k, v in workload.items() if k != "manifests"})
    elif workload is not None:
        rest_of_workload = _zero_normal(workload)
    rest = _zero_normal(body)
    return json.dumps(
        {
            "manifests": manifests,
            "workload": None if rest_of_workload is _ABSENT else rest_of_workload,
            "rest": None if rest is _ABSENT else rest,
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def form_hash(form: str) -> str:
    """A short hash of a spec's canonical form (``normal_spec``)."""
    return hashlib.sha256(form.encode()).hexdigest()[:32]


def spec_equals_template(spec: Mapping[str, Any] | None, template: Mapping[str, Any] | None) -> bool:
    """Whether a work with ``spec`` is up to date with the MWRS ``template``."""
    return normal_spec(spec) == normal_spec(template)


class TemplateComparer:
    """Compares many work specs against one template, normalising the template once."""

    def __init__(self, template: Mapping[str, Any] | None) -> None:
        self._template = normal_spec(template)

    def matches(self, spec: Mapping[str, Any] | None) -> bool:
        return normal_spec(spec) == self._template
