"""Per-kind admission of built-in kinds, as kube-apiserver's REST strategies do it.

A `KindStrategy` on a `ResourceType` lets a small module (RBAC, CSRs) say how its kind is
defaulted, which fields a write may touch on each endpoint (the main one and each subresource),
and how the result is validated, without the engine knowing the kind. The engine calls, in
kube-apiserver's order:

- create: `default`, `prepare_create`, then schema validation and `validate(new, None, None)`;
- update (PUT/PATCH on the object or one of its subresources): `default`, `prepare_update`,
  then schema validation and `validate(new, old, subresource)`.

The helpers below write a field error the way k8s.io/apimachinery's `field.Error` does, so a
422 reads as kube-apiserver's.
"""

from __future__ import annotations

import json
from typing import Any

from ocm_rollout.sandbox.errors import cause

Cause = dict[str, str]


class KindStrategy:
    """The default: no defaulting, nothing reset, nothing validated beyond the schema."""

    def name_errors(self, name: str) -> list[str] | None:
        """Complaints about `metadata.name` (None: the engine's RFC 1123 subdomain rule)."""
        return None

    def default(self, obj: dict[str, Any]) -> None:
        """Server-side defaults (what decoding a request body sets)."""

    def prepare_create(self, obj: dict[str, Any], user: str, groups: tuple[str, ...]) -> None:
        """Reset what a create may not set; `user` and `groups` are the requester's."""

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str | None) -> None:
        """Reset what a write to this endpoint may not change (`new` is edited in place)."""

    def validate(self, new: dict[str, Any], old: dict[str, Any] | None, subresource: str | None) -> list[Cause]:
        return []


# field errors, as k8s.io/apimachinery/pkg/util/validation/field writes them ----------------------


def go_value(value: Any) -> str:
    """A value as `field.Error` shows it: strings quoted, numbers plain, bytes and lists in Go
    syntax (`%#v`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bytes | bytearray):
        return "[]byte{" + ", ".join(f"0x{b:x}" for b in value) + "}"
    if isinstance(value, list):
        return "[]string{" + ", ".join(go_value(v) for v in value) + "}"
    if value is None:
        return "null"
    return str(value)


def required(path: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", path, f"Required value: {detail}" if detail else "Required value")


def invalid(path: str, value: Any, detail: str, *, shown: str | None = None) -> Cause:
    return cause("FieldValueInvalid", path, f"Invalid value: {shown if shown is not None else go_value(value)}: {detail}")


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    listed = ", ".join(json.dumps(s) for s in supported)
    return cause("FieldValueNotSupported", path, f"Unsupported value: {go_value(value)}: supported values: {listed}")


def duplicate(path: str, value: Any) -> Cause:
    return cause("FieldValueDuplicate", path, f"Duplicate value: {go_value(value)}")


def forbidden(path: str, detail: str) -> Cause:
    return cause("FieldValueForbidden", path, f"Forbidden: {detail}")


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
