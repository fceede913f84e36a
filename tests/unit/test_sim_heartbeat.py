"""The simulated registration agent's heartbeat cadence: every lease duration plus up to a quarter
of it at random, as OCM's agent (``wait.JitterUntil(update, leaseDuration, 0.25, sliding)``); the
first wait after the simulation starts is anywhere from half a period on, so a fleet that starts
at once does not renew its leases in one wave."""

from __future__ import annotations

import asyncio
import statistics
from datetime import datetime
from typing import cast

import pytest

from ocm_rollout.client.kube import Kube
from ocm_rollout.sandbox.agents.registration import LEASE_UPDATE_JITTER, first_lease_wait, lease_update_wait
from ocm_rollout.sandbox.simulation import Simulation


def test_the_wait_is_the_period_plus_up_to_a_quarter_of_it() -> None:
    assert LEASE_UPDATE_JITTER == 0.25
    assert lease_update_wait(60.0, 0.0) == 60.0
    assert lease_update_wait(60.0, 0.5) == 67.5
    assert lease_update_wait(60.0, 0.999) < 75.0
    assert first_lease_wait(60.0, 0.0) == 30.0
    assert first_lease_wait(60.0, 0.999) < 75.0


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
    assert all(30.0 <= w < 75.0 for w in first), (min(first), max(first))
    assert max(first) - min(first) > 40.0, "the first renewals spread over most of a period"
    later = [w for w in asyncio.run(passes()) if w is not None]
    assert len(later) == 400 and len(renewed) == 800
    assert all(60.0 <= w < 75.0 for w in later), (min(later), max(later))
    assert max(later) - min(later) > 12.0, "spread over the quarter period"
    assert abs(statistics.mean(later) - 67.5) < 1.5
