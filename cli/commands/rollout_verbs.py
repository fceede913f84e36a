"""What each ``ocm-rollout rollout`` verb writes and prints, decided from the objects read.

Pure: no I/O. ``controllers/commands/rollout.py`` reads the objects, asks this module for a
:class:`Change` (a patch or a whole object to write, and the line to print) or a rendering, and
writes it. Every change is declarative state on the rollout's owner (``spec.manifestWorkTemplate``,
``spec.paused``, the abort/retry/paused/promoted annotations), so it survives controller restarts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_PROMOTED,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.api.rollout_checks import RolloutPromotion
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    MANIFEST_WORK_REPLICA_SETS,
    Resource,
)
from ocm_rollout.controllers.common.decisions import DecisionGroupError, decision_groups
from ocm_rollout.controllers.common.wire import JSON, annotations_of, name_of
from ocm_rollout.controllers.rollout.checks.promotion import PromotionError, promote, rollout_order
from ocm_rollout.controllers.rollout.model import RolloutInputError
from ocm_rollout.controllers.rollout.strategy import decode_strategy
from ocm_rollout.controllers.workset.revisions import (
    by_number,
    live_history,
    number_of,
    revision_hash,
    revision_name,
    template_of,
)
from ocm_rollout.controllers.workset.template import spec_equals_template

Kind = Literal["mwrs", "addon"]
KINDS: tuple[Kind, ...] = ("mwrs", "addon")
RESOURCES: dict[Kind, Resource] = {"mwrs": MANIFEST_WORK_REPLICA_SETS, "addon": CLUSTER_MANAGEMENT_ADDONS}
TEMPLATE_PATH = "/spec/manifestWorkTemplate"
NONE = "<none>"
UNKNOWN = "<unknown>"


class RolloutError(Exception):
    """A state that makes the verb impossible: one line on stderr, exit code 1."""


@dataclass(frozen=True)
class Target:
    """The object a verb acts on: a ManifestWorkReplicaSet or a ClusterManagementAddOn."""

    kind: Kind
    name: str
    namespace: str | None = None

    @property
    def resource(self) -> Resource:
        return RESOURCES[self.kind]

    @property
    def display(self) -> str:
        """kubectl's ``<kind>.<group>/<name>``, e.g. ``manifestworkreplicaset.work.open-cluster-management.io/web``."""
        res = self.resource
        return f"{res.kind.lower()}.{res.group}/{self.name}"

    @property
    def qualified(self) -> str:
        """``<plural>.<group> "<name>"``, as the API server names an object in its errors."""
        res = self.resource
        return f'{res.plural}.{res.group} "{self.name}"'

    def not_found(self) -> str:
        return f"Error from server (NotFound): {self.qualified} not found"


@dataclass(frozen=True)
class Change:
    """What a verb does: ``message`` is printed on stdout once ``patch`` (a merge patch as a dict,
    a JSON patch as a list) is written; None: nothing to write."""

    message: str
    patch: JSON | list[JSON] | None = None


# -- reading ----------------------------------------------------------------------------------------


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def status_field(obj: Mapping[str, Any], key: str) -> str:
    return _text(_section(obj, "status").get(key))


def is_paused(target: Target, obj: Mapping[str, Any]) -> bool:
    if target.kind == "addon":
        # As the add-on manager reads it: "true" in any case; any other value does not pause.
        return annotations_of(obj).get(ANNOTATION_ROLLOUT_PAUSED, "").strip().lower() == "true"
    return _section(obj, "spec").get("paused") is True


