"""The live view of ``ocm-rollout up``: what is applied where, per placement and decision group.

``build_snapshot`` (pure) condenses the stored objects: per cluster its availability, taints and
the state of its ManifestWorks; per ManifestWorkReplicaSet its conditions and, per placement and
decision group, the rollout state of every decided cluster (from
``ocm_rollout.controllers.workset.report``); per ClusterManagementAddOn, per placement and decision group,
the state of every decided cluster's ManagedClusterAddOn against the desired configurations and
the placement's ``installProgressions`` condition (from ``ocm_rollout.controllers.addon.report``, through
``addon_part``); per Placement its decision groups. ``render`` draws a snapshot as text for a
terminal (``limit`` keeps a fleet larger than a screen to a screenful); ``changes`` lists what
differs between two snapshots, one line each, for a log when stdout is not a terminal. The
snapshot's parts (``cluster_row``, ``rollout_row``, ``placement_rows``, ``addon_part``) are
separate functions so that ``ocm_rollout.cli.view.live_view`` can compute each again only when its inputs
changed.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ocm_rollout.api import constants
from ocm_rollout.client.kube import (
    JSON,
)
from ocm_rollout.client.watchcache import key_of
from ocm_rollout.controllers.addon.configs import placement_ref, placement_strategies
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.report import (
    FAILED_STATE,
    STATES,
    TIMED_OUT_STATE,
    AddonReport,
    GroupReport,
    PlacementReport,
    build_addon_report,
)
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.wire import mapping_at
from ocm_rollout.controllers.workset.report import APPLY_FAILED_STATE as WORKSET_APPLY_FAILED_STATE
from ocm_rollout.controllers.workset.report import FAILED_STATE as WORKSET_FAILED_STATE
from ocm_rollout.controllers.workset.report import VALIDATING_STATE as WORKSET_VALIDATING_STATE
from ocm_rollout.controllers.workset.report import Report, build_report
from ocm_rollout.controllers.workset.workbuild import owner_for

# Failed or timed-out clusters whose reason the screen lists, per decision group of an add-on.
SHOWN_ADDON_FAILURES = 5


# --- snapshot ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterRow:
    name: str
    available: str
    taints: tuple[str, ...]
    works: int
    applied: int
    progressing: int
    degraded: int


@dataclass(frozen=True)
class GroupRow:
    index: int
    name: str
    cells: tuple[tuple[str, str], ...]  # (cluster, state)


@dataclass(frozen=True)
class PlacementRow:
    title: str  # "placement <name> (<strategy>)" or "<namespace>/<name>"
    detail: str
    groups: tuple[GroupRow, ...]


@dataclass(frozen=True)
class RolloutRow:
    namespace: str
    name: str
    conditions: tuple[tuple[str, str, str], ...]  # (type, status, reason)
    summary: tuple[tuple[str, int], ...]
    placements: tuple[PlacementRow, ...]


@dataclass(frozen=True)
class AddonPlacementRow:
    title: str  # "placement <namespace>/<name> (<strategy>)" or "default configurations"
    counts: tuple[tuple[str, int], ...]  # selected, configured, then each state of STATES
    notes: tuple[str, ...]  # held, incomplete decisions, maxFailures breached, ...
    condition: str  # the installProgressions entry's Progressing condition, "" when there is none
    groups: tuple[GroupRow, ...]  # cells (cluster, state[: reason])


@dataclass(frozen=True)
class AddonRow:
    name: str
    detail: str
    placements: tuple[AddonPlacementRow, ...]


@dataclass(frozen=True)
class AddonPart:
    """The add-on part of a snapshot, and when it must be computed again even if nothing changed."""

    rows: tuple[AddonRow, ...] = ()
    notes: tuple[str, ...] = ()
    recheck_after: float | None = None


@dataclass(frozen=True)
class Snapshot:
    clusters: tuple[ClusterRow, ...] = ()
    rollouts: tuple[RolloutRow, ...] = ()
    placements: tuple[PlacementRow, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    addons: tuple[AddonRow, ...] = ()

    @property
    def available(self) -> int:
        return sum(1 for c in self.clusters if c.available == "True")


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return find_condition(mapping_at(obj, "status").get("conditions"), type_)


def _is_true_now(obj: Mapping[str, Any], type_: str) -> bool:
    cond = _condition(obj, type_)
    generation = (obj.get("metadata") or {}).get("generation") or 1
    return cond is not None and cond.get("status") == "True" and cond.get("observedGeneration", generation) == generation


def natural_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key that puts cluster2 before cluster10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part)


def cluster_row(cluster: JSON, works: Sequence[JSON]) -> ClusterRow:
    """One cluster's row: its availability, taints and the state of ``works`` (its ManifestWorks)."""
    name = str((cluster.get("metadata") or {}).get("name") or "")
    cond = _condition(cluster, constants.CONDITION_MANAGED_CLUSTER_AVAILABLE)
    taints = tuple(
        str(t.get("key", "")).removeprefix("cluster.open-cluster-management.io/")
        for t in (cluster.get("spec") or {}).get("taints") or []
    )
    return ClusterRow(
        name=name,
        available=str(cond.get("status")) if cond else "-",
        taints=taints,
        works=len(works),
        applied=sum(1 for w in works if _is_true_now(w, constants.WORK_CONDITION_APPLIED)),
        progressing=sum(1 for w in works if _is_true_now(w, constants.WORK_CONDITION_PROGRESSING)),
        degraded=sum(1 for w in works if _is_true_now(w, constants.WORK_CONDITION_DEGRADED)),
    )


