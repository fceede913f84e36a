"""The live view of ``ocm-rollout up``: what is applied where, per placement and decision group.

``build_snapshot`` (pure) condenses the stored objects: per cluster its availability, taints and
the state of its ManifestWorks; per ManifestWorkReplicaSet its conditions and, per placement and
decision group, the rollout state of every decided cluster (from
``controllers.workset.report``); per ClusterManagementAddOn, per placement and decision group,
the state of every decided cluster's ManagedClusterAddOn against the desired configurations and
the placement's ``installProgressions`` condition (from ``controllers.addon.report``, through
``addon_part``); per Placement its decision groups. ``render`` draws a snapshot as text for a
terminal; ``changes`` lists what differs between two snapshots, one line each, for a log when
stdout is not a terminal. ``LiveView`` refreshes either way until stopped; it computes the add-on
part again only after a ClusterManagementAddOn, ManagedClusterAddOn, Placement or
PlacementDecision changed (at most once per ``ADDON_REFRESH_SECONDS``) or when a rollout's
timing (minSuccessTime, progressDeadline) asks for a new look.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from api import constants
from controllers.addon.configs import placement_ref, placement_strategies
from controllers.addon.inputs import PlacementInput
from controllers.addon.report import (
    FAILED_STATE,
    STATES,
    TIMED_OUT_STATE,
    AddonReport,
    GroupReport,
    PlacementReport,
    build_addon_report,
)
from controllers.runtime.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORK_REPLICA_SETS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
)
from controllers.runtime.watchcache import WatchCache
from controllers.workset.report import Report, build_report
from controllers.workset.workbuild import owner_for

REFRESH_SECONDS = 0.25
# The add-on part of the snapshot is computed again at most this often (it plans every add-on's
# rollout over all its ManagedClusterAddOns: about 10 ms per add-on at 2,000 clusters).
ADDON_REFRESH_SECONDS = 1.0
# Failed or timed-out clusters whose reason the screen lists, per decision group of an add-on.
SHOWN_ADDON_FAILURES = 5
HOME = "\x1b[H"
CLEAR_LINE = "\x1b[K"
CLEAR_BELOW = "\x1b[J"
ALTERNATE_SCREEN = "\x1b[?1049h"
MAIN_SCREEN = "\x1b[?1049l"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"


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


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)}


def _is_true_now(obj: Mapping[str, Any], type_: str) -> bool:
    cond = _conditions(obj).get(type_)
    generation = (obj.get("metadata") or {}).get("generation") or 1
    return cond is not None and cond.get("status") == "True" and cond.get("observedGeneration", generation) == generation


def natural_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key that puts cluster2 before cluster10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part)


def cluster_rows(clusters: Sequence[JSON], works: Sequence[JSON]) -> tuple[ClusterRow, ...]:
    by_cluster: dict[str, list[JSON]] = {}
    for work in works:
        by_cluster.setdefault(str((work.get("metadata") or {}).get("namespace") or ""), []).append(work)
    rows = []
    for cluster in clusters:
        name = str((cluster.get("metadata") or {}).get("name") or "")
        cond = _conditions(cluster).get(constants.CONDITION_MANAGED_CLUSTER_AVAILABLE)
        taints = tuple(
            str(t.get("key", "")).removeprefix("cluster.open-cluster-management.io/")
            for t in (cluster.get("spec") or {}).get("taints") or []
        )
        mine = by_cluster.get(name, [])
        rows.append(
            ClusterRow(
                name=name,
                available=str(cond.get("status")) if cond else "-",
                taints=taints,
                works=len(mine),
                applied=sum(1 for w in mine if _is_true_now(w, constants.WORK_CONDITION_APPLIED)),
                progressing=sum(1 for w in mine if _is_true_now(w, constants.WORK_CONDITION_PROGRESSING)),
                degraded=sum(1 for w in mine if _is_true_now(w, constants.WORK_CONDITION_DEGRADED)),
            )
        )
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


def _rollout_row(report: Report) -> RolloutRow:
    placements = []
    for placement in report.placements:
        detail = f"selected {placement.selected}"
        if placement.error:
            detail += f"; {placement.error}"
        if placement.breach:
            detail += "; maxFailures breached, rollout stopped"
        groups = tuple(
            GroupRow(
                group.index,
                group.name,
                tuple((line.cluster, line.state + (f": {line.reason}" if line.reason and line.state == "failed" else ""))
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


def _placement_index(
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
    (pure; the same inputs as ``controllers.commands.status``, from whatever the caller holds)."""
    if not cmas:
        return AddonPart()
    names = {str((c.get("metadata") or {}).get("name") or "") for c in cmas}
    by_addon: dict[str, dict[str, JSON]] = {name: {} for name in names}
    for mca in mcas:
        meta = mca.get("metadata") or {}
        mine = by_addon.get(str(meta.get("name") or ""))
        if mine is not None:
            mine[str(meta.get("namespace") or "")] = mca
    placement_by_key, pages = _placement_index(placements, decisions)
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
    placement_by_key, pages = _placement_index(placements, decisions)
    if addons is None:
        addons = addon_part(cmas=cmas, mcas=mcas, placements=placements, decisions=decisions, now=now)
    rollouts = []
    notes = []
    for mwrs in sorted(replica_sets, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])):
        meta = mwrs.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        owner = owner_for(namespace, name)
        owned = [
            w for w in works if ((w.get("metadata") or {}).get("labels") or {}).get(constants.LABEL_MANIFESTWORK_REPLICASET)
            == owner.label_value
        ]
        refs = [str(r.get("name") or "") for r in (mwrs.get("spec") or {}).get("placementRefs") or [] if isinstance(r, Mapping)]
        try:
            report = build_report(
                mwrs=mwrs,
                works=owned,
                placements={ref: placement_by_key.get((namespace, ref)) for ref in refs},
                decisions={ref: pages.get((namespace, ref), []) for ref in refs},
                now=now,
            )
        except Exception as exc:  # a half-written object must not take the view down
            notes.append(f"{namespace}/{name}: cannot show the rollout ({exc})")
            continue
        rollouts.append(_rollout_row(report))
    placement_rows = []
    for (namespace, name), placement in sorted(placement_by_key.items()):
        selected = (placement.get("status") or {}).get("numberOfSelectedClusters", 0)
        satisfied = _conditions(placement).get(constants.CONDITION_PLACEMENT_SATISFIED)
        detail = f"selected {selected}"
        if satisfied is not None:
            detail += f", {constants.CONDITION_PLACEMENT_SATISFIED}={satisfied.get('status')} ({satisfied.get('reason')})"
        placement_rows.append(PlacementRow(f"{namespace}/{name}", detail, _decision_groups(pages.get((namespace, name), []))))
    return Snapshot(
        clusters=cluster_rows(clusters, works),
        rollouts=tuple(rollouts),
        placements=tuple(placement_rows),
        notes=(*notes, *addons.notes),
        addons=addons.rows,
    )


