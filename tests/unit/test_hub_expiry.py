"""Deadlines of objects with a time to live (ocm_rollout.sandbox.expiry), as the hub expires Events."""

from __future__ import annotations

from ocm_rollout.sandbox.expiry import Expiry


def test_keys_come_due_in_deadline_order_and_are_forgotten() -> None:
    expiry: Expiry[str] = Expiry()
    expiry.touch("b", 20.0)
    expiry.touch("a", 10.0)
    expiry.touch("c", 30.0)
    assert expiry.due(5.0) == []
    assert expiry.due(25.0) == ["a", "b"]
    assert expiry.due(25.0) == []
    assert len(expiry) == 1 and expiry.next_deadline() == 30.0


def test_a_new_write_pushes_the_deadline_back() -> None:
    expiry: Expiry[str] = Expiry()
    expiry.touch("a", 10.0)
    expiry.touch("a", 50.0)
    assert expiry.due(20.0) == []
    assert expiry.next_deadline() == 50.0
    assert expiry.due(50.0) == ["a"]


def test_a_deleted_key_never_comes_due() -> None:
    expiry: Expiry[str] = Expiry()
    expiry.touch("a", 10.0)
    expiry.forget("a")
    assert expiry.next_deadline() is None
    assert expiry.due(100.0) == []


def test_touch_says_when_the_deadline_is_the_earliest() -> None:
    expiry: Expiry[str] = Expiry()
    assert expiry.touch("a", 10.0)
    assert not expiry.touch("b", 20.0)
    assert expiry.touch("c", 5.0)


def test_rewriting_the_same_keys_keeps_the_heap_small() -> None:
    expiry: Expiry[int] = Expiry()
    for step in range(10_000):
        expiry.touch(step % 10, float(step))
    assert len(expiry) == 10
    assert len(expiry._heap) <= 2 * 10 + 64 + 1
