"""The wait of an MCA change before its CMA's pass (controllers/addon/coalesce.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ocm_rollout.client.queue import WorkQueue
from ocm_rollout.controllers.addon.coalesce import Coalescer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_cma_never_passed_waits_the_floor() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    assert coalescer.delay("a") == 0.2


def test_the_wait_is_the_factor_times_the_last_pass_within_floor_and_ceiling() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.05)
    assert coalescer.delay("a") == 0.5
    coalescer.record("a", 0.001)
    assert coalescer.delay("a") == 0.2
    coalescer.record("a", 1.0)
    assert coalescer.delay("a") == 2.0
    assert coalescer.delay("b") == 0.2
    coalescer.forget("a")
    assert coalescer.delay("a") == 0.2


def test_add_queues_the_cma_after_its_wait_and_returns_no_key() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.1)
    assert coalescer.add("a") == []
    assert coalescer.add("") == []
    assert queue._due == {"a": clock.now + 1.0}


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=20))
def test_the_wait_stays_within_floor_and_ceiling(costs: list[float]) -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    for cost in costs:
        coalescer.record("a", cost)
        assert 0.2 <= coalescer.delay("a") <= 2.0