# --- text ----------------------------------------------------------------------------------------

STATE_MARKS = {"succeeded": "+", "failed": "!", "timed out": "!", "progressing": "~", "waiting": ".", "selected": " "}


def _group_title(group: GroupRow) -> str:
    if group.index < 0:
        return f"group {group.name}"
    return f"group {group.index}" + (f" {group.name}" if group.name else "")


def _addon_lines(addon: AddonRow, width: int) -> list[str]:
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
            lines.extend(_cells(group.cells, width, "        "))
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


def render(snapshot: Snapshot, *, header: Sequence[str] = (), width: int = 100) -> str:
    """The whole screen for ``snapshot``."""
    lines = list(header)
    lines.append(f"CLUSTERS  {snapshot.available}/{len(snapshot.clusters)} available")
    lines.append(f"  {'NAME':<14}{'AVAILABLE':<11}{'WORKS':>6}{'APPLIED':>9}{'PROGRESSING':>13}{'DEGRADED':>10}  TAINTS")
    for row in snapshot.clusters:
        lines.append(
            f"  {row.name:<14}{row.available:<11}{row.works:>6}{row.applied:>9}{row.progressing:>13}{row.degraded:>10}"
            f"  {','.join(row.taints)}".rstrip()
        )
    if snapshot.rollouts:
        lines.append("")
        lines.append("ROLLOUTS (ManifestWorkReplicaSets)   + succeeded  ~ progressing  ! failed  . waiting")
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
                lines.extend(_cells(group.cells, width, "        "))
                for cluster, state in group.cells:
                    if ":" in state:
                        lines.append(f"        {cluster} {state}"[:width])
    if snapshot.addons:
        lines.append("")
        lines.append("ADD-ONS (ClusterManagementAddOns)   + succeeded  ~ progressing  ! failed or timed out  . waiting")
    for addon in snapshot.addons:
        lines.extend(_addon_lines(addon, width))
    if snapshot.placements:
        lines.append("")
        lines.append("PLACEMENTS")
    for placement in snapshot.placements:
        lines.append(f"  {placement.title}: {placement.detail}")
        for group in placement.groups:
            title = f"group {group.index}" + (f" {group.name}" if group.name else "")
            lines.extend(_cells(group.cells, width, f"    {title}: "))
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


# --- the refreshing view -----------------------------------------------------------------------


def fit_to_height(lines: list[str], rows: int) -> list[str]:
    """The lines that fit a terminal of ``rows`` rows, keeping the top (the banner with the
    kubeconfig comes first) and saying how much was cut, so nothing scrolls the banner away."""
    room = max(rows - 1, 2)  # the last row stays free: writing a newline there would scroll
    if len(lines) <= room:
        return lines
    hidden = len(lines) - (room - 1)
    return [*lines[: room - 1], f"... {hidden} more lines: enlarge the terminal, or run `ocm-rollout status`"]


