"""The list-and-watch cache (ocm_rollout.client.watchcache): the cache rule, watch events,
listings and the decoding of the watch stream."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest

from ocm_rollout.client.kube import MANIFEST_WORKS, Kube
from ocm_rollout.client.watchcache import Key, WatchCache, WatchGone, apply_event, key_of, newer


def obj(name: str, rv: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, **extra}


def work(name: str, rv: str, uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "c1", "resourceVersion": rv, "uid": uid}}


# --- the cache rule ------------------------------------------------------------------------------


def test_added_object_is_cached_by_namespace_and_name() -> None:
    cache: dict[Key, dict[str, Any]] = {}
    assert apply_event(cache, "ADDED", obj("a", "1")) is None
    assert key_of(obj("a", "1")) == ("ns", "a")
    assert cache[("ns", "a")]["metadata"]["resourceVersion"] == "1"


def test_modified_object_replaces_and_returns_the_previous_one() -> None:
    cache = {("ns", "a"): obj("a", "1")}
    previous = apply_event(cache, "MODIFIED", obj("a", "2", spec=1))
    assert previous is not None and previous["metadata"]["resourceVersion"] == "1"
    assert cache[("ns", "a")]["spec"] == 1


def test_stale_event_leaves_a_newer_cached_copy_alone() -> None:
    cache = {("ns", "a"): obj("a", "10")}
    apply_event(cache, "MODIFIED", obj("a", "9"))
    assert cache[("ns", "a")]["metadata"]["resourceVersion"] == "10"


def test_resource_versions_compare_as_numbers() -> None:
    assert newer(obj("a", "10"), obj("a", "9"))
    assert not newer(obj("a", "9"), obj("a", "10"))


def test_deleted_object_leaves_the_cache() -> None:
    cache = {("ns", "a"): obj("a", "3")}
    apply_event(cache, "DELETED", obj("a", "4"))
    assert cache == {}


def test_cluster_scoped_objects_have_an_empty_namespace() -> None:
    assert key_of({"metadata": {"name": "cluster1"}}) == ("", "cluster1")


# --- watch events --------------------------------------------------------------------------------


def cache() -> tuple[WatchCache, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    watched = WatchCache(
        cast(Kube, None), MANIFEST_WORKS, on_change=lambda t, o, _p: seen.append((t, o["metadata"]["resourceVersion"]))
    )
    return watched, seen


def test_events_update_the_cache_and_are_passed_on() -> None:
    watched, seen = cache()
    watched._apply({"type": "ADDED", "object": work("w", "3")})
    watched._apply({"type": "MODIFIED", "object": work("w", "4")})
    assert watched.get("w", "c1") == work("w", "4")
    watched._apply({"type": "DELETED", "object": work("w", "5")})
    assert watched.get("w", "c1") is None
    assert seen == [("ADDED", "3"), ("MODIFIED", "4"), ("DELETED", "5")]


def test_older_event_than_the_cached_object_is_ignored() -> None:
    watched, seen = cache()
    watched._apply({"type": "MODIFIED", "object": work("w", "10")})
    watched._apply({"type": "MODIFIED", "object": work("w", "9")})
    assert watched.get("w", "c1") == work("w", "10")
    assert seen == [("MODIFIED", "10")]


def test_bookmark_only_moves_the_resource_version() -> None:
    watched, seen = cache()
    watched._apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}})
    assert watched._version == "42" and seen == [] and len(watched) == 0


def test_expired_watch_asks_for_a_new_listing() -> None:
    watched, _ = cache()
    with pytest.raises(WatchGone):
        watched._apply({"type": "ERROR", "object": {"code": 410, "reason": "Expired"}})


def test_remembered_write_is_kept_over_the_older_events_still_coming() -> None:
    watched, seen = cache()
    watched.remember(work("w", "7"))
    watched._apply({"type": "MODIFIED", "object": work("w", "6")})
    assert watched.get("w", "c1") == work("w", "7")
    assert seen == []


def test_callbacks_get_the_previous_object() -> None:
    previous: list[Any] = []
    watched = WatchCache(cast(Kube, None), MANIFEST_WORKS, on_change=lambda _t, _o, p: previous.append(p))
    watched._apply({"type": "ADDED", "object": work("w", "3")})
    watched._apply({"type": "MODIFIED", "object": work("w", "4")})
    assert previous == [None, work("w", "3")]


# --- listings ------------------------------------------------------------------------------------


class PagedKube:
    """Answers list requests from ``pages`` (one listing per entry, each a list of pages)."""

    def __init__(self, listings: list[list[dict[str, Any]]]) -> None:
        self.listings = listings
        self.queries: list[dict[str, str]] = []

    async def request(self, method: str, path: str, *, query: dict[str, str]) -> dict[str, Any]:
        self.queries.append(dict(query))
        pages = self.listings[0]
        page = pages[int(query.get("continue") or 0)]
        if not page["metadata"].get("continue"):
            self.listings.pop(0)
        return page


def page(rv: str, *items: dict[str, Any], more: str = "") -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv, "continue": more}, "items": list(items)}


def listed(kube: PagedKube, label_selector: str | None = None) -> tuple[WatchCache, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    watched = WatchCache(
        cast(Kube, kube),
        MANIFEST_WORKS,
        label_selector=label_selector,
        on_change=lambda t, o, _p: seen.append((t, o["metadata"]["name"])),
    )
    return watched, seen


async def test_first_listing_reads_every_page_and_reports_objects_with_an_empty_type() -> None:
    kube = PagedKube([[page("5", work("a", "1"), more="1"), page("6", work("b", "2"))]])
    watched, seen = listed(kube)
    await watched._list()
    assert seen == [("", "a"), ("", "b")]
    assert len(watched) == 2 and watched._version == "6"
    assert [q.get("continue") for q in kube.queries] == [None, "1"]


async def test_listing_again_reports_what_changed_meanwhile() -> None:
    kube = PagedKube([[page("5", work("a", "1"), work("b", "2"))], [page("9", work("a", "8"), work("c", "9"))]])
    watched, seen = listed(kube)
    await watched._list()
    seen.clear()
    await watched._list()
    assert sorted(seen) == [("ADDED", "c"), ("DELETED", "b"), ("MODIFIED", "a")]


async def test_a_remembered_write_whose_event_a_410_lost_is_told_by_the_next_listing() -> None:
    # The caller wrote a@7 and remembered it (no callback); the watch broke with 410 before the
    # event of a@7 came. The next listing returns a@7: the same version as the cache holds, but
    # not the one the callbacks last heard of, so they are told (else a controller's own index
    # of these objects keeps a@1 for good).
    kube = PagedKube([[page("5", work("a", "1"))], [page("9", work("a", "7"))]])
    watched, seen = listed(kube)
    await watched._list()
    watched.remember(work("a", "7"))
    seen.clear()
    await watched._list()
    assert seen == [("MODIFIED", "a")]


async def test_a_remembered_object_never_told_is_added_by_the_next_listing() -> None:
    kube = PagedKube([[page("5")], [page("9", work("new", "8"))]])
    watched, seen = listed(kube)
    await watched._list()
    watched.remember(work("new", "8"))
    await watched._list()
    assert seen == [("ADDED", "new")]


async def test_listing_passes_the_label_selector() -> None:
    kube = PagedKube([[page("5")]])
    watched, _ = listed(kube, label_selector="app=x")
    await watched._list()
    assert kube.queries[0]["labelSelector"] == "app=x"


# --- the watch stream ----------------------------------------------------------------------------


class Chunks:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks


def test_events_split_across_chunks_are_decoded_whole() -> None:
    raw = Chunks(b'{"type": "ADDED", "object": {}}\n{"type": "MOD', b'IFIED", "object": {}}\n\n', b"")
    types = [[event["type"] for event in batch] for batch in WatchCache._batches(raw)]
    assert types == [["ADDED"], ["MODIFIED"]]


# --- the namespace index -------------------------------------------------------------------------


def in_namespace(name: str, namespace: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


@pytest.mark.parametrize("by_namespace", [True, False])
def test_keys_in_a_namespace_follow_events_and_remembered_writes(by_namespace: bool) -> None:
    watched = WatchCache(cast(Kube, None), MANIFEST_WORKS, by_namespace=by_namespace)
    watched._apply({"type": "ADDED", "object": in_namespace("a", "c1", "1")})
    watched._apply({"type": "ADDED", "object": in_namespace("b", "c2", "2")})
    watched.remember(in_namespace("c", "c1", "3"))
    assert watched.keys_in("c1") == [("c1", "a"), ("c1", "c")]
    watched._apply({"type": "DELETED", "object": in_namespace("a", "c1", "4")})
    watched._apply({"type": "MODIFIED", "object": in_namespace("b", "c2", "1")})  # older: ignored
    assert watched.keys_in("c1") == [("c1", "c")]
    assert watched.keys_in("c2") == [("c2", "b")]
    assert watched.keys_in("c3") == []


async def test_keys_in_a_namespace_are_those_of_the_last_listing() -> None:
    kube = PagedKube([[page("5", work("a", "1"), work("b", "2"))], [page("9", work("b", "8"))]])
    watched = WatchCache(cast(Kube, kube), MANIFEST_WORKS, by_namespace=True)
    await watched._list()
    assert watched.keys_in("c1") == [("c1", "a"), ("c1", "b")]
    await watched._list()
    assert watched.keys_in("c1") == [("c1", "b")]


# --- the transform -------------------------------------------------------------------------------


def stamped(body: dict[str, Any]) -> dict[str, Any]:
    """A transform that marks what it rewrote (and changes nothing else)."""
    return {**body, "transformed": True}


async def test_the_transform_rewrites_every_object_cached_listed_watched_or_remembered() -> None:
    kube = PagedKube([[page("5", work("listed", "1"))]])
    told: list[dict[str, Any]] = []
    watched = WatchCache(cast(Kube, kube), MANIFEST_WORKS, on_change=lambda _t, o, _p: told.append(o), transform=stamped)
    await watched._list()
    watched._apply({"type": "ADDED", "object": work("watched", "6")})
    watched.remember(work("remembered", "7"))
    assert all(body.get("transformed") for body in watched.items()) and len(watched) == 3
    assert [body["metadata"]["name"] for body in told] == ["listed", "watched"]
    assert all(body.get("transformed") for body in told)  # callbacks see what the cache holds


def test_an_event_older_than_the_cache_is_not_transformed() -> None:
    calls: list[str] = []

    def counted(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(body["metadata"]["resourceVersion"])
        return body

    watched = WatchCache(cast(Kube, None), MANIFEST_WORKS, transform=counted)
    watched._apply({"type": "ADDED", "object": work("w", "5")})
    watched._apply({"type": "MODIFIED", "object": work("w", "4")})
    watched._apply({"type": "BOOKMARK", "object": work("w", "9")})
    assert calls == ["5"]


# --- how far the cache has read ------------------------------------------------------------------


async def test_a_listed_cache_has_reached_its_listing_and_older_versions_at_once() -> None:
    watched, _ = listed(PagedKube([[page("6", work("a", "1"))]]))
    assert watched.version == "" and not await watched.reached("1", 0.01)  # not listed yet
    await watched._list()
    assert watched.version == "6"
    assert await watched.reached("6", 0.0) and await watched.reached("2", 0.0)
    assert not await watched.reached("7", 0.01)
    assert watched._waiters == []  # a wait that timed out leaves nothing behind


async def test_a_remembered_write_is_not_progress_of_the_watch() -> None:
    """Only what the watch delivered counts: a write the caller remembered says nothing of the
    other objects' changes up to its version."""
    watched, _ = listed(PagedKube([[page("6")]]))
    await watched._list()
    watched.remember(work("mine", "9"))
    assert not await watched.reached("9", 0.01)


