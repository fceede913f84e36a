"""The watch history of one resource (ocm_rollout.sandbox.watch_window): capacity that follows the write
rate like kube-apiserver's watch cache, and the resourceVersions a watch can resume from."""

from __future__ import annotations

from dataclasses import dataclass

from ocm_rollout.sandbox.watch_window import WatchWindow


@dataclass
class Ev:
    rv: int
    time: float


def fill(window: WatchWindow[Ev], first_rv: int, count: int, start: float, step: float) -> float:
    """Add `count` events with consecutive resourceVersions, `step` seconds apart; the last time."""
    now = start
    for i in range(count):
        now = start + i * step
        window.add(Ev(first_rv + i, now), now)
    return now


def test_starts_at_the_lower_bound_and_drops_the_oldest_when_full_of_old_events() -> None:
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=1000, min_capacity=4, freshness=75.0)
    fill(window, 1, 4, 0.0, 100.0)  # each event older than the freshness by the next one
    window.add(Ev(5, 1000.0), 1000.0)
    assert window.capacity == 4
    assert [e.rv for e in window.events] == [2, 3, 4, 5]


def test_doubles_while_every_kept_event_is_fresh_up_to_the_upper_bound() -> None:
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=40, min_capacity=4, freshness=75.0)
    fill(window, 1, 100, 0.0, 0.01)  # 100 events within one second
    assert window.capacity == 40
    assert len(window) == 40
    assert window.events[0].rv == 61


def test_halves_when_the_most_recent_quarter_is_older_than_the_freshness() -> None:
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=64, min_capacity=4, freshness=75.0)
    last = fill(window, 1, 64, 0.0, 0.01)
    assert window.capacity == 64
    window.add(Ev(65, last + 500.0), last + 500.0)
    assert window.capacity == 32
    assert len(window) == 32 and window.events[-1].rv == 65
    # Quiet again and again: down to the lower bound, never below.
    now = last + 500.0
    for rv in range(66, 200):
        now += 100.0
        window.add(Ev(rv, now), now)
    assert window.capacity == 4 and len(window) == 4


def test_memory_is_bounded_by_the_upper_bound_whatever_the_number_of_writes() -> None:
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=256)
    fill(window, 1, 20_000, 0.0, 0.001)
    assert len(window) == 256


def test_an_upper_bound_below_the_lower_bound_is_a_fixed_size() -> None:
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=3)
    fill(window, 1, 10, 0.0, 0.001)
    assert [e.rv for e in window.events] == [8, 9, 10]


def test_before_anything_is_dropped_the_window_reaches_back_to_its_start() -> None:
    window: WatchWindow[Ev] = WatchWindow(50, max_capacity=10)
    fill(window, 60, 3, 0.0, 1.0)
    assert window.oldest_resumable() == 50
    assert [e.rv for e in window.since(50) or []] == [60, 61, 62]
    assert [e.rv for e in window.since(61) or []] == [62]
    assert window.since(49) is None


def test_after_a_drop_a_watch_resumes_from_the_oldest_kept_event_minus_one() -> None:
    # As kube-apiserver: "too old resource version: rv (oldest - 1)" below it.
    window: WatchWindow[Ev] = WatchWindow(0, max_capacity=3)
    for rv in (10, 20, 30, 40):
        window.add(Ev(rv, 0.0), 0.0)
    assert [e.rv for e in window.events] == [20, 30, 40]
    assert window.oldest_resumable() == 19
    assert [e.rv for e in window.since(19) or []] == [20, 30, 40]
    assert window.since(18) is None
    assert window.since(40) == []
