"""The JSONPath subset CRD printer columns use (kubectl's syntax, e.g.
`.status.conditions[?(@.type=="Available")].status`, `.spec.items[*].url`, `.metadata.labels['a/b']`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Step = Callable[[list[Any]], list[Any]]

_FILTER = re.compile(r"""^\?\(@((?:\.[^=!<>\s]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|([^\s)]+))\)$""")


class JsonPathError(ValueError):
    pass


def _field(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        return [v[name] for v in values if isinstance(v, dict) and name in v]

    return step


def _all(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, list):
            out.extend(v)
        elif isinstance(v, dict):
            out.extend(v.values())
    return out


def _index(idx: int) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            if isinstance(v, list) and -len(v) <= idx < len(v):
                out.append(v[idx])
        return out

    return step


def _lookup(item: Any, path: list[str]) -> Any:
    cur = item
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def _filter(expr: str) -> Step:
    m = _FILTER.match(expr)
    if m is None:
        raise JsonPathError(f"unsupported filter {expr!r}")
    path = m.group(1)[1:].split(".")
    op = m.group(2)
    literal = next((g for g in (m.group(3), m.group(4)) if g is not None), None)
    raw = m.group(5)

    def want(value: Any) -> bool:
        if literal is not None:
            return isinstance(value, str) and value == literal
        assert raw is not None
        if isinstance(value, bool):
            return str(value).lower() == raw
        return str(value) == raw

    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            items = v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
            for item in items:
                got = _lookup(item, path)
                ok = got is not None and want(got)
                if (op == "==" and ok) or (op == "!=" and got is not None and not ok):
                    out.append(item)
        return out

    return step


def compile_path(expression: str) -> Callable[[Any], list[Any]]:
    """Compile a printer-column JSONPath into a function returning every match."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ".":
            j = i + 1
            while j < len(text) and text[j] not in ".[":
                j += 1
            name = text[i + 1 : j]
            if name:
                steps.append(_field(name))
            i = j
        elif ch == "[":
            depth, j = 0, i
            while j < len(text):
                if text[j] == "[":
                    depth += 1
                elif text[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(text):
                raise JsonPathError(f"unclosed '[' in {expression!r}")
            inner = text[i + 1 : j].strip()
            if inner == "*":
                steps.append(_all)
            elif inner.startswith("?"):
                steps.append(_filter(inner))
            elif re.fullmatch(r"-?\d+", inner):
                steps.append(_index(int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(_field(inner[1:-1]))
            else:
                raise JsonPathError(f"unsupported subscript [{inner}] in {expression!r}")
            i = j + 1
        else:
            raise JsonPathError(f"unexpected {ch!r} at {i} in {expression!r}")

    def run(obj: Any) -> list[Any]:
        values = [obj]
        for step in steps:
            values = step(values)
            if not values:
                break
        return values

    return run
