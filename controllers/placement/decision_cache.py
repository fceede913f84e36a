"""PlacementDecision pages held in the placement controller's cache with equal entries shared.

Every page lists its clusters as ``{"clusterName", "reason", "score"}`` entries, and Placements
over the same fleet list the same clusters: 25 Placements of every cluster in a fleet of 1,000
hold 25,000 entries. Decoded from JSON, each entry is a dict and a string of its own (about 250
bytes): 8 of the 9 MB the decision cache held in ``bench/placement_compare.py``. Scores differ
from Placement to Placement, so about 14,000 of those 31,500 entries still differ.

``SharedDecisions`` is the cache's transform (``Runtime.watch(transform=...)``): it returns the
page with each entry replaced by the one equal ``SharedEntry`` that every cached page holding
it shares, and each cluster's name as one interned string.

- **Safe to share.** A ``SharedEntry`` refuses every change (``TypeError``), so no reader can
  change one page through another; its copies are plain dicts. Shared are only flat entries
  whose values are strings, integers (not booleans) or null, so that equal entries are the
  same JSON, key order included. Any other entry keeps its own dict (its name interned).
- **Bounded.** The table holds, per cluster name, the entries pages hold. Each time as many
  entries were added as the table held after its last sweep (at least ``SWEEP_AFTER``), a sweep
  drops those no page holds any more, and the names with none left: the table stays within
  twice what the cache holds, and sharing never changes what a page says.

Pure: no I/O.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, NoReturn

from ocm_rollout.client.kube import JSON

SWEEP_AFTER = 4096
NAME = "clusterName"
CANONICAL = ("clusterName", "reason", "score")  # the order OCM and this controller write


class SharedEntry(dict[str, Any]):
    """A decision entry that many cached pages hold: read-only; a copy is a plain dict."""

    __slots__ = ()

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise TypeError("a cached decision entry is shared between pages: copy it (dict(entry)) to change it")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return dict(self)  # its values are scalars

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


def entry_key(entry: dict[str, Any]) -> Any:
    """What tells equal entries of one cluster apart (None: not to be shared). The common entry
    (clusterName, reason "", score) is keyed by its score alone."""
    keys = tuple(entry)
    values = tuple(entry.values())
    for value in values:
        if value is not None and type(value) is not str and type(value) is not int:
            return None
    if keys == CANONICAL and values[1] == "":
        return values[2]
    return (keys, *values[1:]) if keys and keys[0] == NAME else None


class SharedDecisions:
    """Shares equal decision entries between the pages it is given; see the module docstring."""

    def __init__(self, sweep_after: int = SWEEP_AFTER) -> None:
        self._by_name: dict[str, dict[Any, SharedEntry]] = {}
        self._minimum = sweep_after
        self._added = 0
        self._sweep_at = sweep_after

    def __len__(self) -> int:
        """How many distinct entries the table holds."""
        return sum(len(entries) for entries in self._by_name.values())

    def __call__(self, page: JSON) -> JSON:
        """``page`` with its entries shared (a new page object; ``page`` itself is not changed)."""
        status = page.get("status")
        decisions = status.get("decisions") if isinstance(status, dict) else None
        if not isinstance(decisions, list) or not decisions:
            return page
        shared = [self.shared(entry) for entry in decisions]
        return {**page, "status": {**status, "decisions": shared}}  # type: ignore[dict-item]

    def shared(self, entry: Any) -> Any:
        """The shared entry equal to ``entry``; ``entry`` (its name interned) if not shareable."""
        if type(entry) is not dict:
            return entry
        name = entry.get(NAME)
        if type(name) is not str:
            return entry
        key = entry_key(entry)
        if key is None:
            copy = dict(entry)
            copy[NAME] = sys.intern(name)
            return copy
        entries = self._by_name.get(name)
        if entries is None:
            name = sys.intern(name)
            entries = self._by_name[name] = {}
        found = entries.get(key)
        if found is None:
            fields = dict(entry)
            fields[NAME] = sys.intern(name)
            found = entries[key] = SharedEntry(fields)
            self._added += 1
            if self._added >= self._sweep_at:
                self.sweep()
        return found

    def sweep(self) -> None:
        """Drop the entries no page holds any more (and names with none left)."""
        for name in list(self._by_name):
            entries = self._by_name[name]
            for key in _unheld(entries):
                del entries[key]
            if not entries:
                del self._by_name[name]
        self._added = 0
        self._sweep_at = max(self._minimum, len(self))


# References to an entry that only the table holds, as ``_unheld`` counts them: the table's and
# ``getrefcount``'s own argument.
_TABLE_ONLY = 2


def _unheld(entries: dict[Any, SharedEntry]) -> Iterable[Any]:
    """The keys of the entries no page holds."""
    return [key for key in list(entries) if sys.getrefcount(entries[key]) <= _TABLE_ONLY]
