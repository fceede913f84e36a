"""The PlacementDecision pages a scheduling pass reads, kept up to date page by page.

A pass reads three things from the decision pages: the clusters of its own Placement's pages
(Steady, and whether the selected set changed), the score each of them carries (scoreRateLimit),
and, for Balance, how many decisions every cluster has over all pages except its own. Counting
these from every page on every pass costs O(pages x decisions) each time a page is written;
``DecisionIndex`` keeps them instead, updated one page at a time (``put``):

- ``PageEntry``: what a pass reads of one page (its Placement label, its clusters and their
  scores, as two tuples: a tuple per decision cost 2 MB over 30,000 decisions);
- the total count of decisions per cluster over every page, labelled or not;
- the pages of each (namespace, Placement label).

``put(key, entry)`` replaces (or with ``None`` removes) one page, so the index after any sequence
of puts equals one built from the final pages at once (``DecisionIndex.of``, used by the offline
command and the tests). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ocm_rollout.api.cluster_v1beta1 import PlacementDecision
from ocm_rollout.api.constants import LABEL_PLACEMENT

Key = tuple[str, str]
"""(namespace, name) of a page."""


@dataclass(frozen=True)
class PageEntry:
    """What scheduling reads of one PlacementDecision page."""

    placement: str | None  # the Placement label, None when the page has none
    clusters: tuple[str, ...]  # clusterName of each decision, in the page's order
    scores: tuple[int | None, ...]  # the score of each decision (None: none)

    @classmethod
    def of(cls, page: PlacementDecision) -> PageEntry:
        decisions = page.status.decisions
        return cls(
            page.metadata.labels.get(LABEL_PLACEMENT),
            tuple(d.cluster_name for d in decisions),
            tuple(d.score for d in decisions),
        )


class DecisionIndex:
    """Decision pages by key, with the per-cluster decision counts Balance reads."""

    def __init__(self) -> None:
        self._pages: dict[Key, PageEntry] = {}
        # (namespace, placement label) -> page name -> entry
        self._by_placement: dict[Key, dict[str, PageEntry]] = {}
        # decisions per cluster over every page; never holds a zero
        self._total: Counter[str] = Counter()

    @classmethod
    def of(cls, pages: Iterable[PlacementDecision]) -> DecisionIndex:
        index = cls()
        for page in pages:
            index.put((page.namespace, page.name), PageEntry.of(page))
        return index

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, key: Key) -> PageEntry | None:
        return self._pages.get(key)

    def put(self, key: Key, entry: PageEntry | None) -> None:
        """Replace the page at ``key`` with ``entry`` (None: the page is gone)."""
        old = self._pages.pop(key, None)
        if old is not None:
            self._unlink(key, old)
        if entry is not None:
            self._pages[key] = entry
            self._link(key, entry)

    def _link(self, key: Key, entry: PageEntry) -> None:
        total = self._total
        for cluster in entry.clusters:
            total[cluster] += 1
        if entry.placement is not None:
            self._by_placement.setdefault((key[0], entry.placement), {})[key[1]] = entry

    def _unlink(self, key: Key, entry: PageEntry) -> None:
        total = self._total
        for cluster in entry.clusters:
            left = total[cluster] - 1
            if left > 0:
                total[cluster] = left
            else:
                del total[cluster]
        if entry.placement is not None:
            owner = (key[0], entry.placement)
            pages = self._by_placement.get(owner)
            if pages is not None:
                pages.pop(key[1], None)
                if not pages:
                    del self._by_placement[owner]

    # -- what a pass reads --------------------------------------------------------------------
    def pages_of(self, namespace: str, placement: str) -> list[PageEntry]:
        """The pages labelled with this Placement in its namespace, by page name."""
        pages = self._by_placement.get((namespace, placement))
        if not pages:
            return []
        return [pages[name] for name in sorted(pages)]

    def current_decisions(self, namespace: str, placement: str) -> set[str]:
        """Cluster names in this Placement's pages."""
        out: set[str] = set()
        for entry in self.pages_of(namespace, placement):
            out.update(entry.clusters)
        return out

    def recorded_scores(self, namespace: str, placement: str) -> dict[str, int | None]:
        """The score each cluster of this Placement's pages carries (None: none); a cluster on
        two pages keeps the one of the later page by name."""
        out: dict[str, int | None] = {}
        for entry in self.pages_of(namespace, placement):
            out.update(zip(entry.clusters, entry.scores, strict=True))
        return out

    def balance_counts(self, namespace: str, placement: str) -> Counter[str]:
        """Decisions per cluster over every page except this Placement's own; only positive
        counts. Shared with the index when the Placement has no page: read, never change it."""
        own: Counter[str] = Counter()
        for entry in self.pages_of(namespace, placement):
            own.update(entry.clusters)
        if not own:
            return self._total
        counts = Counter(self._total)
        counts.subtract(own)
        return +counts
