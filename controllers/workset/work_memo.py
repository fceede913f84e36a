"""What a pass derives from each work, kept between passes: computed once per version of a work.

A status event of one work re-queues its whole MWRS, so a pass over a rollout of N clusters used
to judge all N works again (their conditions parsed, their times read), though at most a few had
changed. ``WorkMemo`` keeps, per work uid, the derivations of the version last seen (its
``resourceVersion``): the rollout status (``status_mapping.rollout_status`` from the revision's
start), the verified status (``verified.verified_status``), the conditions counted in the summary
(``aggregation``) and the apply failure (``apply_failures``). A work with another version, or
without a uid or resourceVersion, is derived afresh, so an entry is never older than the work it
is read for (the stored JSON is never changed in place: a new version is a new object). The entry
of a deleted work is dropped (``forget``).

``DIRECT`` derives every time and keeps nothing: what the pure functions use when no memo is
given, and the reference the memo is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from ocm_rollout.api.constants import (
    LABEL_PLACEMENT_NAME,
    WORK_CONDITION_APPLIED,
    WORK_CONDITION_AVAILABLE,
    WORK_CONDITION_DEGRADED,
    WORK_CONDITION_PROGRESSING,
)
from ocm_rollout.controllers.common.wire import JSON, label_of, meta, namespace_of
from ocm_rollout.controllers.workset.apply_failures import ApplyFailure, work_apply_failure
from ocm_rollout.controllers.workset.owner_tables import Summary
from ocm_rollout.controllers.workset.ref_table import RefTable
from ocm_rollout.controllers.workset.status_mapping import WorkRolloutStatus, revision_start, rollout_status
from ocm_rollout.controllers.workset.verified import verified_status

# The summary's counters, in the order ``condition_counts`` gives them.
COUNTED = ("applied", "progressing", "available", "degraded")
_COUNTED_TYPES = {
    WORK_CONDITION_APPLIED: 0,
    WORK_CONDITION_PROGRESSING: 1,
    WORK_CONDITION_AVAILABLE: 2,
    WORK_CONDITION_DEGRADED: 3,
}
_UNSET: Any = object()
T = TypeVar("T")
# Templates a work's entry remembers its match with (the update and the current revision's, and
# a few more while the spec changes).
_MATCHES_KEPT = 4
# Tables an MWRS keeps (``ref_table``, ``summary``, ``kept``: a few per placementRef and template);
# the least recently used goes first.
_TABLES_KEPT = 32


def condition_counts(work: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """Which of Applied, Progressing, Available, Degraded are True on ``work`` (the first
    condition of a type counts), regardless of observedGeneration (docs/behaviour/mwrs.md 6)."""
    counts = [0, 0, 0, 0]
    seen = [False, False, False, False]
    status = work.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    for cond in conds if isinstance(conds, list) else ():
        if not isinstance(cond, Mapping):
            continue
        index = _COUNTED_TYPES.get(str(cond.get("type")))
        if index is None or seen[index]:
            continue
        seen[index] = True
        if cond.get("status") == "True":
            counts[index] = 1
    return counts[0], counts[1], counts[2], counts[3]


class _Entry:
    __slots__ = ("counts", "failure", "matched", "place", "status", "verified", "version", "work")

    def __init__(self, work: Mapping[str, Any] | None, version: str) -> None:
        self.work = work
        self.version = version
        self.status: Any = _UNSET
        self.verified: Any = _UNSET
        self.counts: Any = _UNSET
        self.failure: Any = _UNSET
        self.place: Any = _UNSET
        self.matched: dict[str, bool] | None = None


class WorkMemo:
    """The derivations of each work's current version (see the module's docstring)."""

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.entries: dict[str, _Entry] = {}
        # The same entries by the identity of the work object they were derived from: the
        # common lookup (the cache hands out the same object until the work changes).
        self.by_object: dict[int, _Entry] = {}
        # Per MWRS: its placementRefs' tables (``ref_table``).
        self.tables: dict[str, dict[tuple[str, ...], object]] = {}

    def _entry(self, work: Mapping[str, Any]) -> _Entry:
        known = self.by_object.get(id(work))
        if known is not None and known.work is work:
            return known
        metadata = meta(work)
        uid = metadata.get("uid")
        version = metadata.get("resourceVersion")
        if not self.keep or not uid or not version or not isinstance(uid, str):
            return _Entry(None, "")
        entry = self.entries.get(uid)
        if entry is None or entry.version != version:
            if entry is not None:
                self._unlink(entry)
            entry = _Entry(work, str(version))
            self.entries[uid] = entry
        else:
            # The same version in another object (e.g. a copy marked as deleting).
            self._unlink(entry)
            entry.work = work
        self.by_object[id(work)] = entry
        return entry

    def _unlink(self, entry: _Entry) -> None:
        if entry.work is not None and self.by_object.get(id(entry.work)) is entry:
            del self.by_object[id(entry.work)]

    def rollout_status(self, work: Mapping[str, Any]) -> WorkRolloutStatus:
        """``rollout_status(work, revision_start(work))``."""
        entry = self._entry(work)
        if entry.status is _UNSET:
            entry.status = rollout_status(work, revision_start(work))
        result: WorkRolloutStatus = entry.status
        return result

    def verified_status(self, work: Mapping[str, Any]) -> WorkRolloutStatus:
        """``verified_status(work, rollout_status(...))``: the status under a verifying strategy."""
        entry = self._entry(work)
        if entry.verified is _UNSET:
            if entry.status is _UNSET:
                entry.status = rollout_status(work, revision_start(work))
            entry.verified = verified_status(work, entry.status)
        result: WorkRolloutStatus = entry.verified
        return result

    def condition_counts(self, work: Mapping[str, Any]) -> tuple[int, int, int, int]:
        entry = self._entry(work)
        if entry.counts is _UNSET:
            entry.counts = condition_counts(work)
        result: tuple[int, int, int, int] = entry.counts
        return result

    def apply_failure(self, work: Mapping[str, Any]) -> ApplyFailure | None:
        entry = self._entry(work)
        if entry.failure is _UNSET:
            entry.failure = work_apply_failure(work)
        result: ApplyFailure | None = entry.failure
        return result

    def place(self, work: Mapping[str, Any]) -> tuple[str, str | None]:
        """The work's cluster (its namespace) and its placement label."""
        entry = self._entry(work)
        if entry.place is _UNSET:
            entry.place = (namespace_of(work), label_of(work, LABEL_PLACEMENT_NAME))
        result: tuple[str, str | None] = entry.place
        return result

    def matcher(self, key: str, predicate: Callable[[JSON], bool]) -> Callable[[JSON], bool]:
        """``predicate`` (whether a work holds a template), judged once per work version;
        ``key`` names what it compares with (the template's canonical hash)."""
        return _Matcher(self, key, predicate)

    def ref_table(self, owner: str, ident: tuple[str, ...], matches: Callable[[JSON], bool], verifies: bool) -> RefTable:
        """The ``RefTable`` of the MWRS ``owner`` ("namespace/name"), for ``ident`` (its uid and
        the placement) under the template ``matches`` judges by: kept between passes when
        ``matches`` is this memo's ``matcher``, else a new one (derived afresh)."""
        if not isinstance(matches, _Matcher) or matches.memo is not self:
            return RefTable()
        return self.kept(owner, ("ref", *ident, matches.key, "verifies" if verifies else ""), RefTable)

    def summary(self, owner: str, ident: tuple[str, ...], matches: Callable[[JSON], bool]) -> Summary | None:
        """The ``owner_tables.Summary`` of the works holding the template ``matches`` judges by;
        None unless ``matches`` is this memo's ``matcher`` (the caller derives afresh)."""
        if not self.keep or not isinstance(matches, _Matcher) or matches.memo is not self:
            return None
        return self.kept(owner, ("summary", *ident, matches.key), Summary)

    def kept(self, owner: str, key: tuple[str, ...], make: Callable[[], T]) -> T:
        """The table ``key`` of the MWRS ``owner`` ("namespace/name"), made by ``make`` when
        missing; a new one every time when the memo keeps nothing."""
        if not self.keep:
            return make()
        tables = self.tables.setdefault(owner, {})
        table = tables.pop(key, None)
        if table is None:
            table = make()
            if len(tables) >= _TABLES_KEPT:
                del tables[next(iter(tables))]  # the least recently used
        tables[key] = table
        return cast(T, table)

    def forget_owner(self, owner: str) -> None:
        """Drop the tables of a deleted MWRS."""
        self.tables.pop(owner, None)

    def forget(self, uid: str) -> None:
        entry = self.entries.pop(uid, None)
        if entry is not None:
            self._unlink(entry)


class _Matcher:
    """``WorkMemo.matcher``: a predicate judged once per work version, named by its template."""

    __slots__ = ("key", "memo", "predicate")

    def __init__(self, memo: WorkMemo, key: str, predicate: Callable[[JSON], bool]) -> None:
        self.memo = memo
        self.key = key
        self.predicate = predicate

    def __call__(self, work: JSON) -> bool:
        entry = self.memo._entry(work)
        known = None if entry.matched is None else entry.matched.get(self.key)
        if known is None:
            known = self.predicate(work)
            if entry.matched is None or len(entry.matched) >= _MATCHES_KEPT:
                entry.matched = {}
            entry.matched[self.key] = known
        return known


DIRECT = WorkMemo(keep=False)
