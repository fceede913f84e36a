"""Leader election between two `ocm-rollout run` processes on the local hub.

The processes run a tiny probe controller defined in this module (registered through
``OCM_ROLLOUT_EXTRA_CONTROLLERS``): it stamps every labelled ConfigMap with the identity of the
process that handled it, through the same ``Kube`` facade and work-queue hooks the real
controllers use. Each process has its own bearer token, so the hub's request log shows which
process wrote what.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import kopf
import pytest

from ocm_rollout.client.kube import LEASES, Resource
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.controllers.runtime.registry import ControllerContext
from tests.integration.helpers import STARTUP_TIMEOUT, Hub, RunProcess, start_run, wait_until

pytestmark = pytest.mark.integration

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PROBE_LABEL = "ocm-rollout-test/probe"
HANDLED_BY = "ocm-rollout-test/handled-by"
IDENTITY_ENV = "OCM_ROLLOUT_TEST_IDENTITY"
LEASE = "probe-leader"
# Short timings so that a takeover fits in a test; the same ratios as client-go's defaults.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.25
NAMESPACE = "default"


# -- the probe controller (imported by the `ocm-rollout run` processes) ----------------------


def setup(registry: kopf.OperatorRegistry, context: ControllerContext) -> None:
    """Stamp each labelled ConfigMap once with this process's identity."""
    identity = os.environ[IDENTITY_ENV]
    queue: WorkQueue[tuple[str, str]] = WorkQueue("probe", on_depth=context.on_queue_depth)
    task: list[asyncio.Task[None]] = []

    @kopf.on.event("", "v1", "configmaps", labels={PROBE_LABEL: "yes"}, registry=registry, id="probe_events")
    def on_event(body: kopf.Body, **_: Any) -> None:
        if HANDLED_BY not in (body.metadata.annotations or {}):
            queue.add((body.metadata.namespace or "", body.metadata.name or ""))

    async def reconcile(key: tuple[str, str]) -> float | None:
        namespace, name = key
        patch = {"metadata": {"annotations": {HANDLED_BY: identity}}}
        await context.kube.patch(CONFIGMAPS, name, patch, namespace)
        return None

    @kopf.on.startup(registry=registry, id="probe_start")
    async def start(**_: Any) -> None:
        task.append(asyncio.create_task(run_workers(queue, reconcile, workers=1, on_result=context.on_reconcile)))

    @kopf.on.cleanup(registry=registry, id="probe_stop")
    async def stop(**_: Any) -> None:
        queue.shut_down()
        for running in task:
            running.cancel()


# -- the tests --------------------------------------------------------------------------------


def start_candidate(hub: Hub, name: str, processes: list[RunProcess], *extra: str) -> RunProcess:
    proc = start_run(
        name,
        hub.users[name],
        hub.directory,
        "--controllers", "probe",
        "--identity", name,
        "--lease-name", LEASE,
        "--lease-namespace", NAMESPACE,
        "--lease-duration", str(LEASE_DURATION),
        "--renew-deadline", str(RENEW_DEADLINE),
        "--retry-period", str(RETRY_PERIOD),
        *extra,
        env={"OCM_ROLLOUT_EXTRA_CONTROLLERS": f"probe={__name__}", IDENTITY_ENV: name},
    )  # fmt: skip
    processes.append(proc)
    return proc


def start_leader(hub: Hub, processes: list[RunProcess], *extra: str) -> RunProcess:
    """proc-a, started alone, once it holds the Lease."""
    proc = start_candidate(hub, "proc-a", processes, *extra)
    wait_until(lambda: holder(hub) == "proc-a", timeout=STARTUP_TIMEOUT, message="proc-a to lead")
    return proc


def holder(hub: Hub) -> str:
    lease = asyncio.run(hub.kube().get_or_none(LEASES, LEASE, NAMESPACE))
    return "" if lease is None else str((lease.get("spec") or {}).get("holderIdentity") or "")


def create_probes(hub: Hub, names: list[str]) -> None:
    async def create() -> None:
        kube = hub.kube()
        for name in names:
            await kube.create(
                CONFIGMAPS, {"metadata": {"name": name, "labels": {PROBE_LABEL: "yes"}}, "data": {}}, NAMESPACE
            )

    asyncio.run(create())


def handled_by(hub: Hub, names: list[str]) -> dict[str, str]:
    async def read() -> dict[str, str]:
        kube = hub.kube()
        out = {}
        for name in names:
            obj = await kube.get(CONFIGMAPS, name, NAMESPACE)
            out[name] = str(((obj.get("metadata") or {}).get("annotations") or {}).get(HANDLED_BY, ""))
        return out

    return asyncio.run(read())


def configmap_writes(hub: Hub, user: str) -> set[str]:
    return {
        r.name for r in hub.records(user) if r.resource == "configmaps" and r.verb in ("create", "update", "patch", "delete")
    }


