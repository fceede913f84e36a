"""CEL for ``celSelector.celExpressions``: compile, check and evaluate over ``managedCluster``.

Built on PyPI ``cel-python`` (module ``celpy``), which parses and interprets CEL but has no
static checker. This module adds what OCM's environment declares:

- a checker run at compile time: every identifier must be ``managedCluster``, a type name or a
  variable bound by a macro, and every function must be declared (the standard ones, the
  Kubernetes libraries below and OCM's two); anything else is a compile error, reported the
  way cel-go words it (``ERROR: <input>:1:1: undeclared reference to 'x' (in container '')``);
- OCM's functions: ``<cluster>.scores(name)`` (the AddOnPlacementScore ``name`` in the
  cluster's namespace, ignoring ``validUntil``; a missing object is an evaluation error) and
  ``<string>.parseJSON()`` (every JSON number becomes a double);
- the Kubernetes CEL libraries (``cel_library``): strings, lists, regex, URLs, IP/CIDR,
  quantity and semver;
- cel-go's optional types, syntax included, which celpy's grammar lacks: expressions are parsed
  with celpy's grammar extended by ``x.?f``, ``x[?k]``, ``[?e]`` list elements and ``{?k: v}`` map
  entries; ``optional.of / ofNonZeroValue / none / unwrap``, ``hasValue``, ``value``, ``or`` and
  ``orValue`` (both short-circuiting), the ``optMap`` / ``optFlatMap`` macros, ``first``,
  ``last`` and ``unwrapOpt``. As in cel-go, selecting or indexing into an optional is optional
  too, so ``x.?a.b`` is ``x.?a.?b``, and ``.?`` on a value that is neither a map nor a list
  is ``optional.none()``;
- CEL's cross-type numeric comparisons and heterogeneous equality, which celpy lacks.

Evaluation follows the spec: a cluster matches only when every expression returns the boolean
``true``; an evaluation error or a non-boolean result is no match.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParser
from celpy.evaluation import CELEvalError, Evaluator, base_functions
from lark.exceptions import LexError, ParseError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from controllers.placement import cel_library
from controllers.placement.cel_library import OPTIONAL_NONE, OptionalValue

ScoreLookup = Callable[[str, str], Sequence[tuple[str, int]] | None]
"""(cluster name, AddOnPlacementScore name) -> the score items, or None if no such object."""

VARIABLE = "managedCluster"

# Identifiers that name types (usable as values, e.g. ``type(x) == string``).
_TYPE_IDENTS = frozenset(
    {"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type", "dyn", "optional_type"}
)
_MACROS = {
    "all": (2,), "exists": (2,), "exists_one": (2,), "filter": (2,), "map": (2, 3),
    # optional types
    "optMap": (2,), "optFlatMap": (2,),
}  # fmt: skip
# The macros celpy evaluates itself (they iterate their receiver).
_CELPY_MACROS = frozenset({"all", "exists", "exists_one", "filter", "map", "reduce", "min"})
# Functions of cel-go's optional types, with the number of arguments their one overload takes.
_OPTIONAL_GLOBALS = {"optional.of": 1, "optional.ofNonZeroValue": 1, "optional.none": 0, "optional.unwrap": 1}
_OPTIONAL_MEMBERS = {"hasValue": 0, "value": 0, "or": 1, "orValue": 1, "first": 0, "last": 0, "unwrapOpt": 0}
_GLOBAL_FUNCTIONS = frozenset(
    {
        "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration",
        "timestamp", "matches",
        # Kubernetes libraries
        "semver", "isSemver", "quantity", "isQuantity", "url", "isURL", "ip", "isIP", "cidr",
        "isCIDR",
        # optional types (``optional.of(x)`` is parsed as a call of ``optional.of``)
        *_OPTIONAL_GLOBALS,
    }
)  # fmt: skip
_MEMBER_FUNCTIONS = frozenset(
    {
        # standard
        "size", "contains", "startsWith", "endsWith", "matches", "getDate", "getDayOfMonth",
        "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth", "getHours", "getMilliseconds",
        "getMinutes", "getSeconds",
        # strings extension
        "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split",
        "substring", "trim", "join", "reverse", "format",
        # lists
        "isSorted", "sum", "min", "max",
        # regex
        "find", "findAll",
        # URLs
        "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
        # IP and CIDR
        "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
        "isGlobalUnicast", "ip", "containsIP", "containsCIDR", "prefixLength", "masked",
        # quantity and semver
        "isInteger", "asInteger", "asApproximateFloat", "sign", "add", "sub", "isGreaterThan",
        "isLessThan", "compareTo", "major", "minor", "patch",
        # OCM
        "scores", "parseJSON",
        # optional types
        *_OPTIONAL_MEMBERS,
    }
)  # fmt: skip


class CelCompileError(ValueError):
    """An expression that does not compile; ``str()`` is the message OCM would report."""


@dataclass(frozen=True)
class CompiledExpression:
    source: str
    ast: lark.Tree


_ENVIRONMENT: celpy.Environment | None = None


def _environment() -> celpy.Environment:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        # ``optional_type`` names the type of optional values (``type(x) == optional_type``).
        annotations: dict[str, Any] = {"optional_type": OptionalValue}
        _ENVIRONMENT = celpy.Environment(annotations=annotations)
    return _ENVIRONMENT


# --------------------------------------------------------------------------------------------
# Parsing: celpy's grammar with cel-go's optional syntax
# --------------------------------------------------------------------------------------------

# Rules added to celpy's grammar (its installed cel.lark): the optional member forms, and list
# and map literals whose elements / entries may be optional (and, as in cel-go, may end with a
# comma). ``list_lit`` and ``mapinits`` are replaced by the versions below (the
# ``_OptionalEvaluator`` evaluates them).
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


def _parse(source: str) -> lark.Tree:
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
            target = _single_child_chain(child.children[0])
            method = child.children[1]
            if target is None or target.data != "ident" or not isinstance(method, lark.Token):
                continue
            namespace = target.children[0]
            name = f"{namespace}.{method.value}"
            if not isinstance(namespace, lark.Token) or namespace.value != "optional" or name not in _OPTIONAL_GLOBALS:
                continue
            token = lark.Token.new_borrow_pos("IDENT", name, namespace)
            call = lark.Tree("ident_arg", [token, *child.children[2:]], meta=child.meta)
            node.children[index] = lark.Tree("primary", [call], meta=child.meta)
    return tree


def _located(source: str, line: int | None, column: int | None, message: str) -> str:
    line = line or 1
    column = column or 1
    text = f"ERROR: <input>:{line}:{column}: {message}"
    lines = source.splitlines() or [""]
    if 1 <= line <= len(lines):
        text += f"\n | {lines[line - 1]}\n | {'.' * (column - 1)}^"
    return text


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> CompiledExpression:
    """Parse and check one expression; raise CelCompileError with cel-go's wording."""
    try:
        ast = _parse(source)
    except celpy.CELParseError as exc:
        first = str(exc.args[0]).splitlines()[0] if exc.args else "invalid expression"
        raise CelCompileError(_located(source, exc.line, exc.column, f"Syntax error: {first}")) from None
    except RecursionError:
        raise CelCompileError(_located(source, 1, 1, "expression nesting too deep")) from None
    try:
        checker = _Checker(source)
        checker.check(ast, frozenset())
        _OptionalTypes(checker).type_of(ast)
    except RecursionError:
        raise CelCompileError(_located(source, 1, 1, "expression nesting too deep")) from None
    return CompiledExpression(source, ast)


