"""The JSON of each dashboard page, computed from the ``Store`` and kept until what it reads
changes.

A rollout's core (its report: every cluster's state) is the costly part: it is kept per rollout
with the generations of what it reads (the owner, its works, its namespace's placements and
decision pages, or an add-on's MCAs and placements) and computed again only when one moved, or
after ``MAX_AGE`` seconds (its timing, minSuccessTime and progressDeadline, moves with the
clock). The list is the rows of every rollout's core; a rollout's page adds what is cheap to
read: its actions, events and history. A placement's page (a scheduling pass over the fleet) is
kept likewise, with the generations of the clusters, sets, bindings, scores and decisions.

What a page reads is taken from the caches on the event loop (lists of the cached objects, which
the watches replace and never change); the computing runs in a worker thread, so the server keeps
answering and streaming while a large page is computed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.cli.dashboard import actions, history_view, rollouts_view
from ocm_rollout.cli.dashboard.store import Store
from ocm_rollout.cli.view.sim_view import natural_key
from ocm_rollout.controllers.addon.configs import install_type
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.wire import JSON, meta
from ocm_rollout.controllers.workset.revisions import owned_by
from ocm_rollout.controllers.workset.workbuild import belongs_to, owner_for

MAX_AGE = 2.0
# Pages kept at most (the rollouts and placements of a hub, and their expanded variants); past
# it, the older half is forgotten.
MAX_KEPT = 1000
Clock = Callable[[], datetime]


@dataclass
class _Kept:
    generations: tuple[int, ...]
    at: float
    value: JSON


@dataclass
class Pages:
    store: Store
    read_only: bool = False
    clock: Clock = field(default=lambda: datetime.now(UTC))
    monotonic: Callable[[], float] = time.monotonic
    _kept: dict[tuple[Any, ...], _Kept] = field(default_factory=dict)

    # -- the rollouts --------------------------------------------------------------------------
    async def _memo(self, key: tuple[Any, ...], parts: list[object], compute: Callable[[], JSON]) -> JSON:
        """The kept value of ``key`` while the generations of ``parts`` stand still (and for at
        most ``MAX_AGE`` seconds), else ``compute()`` run in a worker thread: it must only read
        what was taken from the caches before."""
        generations = self.store.generations.of(parts)
        kept = self._kept.get(key)
        now = self.monotonic()
        if kept is not None and kept.generations == generations and now - kept.at < MAX_AGE:
            return kept.value
        value = await asyncio.to_thread(compute)
        if len(self._kept) >= MAX_KEPT:
            for old in sorted(self._kept, key=lambda k: self._kept[k].at)[: MAX_KEPT // 2]:
                del self._kept[old]
        self._kept[key] = _Kept(generations, now, value)
        return value

    def _mwrs_inputs(self, mwrs: JSON) -> tuple[list[JSON], dict[str, JSON | None], dict[str, list[JSON]]]:
        found = meta(mwrs)
        namespace, name = str(found.get("namespace") or ""), str(found.get("name") or "")
        owner = owner_for(namespace, name)
        works = [w for w in self.store.works.owned_by(owner.label_value) if belongs_to(w, owner)]
        placements: dict[str, JSON | None] = {}
        decisions: dict[str, list[JSON]] = {}
        for ref in (mwrs.get("spec") or {}).get("placementRefs") or []:
            ref_name = str((ref or {}).get("name") or "")
            placements[ref_name] = self.store.get("placements", ref_name, namespace)
            decisions[ref_name] = self.store.decisions_of(namespace, ref_name)
        return works, placements, decisions

    def _decisions_by_ref(self, mwrs: JSON) -> dict[str, list[JSON]]:
        """The decision pages of each placementRef (no works read: the actions need only these)."""
        namespace = str(meta(mwrs).get("namespace") or "")
        names = [str((r or {}).get("name") or "") for r in (mwrs.get("spec") or {}).get("placementRefs") or []]
        return {name: self.store.decisions_of(namespace, name) for name in names}

    async def mwrs_core(self, mwrs: JSON, expand: rollouts_view.Expand = ()) -> JSON:
        found = meta(mwrs)
        namespace, name = str(found.get("namespace") or ""), str(found.get("name") or "")
        owner = owner_for(namespace, name)
        parts: list[object] = [
            ("replicaset", namespace, name), ("owner", owner.label_value),
            ("ns", "placements", namespace), ("ns", "decisions", namespace),
        ]

        works, placements, decisions = self._mwrs_inputs(mwrs)

        def compute() -> JSON:
            return rollouts_view.mwrs_rollout(
                mwrs=mwrs, works=works, placements=placements, decisions=decisions, now=self.clock(), expand=expand,
                forms=self.store.forms,
            )

        return await self._memo(("mwrs", namespace, name, tuple(sorted(expand))), parts, compute)

    def _addon_placements(self, cma: JSON) -> dict[tuple[str, str], PlacementInput]:
        out: dict[tuple[str, str], PlacementInput] = {}
        for entry in ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or []:
            ns, ref = str((entry or {}).get("namespace") or ""), str((entry or {}).get("name") or "")
            if ns and ref:
                out[(ns, ref)] = PlacementInput(
                    placement=self.store.get("placements", ref, ns), decisions=self.store.decisions_of(ns, ref)
                )
        return out

    async def addon_core(self, cma: JSON, expand: rollouts_view.Expand = ()) -> JSON:
        name = str(meta(cma).get("name") or "")
        placements = self._addon_placements(cma)
        parts: list[object] = [("addon", name)]
        for ns, ref in placements:
            parts.append(("placement", ns, ref))

        mcas = dict(sorted(self.store.mcas_by_addon.get(name, {}).items()))

        def compute() -> JSON:
            return rollouts_view.addon_rollout(cma=cma, mcas=mcas, placements=placements, now=self.clock(), expand=expand)

        return await self._memo(("addon", name, tuple(sorted(expand))), parts, compute)

    def rolling_addons(self) -> list[JSON]:
        """The ClusterManagementAddOns with a configuration rollout: install strategy Placements."""
        return [c for c in self.store.items("addons") if install_type(c) == "Placements"]

    async def overview(self) -> JSON:
        rows = []
        for mwrs in self.store.items("replicasets"):
            rows.append(rollouts_view.list_row(await self.mwrs_core(mwrs)))
        for cma in self.rolling_addons():
            rows.append(rollouts_view.list_row(await self.addon_core(cma)))
        rows.sort(key=lambda r: (r["kind"], r["namespace"], natural_key(r["name"])))
        return {
            "rollouts": rows,
            "namespaces": sorted({r["namespace"] for r in rows if r["namespace"]}),
            "states": list(rollouts_view.ROLLOUT_STATES),
            **self._common(),
        }

    def _common(self) -> JSON:
        return {"readOnly": self.read_only, "unsynced": self.store.unsynced(), "generation": self.store.generations.total}

    async def mwrs_page(self, namespace: str, name: str, expand: rollouts_view.Expand = ()) -> JSON | None:
        mwrs = self.store.get("replicasets", name, namespace)
        if mwrs is None:
            return None
        out = dict(await self.mwrs_core(mwrs, expand))
        decisions = self._decisions_by_ref(mwrs)
        revisions = self.revisions_of(mwrs)
        out["history"] = history_view.history(mwrs, revisions)
        out["events"] = rollouts_view.events_json(self.store.events_of("ManifestWorkReplicaSet", namespace, name))
        out["actions"] = None if self.read_only else actions.mwrs_actions(mwrs, decisions, revisions)
        out.update(self._common())
        return out

    def revisions_of(self, mwrs: JSON) -> list[JSON]:
        found = meta(mwrs)
        namespace, uid = str(found.get("namespace") or ""), str(found.get("uid") or "")
        return [r for r in self.store.items("revisions", namespace) if owned_by(r, uid)] if uid else []

    async def addon_page(self, name: str, expand: rollouts_view.Expand = ()) -> JSON | None:
        cma = self.store.get("addons", name)
        if cma is None:
            return None
        out = dict(await self.addon_core(cma, expand))
        decisions = {f"{ns}/{ref}": list(p.decisions) for (ns, ref), p in self._addon_placements(cma).items()}
        # A cluster-scoped object's events may be recorded in any namespace.
        events = [
            event
            for (kind, _, involved), bucket in self.store.events.items()
            if kind == "ClusterManagementAddOn" and involved == name
            for event in bucket.values()
        ]
        out["events"] = rollouts_view.events_json(events)
        out["history"] = []
        out["actions"] = None if self.read_only else actions.addon_actions(cma, decisions)
        out.update(self._common())
        return out

    def diff(self, namespace: str, name: str, old: int, new: int) -> JSON | None:
        mwrs = self.store.get("replicasets", name, namespace)
        if mwrs is None:
            return None
        return history_view.diff(self.revisions_of(mwrs), old, new)

    # -- placements and the fleet -----------------------------------------------------------------
    async def placement_page(self, namespace: str, name: str) -> JSON | None:
        from ocm_rollout.cli.dashboard.placement_view import placement_page

        placement = self.store.get("placements", name, namespace)
        if placement is None:
            return None
        # Every decision page: the Balance prioritizer counts the other placements' decisions.
        decisions, clusters = self.store.items("decisions"), self.store.items("clusters")
        sets, bindings, scores = self.store.items("sets"), self.store.items("bindings", namespace), self.store.items("scores")
        now = self.clock()
        parts: list[object] = ["clusters", "sets", "bindings", "scores", "decisions", ("placement", namespace, name)]
        computed = await self._memo(
            ("placement", namespace, name), parts,
            lambda: placement_page(placement, decisions, clusters, sets, bindings, scores, now=now),
        )
        out = dict(computed)
        out["usedBy"] = self._placement_users(namespace, name)
        out.update(self._common())
        return out

    def _placement_users(self, namespace: str, name: str) -> list[JSON]:
        users = []
        for mwrs in self.store.items("replicasets", namespace):
            refs = (mwrs.get("spec") or {}).get("placementRefs") or []
            if any((r or {}).get("name") == name for r in refs):
                users.append({"kind": "mwrs", "namespace": namespace, "name": str(meta(mwrs).get("name") or "")})
        for cma in self.rolling_addons():
            entries = ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or []
            if any((e or {}).get("namespace") == namespace and (e or {}).get("name") == name for e in entries):
                users.append({"kind": "addon", "namespace": "", "name": str(meta(cma).get("name") or "")})
        return users

    async def fleet_page(self, query: str, page: int) -> JSON:
        from ocm_rollout.cli.dashboard.fleet_view import fleet_page

        clusters, works = self.store.items("clusters"), self.store.items("works")
        replica_sets, mcas, now = self.store.items("replicasets"), self.store.items("mcas"), self.clock()
        out = dict(await asyncio.to_thread(
            lambda: fleet_page(clusters, works, replica_sets, mcas, now=now, query=query, page=page)
        ))
        out.update(self._common())
        return out
