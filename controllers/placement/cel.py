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
- CEL's cross-type numeric comparisons and heterogeneous equality, which celpy lacks.

Evaluation follows the spec: a cluster matches only when every expression returns the boolean
``true``; an evaluation error or a non-boolean result is no match.

Pure: no I/O.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator, base_functions

from controllers.placement import cel_library

ScoreLookup = Callable[[str, str], Sequence[tuple[str, int]] | None]
"""(cluster name, AddOnPlacementScore name) -> the score items, or None if no such object."""

VARIABLE = "managedCluster"

# Identifiers that name types (usable as values, e.g. ``type(x) == string``).
_TYPE_IDENTS = frozenset(
    {"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type", "dyn"}
)
_MACROS = {"all": (2,), "exists": (2,), "exists_one": (2,), "filter": (2,), "map": (2, 3)}
_GLOBAL_FUNCTIONS = frozenset(
    {
        "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration",
        "timestamp", "matches",
        # Kubernetes libraries
        "semver", "isSemver", "quantity", "isQuantity", "url", "isURL", "ip", "isIP", "cidr",
        "isCIDR",
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
        _ENVIRONMENT = celpy.Environment()
    return _ENVIRONMENT


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
        ast = _environment().compile(source)
    except celpy.CELParseError as exc:
        first = str(exc.args[0]).splitlines()[0] if exc.args else "invalid expression"
        raise CelCompileError(_located(source, exc.line, exc.column, f"Syntax error: {first}")) from None
    except RecursionError:
        raise CelCompileError(_located(source, 1, 1, "expression nesting too deep")) from None
    try:
        _Checker(source).check(ast, frozenset())
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
                self.fail(token, None, f"argument must be a simple name in macro '{name}'")
                return
            inner = scope | {_token(var.children[0]).value}
            for item in items[1:]:
                self.check(item, inner)
            return
        if name not in _MEMBER_FUNCTIONS:
            self.undeclared(token)
        for item in items:
            self.check(item, scope)


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
        if _is_number(left) and _is_number(right):
            same = _plain_number(left) == _plain_number(right)
            return celtypes.BoolType(same != negate)
        try:
            return base(left, right)
        except TypeError:
            # Heterogeneous equality: values of different types are simply unequal.
            return celtypes.BoolType(negate)

    return equal


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


class _BudgetedEvaluator(Evaluator):
    """celpy's interpreter, counting every visited node against a budget."""

    budget: _Budget

    def _visit_tree(self, tree: lark.Tree) -> Any:
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