async def test_opaque_resource_versions_are_never_reached() -> None:
    watched, _ = listed(PagedKube([[page("6")]]))
    await watched._list()
    assert not await watched.reached("a1b2", 0.01)
    watched._version = "opaque"
    assert not await watched.reached("1", 0.01)


class GatedStream:
    """A watch response whose chunks come one by one as the test releases them."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.gates = [threading.Event() for _ in chunks]
        self.closed = threading.Event()

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        for chunk, gate in zip(self.chunks, self.gates, strict=True):
            while not gate.wait(0.01):
                if self.closed.is_set():
                    return
            yield chunk
        self.closed.wait(5)

    def release_conn(self) -> None:
        self.closed.set()

    def shutdown(self) -> None:
        self.closed.set()


def event(event_type: str, body: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": body}).encode() + b"\n"


async def test_reached_waits_until_the_watch_delivers_that_version_and_its_changes_are_cached() -> None:
    watched, _ = listed(PagedKube([[page("5", work("a", "1"))]]))
    await watched._list()
    raw = GatedStream(event("MODIFIED", work("a", "6")), event("MODIFIED", work("b", "8", uid="u2")))
    watched._open = lambda: raw  # type: ignore[method-assign]
    watching = asyncio.create_task(watched._watch())
    try:
        waiting = asyncio.create_task(watched.reached("8", 5.0))
        raw.gates[0].set()
        await asyncio.sleep(0.2)
        assert watched.version == "6" and not waiting.done()  # the watch is at 6: not there yet
        raw.gates[1].set()
        assert await waiting
        assert watched.get("b", "c1") is not None  # the change at 8 is cached when it answers
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


async def test_a_bookmark_is_progress_too() -> None:
    watched, _ = listed(PagedKube([[page("5")]]))
    await watched._list()
    raw = GatedStream(event("BOOKMARK", {"metadata": {"resourceVersion": "12"}}))
    watched._open = lambda: raw  # type: ignore[method-assign]
    watching = asyncio.create_task(watched._watch())
    try:
        waiting = asyncio.create_task(watched.reached("10", 5.0))
        raw.gates[0].set()
        assert await waiting
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
