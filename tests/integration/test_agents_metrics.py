"""The simulated clusters' workload metrics follow what their work agents apply: a profile rule
with work matchers counts on a cluster once a matching work's manifests are on it, not when the
work is written, not when its apply fails, and no longer once the work is gone; a cluster whose
agent is silent exposes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.integration.helpers import SimThread, wait_until
from tests.integration.test_agents_env import DEPLOYMENT, WORK, conditions, create_work, get_work

pytestmark = pytest.mark.integration

PROFILE: dict[str, Any] = {
    "defaults": {"applyDelay": "1s", "progressDuration": "200ms", "metrics": {"http_error_ratio": 0.001}},
    "clusters": [
        {"name": "cluster1", "contains": "web:2.0", "metrics": {"http_error_ratio": 0.3}},
        {"name": "cluster3", "unreachable": [{"after": 0, "for": "1h"}]},  # registered, silent
    ],
}
WEB_2 = {**DEPLOYMENT, "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:2.0"}]}}}}


def error_ratios(sim: SimThread) -> dict[str, float]:
    """The series the simulation exposes now, read on its own loop."""
    assert sim.simulation is not None
    simulation = sim.simulation

    async def read() -> dict[str, float]:
        return {s.cluster: s.value for s in simulation.metrics.samples() if s.name == "http_error_ratio"}

    return asyncio.run_coroutine_threadsafe(read(), sim.loop).result(10)


def applied_status(api: Any, name: str) -> str | None:
    work = get_work(api, "cluster1", name)
    applied = conditions(work or {}).get("Applied") or {}
    if applied.get("observedGeneration") != (work or {}).get("metadata", {}).get("generation"):
        return None
    return str(applied.get("status"))


def test_a_work_rule_counts_while_its_work_is_applied(start_sim: Any, sim_api: Any) -> None:
    sim = start_sim(clusters=3, profile=PROFILE)
    # cluster3's agent is silent: like its heartbeats, its metrics are not there to scrape
    wait_until(lambda: error_ratios(sim) == {"cluster1": 0.001, "cluster2": 0.001}, message="the reachable clusters")

    # Nothing reaches the cluster (no such namespace): the rule does not hold.
    create_work(sim_api, "cluster1", "broken", {**WEB_2, "metadata": {"name": "web", "namespace": "nowhere"}})
    wait_until(lambda: applied_status(sim_api, "broken") == "False", message="the broken work's apply failed")
    assert error_ratios(sim)["cluster1"] == 0.001

    # Written, but not applied yet (applyDelay): still the default.
    create_work(sim_api, "cluster1", "web", WEB_2)
    assert error_ratios(sim)["cluster1"] == 0.001
    wait_until(lambda: applied_status(sim_api, "web") == "True", message="web:2.0 applied on cluster1")
    assert error_ratios(sim) == {"cluster1": 0.3, "cluster2": 0.001}

    group, version, plural = WORK
    sim_api.delete_namespaced_custom_object(group, version, "cluster1", plural, "web")
    wait_until(lambda: error_ratios(sim)["cluster1"] == 0.001, message="the default once web:2.0 is gone")


def test_the_workload_metrics_change_before_the_status_that_reports_the_apply(start_sim: Any, sim_api: Any) -> None:
    """A reader who sees Applied=True (the controllers' verification checks read the status, then
    scrape) must already see what the apply brought: the agent applies first and reports after."""
    sim = start_sim(clusters=2, profile=PROFILE)
    wait_until(lambda: error_ratios(sim) == {"cluster1": 0.001, "cluster2": 0.001}, message="both clusters")
    assert sim.simulation is not None
    simulation = sim.simulation
    writer = simulation.writer
    write_status = writer.replace_status
    seen_when_reported: list[float] = []

    async def replace_status(resource: Any, obj: Any, status: Any) -> Any:
        applied = conditions({"status": status}).get("Applied") or {}
        if (obj.get("metadata") or {}).get("name") == "web" and applied.get("status") == "True":
            ratios = {s.cluster: s.value for s in simulation.metrics.samples() if s.name == "http_error_ratio"}
            seen_when_reported.append(ratios["cluster1"])
        return await write_status(resource, obj, status)

    writer.replace_status = replace_status
    create_work(sim_api, "cluster1", "web", WEB_2)
    wait_until(lambda: applied_status(sim_api, "web") == "True", message="web:2.0 applied on cluster1")
    assert seen_when_reported and set(seen_when_reported) == {0.3}
