"""The `Table` rendering `kubectl get` asks for (`application/json;as=Table;v=v1;g=meta.k8s.io`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.sandbox.agents.conditions import parse_time
from ocm_rollout.sandbox.jsonpath import JsonPathError, compile_path
from ocm_rollout.sandbox.resources import Column


def human_duration(seconds: float) -> str:
    """Kubernetes' short human-readable duration (what the AGE column shows)."""
    if seconds < -1:
        return "<invalid>"
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        rest = s % 60
        return f"{m}m{rest}s" if rest else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        rest = (s % 3600) // 60
        return f"{h}h{rest}m" if rest else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        rest = h % 24
        return f"{d}d{rest}h" if rest else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    y = d // 365
    if d < 365 * 8:
        rest = d % 365
        return f"{y}y{rest}d" if rest else f"{y}y"
    return f"{y}y"


def age_of(value: Any, now: datetime | None = None) -> str | None:
    ts = parse_time(value)
    if ts is None:
        return "<unknown>" if value else None
    now = now or datetime.now(UTC)
    return human_duration((now - ts).total_seconds())


def name_column() -> Column:
    return Column(
        "Name",
        "string",
        lambda o: o.get("metadata", {}).get("name", ""),
        format="name",
        description="Name must be unique within a namespace.",
    )


def age_column(name: str = "Age") -> Column:
    return Column(
        name,
        "date",
        lambda o: age_of(o.get("metadata", {}).get("creationTimestamp")),
        description="CreationTimestamp is a timestamp representing the server time when this object was created.",
    )


def printer_column(spec: dict[str, Any]) -> Column:
    """A CRD additionalPrinterColumn, rendered the way kube-apiserver renders it."""
    path = spec.get("jsonPath", "")
    kind = spec.get("type", "string")
    try:
        find = compile_path(path)
    except JsonPathError:

        def find(_obj: Any) -> list[Any]:
            return []

    def cell(obj: dict[str, Any]) -> Any:
        found = find(obj)
        if not found:
            return None
        value = found[0]
        if kind == "date":
            return age_of(value) if isinstance(value, str) else None
        if kind == "string":
            if isinstance(value, str):
                return value
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, (dict, list)):
                return json.dumps(value, separators=(",", ":"))
            return str(value)
        if kind == "integer":
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if kind == "number":
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if kind == "boolean":
            return value if isinstance(value, bool) else None
        return value

    return Column(
        spec.get("name", path),
        kind,
        cell,
        format=spec.get("format", ""),
        description=spec.get("description", ""),
        priority=int(spec.get("priority", 0) or 0),
    )


def crd_columns(printer_columns: list[dict[str, Any]] | None) -> list[Column]:
    if not printer_columns:
        return [name_column(), age_column()]
    return [name_column(), *(printer_column(c) for c in printer_columns)]


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def row(obj: dict[str, Any], columns: list[Column], include: str) -> dict[str, Any]:
    out: dict[str, Any] = {"cells": [c.cell(obj) for c in columns]}
    if include == "Object":
        out["object"] = obj
    elif include != "None":
        out["object"] = partial_metadata(obj)
    return out


def table(
    objects: list[dict[str, Any]],
    columns: list[Column],
    *,
    include: str = "Metadata",
    resource_version: str | None = None,
    cont: str | None = None,
    remaining: int | None = None,
    headers: bool = True,
) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if cont:
        meta["continue"] = cont
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [c.definition() for c in columns] if headers else [],
        "rows": [row(o, columns, include) for o in objects],
    }
