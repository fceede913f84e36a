"""The refreshing live view of ``ocm-rollout up``: a screen redrawn in place on a terminal, or one
log line per change otherwise.

It watches what it shows (ManagedClusters, ManifestWorks, Placements, PlacementDecisions,
ManifestWorkReplicaSets, ClusterManagementAddOns, ManagedClusterAddOns) through its own caches
and builds each ``sim_view.Snapshot`` incrementally (``ocm_rollout.cli.view.view_state``):

- a cluster's row is computed again only after that cluster or one of its works changed;
- a ManifestWorkReplicaSet's rollout row only after one of its works, itself, or a Placement or
  decision page of its namespace changed, or when its timing (minSuccessTime, progressDeadline)
  asks for a new look; the placement rows and the add-on part likewise;
- each of these parts is computed at most as often as its ``Budget`` allows (its last cost over a
  small share of the time), so the view stays a small share of the process at any fleet size;
- nothing is drawn when nothing changed, and a terminal shows at most a screenful of clusters
  (those needing attention first) and summarises decision groups larger than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TextIO

from ocm_rollout.cli.view import sim_view
from ocm_rollout.cli.view.sim_view import (
    ClusterRow,
    PlacementRow,
    RolloutRow,
    Snapshot,
    changes,
    cluster_row,
    fit_to_height,
    natural_key,
    placement_rows,
    render,
    rollout_row,
)
from ocm_rollout.cli.view.view_state import Budget, Dirty, WorkIndex
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
)
from ocm_rollout.client.watchcache import Key, WatchCache, key_of
from ocm_rollout.controllers.workset.workbuild import owner_for

REFRESH_SECONDS = 0.25
# The add-on part is computed again at most this often (it plans every add-on's rollout over all
# its ManagedClusterAddOns: about 10 ms per add-on at 2,000 clusters).
ADDON_REFRESH_SECONDS = 1.0
# A rollout row or the placement rows: at most this often, and at most this share of the time.
PART_REFRESH_SECONDS = 0.25
PART_SHARE = 0.05
HOME = "\x1b[H"
CLEAR_LINE = "\x1b[K"
CLEAR_BELOW = "\x1b[J"
ALTERNATE_SCREEN = "\x1b[?1049h"
MAIN_SCREEN = "\x1b[?1049l"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"


class LiveView:
    """See the module docstring. ``clusters``, ``works``, ``addon_managers`` and ``addons`` may be
    caches the caller runs; the view runs its own for every kind it is not given. ``monotonic``
    is the clock of the refresh budgets, ``clock`` the one of the rollouts' timing."""

    def __init__(
        self,
        kube: Kube,
        *,
        clusters: WatchCache | None = None,
        works: WatchCache | None = None,
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
        self.owned: list[WatchCache] = []
        self.clusters = clusters if clusters is not None else self._own(WatchCache(kube, MANAGED_CLUSTERS))
        self.works = works if works is not None else self._own(WatchCache(kube, MANIFEST_WORKS))
        self.placements = self._own(WatchCache(kube, PLACEMENTS))
        self.decisions = self._own(WatchCache(kube, PLACEMENT_DECISIONS))
        self.replica_sets = self._own(WatchCache(kube, MANIFEST_WORK_REPLICA_SETS))
        self.addon_managers = addon_managers if addon_managers is not None else self._own(WatchCache(kube, CLUSTER_MANAGEMENT_ADDONS))
        self.addons = addons if addons is not None else self._own(WatchCache(kube, MANAGED_CLUSTER_ADDONS))
        self.clusters.callbacks.append(self._cluster_changed)
        self.works.callbacks.append(self._work_changed)
        self.replica_sets.callbacks.append(self._replica_set_changed)
        for cache in (self.placements, self.decisions):
            cache.callbacks.append(self._placement_changed)
        for cache in (self.addon_managers, self.addons):
            cache.callbacks.append(self._addon_changed)
        self.header = list(header)
        self.clock = clock
        self.monotonic = monotonic
        self.last: Snapshot | None = None
        self.index = WorkIndex()
        self.dirty = Dirty()
        self._full = True  # the first snapshot reads every cache (objects may predate the callbacks)
        self._rows: dict[str, ClusterRow] = {}
        self._order: list[str] | None = None
        self._cluster_tuple: tuple[ClusterRow, ...] = ()
        self._rollouts: dict[Key, tuple[RolloutRow | None, str | None]] = {}
        self._rollout_budgets: dict[Key, Budget] = {}
        self._rollout_due: dict[Key, float] = {}
        self._rollout_rows: tuple[RolloutRow, ...] = ()
        self._rollout_notes: tuple[str, ...] = ()
        self._placement_rows: tuple[PlacementRow, ...] = ()
        self._placement_budget = Budget(monotonic, min_interval=PART_REFRESH_SECONDS, share=PART_SHARE)
        self._addon_part: sim_view.AddonPart | None = None
        self._addons_computed_at = float("-inf")
        self._addons_due: float | None = None
        self._snapshot: Snapshot | None = None

    def _own(self, cache: WatchCache) -> WatchCache:
        self.owned.append(cache)
        return cache

    # -- what changed ------------------------------------------------------------------------------
    def _cluster_changed(self, _event_type: str, obj: JSON, _previous: JSON | None) -> None:
        self.dirty.clusters.add(str((obj.get("metadata") or {}).get("name") or ""))
        self.dirty.addons = True

    def _work_changed(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        namespace, owners = self.index.update(event_type, obj, previous)
        self.dirty.clusters.add(namespace)
        self.dirty.owners.update(owners)

    def _replica_set_changed(self, _event_type: str, obj: JSON, _previous: JSON | None) -> None:
        meta = obj.get("metadata") or {}
        self.dirty.rollouts.add((str(meta.get("namespace") or ""), str(meta.get("name") or "")))

    def _placement_changed(self, _event_type: str, obj: JSON, _previous: JSON | None) -> None:
        self.dirty.namespaces.add(str((obj.get("metadata") or {}).get("namespace") or ""))
        self.dirty.placements = True
        self.dirty.addons = True

    def _addon_changed(self, _event_type: str, _obj: JSON, _previous: JSON | None) -> None:
        self.dirty.addons = True

    # -- the parts -------------------------------------------------------------------------------
    def _cluster_part(self) -> tuple[ClusterRow, ...]:
        if self._full:
            self.index = WorkIndex()
            for work in self.works.items():
                self.index.update("", work, None)
            names = {str((c.get("metadata") or {}).get("name") or "") for c in self.clusters.items()}
            self.dirty.clusters = names | set(self._rows)
        if not self.dirty.clusters:
            return self._cluster_tuple
        changed = False
        for name in self.dirty.clusters:
            cluster = self.clusters.get(name)
            if cluster is None:
                if self._rows.pop(name, None) is not None:
                    self._order = None
                    changed = True
                continue
            row = cluster_row(cluster, self.index.in_namespace(name))
            old = self._rows.get(name)
            if old is None:
                self._order = None
            if row != old:
                self._rows[name] = row
                changed = True
        self.dirty.clusters = set()
        if self._order is None:
            self._order = sorted(self._rows, key=natural_key)
            changed = True
        if changed:
            self._cluster_tuple = tuple(self._rows[name] for name in self._order)
        return self._cluster_tuple

    def _placement_index(self) -> tuple[dict[Key, JSON], dict[Key, list[JSON]]]:
        return sim_view.placement_index(self.placements.items(), self.decisions.items())

    def _rollout_part(self, now: datetime, force: bool) -> tuple[tuple[RolloutRow, ...], tuple[str, ...]]:
        tick = self.monotonic()
        present = {key_of(m): m for m in self.replica_sets.items()}
        owners = {key: owner_for(*key).label_value for key in present}
        gone = [k for k in self._rollouts if k not in present]
        for key in gone:
            del self._rollouts[key]
            self._rollout_budgets.pop(key, None)
            self._rollout_due.pop(key, None)
        todo: list[Key] = []
        for key, _mwrs in sorted(present.items()):
            wanted = (
                self._full
                or key not in self._rollouts
                or key in self.dirty.rollouts
                or key[0] in self.dirty.namespaces
                or owners[key] in self.dirty.owners
                or (key in self._rollout_due and tick >= self._rollout_due[key])
            )
            budget = self._rollout_budgets.setdefault(
                key, Budget(self.monotonic, min_interval=PART_REFRESH_SECONDS, share=PART_SHARE)
            )
            if wanted and (force or budget.due()):
                todo.append(key)
        if todo:
            placement_by_key, pages = self._placement_index()
            for key in todo:
                started = self.monotonic()
                row, note, recheck = rollout_row(
                    present[key], self.index.owned_by(owners[key]), placement_by_key, pages, now
                )
                self._rollout_budgets[key].spend(started)
                self._rollouts[key] = (row, note)
                if recheck is None:
                    self._rollout_due.pop(key, None)
                else:
                    self._rollout_due[key] = tick + recheck
                self.dirty.rollouts.discard(key)
                self.dirty.owners.discard(owners[key])
        # What is left dirty waits for its budget; namespaces are done once every rollout in them is.
        waiting_namespaces = {k[0] for k in present if k not in todo and k[0] in self.dirty.namespaces}
        self.dirty.namespaces &= waiting_namespaces
        self.dirty.owners &= set(owners.values())
        if todo or gone:
            ordered = [self._rollouts[k] for k in sorted(self._rollouts)]
            self._rollout_rows = tuple(row for row, _note in ordered if row is not None)
            self._rollout_notes = tuple(note for _row, note in ordered if note is not None)
        return self._rollout_rows, self._rollout_notes

    def _placement_part(self, force: bool) -> tuple[PlacementRow, ...]:
        if (self._full or self.dirty.placements) and (force or self._placement_budget.due()):
            started = self.monotonic()
            self._placement_rows = placement_rows(*self._placement_index())
            self._placement_budget.spend(started)
            self.dirty.placements = False
        return self._placement_rows

    def current_addons(self, now: datetime, *, force: bool = False) -> sim_view.AddonPart:
        """The add-on part: the last one, unless an input changed (and the last is at least
        ``ADDON_REFRESH_SECONDS`` old), its recheck time passed, or ``force``."""
        tick = self.monotonic()
        fresh = tick - self._addons_computed_at >= ADDON_REFRESH_SECONDS
        due = self._addons_due is not None and tick >= self._addons_due
        if self._addon_part is not None and not force and not due and not (self.dirty.addons and fresh):
            return self._addon_part
        self.dirty.addons = False
        self._addons_computed_at = tick
        part = sim_view.addon_part(
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
        """What the view shows now (``force``: every part whose inputs changed is computed again,
        whatever its budget). The same object as last time when nothing changed."""
        now = self.clock()
        clusters = self._cluster_part()
        rollouts, notes = self._rollout_part(now, force)
        placements = self._placement_part(force)
        addons = self.current_addons(now, force=force)
        self._full = False
        candidate = Snapshot(
            clusters=clusters,
            rollouts=rollouts,
            placements=placements,
            notes=(*notes, *addons.notes),
            addons=addons.rows,
        )
        if self._snapshot is not None and _same(self._snapshot, candidate):
            return self._snapshot
        self._snapshot = candidate
        return candidate

    # -- drawing ---------------------------------------------------------------------------------
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
            screen = render(
                current,
                header=[*self.header, f"updated {stamp}   (Ctrl-C to stop)", ""],
                width=size.columns,
                limit=max(size.lines // 3, 5),
            )
            lines = fit_to_height(screen.split("\n"), size.lines)
            # Overwrite in place (no flicker): home, each line cleared to its end, then below.
            self.out.write(HOME + "".join(line + CLEAR_LINE + "\n" for line in lines) + CLEAR_BELOW)
            self.out.flush()
        elif current is not self.last:
            for line in changes(self.last, current):
                self.log(line)
        self.last = current

    async def run(self, stop: asyncio.Event) -> None:
        watchers = [asyncio.create_task(informer.run(stop)) for informer in self.owned]
        if self.interactive:
            self.out.write(ALTERNATE_SCREEN + HIDE_CURSOR)
        drawn_second = ""
        try:
            while not stop.is_set():
                second = self.clock().strftime("%H:%M:%S")
                # A terminal is redrawn when something changed or its clock moved; a log only when
                # something changed (``draw`` compares snapshots).
                if self.interactive:
                    before = self._snapshot
                    self.snapshot()
                    if self._snapshot is not before or second != drawn_second:
                        self.draw()
                        drawn_second = second
                else:
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


def _same(old: Snapshot, new: Snapshot) -> bool:
    """Are two snapshots made of the same parts? (Identity first: unchanged parts are reused.)"""
    return (
        old.clusters is new.clusters
        and old.rollouts is new.rollouts
        and old.placements is new.placements
        and old.notes == new.notes
        and old.addons is new.addons
    )
