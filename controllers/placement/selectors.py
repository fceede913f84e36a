"""Label, claim and cluster selectors compiled once per pass.

A label selector compiles as Kubernetes' ``LabelSelectorAsSelector`` does (the rules and the
error messages come from ``ocm_rollout.api.meta.LabelSelector.check``); matching then costs a few dict
lookups per cluster. A claim selector is a label selector made only of its
``matchExpressions``, evaluated against the cluster's claims.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ocm_rollout.api.cluster_v1beta1 import ClusterClaimSelector
from ocm_rollout.api.meta import LabelSelector, SelectorError

__all__ = ["CompiledSelector", "SelectorError", "compile_claim_selector", "compile_label_selector"]

_Requirement = Callable[[Mapping[str, str]], bool]


def _requirement(key: str, operator: str, values: frozenset[str]) -> _Requirement:
    if operator == "In":
        return lambda labels: key in labels and labels[key] in values
    if operator == "NotIn":
        return lambda labels: key not in labels or labels[key] not in values
    if operator == "Exists":
        return lambda labels: key in labels
    return lambda labels: key not in labels


@dataclass(frozen=True)
class CompiledSelector:
    """A compiled selector; ``everything`` is true for a selector with no requirement.
    ``signature`` is its requirements as data: equal signatures match the same labels."""

    requirements: tuple[_Requirement, ...]
    signature: tuple[tuple[str, str, frozenset[str]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req(labels) for req in self.requirements)


MATCH_ALL = CompiledSelector(())


def compile_label_selector(selector: LabelSelector | None) -> CompiledSelector:
    """Compile a selector; None (a missing selector) matches everything, as an empty one does.

    Raises SelectorError (with Kubernetes' wording) when the selector is invalid.
    """
    if selector is None:
        return MATCH_ALL
    selector.check()
    signature = tuple((r.key, r.operator, frozenset(r.values)) for r in selector.requirements())
    return CompiledSelector(tuple(_requirement(*each) for each in signature), signature)


def compile_claim_selector(selector: ClusterClaimSelector | None) -> CompiledSelector:
    """A claim selector: only its matchExpressions, as a label selector over the claims."""
    if selector is None or not selector.match_expressions:
        return MATCH_ALL
    return compile_label_selector(selector.as_label_selector())
