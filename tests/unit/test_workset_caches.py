"""The controller's read-your-writes overlay and its ManifestWork watch cache (event rules)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from controllers.runtime.kube import MANIFEST_WORKS, Kube
from controllers.workset.operator import ReadYourWrites
from controllers.workset.workcache import WatchedCache, _Gone


def obj(name: str, rv: str, uid: str = "u1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "c1", "resourceVersion": rv, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


# --- read your writes ----------------------------------------------------------------------------


def test_created_object_is_seen_before_the_cache_has_it() -> None:
    rw = ReadYourWrites()
    rw.wrote(None, obj("w", "5"))
    assert rw.view(None, ("c1", "w")) == obj("w", "5")
    assert list(rw.pending_creates()) == [(("c1", "w"), obj("w", "5"))]


def test_cache_catching_up_ends_the_overlay() -> None:
    rw = ReadYourWrites()
    rw.wrote(None, obj("w", "5"))
    assert rw.view(obj("w", "6"), ("c1", "w")) == obj("w", "6")
    assert rw.view(None, ("c1", "w")) is None


def test_patched_object_hides_the_version_it_replaced() -> None:
    rw = ReadYourWrites()
    rw.wrote(obj("w", "5"), obj("w", "7"))
    assert rw.view(obj("w", "5"), ("c1", "w")) == obj("w", "7")
    assert rw.view(obj("w", "8"), ("c1", "w")) == obj("w", "8")


def test_requested_deletion_shows_the_object_as_being_deleted() -> None:
    rw = ReadYourWrites()
    rw.delete_requested(obj("w", "5"))
    shown = rw.view(obj("w", "5"), ("c1", "w"))
    assert shown is not None and shown["metadata"]["deletionTimestamp"]
    assert rw.view(None, ("c1", "w")) is None
    assert rw.view(obj("w", "9", uid="u2"), ("c1", "w")) == obj("w", "9", uid="u2")


# --- watch cache ---------------------------------------------------------------------------------------


def cache() -> tuple[WatchedCache, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    watched = WatchedCache(cast(Kube, None), MANIFEST_WORKS, lambda t, o: seen.append((t, o["metadata"]["resourceVersion"])))
    return watched, seen


def test_events_update_the_cache_and_are_passed_on() -> None:
    watched, seen = cache()
    watched._apply({"type": "ADDED", "object": obj("w", "3")})
    watched._apply({"type": "MODIFIED", "object": obj("w", "4")})
    assert watched.get("w", "c1") == obj("w", "4")
    watched._apply({"type": "DELETED", "object": obj("w", "5")})
    assert watched.get("w", "c1") is None
    assert seen == [("ADDED", "3"), ("MODIFIED", "4"), ("DELETED", "5")]


def test_older_event_than_the_cached_object_is_ignored() -> None:
    watched, seen = cache()
    watched._apply({"type": "MODIFIED", "object": obj("w", "10")})
    watched._apply({"type": "MODIFIED", "object": obj("w", "9")})
    assert watched.get("w", "c1") == obj("w", "10")
    assert seen == [("MODIFIED", "10")]


def test_bookmark_only_moves_the_resource_version() -> None:
    watched, seen = cache()
    watched._apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}})
    assert watched._version == "42" and seen == [] and len(watched) == 0


def test_expired_watch_asks_for_a_new_listing() -> None:
    watched, _ = cache()
    with pytest.raises(_Gone):
        watched._apply({"type": "ERROR", "object": {"code": 410, "reason": "Expired"}})
