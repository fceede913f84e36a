"""Spread constraints: which of the feasible clusters to select (``spec.spreadPolicy``).

Spreading runs after scoring, on the clusters that passed the filters, when the scheduler picks
the clusters it selects. A term's *topologies* are the distinct values of its key (a label or a
claim) among the candidate clusters. Terms nest in index order: term 2 spreads within each
topology of term 1, so a cluster's place is its topology tuple (v1, v2, ...), and the siblings
of a topology are the topologies of the same term under the same earlier values.

Selection is greedy, one cluster at a time. Among the candidates it prefers the cluster whose
tuple has the fewest selected clusters, term by term (earlier terms first), then the higher
prioritizer total, then the name. A ``DoNotSchedule`` term never selects a cluster that would
make (count of its topology - smallest count among the topology and its siblings) exceed
``maxSkew``, and never selects a cluster without its key: such a cluster is no candidate and
makes no topology. Under a ``ScheduleAnyway`` term a cluster without the key is selected only
after every sibling that has it.

The selection runs on a tree of topologies whose nodes keep their children in heaps, so each
pick costs O(terms x log(children)): 1,000 picks among 10,000 clusters take milliseconds.

Pure: no I/O.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ocm_rollout.api.cluster_v1beta1 import SpreadConstraintsTerm
from ocm_rollout.api.constants import SPREAD_DO_NOT_SCHEDULE, TOPOLOGY_KEY_TYPE_CLAIM
from ocm_rollout.controllers.placement.snapshot import ClusterView

# A candidate's rank inside a leaf, and a node's best pick: tuples compared lexicographically.
_Key = tuple[object, ...]


@dataclass(frozen=True)
class SpreadTerm:
    index: int
    key: str
    key_type: str
    max_skew: int
    hard: bool  # DoNotSchedule

    @classmethod
    def of(cls, index: int, term: SpreadConstraintsTerm) -> SpreadTerm:
        hard = term.when_unsatisfiable == SPREAD_DO_NOT_SCHEDULE
        return cls(index, term.topology_key, term.topology_key_type, term.max_skew, hard)

    def value(self, cluster: ClusterView) -> str | None:
        source = cluster.claims if self.key_type == TOPOLOGY_KEY_TYPE_CLAIM else cluster.labels
        return source.get(self.key)

    def describe(self) -> str:
        mode = "DoNotSchedule" if self.hard else "ScheduleAnyway"
        return f"spread term {self.index + 1} ({self.key_type} {self.key}, {mode}, maxSkew {self.max_skew})"


@dataclass(frozen=True)
class TopologyCount:
    """One topology of a term: its values for this term and every earlier one."""

    values: tuple[str | None, ...]
    candidates: int
    selected: int


@dataclass(frozen=True)
class TermReport:
    term: SpreadTerm
    topologies: tuple[TopologyCount, ...]
    without_key: int  # feasible clusters without this term's key
    held_back: int  # feasible clusters this term kept out of the selection


@dataclass
class SpreadResult:
    selected: list[str]  # in the order they were picked
    terms: list[TermReport] = field(default_factory=list)

    @property
    def held_back(self) -> int:
        return sum(t.held_back for t in self.terms)

    def held_back_text(self) -> str:
        """``spread term 1 (...) held back 3 clusters; ...`` for the terms that held any back."""
        parts = []
        for report in self.terms:
            if report.held_back:
                noun = "cluster" if report.held_back == 1 else "clusters"
                parts.append(f"{report.term.describe()} held back {report.held_back} {noun}")
        return "; ".join(parts)


class _Node:
    """A topology (the root is the empty tuple). Inner nodes hold children, leaves candidates."""

    __slots__ = ("children", "count", "depth", "heap", "hist", "key", "members", "pos", "stamp", "values")

    def __init__(self, depth: int, values: tuple[str | None, ...]) -> None:
        self.depth = depth
        self.values = values
        self.count = 0  # selected clusters in this subtree
        self.children: dict[str | None, _Node] = {}
        self.members: list[tuple[int, str]] = []  # leaves: (-score, name), best first
        self.pos = 0
        self.heap: list[tuple[_Key, int, str | None]] = []  # (key, stamp, child value)
        self.hist: Counter[int] = Counter()  # counts of the children that have the key
        self.key: _Key | None = None  # the best pick in this subtree, None when none is allowed
        self.stamp = 0


class _Tree:
    def __init__(self, terms: Sequence[SpreadTerm]) -> None:
        self.terms = terms
        self.root = _Node(0, ())

    def insert(self, values: tuple[str | None, ...], score: int, name: str) -> None:
        node = self.root
        for depth, value in enumerate(values):
            child = node.children.get(value)
            if child is None:
                child = _Node(depth + 1, (*node.values, value))
                node.children[value] = child
                if value is not None:
                    node.hist[0] += 1
            node = child
        node.members.append((-score, name))

    def prepare(self) -> None:
        self._prepare(self.root)

    def _prepare(self, node: _Node) -> None:
        if node.depth == len(self.terms):
            node.members.sort()
            node.key = node.members[0] if node.members else None
            return
        for child in node.children.values():
            self._prepare(child)
            self._push(node, child)
        self._settle(node)

    @staticmethod
    def _entry_key(child: _Node) -> _Key:
        assert child.key is not None
        return (1 if child.values[-1] is None else 0, child.count, *child.key)

    def _push(self, node: _Node, child: _Node) -> None:
        if child.key is not None:
            heapq.heappush(node.heap, (self._entry_key(child), child.stamp, child.values[-1]))

    def _settle(self, node: _Node) -> None:
        """Set ``node.key`` from its best allowed child."""
        heap = node.heap
        while heap:
            _, stamp, value = heap[0]
            child = node.children[value]
            if child.stamp != stamp or child.key is None:
                heapq.heappop(heap)
                continue
            term = self.terms[node.depth]
            if term.hard and not self._allowed(node, child, term):
                node.key = None  # every other child has at least this count: none is allowed
                return
            node.key = heap[0][0]
            return
        node.key = None

    @staticmethod
    def _min_after(node: _Node, count: int) -> int:
        """The smallest child count once a child with ``count`` gains one."""
        low = min(c for c, n in node.hist.items() if n > 0)
        if count == low and node.hist[count] == 1:
            return count + 1
        return low

    def _allowed(self, node: _Node, child: _Node, term: SpreadTerm) -> bool:
        return child.count + 1 - self._min_after(node, child.count) <= term.max_skew

    def pick(self) -> str | None:
        """Select the best allowed candidate, or return None when none is allowed."""
        if self.root.key is None:
            return None
        path = [self.root]
        node = self.root
        while node.depth < len(self.terms):
            _, _, value = node.heap[0]
            node = node.children[value]
            path.append(node)
        _, name = node.members[node.pos]
        node.pos += 1
        node.count += 1
        node.key = node.members[node.pos] if node.pos < len(node.members) else None
        for parent, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
            if child.values[-1] is not None:
                parent.hist[child.count - 1] -= 1
                if parent.hist[child.count - 1] == 0:
                    del parent.hist[child.count - 1]
                parent.hist[child.count] += 1
            child.stamp += 1
            self._push(parent, child)
            parent.count += 1
            self._settle(parent)
        return name

    def blocking_term(self, values: tuple[str | None, ...]) -> SpreadTerm | None:
        """The first hard term that keeps a candidate with ``values`` out now."""
        node = self.root
        for depth, value in enumerate(values):
            term = self.terms[depth]
            child = node.children[value]
            if term.hard and not self._allowed(node, child, term):
                return term
            node = child
        return None

    def topologies(self, depth: int) -> list[TopologyCount]:
        out: list[TopologyCount] = []
        self._collect(self.root, depth, out)
        return out

    def _collect(self, node: _Node, depth: int, out: list[TopologyCount]) -> None:
        if node.depth == depth:
            out.append(TopologyCount(node.values, self._size(node), node.count))
            return
        for value in sorted(node.children, key=lambda v: (v is None, v or "")):
            self._collect(node.children[value], depth, out)

    def _size(self, node: _Node) -> int:
        if node.depth == len(self.terms):
            return len(node.members)
        return sum(self._size(c) for c in node.children.values())


def spread_terms(terms: Sequence[SpreadConstraintsTerm]) -> list[SpreadTerm]:
    return [SpreadTerm.of(index, term) for index, term in enumerate(terms)]


def select(
    feasible: Sequence[ClusterView],
    scores: Mapping[str, int],
    terms: Sequence[SpreadTerm],
    wanted: int | None,
) -> SpreadResult:
    """Pick up to ``wanted`` clusters (every allowed one when None) from ``feasible``.

    Without terms this is the first ``wanted`` clusters by score, then name. With
    ``wanted`` unset and only ScheduleAnyway terms every feasible cluster is selected.
    """
    ranked = sorted(feasible, key=lambda c: (-scores.get(c.name, 0), c.name))
    if not terms:
        first = ranked if wanted is None else ranked[:wanted]
        return SpreadResult([c.name for c in first])

    tree = _Tree(terms)
    without_key = [0] * len(terms)
    missing_hard: dict[str, SpreadTerm] = {}
    tuples: dict[str, tuple[str | None, ...]] = {}
    for cluster in ranked:
        values = tuple(term.value(cluster) for term in terms)
        for term, value in zip(terms, values, strict=True):
            if value is None:
                without_key[term.index] += 1
                if term.hard and cluster.name not in missing_hard:
                    missing_hard[cluster.name] = term
        if cluster.name in missing_hard:
            continue
        tuples[cluster.name] = values
        tree.insert(values, scores.get(cluster.name, 0), cluster.name)
    tree.prepare()

    selected: list[str] = []
    limit = len(tuples) if wanted is None else min(wanted, len(tuples))
    while len(selected) < limit:
        name = tree.pick()
        if name is None:
            break
        selected.append(name)

    held: Counter[int] = Counter()
    if wanted is None or len(selected) < wanted:
        held.update(term.index for term in missing_hard.values())
        chosen = set(selected)
        for name, values in tuples.items():
            blocking = None if name in chosen else tree.blocking_term(values)
            if blocking is not None:
                held[blocking.index] += 1
    reports = [
        TermReport(term, tuple(tree.topologies(term.index + 1)), without_key[term.index], held[term.index])
        for term in terms
    ]
    return SpreadResult(selected, reports)
