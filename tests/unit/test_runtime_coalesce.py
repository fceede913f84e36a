"""The wait of a child's change before its owner's pass (controllers/runtime/coalesce.py)."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from ocm_rollout.client.queue import WorkQueue
from ocm_rollout.controllers.runtime.coalesce import Coalescer, PassCost
from tests.unit.helpers import FakeClock


def test_an_owner_never_passed_waits_the_floor() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=FakeClock()), floor=0.2, factor=10, ceiling=2)
    assert coalescer.delay("a") == 0.2


def test_the_wait_is_the_factor_times_the_last_pass_within_floor_and_ceiling() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=FakeClock()), floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.05)
    assert coalescer.delay("a") == 0.5
    coalescer.record("a", 0.001)
    assert coalescer.delay("a") == 0.2
    coalescer.record("a", 1.0)
    assert coalescer.delay("a") == 2.0
    assert coalescer.delay("b") == 0.2
    coalescer.forget("a")
    assert coalescer.delay("a") == 0.2


def test_add_queues_each_owner_after_its_wait_and_returns_no_key() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.1)
    assert coalescer.add(["a", "b"]) == []
    assert coalescer.add([""]) == []
    assert queue._due == {"a": clock.now + 1.0, "b": clock.now + 0.2}


def test_with_no_floor_an_owner_never_passed_is_queued_at_once() -> None:
    """The ManifestWorkReplicaSet controller's setting: no wait until a pass has cost something."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("workset", clock=clock)
    coalescer = Coalescer(queue, floor=0.0, factor=10, ceiling=2)
    coalescer.add(["ns/a"])
    assert queue._due == {} and queue._ready_set == {"ns/a"}
    coalescer.record("ns/b", 0.01)
    coalescer.add(["ns/b"])
    assert queue._due == {"ns/b": clock.now + 0.1}


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=20))
def test_the_wait_stays_within_floor_and_ceiling(costs: list[float]) -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=FakeClock()), floor=0.2, factor=10, ceiling=2)
    for cost in costs:
        coalescer.record("a", cost)
        assert 0.2 <= coalescer.delay("a") <= 2.0


def test_a_pass_cost_adds_up_its_measured_sections_also_one_that_raised() -> None:
    cost = PassCost()
    with cost.measure():
        time.sleep(0.01)
    first = cost.seconds
    assert first >= 0.01
    try:
        with cost.measure():
            time.sleep(0.01)
            raise ValueError("a step failed")
    except ValueError:
        pass
    assert cost.seconds >= first + 0.01


def test_the_wait_counts_from_the_end_of_the_last_pass() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.1)  # ended at 100.0: the next pass no sooner than 101.0
    clock.now = 100.7
    assert abs(coalescer.delay("a") - 0.3) < 1e-9
    clock.now = 100.95
    assert coalescer.delay("a") == 0.2  # never less than the floor
    clock.now = 105.0
    assert coalescer.delay("a") == 0.2  # long idle: the floor only


def test_a_change_heard_during_a_pass_waits_for_its_end() -> None:
    """Changes streaming in while a pass runs do not start the next one as soon as it ends:
    they wait factor times its computing after its end (here 1 s), at most the ceiling after
    the first of them."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    cost = PassCost()
    with coalescer.passing("a", cost):
        clock.now = 100.3
        coalescer.add(["a"])
        clock.now = 100.5
        coalescer.add(["a", "b"])
        assert queue._due == {"b": 100.7}  # another owner is not held
        cost.seconds = 0.1
        clock.now = 100.6
    assert queue._due == {"a": 101.6, "b": 100.7}
    with coalescer.passing("c", cost):
        clock.now = 101.0
        coalescer.add(["c"])
        cost.seconds = 0.5  # 5 s after the end, but at most 2 s after the change
        clock.now = 101.5
    assert queue._due["c"] == 103.0


def test_a_pass_that_raised_still_queues_what_it_held() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    try:
        with coalescer.passing("a", PassCost()):
            coalescer.add(["a"])
            raise RuntimeError("the pass failed")
    except RuntimeError:
        pass
    assert queue._due == {"a": 100.2}
    assert coalescer.running == {}


def test_a_pass_without_changes_queues_nothing_and_a_forgotten_owner_holds_nothing() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    with coalescer.passing("a", PassCost()):
        pass
    assert queue._due == {} and not queue._ready_set
    with coalescer.passing("a", PassCost()):
        coalescer.add(["a"])
        coalescer.forget("a")  # the owner went
        coalescer.add(["a"])
    assert "a" in queue._due  # queued afresh once forgotten: the pass finds it gone