def test_only_the_leader_reconciles_and_the_standby_takes_over_within_the_lease_duration(
    run_hub: Hub, processes: list[RunProcess]
) -> None:
    hub = run_hub
    a = start_candidate(hub, "proc-a", processes)
    b = start_candidate(hub, "proc-b", processes)
    first = wait_until(lambda: holder(hub), timeout=STARTUP_TIMEOUT, message="a leader")
    leader, standby = (a, b) if first == "proc-a" else (b, a)
    wait_until(lambda: leader.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the leader's operator")
    # The standby is up and polling the Lease before we start.
    wait_until(lambda: standby.logged("waiting for leadership"), timeout=STARTUP_TIMEOUT, message="the standby")

    before = [f"before-{i}" for i in range(3)]
    create_probes(hub, before)
    wait_until(lambda: all(handled_by(hub, before).values()), timeout=30, message="the leader to handle the probes")
    assert set(handled_by(hub, before).values()) == {leader.name}
    assert configmap_writes(hub, standby.name) == set()

    leader.kill()
    killed_at = time.monotonic()
    wait_until(lambda: holder(hub) == standby.name, timeout=LEASE_DURATION * 4 + 10, message="the standby to take over")
    takeover = time.monotonic() - killed_at
    # The Lease is free one lease duration after the standby last saw it change; the standby
    # then notices at its next (jittered) retry.
    assert takeover <= LEASE_DURATION + 2.2 * RETRY_PERIOD + 2.0, f"took {takeover:.2f}s"

    after = [f"after-{i}" for i in range(3)]
    create_probes(hub, after)
    wait_until(lambda: all(handled_by(hub, after).values()), timeout=30, message="the new leader to handle the probes")
    assert set(handled_by(hub, after).values()) == {standby.name}
    # No object was written by both processes.
    assert configmap_writes(hub, leader.name) & configmap_writes(hub, standby.name) == set()
    assert configmap_writes(hub, leader.name) == set(before)
    assert configmap_writes(hub, standby.name) == set(after)


def test_sigterm_stops_the_leader_cleanly_and_releases_the_lease(
    run_hub: Hub, processes: list[RunProcess]
) -> None:
    hub = run_hub
    a = start_leader(hub, processes)
    wait_until(lambda: a.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the operator")
    assert a.terminate() == 0
    assert holder(hub) == ""
    assert a.logged("lease released")


def test_released_lease_is_taken_over_without_waiting_for_expiry(
    run_hub: Hub, processes: list[RunProcess]
) -> None:
    hub = run_hub
    a = start_leader(hub, processes, "--lease-duration", "60", "--renew-deadline", "40")
    b = start_candidate(hub, "proc-b", processes, "--lease-duration", "60", "--renew-deadline", "40")
    wait_until(lambda: b.logged("waiting for leadership"), timeout=STARTUP_TIMEOUT, message="the standby")
    stopped_at = time.monotonic()
    assert a.terminate() == 0
    wait_until(lambda: holder(hub) == "proc-b", timeout=30, message="proc-b to take the released Lease")
    assert time.monotonic() - stopped_at < 30  # far below the 60 s lease duration


def test_standby_is_ready_and_says_who_leads(
    run_hub: Hub, processes: list[RunProcess]
) -> None:
    import urllib.request

    hub = run_hub
    a = start_leader(hub, processes)
    b = start_candidate(hub, "proc-b", processes)
    address = b.address("health")

    def standby_ready() -> str | None:
        try:
            with urllib.request.urlopen(f"http://{address}/readyz", timeout=5) as response:
                text: str = response.read().decode()
                return text if "leader: proc-a" in text else None
        except OSError:
            return None

    assert "standby" in wait_until(standby_ready, timeout=STARTUP_TIMEOUT, message="the standby's readiness")
    assert a.process.poll() is None


def test_leader_that_loses_its_lease_stops_reconciling_at_once_then_reacquires(
    run_hub: Hub, processes: list[RunProcess]
) -> None:
    hub = run_hub
    a = start_leader(hub, processes)
    wait_until(lambda: a.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the operator")

    # Another candidate (here: the test, as admin) takes the Lease over and never renews it.
    async def usurp() -> None:
        kube = hub.kube()
        lease = await kube.get(LEASES, LEASE, NAMESPACE)
        lease["spec"]["holderIdentity"] = "intruder"
        await kube.replace(LEASES, lease, NAMESPACE)

    asyncio.run(usurp())
    wait_until(lambda: a.logged("leadership lost: stopping the operator now"), timeout=30, message="proc-a to stop acting")
    stopped = len(a.logged("stopping the operator")) + len(a.logged("aborting the operator"))
    assert stopped >= 1
    # While the intruder's Lease is valid, proc-a's controller writes nothing.
    during = [f"during-{i}" for i in range(2)]
    create_probes(hub, during)

    def reacquired() -> bool:
        # Checked at every poll until proc-a leads again: nothing handled in the meantime.
        # Read the probes first: a probe handled before a read that still shows the intruder
        # can only have been handled while the intruder held the Lease.
        handled = any(handled_by(hub, during).values())
        current = holder(hub)
        assert not (handled and current == "intruder"), "proc-a reconciled while another holder had the Lease"
        return current == "proc-a"

    wait_until(reacquired, timeout=LEASE_DURATION * 4 + 10, message="proc-a to take the expired Lease back")
    assert len(a.logged("became leader")) == 2
    wait_until(lambda: all(handled_by(hub, during).values()), timeout=30, message="proc-a to handle the probes once it leads again")
    assert set(handled_by(hub, during).values()) == {"proc-a"}
