"""Feedback checks: a cluster's ManifestWork status (add-ons: the ManagedClusterAddOn's
conditions and its agent's works) in, a verdict out.

The variables a feedback condition sees:

- ``feedback``: map from ``"<group>/<Kind>/<namespace>/<name>"`` (four segments, the core
  group and a cluster-scoped object's namespace empty: ``"/ConfigMap/default/cm"``,
  ``"/Namespace//team-a"``) to the manifest's status feedback values by name. Integer values
  are ints, String strings, Boolean bools, JsonRaw the parsed JSON (its raw text when it does
  not parse). E.g. ``feedback["apps/Deployment/default/web"].ReadyReplicas``.
- ``manifests``: every manifest, in order, as ``{group, version, kind, resource, namespace,
  name, ordinal, feedback, conditions}`` (``conditions`` as below), to iterate with macros.
- ``conditions``: the work's conditions by type, ``{type, status, reason, message}``
  (``conditions["Available"].status == "True"``); for an add-on, the ManagedClusterAddOn's.
- ``cluster``: the cluster's name.

The verdict (``evaluate_feedback``): ``failureCondition`` true fails the check;
``successCondition`` true (and no failure) passes it; anything else, an evaluation error
included (a feedback value not synced yet is a missing key), keeps it ``Running`` with the
reason, until the cluster's progressDeadline.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.rollout_checks import FeedbackCheck
from ocm_rollout.controllers.rollout.checks.cel import (
    FEEDBACK_VARIABLES,
    Condition,
    ConditionError,
    compile_condition,
    evaluate,
)
from ocm_rollout.controllers.rollout.checks.phase import Phase


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def feedback_key(meta: Mapping[str, Any]) -> str:
    """The ``feedback`` map key of a manifest's ``resourceMeta``."""
    return "/".join(_text(meta.get(k)) for k in ("group", "kind", "namespace", "name"))


def field_value(value: Mapping[str, Any]) -> Any:
    """One ``fieldValue`` as plain data (None when its type and content disagree)."""
    kind = value.get("type")
    if kind == "Integer" and isinstance(value.get("integer"), int) and not isinstance(value.get("integer"), bool):
        return value["integer"]
    if kind == "String" and isinstance(value.get("string"), str):
        return value["string"]
    if kind == "Boolean" and isinstance(value.get("boolean"), bool):
        return value["boolean"]
    if kind == "JsonRaw" and isinstance(value.get("jsonRaw"), str):
        try:
            return json.loads(value["jsonRaw"])
        except ValueError:
            return value["jsonRaw"]
    return None


def conditions_by_type(conditions: Any) -> dict[str, dict[str, str]]:
    """Conditions as a map by type (the first of a repeated type wins)."""
    out: dict[str, dict[str, str]] = {}
    for item in _list(conditions):
        if isinstance(item, Mapping) and isinstance(item.get("type"), str) and item["type"] not in out:
            out[item["type"]] = {k: _text(item.get(k)) for k in ("type", "status", "reason", "message")}
    return out


def _manifests(work: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for item in _list(_dict(_dict(work.get("status")).get("resourceStatus")).get("manifests")):
        if not isinstance(item, Mapping):
            continue
        meta = _dict(item.get("resourceMeta"))
        values: dict[str, Any] = {}
        for entry in _list(_dict(item.get("statusFeedback")).get("values")):
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                converted = field_value(_dict(entry.get("fieldValue")))
                if converted is not None:
                    values[entry["name"]] = converted
        ordinal = meta.get("ordinal")
        out.append(
            {
                **{k: _text(meta.get(k)) for k in ("group", "version", "kind", "resource", "namespace", "name")},
                "ordinal": ordinal if isinstance(ordinal, int) and not isinstance(ordinal, bool) else -1,
                "feedback": values,
                "conditions": conditions_by_type(item.get("conditions")),
            }
        )
    return out


def work_variables(work: Mapping[str, Any], cluster: str) -> dict[str, Any]:
    """The variables of a feedback condition for a ManifestWorkReplicaSet's work on ``cluster``."""
    return _variables([work], _dict(work.get("status")).get("conditions"), cluster)


def addon_variables(addon: Mapping[str, Any], works: Sequence[Mapping[str, Any]], cluster: str) -> dict[str, Any]:
    """The variables for an add-on on ``cluster``: the ManagedClusterAddOn's conditions, and the
    manifests of its agent's works (in work-name order; the first of a repeated key wins)."""
    ordered = sorted(works, key=lambda w: _text(_dict(w.get("metadata")).get("name")))
    return _variables(ordered, _dict(addon.get("status")).get("conditions"), cluster)


def _variables(works: Sequence[Mapping[str, Any]], conditions: Any, cluster: str) -> dict[str, Any]:
    manifests = [m for work in works for m in _manifests(work)]
    feedback: dict[str, Any] = {}
    for m in manifests:
        feedback.setdefault(feedback_key(m), m["feedback"])
    return {"feedback": feedback, "manifests": manifests, "conditions": conditions_by_type(conditions), "cluster": cluster}


@dataclass(frozen=True)
class FeedbackSettings:
    """A feedback check, compiled."""

    name: str
    success: Condition | None
    failure: Condition | None

    @classmethod
    def compile(cls, name: str, check: FeedbackCheck) -> FeedbackSettings:
        """Compile ``check``; a condition that does not compile raises ``CheckCompileError``."""
        success = failure = None
        if check.success_condition is not None:
            success = compile_condition(name, "feedback.successCondition", check.success_condition, FEEDBACK_VARIABLES)
        if check.failure_condition is not None:
            failure = compile_condition(name, "feedback.failureCondition", check.failure_condition, FEEDBACK_VARIABLES)
        return cls(name, success, failure)


@dataclass(frozen=True)
class FeedbackVerdict:
    phase: Phase  # Running, Successful or Failed
    message: str


def evaluate_feedback(settings: FeedbackSettings, variables: Mapping[str, Any]) -> FeedbackVerdict:
    """The verdict of a feedback check on one pass (see the module docstring)."""
    waiting: list[str] = []
    if settings.failure is not None:
        try:
            if evaluate(settings.failure, variables):
                return FeedbackVerdict(Phase.FAILED, f"failureCondition is true: {settings.failure.source}")
        except ConditionError as exc:
            waiting.append(f"failureCondition: {exc}")
    if settings.success is not None:
        try:
            if evaluate(settings.success, variables):
                return FeedbackVerdict(Phase.SUCCESSFUL, "successCondition is true")
            waiting.append("successCondition is false")
        except ConditionError as exc:
            waiting.append(f"successCondition: {exc}")
    elif not waiting:
        return FeedbackVerdict(Phase.SUCCESSFUL, "failureCondition is false")
    return FeedbackVerdict(Phase.RUNNING, "; ".join(waiting))
