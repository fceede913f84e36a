"""Background calls (controllers/runtime/background.py): one call per key, every owner that asked
for a running call is queued when it ends, a result is taken once, forgetting an owner cancels
only calls nobody else waits for."""

from __future__ import annotations

import asyncio

from ocm_rollout.controllers.runtime.background import BackgroundCalls


async def test_every_owner_waiting_on_a_call_is_queued_when_it_ends() -> None:
    queued: list[str] = []
    calls: BackgroundCalls[int] = BackgroundCalls(queued.append)
    gate = asyncio.Event()

    async def slow() -> int:
        await gate.wait()
        return 7

    assert calls.start("initialize", "ns/a", slow)
    assert not calls.start("initialize", "ns/b", slow)  # running: b waits for it too
    assert calls.running("initialize")
    gate.set()
    await asyncio.sleep(0.01)
    assert queued == ["ns/a", "ns/b"]
    done = calls.take("initialize")
    assert done is not None and done.ok and done.value == 7
    assert calls.take("initialize") is None


async def test_an_error_is_a_result_and_no_requeue_means_none() -> None:
    queued: list[str] = []
    calls: BackgroundCalls[int] = BackgroundCalls(queued.append)

    async def failing() -> int:
        raise RuntimeError("plugin down")

    calls.start("progress", "ns/a", failing, requeue=False)
    await asyncio.sleep(0.01)
    done = calls.take("progress")
    assert done is not None and not done.ok and str(done.error) == "plugin down"
    assert queued == []


async def test_forgetting_an_owner_cancels_only_what_nobody_else_waits_for() -> None:
    calls: BackgroundCalls[int] = BackgroundCalls(lambda _owner: None)
    never = asyncio.Event()

    async def hung() -> int:
        await never.wait()
        return 0

    calls.start("shared", "ns/a", hung)
    calls.start("shared", "ns/b", hung)
    calls.start(("ns/a", "measure"), "ns/a", hung)
    calls.forget("ns/a")
    await asyncio.sleep(0)
    assert calls.running("shared") and not calls.running(("ns/a", "measure"))
    calls.forget("ns/b")
    await asyncio.sleep(0)
    assert not calls.running("shared")
    await calls.close()
