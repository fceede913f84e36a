"""The in-process work queue behaves like client-go's workqueue."""

from __future__ import annotations

import asyncio

import pytest

from ocm_rollout.client.queue import QueueShutDown, WorkQueue, run_workers


async def test_adding_a_key_twice_queues_it_once() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"


async def test_key_added_while_processing_is_requeued_after_done() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    key = await q.get()
    q.add("a")
    assert len(q) == 0  # not handed out twice at once
    q.done(key)
    assert len(q) == 1
    assert await q.get() == "a"


async def test_add_after_waits_for_the_delay() -> None:
    fake_now = [100.0]
    q: WorkQueue[str] = WorkQueue("t", clock=lambda: fake_now[0])
    q.add_after("a", 10)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(q.get(), timeout=0.05)
    fake_now[0] = 110.0
    assert await asyncio.wait_for(q.get(), timeout=1) == "a"


async def test_add_after_keeps_the_earliest_time() -> None:
    fake_now = [0.0]
    q: WorkQueue[str] = WorkQueue("t", clock=lambda: fake_now[0])
    q.add_after("a", 5)
    q.add_after("a", 50)
    fake_now[0] = 5.0
    assert await asyncio.wait_for(q.get(), timeout=1) == "a"


async def test_immediate_add_supersedes_a_delayed_one() -> None:
    fake_now = [0.0]
    q: WorkQueue[str] = WorkQueue("t", clock=lambda: fake_now[0])
    q.add_after("a", 60)
    q.add("a")
    assert await asyncio.wait_for(q.get(), timeout=1) == "a"
    q.done("a")
    fake_now[0] = 61.0
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(q.get(), timeout=0.05)


async def test_real_delay_wakes_a_waiting_getter() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add_after("a", 0.02)
    assert await asyncio.wait_for(q.get(), timeout=2) == "a"


