"""What a ClusterManagementAddOn pass counts as its computing over the whole fleet (the coalescer's
input, controllers/runtime/coalesce.py): the re-plan after a confirm found newer MCAs counts as the
first plan does (at 10,000 clusters it was half the confirming passes' CPU, unmeasured, so the
next MCA change waited for a pass a third of its real cost)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.controllers.addon import cma_steps, mca_io
from ocm_rollout.controllers.addon.configrollout import ConfigRolloutPlan
from ocm_rollout.controllers.rollout.reservations import Reservations

PLAN_SECONDS = 0.05


def _pass() -> cma_steps.CmaPass:
    p = cma_steps.CmaPass("addon", {"metadata": {"name": "addon"}}, datetime(2024, 5, 1, tzinfo=UTC))
    p.plan = ConfigRolloutPlan(reservations=Reservations({"ns/p": frozenset({"c1"})}))  # a new reservation
    p.mcas = {"c1": {"metadata": {"name": "addon", "namespace": "c1", "resourceVersion": "1"}}}
    return p


def _slow_plan(_ctl: Any, _p: cma_steps.CmaPass) -> ConfigRolloutPlan:
    time.sleep(PLAN_SECONDS)
    return ConfigRolloutPlan()


@pytest.mark.parametrize("lagged", [True, False])
def test_the_re_plan_after_a_confirm_counts_in_the_pass_cost(monkeypatch: pytest.MonkeyPatch, lagged: bool) -> None:
    newer = {"c1": {"metadata": {"name": "addon", "namespace": "c1", "resourceVersion": "2"}}}

    async def confirm_mcas(_ctl: Any, _name: str, _planned: dict[str, Any]) -> dict[str, Any] | None:
        return newer if lagged else None

    monkeypatch.setattr(mca_io, "confirm_mcas", confirm_mcas)
    monkeypatch.setattr(cma_steps, "_plan", _slow_plan)
    p = _pass()
    assert asyncio.run(cma_steps.confirm(None, p)) is None  # type: ignore[arg-type]
    if lagged:
        assert p.mcas == newer
        assert p.computing.seconds >= PLAN_SECONDS
    else:
        assert p.computing.seconds == 0.0

