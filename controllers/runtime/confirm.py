"""Confirming a plan against the API: the objects it was planned from that the API holds newer.

Before a pass puts clusters in flight it confirms what it planned from with the API itself, not
only with its cache (the rollout fence, docs/architecture.md). The MWRS controller's works and the
add-on manager's MCAs are confirmed the same way.

First, from the cache (``caught_up``), when its source is a list+watch cache:

1. read the kind's current resourceVersion from the API (a list of at most one object's
   metadata: ``Runtime.list_version``), after the pass read its owner;
2. wait, for at most ``CATCH_UP_SECONDS``, until the cache's watch has delivered that
   resourceVersion (``Cache.reached``). A watch delivers events in resourceVersion order, so the
   cache then holds every change the API made up to the list, as a full list would show it (or
   a later version): the owner's objects as the cache shows them are the answer, at the price of
   one tiny request instead of the fleet's metadata.

Otherwise (a kopf-fed cache, opaque resourceVersions, or a watch that did not get there in time,
e.g. nothing of that kind changed since):

1. list the owner's objects' metadata (a fraction of the bytes of the objects);
2. when none is newer than the copy planned from (the cache kept up), that is the answer;
3. otherwise read the newer objects in full: one by one (a list of one name in its namespace)
   when they are few (``few``), else all of them in one list.

A fleet of 10,000 in the middle of a rollout nearly always has some object the watch has not
delivered yet; reading those few instead of the whole fleet keeps a confirm O(what changed).
Either way the caller merges what is read by resourceVersion (``overlay.strictly_newer``), so
reading an object one by one, a moment after the metadata list, gives the same or a newer copy
than the full list would have: never an older one. The wait for the watch is only a matter of
cost: whether the cache got there is decided by resourceVersions, never by time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, Protocol, TypeVar

from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.common.wire import name_of, namespace_of
from ocm_rollout.controllers.runtime.overlay import strictly_newer

#: Newer objects read one by one up to this many, or one in ``FEW_SHARE`` of the listed ones when
#: that is more; beyond it, one list of them all costs less.
FEW_AT_LEAST: Final = 8
FEW_SHARE: Final = 32
#: Reads in flight at once when reading one by one.
CONCURRENCY: Final = 16
#: How long a confirm waits for its cache's watch to reach the API's resourceVersion before it
#: lists instead. In a 10,000-cluster rollout on two saturated cores the watch got there within
#: 6 ms every time it got there at all; a quiet kind (a small fleet between two changes of its
#: works) does not get there until its next change, so waiting longer would only delay its pass.
CATCH_UP_SECONDS: Final = 0.05

Key = tuple[str, str]
K = TypeVar("K")
ReadOne = Callable[[str, str], Awaitable[list[JSON]]]
ReadAll = Callable[[], Awaitable[list[JSON]]]


class Versioned(Protocol):
    """A cache that can tell whether it has caught up with a resourceVersion (``cache.Cache``)."""

    def versioned(self) -> bool: ...

    async def reached(self, version: str, timeout: float) -> bool: ...


async def caught_up(cache: Versioned, list_version: Callable[[], Awaitable[str]]) -> bool:
    """Whether ``cache`` holds every change the API made up to now (``list_version`` reads the
    kind's current resourceVersion from the API): see the module docstring. False without a
    request when the cache cannot tell how far it has read."""
    if not cache.versioned():
        return False
    version = await list_version()
    return bool(version) and await cache.reached(version, CATCH_UP_SECONDS)


def few(listed: int) -> int:
    """How many newer objects out of ``listed`` are read one by one rather than by a full list."""
    return max(FEW_AT_LEAST, listed // FEW_SHARE)


def newer_keys(listed: Iterable[JSON], planned: Callable[[Key], JSON | None]) -> list[Key]:
    """The (namespace, name) of each listed object (metadata is enough) newer than the copy
    planned from (``planned``: None when the plan did not know it), in list order."""
    return [
        (namespace_of(obj), name_of(obj)) for obj in listed
        if strictly_newer(obj, planned((namespace_of(obj), name_of(obj))))
    ]


async def read_newer(keys: list[Key], listed: int, read_one: ReadOne, read_all: ReadAll) -> list[JSON]:
    """The full objects to merge for ``keys`` (the newer ones of ``listed`` objects): each read
    alone when they are ``few``, else the full list (which holds them)."""
    if not keys:
        return []
    if len(keys) > few(listed):
        return await read_all()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(namespace: str, name: str) -> list[JSON]:
        async with gate:
            return await read_one(namespace, name)

    wanted = set(keys)
    found: list[JSON] = []
    for objects in await asyncio.gather(*(one(namespace, name) for namespace, name in keys)):
        found.extend(obj for obj in objects if (namespace_of(obj), name_of(obj)) in wanted)
    return found


def merge_newer(
    stored: Iterable[JSON],
    merged: dict[K, JSON],
    key: Callable[[JSON], K],
    learnt: Callable[[JSON], object],
    accept: Callable[[JSON], bool] = lambda _obj: True,
) -> bool:
    """Put into ``merged`` (key -> the copy planned from) each ``stored`` object that ``accept``
    takes and that is strictly newer than the copy under its key, and tell the cache
    (``learnt``); whether any was."""
    changed = False
    for obj in stored:
        k = key(obj)
        if accept(obj) and strictly_newer(obj, merged.get(k)):
            merged[k] = obj
            learnt(obj)
            changed = True
    return changed
