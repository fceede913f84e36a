"""The dashboard's actions: which ``ocm-rollout rollout`` verbs apply to a rollout now, and the
request a page sends to run one.

An action is offered exactly when the CLI verb would write something: availability asks the
verb's own decision (``cli/commands/rollout_verbs.py``, ``rollout_addon.py``) on the object the
page shows, and a verb that would write nothing, or refuses, is disabled with the verb's own
words as the reason. Running it (``server``) goes through ``cli.commands.rollout.change``, the
CLI's path: a fresh read, the same decision, the same patch with its preconditions.

Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.cli.commands import rollout_addon
from ocm_rollout.cli.commands.rollout import VerbRequest
from ocm_rollout.cli.commands.rollout_verbs import (
    Change,
    RolloutError,
    Target,
    abort_change,
    history_rows,
    pause_change,
    previous_revision,
    promote_change,
    resume_change,
    retry_change,
    same_template,
    spec_template,
)
from ocm_rollout.controllers.addon.configs import build_graph
from ocm_rollout.controllers.common.wire import JSON
from ocm_rollout.controllers.workset.revisions import live_history, number_of, template_of

VERBS = ("pause", "resume", "abort", "retry", "undo", "promote")
ADDON_VERBS = ("pause", "resume", "abort", "retry", "promote")
MAX_NAME = 253


class ActionRequestError(ValueError):
    """A request body the dashboard cannot act on (400, with this message)."""


def _probe(decide: Callable[[], Change]) -> JSON:
    """Enabled when the verb would write; else disabled with why (the verb's own message)."""
    try:
        change = decide()
    except RolloutError as exc:
        return {"enabled": False, "reason": str(exc)}
    if change.patch is None:
        return {"enabled": False, "reason": change.message}
    return {"enabled": True, "reason": ""}


def mwrs_actions(
    mwrs: Mapping[str, Any], decisions: Mapping[str, Sequence[Mapping[str, Any]]], revisions: Sequence[Mapping[str, Any]]
) -> JSON:
    """The verbs for a ManifestWorkReplicaSet: each ``{"enabled", "reason"}``; ``undo`` also lists
    the revisions it may go back to (and the default one), ``promote`` is per placementRef."""
    metadata = mwrs.get("metadata") or {}
    target = Target("mwrs", str(metadata.get("name") or ""), str(metadata.get("namespace") or ""))
    out: JSON = {
        "pause": _probe(lambda: pause_change(target, mwrs)),
        "resume": _probe(lambda: resume_change(target, mwrs)),
        "abort": _probe(lambda: abort_change(target, mwrs)),
        "retry": _probe(lambda: retry_change(target, mwrs)),
        "undo": _undo(target, mwrs, revisions),
    }
    promote = {}
    for ref in (mwrs.get("spec") or {}).get("placementRefs") or ():
        if not isinstance(ref, Mapping):
            continue
        strategy = ref.get("rolloutStrategy")
        if not (isinstance(strategy, Mapping) and strategy.get("promotion")):
            continue
        name = str(ref.get("name") or "")
        found = decisions.get(name, ())
        promote[name] = _probe(functools.partial(promote_change, target, mwrs, ref, found, None))
    out["promote"] = promote
    return out


def _undo(target: Target, mwrs: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> JSON:
    ordered = live_history(revisions)
    template = spec_template(mwrs)
    rows = {r.revision: r for r in history_rows(mwrs, ordered)}
    choices: list[JSON] = []
    for revision in ordered:
        number = number_of(revision)
        if same_template(template_of(revision), template):
            continue
        row = rows.get(number)
        choices.append({"revision": number, "markers": list(row.markers) if row else [], "created": row.created if row else ""})
    if not choices:
        why = "no rollout history found" if not ordered else "every revision in the history holds the current template"
        return {"enabled": False, "reason": why, "revisions": [], "default": None}
    try:
        default: int | None = number_of(previous_revision(target, mwrs, ordered))
    except RolloutError:
        default = None
    if default not in [c["revision"] for c in choices]:
        default = int(choices[-1]["revision"])
    return {"enabled": True, "reason": "", "revisions": choices, "default": default}


def addon_actions(cma: Mapping[str, Any], decisions: Mapping[str, Sequence[Mapping[str, Any]]]) -> JSON:
    """The verbs for a ClusterManagementAddOn: pause and resume for the whole add-on; abort,
    retry and (with a promotion gate) promote per placement ``<namespace>/<name>``."""
    target = Target("addon", str((cma.get("metadata") or {}).get("name") or ""))
    per: dict[str, JSON] = {}
    for node in build_graph(cma, {}, {}).nodes:
        key = node.key
        entry: JSON = {
            "abort": _probe(functools.partial(rollout_addon.abort_change, target, cma, key)),
            "retry": _probe(functools.partial(rollout_addon.retry_change, target, cma, key)),
        }
        if isinstance(node.strategy, Mapping) and node.strategy.get("promotion"):
            found = decisions.get(key, ())
            entry["promote"] = _probe(functools.partial(rollout_addon.promote_change, target, cma, node, found, None))
        per[key] = entry
    return {
        "pause": _probe(lambda: pause_change(target, cma)),
        "resume": _probe(lambda: resume_change(target, cma)),
        "placements": per,
    }


@dataclass(frozen=True)
class ActionRequest:
    target: Target
    verb: VerbRequest


def _text(body: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        if required:
            raise ActionRequestError(f"{key!r} is required")
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise ActionRequestError(f"{key!r} must be a string of at most {MAX_NAME} characters")
    return value


def _number(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ActionRequestError(f"{key!r} must be a whole number, 0 or more")
    return value


def parse_request(body: Any) -> ActionRequest:
    """The action a POST body asks for: ``{"verb", "kind", "namespace", "name", "placement"?,
    "group"?, "toRevision"?}``; an ``ActionRequestError`` says what is wrong."""
    if not isinstance(body, Mapping):
        raise ActionRequestError("the body must be a JSON object")
    verb = _text(body, "verb", required=True)
    kind = _text(body, "kind", required=True)
    if kind not in ("mwrs", "addon"):
        raise ActionRequestError(f"kind must be 'mwrs' or 'addon', got {kind!r}")
    allowed = VERBS if kind == "mwrs" else ADDON_VERBS
    if verb not in allowed:
        raise ActionRequestError(f"verb {verb!r} is not one of {', '.join(allowed)} for kind {kind}")
    name = _text(body, "name", required=True)
    namespace = _text(body, "namespace", required=kind == "mwrs") if kind == "mwrs" else None
    request = VerbRequest(
        str(verb), _text(body, "placement", required=False), _number(body, "group"), _number(body, "toRevision") or 0
    )
    return ActionRequest(Target("mwrs" if kind == "mwrs" else "addon", str(name), namespace), request)
