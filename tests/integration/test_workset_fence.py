"""Two ManifestWorkReplicaSet controllers that overlap never put more clusters in flight than the
strategy allows (the rollout fence, ocm_rollout.controllers.rollout.reservations).

Deterministic: a barrier holds one instance at a chosen point of its pass while the other runs a
whole pass, then lets it go. No agent runs, so every work stays in flight (ToApply) and the bound
is checked on the works as stored, and on every change by a watch-driven monitor.

Without the fence, instance A plans cluster1 and cluster2 (maxConcurrency 2) and is held just
before its creates reach the API; instance B, started meanwhile, sees no work and creates
cluster1 and cluster2 itself (names from generateName); A's creates then land as two more works:
four works in flight, two per cluster.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.client.kube import JSON
from tests.integration.helpers import ControllerThread, wait_for
from tests.integration.test_workset_agents import in_flight_at_most, one_work_per_cluster, start_monitor
from tests.integration.test_workset_env import Env, condition

pytestmark = pytest.mark.integration

PROGRESSIVE_2 = {"type": "Progressive", "progressive": {"maxConcurrency": 2}}


@pytest.fixture
def fence_env(tmp_path: Path, hub_kind: str) -> Iterator[Env]:
    environment = Env(tmp_path, kind=hub_kind)  # a private hub; its own operator is never started
    try:
        yield environment
    finally:
        environment.close()


class Barrier:
    """Holds calls of one coroutine method of a running controller until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        self.passed = 0
        self.lock = threading.Lock()

    def wrap(self, method: Callable[..., Any]) -> Callable[..., Any]:
        async def held(*args: Any, **kwargs: Any) -> Any:
            self.reached.set()
            await asyncio.to_thread(self.release.wait, 60)
            try:
                return await method(*args, **kwargs)
            finally:
                with self.lock:
                    self.passed += 1

        return held


def start(env: Env) -> ControllerThread:
    operator = ControllerThread("workset", env.kubeconfig)
    operator.start()
    return operator


def has_status(env: Env, ns: str) -> bool:
    return condition(env.get_mwrs(ns, "web"), "ManifestworkApplied") is not None


def overlap(env: Env, hold: Callable[[Any, Barrier], None], passes_held: int) -> tuple[list[JSON], list[str]]:
    """Instance A runs until the barrier ``hold`` installs; instance B then runs a whole pass;
    A is released. Returns the works at the end and the monitor's violations."""
    clusters = env.clusters(5)
    ns = env.namespace(env.unique("fence"))
    owner = f"{ns}.web"
    monitor = start_monitor(env, in_flight_at_most(owner, 2), one_work_per_cluster(owner))
    barrier = Barrier()
    first = start(env)
    second: ControllerThread | None = None
    try:
        hold(first.controller, barrier)
        env.placement(ns, "rollout", [clusters])
        env.mwrs(ns, "web", [{"name": "rollout", "rolloutStrategy": PROGRESSIVE_2}])
        assert barrier.reached.wait(30), "instance A never reached the barrier"
        second = start(env)
        wait_for(lambda: has_status(env, ns), what="instance B's first pass")
        barrier.release.set()
        wait_for(lambda: barrier.passed >= passes_held, what="instance A's held calls")
        # Both instances go on reconciling (status, requeues); the works they reach agree.
        wait_for(lambda: len(env.works_of(ns, "web")) >= 2, what="two works")
        works = env.works_of(ns, "web")
    finally:
        first.kill()
        if second is not None:
            second.kill()
        monitor.stop()
    return works, monitor.violations


def test_a_create_held_on_the_wire_lands_as_the_work_the_other_instance_counted(fence_env: Env) -> None:
    """A reserved cluster1 and cluster2 and is held before its creates; B finds the reservations,
    counts them in flight and carries them out under the same names; A's creates then meet
    AlreadyExists."""

    def hold_creates(controller: Any, barrier: Barrier) -> None:
        controller.writer.create = barrier.wrap(controller.writer.create)

    works, violations = overlap(fence_env, hold_creates, passes_held=2)
    assert violations == [], "\n".join(violations[:5])
    assert len(works) == 2 and len({w["metadata"]["namespace"] for w in works}) == 2


def test_a_pass_held_before_reserving_gets_a_conflict_and_plans_again(fence_env: Env) -> None:
    """A planned cluster1 and cluster2 and is held before its reservation write; B reserves and
    creates them; A's reservation, fenced on the MWRS version it planned from, gets 409 and A plans
    again from B's reservations: nothing more goes in flight."""

    def hold_reservation(controller: Any, barrier: Barrier) -> None:
        controller._reserve = barrier.wrap(controller._reserve)

    works, violations = overlap(fence_env, hold_reservation, passes_held=1)
    assert violations == [], "\n".join(violations[:5])
    assert len(works) == 2
