"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch is the subset kubectl and client libraries produce for the core kinds the
hub serves: maps merge recursively, `null` deletes, lists are replaced unless the field is one
of the merge lists below, and the `$patch`, `$retainKeys`, `$setElementOrder/...` and
`$deleteFromPrimitiveList/...` directives are honoured.
"""

from __future__ import annotations

import copy
from typing import Any

from ocm_rollout.sandbox.errors import ApiError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: returns a new document; `target` is not modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


# JSON patch ---------------------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise bad_request("json patch: 'path' must be a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"json patch: path {path!r} must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _unprocessable(f"json patch: invalid array index {token!r}")
    idx = int(token)
    limit = len(container) if for_add else len(container) - 1
    if idx > limit:
        raise _unprocessable(f"json patch: array index {idx} out of bounds")
    return idx


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _missing(op: str, tokens: list[str], what: str = "path") -> ApiError:
    return _unprocessable(f"json patch {op} operation does not apply: doc is missing {what}: /{'/'.join(tokens)}")


def _parent(doc: Any, tokens: list[str], op: str) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise _missing(op, tokens)
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_index(cur, tok, for_add=False)]
        else:
            raise _missing(op, tokens)
    return cur


def _get(doc: Any, tokens: list[str], op: str) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _missing(op, tokens, "key")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_add=False)]
    raise _missing(op, tokens)


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, "add")
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise _missing("add", tokens)
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    if not tokens:
        raise _unprocessable("json patch: cannot remove the whole document")
    parent = _parent(doc, tokens, "remove")
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _missing("remove", tokens, "key")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, for_add=False))
    raise _missing("remove", tokens)


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 over a deep copy of `target`."""
    if not isinstance(ops, list):
        raise bad_request("json patch: the body must be a JSON array of operations")
    doc = copy.deepcopy(target)
    for n, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op:
            raise bad_request(f"json patch: operation {n} must be an object with an 'op' field")
        kind = op["op"]
        tokens = _pointer(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"json patch: operation {n} ({kind}) needs a 'value'")
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens, "replace")
            if tokens:
                doc, _ = _remove(doc, tokens)
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "move":
            source = _pointer(op.get("from"))
            doc, value = _remove(doc, source)
            doc = _add(doc, tokens, value)
        elif kind == "copy":
            source = _pointer(op.get("from"))
            doc = _add(doc, tokens, copy.deepcopy(_get(doc, source, "copy")))
        elif kind == "test":
            if _get(doc, tokens, "test") != op["value"]:
                raise _unprocessable(f"json patch: test operation failed at {op.get('path')!r}")
        else:
            raise bad_request(f"json patch: unknown operation {kind!r}")
    return doc


# Strategic merge patch ----------------------------------------------------------------------------

# Lists merged by key in the kinds the hub serves (path from the object root -> merge key).
# A merge key of "" means a list of scalars merged as a set.
MERGE_LISTS: dict[tuple[str, ...], str] = {
    ("metadata", "finalizers"): "",
    ("metadata", "ownerReferences"): "uid",
    ("secrets",): "name",  # ServiceAccount
}


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch: the body must be a JSON object")
    return _smp_map(target if isinstance(target, dict) else {}, patch, ())


def _smp_map(target: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    if directive is not None:
        raise bad_request(f"strategic merge patch: unknown $patch directive {directive!r}")
    result = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        sub = (*path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                cur = result.get(key)
                result[key] = _smp_map(cur if isinstance(cur, dict) else {}, value, sub)
        elif isinstance(value, list) and sub in MERGE_LISTS:
            result[key] = _smp_list(result.get(key), value, MERGE_LISTS[sub])
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        keep = set(retain)
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _smp_list(current: Any, patch: list[Any], key: str) -> list[Any]:
    base = list(current) if isinstance(current, list) else []
    if not key:
        out = list(base)
        for item in patch:
            if item not in out:
                out.append(copy.deepcopy(item))
        return out
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    out = [copy.deepcopy(i) for i in base]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"strategic merge patch: list item {item!r} has no merge key {key!r}")
        existing = next((i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if existing is not None:
                out.pop(existing)
            continue
        if existing is None:
            out.append(copy.deepcopy(item))
        else:
            out[existing] = _smp_map(out[existing], item, ())
    return out
