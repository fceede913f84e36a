"""The ManifestWorkReplicaSet controller's read-your-writes overlay over its works cache (the
runtime's ``Overlay`` with ``DeletePolicy.MARK``: a work whose deletion was requested still counts)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.runtime.overlay import DeletePolicy, Overlay


def obj(name: str, rv: str, uid: str = "u1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "c1", "resourceVersion": rv, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def works_overlay() -> Overlay:
    return Overlay(DeletePolicy.MARK)


# --- read your writes ----------------------------------------------------------------------------


def test_created_object_is_seen_before_the_cache_has_it() -> None:
    rw = works_overlay()
    rw.wrote(obj("w", "5"), created=True)
    assert rw.view(None, ("c1", "w")) == obj("w", "5")
    assert list(rw.pending()) == [(("c1", "w"), obj("w", "5"))]


def test_cache_catching_up_ends_the_overlay() -> None:
    rw = works_overlay()
    rw.wrote(obj("w", "5"), created=True)
    assert rw.view(obj("w", "6"), ("c1", "w")) == obj("w", "6")
    assert rw.view(None, ("c1", "w")) is None


def test_patched_object_hides_the_version_it_replaced() -> None:
    rw = works_overlay()
    rw.wrote(obj("w", "7"))
    assert rw.view(obj("w", "5"), ("c1", "w")) == obj("w", "7")
    assert rw.view(obj("w", "8"), ("c1", "w")) == obj("w", "8")


def test_requested_deletion_shows_the_object_as_being_deleted() -> None:
    rw = works_overlay()
    rw.delete_requested(obj("w", "5"))
    shown = rw.view(obj("w", "5"), ("c1", "w"))
    assert shown is not None and shown["metadata"]["deletionTimestamp"]
    assert rw.view(None, ("c1", "w")) is None
    assert rw.view(obj("w", "9", uid="u2"), ("c1", "w")) == obj("w", "9", uid="u2")
