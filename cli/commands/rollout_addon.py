"""``ocm-rollout rollout abort|retry --kind addon NAME [--placement NS/NAME]``: the abort and retry
requests of a ClusterManagementAddOn's configuration rollout, as the add-on manager defines them
(``controllers/addon/abort.py``):

- abort: the annotation ``rollout.ocm-rollout.io/abort`` names the revision (``abort.revision``,
  a digest of a placement's desired configurations) of the rollout to abort; every placement
  rolling out that revision is aborted for as long as the annotation names it.
- retry: the annotation ``rollout.ocm-rollout.io/retry`` names the time of an abort, as recorded
  in the annotation ``rollout.ocm-rollout.io/aborted`` (``{"<ns>/<placement>": {"time",
  "revision", ...}}``); every placement aborted at that time resumes. The abort request naming the
  retried revision, if any, is withdrawn in the same write (removing it is the retry of a
  requested abort).

A placement is rolling out while one of its ``installProgressions`` configurations has no
``lastKnownGoodConfig`` or another one than its ``desiredConfig``. ``--placement`` chooses when
several placements roll out different revisions, or were aborted at different times.

- promote: the annotation ``rollout.ocm-rollout.io/promoted`` records, under the placement's
  ``<namespace>/<name>``, the decision group waiting at its promotion gate (or ``--group N``) for
  the revision of its desired configurations (docs/behaviour/validation.md); ``--placement`` names
  the placement when more than one has a promotion gate.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_ABORT, ANNOTATION_ROLLOUT_RETRY
from ocm_rollout.cli.commands.rollout_verbs import Change, RolloutError, Target, promotion_change
from ocm_rollout.controllers.addon import abort as addon_abort
from ocm_rollout.controllers.addon.configs import PlacementNode, build_graph
from ocm_rollout.controllers.common.wire import annotations_of


@dataclass(frozen=True)
class Rollout:
    """One placement of the install strategy: the revision of its desired configurations."""

    placement: str  # <namespace>/<name>
    revision: str
    in_progress: bool


def _referent(value: Any) -> tuple[str, str, str] | None:
    if not isinstance(value, Mapping):
        return None
    return (str(value.get("namespace") or ""), str(value.get("name") or ""), str(value.get("specHash") or ""))


def _in_progress(progression: Mapping[str, Any]) -> bool:
    items = progression.get("configReferences")
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping) or _referent(item.get("desiredConfig")) is None:
            continue
        if _referent(item.get("lastKnownGoodConfig")) != _referent(item.get("desiredConfig")):
            return True
    return False


def rollouts(cma: Mapping[str, Any]) -> list[Rollout]:
    """Each placement of the install strategy with an ``installProgressions`` entry, in order."""
    status = cma.get("status")
    entries = status.get("installProgressions") if isinstance(status, Mapping) else None
    progressions = {
        f"{e.get('namespace') or ''}/{e.get('name') or ''}": e
        for e in (entries if isinstance(entries, list) else ())
        if isinstance(e, Mapping)
    }
    out = []
    for node in build_graph(cma, {}, {}).nodes:
        progression = progressions.get(node.key, {})
        out.append(Rollout(node.key, addon_abort.revision(node.desired), _in_progress(progression)))
    return out


def _record(target: Target, cma: Mapping[str, Any]) -> dict[str, addon_abort.Abort]:
    try:
        return addon_abort.of_owner(cma)
    except addon_abort.AbortRecordError as exc:
        raise RolloutError(f"{target.display}: {exc}") from None


def _listing(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{placement} {value}" for placement, value in pairs)


def abort_change(target: Target, cma: Mapping[str, Any], placement: str | None = None) -> Change:
    """Request the abort of the configuration rollout in progress (of ``placement``'s revision)."""
    found = rollouts(cma)
    if placement is not None:
        found = [r for r in found if r.placement == placement]
        if not found:
            raise RolloutError(f"placement {placement} is not in the install strategy of {target.display}")
    rolling = [r for r in found if r.in_progress]
    if not rolling:
        where = f" for placement {placement}" if placement else ""
        raise RolloutError(f"{target.display} has no configuration rollout in progress to abort{where}")
    revisions = sorted({r.revision for r in rolling})
    if len(revisions) > 1:
        raise RolloutError(
            f"{target.display} rolls out several configuration revisions "
            f"({_listing([(r.placement, 'revision ' + r.revision) for r in rolling])}): choose one with --placement NS/NAME"
        )
    revision = revisions[0]
    annotations = annotations_of(cma)
    retry = annotations.get(ANNOTATION_ROLLOUT_RETRY, "").strip()
    record = _record(target, cma)
    aborted = [record[r.placement] for r in rolling if r.placement in record]
    current = [a for a in aborted if a.revision == revision and a.time != retry]
    if current:
        return Change(f"{target.display} already aborted (revision {revision}, at {current[0].time})")
    if annotations.get(ANNOTATION_ROLLOUT_ABORT, "").strip() == revision:
        return Change(f"{target.display} abort already requested (revision {revision})")
    return Change(
        f"{target.display} aborted (revision {revision})",
        patch={"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: revision}}},
    )


def retry_change(target: Target, cma: Mapping[str, Any], placement: str | None = None) -> Change:
    """Request the retry of an aborted configuration rollout (the one of ``placement``)."""
    record = _record(target, cma)
    entries = {k: v for k, v in record.items() if placement is None or k == placement}
    if not entries:
        where = f" for placement {placement}" if placement else ""
        raise RolloutError(f"{target.display} is not aborted{where} (no {addon_abort.ANNOTATION} record)")
    times = sorted({a.time for a in entries.values()})
    if len(times) > 1:
        raise RolloutError(
            f"{target.display} was aborted at several times "
            f"({_listing([(k, 'at ' + a.time) for k, a in sorted(entries.items())])}): choose one with --placement NS/NAME"
        )
    time = times[0]
    annotations = annotations_of(cma)
    requested = annotations.get(ANNOTATION_ROLLOUT_ABORT, "").strip()
    withdraw = bool(requested) and any(a.revision == requested for a in entries.values())
    if annotations.get(ANNOTATION_ROLLOUT_RETRY, "").strip() == time and not withdraw:
        return Change(f"{target.display} retry already requested (aborted at {time})")
    patch: dict[str, str | None] = {ANNOTATION_ROLLOUT_RETRY: time}
    if withdraw:
        patch[ANNOTATION_ROLLOUT_ABORT] = None
    return Change(f"{target.display} retried (aborted at {time})", patch={"metadata": {"annotations": patch}})


def promoted_placement(target: Target, cma: Mapping[str, Any], placement: str | None) -> PlacementNode:
    """The placement to promote: the one named (``<namespace>/<name>``), else the only one whose
    rollout strategy has a promotion gate."""
    nodes = build_graph(cma, {}, {}).nodes
    if placement is not None:
        for node in nodes:
            if node.key == placement:
                return node
        raise RolloutError(f"placement {placement} is not in the install strategy of {target.display}")
    gated = [n for n in nodes if isinstance(n.strategy, Mapping) and n.strategy.get("promotion")]
    if len(gated) != 1:
        names = ", ".join(n.key for n in gated) or "none"
        raise RolloutError(
            f"{target.display}: name the placement with --placement NS/NAME (placements with a promotion gate: {names})"
        )
    return gated[0]


def promote_change(
    target: Target, cma: Mapping[str, Any], node: PlacementNode, decisions: Iterable[Mapping[str, Any]], group: int | None
) -> Change:
    """Promote the decision group of ``node``'s placement waiting now (or ``group``) for the
    revision of its desired configurations."""
    return promotion_change(
        target, cma, node.key, addon_abort.revision(node.desired), node.strategy, node.strategy_path, decisions, group
    )
