"""The simulated registration agent's heartbeat cadence: every lease duration plus up to a quarter
of it at random, as OCM's agent (``wait.JitterUntil(update, leaseDuration, 0.25, sliding)``); the
first wait after the simulation starts is half a period plus what a running fleet's agent still has
to wait, so a fleet that starts at once renews its leases at its steady rate from then on, with no
wave and no denser first round."""

from __future__ import annotations

import asyncio
import random
import statistics
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from ocm_rollout.client.kube import Kube
from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.registration import (
    LEASE_UPDATE_JITTER,
    cluster_lease,
    first_lease_wait,
    lease_update_wait,
)
from ocm_rollout.sandbox.simulation import Simulation


def test_the_wait_is_the_period_plus_up_to_a_quarter_of_it() -> None:
    assert LEASE_UPDATE_JITTER == 0.25
    assert lease_update_wait(60.0, 0.0) == 60.0
    assert lease_update_wait(60.0, 0.5) == 67.5
    assert lease_update_wait(60.0, 0.999) < 75.0
    assert first_lease_wait(60.0, 0.0) == 30.0
    assert first_lease_wait(60.0, 0.5) < 90.0
    assert first_lease_wait(60.0, 0.999) < 105.0


def test_a_fleet_started_at_once_renews_at_its_steady_rate_from_half_a_period_on() -> None:
    """Every 15 s from 30 s to 10 min, 20,000 agents renew N / 67.5 s (the mean wait) x 15 s leases,
    within 5%: the first round is no denser than the later ones (a uniform first wait over
    [30, 75) s put 1.5x the steady rate in it)."""
    draw = random.Random(11)
    counts: Counter[int] = Counter()
    agents = 20_000
    for _ in range(agents):
        at = first_lease_wait(60.0, draw.random())
        while at < 600.0:
            counts[int(at // 15)] += 1
            at += lease_update_wait(60.0, draw.random())
    steady = agents / 67.5 * 15
    assert counts[0] == counts[1] == 0
    for bucket in range(2, 40):
        assert abs(counts[bucket] - steady) < 0.05 * steady, (bucket * 15, counts[bucket], steady)


def test_each_agent_pass_comes_back_after_a_jittered_lease_period(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Simulation(cast(Kube, None), clusters=400, seed=7)
    renewed: list[str] = []

    async def renew(name: str, now: datetime, period: float) -> None:
        renewed.append(name)

    monkeypatch.setattr(sim, "_renew_lease", renew)

    async def passes() -> list[float | None]:
        return [await sim.reconcile_agent(name) for name in sim.cluster_names()]

    first = [w for w in asyncio.run(passes()) if w is not None]
    assert len(first) == 400 and len(renewed) == 400
    assert all(30.0 <= w < 105.0 for w in first), (min(first), max(first))
    assert max(first) - min(first) > 60.0, "the first renewals spread over more than a period"
    later = [w for w in asyncio.run(passes()) if w is not None]
    assert len(later) == 400 and len(renewed) == 800
    assert all(60.0 <= w < 75.0 for w in later), (min(later), max(later))
    assert max(later) - min(later) > 12.0, "spread over the quarter period"
    assert abs(statistics.mean(later) - 67.5) < 1.5


def test_a_due_heartbeat_goes_through_the_lease_renewer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's renewal is the renewer's merge patch, and the Lease it answers is cached."""
    sim = Simulation(cast(Kube, None), clusters=1, seed=7)
    renewed_at = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    lease = cluster_lease("cluster1", renewed_at)
    lease["metadata"]["resourceVersion"] = "1"
    sim.leases.remember(lease)
    sent: list[tuple[str, str, str]] = []

    async def renew(namespace: str, name: str, renew_time: str) -> dict[str, Any]:
        sent.append((namespace, name, renew_time))
        return {**lease, "metadata": {**lease["metadata"], "resourceVersion": "2"}, "spec": {"renewTime": renew_time}}

    monkeypatch.setattr(sim.renewer, "renew", renew)
    soon = renewed_at + timedelta(seconds=20)  # less than half a period: no renewal
    asyncio.run(sim._renew_lease("cluster1", soon, 60.0))
    assert sent == []
    due = renewed_at + timedelta(seconds=61)
    asyncio.run(sim._renew_lease("cluster1", due, 60.0))
    assert sent == [("cluster1", names.CLUSTER_LEASE_NAME, "2026-01-01T00:01:01.000000Z")]
    cached = sim.leases.get(names.CLUSTER_LEASE_NAME, "cluster1")
    assert cached is not None and cached["spec"]["renewTime"] == "2026-01-01T00:01:01.000000Z"