def cluster_rows(clusters: Sequence[JSON], works: Sequence[JSON]) -> tuple[ClusterRow, ...]:
    by_cluster: dict[str, list[JSON]] = {}
    for work in works:
        by_cluster.setdefault(str((work.get("metadata") or {}).get("namespace") or ""), []).append(work)
    rows = [
        cluster_row(cluster, by_cluster.get(str((cluster.get("metadata") or {}).get("name") or ""), []))
        for cluster in clusters
    ]
    rows.sort(key=lambda r: natural_key(r.name))
    return tuple(rows)


def _decision_groups(pages: Sequence[JSON]) -> tuple[GroupRow, ...]:
    groups: dict[tuple[int, str], list[str]] = {}
    for page in pages:
        labels = (page.get("metadata") or {}).get("labels") or {}
        raw_index = str(labels.get(constants.LABEL_DECISION_GROUP_INDEX, "0"))
        index = int(raw_index) if raw_index.isdigit() else 0
        name = str(labels.get(constants.LABEL_DECISION_GROUP_NAME, ""))
        bucket = groups.setdefault((index, name), [])
        for decision in (page.get("status") or {}).get("decisions") or []:
            bucket.append(str(decision.get("clusterName", "")))
    return tuple(
        GroupRow(index, name, tuple((c, "selected") for c in sorted(clusters, key=natural_key)))
        for (index, name), clusters in sorted(groups.items())
    )


# Rollout states whose cells carry the reason (listed under the group).
_WITH_REASON = (WORKSET_FAILED_STATE, WORKSET_APPLY_FAILED_STATE, WORKSET_VALIDATING_STATE)


def _rollout_row(report: Report) -> RolloutRow:
    placements = []
    for placement in report.placements:
        detail = f"selected {placement.selected}"
        if placement.error:
            detail += f"; {placement.error}"
        if placement.breach:
            detail += "; maxFailures breached, rollout stopped"
        if placement.promotion:
            detail += f"; PROMOTION: {placement.promotion}"
        groups = tuple(
            GroupRow(
                group.index,
                group.name,
                tuple((line.cluster, line.state + (f": {line.reason}" if line.reason and line.state in _WITH_REASON else ""))
                      for line in group.clusters),
            )
            for group in placement.groups
        )
        placements.append(PlacementRow(f"placement {placement.name} ({placement.strategy})", detail, groups))
    return RolloutRow(
        namespace=report.namespace,
        name=report.name,
        conditions=tuple((t, s, r) for t, (s, r, _m) in sorted(report.conditions.items())),
        summary=tuple((k, report.summary.get(k, 0)) for k in ("total", "applied", "available", "progressing", "degraded")),
        placements=tuple(placements),
    )


