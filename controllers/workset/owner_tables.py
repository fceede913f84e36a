"""What a pass reads from all of an MWRS's works at once, kept between passes and updated from the
works that came or went since (by object identity), like ``ref_table`` per placementRef.

- ``Tracked``: which work objects came and went since the last call.
- ``Pairs``: the works by (cluster, placement label), for the plan (``plan.plan_deploy``).
- ``Summary``: per placement, the conditions counted in the summary and the apply failures of the
  works holding one template (``aggregation.build_status``).
- ``Groups``: a placement's decision groups, for as long as its decision pages are the same objects.

Why they are never stale: each holds the objects it derived from (so an identity is never another
object's), the cache never changes a stored object in place, and what is derived depends only on
the object (and the template, which is part of a ``Summary``'s key). When the shape is one the
fast path does not cover (the same object listed twice, duplicates of one (cluster, placement),
works of placements the MWRS no longer names, two failing works in one cluster), the caller
derives everything afresh instead, as ``DIRECT`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ocm_rollout.controllers.common.decisions import decision_groups
from ocm_rollout.controllers.common.wire import JSON, is_deleting
from ocm_rollout.controllers.rollout.model import DecisionGroup
from ocm_rollout.controllers.workset.apply_failures import ApplyFailure

Place = tuple[str, str | None]  # (cluster, placement label)


class Tracked:
    """A set of work objects, by identity (it holds them)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: dict[int, JSON] = {}

    def sync(self, works: Iterable[JSON]) -> tuple[list[JSON], list[JSON]] | None:
        """(the objects that came, those that went) since the last call; None when ``works``
        lists an object twice (the table is then emptied: the caller derives afresh)."""
        listed = works if isinstance(works, Sequence) else list(works)
        now = {id(work): work for work in listed}
        if len(now) != len(listed):
            self.seen = {}
            return None
        seen = self.seen
        if now.keys() == seen.keys():
            return [], []
        came = [now[i] for i in now.keys() - seen.keys()]
        went = [seen[i] for i in seen.keys() - now.keys()]
        self.seen = now
        return came, went


class _Following:
    """A table that follows a list of works through a ``Tracked``."""

    __slots__ = ()
    tracked: Tracked

    def _diff(self, works: Iterable[JSON]) -> tuple[list[JSON], list[JSON]] | None:
        """What came and went; None (and the table emptied) when the caller must derive afresh."""
        diff = self.tracked.sync(works)
        if diff is None:
            self.__init__()  # type: ignore[misc]
        return diff


class Pairs(_Following):
    """An MWRS's works by (cluster, placement label)."""

    __slots__ = ("by_placement", "crowded", "keys", "pairs", "tracked")

    def __init__(self) -> None:
        self.tracked = Tracked()
        self.keys: dict[int, Place] = {}  # id(work) -> its (cluster, placement)
        self.pairs: dict[Place, list[JSON]] = {}
        self.crowded: set[Place] = set()  # pairs with more than one work
        self.by_placement: dict[str | None, dict[str, JSON]] = {}  # placement -> cluster -> a work

    def update(self, works: Iterable[JSON], place: Callable[[JSON], Place]) -> bool:
        """Follow ``works``; False when the caller must derive afresh."""
        diff = self._diff(works)
        if diff is None:
            return False
        came, went = diff
        for work in went:
            key = self.keys.pop(id(work))
            group = self.pairs[key]
            del group[next(i for i, listed in enumerate(group) if listed is work)]
            self._settle(key, group)
        for work in came:
            key = self.keys[id(work)] = place(work)
            group = self.pairs.setdefault(key, [])
            group.append(work)
            self._settle(key, group)
        return True

    def _settle(self, key: Place, group: list[JSON]) -> None:
        cluster, placement = key
        if len(group) > 1:
            self.crowded.add(key)
        else:
            self.crowded.discard(key)
        clusters = self.by_placement.setdefault(placement, {})
        if group:
            clusters[cluster] = group[0]
            return
        del self.pairs[key]
        clusters.pop(cluster, None)
        if not clusters:
            del self.by_placement[placement]

    def simple(self, ref_names: Sequence[str]) -> dict[str, dict[str, JSON]] | None:
        """Each placementRef's works by cluster, when no work is stale or a duplicate (else
        None: the plan derives afresh, which also deletes those)."""
        if self.crowded or not self.by_placement.keys() <= set(ref_names):
            return None
        return {name: dict(clusters) for name, clusters in self.by_placement.items() if name is not None}