class _Checker:
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
        raise CelCompileError(_located(self.source, line, column, message))

    def undeclared(self, token: lark.Token) -> None:
        self.fail(token, None, f"undeclared reference to '{token.value}' (in container '')")

    def check(self, node: Any, scope: frozenset[str]) -> None:
        if not isinstance(node, lark.Tree):
            return
        kind = node.data
        if kind in ("ident", "dot_ident"):
            token = _token(node.children[0])
            name = token.value
            if name not in scope and name != VARIABLE and name not in _TYPE_IDENTS:
                self.undeclared(token)
            return
        if kind in ("ident_arg", "dot_ident_arg"):
            token = _token(node.children[0])
            args = node.children[1] if len(node.children) > 1 else None
            if token.value == "has":
                self._check_has(token, args, scope)
                return
            if token.value not in _GLOBAL_FUNCTIONS:
                self.undeclared(token)
            count = len(args.children) if isinstance(args, lark.Tree) else 0
            if token.value in _OPTIONAL_GLOBALS and count != _OPTIONAL_GLOBALS[token.value]:
                self.fail(token, None, _no_overload(token.value, count))
            self.check(args, scope)
            return
        if kind == "member_dot_arg":
            self._check_call(node, scope)
            return
        if kind == "member_object":
            self.fail(None, node, "message construction is not supported (no message types are declared)")
        for child in node.children:
            self.check(child, scope)

    def _check_has(self, token: lark.Token, args: Any, scope: frozenset[str]) -> None:
        items = args.children if isinstance(args, lark.Tree) else []
        target = _single_child_chain(items[0]) if len(items) == 1 else None
        if target is None or target.data != "member_dot":
            self.fail(token, None, "invalid argument to has() macro")
            return
        self.check(target, scope)

    def _check_call(self, node: lark.Tree, scope: frozenset[str]) -> None:
        member, token = node.children[0], _token(node.children[1])
        args = node.children[2] if len(node.children) > 2 else None
        items = list(args.children) if isinstance(args, lark.Tree) else []
        name = token.value
        self.check(member, scope)
        if name in _MACROS:
            if len(items) not in _MACROS[name]:
                self.fail(token, None, f"no matching overload for '{name}' with {len(items)} arguments")
            var = _single_child_chain(items[0])
            if var is None or var.data != "ident":
                if name in ("optMap", "optFlatMap"):
                    self.fail(token, None, f"{name}() variable name must be a simple identifier")
                self.fail(token, None, f"argument must be a simple name in macro '{name}'")
                return
            inner = scope | {_token(var.children[0]).value}
            for item in items[1:]:
                self.check(item, inner)
            return
        if name not in _MEMBER_FUNCTIONS:
            self.undeclared(token)
        if name in _OPTIONAL_MEMBERS and len(items) != _OPTIONAL_MEMBERS[name]:
            self.fail(token, None, _no_overload(name, len(items)))
        for item in items:
            self.check(item, scope)


