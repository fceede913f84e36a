"""What the plan of one placementRef derives from its works, kept between passes and updated from
the works that changed since.

A pass of an MWRS with N works used to walk all N to find which hold the template, judge their
rollout status and build the planner's sorted ``existing`` list, though between two passes only a
few works change. A ``RefTable`` belongs to one (owner, placement, template, verifying or not); it
remembers the work object each cluster's entry was derived from, and a pass re-derives only the
clusters whose object is another one (or that came or went).

Why it is never stale: the table holds the objects it derived from, so "the same object" cannot
be a new object at a reused address; the cache never changes a stored object in place (a new
version is a new object); and what it derives from an object depends on nothing but that object,
the template (its canonical hash is part of the table's key) and whether the strategy verifies
(also part of the key). A matcher without a key (``WorkMemo.matcher`` gives every matcher one)
gets a new, empty table every time: everything derived afresh, as ``DIRECT`` does.

The mappings it hands out are copies, in cluster order, as a fresh derivation orders them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ocm_rollout.controllers.common.wire import JSON
from ocm_rollout.controllers.rollout.model import ClusterRolloutStatus, RolloutStatus
from ocm_rollout.controllers.workset.status_mapping import WorkRolloutStatus


class RefTable:
    """One placementRef's works, judged (see the module's docstring)."""

    __slots__ = ("_entries", "_existing", "current", "outdated", "seen", "statuses")

    def __init__(self) -> None:
        self.seen: dict[str, JSON] = {}  # cluster -> the work object its entry was derived from
        self.current: dict[str, JSON] = {}  # cluster -> work holding the template (cluster order)
        self.statuses: dict[str, WorkRolloutStatus] = {}  # the same clusters -> rollout status
        self.outdated: set[str] = set()  # clusters whose work does not hold the template
        self._entries: dict[str, ClusterRolloutStatus] = {}  # the planner's view of ``statuses``
        self._existing: list[ClusterRolloutStatus] | None = None

    def update(
        self,
        works: Mapping[str, JSON],
        is_current: Callable[[JSON], bool],
        status_of: Callable[[JSON], WorkRolloutStatus],
    ) -> None:
        """Bring the table to ``works`` (cluster -> its work), deriving only what changed."""
        seen = self.seen
        before = len(seen)
        kept = 0  # clusters of ``works`` the table knew
        added = False
        for cluster, work in works.items():
            known = seen.get(cluster)
            if known is work:
                kept += 1
                continue
            if known is not None:
                kept += 1
            seen[cluster] = work
            self._existing = None
            if is_current(work):
                status = status_of(work)
                added = added or cluster not in self.statuses
                self.current[cluster] = work
                self.statuses[cluster] = status
                self._entries[cluster] = ClusterRolloutStatus(
                    cluster, RolloutStatus(status.status), status.last_transition_time, status.apply_failed_since
                )
                self.outdated.discard(cluster)
            else:
                self._drop_current(cluster)
                self.outdated.add(cluster)
        if kept != before:
            for cluster in [c for c in seen if c not in works]:
                del seen[cluster]
                self._drop_current(cluster)
                self.outdated.discard(cluster)
        if added:
            # A cluster new to the table: its entries go back to cluster order.
            self.current = dict(sorted(self.current.items()))
            self.statuses = dict(sorted(self.statuses.items()))
            self._entries = dict(sorted(self._entries.items()))

    def _drop_current(self, cluster: str) -> None:
        if self.current.pop(cluster, None) is not None:
            del self.statuses[cluster]
            del self._entries[cluster]
            self._existing = None

    def existing(self) -> list[ClusterRolloutStatus]:
        """The planner's statuses of the clusters whose work holds the template, in cluster order
        (a new list each time)."""
        if self._existing is None:
            self._existing = list(self._entries.values())
        return list(self._existing)
