"""Which ManifestWork events bring the simulated work agent back (ocm_rollout.sandbox.simulation):
not the event of a write the agent itself made (the pass that wrote it went on from it), but
every other one, the add-on framework's writes included."""

from __future__ import annotations

from typing import Any, cast

from ocm_rollout.client.kube import Kube
from ocm_rollout.sandbox.simulation import Simulation


def work(rv: str, name: str = "w1", namespace: str = "cluster1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "uid": "u-" + name}}


def simulation() -> Simulation:
    return Simulation(cast(Kube, None), clusters=2)


def test_the_event_of_the_agents_own_write_queues_no_pass() -> None:
    sim = simulation()
    sim._remember_own(("cluster1", "w1"), work("5"))
    sim.works._apply({"type": "MODIFIED", "object": work("5")})
    assert len(sim.work_queue) == 0


def test_a_later_write_by_someone_else_queues_a_pass() -> None:
    sim = simulation()
    sim._remember_own(("cluster1", "w1"), work("5"))
    sim.works._apply({"type": "MODIFIED", "object": work("5")})
    sim.works._apply({"type": "MODIFIED", "object": work("6")})
    assert len(sim.work_queue) == 1


def test_a_write_the_agent_did_not_make_queues_a_pass_even_when_remembered() -> None:
    sim = simulation()
    sim.works.remember(work("5"))  # as the add-on framework does with a deploy work it wrote
    sim.works._apply({"type": "MODIFIED", "object": work("5")})
    assert len(sim.work_queue) == 1


def test_a_new_work_queues_a_pass() -> None:
    sim = simulation()
    sim.works._apply({"type": "ADDED", "object": work("3")})
    assert len(sim.work_queue) == 1
