"""The compile-time declarations check: a parsed AST in, nothing out or a ``CelCompileError``.

celpy has no static checker. ``Checker`` rejects what OCM's environment does not declare
(``cel_declarations``): an identifier that is neither ``managedCluster``, a type name nor a
variable bound by a macro, an undeclared function or method, an optional-types function with
the wrong number of arguments, a malformed macro or ``has()``, and message construction. Errors
are worded and located the way cel-go reports them
(``ERROR: <input>:1:1: undeclared reference to 'x' (in container '')``, then the source line and
a caret).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import lark

from ocm_rollout.controllers.common.cel_declarations import (
    GLOBAL_FUNCTIONS,
    MACROS,
    MEMBER_FUNCTIONS,
    OPTIONAL_GLOBALS,
    OPTIONAL_MACROS,
    OPTIONAL_MEMBERS,
    TYPE_IDENTS,
    VARIABLE,
)
from ocm_rollout.controllers.common.cel_grammar import call_arguments, has_select, macro_variable


class CelCompileError(ValueError):
    """An expression that does not compile; ``str()`` is the message OCM would report."""


def located(source: str, line: int | None, column: int | None, message: str) -> str:
    """cel-go's error text: ``ERROR: <input>:line:column: message``, the line and a caret."""
    line = line or 1
    column = column or 1
    text = f"ERROR: <input>:{line}:{column}: {message}"
    lines = source.splitlines() or [""]
    if 1 <= line <= len(lines):
        text += f"\n | {lines[line - 1]}\n | {'.' * (column - 1)}^"
    return text


class Checker:
    """Rejects undeclared identifiers and functions, and malformed macros."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, token: lark.Token | None, tree: lark.Tree | None, message: str) -> None:
        line = getattr(token, "line", None) if token is not None else None
        column = getattr(token, "column", None) if token is not None else None
        if line is None and tree is not None:
            meta = getattr(tree, "meta", None)
            line = getattr(meta, "line", None)
            column = getattr(meta, "column", None)
        raise CelCompileError(located(self.source, line, column, message))

    def undeclared(self, token: lark.Token) -> None:
        self.fail(token, None, f"undeclared reference to '{token.value}' (in container '')")

    def check(self, node: Any, scope: frozenset[str]) -> None:
        if not isinstance(node, lark.Tree):
            return
        kind = node.data
        if kind in ("ident", "dot_ident"):
            token = _token(node.children[0])
            name = token.value
            if name not in scope and name != VARIABLE and name not in TYPE_IDENTS:
                self.undeclared(token)
            return
        if kind in ("ident_arg", "dot_ident_arg"):
            token = _token(node.children[0])
            args = call_arguments(node, 1)
            if token.value == "has":
                self._check_has(token, args, scope)
                return
            if token.value not in GLOBAL_FUNCTIONS:
                self.undeclared(token)
            if token.value in OPTIONAL_GLOBALS and len(args) != OPTIONAL_GLOBALS[token.value]:
                self.fail(token, None, _no_overload(token.value, len(args)))
            for arg in args:
                self.check(arg, scope)
            return
        if kind == "member_dot_arg":
            self._check_call(node, scope)
            return
        if kind == "member_object":
            self.fail(None, node, "message construction is not supported (no message types are declared)")
        for child in node.children:
            self.check(child, scope)

    def _check_has(self, token: lark.Token, args: list[Any], scope: frozenset[str]) -> None:
        target = has_select(args)
        if target is None:
            self.fail(token, None, "invalid argument to has() macro")
            return
        self.check(target, scope)

    def _check_call(self, node: lark.Tree, scope: frozenset[str]) -> None:
        member, token = node.children[0], _token(node.children[1])
        items = call_arguments(node, 2)
        name = token.value
        self.check(member, scope)
        if name in MACROS:
            if len(items) not in MACROS[name]:
                self.fail(token, None, f"no matching overload for '{name}' with {len(items)} arguments")
            var = macro_variable(items[0])
            if var is None:
                if name in OPTIONAL_MACROS:
                    self.fail(token, None, f"{name}() variable name must be a simple identifier")
                self.fail(token, None, f"argument must be a simple name in macro '{name}'")
                return
            inner = scope | {_token(var.children[0]).value}
            for item in items[1:]:
                self.check(item, inner)
            return
        if name not in MEMBER_FUNCTIONS:
            self.undeclared(token)
        if name in OPTIONAL_MEMBERS and len(items) != OPTIONAL_MEMBERS[name]:
            self.fail(token, None, _no_overload(name, len(items)))
        for item in items:
            self.check(item, scope)


def _no_overload(name: str, count: int) -> str:
    return f"found no matching overload for '{name}' applied to {count} argument{'' if count == 1 else 's'}"


def _token(node: Any) -> lark.Token:
    if not isinstance(node, lark.Token):
        raise CelCompileError("ERROR: <input>:1:1: malformed expression")
    return node
