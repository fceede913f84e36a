"""The live view's incremental bookkeeping: what changed since the last snapshot, and when each
part of the view may be computed again.

The live view of ``ocm-rollout up`` watches every cluster and ManifestWork of a fleet that may
count ten thousand of each. Recomputing everything on every redraw costs O(fleet) a few times a
second; this module lets it cost O(changes) instead:

- ``WorkIndex``: the ManifestWorks by cluster namespace and by owning ManifestWorkReplicaSet
  (its ``work.open-cluster-management.io/manifestworkreplicaset`` label), kept up to date from
  watch events;
- ``Dirty``: the clusters, rollout owners, placements and add-ons touched since they were last
  drawn;
- ``Budget``: when one part may be computed again: not before ``min_interval`` and not before
  its last cost divided by ``share``, so a part that takes 100 ms with ``share`` 0.05 runs at most
  every 2 s and the view never takes more than a small share of the process.

Everything here is plain data fed by the caller; the clock is an argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.api import constants
from ocm_rollout.controllers.common.wire import meta

JSON = dict[str, Any]
WorkKey = tuple[str, str]


def owner_label(work: JSON) -> str:
    """The value of the work's ManifestWorkReplicaSet label ("" when it has none)."""
    labels = meta(work).get("labels") or {}
    return str(labels.get(constants.LABEL_MANIFESTWORK_REPLICASET) or "")


@dataclass
class WorkIndex:
    """ManifestWorks by namespace (cluster) and by owner label, from watch events."""

    by_namespace: dict[str, dict[str, JSON]] = field(default_factory=dict)
    by_owner: dict[str, dict[WorkKey, JSON]] = field(default_factory=dict)

    def update(self, event_type: str, work: JSON, previous: JSON | None) -> tuple[str, set[str]]:
        """Apply one event; returns the work's namespace and the owner labels it touched."""
        found = meta(work)
        namespace, name = str(found.get("namespace") or ""), str(found.get("name") or "")
        key = (namespace, name)
        owners = {owner_label(work)}
        if previous is not None:
            owners.add(owner_label(previous))
        for owner in owners:
            if owner:
                mine = self.by_owner.get(owner)
                if mine is not None:
                    mine.pop(key, None)
                    if not mine:
                        del self.by_owner[owner]
        bucket = self.by_namespace.setdefault(namespace, {})
        if event_type == "DELETED":
            bucket.pop(name, None)
            if not bucket:
                del self.by_namespace[namespace]
        else:
            bucket[name] = work
            owner = owner_label(work)
            if owner:
                self.by_owner.setdefault(owner, {})[key] = work
        owners.discard("")
        return namespace, owners

    def in_namespace(self, namespace: str) -> list[JSON]:
        return list(self.by_namespace.get(namespace, {}).values())

    def owned_by(self, owner: str) -> list[JSON]:
        return list(self.by_owner.get(owner, {}).values())


@dataclass
class Dirty:
    """What changed since each part was last computed."""

    clusters: set[str] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)  # owner labels of works that changed
    rollouts: set[WorkKey] = field(default_factory=set)  # ManifestWorkReplicaSets that changed
    namespaces: set[str] = field(default_factory=set)  # a Placement or decision page changed here
    placements: bool = True
    addons: bool = True


class Budget:
    """When a part of the view may be computed again (see the module docstring)."""

    def __init__(self, monotonic: Callable[[], float], *, min_interval: float, share: float) -> None:
        self.monotonic = monotonic
        self.min_interval = min_interval
        self.share = share
        self.next_allowed = float("-inf")

    def due(self) -> bool:
        return self.monotonic() >= self.next_allowed

    def spend(self, started: float) -> None:
        """Record a computation that began at ``started`` (a ``monotonic`` reading) and ends now."""
        ended = self.monotonic()
        cost = max(ended - started, 0.0)
        self.next_allowed = ended + max(self.min_interval, cost / self.share)
