"""The compile-time optional-types check: a parsed AST in, the static type of its root out
(only ``optional_type``, ``dyn`` or a concrete type name), or a ``CelCompileError``.

Runs after ``cel_check``'s declarations check, reporting through its ``Checker``.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import celpy
import lark

from ocm_rollout.controllers.common.cel_check import CelCompileError, Checker, located
from ocm_rollout.controllers.common.cel_declarations import MACROS, OPTIONAL_MACROS
from ocm_rollout.controllers.common.cel_grammar import OPERATOR_RULES, call_arguments, parse

# The static types the optional-types check tells apart: an optional, a type it knows nothing
# about (``dyn``: managedCluster's fields, most function results), or a concrete type it knows
# (``string``, ``int``, ``bool``, ``list``, ...).
_OPTIONAL_T = "optional_type"
_DYN_T = "dyn"
# The types a value that must be an optional may have.
_MAYBE_OPTIONAL = (_OPTIONAL_T, _DYN_T)
_LITERAL_TYPES = {
    "INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
    "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": _DYN_T,
}  # fmt: skip
_OPERATORS = {
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_lt": "_<_", "relation_le": "_<=_",
    "relation_gt": "_>_", "relation_ge": "_>=_", "relation_in": "@in", "addition_add": "_+_",
    "addition_sub": "_-_", "multiplication_mul": "_*_", "multiplication_div": "_/_",
    "multiplication_mod": "_%_", "unary_not": "!_", "unary_neg": "-_",
    "conditionalor": "_||_", "conditionaland": "_&&_",
}  # fmt: skip
# Functions that accept an optional argument where the check sees one.
_OPTIONAL_ARGUMENT_FUNCTIONS = frozenset({"type", "dyn", "optional.of", "optional.ofNonZeroValue"})
# Methods whose receiver must be an optional, and the methods that take one.
_OPTIONAL_ONLY_METHODS = frozenset({"hasValue", "value", "or", "orValue", *OPTIONAL_MACROS})
_OPTIONAL_RECEIVER_METHODS = _OPTIONAL_ONLY_METHODS | {"scores"}


class OptionalTypes:
    """The part of cel-go's type check that optional types make decidable without types.

    An optional (``x.?f``, ``x[?k]``, ``optional.of(...)``, ``.or(...)``, ...) can only be
    compared with another optional or a ``dyn`` value, and only the optional methods (and
    ``type``, ``dyn``, ``optional.of``) take one; an optional list element or map entry, and the
    argument of ``or``, must be an optional. cel-go rejects the rest at compile time ("found no
    matching overload"), so they are compile errors here too rather than a silent no match.
    Anything whose type depends on managedCluster's data is ``dyn`` and passes, as in cel-go.
    """

    def __init__(self, checker: Checker) -> None:
        self.checker = checker

    def fail(self, node: lark.Tree, function: str, types: Sequence[str], receiver: str | None = None) -> None:
        applied = f"{receiver}.({', '.join(types)})" if receiver is not None else f"({', '.join(types)})"
        self.checker.fail(None, node, f"found no matching overload for '{function}' applied to '{applied}'")

    def mismatch(self, node: lark.Tree, found: str) -> None:
        """An optional list element or map entry whose value is not an optional."""
        self.checker.fail(None, node, f"expected type '{_OPTIONAL_T}({found})' but found '{found}'")

    def type_of(self, node: Any) -> str:
        if not isinstance(node, lark.Tree):
            return _DYN_T
        kind = node.data
        children = node.children
        if kind in OPERATOR_RULES:
            if len(children) == 1:
                return self.type_of(children[0])
            return self._operator(node)
        if kind in ("member", "primary", "paren_expr"):
            return self.type_of(children[0])
        if kind == "literal":
            token = children[0]
            return _LITERAL_TYPES.get(token.type, _DYN_T) if isinstance(token, lark.Token) else _DYN_T
        if kind in ("member_dot_opt", "member_index_opt"):
            for child in children:
                self.type_of(child)
            return _OPTIONAL_T
        if kind in ("member_dot", "member_index"):
            operand = self.type_of(children[0])
            for child in children[1:]:
                self.type_of(child)
            return _OPTIONAL_T if operand == _OPTIONAL_T else _DYN_T
        if kind == "member_dot_arg":
            return self._method(node)
        if kind in ("ident_arg", "dot_ident_arg"):
            return self._function(node)
        if kind == "list_lit":
            for element in children[0].children if children else []:
                if isinstance(element, lark.Tree) and element.data == "opt_element":
                    element_type = self.type_of(element.children[0])
                    if element_type not in _MAYBE_OPTIONAL:
                        self.mismatch(element, element_type)
                else:
                    self.type_of(element)
            return "list"
        if kind == "map_lit":
            for entry in children[0].children if children else []:
                self.type_of(entry.children[0])
                value = self.type_of(entry.children[1])
                if entry.data == "opt_map_entry" and value not in _MAYBE_OPTIONAL:
                    self.mismatch(entry, value)
            return "map"
        for child in children:
            self.type_of(child)
        return _DYN_T

    def _operator(self, node: lark.Tree) -> str:
        kind = node.data
        children = node.children
        if kind == "expr":  # condition ? a : b
            condition, left, right = (self.type_of(c) for c in children)
            if condition == _OPTIONAL_T:
                self.fail(node, "_?_:_", [condition, left, right])
            return left if left == right else _DYN_T
        if kind in ("conditionalor", "conditionaland"):
            types = [self.type_of(children[0]), self.type_of(children[1])]
            if _OPTIONAL_T in types:
                self.fail(node, _OPERATORS[kind], types)
            return "bool"
        if kind == "unary":
            operator_node, operand = children
            operand_type = self.type_of(operand)
            if operand_type == _OPTIONAL_T:
                self.fail(node, _OPERATORS.get(operator_node.data, operator_node.data), [operand_type])
            return "bool" if operator_node.data == "unary_not" else _DYN_T
        operator_node, right_node = children  # relation, addition, multiplication
        name = operator_node.data
        types = [self.type_of(operator_node.children[0]), self.type_of(right_node)]
        if name in ("relation_eq", "relation_ne"):
            if _OPTIONAL_T in types and not all(t in _MAYBE_OPTIONAL for t in types):
                self.fail(node, _OPERATORS[name], types)
        elif name != "relation_in" and _OPTIONAL_T in types:
            self.fail(node, _OPERATORS.get(name, name), types)
        return "bool" if kind == "relation" else _DYN_T

    def _function(self, node: lark.Tree) -> str:
        name = str(node.children[0])
        if name == "has":
            return "bool"
        types = [self.type_of(arg) for arg in call_arguments(node, 1)]
        if name in ("optional.of", "optional.ofNonZeroValue", "optional.none"):
            return _OPTIONAL_T
        if _OPTIONAL_T in types and name not in _OPTIONAL_ARGUMENT_FUNCTIONS:
            self.fail(node, name, types)
        return "list" if name == "optional.unwrap" else _DYN_T

    def _method(self, node: lark.Tree) -> str:
        receiver = self.type_of(node.children[0])
        name = str(node.children[1])
        args = call_arguments(node, 2)
        if name in MACROS and name not in OPTIONAL_MACROS:
            if receiver == _OPTIONAL_T:
                self.checker.fail(
                    None,
                    node,
                    f"expression of type '{_OPTIONAL_T}' cannot be range of a comprehension (must be list, map, or dynamic)",
                )
            for arg in args[1:]:
                self.type_of(arg)
            return "list" if name in ("map", "filter") else "bool"
        types = [self.type_of(arg) for arg in (args[1:] if name in OPTIONAL_MACROS else args)]
        if name in _OPTIONAL_ONLY_METHODS and receiver not in _MAYBE_OPTIONAL:
            self.fail(node, name, types, receiver)
        if name == "or" and types and types[0] not in _MAYBE_OPTIONAL:
            self.fail(node, name, types, receiver)
        if receiver == _OPTIONAL_T and name not in _OPTIONAL_RECEIVER_METHODS:
            self.fail(node, name, types, receiver)
        if name in ("or", "optMap", "optFlatMap", "first", "last"):
            return _OPTIONAL_T
        if name == "hasValue":
            return "bool"
        return "list" if name == "unwrapOpt" else _DYN_T


def checked_ast(source: str, checker: Checker, scope: frozenset[str] = frozenset()) -> lark.Tree:
    """Parse ``source`` and check it with ``checker`` (names in ``scope`` declared) and the
    optional-type rules; raise CelCompileError with cel-go's wording."""
    try:
        ast = parse(source)
    except celpy.CELParseError as exc:
        first = str(exc.args[0]).splitlines()[0] if exc.args else "invalid expression"
        raise CelCompileError(located(source, exc.line, exc.column, f"Syntax error: {first}")) from None
    except RecursionError:
        raise CelCompileError(located(source, 1, 1, "expression nesting too deep")) from None
    try:
        checker.check(ast, scope)
        OptionalTypes(checker).type_of(ast)
    except RecursionError:
        raise CelCompileError(located(source, 1, 1, "expression nesting too deep")) from None
    return ast
