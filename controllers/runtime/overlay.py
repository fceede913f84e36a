"""Read your writes: a controller's own writes laid over a cache that has not caught up yet.

A cache (kopf's index or a ``WatchCache``) shows an object only when its watch event arrives,
which can be after the next pass of the key that wrote it. Without an overlay that pass would
plan from the older version: create a second object of the same name, count a cluster twice,
or lose the reservation it just wrote. So every write a controller makes (and every object it
learns from the API while confirming a plan) is kept here until the cache shows that version or
a newer one:

- a written or learnt object is shown while the cache holds an older version of it (or, for a
  create, nothing yet); once the cache holds the same or a newer version, the entry goes;
- "newer" compares resourceVersions as integers, as ``watchcache.newer`` does (etcd's revision:
  the local hub and kube-apiserver both serve them), and "strictly newer" is newer and not the
  same version: ``strictly_newer`` is the one test every controller uses;
- a delete this controller requested is shown by the overlay's ``DeletePolicy``: ``HIDE`` (the
  object is gone for every reader: the placement controller must not plan from a decision page
  it deleted) or ``MARK`` (the object stays, marked as deleting: the MWRS controller still
  counts a work being deleted, so that a cluster is not given a second one meanwhile), until the
  cache shows it gone, deleting, or replaced by another incarnation (a different uid).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Any

JSON = dict[str, Any]
Key = tuple[str, str]
"""(namespace or "", name)."""

# What a marked object carries as its deletionTimestamp until the cache shows the real one.
DELETE_REQUESTED = "requested"


class DeletePolicy(enum.Enum):
    HIDE = "hide"
    MARK = "mark"


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    found = (obj or {}).get("metadata")
    return found if isinstance(found, Mapping) else {}


def key_of(obj: Mapping[str, Any]) -> Key:
    found = _meta(obj)
    return (str(found.get("namespace") or ""), str(found.get("name") or ""))


def version_of(obj: Mapping[str, Any] | None) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return str(_meta(obj).get("uid") or "")


def strictly_newer(candidate: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """Is ``candidate`` a later version than ``current`` (None: anything is)? Integer
    resourceVersions are compared as numbers; an opaque one never makes the candidate older,
    but the same version is never newer."""
    if current is None:
        return True
    new, old = version_of(candidate), version_of(current)
    if new == old:
        return False
    if new.isdigit() and old.isdigit():
        return int(new) > int(old)
    return True


class Overlay:
    """The writes of one controller to one kind, shown until the cache catches up."""

    def __init__(self, policy: DeletePolicy) -> None:
        self.policy = policy
        # key -> (object, shown even when the cache has nothing: a create or an object learnt
        # from the API that the cache has not listed yet)
        self._written: dict[Key, tuple[JSON, bool]] = {}
        self._deleted: dict[Key, str] = {}  # key -> uid whose deletion was requested

    def __len__(self) -> int:
        return len(self._written) + len(self._deleted)

    def wrote(self, obj: JSON, *, created: bool = False) -> None:
        """``obj`` as the API returned it after this controller's write (``created``: a create)."""
        key = key_of(obj)
        self._deleted.pop(key, None)
        known = self._written.get(key)
        if known is None or strictly_newer(obj, known[0]):
            self._written[key] = (obj, created or (known is not None and known[1]))

    def learnt(self, obj: JSON, cached: JSON | None) -> bool:
        """An object read from the API (not the watch): kept if strictly newer than what the
        cache and the overlay show. True if it was."""
        if not strictly_newer(obj, self.view(cached, key_of(obj))):
            return False
        self.wrote(obj, created=cached is None)
        return True

    def delete_requested(self, obj: Mapping[str, Any]) -> None:
        key = key_of(obj)
        self._written.pop(key, None)
        self._deleted[key] = uid_of(obj)

    def forget(self, key: Key) -> None:
        self._written.pop(key, None)
        self._deleted.pop(key, None)

    def view(self, cached: JSON | None, key: Key) -> JSON | None:
        """What to believe about ``key`` when the cache holds ``cached``."""
        written = self._written.get(key)
        if written is not None:
            body, shown_alone = written
            if cached is None:
                if shown_alone:
                    return body
                del self._written[key]  # written, then gone
            elif uid_of(body) == uid_of(cached) and strictly_newer(body, cached):
                return body
            else:
                del self._written[key]  # the cache caught up (or holds another incarnation)
        uid = self._deleted.get(key)
        if uid is not None:
            if cached is None or uid_of(cached) != uid:
                del self._deleted[key]
            elif self.policy is DeletePolicy.HIDE:
                return None
            elif _meta(cached).get("deletionTimestamp"):
                del self._deleted[key]
            else:
                return {**cached, "metadata": {**_meta(cached), "deletionTimestamp": DELETE_REQUESTED}}
        return cached

    def pending(self) -> Iterator[tuple[Key, JSON]]:
        """Objects shown although the cache may not have them (creates, learnt objects)."""
        for key, (body, shown_alone) in list(self._written.items()):
            if shown_alone:
                yield key, body
