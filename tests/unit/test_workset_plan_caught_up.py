"""In the middle of a rollout a ManifestWorkReplicaSet pass lets its works cache catch up with the
API before it plans (steps.plan), so the plan needs no confirming (steps.confirm): one plan per
pass instead of two. Outside a rollout, or when the cache did not catch up, the pass confirms as
before (runtime/confirm.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from ocm_rollout.controllers.workset import steps
from ocm_rollout.controllers.workset.workbuild import owner_for

KEY = "default/web"


@dataclass
class Works:
    """The controller's works IO: whether its cache catches up, and the calls it got."""

    catches_up: bool
    calls: list[str] = field(default_factory=list)

    async def caught_up(self, _owner: Any) -> bool:
        self.calls.append("caught_up")
        return self.catches_up


def controller(works: Works, widening: set[str]) -> Any:
    async def confirm_owned_works(_owner: Any, _works: Any) -> None:
        works.calls.append("confirm")

    return SimpleNamespace(works_io=works, widening=widening, _confirm_owned_works=confirm_owned_works)


def a_pass() -> steps.Pass:
    return steps.Pass(KEY, {"metadata": {"name": "web", "namespace": "default"}}, owner_for("default", "web"), datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """``steps._plan`` replaced: a plan that puts clusters in flight when ``widens`` says so."""
    shape = {"widens": True}

    def plan(_ctl: Any, p: steps.Pass) -> None:
        reservations = SimpleNamespace(adds_to=lambda _record: shape["widens"])
        p.inputs = SimpleNamespace(record=None)  # type: ignore[assignment]
        p.plans = SimpleNamespace(plan=SimpleNamespace(reservations=reservations))  # type: ignore[assignment]

    monkeypatch.setattr(steps, "_plan", plan)
    return shape


async def test_a_pass_in_the_middle_of_a_rollout_plans_from_a_caught_up_cache_and_confirms_nothing(
    planned: dict[str, bool],
) -> None:
    works = Works(catches_up=True)
    ctl = controller(works, {KEY})
    p = a_pass()
    await steps.plan(ctl, p)
    await steps.confirm(ctl, p)
    assert works.calls == ["caught_up"] and p.caught_up
    assert KEY in ctl.widening


async def test_a_cache_that_did_not_catch_up_is_confirmed(planned: dict[str, bool]) -> None:
    works = Works(catches_up=False)
    ctl = controller(works, {KEY})
    p = a_pass()
    await steps.plan(ctl, p)
    await steps.confirm(ctl, p)
    assert works.calls == ["caught_up", "confirm"]


async def test_the_first_widening_pass_plans_at_once_and_confirms(planned: dict[str, bool]) -> None:
    works = Works(catches_up=True)
    ctl = controller(works, set())
    p = a_pass()
    await steps.plan(ctl, p)
    await steps.confirm(ctl, p)
    assert works.calls == ["confirm"]  # no wait before the plan outside a rollout
    assert KEY in ctl.widening  # the next pass catches up first


async def test_a_pass_that_puts_nothing_in_flight_ends_the_rollout_mode(planned: dict[str, bool]) -> None:
    planned["widens"] = False
    works = Works(catches_up=True)
    ctl = controller(works, {KEY})
    p = a_pass()
    await steps.plan(ctl, p)
    await steps.confirm(ctl, p)
    assert works.calls == ["caught_up"]  # nothing to confirm
    assert KEY not in ctl.widening
