"""The PlacementDecision pages a pass wants, and the writes that get the API there (spec §9).

``desired_decisions`` builds the pages as wire objects. ``plan_decision_writes`` compares them
with the pages that exist and returns the writes in OCM's order: per page, create it if absent,
then patch its status if the decisions differ, otherwise patch its labels if they differ (never
both in one pass: the label patch follows on the next reconcile, which the status change itself
triggers); finally delete the labelled pages that are no longer wanted. The event texts are
here too.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.api.cluster_v1beta1 import API_VERSION as PLACEMENT_API_VERSION
from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX, LABEL_DECISION_GROUP_NAME
from ocm_rollout.controllers.placement.filters import WARNING, Status
from ocm_rollout.controllers.placement.groups import DecisionPage
from ocm_rollout.controllers.placement.snapshot import PLACEMENT_LABEL
from ocm_rollout.controllers.placement.spread import SpreadResult

GROUP_NAME_LABEL = LABEL_DECISION_GROUP_NAME
GROUP_INDEX_LABEL = LABEL_DECISION_GROUP_INDEX
MAX_EVENT_NOTE = 1000

JSON = dict[str, Any]


def page_labels(placement_name: str, page: DecisionPage) -> dict[str, str]:
    return {
        PLACEMENT_LABEL: placement_name,
        GROUP_NAME_LABEL: page.group_name,
        GROUP_INDEX_LABEL: str(page.group_index),
    }


def decision_entry(name: str, scores: Mapping[str, int]) -> JSON:
    entry: JSON = {"clusterName": name, "reason": ""}
    score = scores.get(name)
    if score is not None:
        entry["score"] = score
    return entry


def desired_decisions(
    placement: Placement, pages: Sequence[DecisionPage], scores: Mapping[str, int], *, owner: bool = True
) -> list[JSON]:
    """The pages as PlacementDecision objects (with a controller ownerReference when ``owner``);
    each decision carries the cluster's score from ``scores``."""
    out = []
    for page in pages:
        metadata: JSON = {
            "name": page.name,
            "namespace": placement.namespace,
            "labels": page_labels(placement.name, page),
        }
        if owner:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": PLACEMENT_API_VERSION,
                    "kind": "Placement",
                    "name": placement.name,
                    "uid": placement.metadata.uid or "",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        out.append(
            {
                "apiVersion": PLACEMENT_API_VERSION,
                "kind": "PlacementDecision",
                "metadata": metadata,
                "status": {"decisions": [decision_entry(name, scores) for name in page.clusters]},
            }
        )
    return out


def _decision_entries(obj: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    status = obj.get("status") or {}
    entries = status.get("decisions") or []
    return [(d.get("clusterName"), d.get("reason", ""), d.get("score")) for d in entries if isinstance(d, Mapping)]


def decisions_differ(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the status decisions differ (an absent list equals an empty one)."""
    return _decision_entries(existing) != _decision_entries(desired)


@dataclass
class DecisionWrite:
    """One write: ``create`` (then the status is compared with an empty one), ``status``,
    ``labels`` (a merge patch that sets exactly the desired labels) or ``delete``."""

    action: str
    name: str
    body: JSON = field(default_factory=dict)


def plan_decision_writes(desired: Sequence[JSON], existing: Mapping[str, Mapping[str, Any]]) -> list[DecisionWrite]:
    """The writes, in order, from the existing pages (by name, this placement's labelled pages
    plus any page already holding a desired name) to the desired ones."""
    writes: list[DecisionWrite] = []
    wanted = set()
    for page in desired:
        name = page["metadata"]["name"]
        wanted.add(name)
        current: Mapping[str, Any] | None = existing.get(name)
        if current is None:
            create = {k: v for k, v in page.items() if k != "status"}
            writes.append(DecisionWrite("create", name, create))
            current = {"metadata": create["metadata"], "status": {}}
        if decisions_differ(current, page):
            writes.append(DecisionWrite("status", name, {"status": page["status"]}))
            continue
        have = dict((current.get("metadata") or {}).get("labels") or {})
        want = page["metadata"]["labels"]
        if have != want:
            patch: dict[str, Any] = dict(want)
            for key in have:
                if key not in want:
                    patch[key] = None
            writes.append(DecisionWrite("labels", name, {"metadata": {"labels": patch}}))
    for name in sorted(existing):
        labels = (existing[name].get("metadata") or {}).get("labels") or {}
        if name not in wanted and PLACEMENT_LABEL in labels:
            writes.append(DecisionWrite("delete", name))
    return writes


# --------------------------------------------------------------------------------------------
# Event texts
# --------------------------------------------------------------------------------------------


def created_message(decision: str, placement: Placement) -> str:
    return f"Decision {decision} is created with placement {placement.name} in namespace {placement.namespace}"


def updated_message(decision: str, placement: Placement, status: Status) -> tuple[str, bool]:
    """The DecisionUpdate text, and whether it is a Warning."""
    text = f"Decision {decision} is updated with placement {placement.name} in namespace {placement.namespace}"
    if status.code == WARNING:
        return f"{text}: {status.message} in plugin {status.plugin}", True
    return text, False


def deleted_message(decision: str, placement: Placement) -> str:
    return f"Decision {decision} is deleted with placement {placement.name} in namespace {placement.namespace}"


def score_note(scores: Mapping[str, int]) -> str:
    """``name:total `` for every filtered cluster in name order, cut at 1000 characters."""
    note = ""
    for name in sorted(scores):
        piece = f"{name}:{scores[name]} "
        if len(note) + len(piece) > MAX_EVENT_NOTE:
            note += "......"
            break
        note += piece
    return note


def spread_note(spread: SpreadResult) -> str:
    """Each term's topologies as ``value=selected/candidates`` (nested values joined by ``/``),
    then how many clusters spreading held back; cut at 1000 characters like the score note."""
    parts = []
    for report in spread.terms:
        counts = " ".join(
            f"{'/'.join('<none>' if v is None else v for v in t.values)}={t.selected}/{t.candidates}"
            for t in report.topologies
        )
        parts.append(f"{report.term.describe()}: {counts}")
    note = "; ".join(parts)
    held = spread.held_back_text()
    if held:
        note += f"; {held}"
    if len(note) > MAX_EVENT_NOTE:
        note = note[: MAX_EVENT_NOTE - 6] + "......"
    return note
