"""CEL for ``celSelector.celExpressions``: source text in, a compiled expression out, then a
match / no match per cluster (its ``managedCluster`` value).

Built on PyPI ``cel-python`` (module ``celpy``), which parses and interprets CEL but has no
static checker. The entry point over the modules that add what OCM's environment declares:

- ``cel_grammar``: parsing, with cel-go's optional syntax (``x.?f``, ``x[?k]``, ``[?e]``,
  ``{?k: v}``) added to celpy's grammar;
- ``cel_check`` and ``cel_typecheck``: the compile-time checks; every identifier must be
  ``managedCluster``, a type name or a variable bound by a macro, every function must be declared
  (``cel_declarations``: the standard ones, the Kubernetes libraries and OCM's two), and
  optionals are only used where cel-go's type check allows them; anything else is a compile
  error, reported the way cel-go words it (``ERROR: <input>:1:1: undeclared reference to 'x'
  (in container '')``);
- ``cel_functions``: the runtime functions (OCM's ``scores`` and ``parseJSON``, the Kubernetes
  libraries of ``cel_library``, CEL's cross-type numeric comparisons and heterogeneous equality);
- ``cel_eval``: the interpreter, with cel-go's optional types and a cost budget.

Evaluation follows the spec: a cluster matches only when every expression returns the boolean
``true``; an evaluation error or a non-boolean result is no match.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ocm_rollout.controllers.common.cel_check import CelCompileError, Checker
from ocm_rollout.controllers.common.cel_declarations import VARIABLE
from ocm_rollout.controllers.common.cel_eval import (
    PER_EXPRESSION_LIMIT,
    SHARED_BUDGET,
    Budget,
    BudgetedEvaluator,
    CostLimitExceeded,
)
from ocm_rollout.controllers.common.cel_functions import ScoreLookup, functions
from ocm_rollout.controllers.common.cel_library import environment
from ocm_rollout.controllers.common.cel_typecheck import checked_ast
from ocm_rollout.controllers.common.cel_values import to_cel

__all__ = [
    "PER_EXPRESSION_LIMIT",
    "SHARED_BUDGET",
    "VARIABLE",
    "CelCompileError",
    "CelSelector",
    "CompiledExpression",
    "CostLimitExceeded",
    "ScoreLookup",
    "compile_all",
    "compile_expression",
    "to_cel",
]


@dataclass(frozen=True)
class CompiledExpression:
    source: str
    ast: lark.Tree


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> CompiledExpression:
    """Parse and check one expression; raise CelCompileError with cel-go's wording."""
    ast = checked_ast(source, Checker(source), frozenset())
    return CompiledExpression(source, ast)


def compile_all(expressions: Sequence[str]) -> list[CompiledExpression]:
    """Compile expressions in order; the first failure raises CelCompileError."""
    out = []
    for source in expressions:
        try:
            out.append(compile_expression(source))
        except CelCompileError as exc:
            raise CelCompileError(f"compilation failed: {exc}") from None
    return out


class CelSelector:
    """The compiled CEL expressions of one cluster selector, bound to one scheduling pass."""

    def __init__(self, expressions: Sequence[CompiledExpression], score_lookup: ScoreLookup) -> None:
        self.expressions = list(expressions)
        env = environment()
        table = functions(score_lookup)
        self._runners = [env.program(expr.ast, functions=table) for expr in self.expressions]

    def matches(self, cluster: Any, *, budget: int = SHARED_BUDGET) -> bool:
        """Whether every expression returns true for ``cluster`` (its celpy value, see ``to_cel``)."""
        shared = Budget(budget)
        for runner in self._runners:
            shared.expression = PER_EXPRESSION_LIMIT
            evaluator = BudgetedEvaluator(runner.ast, activation=runner.new_activation())
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
