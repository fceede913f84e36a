"""Evaluation: a checked AST and an activation in, a celpy value (or a CEL error) out.

``OptionalEvaluator`` is celpy's interpreter plus cel-go's optional types (``x.?f``, ``x[?k]``,
optional list elements and map entries, the short-circuiting ``or`` / ``orValue``, the
``optMap`` / ``optFlatMap`` macros; as in cel-go, selecting or indexing into an optional is
optional too, so ``x.?a.b`` is ``x.?a.?b``, and ``.?`` on a value that is neither a map nor a
list is ``optional.none()``). ``BudgetedEvaluator`` counts every visited node against a cost
``Budget``.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from ocm_rollout.controllers.common.cel_declarations import CELPY_MACROS, OPTIONAL_MACROS
from ocm_rollout.controllers.common.cel_grammar import call_arguments, has_select, macro_variable
from ocm_rollout.controllers.common.cel_library import OPTIONAL_NONE, OptionalValue
from ocm_rollout.controllers.common.cel_values import is_number, plain_number

# --------------------------------------------------------------------------------------------
# Cost
# --------------------------------------------------------------------------------------------

# Kubernetes bounds CEL evaluation by cost (a per-expression limit and a budget shared by the
# expressions evaluated for one cluster). celpy has no cost model, so every evaluated AST node
# counts one unit against the same two figures.
PER_EXPRESSION_LIMIT = 1_000_000
SHARED_BUDGET = 10_000_000


class CostLimitExceeded(Exception):
    """The evaluation ran out of its cost budget (an evaluation error: no match)."""


class Budget:
    def __init__(self, shared: int) -> None:
        self.shared = shared
        self.expression = PER_EXPRESSION_LIMIT

    def spend(self) -> None:
        self.shared -= 1
        self.expression -= 1
        if self.shared < 0 or self.expression < 0:
            raise CostLimitExceeded("operation cancelled: actual cost limit exceeded")


# --------------------------------------------------------------------------------------------
# Optional select and index
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
            if is_number(candidate) and plain_number(candidate) == plain_number(key):
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


# --------------------------------------------------------------------------------------------
# Evaluators
# --------------------------------------------------------------------------------------------


class OptionalEvaluator(Evaluator):
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
        args = call_arguments(tree, 2)
        if name in ("or", "orValue") and len(args) == 1:
            return self._optional_or(tree, operand_tree, args[0], take_value=name == "orValue")
        if name in OPTIONAL_MACROS and len(args) == 2:
            return self._optional_map(tree, operand_tree, args, flat=name == "optFlatMap")
        operand = self.visit(operand_tree)
        if isinstance(operand, OptionalValue) and name in CELPY_MACROS:
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
        variable = macro_variable(args[0])
        if variable is None:  # the checker rejects this
            return _no_such_overload("optMap() variable", tree)
        nested = self.sub_evaluator(args[1])
        try:
            result = nested.evaluate({str(variable.children[0]): operand.value})
        except CELEvalError as exc:
            return exc
        return result if flat else OptionalValue.of(result)

    def macro_has_eval(self, exprlist: lark.Tree) -> celtypes.BoolType:
        target = has_select(exprlist.children)
        if target is None:
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


class BudgetedEvaluator(OptionalEvaluator):
    """The interpreter, counting every visited node against a budget."""

    budget: Budget

    def _visit_tree(self, tree: lark.Tree) -> Any:
        if tree.data == _EVALUATED:
            return tree.children[0]
        self.budget.spend()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        nested = BudgetedEvaluator(ast, activation=self.activation)
        nested.budget = self.budget
        return nested