class LiveView:
    """Redraws the screen a few times a second on a terminal; logs one line per change otherwise.

    ``clusters``, ``works``, ``addon_managers`` (ClusterManagementAddOns) and ``addons``
    (ManagedClusterAddOns) are caches the caller runs (the simulation's); the view runs its own for
    Placements, PlacementDecisions, ManifestWorkReplicaSets, and for the add-on kinds it is not
    given. The add-on part is computed again only when one of its inputs changed (at most once per
    ``ADDON_REFRESH_SECONDS``) or when a rollout's timing is due; ``monotonic`` is that clock."""

    def __init__(
        self,
        kube: Kube,
        *,
        clusters: WatchCache,
        works: WatchCache,
        addon_managers: WatchCache | None = None,
        addons: WatchCache | None = None,
        header: Sequence[str] = (),
        out: TextIO | None = None,
        interactive: bool | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out or sys.stdout
        self.interactive = self.out.isatty() if interactive is None else interactive
        self.clusters = clusters
        self.works = works
        self.placements = WatchCache(kube, PLACEMENTS, on_change=self._addon_input_changed)
        self.decisions = WatchCache(kube, PLACEMENT_DECISIONS, on_change=self._addon_input_changed)
        self.replica_sets = WatchCache(kube, MANIFEST_WORK_REPLICA_SETS)
        self.owned = [self.placements, self.decisions, self.replica_sets]
        if addon_managers is None:
            addon_managers = WatchCache(kube, CLUSTER_MANAGEMENT_ADDONS)
            self.owned.append(addon_managers)
        if addons is None:
            addons = WatchCache(kube, MANAGED_CLUSTER_ADDONS)
            self.owned.append(addons)
        self.addon_managers = addon_managers
        self.addons = addons
        for cache in (addon_managers, addons):
            cache.callbacks.append(self._addon_input_changed)
        self.header = list(header)
        self.clock = clock
        self.monotonic = monotonic
        self.last: Snapshot | None = None
        self._addon_part: AddonPart | None = None
        self._addons_changed = True
        self._addons_computed_at = 0.0
        self._addons_due: float | None = None

    def _addon_input_changed(self, _event_type: str, _obj: JSON, _previous: JSON | None) -> None:
        self._addons_changed = True

    def current_addons(self, now: datetime, *, force: bool = False) -> AddonPart:
        """The add-on part: the last one, unless an input changed (and the last is at least
        ``ADDON_REFRESH_SECONDS`` old), its recheck time passed, or ``force``."""
        tick = self.monotonic()
        fresh = tick - self._addons_computed_at >= ADDON_REFRESH_SECONDS
        due = self._addons_due is not None and tick >= self._addons_due
        if self._addon_part is not None and not force and not due and not (self._addons_changed and fresh):
            return self._addon_part
        self._addons_changed = False
        self._addons_computed_at = tick
        part = addon_part(
            cmas=self.addon_managers.items(),
            mcas=self.addons.items(),
            placements=self.placements.items(),
            decisions=self.decisions.items(),
            now=now,
        )
        self._addon_part = part
        recheck = part.recheck_after
        self._addons_due = None if recheck is None else tick + max(recheck, ADDON_REFRESH_SECONDS)
        return part

    def snapshot(self, *, force: bool = False) -> Snapshot:
        """What the view shows now (``force``: the add-on part computed again whatever changed)."""
        now = self.clock()
        return build_snapshot(
            clusters=self.clusters.items(),
            works=self.works.items(),
            placements=self.placements.items(),
            decisions=self.decisions.items(),
            replica_sets=self.replica_sets.items(),
            addons=self.current_addons(now, force=force),
            now=now,
        )

    def log(self, line: str) -> None:
        """A line for the log (non-interactive mode only; the screen shows the state instead)."""
        if not self.interactive:
            stamp = self.clock().strftime("%H:%M:%S")
            print(f"{stamp} {line}", file=self.out, flush=True)

    def draw(self, *, force: bool = False) -> None:
        current = self.snapshot(force=force)
        if self.interactive:
            size = shutil.get_terminal_size((100, 40))
            stamp = self.clock().strftime("%H:%M:%S")
            screen = render(current, header=[*self.header, f"updated {stamp}   (Ctrl-C to stop)", ""], width=size.columns)
            lines = fit_to_height(screen.split("\n"), size.lines)
            # Overwrite in place (no flicker): home, each line cleared to its end, then below.
            self.out.write(HOME + "".join(line + CLEAR_LINE + "\n" for line in lines) + CLEAR_BELOW)
            self.out.flush()
        else:
            for line in changes(self.last, current):
                self.log(line)
        self.last = current

    async def run(self, stop: asyncio.Event) -> None:
        watchers = [asyncio.create_task(informer.run(stop)) for informer in self.owned]
        if self.interactive:
            self.out.write(ALTERNATE_SCREEN + HIDE_CURSOR)
        try:
            while not stop.is_set():
                self.draw()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=REFRESH_SECONDS)
            if not self.interactive:
                self.draw(force=True)
        finally:
            if self.interactive:
                self.out.write(SHOW_CURSOR + MAIN_SCREEN)
                self.out.flush()
            await asyncio.gather(*watchers, return_exceptions=True)