def same_template(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> bool:
    """The workset controller's comparison (``ocm_rollout.controllers.workset.template``): key order, and fields
    at their zero value, do not count."""
    if left is None or right is None:
        return left is right
    return spec_equals_template(left, right)


def spec_template(mwrs: Mapping[str, Any]) -> JSON | None:
    template = _section(mwrs, "spec").get("manifestWorkTemplate")
    return dict(template) if isinstance(template, Mapping) else None


def find_revision(target: Target, revisions: Sequence[Mapping[str, Any]], number: int) -> Mapping[str, Any]:
    """Revision ``number`` of the (ordered) history; a RolloutError naming the ones there are."""
    found = by_number(revisions, number)
    if found is None:
        known = ", ".join(str(number_of(r)) for r in revisions) or "none recorded"
        raise RolloutError(f"revision {number} not found in the history of {target.display} (revisions: {known})")
    return found


def revision_template(revision: Mapping[str, Any]) -> JSON:
    template = template_of(revision)
    if template is None:
        raise RolloutError(
            f"revision {number_of(revision)} (controllerrevision {name_of(revision)}) holds no "
            "data.spec.manifestWorkTemplate"
        )
    return template


# -- pause / resume ---------------------------------------------------------------------------------


def pause_change(target: Target, obj: Mapping[str, Any]) -> Change:
    if is_paused(target, obj):
        return Change(f"{target.display} already paused")
    if target.kind == "addon":
        return Change(f"{target.display} paused", patch={"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: "true"}}})
    return Change(f"{target.display} paused", patch={"spec": {"paused": True}})


def resume_change(target: Target, obj: Mapping[str, Any]) -> Change:
    if not is_paused(target, obj):
        return Change(f"{target.display} not paused")
    if target.kind == "addon":
        return Change(f"{target.display} resumed", patch={"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: None}}})
    return Change(f"{target.display} resumed", patch={"spec": {"paused": None}})


# -- abort / retry (ManifestWorkReplicaSets) -------------------------------------------------------


def abort_change(target: Target, mwrs: Mapping[str, Any]) -> Change:
    """Request the abort of the rollout in progress: the abort annotation names its updateRevision."""
    update, current = status_field(mwrs, "updateRevision"), status_field(mwrs, "currentRevision")
    if not update or update == current:
        why = "status.updateRevision is not set" if not update else f"updateRevision equals currentRevision {current}"
        raise RolloutError(f"{target.display} has no rollout in progress to abort ({why})")
    aborted = status_field(mwrs, "abortedTime")
    annotations = annotations_of(mwrs)
    if aborted and annotations.get(ANNOTATION_ROLLOUT_RETRY) != aborted:
        return Change(f"{target.display} already aborted (update revision {update}, at {aborted})")
    if (annotations.get(ANNOTATION_ROLLOUT_ABORT) or "").strip() in (update, revision_name(target.name, update)):
        return Change(f"{target.display} abort already requested (update revision {update})")
    return Change(
        f"{target.display} aborted (update revision {update})",
        patch={"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: update}}},
    )


def retry_change(target: Target, mwrs: Mapping[str, Any]) -> Change:
    """Request a retry of the aborted rollout: the retry annotation names the status.abortedTime
    it undoes; the abort request (if any) is withdrawn in the same write, so it cannot abort the
    retried rollout again."""
    aborted = status_field(mwrs, "abortedTime")
    if not aborted:
        raise RolloutError(f"{target.display} is not aborted (status.abortedTime is not set)")
    if annotations_of(mwrs).get(ANNOTATION_ROLLOUT_RETRY) == aborted:
        return Change(f"{target.display} retry already requested (aborted at {aborted})")
    return Change(
        f"{target.display} retried (aborted at {aborted})",
        patch={"metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: aborted, ANNOTATION_ROLLOUT_ABORT: None}}},
    )


# -- promote ------------------------------------------------------------------------------------------


def promoted_placement(target: Target, mwrs: Mapping[str, Any], placement: str | None) -> Mapping[str, Any]:
    """The placementRef to promote: the one named, else the only one with a promotion gate."""
    spec = mwrs.get("spec")
    refs = spec.get("placementRefs") if isinstance(spec, Mapping) else None
    refs = [r for r in refs or () if isinstance(r, Mapping)]
    if placement is not None:
        for ref in refs:
            if ref.get("name") == placement:
                return ref
        raise RolloutError(f"{target.display} has no placementRef {placement!r}")
    gated = [r for r in refs if isinstance(r.get("rolloutStrategy"), Mapping) and r["rolloutStrategy"].get("promotion")]
    if len(gated) != 1:
        names = ", ".join(str(r.get("name")) for r in gated) or "none"
        raise RolloutError(
            f"{target.display}: name the placement with --placement (placementRefs with a promotion gate: {names})"
        )
    return gated[0]


def promote_change(
    target: Target,
    mwrs: Mapping[str, Any],
    ref: Mapping[str, Any],
    decisions: Iterable[Mapping[str, Any]],
    group: int | None,
) -> Change:
    """Promote the decision group of ``ref``'s placement that waits now (or ``group``) for the
    update revision: the promoted annotation records it, with a resourceVersion precondition so
    that a concurrent promotion of another placement is never lost."""
    placement = str(ref.get("name"))
    update = status_field(mwrs, "updateRevision")
    if not update:
        raise RolloutError(f"{target.display} has no rollout in progress to promote (status.updateRevision is not set)")
    return promotion_change(
        target, mwrs, placement, update, ref.get("rolloutStrategy"), f"placementRefs[{placement}].rolloutStrategy",
        decisions, group,
    )


def promotion_change(
    target: Target,
    obj: Mapping[str, Any],
    placement: str,
    revision: str,
    found: Any,
    field_path: str,
    decisions: Iterable[Mapping[str, Any]],
    group: int | None,
) -> Change:
    """Promote the decision group of ``placement`` (the key of the promoted annotation) that
    waits now (or ``group``) for ``revision``, under the rollout strategy ``found`` (wire JSON):
    the annotation on ``obj`` (a ManifestWorkReplicaSet or ClusterManagementAddOn) records it,
    with a resourceVersion precondition so that a concurrent promotion of another placement is
    never lost."""
    raw: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    try:
        strategy = decode_strategy(raw, field_path)
        spec = RolloutPromotion.model_validate(raw["promotion"]) if raw.get("promotion") is not None else None
        order = rollout_order(decision_groups(decisions), strategy.mandatory_decision_groups)
        value, promoted = promote(annotations_of(obj), placement, revision, spec, order, group)
    except (RolloutInputError, DecisionGroupError, PromotionError, ValueError) as exc:
        raise RolloutError(f"{target.display}: {exc}") from None
    patch: JSON = {"metadata": {"annotations": {ANNOTATION_ROLLOUT_PROMOTED: value}}}
    version = obj.get("metadata", {}).get("resourceVersion") if isinstance(obj.get("metadata"), Mapping) else None
    if version:
        patch["metadata"]["resourceVersion"] = version
    return Change(f"{target.display} promoted (placement {placement}, decision group {promoted}, revision {revision})", patch)


# -- undo ------------------------------------------------------------------------------------------


def previous_revision(target: Target, mwrs: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The revision before the update revision in history order (kubectl's default for undo).

    The update revision is the one whose hash is status.updateRevision; before the controller has
    set it, the one holding the spec's template; else the newest.
    """
    if not revisions:
        raise RolloutError(f"no rollout history found for {target.display}")
    update = status_field(mwrs, "updateRevision")
    template = spec_template(mwrs)
    index = next((i for i, r in enumerate(revisions) if update and revision_hash(r, target.name) == update), None)
    if index is None:
        index = next((i for i, r in enumerate(revisions) if same_template(template_of(r), template)), None)
    if index is None:
        index = len(revisions) - 1
    if index == 0:
        raise RolloutError(
            f"no previous revision to roll back to: revision {number_of(revisions[0])} is the oldest "
            f"in the history of {target.display}"
        )
    return revisions[index - 1]


def undo_change(
    target: Target, mwrs: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], to_revision: int = 0
) -> Change:
    """Replace spec.manifestWorkTemplate with revision ``to_revision``'s (0: the previous one).

    A JSON patch: ``replace /spec/manifestWorkTemplate``, so the template is replaced as a whole
    (nothing merges), and ``replace /metadata/resourceVersion`` with the version read, so the API
    server applies it only to that version (409 Conflict after a concurrent change, not a
    rollback decided on a stale object).
    """
    ordered = live_history(revisions)
    chosen = find_revision(target, ordered, to_revision) if to_revision else previous_revision(target, mwrs, ordered)
    number = number_of(chosen)
    template = revision_template(chosen)
    if same_template(spec_template(mwrs), template):
        return Change(f"{target.display} skipped rollback (current template already matches revision {number})")
    patch: list[JSON] = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": _text(_section(mwrs, "metadata").get("resourceVersion"))},
        {"op": "replace" if spec_template(mwrs) is not None else "add", "path": TEMPLATE_PATH, "value": template},
    ]
    return Change(f"{target.display} rolled back to revision {number}", patch=patch)


# -- history ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One revision of the history."""

    revision: int
    hash: str
    name: str
    created: str
    markers: tuple[str, ...]

    def as_json(self) -> JSON:
        return {
            "revision": self.revision,
            "hash": self.hash,
            "name": self.name,
            "created": self.created,
            "current": "current" in self.markers,
            "update": "update" in self.markers,
            "aborted": "aborted" in self.markers,
        }


def history_rows(mwrs: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]) -> list[Row]:
    """The revisions oldest first, marked ``current`` (status.currentRevision), ``update``
    (status.updateRevision) and ``aborted`` (the update revision while status.abortedTime is set)."""
    current, update = status_field(mwrs, "currentRevision"), status_field(mwrs, "updateRevision")
    aborted = bool(status_field(mwrs, "abortedTime"))
    rows = []
    mwrs_name = name_of(mwrs)
    for rev in live_history(revisions):
        digest = revision_hash(rev, mwrs_name)
        markers = []
        if digest and digest == current:
            markers.append("current")
        if digest and digest == update:
            markers.append("update")
            if aborted:
                markers.append("aborted")
        created = _text(_section(rev, "metadata").get("creationTimestamp"))
        rows.append(Row(number_of(rev), digest, name_of(rev), created, tuple(markers)))
    return rows


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], gap: int = 3) -> str:
    """Left-aligned columns ``gap`` spaces apart (kubectl's tabwriter), no trailing spaces."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(cell).ljust(width + gap) for cell, width in zip(row, widths, strict=True)]
        lines.append("".join(cells).rstrip())
    return "\n".join(lines)


def render_history(target: Target, rows: Sequence[Row]) -> str:
    """``<display>`` then a table REVISION, HASH, CREATED, MARKERS (oldest first)."""
    if not rows:
        return f"{target.display}\nNo rollout history found."
    table = render_table(
        ("REVISION", "HASH", "CREATED", "MARKERS"),
        [(str(r.revision), r.hash or NONE, r.created or UNKNOWN, ",".join(r.markers)) for r in rows],
    )
    return f"{target.display}\n{table}"


def dump(value: Any, output: str) -> str:
    """``value`` as JSON (indent 2) or YAML (block style, keys in order), ending in a newline."""
    if output == "json":
        return json.dumps(value, indent=2) + "\n"
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, allow_unicode=True)
