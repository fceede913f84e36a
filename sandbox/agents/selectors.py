"""metav1.LabelSelector matching over plain dicts, for cluster sets and simulation profiles.

An empty selector (``{}``) matches everything, a null one nothing; ``matchLabels`` and
``matchExpressions`` (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``) are ANDed. ``NotIn`` matches
an absent key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SelectorError(ValueError):
    """A selector that cannot be compiled; the message names the offending field."""


def validate_selector(selector: Any, where: str) -> None:
    if selector is None:
        return
    if not isinstance(selector, Mapping):
        raise SelectorError(f"{where}: must be a mapping with matchLabels and/or matchExpressions")
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise SelectorError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise SelectorError(f"{where}.matchLabels: must be a mapping of label key to value")
    for key, value in labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"{where}.matchLabels.{key}: value must be a string")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{where}.matchExpressions: must be a list")
    for index, expr in enumerate(expressions):
        path = f"{where}.matchExpressions[{index}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            raise SelectorError(f"{path}.key: required")
        operator = expr.get("operator")
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values or not all(isinstance(v, str) for v in values):
                raise SelectorError(f"{path}.values: {operator} needs at least one string value")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                raise SelectorError(f"{path}.values: must be empty for {operator}")
        else:
            raise SelectorError(f"{path}.operator: {operator!r} is not one of In, NotIn, Exists, DoesNotExist")


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Does ``labels`` satisfy ``selector``? (Assumes a selector that validates.)"""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key = expr["key"]
        operator = expr["operator"]
        values = expr.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
