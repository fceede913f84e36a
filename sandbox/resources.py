"""The API resources the hub serves: built-in kinds and those defined by CRDs."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.sandbox.conversion import WebhookConfig
from ocm_rollout.sandbox.schema import CompiledSchema
from ocm_rollout.sandbox.strategy import KindStrategy

Cell = Callable[[dict[str, Any]], Any]

META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass
class Column:
    """A Table column: its definition as served, and how to compute its cell."""

    name: str
    type: str
    cell: Cell
    format: str = ""
    description: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass
class Version:
    name: str
    schema_source: dict[str, Any] | None
    served: bool = True
    storage: bool = False
    status: bool = False
    columns: list[Column] = field(default_factory=list)
    deprecated: bool = False
    deprecation_warning: str | None = None
    _compiled: CompiledSchema | None = field(default=None, repr=False, compare=False)

    def schema(self) -> CompiledSchema:
        if self._compiled is None:
            self._compiled = compiled_schema(self.schema_source)
        return self._compiled


@dataclass
class ResourceType:
    """One API resource (group + plural), served at one or more versions."""

    group: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    namespaced: bool
    versions: dict[str, Version]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    # Storage bucket: two resources sharing a bucket are two views of the same objects.
    bucket: str = ""
    field_selectors: frozenset[str] = META_FIELDS
    builtin: bool = True
    # Objects are never stored (reviews): POST returns the computed answer.
    virtual: bool = False
    # kube-apiserver answers a DELETE that removed the object with the object for a few kinds (a
    # ServiceAccount), and with a Status for the others, custom resources included.
    returns_deleted_object: bool = False
    allow_create_on_update: bool = False
    # Whether objects carry metadata.generation (CRs, CRDs).
    has_generation: bool = False
    extra_subresources: tuple[str, ...] = ()
    # events.k8s.io/v1 <-> core/v1 events: convert to and from the bucket's stored form.
    to_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    from_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # A CRD whose versions a conversion webhook converts (spec.conversion.strategy: Webhook).
    webhook: WebhookConfig | None = None
    # Kind-specific defaulting, field resets and validation (RBAC, CSRs): sandbox/strategy.py.
    strategy: KindStrategy | None = None

    def __post_init__(self) -> None:
        if not self.bucket:
            self.bucket = f"{self.group}/{self.plural}"

    @property
    def storage_version(self) -> str:
        for v in self.versions.values():
            if v.storage:
                return v.name
        return next(iter(self.versions))

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def served_versions(self) -> list[str]:
        return sort_versions([v.name for v in self.versions.values() if v.served])

    def subresources(self, version: str) -> list[str]:
        """The subresources served at `version`: status (when enabled), then any extra ones."""
        return ["status", *self.extra_subresources] if self.versions[version].status else list(self.extra_subresources)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key implementing Kubernetes' version ordering (GA > beta > alpha, higher first)."""
    m = _VERSION.match(name)
    if not m:
        return (3, 0, 0, name)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, name)


def sort_versions(names: Iterable[str]) -> list[str]:
    return sorted(names, key=version_priority)


_SCHEMA_CACHE: dict[str, CompiledSchema] = {}
_SCHEMA_LOCK = threading.Lock()


def compiled_schema(source: dict[str, Any] | None) -> CompiledSchema:
    """Compile (or reuse) the schema; shared across hubs in one process, keyed by content."""
    key = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()
    found = _SCHEMA_CACHE.get(key)
    if found is not None:
        return found
    with _SCHEMA_LOCK:
        found = _SCHEMA_CACHE.get(key)
        if found is None:
            found = CompiledSchema(source)
            _SCHEMA_CACHE[key] = found
    return found