def _addon_cells(group: GroupReport) -> tuple[tuple[str, str], ...]:
    return tuple(
        (line.cluster, line.state + (f": {line.reason}" if line.reason and line.state in (FAILED_STATE, TIMED_OUT_STATE) else ""))
        for line in group.clusters
    )


def _addon_counts(selected: int, configured: int, counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return (("selected", selected), ("configured", configured), *((state, counts.get(state, 0)) for state in STATES))


def _addon_placement_row(placement: PlacementReport) -> AddonPlacementRow:
    notes = []
    if placement.error is not None:
        notes.append(f"held, {placement.error_reason}: {placement.error}")
    if placement.unready is not None:
        notes.append(f"waiting for complete decisions: {placement.unready}")
    if placement.breach:
        notes.append("maxFailures breached: no new clusters are configured until failures recover")
    if placement.taken:
        notes.append(f"{placement.taken} selected cluster(s) configured by a later placement")
    if placement.promotion:
        notes.append(placement.promotion)
    condition = ""
    if placement.condition is not None:
        status, reason, message = placement.condition
        condition = f"{constants.ADDON_CONDITION_PROGRESSING}={status}({reason})" + (f": {message}" if message else "")
    strategy = f" ({placement.strategy})" if placement.strategy else ""
    return AddonPlacementRow(
        title=f"placement {placement.key}{strategy}",
        counts=_addon_counts(placement.selected, placement.configured, placement.counts()),
        notes=tuple(notes),
        condition=condition,
        groups=tuple(GroupRow(g.index, g.name, _addon_cells(g)) for g in placement.groups),
    )


def _addon_row(report: AddonReport) -> AddonRow:
    detail = f"install strategy {report.install_type}"
    if not report.managed:
        detail += "; self-managed (lifecycle annotation): the hub manager does not roll its configurations out"
    rows = [_addon_placement_row(p) for p in report.placements]
    if report.defaults is not None:
        group = report.defaults
        rows.append(
            AddonPlacementRow(
                title="default configurations",
                counts=_addon_counts(
                    len(group.clusters), group.configured, {state: group.count(state) for state in STATES}
                ),
                notes=(f"held: {report.defaults_held}",) if report.defaults_held else (),
                condition="",
                groups=(GroupRow(-1, "all", _addon_cells(group)),),
            )
        )
    return AddonRow(report.name, detail, tuple(rows))


def placement_index(
    placements: Sequence[JSON], decisions: Sequence[JSON]
) -> tuple[dict[tuple[str, str], JSON], dict[tuple[str, str], list[JSON]]]:
    """(namespace, name) -> the Placement, and -> its PlacementDecision pages."""
    pages: dict[tuple[str, str], list[JSON]] = {}
    for page in decisions:
        meta = page.get("metadata") or {}
        placement = ((meta.get("labels") or {}).get(constants.LABEL_PLACEMENT)) or ""
        pages.setdefault((str(meta.get("namespace") or ""), str(placement)), []).append(page)
    placement_by_key = {
        (str((p.get("metadata") or {}).get("namespace") or ""), str((p.get("metadata") or {}).get("name") or "")): p
        for p in placements
    }
    return placement_by_key, pages


def addon_part(
    *,
    cmas: Sequence[JSON],
    mcas: Sequence[JSON],
    placements: Sequence[JSON] = (),
    decisions: Sequence[JSON] = (),
    now: datetime,
) -> AddonPart:
    """Per ClusterManagementAddOn, its configuration rollout as ``ocm-rollout status`` reports it
    (pure; the same inputs as ``ocm_rollout.cli.commands.status``, from whatever the caller holds)."""
    if not cmas:
        return AddonPart()
    names = {str((c.get("metadata") or {}).get("name") or "") for c in cmas}
    by_addon: dict[str, dict[str, JSON]] = {name: {} for name in names}
    for mca in mcas:
        meta = mca.get("metadata") or {}
        mine = by_addon.get(str(meta.get("name") or ""))
        if mine is not None:
            mine[str(meta.get("namespace") or "")] = mca
    placement_by_key, pages = placement_index(placements, decisions)
    rows: list[AddonRow] = []
    notes: list[str] = []
    rechecks: list[float] = []
    for cma in sorted(cmas, key=lambda c: str((c.get("metadata") or {}).get("name") or "")):
        name = str((cma.get("metadata") or {}).get("name") or "")
        try:
            inputs: dict[tuple[str, str], PlacementInput] = {}
            for entry in placement_strategies(cma):
                key = placement_ref(entry)
                if key[0] and key[1]:
                    inputs[key] = PlacementInput(placement=placement_by_key.get(key), decisions=pages.get(key, []))
            report = build_addon_report(cma=cma, mcas=dict(sorted(by_addon[name].items())), placements=inputs, now=now)
        except Exception as exc:  # a half-written object must not take the view down
            notes.append(f"add-on {name}: cannot show the rollout ({exc})")
            continue
        rows.append(_addon_row(report))
        rechecks.extend(p.recheck_after for p in report.placements if p.recheck_after is not None)
    return AddonPart(tuple(rows), tuple(notes), min(rechecks) if rechecks else None)


def rollout_row(
    mwrs: JSON,
    owned: Sequence[JSON],
    placement_by_key: Mapping[tuple[str, str], JSON],
    pages: Mapping[tuple[str, str], list[JSON]],
    now: datetime,
) -> tuple[RolloutRow | None, str | None, float | None]:
    """One ManifestWorkReplicaSet's row from its works (``owned``), or a note saying why it cannot
    be shown; and in how many seconds its timing (minSuccessTime, progressDeadline) asks for a new
    look (None: not before something changes)."""
    meta = mwrs.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    refs = [str(r.get("name") or "") for r in (mwrs.get("spec") or {}).get("placementRefs") or [] if isinstance(r, Mapping)]
    try:
        report = build_report(
            mwrs=mwrs,
            works=list(owned),
            placements={ref: placement_by_key.get((namespace, ref)) for ref in refs},
            decisions={ref: pages.get((namespace, ref), []) for ref in refs},
            now=now,
        )
    except Exception as exc:  # a half-written object must not take the view down
        return None, f"{namespace}/{name}: cannot show the rollout ({exc})", None
    rechecks = [p.recheck_after for p in report.placements if p.recheck_after is not None]
    return _rollout_row(report), None, (min(rechecks) if rechecks else None)


def placement_rows(
    placement_by_key: Mapping[tuple[str, str], JSON], pages: Mapping[tuple[str, str], list[JSON]]
) -> tuple[PlacementRow, ...]:
    """Per Placement, its selected count, PlacementSatisfied condition and decision groups."""
    rows = []
    for (namespace, name), placement in sorted(placement_by_key.items()):
        selected = (placement.get("status") or {}).get("numberOfSelectedClusters", 0)
        satisfied = _condition(placement, constants.CONDITION_PLACEMENT_SATISFIED)
        detail = f"selected {selected}"
        if satisfied is not None:
            detail += f", {constants.CONDITION_PLACEMENT_SATISFIED}={satisfied.get('status')} ({satisfied.get('reason')})"
        rows.append(PlacementRow(f"{namespace}/{name}", detail, _decision_groups(pages.get((namespace, name), []))))
    return tuple(rows)


def build_snapshot(
    *,
    clusters: Sequence[JSON],
    works: Sequence[JSON],
    placements: Sequence[JSON] = (),
    decisions: Sequence[JSON] = (),
    replica_sets: Sequence[JSON] = (),
    cmas: Sequence[JSON] = (),
    mcas: Sequence[JSON] = (),
    addons: AddonPart | None = None,
    now: datetime,
) -> Snapshot:
    """Condense the stored objects into what the view shows (pure). ``addons``: the add-on part
    when the caller already has it (else it is computed from ``cmas`` and ``mcas``)."""
    placement_by_key, pages = placement_index(placements, decisions)
    if addons is None:
        addons = addon_part(cmas=cmas, mcas=mcas, placements=placements, decisions=decisions, now=now)
    by_owner: dict[str, list[JSON]] = {}
    for work in works:
        label = ((work.get("metadata") or {}).get("labels") or {}).get(constants.LABEL_MANIFESTWORK_REPLICASET)
        if label:
            by_owner.setdefault(str(label), []).append(work)
    rollouts = []
    notes = []
    for mwrs in sorted(replica_sets, key=key_of):
        namespace, name = key_of(mwrs)
        row, note, _recheck = rollout_row(
            mwrs, by_owner.get(owner_for(namespace, name).label_value, []), placement_by_key, pages, now
        )
        if row is not None:
            rollouts.append(row)
        if note is not None:
            notes.append(note)
    return Snapshot(
        clusters=cluster_rows(clusters, works),
        rollouts=tuple(rollouts),
        placements=placement_rows(placement_by_key, pages),
        notes=(*notes, *addons.notes),
        addons=addons.rows,
    )


# --- text ----------------------------------------------------------------------------------------

STATE_MARKS = {
    "succeeded": "+", "failed": "!", "timed out": "!", "apply failed": "x", "progressing": "~", "waiting": ".",
    "selected": " ",
}


def _group_title(group: GroupRow) -> str:
    if group.index < 0:
        return f"group {group.name}"
    return f"group {group.index}" + (f" {group.name}" if group.name else "")


def _addon_lines(addon: AddonRow, width: int, limit: int | None = None) -> list[str]:
    lines = [f"  {addon.name}  {addon.detail}"]
    for placement in addon.placements:
        counts = dict(placement.counts)
        states = "".join(f", {state} {counts[state]}" for state in STATES if counts.get(state))
        lines.append(
            f"    {placement.title}: selected {counts.get('selected', 0)}, configured {counts.get('configured', 0)}"
            + (f";{states[1:]}" if states else "")
        )
        # The condition message and the notes are wrapped, not cut: their ends count (failed, timeout).
        for text in (placement.condition, *placement.notes):
            if text:
                lines.extend(textwrap.wrap(text, width, initial_indent="      ", subsequent_indent="        "))
        for group in placement.groups:
            lines.append(f"      {_group_title(group)}:")
            lines.extend(_group_cells(group.cells, width, "        ", limit))
            bad = [(cluster, state) for cluster, state in group.cells if ":" in state]
            lines.extend(f"        {cluster} {state}" for cluster, state in bad[:SHOWN_ADDON_FAILURES])
            if len(bad) > SHOWN_ADDON_FAILURES:
                lines.append(f"        ... and {len(bad) - SHOWN_ADDON_FAILURES} more failed or timed out")
    return lines


def _cells(cells: Sequence[tuple[str, str]], width: int, indent: str) -> list[str]:
    lines: list[str] = []
    current = indent
    for cluster, state in cells:
        mark = STATE_MARKS.get(state.split(":", 1)[0], "?")
        text = f"{mark}{cluster}" if mark.strip() else cluster
        if len(current) + len(text) + 1 > width and current.strip():
            lines.append(current.rstrip())
            current = indent
        current += text + " "
    if current.strip():
        lines.append(current.rstrip())
    return lines


def _needs_attention(row: ClusterRow) -> bool:
    return row.available != "True" or bool(row.taints) or row.progressing > 0 or row.degraded > 0


def shown_clusters(rows: Sequence[ClusterRow], limit: int | None) -> tuple[list[ClusterRow], int]:
    """The cluster rows a screen shows: all of them, or at most ``limit``, the ones that need
    attention (not Available, tainted, with progressing or degraded works) first, each part in
    name order; and how many were left out."""
    if limit is None or len(rows) <= limit:
        return list(rows), 0
    chosen = [r for r in rows if _needs_attention(r)][:limit]
    if len(chosen) < limit:
        chosen.extend(r for r in rows if not _needs_attention(r))
        chosen = chosen[:limit]
    order = {id(r): i for i, r in enumerate(rows)}
    chosen.sort(key=lambda r: (not _needs_attention(r), order[id(r)]))
    return chosen, len(rows) - len(chosen)


def _group_cells(cells: Sequence[tuple[str, str]], width: int, indent: str, limit: int | None) -> list[str]:
    """A decision group's cells, or for a group of more than ``limit`` clusters a count per state
    and the clusters in any state but succeeded, waiting and selected (at most ``limit``)."""
    if limit is None or len(cells) <= limit:
        return _cells(cells, width, indent)
    counts: dict[str, int] = {}
    for _cluster, state in cells:
        key = state.split(":", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    lines = [indent + ", ".join(f"{state} {count}" for state, count in counts.items())]
    notable = [(c, s) for c, s in cells if s.split(":", 1)[0] not in ("succeeded", "waiting", "selected")]
    if notable:
        lines.extend(_cells(notable[:limit], width, " " * len(indent)))
    if len(notable) > limit:
        lines.append(f"{indent}... and {len(notable) - limit} more")
    return lines


def render(
    snapshot: Snapshot, *, header: Sequence[str] = (), width: int = 100, limit: int | None = None
) -> str:
    """The whole screen for ``snapshot``. ``limit``: at most that many cluster rows, and decision
    groups of more clusters summarised (``shown_clusters``, ``_group_cells``): for fleets larger
    than a screen."""
    lines = list(header)
    lines.append(f"CLUSTERS  {snapshot.available}/{len(snapshot.clusters)} available")
    lines.append(f"  {'NAME':<14}{'AVAILABLE':<11}{'WORKS':>6}{'APPLIED':>9}{'PROGRESSING':>13}{'DEGRADED':>10}  TAINTS")
    shown, hidden = shown_clusters(snapshot.clusters, limit)
    for row in shown:
        lines.append(
            f"  {row.name:<14}{row.available:<11}{row.works:>6}{row.applied:>9}{row.progressing:>13}{row.degraded:>10}"
            f"  {','.join(row.taints)}".rstrip()
        )
    if hidden:
        lines.append(f"  ... and {hidden} more clusters")
    if snapshot.rollouts:
        lines.append("")
        lines.append(
            "ROLLOUTS (ManifestWorkReplicaSets)   + succeeded  ~ progressing  ! failed  x apply failed  . waiting"
        )
    for rollout in snapshot.rollouts:
        conds = "  ".join(f"{t}={s}" + (f"({r})" if r else "") for t, s, r in rollout.conditions)
        lines.append(f"  {rollout.namespace}/{rollout.name}  {conds}")
        if rollout.summary:
            lines.append("    summary: " + ", ".join(f"{k} {v}" for k, v in rollout.summary))
        for placement in rollout.placements:
            lines.append(f"    {placement.title}: {placement.detail}")
            for group in placement.groups:
                title = f"group {group.index}" + (f" {group.name}" if group.name else "")
                lines.append(f"      {title}:")
                lines.extend(_group_cells(group.cells, width, "        ", limit))
                failed = [(cluster, state) for cluster, state in group.cells if ":" in state]
                for cluster, state in failed if limit is None else failed[:limit]:
                    lines.append(f"        {cluster} {state}"[:width])
    if snapshot.addons:
        lines.append("")
        lines.append("ADD-ONS (ClusterManagementAddOns)   + succeeded  ~ progressing  ! failed or timed out  . waiting")
    for addon in snapshot.addons:
        lines.extend(_addon_lines(addon, width, limit))
    if snapshot.placements:
        lines.append("")
        lines.append("PLACEMENTS")
    for placement in snapshot.placements:
        lines.append(f"  {placement.title}: {placement.detail}")
        for group in placement.groups:
            title = f"group {group.index}" + (f" {group.name}" if group.name else "")
            lines.extend(_group_cells(group.cells, width, f"    {title}: ", limit))
    for note in snapshot.notes:
        lines.append(f"note: {note}")
    return "\n".join(line[:width] for line in lines)


def changes(old: Snapshot | None, new: Snapshot) -> list[str]:
    """One line per difference between two snapshots (for a log when stdout is not a TTY)."""
    out: list[str] = []
    before = {c.name: c for c in (old.clusters if old else ())}
    for row in new.clusters:
        prev = before.pop(row.name, None)
        if prev is None:
            out.append(f"cluster {row.name}: registered (Available={row.available})")
            continue
        if prev.available != row.available:
            out.append(f"cluster {row.name}: Available {prev.available} -> {row.available}")
        if prev.taints != row.taints:
            out.append(f"cluster {row.name}: taints [{', '.join(row.taints)}]")
        if (prev.works, prev.applied, prev.progressing, prev.degraded) != (
            row.works, row.applied, row.progressing, row.degraded
        ):
            out.append(
                f"cluster {row.name}: works {row.works} applied {row.applied} "
                f"progressing {row.progressing} degraded {row.degraded}"
            )
    for name in before:
        out.append(f"cluster {name}: gone")
    old_rollouts = {(r.namespace, r.name): r for r in (old.rollouts if old else ())}
    for rollout in new.rollouts:
        prev_rollout = old_rollouts.pop((rollout.namespace, rollout.name), None)
        title = f"rollout {rollout.namespace}/{rollout.name}"
        if prev_rollout is None or prev_rollout.conditions != rollout.conditions:
            out.append(f"{title}: " + " ".join(f"{t}={s}({r})" for t, s, r in rollout.conditions))
        prev_cells = {
            (p.title, c): s
            for p in (prev_rollout.placements if prev_rollout else ())
            for g in p.groups
            for c, s in g.cells
        }
        for placement in rollout.placements:
            for group in placement.groups:
                for cluster, state in group.cells:
                    if prev_cells.get((placement.title, cluster)) != state:
                        out.append(f"{title} {placement.title} group {group.index}: {cluster} {state}")
    for namespace, name in old_rollouts:
        out.append(f"rollout {namespace}/{name}: gone")
    out.extend(_addon_changes(old.addons if old else (), new.addons))
    old_placements = {p.title: p for p in (old.placements if old else ())}
    for placement in new.placements:
        prev_placement = old_placements.pop(placement.title, None)
        if prev_placement is None or prev_placement.groups != placement.groups or prev_placement.detail != placement.detail:
            groups = "; ".join(
                f"group {g.index}{' ' + g.name if g.name else ''}: {' '.join(c for c, _ in g.cells)}" for g in placement.groups
            )
            out.append(f"placement {placement.title}: {placement.detail}" + (f" [{groups}]" if groups else ""))
    for title in old_placements:
        out.append(f"placement {title}: gone")
    return out


def _addon_changes(old: Sequence[AddonRow], new: Sequence[AddonRow]) -> list[str]:
    """One line per add-on whose install strategy changed, per installProgressions condition or
    placement note that changed, and per cluster whose ManagedClusterAddOn changed state."""
    out: list[str] = []
    before = {a.name: a for a in old}
    for addon in new:
        prev = before.pop(addon.name, None)
        title = f"addon {addon.name}"
        if prev is None or prev.detail != addon.detail:
            out.append(f"{title}: {addon.detail}")
        prev_placements = {p.title: p for p in (prev.placements if prev else ())}
        for placement in addon.placements:
            was = prev_placements.pop(placement.title, None)
            where = f"{title} {placement.title}"
            if placement.condition and (was is None or was.condition != placement.condition):
                out.append(f"{where}: {placement.condition}")
            out.extend(f"{where}: {note}" for note in placement.notes if was is None or note not in was.notes)
            prev_cells = {c: state for g in (was.groups if was else ()) for c, state in g.cells}
            for group in placement.groups:
                for cluster, state in group.cells:
                    if prev_cells.pop(cluster, None) != state:
                        out.append(f"{where} {_group_title(group)}: {cluster} {state}")
            out.extend(f"{where}: {cluster} no longer configured" for cluster in prev_cells)
        out.extend(f"{title} {gone}: gone" for gone in prev_placements)
    out.extend(f"addon {name}: gone" for name in before)
    return out


# --- fitting a terminal -------------------------------------------------------------------------


def fit_to_height(lines: list[str], rows: int) -> list[str]:
    """The lines that fit a terminal of ``rows`` rows, keeping the top (the banner with the
    kubeconfig comes first) and saying how much was cut, so nothing scrolls the banner away."""
    room = max(rows - 1, 2)  # the last row stays free: writing a newline there would scroll
    if len(lines) <= room:
        return lines
    hidden = len(lines) - (room - 1)
    return [*lines[: room - 1], f"... {hidden} more lines: enlarge the terminal, or run `ocm-rollout status`"]
