"""CEL of the rollout checks: a condition's source in, a compiled condition out; then a
variables activation in, ``True`` / ``False`` or a ``ConditionError`` out.

Built on the CEL machinery placement ``celSelector`` uses (``controllers/common/cel_*.py``:
celpy with cel-go's optional syntax, the Kubernetes libraries, CEL's cross-type number
comparisons and a cost budget). The compile-time check differs in one way: the declared variables are the
check's (``feedback``, ``manifests``, ``conditions``, ``cluster`` for a feedback check;
``result``, ``series``, ``resultType``, ``cluster`` for a metric check), not ``managedCluster``.

A condition must return a boolean: anything else, like an evaluation error (a missing map key,
a wrong type, a cost limit), is a ``ConditionError``.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ocm_rollout.controllers.common.cel_check import CelCompileError, Checker
from ocm_rollout.controllers.common.cel_declarations import VARIABLE as PLACEMENT_VARIABLE
from ocm_rollout.controllers.common.cel_eval import (
    PER_EXPRESSION_LIMIT,
    Budget,
    BudgetedEvaluator,
    CostLimitExceeded,
)
from ocm_rollout.controllers.common.cel_functions import functions
from ocm_rollout.controllers.common.cel_library import environment
from ocm_rollout.controllers.common.cel_typecheck import checked_ast
from ocm_rollout.controllers.common.cel_values import to_cel

FEEDBACK_VARIABLES: Final = frozenset({"feedback", "manifests", "conditions", "cluster"})
METRIC_VARIABLES: Final = frozenset({"result", "series", "resultType", "cluster"})


class CheckCompileError(ValueError):
    """A check condition that does not compile; ``str()`` names the check and the field."""

    def __init__(self, check: str, field: str, detail: str) -> None:
        super().__init__(f"check {check!r}: {field} does not compile: {detail}")
        self.check = check
        self.field = field
        self.detail = detail


class ConditionError(Exception):
    """A condition that did not evaluate to a boolean (an evaluation error or another type)."""


class _VariablesChecker(Checker):
    """The placement checker, with the check's variables declared instead of managedCluster."""

    def check(self, node: Any, scope: frozenset[str]) -> None:
        if isinstance(node, lark.Tree) and node.data in ("ident", "dot_ident"):
            token = node.children[0]
            if isinstance(token, lark.Token) and token.value == PLACEMENT_VARIABLE and token.value not in scope:
                self.undeclared(token)
        super().check(node, scope)


@dataclass(frozen=True)
class Condition:
    """A compiled condition: its source, the variables it may name, and its AST."""

    source: str
    variables: frozenset[str]
    ast: lark.Tree


def _no_scores(_cluster: str, _name: str) -> None:
    return None


@lru_cache(maxsize=1024)
def _compile(source: str, variables: frozenset[str]) -> Condition:
    ast = checked_ast(source, _VariablesChecker(source), variables)
    return Condition(source, variables, ast)


def compile_condition(check: str, field: str, source: str, variables: frozenset[str]) -> Condition:
    """Compile one condition of check ``check`` (``field``: e.g. ``metric.successCondition``);
    raise ``CheckCompileError`` naming both when it does not compile."""
    try:
        return _compile(source, variables)
    except CelCompileError as exc:
        raise CheckCompileError(check, field, str(exc)) from None


def evaluate(condition: Condition, values: Mapping[str, Any]) -> bool:
    """Run ``condition`` with ``values`` (plain JSON data or celpy values, by variable name).

    Returns the boolean result; raises ``ConditionError`` for an evaluation error or a result
    that is not a boolean.
    """
    activation = {name: _as_cel(value) for name, value in values.items() if name in condition.variables}
    runner = environment().program(condition.ast, functions=functions(_no_scores))
    budget = Budget(PER_EXPRESSION_LIMIT)
    evaluator = BudgetedEvaluator(runner.ast, activation=runner.new_activation())
    evaluator.budget = budget
    try:
        result = evaluator.evaluate(activation)
    except CELEvalError as exc:
        raise ConditionError(_eval_message(exc)) from None
    except CostLimitExceeded as exc:
        raise ConditionError(str(exc)) from None
    except RecursionError:
        raise ConditionError("expression nesting too deep") from None
    except Exception as exc:  # celpy internals: an evaluation error, never a crash
        raise ConditionError(f"{type(exc).__name__}: {exc}") from None
    if isinstance(result, CELEvalError):
        raise ConditionError(_eval_message(result))
    if not isinstance(result, celtypes.BoolType):
        raise ConditionError(f"the condition returned {_type_name(result)}, not a bool")
    return bool(result)


def _as_cel(value: Any) -> Any:
    if isinstance(value, celtypes.BoolType | celtypes.IntType | celtypes.UintType | celtypes.DoubleType):
        return value
    if isinstance(value, celtypes.StringType | celtypes.MapType | celtypes.ListType):
        return value
    return to_cel(value)


def _eval_message(exc: CELEvalError) -> str:
    """celpy's message, with the key or index it names (``no such key: 'a/b'``)."""
    args = exc.args
    if not args or not isinstance(args[0], str):
        return str(exc)
    message = args[0]
    detail = args[2] if len(args) > 2 and isinstance(args[2], tuple) and args[2] else None
    if detail is not None:
        shown = ", ".join(repr(str(d)) if isinstance(d, str) else str(d) for d in detail)
        message = f"{message}: {shown}"
    return message


def _type_name(value: Any) -> str:
    names = {
        celtypes.IntType: "int", celtypes.UintType: "uint", celtypes.DoubleType: "double",
        celtypes.StringType: "string", celtypes.ListType: "list", celtypes.MapType: "map",
    }  # fmt: skip
    for cls, name in names.items():
        if isinstance(value, cls):
            return name
    return "null" if value is None else type(value).__name__