class Summary(_Following):
    """Per placement, the summary's counts and the apply failures of the works that hold one
    template and are not being deleted."""

    __slots__ = ("failing", "parts", "totals", "tracked")

    def __init__(self) -> None:
        self.tracked = Tracked()
        # id(work) -> (placement, its four counts, its apply failure) for the works that count.
        self.parts: dict[int, tuple[str, tuple[int, int, int, int], ApplyFailure | None]] = {}
        self.totals: dict[str, list[int]] = {}
        self.failing: dict[str, dict[int, ApplyFailure]] = {}

    def update(
        self,
        works: Iterable[JSON],
        is_current: Callable[[JSON], bool],
        placement_of: Callable[[JSON], str | None],
        counts_of: Callable[[JSON], tuple[int, int, int, int]],
        failure_of: Callable[[JSON], ApplyFailure | None],
    ) -> bool:
        """Follow ``works``; False when the caller must derive afresh."""
        diff = self._diff(works)
        if diff is None:
            return False
        came, went = diff
        for work in went:
            part = self.parts.pop(id(work), None)
            if part is not None:
                self._add(id(work), part, -1)
        for work in came:
            if is_deleting(work) or not is_current(work):
                continue
            placement = placement_of(work)
            if placement is None:
                continue
            part = (placement, counts_of(work), failure_of(work))
            self.parts[id(work)] = part
            self._add(id(work), part, 1)
        return True

    def _add(self, ident: int, part: tuple[str, tuple[int, int, int, int], ApplyFailure | None], sign: int) -> None:
        placement, counts, failure = part
        totals = self.totals.setdefault(placement, [0, 0, 0, 0])
        for index, value in enumerate(counts):
            totals[index] += sign * value
        if failure is not None:
            failing = self.failing.setdefault(placement, {})
            if sign > 0:
                failing[ident] = failure
            else:
                failing.pop(ident, None)

    def counts(self, placement: str) -> tuple[int, int, int, int]:
        totals = self.totals.get(placement, [0, 0, 0, 0])
        return totals[0], totals[1], totals[2], totals[3]

    def failures(self, placements: Iterable[str]) -> list[ApplyFailure] | None:
        """The apply failures of ``placements``' works by cluster; None when one cluster has two
        (which one is named depends on the works' order: the caller derives afresh)."""
        found: dict[str, ApplyFailure] = {}
        for placement in placements:
            for failure in self.failing.get(placement, {}).values():
                if failure.cluster in found:
                    return None
                found[failure.cluster] = failure
        return [found[c] for c in sorted(found)]


class Groups:
    """A placement's decision groups from its decision pages, derived again only when a page is
    another object."""

    __slots__ = ("groups", "pages")

    def __init__(self) -> None:
        self.pages: tuple[Mapping[str, Any], ...] = ()
        self.groups: list[DecisionGroup] | None = None

    def of(self, pages: Sequence[Mapping[str, Any]]) -> list[DecisionGroup]:
        """``decision_groups(pages)`` (which may raise DecisionGroupError: nothing is kept then)."""
        held = self.pages
        if self.groups is not None and len(held) == len(pages) and all(a is b for a, b in zip(held, pages, strict=True)):
            return list(self.groups)
        self.groups = None
        groups = decision_groups(pages)
        self.pages, self.groups = tuple(pages), groups
        return list(groups)
