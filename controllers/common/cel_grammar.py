"""Parsing: CEL source text in, a lark AST out (celpy's grammar with cel-go's optional syntax).

celpy's grammar lacks cel-go's optional syntax; this module extends it with ``x.?f``, ``x[?k]``,
``[?e]`` list elements and ``{?k: v}`` map entries (lists and maps may also end with a comma,
as in cel-go), rewrites ``optional.of(x)`` into a call of the function ``optional.of``, and words
syntax errors the way cel-go does. It also has the helpers that read the AST's shapes (wrapper
chains, call arguments, macro variables, the select of ``has()``), shared by the checks and the
evaluator.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy.celparser import CELParser
from lark.exceptions import LexError, ParseError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from ocm_rollout.controllers.common.cel_declarations import OPTIONAL_GLOBALS

# Rules added to celpy's grammar (its installed cel.lark): the optional member forms, and list
# and map literals whose elements / entries may be optional (and, as in cel-go, may end with a
# comma). ``list_lit`` and ``mapinits`` are replaced by the versions below (``cel_eval``
# evaluates them).
_OPTIONAL_RULES = """
member_dot_opt   : member "." "?" IDENT
member_index_opt : member "[" "?" expr "]"
listinits        : listinit ("," listinit)* [","]
?listinit        : expr | opt_element
opt_element      : "?" expr
?mapinit         : map_entry | opt_map_entry
map_entry        : expr ":" expr
opt_map_entry    : "?" expr ":" expr
"""
_GRAMMAR_EDITS = (
    (re.compile(r"^(member\s*:)", re.M), r"\1 member_dot_opt | member_index_opt |"),
    (re.compile(r"^list_lit\s*:.*$", re.M), 'list_lit       : "[" [listinits] "]"'),
    (re.compile(r"^mapinits\s*:.*$", re.M), 'mapinits       : mapinit ("," mapinit)* [","]'),
)

# The rules that are either an operator application or a single operand (``expr`` is also the
# conditional ``a ? b : c``).
OPERATOR_RULES = ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary")
_WRAPPER_RULES = (*OPERATOR_RULES, "member", "primary")


@functools.cache
def _parser() -> lark.Lark:
    """A LALR parser for CEL with optional syntax, built once from celpy's grammar."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text(encoding="utf-8")
    for pattern, replacement in _GRAMMAR_EDITS:
        grammar, count = pattern.subn(replacement, grammar)
        if count != 1:
            raise RuntimeError(f"celpy's grammar has changed: cannot add CEL's optional syntax at {pattern.pattern!r}")
    return lark.Lark(
        grammar + _OPTIONAL_RULES,
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def _syntax_error(exc: Exception) -> str:
    if isinstance(exc, UnexpectedEOF):
        return "mismatched input '<EOF>'"
    if isinstance(exc, UnexpectedToken):
        if exc.token.type == "$END":
            return "mismatched input '<EOF>'"
        return f"mismatched input '{exc.token.value}'"
    if isinstance(exc, UnexpectedCharacters):
        return f"token recognition error at: '{exc.char}'"
    return str(exc.args[0]).splitlines()[0] if exc.args else "invalid expression"


def parse(source: str) -> lark.Tree:
    """Parse one expression; raise celpy.CELParseError with cel-go's wording where it can."""
    try:
        tree = _parser().parse(source)
    except (UnexpectedToken, UnexpectedCharacters, UnexpectedEOF) as exc:
        line = exc.line if isinstance(exc.line, int) and exc.line > 0 else None
        column = exc.column if isinstance(exc.column, int) and exc.column > 0 else None
        if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
            lines = source.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
        raise celpy.CELParseError(_syntax_error(exc), line=line, column=column) from None
    except (LexError, ParseError) as exc:
        raise celpy.CELParseError(_syntax_error(exc)) from None
    return _namespaced_optional_calls(tree)


def _namespaced_optional_calls(tree: lark.Tree) -> lark.Tree:
    """Turn ``optional.of(x)`` (a method ``of`` on an identifier ``optional``) into a call of
    the function ``optional.of``, as cel-go resolves qualified function names."""
    for node in list(tree.iter_subtrees()):
        for index, child in enumerate(node.children):
            if not isinstance(child, lark.Tree) or child.data != "member_dot_arg":
                continue
            target = single_child_chain(child.children[0])
            method = child.children[1]
            if target is None or target.data != "ident" or not isinstance(method, lark.Token):
                continue
            namespace = target.children[0]
            name = f"{namespace}.{method.value}"
            if not isinstance(namespace, lark.Token) or namespace.value != "optional" or name not in OPTIONAL_GLOBALS:
                continue
            token = lark.Token.new_borrow_pos("IDENT", name, namespace)
            call = lark.Tree("ident_arg", [token, *child.children[2:]], meta=child.meta)
            node.children[index] = lark.Tree("primary", [call], meta=child.meta)
    return tree


# --------------------------------------------------------------------------------------------
# Reading the AST
# --------------------------------------------------------------------------------------------


def single_child_chain(node: Any) -> lark.Tree | None:
    """Follow single-child wrapper nodes down to the first node that is not a wrapper."""
    while isinstance(node, lark.Tree):
        if node.data in _WRAPPER_RULES and len(node.children) == 1:
            node = node.children[0]
            continue
        return node
    return None


def call_arguments(node: lark.Tree, position: int) -> list[Any]:
    """The argument nodes of a call whose optional ``exprlist`` child is at ``position``
    (1 for ``f(...)``, 2 for ``x.f(...)``)."""
    if len(node.children) > position and isinstance(node.children[position], lark.Tree):
        return list(node.children[position].children)
    return []


def macro_variable(argument: Any) -> lark.Tree | None:
    """The ``ident`` node naming a macro's variable (``v`` in ``x.all(v, e)``), or None when
    the argument is not a simple name."""
    node = single_child_chain(argument)
    return node if node is not None and node.data == "ident" else None


def has_select(arguments: Sequence[Any]) -> lark.Tree | None:
    """The ``member_dot`` node of ``has(x.f)``, or None when the argument is not one select."""
    target = single_child_chain(arguments[0]) if len(arguments) == 1 else None
    return target if target is not None and target.data == "member_dot" else None
