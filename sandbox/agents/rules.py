"""Condition rules (``manifestConfigs[].conditionRules``) evaluated on a simulated resource.

``CEL`` rules evaluate every expression with the variable ``object`` (the live object) and the
helper ``hasConditions(x)``; all must be true for status True. ``WellKnownConditions`` knows only
``Complete`` for ``batch/v1 Job`` and ``v1 Pod``; other kinds produce no condition. The
condition's message is ``messageExpression`` (variables ``object`` and ``result``), else
``message``, else "Manifest is <condition>" / "Manifest is not <condition>".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.conditions import FALSE, TRUE, UNKNOWN, Condition, make_condition
from ocm_rollout.sandbox.agents.feedback import split_api_version


@dataclass(frozen=True)
class _CelRule:
    condition: str
    expressions: tuple[str, ...]
    message: str
    message_expression: str


_JOB_COMPLETE = _CelRule(
    condition=names.MANIFEST_COMPLETE,
    expressions=(
        "hasConditions(object.status) ? object.status.conditions.filter(c, c.type == 'Complete' || "
        "c.type == 'Failed').exists(c, c.status == 'True') : false",
    ),
    message="",
    message_expression='result ? "Job is finished" : "Job is not finished"',
)

_POD_COMPLETE = _CelRule(
    condition=names.MANIFEST_COMPLETE,
    expressions=("object.status.phase in ['Succeeded', 'Failed']",),
    message="",
    message_expression='"Pod is in phase " + object.status.phase',
)

WELL_KNOWN_CONDITIONS: dict[tuple[str, str, str], dict[str, _CelRule]] = {
    ("batch", "v1", "Job"): {names.MANIFEST_COMPLETE: _JOB_COMPLETE},
    ("", "v1", "Pod"): {names.MANIFEST_COMPLETE: _POD_COMPLETE},
}


def _has_conditions(value: Any) -> celtypes.BoolType:
    key = celtypes.StringType("conditions")
    if isinstance(value, celtypes.MapType) and key in value:
        found = value[key]
        return celtypes.BoolType(isinstance(found, celtypes.ListType) and len(found) > 0)
    return celtypes.BoolType(False)


_ENV = celpy.Environment()
_FUNCTIONS: dict[str, Any] = {"hasConditions": _has_conditions}


class _CelFailure(Exception):
    def __init__(self, status: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


@lru_cache(maxsize=512)
def _program(expression: str) -> celpy.Runner:
    try:
        ast = _ENV.compile(expression)
    except celpy.CELParseError as exc:
        first_line = str(exc).split("\n", 1)[0]
        raise _CelFailure(FALSE, names.REASON_CONDITION_RULE_EXPRESSION_ERROR, f"compile error: {first_line}") from None
    try:
        return _ENV.program(ast, functions=_FUNCTIONS)
    except Exception as exc:
        raise _CelFailure(UNKNOWN, names.REASON_CONDITION_RULE_INTERNAL_ERROR, str(exc)) from None


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    program = _program(expression)
    try:
        return program.evaluate(activation)
    except celpy.CELEvalError as exc:
        detail = exc.args[0] if exc.args else str(exc)
        raise _CelFailure(FALSE, names.REASON_CONDITION_RULE_EXPRESSION_ERROR, str(detail)) from None
    except Exception as exc:
        raise _CelFailure(FALSE, names.REASON_CONDITION_RULE_EXPRESSION_ERROR, str(exc)) from None


def _message(rule: _CelRule, cel_object: Any, result: bool) -> str:
    if rule.message_expression:
        try:
            out = _evaluate(rule.message_expression, {"object": cel_object, "result": celtypes.BoolType(result)})
        except _CelFailure as failure:
            return failure.message
        if not isinstance(out, str):
            return f"expected message expression to have a string result, got {type(out).__name__}"
        if out:
            return str(out)
    if rule.message:
        return rule.message
    return ("Manifest is " if result else "Manifest is not ") + rule.condition


def _evaluate_cel_rule(rule: _CelRule, obj: Mapping[str, Any]) -> Condition:
    cel_object = celpy.json_to_cel(dict(obj))
    try:
        for expression in rule.expressions:
            out = _evaluate(expression, {"object": cel_object})
            if not isinstance(out, celtypes.BoolType):
                raise _CelFailure(
                    FALSE,
                    names.REASON_CONDITION_RULE_EXPRESSION_ERROR,
                    f"expected bool result, got {type(out).__name__}",
                )
            if not out:
                return make_condition(
                    rule.condition, FALSE, names.REASON_CONDITION_RULE_EVALUATED, _message(rule, cel_object, False)
                )
    except _CelFailure as failure:
        return make_condition(rule.condition, failure.status, failure.reason, failure.message)
    return make_condition(rule.condition, TRUE, names.REASON_CONDITION_RULE_EVALUATED, _message(rule, cel_object, True))


def _expressions(raw: Any) -> tuple[str, ...]:
    out: list[str] = []
    for item in raw or ():
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("expression"), str):
            out.append(item["expression"])
    return tuple(out)


def evaluate_rules(rules: Sequence[Mapping[str, Any]], obj: Mapping[str, Any]) -> list[Condition]:
    """The conditions the rules produce for ``obj`` (without observedGeneration)."""
    group, version = split_api_version(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    out: list[Condition] = []
    for raw in rules:
        condition = str(raw.get("condition") or "")
        rule_type = raw.get("type")
        message = str(raw.get("message") or "")
        message_expression = str(raw.get("messageExpression") or "")
        if rule_type == names.RULE_WELL_KNOWN_CONDITIONS:
            known = WELL_KNOWN_CONDITIONS.get((group, version, kind), {}).get(names.MANIFEST_COMPLETE)
            if known is None:
                continue
            rule = _CelRule(
                condition=condition or known.condition,
                expressions=known.expressions,
                message=message or known.message,
                message_expression=message_expression or known.message_expression,
            )
            out.append(_evaluate_cel_rule(rule, obj))
        elif rule_type == names.RULE_CEL:
            rule = _CelRule(condition, _expressions(raw.get("celExpressions")), message, message_expression)
            out.append(_evaluate_cel_rule(rule, obj))
        else:
            out.append(
                make_condition(
                    condition, UNKNOWN, names.REASON_CONDITION_RULE_INVALID, f"unrecognized condition rule type {rule_type}"
                )
            )
    return out


def is_rule_generated(condition: Mapping[str, Any]) -> bool:
    return str(condition.get("reason", "")).startswith(names.CONDITION_RULE_REASON_PREFIX)