def test_backoff_doubles_and_is_capped() -> None:
    q: WorkQueue[str] = WorkQueue("t", base_delay=1.0, max_delay=10.0)
    assert [q.backoff(n) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


async def test_rate_limited_adds_count_failures_and_forget_resets_them() -> None:
    q: WorkQueue[str] = WorkQueue("t", base_delay=0.001)
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    assert q.failures("a") == 2
    q.forget("a")
    assert q.failures("a") == 0


async def test_shutdown_releases_waiting_getters() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shut_down()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(getter, timeout=1)


async def test_depth_is_reported() -> None:
    depths: list[int] = []
    q: WorkQueue[str] = WorkQueue("t", on_depth=lambda _name, depth: depths.append(depth))
    q.add("a")
    q.add("b")
    await q.get()
    assert depths == [1, 2, 1]


async def test_workers_retry_failures_and_honour_requeue_after() -> None:
    q: WorkQueue[str] = WorkQueue("t", base_delay=0.001)
    calls: list[str] = []
    finished = asyncio.Event()
    results: list[BaseException | None] = []

    async def reconcile(key: str) -> float | None:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        if len(calls) == 2:
            return 0.001  # look again soon
        finished.set()
        return None

    q.add("a")
    runner = asyncio.create_task(
        run_workers(q, reconcile, workers=2, on_result=lambda _n, _s, err: results.append(err))
    )
    await asyncio.wait_for(finished.wait(), timeout=5)
    q.shut_down()
    await asyncio.wait_for(runner, timeout=5)
    assert calls == ["a", "a", "a"]
    assert isinstance(results[0], RuntimeError)
    assert results[1:] == [None, None]
    assert q.failures("a") == 0


async def test_one_key_is_never_reconciled_by_two_workers_at_once() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    active = 0
    peak = 0
    count = 0
    done = asyncio.Event()

    async def reconcile(key: str) -> float | None:
        nonlocal active, peak, count
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        q.add(key)  # a watch event arriving mid-reconcile
        active -= 1
        count += 1
        if count == 5:
            done.set()
            q.shut_down()
        return None

    q.add("a")
    await asyncio.wait_for(asyncio.gather(run_workers(q, reconcile, workers=4), done.wait()), timeout=5)
    assert peak == 1


def test_a_key_held_by_retry_after_is_not_run_sooner_by_an_event() -> None:
    now = [100.0]
    queue: WorkQueue[str] = WorkQueue("q", base_delay=0.005, clock=lambda: now[0])
    queue.add_rate_limited("k", at_least=1.0)
    queue.add("k")  # a watch event meanwhile
    queue.add_after("k", 0.2)
    assert len(queue) == 0 and queue.pending() == 1
    now[0] = 101.0
    queue._promote_due()
    assert len(queue) == 1


def test_an_event_supersedes_the_exponential_part_of_a_back_off() -> None:
    now = [100.0]
    queue: WorkQueue[str] = WorkQueue("q", base_delay=10.0, clock=lambda: now[0])
    queue.add_rate_limited("k")
    queue.add("k")
    assert len(queue) == 1


def test_a_key_dirtied_during_a_throttled_pass_waits_for_the_retry_after() -> None:
    """An event during a pass that meets a 429 marks the key dirty; the worker settles the pass
    (the Retry-After hold) before done() re-adds it, so the dirty key is not run at once."""

    class Throttled(Exception):
        retry_after = 1.0

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue("q", base_delay=0.005)
        runs: list[float] = []

        async def reconcile(key: str) -> None:
            runs.append(asyncio.get_running_loop().time())
            if len(runs) == 1:
                queue.add(key)  # a watch event while the pass runs
                raise Throttled()

        def settle(q: WorkQueue[str], key: str, result: object, error: BaseException | None) -> None:
            if error is not None:
                q.add_rate_limited(key, at_least=float(getattr(error, "retry_after", 0.0)))

        queue.add("k")
        task = asyncio.create_task(run_workers(queue, reconcile, workers=2, settle=settle))
        await asyncio.sleep(1.3)
        queue.shut_down()
        await task
        assert len(runs) == 2 and runs[1] - runs[0] >= 0.95

    asyncio.run(scenario())


def test_a_delay_queued_before_a_retry_after_does_not_run_the_key_sooner() -> None:
    """A trigger's ``add_after`` (e.g. a coalescing delay of 0.1 s) queued while a pass runs,
    then the pass meets a 429 with Retry-After 1 s: the earlier delayed entry must not bring the
    key back before the hold ends."""
    now = [100.0]
    queue: WorkQueue[str] = WorkQueue("q", base_delay=0.005, clock=lambda: now[0])
    queue.add("k")
    assert asyncio.run(queue.get()) == "k"  # a pass starts
    queue.add_after("k", 0.1)  # an event's delayed trigger during the pass
    queue.add_rate_limited("k", at_least=1.0)  # the pass met a 429
    queue.done("k")
    now[0] = 100.2
    queue._promote_due()
    assert len(queue) == 0 and queue.pending() == 1
    now[0] = 101.0
    queue._promote_due()
    assert len(queue) == 1


async def test_a_key_coming_due_wakes_one_of_many_waiting_getters() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    getters = [asyncio.create_task(q.get()) for _ in range(8)]
    await asyncio.sleep(0.01)  # all waiting
    looks = []
    promote = q._promote_due

    def counted() -> float | None:
        looks.append(1)
        return promote()

    q._promote_due = counted  # type: ignore[method-assign]
    q.add_after("a", 0.02)
    done, pending = await asyncio.wait(getters, timeout=1, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.sleep(0.05)
    assert [t.result() for t in done] == ["a"] and len(pending) == 7
    # the timer looks once and releases one getter, which looks once more: not eight getters
    assert len(looks) <= 3, len(looks)
    q.shut_down()
    await asyncio.gather(*pending, return_exceptions=True)


async def test_ready_keys_reach_as_many_waiting_getters() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    getters = [asyncio.create_task(q.get()) for _ in range(5)]
    await asyncio.sleep(0)
    for key in "abcde":
        q.add(key)
    got = await asyncio.wait_for(asyncio.gather(*getters), timeout=1)
    assert sorted(got) == list("abcde")


async def test_a_released_getter_cancelled_before_it_runs_passes_the_key_on() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # releases the first getter
    first.cancel()
    assert await asyncio.wait_for(second, timeout=1) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_sooner_delay_moves_the_timer_forward() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add_after("late", 30)
    q.add_after("soon", 0.02)
    assert await asyncio.wait_for(getter, timeout=1) == "soon"
    q.shut_down()
