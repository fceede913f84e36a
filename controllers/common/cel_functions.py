"""The runtime function table: a score lookup in, the functions a compiled expression runs
with (by CEL name, as celpy calls them) out.

- CEL's cross-type numeric comparisons and heterogeneous equality (optionals included), which
  celpy lacks, replace celpy's ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``;
- OCM's functions: ``<cluster>.scores(name)`` (the AddOnPlacementScore ``name`` in the
  cluster's namespace, ignoring ``validUntil``; a missing object is an evaluation error) and
  ``<string>.parseJSON()`` (every JSON number becomes a double);
- the Kubernetes libraries (``cel_library``); an unexpected Python error of any of these is an
  evaluation error, never a crash.

Pure: no I/O (the score lookup is the caller's).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

from ocm_rollout.controllers.common import cel_library
from ocm_rollout.controllers.common.cel_library import OptionalValue
from ocm_rollout.controllers.common.cel_values import is_number, plain_number, to_cel

ScoreLookup = Callable[[str, str], Sequence[tuple[str, int]] | None]
"""(cluster name, AddOnPlacementScore name) -> the score items, or None if no such object."""


def _compare(base: Callable[[Any, Any], Any], python_op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def compare(left: Any, right: Any) -> Any:
        if is_number(left) and is_number(right) and type(left) is not type(right):
            return celtypes.BoolType(python_op(plain_number(left), plain_number(right)))
        return base(left, right)

    return compare


def _equality(negate: bool) -> Callable[[Any, Any], Any]:
    base = base_functions["_!=_" if negate else "_==_"]

    def equal(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError):
            return left
        if isinstance(right, CELEvalError):
            return right
        if isinstance(left, OptionalValue) or isinstance(right, OptionalValue):
            return celtypes.BoolType(_optional_equal(left, right) != negate)
        if is_number(left) and is_number(right):
            same = plain_number(left) == plain_number(right)
            return celtypes.BoolType(same != negate)
        try:
            return base(left, right)
        except TypeError:
            # Heterogeneous equality: values of different types are simply unequal.
            return celtypes.BoolType(negate)

    return equal


def _optional_equal(left: Any, right: Any) -> bool:
    """cel-go's Optional.Equal: both empty, or both holding equal values (by CEL equality)."""
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


def functions(score_lookup: ScoreLookup) -> dict[str, Any]:
    """Every function an expression may call, by CEL name, ``scores()`` reading ``score_lookup``."""
    table: dict[str, Any] = {
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
        table[name] = _safe(function)
    return table
