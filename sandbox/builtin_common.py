"""Schema atoms and helpers shared by the modules that declare built-in kinds (builtin.py,
builtin_rbac.py, builtin_csr.py)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.resources import Column, ResourceType, Version

S: dict[str, Any] = {"type": "string"}
I32: dict[str, Any] = {"type": "integer", "format": "int32"}
B: dict[str, Any] = {"type": "boolean"}
BYTES: dict[str, Any] = {"type": "string", "format": "byte"}
STR_MAP: dict[str, Any] = {"type": "object", "additionalProperties": S}
BYTE_MAP: dict[str, Any] = {"type": "object", "additionalProperties": BYTES}
META: dict[str, Any] = {"type": "object"}
ANY_OBJECT: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
STRING_LIST: dict[str, Any] = {"type": "array", "items": S}


def obj(**props: Any) -> dict[str, Any]:
    """An object schema with these properties."""
    return {"type": "object", "properties": props}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


LABEL_SELECTOR = obj(
    matchLabels=STR_MAP,
    matchExpressions=array(obj(key=S, operator=S, values=STRING_LIST)),
)


def get_path(o: dict[str, Any], *path: str) -> Any:
    cur: Any = o
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def column(title: str, path: str, type_: str = "string", **options: Any) -> Column:
    """A column showing the value at a dotted `path` of the object."""
    keys = path.split(".")
    return Column(title, type_, lambda o: get_path(o, *keys), **options)


def kind_type(
    group: str,
    kind: str,
    props: dict[str, Any],
    columns: list[Column],
    *,
    namespaced: bool = True,
    status: bool = False,
    **options: Any,
) -> ResourceType:
    """A built-in kind served at v1 with the schema `props` (besides apiVersion, kind, metadata),
    under Kubernetes' default names (plural `<kind>s`, list kind `<Kind>List`)."""
    schema = obj(apiVersion=S, kind=S, metadata=META, **props)
    return ResourceType(
        group=group,
        plural=f"{kind.lower()}s",
        singular=kind.lower(),
        kind=kind,
        list_kind=f"{kind}List",
        namespaced=namespaced,
        versions={"v1": Version("v1", schema, storage=True, status=status, columns=columns)},
        **options,
    )
