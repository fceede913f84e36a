"""Least privilege, measured: compare the API requests the controllers made with the RBAC rules
the Helm chart grants them.

- ``request_from_http`` turns one HTTP request (method, path, query) into the Kubernetes
  authorization attributes the API server checks: (verb, group, resource, subresource), the way
  kube-apiserver's request-info resolver does; discovery and other non-resource URLs give None.
- ``rules_from_objects`` reads the rules of rendered ClusterRoles/Roles.
- ``check`` reports the requests no rule grants (the chart is too tight: the controller would
  get 403 in a real cluster) and the granted (group, resource/subresource, verb) triples no
  request used (the chart is too wide), minus the permissions marked ``measured: false`` in the
  chart's ``files/rbac.yaml`` (checked by an admission plugin, never requested).

Pure functions; no I/O except ``load_catalog`` reading the chart's rules file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# /api/v1/namespaces/<name>/<these> address the Namespace itself, not a namespaced resource.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, order=True)
class Request:
    """Authorization attributes of one resource request (group "" is the core API)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.full_resource}"


@dataclass(frozen=True)
class Rule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def grants(self, request: Request) -> bool:
        """Whether this rule allows ``request`` (ignoring resourceNames, which narrow by name)."""
        return (
            ("*" in self.api_groups or request.group in self.api_groups)
            and ("*" in self.resources or request.full_resource in self.resources)
            and ("*" in self.verbs or request.verb in self.verbs)
        )

    def triples(self) -> set[Request]:
        return {Request(v, g, *_split(r)) for g in self.api_groups for r in self.resources for v in self.verbs}


def _split(resource: str) -> tuple[str, str]:
    name, _, sub = resource.partition("/")
    return name, sub


@dataclass
class Report:
    ungranted: list[Request] = field(default_factory=list)
    unused: list[Request] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.ungranted and not self.unused

    def describe(self) -> str:
        lines = [f"not granted: {r}" for r in self.ungranted] + [f"granted but unused: {r}" for r in self.unused]
        return "\n".join(lines) or "ok"


def request_from_http(method: str, path: str, query: Mapping[str, str] | None = None) -> Request | None:
    """The (verb, group, resource, subresource) of an HTTP request; None for non-resource URLs."""
    query = query or {}
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None  # discovery of a group/version
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        rest = rest[2:]  # /namespaces/<ns>/<resource>/...
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    method = method.upper()
    watching = str(query.get("watch", "")).lower() in ("1", "true")
    if method == "GET":
        verb = "watch" if watching else ("get" if name else "list")
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        return None
    return Request(verb, group, resource, subresource)


def rules_from_objects(objects: Iterable[Mapping[str, Any]]) -> list[Rule]:
    """The rules of every ClusterRole and Role among ``objects``."""
    rules: list[Rule] = []
    for obj in objects:
        if obj.get("kind") not in ("ClusterRole", "Role"):
            continue
        for rule in obj.get("rules") or []:
            rules.append(
                Rule(
                    api_groups=tuple(rule.get("apiGroups") or ()),
                    resources=tuple(rule.get("resources") or ()),
                    verbs=tuple(rule.get("verbs") or ()),
                    resource_names=tuple(rule.get("resourceNames") or ()),
                )
            )
    return rules


def check(requests: Iterable[Request], rules: Iterable[Rule], *, exempt: Iterable[Request] = ()) -> Report:
    """Requests no rule grants, and granted triples no request used (``exempt`` excluded)."""
    rule_list = list(rules)
    seen = set(requests)
    ungranted = sorted(r for r in seen if not any(rule.grants(r) for rule in rule_list))
    granted: set[Request] = set()
    for rule in rule_list:
        granted |= rule.triples()
    unused = sorted(t for t in granted - set(exempt) if not any(_covers(t, r) for r in seen))
    return Report(ungranted=ungranted, unused=unused)


def _covers(triple: Request, request: Request) -> bool:
    return Rule((triple.group,), (triple.full_resource,), (triple.verb,)).grants(request)


@dataclass(frozen=True)
class CatalogRule:
    """One entry of the chart's ``files/rbac.yaml``."""

    rule: Rule
    why: str
    measured: bool


def load_catalog(path: str | Path) -> dict[str, list[CatalogRule]]:
    """The chart's rules per controller (``common`` included as its own key)."""
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    catalog: dict[str, list[CatalogRule]] = {}
    for controller, entries in raw.items():
        catalog[str(controller)] = [
            CatalogRule(
                rule=Rule(
                    api_groups=tuple(entry.get("apiGroups") or ()),
                    resources=tuple(entry.get("resources") or ()),
                    verbs=tuple(entry.get("verbs") or ()),
                ),
                why=str(entry.get("why") or ""),
                measured=bool(entry.get("measured", True)),
            )
            for entry in entries or []
        ]
    return catalog


def exempt_triples(catalog: Mapping[str, list[CatalogRule]], controllers: Iterable[str]) -> set[Request]:
    """The (verb, group, resource) triples of the unmeasured rules of ``controllers`` (and common)."""
    out: set[Request] = set()
    for name in ["common", *controllers]:
        for entry in catalog.get(name, []):
            if not entry.measured:
                out |= entry.rule.triples()
    return out