def _no_overload(name: str, count: int) -> str:
    return f"found no matching overload for '{name}' applied to {count} argument{'' if count == 1 else 's'}"


# The static types the optional-types check tells apart: an optional, a type it knows nothing
# about (``dyn``: managedCluster's fields, most function results), or a concrete type it knows
# (``string``, ``int``, ``bool``, ``list``, ...).
_OPTIONAL_T = "optional_type"
_DYN_T = "dyn"
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
# Functions and methods that accept an optional where the check sees one.
_OPTIONAL_ARGUMENT_FUNCTIONS = frozenset({"type", "dyn", "optional.of", "optional.ofNonZeroValue"})
_OPTIONAL_RECEIVER_METHODS = frozenset({"hasValue", "value", "or", "orValue", "optMap", "optFlatMap", "scores"})


class _OptionalTypes:
    """The part of cel-go's type check that optional types make decidable without types.

    An optional (``x.?f``, ``x[?k]``, ``optional.of(...)``, ``.or(...)``, ...) can only be
    compared with another optional or a ``dyn`` value, and only the optional methods (and
    ``type``, ``dyn``, ``optional.of``) take one; an optional list element or map entry, and the
    argument of ``or``, must be an optional. cel-go rejects the rest at compile time ("found no
    matching overload"), so they are compile errors here too rather than a silent no match.
    Anything whose type depends on managedCluster's data is ``dyn`` and passes, as in cel-go.
    """

    def __init__(self, checker: _Checker) -> None:
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
        if kind in ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"):
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
                    if element_type not in (_OPTIONAL_T, _DYN_T):
                        self.mismatch(element, element_type)
                else:
                    self.type_of(element)
            return "list"
        if kind == "map_lit":
            for entry in children[0].children if children else []:
                self.type_of(entry.children[0])
                value = self.type_of(entry.children[1])
                if entry.data == "opt_map_entry" and value not in (_OPTIONAL_T, _DYN_T):
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
            if _OPTIONAL_T in types and not all(t in (_OPTIONAL_T, _DYN_T) for t in types):
                self.fail(node, _OPERATORS[name], types)
        elif name != "relation_in" and _OPTIONAL_T in types:
            self.fail(node, _OPERATORS.get(name, name), types)
        return "bool" if kind == "relation" else _DYN_T

    def _function(self, node: lark.Tree) -> str:
        name = str(node.children[0])
        if name == "has":
            return "bool"
        args = node.children[1].children if len(node.children) > 1 and isinstance(node.children[1], lark.Tree) else []
        types = [self.type_of(arg) for arg in args]
        if name in ("optional.of", "optional.ofNonZeroValue", "optional.none"):
            return _OPTIONAL_T
        if _OPTIONAL_T in types and name not in _OPTIONAL_ARGUMENT_FUNCTIONS:
            self.fail(node, name, types)
        return "list" if name == "optional.unwrap" else _DYN_T

    def _method(self, node: lark.Tree) -> str:
        receiver = self.type_of(node.children[0])
        name = str(node.children[1])
        args = node.children[2].children if len(node.children) > 2 and isinstance(node.children[2], lark.Tree) else []
        if name in _MACROS and name not in ("optMap", "optFlatMap"):
            if receiver == _OPTIONAL_T:
                self.checker.fail(
                    None,
                    node,
                    f"expression of type '{_OPTIONAL_T}' cannot be range of a comprehension (must be list, map, or dynamic)",
                )
            for arg in args[1:]:
                self.type_of(arg)
            return "list" if name in ("map", "filter") else "bool"
        types = [self.type_of(arg) for arg in args[1:]] if name in ("optMap", "optFlatMap") else [self.type_of(arg) for arg in args]
        if name in ("hasValue", "value", "or", "orValue", "optMap", "optFlatMap") and receiver not in (_OPTIONAL_T, _DYN_T):
            self.fail(node, name, types, receiver)
        if name == "or" and types and types[0] not in (_OPTIONAL_T, _DYN_T):
            self.fail(node, name, types, receiver)
        if receiver == _OPTIONAL_T and name not in _OPTIONAL_RECEIVER_METHODS:
            self.fail(node, name, types, receiver)
        if name in ("or", "optMap", "optFlatMap", "first", "last"):
            return _OPTIONAL_T
        if name == "hasValue":
            return "bool"
        return "list" if name == "unwrapOpt" else _DYN_T


