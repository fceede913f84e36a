"""The leader-election I/O loop against an in-memory Lease store with API-server semantics."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from ocm_rollout.controllers.runtime.leader import (
    LeaderElector,
    LeaseAPIError,
    LeaseRecord,
    LeaseTimings,
    StoredLease,
)

FAST = LeaseTimings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)


class MemoryLeaseStore:
    """One Lease with resourceVersion-checked writes; can fail or hang on demand."""

    def __init__(self) -> None:
        self.name = "lock"
        self.namespace = "ns"
        self.lease: StoredLease | None = None
        self.version = 0
        self.failing = False
        self.hanging = False
        self.writes: list[tuple[float, str]] = []  # (monotonic time, holder written)

    async def _gate(self) -> None:
        if self.hanging:
            await asyncio.Event().wait()
        if self.failing:
            raise LeaseAPIError(503, "unavailable")

    async def get(self) -> StoredLease | None:
        await self._gate()
        return None if self.lease is None else replace(self.lease)

    async def create(self, record: LeaseRecord) -> StoredLease:
        await self._gate()
        if self.lease is not None:
            raise LeaseAPIError(409, "already exists")
        return self._store(record)

    async def update(self, record: LeaseRecord, resource_version: str) -> StoredLease:
        await self._gate()
        if self.lease is None:
            raise LeaseAPIError(404, "not found")
        if resource_version != self.lease.resource_version:
            raise LeaseAPIError(409, "conflict")
        return self._store(record)

    def _store(self, record: LeaseRecord) -> StoredLease:
        self.version += 1
        self.lease = StoredLease(record, str(self.version))
        self.writes.append((time.monotonic(), record.holder_identity))
        return replace(self.lease)


async def _within(seconds: float, aw: object) -> object:
    return await asyncio.wait_for(aw, timeout=seconds)  # type: ignore[arg-type]


async def test_of_two_candidates_exactly_one_becomes_leader() -> None:
    store = MemoryLeaseStore()
    a = LeaderElector(store, "a", FAST)
    b = LeaderElector(store, "b", FAST)
    stop = asyncio.Event()
    first_a = asyncio.create_task(a.acquire(stop))
    first_b = asyncio.create_task(b.acquire(stop))
    done, pending = await asyncio.wait({first_a, first_b}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    assert len(done) == 1
    winner, loser = (a, b) if first_a in done else (b, a)
    # The loser keeps waiting for at least several retry periods while the winner renews.
    hold = asyncio.create_task(winner.hold(stop))
    await asyncio.sleep(FAST.retry_period * 5)
    assert winner.is_leader and not loser.is_leader
    assert store.lease is not None and store.lease.record.holder_identity == winner.identity
    stop.set()
    await asyncio.gather(hold, *pending)


async def test_leader_whose_renewals_fail_gives_up_within_the_renew_deadline() -> None:
    store = MemoryLeaseStore()
    changes: list[bool] = []
    leader = LeaderElector(store, "a", FAST, on_change=changes.append)
    stop = asyncio.Event()
    assert await leader.acquire(stop)
    store.failing = True
    started = time.monotonic()
    await _within(10, leader.hold(stop))
    assert not leader.is_leader
    assert time.monotonic() - started <= FAST.renew_deadline + 0.5
    assert changes == [True, False]


async def test_leader_whose_api_calls_hang_gives_up_at_the_renew_deadline() -> None:
    store = MemoryLeaseStore()
    leader = LeaderElector(store, "a", FAST)
    stop = asyncio.Event()
    assert await leader.acquire(stop)
    store.hanging = True
    await _within(10, leader.hold(stop))
    assert not leader.is_leader


async def test_standby_takes_over_only_after_the_lease_duration_once_the_leader_stops_renewing() -> None:
    store = MemoryLeaseStore()
    leader = LeaderElector(store, "a", FAST)
    standby = LeaderElector(store, "b", FAST)
    stop = asyncio.Event()
    assert await leader.acquire(stop)
    last_leader_write = store.writes[-1][0]
    # The leader dies silently: it never writes again.
    assert await _within(20, standby.acquire(stop))
    takeover = store.writes[-1]
    assert takeover[1] == "b"
    assert takeover[0] - last_leader_write >= FAST.lease_duration
    assert store.lease is not None and store.lease.record.lease_transitions == 1


async def test_released_lease_is_taken_over_long_before_it_would_expire() -> None:
    slow_expiry = LeaseTimings(lease_duration=60, renew_deadline=40, retry_period=0.1)
    store = MemoryLeaseStore()
    leader = LeaderElector(store, "a", slow_expiry)
    standby = LeaderElector(store, "b", slow_expiry)
    stop = asyncio.Event()
    assert await leader.acquire(stop)
    waiting = asyncio.create_task(standby.acquire(stop))
    await asyncio.sleep(slow_expiry.retry_period * 3)
    assert not waiting.done()
    assert await leader.release()
    assert await _within(20, waiting)
    assert store.lease is not None and store.lease.record.holder_identity == "b"


async def test_release_reports_leadership_ended() -> None:
    store = MemoryLeaseStore()
    changes: list[bool] = []
    leader = LeaderElector(store, "a", FAST, on_change=changes.append)
    assert await leader.acquire(asyncio.Event())
    await leader.release()
    assert changes == [True, False]
    assert store.lease is not None and store.lease.record.holder_identity == ""


async def test_stop_ends_a_waiting_standby() -> None:
    store = MemoryLeaseStore()
    assert await LeaderElector(store, "a", FAST).acquire(asyncio.Event())
    stop = asyncio.Event()
    waiting = asyncio.create_task(LeaderElector(store, "b", FAST).acquire(stop))
    await asyncio.sleep(FAST.retry_period)
    stop.set()
    assert await _within(10, waiting) is False


async def test_standby_remembers_when_it_last_reached_the_api() -> None:
    store = MemoryLeaseStore()
    assert await LeaderElector(store, "a", FAST).acquire(asyncio.Event())
    standby = LeaderElector(store, "b", FAST)
    await standby.step()
    assert standby.last_contact is not None
    assert standby.observed_holder == "a"


@pytest.mark.parametrize("status", [409, 500])
async def test_failed_acquisition_write_leaves_the_candidate_standing_by(status: int) -> None:
    store = MemoryLeaseStore()
    candidate = LeaderElector(store, "a", FAST)

    async def refuse(record: LeaseRecord) -> StoredLease:
        raise LeaseAPIError(status, "refused")

    store.create = refuse  # type: ignore[method-assign]
    await candidate.step()
    assert not candidate.is_leader
