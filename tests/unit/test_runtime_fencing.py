"""The lease fence on the write path (ocm_rollout.client.fencing): a leader sends writes only
until its renew deadline, each with the time left before a successor could act; the elector
grants it at every successful renewal and revokes it when leadership ends; ``Kube`` refuses a
fenced write without sending anything."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.client.fencing import UNFENCED, LeaseLost, WriteFence
from ocm_rollout.client.kube import DEFAULT_REQUEST_TIMEOUT, MANIFEST_WORKS, Kube
from ocm_rollout.controllers.runtime.leader import LeaderElector, LeaseTimings
from tests.unit.helpers import FakeClock
from tests.unit.test_leader_elector import MemoryLeaseStore

TIMINGS = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


def test_a_fence_never_granted_refuses_every_write() -> None:
    with pytest.raises(LeaseLost):
        WriteFence(FakeClock(1000.0)).admit()


def test_a_granted_fence_admits_until_the_renew_deadline_with_the_time_left_to_land() -> None:
    clock = FakeClock(1000.0)
    fence = WriteFence(clock)
    fence.grant(clock.now, renew_deadline=10.0, lease_duration=15.0)
    clock.now += 9.5
    assert fence.admit() == pytest.approx(5.5)  # answered before a successor may act
    clock.now += 0.5
    with pytest.raises(LeaseLost):
        fence.admit()


def test_a_revoked_fence_refuses_at_once() -> None:
    clock = FakeClock(1000.0)
    fence = WriteFence(clock)
    fence.grant(clock.now, renew_deadline=10.0, lease_duration=15.0)
    fence.revoke()
    with pytest.raises(LeaseLost):
        fence.admit()


def test_without_leader_election_nothing_is_fenced() -> None:
    assert UNFENCED.admit() is None


async def test_the_elector_grants_on_renewal_and_the_fence_closes_at_the_deadline_by_itself() -> None:
    """The renewals start failing and nobody steps the elector again: the fence still closes at
    the renew deadline, measured from the last renewal that succeeded."""
    store = MemoryLeaseStore()
    wall = [datetime(2026, 1, 1, tzinfo=UTC)]
    mono = FakeClock(1000.0)
    fence = WriteFence(mono)
    elector = LeaderElector(store, "me", TIMINGS, clock=lambda: wall[0], fence=fence)
    await elector.step()
    assert elector.is_leader
    mono.now += 2.0
    wall[0] += timedelta(seconds=2)
    await elector.step()  # renewed at mono 1002
    store.failing = True
    mono.now += 2.0
    wall[0] += timedelta(seconds=2)
    await elector.step()  # fails: no new grant
    assert fence.admit() == pytest.approx(1002.0 + 15.0 - 1004.0)
    mono.now = 1002.0 + 10.0
    with pytest.raises(LeaseLost):
        fence.admit()


async def test_the_elector_revokes_the_fence_when_another_holder_wins_and_on_release() -> None:
    store = MemoryLeaseStore()
    wall = [datetime(2026, 1, 1, tzinfo=UTC)]
    fence = WriteFence(FakeClock(1000.0))
    elector = LeaderElector(store, "me", TIMINGS, clock=lambda: wall[0], fence=fence)
    await elector.step()
    fence.admit()
    await elector.release()
    with pytest.raises(LeaseLost):
        fence.admit()


class RecordingClient:
    """Stands in for the kubernetes ApiClient: records what would be sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def param_serialize(self, **kwargs: Any) -> tuple[Any, ...]:
        return (kwargs["method"], kwargs["resource_path"])

    def call_api(self, method: str, path: str, _request_timeout: Any = None) -> Any:
        self.sent.append((method, _request_timeout))

        class Answer:
            status = 200
            reason = "OK"

            @staticmethod
            def read() -> bytes:
                return b"{}"

        return Answer()


def test_kube_sends_no_write_once_the_fence_is_closed_but_still_reads() -> None:
    client = RecordingClient()
    kube = Kube(client, fence=WriteFence(FakeClock(1000.0)))  # type: ignore[arg-type]
    with pytest.raises(LeaseLost):
        kube.request_sync("POST", MANIFEST_WORKS.path("cluster1"), body={})
    kube.request_sync("GET", MANIFEST_WORKS.path("cluster1"))
    assert client.sent == [("GET", DEFAULT_REQUEST_TIMEOUT)]


def test_kube_gives_each_admitted_write_the_time_left_before_a_successor() -> None:
    client = RecordingClient()
    clock = FakeClock(1000.0)
    fence = WriteFence(clock)
    fence.grant(clock.now, renew_deadline=10.0, lease_duration=15.0)
    clock.now += 4.0
    Kube(client, fence=fence).request_sync("PATCH", MANIFEST_WORKS.path("c", "w"), body={})  # type: ignore[arg-type]
    assert client.sent == [("PATCH", pytest.approx(11.0))]