def _token(node: Any) -> lark.Token:
    if not isinstance(node, lark.Token):
        raise CelCompileError("ERROR: <input>:1:1: malformed expression")
    return node


def _single_child_chain(node: Any) -> lark.Tree | None:
    """Follow single-child wrapper nodes down to the first node that is not a wrapper."""
    while isinstance(node, lark.Tree):
        if node.data in (
            "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
            "unary", "member", "primary",
        ) and len(node.children) == 1:  # fmt: skip
            node = node.children[0]
            continue
        return node
    return None


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def to_cel(value: Any, *, numbers_as_double: bool = False) -> Any:
    """Convert plain JSON data to celpy values."""
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.DoubleType(value) if numbers_as_double else celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, Mapping):
        return celtypes.MapType(
            {celtypes.StringType(str(k)): to_cel(v, numbers_as_double=numbers_as_double) for k, v in value.items()}
        )
    if isinstance(value, list | tuple):
        return celtypes.ListType([to_cel(v, numbers_as_double=numbers_as_double) for v in value])
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, celtypes.IntType | celtypes.UintType | celtypes.DoubleType) and not isinstance(
        value, celtypes.BoolType
    )


def _compare(base: Callable[[Any, Any], Any], python_op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def compare(left: Any, right: Any) -> Any:
        if _is_number(left) and _is_number(right) and type(left) is not type(right):
            return celtypes.BoolType(python_op(_plain_number(left), _plain_number(right)))
        return base(left, right)

    return compare


def _plain_number(value: Any) -> int | float:
    return float(value) if isinstance(value, celtypes.DoubleType) else int(value)


def _equality(negate: bool) -> Callable[[Any, Any], Any]:
    base = base_functions["_!=_" if negate else "_==_"]

    def equal(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError):
            return left
        if isinstance(right, CELEvalError):
            return right
        if isinstance(left, OptionalValue) or isinstance(right, OptionalValue):
            return celtypes.BoolType(_optional_equal(left, right) != negate)
        if _is_number(left) and _is_number(right):
            same = _plain_number(left) == _plain_number(right)
            return celtypes.BoolType(same != negate)
        try:
            return base(left, right)
        except TypeError:
            # Heterogeneous equality: values of different types are simply unequal.
            return celtypes.BoolType(negate)

    return equal


def _optional_equal(left: Any, right: Any) -> bool:
    """cel-go's Optional.Equal: both empty, or both holding equal values."""
    if not isinstance(left, OptionalValue) or not isinstance(right, OptionalValue):
        return False
    if not left.has_value or not right.has_value:
        return left.has_value == right.has_value
    same = _equality(False)(left.value, right.value)
    return isinstance(same, celtypes.BoolType) and bool(same)


def _safe(function: Callable[..., Any]) -> Callable[..., Any]:
    """Turn any unexpected Python error of a library function into a CEL evaluation error."""

    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except (TypeError, AttributeError, ValueError):
            raise
        except CELEvalError as exc:
            return exc
        except Exception as exc:  # a library bug must not break scheduling
            return CELEvalError(f"{type(exc).__name__}: {exc}")

    call.__name__ = getattr(function, "__name__", "function")
    return call


def _functions(score_lookup: ScoreLookup) -> dict[str, Any]:
    functions: dict[str, Any] = {
        "_==_": _equality(False),
        "_!=_": _equality(True),
        "_<_": _compare(base_functions["_<_"], operator.lt),
        "_<=_": _compare(base_functions["_<=_"], operator.le),
        "_>_": _compare(base_functions["_>_"], operator.gt),
        "_>=_": _compare(base_functions["_>=_"], operator.ge),
    }
    library = cel_library.functions()
    library["scores"] = _scores_function(score_lookup)
    library["parseJSON"] = _parse_json
    for name, function in library.items():
        functions[name] = _safe(function)
    return functions


def _scores_function(score_lookup: ScoreLookup) -> Callable[[Any, Any], Any]:
    def scores(cluster: Any, resource: Any) -> Any:
        if not isinstance(cluster, Mapping) or not isinstance(resource, str):
            raise TypeError("scores() needs a cluster and a string")
        metadata = cluster.get(celtypes.StringType("metadata"))
        if not isinstance(metadata, Mapping):
            return CELEvalError("failed to get cluster metadata")
        name = metadata.get(celtypes.StringType("name"))
        if not isinstance(name, str):
            return CELEvalError("failed to get cluster name")
        items = score_lookup(str(name), str(resource))
        if items is None:
            return CELEvalError(
                f'failed to get score: addonplacementscores.cluster.open-cluster-management.io "{resource}" not found'
            )
        return celtypes.ListType(
            [
                celtypes.MapType(
                    {
                        celtypes.StringType("name"): celtypes.StringType(item_name),
                        celtypes.StringType("value"): celtypes.IntType(item_value),
                    }
                )
                for item_name, item_value in items
            ]
        )

    return scores


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        raise TypeError("parseJSON() applies to strings")
    try:
        data = json.loads(str(text))
    except ValueError as exc:
        return CELEvalError(f"failed to parse JSON: {exc}")
    return to_cel(data, numbers_as_double=True)


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


# Kubernetes bounds CEL evaluation by cost (a per-expression limit and a budget shared by the
# expressions evaluated for one cluster). celpy has no cost model, so every evaluated AST node
# counts one unit against the same two figures.
PER_EXPRESSION_LIMIT = 1_000_000
SHARED_BUDGET = 10_000_000


class CostLimitExceeded(Exception):
    """The evaluation ran out of its cost budget (an evaluation error: no match)."""


class _Budget:
    def __init__(self, shared: int) -> None:
        self.shared = shared
        self.expression = PER_EXPRESSION_LIMIT

    def spend(self) -> None:
        self.shared -= 1
        self.expression -= 1
        if self.shared < 0 or self.expression < 0:
            raise CostLimitExceeded("operation cancelled: actual cost limit exceeded")


# --------------------------------------------------------------------------------------------
# Optional types: evaluation
# --------------------------------------------------------------------------------------------

_MISSING = object()
# A tree standing for a value that is already computed, so that a celpy method can be handed a
# node whose operand it must not evaluate a second time.
_EVALUATED = "evaluated_value"


def _evaluated(value: Any) -> lark.Tree:
    return lark.Tree(_EVALUATED, [value])


def _no_such_overload(what: str, tree: lark.Tree | None = None) -> CELEvalError:
    return CELEvalError(f"no such overload: {what}", TypeError, None, tree=tree)


def _map_lookup(mapping: Mapping[Any, Any], key: Any) -> Any:
    """The value of ``key`` in a CEL map (numbers of any type compare by value, a bool only
    matches a bool), or ``_MISSING``."""
    if isinstance(key, str):
        return mapping.get(key, _MISSING)
    if isinstance(key, int | float) and not isinstance(key, celtypes.BoolType):
        for candidate, value in mapping.items():
            if _is_number(candidate) and _plain_number(candidate) == _plain_number(key):
                return value
    elif isinstance(key, celtypes.BoolType):
        for candidate, value in mapping.items():
            if isinstance(candidate, celtypes.BoolType) and bool(candidate) == bool(key):
                return value
    return _MISSING


def _list_position(index: Any) -> int | CELEvalError:
    """cel-go's IndexOrError: an int, a uint or a whole double; anything else is an error."""
    if isinstance(index, celtypes.IntType | celtypes.UintType) and not isinstance(index, celtypes.BoolType):
        return int(index)
    if isinstance(index, celtypes.DoubleType):
        number = float(index)
        if number.is_integer() and -(2**63) <= number < 2**63:
            return int(number)
        return CELEvalError(f"unsupported index value {index} in list")
    return CELEvalError(f"unsupported index type '{type(index).__name__}' in list")


def _optional_select(operand: Any, field: str) -> Any:
    """``operand.?field``: optional.of(the value) when present, else optional.none()."""
    if isinstance(operand, CELEvalError):
        return operand
    if isinstance(operand, OptionalValue):
        if not operand.has_value:
            return OPTIONAL_NONE
        operand = operand.value
    if isinstance(operand, Mapping):
        found = operand.get(celtypes.StringType(field), _MISSING)
        return OPTIONAL_NONE if found is _MISSING else OptionalValue.of(found)
    if isinstance(operand, list):
        return CELEvalError("unsupported index type 'string' in list")
    # A presence test on a value without fields: cel-go answers "not present".
    return OPTIONAL_NONE


def _optional_index(operand: Any, index: Any) -> Any:
    """``operand[?index]``: optional.of(the element or value) when present, else optional.none()."""
    if isinstance(operand, CELEvalError):
        return operand
    if isinstance(index, CELEvalError):
        return index
    if isinstance(operand, OptionalValue):
        if not operand.has_value:
            return OPTIONAL_NONE
        operand = operand.value
    if isinstance(operand, Mapping):
        found = _map_lookup(operand, index)
        return OPTIONAL_NONE if found is _MISSING else OptionalValue.of(found)
    if isinstance(operand, list):
        position = _list_position(index)
        if isinstance(position, CELEvalError):
            return position
        return OptionalValue.of(operand[position]) if 0 <= position < len(operand) else OPTIONAL_NONE
    return OPTIONAL_NONE


class _OptionalEvaluator(Evaluator):
    """celpy's interpreter plus cel-go's optional types.

    The new syntax has its own nodes (``member_dot_opt``, ``member_index_opt``, optional list
    elements and map entries). A plain ``.f`` or ``[k]`` on an optional value is optional too,
    ``or`` / ``orValue`` evaluate their argument only when the receiver is empty, and
    ``optMap`` / ``optFlatMap`` are macros over the held value.
    """

    def evaluated_value(self, tree: lark.Tree) -> Any:
        return tree.children[0]

    def member_dot(self, tree: lark.Tree) -> Any:
        operand_tree, name = tree.children
        operand = self.visit(operand_tree)
        if isinstance(operand, OptionalValue):
            return _optional_select(operand, str(name))
        return super().member_dot(lark.Tree(tree.data, [_evaluated(operand), name], meta=tree.meta))

    def member_dot_opt(self, tree: lark.Tree) -> Any:
        operand_tree, name = tree.children
        return _optional_select(self.visit(operand_tree), str(name))

    def member_index(self, tree: lark.Tree) -> Any:
        operand_tree, index_tree = tree.children
        operand = self.visit(operand_tree)
        if isinstance(operand, OptionalValue):
            return _optional_index(operand, self.visit(index_tree))
        return super().member_index(lark.Tree(tree.data, [_evaluated(operand), index_tree], meta=tree.meta))

    def member_index_opt(self, tree: lark.Tree) -> Any:
        operand_tree, index_tree = tree.children
        operand = self.visit(operand_tree)
        if isinstance(operand, CELEvalError):
            return operand
        return _optional_index(operand, self.visit(index_tree))

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        operand_tree, name_token = tree.children[0], tree.children[1]
        name = str(name_token)
        args = list(tree.children[2].children) if len(tree.children) > 2 and isinstance(tree.children[2], lark.Tree) else []
        if name in ("or", "orValue") and len(args) == 1:
            return self._optional_or(tree, operand_tree, args[0], take_value=name == "orValue")
        if name in ("optMap", "optFlatMap") and len(args) == 2:
            return self._optional_map(tree, operand_tree, args, flat=name == "optFlatMap")
        operand = self.visit(operand_tree)
        if isinstance(operand, OptionalValue) and name in _CELPY_MACROS:
            return _no_such_overload(f"{name}() on optional_type", tree)
        return super().member_dot_arg(lark.Tree(tree.data, [_evaluated(operand), *tree.children[1:]], meta=tree.meta))

    def _optional_or(self, tree: lark.Tree, operand_tree: Any, alternative: Any, *, take_value: bool) -> Any:
        operand = self.visit(operand_tree)
        if isinstance(operand, CELEvalError):
            return operand
        if not isinstance(operand, OptionalValue):
            return _no_such_overload("orValue()" if take_value else "or()", tree)
        if operand.has_value:
            return operand.value if take_value else operand
        return self.visit(alternative)

    def _optional_map(self, tree: lark.Tree, operand_tree: Any, args: list[Any], *, flat: bool) -> Any:
        operand = self.visit(operand_tree)
        if isinstance(operand, CELEvalError):
            return operand
        if not isinstance(operand, OptionalValue):
            return _no_such_overload("optFlatMap()" if flat else "optMap()", tree)
        if not operand.has_value:
            return OPTIONAL_NONE
        variable = _single_child_chain(args[0])
        if variable is None or variable.data != "ident":  # the checker rejects this
            return _no_such_overload("optMap() variable", tree)
        nested = self.sub_evaluator(args[1])
        try:
            result = nested.evaluate({str(variable.children[0]): operand.value})
        except CELEvalError as exc:
            return exc
        return result if flat else OptionalValue.of(result)

    def macro_has_eval(self, exprlist: lark.Tree) -> celtypes.BoolType:
        target = _single_child_chain(exprlist.children[0]) if len(exprlist.children) == 1 else None
        if target is None or target.data != "member_dot":
            return super().macro_has_eval(exprlist)
        operand_tree, name = target.children
        operand = self.visit(operand_tree)
        if isinstance(operand, OptionalValue):
            found = _optional_select(operand, str(name))
            return celtypes.BoolType(isinstance(found, OptionalValue) and found.has_value)
        select = lark.Tree("member_dot", [_evaluated(operand), name], meta=target.meta)
        return super().macro_has_eval(lark.Tree("exprlist", [select], meta=exprlist.meta))

    def listinits(self, tree: lark.Tree) -> Any:
        items: list[Any] = []
        for child in tree.children:
            optional = isinstance(child, lark.Tree) and child.data == "opt_element"
            value = self.visit(child.children[0] if optional else child)
            if isinstance(value, CELEvalError):
                return value
            if optional:
                if not isinstance(value, OptionalValue):
                    return _no_such_overload("an optional list element needs an optional value", tree)
                if not value.has_value:
                    continue
                value = value.value
            items.append(value)
        return celtypes.ListType(items)

    def mapinits(self, tree: lark.Tree) -> Any:
        result = celtypes.MapType()
        for entry in tree.children:
            key = self.visit(entry.children[0])
            if isinstance(key, CELEvalError):
                return key
            value = self.visit(entry.children[1])
            if isinstance(value, CELEvalError):
                return value
            if entry.data == "opt_map_entry":
                if not isinstance(value, OptionalValue):
                    return _no_such_overload("an optional map entry needs an optional value", tree)
                if not value.has_value:
                    continue
                value = value.value
            if not celtypes.MapType.valid_key_type(key):
                return CELEvalError(f"unsupported key type: {type(key).__name__}", TypeError, None, tree=tree)
            if _map_lookup(result, key) is not _MISSING:
                return CELEvalError(f"Failed with repeated key: {key}", ValueError, None, tree=tree)
            result[key] = value
        return result


class _BudgetedEvaluator(_OptionalEvaluator):
    """The interpreter, counting every visited node against a budget."""

    budget: _Budget

    def _visit_tree(self, tree: lark.Tree) -> Any:
        if tree.data == _EVALUATED:
            return tree.children[0]
        self.budget.spend()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        nested = _BudgetedEvaluator(ast, activation=self.activation)
        nested.budget = self.budget
        return nested


class CelSelector:
    """The compiled CEL expressions of one cluster selector, bound to one scheduling pass."""

    def __init__(self, expressions: Sequence[CompiledExpression], score_lookup: ScoreLookup) -> None:
        self.expressions = list(expressions)
        env = _environment()
        functions = _functions(score_lookup)
        self._runners = [env.program(expr.ast, functions=functions) for expr in self.expressions]

    def matches(self, cluster: Any, *, budget: int = SHARED_BUDGET) -> bool:
        """Whether every expression returns true for ``cluster`` (its celpy value, see ``to_cel``)."""
        shared = _Budget(budget)
        for runner in self._runners:
            shared.expression = PER_EXPRESSION_LIMIT
            evaluator = _BudgetedEvaluator(runner.ast, activation=runner.new_activation())
            evaluator.budget = shared
            try:
                result = evaluator.evaluate({VARIABLE: cluster})
            except (CELEvalError, CostLimitExceeded, RecursionError):
                return False
            except Exception:  # celpy internals: count as an evaluation error, never crash
                return False
            if not isinstance(result, celtypes.BoolType) or not bool(result):
                return False
        return True


def compile_all(expressions: Sequence[str]) -> list[CompiledExpression]:
    """Compile expressions in order; the first failure raises CelCompileError."""
    out = []
    for source in expressions:
        try:
            out.append(compile_expression(source))
        except CelCompileError as exc:
            raise CelCompileError(f"compilation failed: {exc}") from None
    return out

