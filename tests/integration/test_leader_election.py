"""Leader election between two `ocm-rollout run --controllers placement` processes, on each hub.

Each test sets up a small fleet (two clusters in a set bound to a namespace) and creates
Placements there; whoever leads schedules them: it creates their PlacementDecision pages, writes
the decisions into the pages' status and patches the Placements' status. Each process has its own
bearer token, so the hub's request records (``hub.records(user)``) show which process wrote which
Placement and decision page.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from ocm_rollout.api.constants import LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    LEASES,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from tests.integration.helpers import STARTUP_TIMEOUT, Hub, RunProcess, start_run, wait_until

pytestmark = pytest.mark.integration

LEASE = "placement-leader"
# Short timings so that a takeover fits in a test; the same ratios as client-go's defaults.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.25
LEASE_NAMESPACE = "default"
NS = "leader-election"
CLUSTER_SET = "fleet"
CLUSTERS = ["cluster-1", "cluster-2"]
CLUSTER_SET_LABEL = "cluster.open-cluster-management.io/clusterset"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# What the placement controller writes for a Placement (Events aside).
SCHEDULING = frozenset({"placements", "placementdecisions"})


# -- the fleet and what the leader makes of it ------------------------------------------------


@pytest.fixture
def fleet(run_any_hub: Hub) -> Hub:
    """The hub with two clusters in a set bound to ``NS``: every Placement there selects both."""
    api = run_any_hub.api()
    api.create(NAMESPACES, {"metadata": {"name": NS}})
    api.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": CLUSTER_SET}, "spec": {}})
    for name in CLUSTERS:
        labels = {CLUSTER_SET_LABEL: CLUSTER_SET}
        api.create(MANAGED_CLUSTERS, {"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": True}})
    api.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": CLUSTER_SET}, "spec": {"clusterSet": CLUSTER_SET}}, NS)
    return run_any_hub


def create_placements(hub: Hub, names: list[str]) -> None:
    api = hub.api()
    for name in names:
        api.create(PLACEMENTS, {"metadata": {"name": name}, "spec": {}}, NS)


def scheduled(hub: Hub, names: list[str]) -> dict[str, bool]:
    """Per Placement: whether it was scheduled (both clusters in its decision pages and its
    status)."""
    api = hub.api()
    out = {}
    for name in names:
        pages = api.list(PLACEMENT_DECISIONS, NS, f"{LABEL_PLACEMENT}={name}")
        decided = sorted(d.get("clusterName") for p in pages for d in (p.get("status") or {}).get("decisions") or [])
        status = api.get(PLACEMENTS, name, NS).get("status") or {}
        out[name] = decided == CLUSTERS and status.get("numberOfSelectedClusters") == len(CLUSTERS)
    return out


def written(hub: Hub, user: str) -> set[str]:
    """The Placements whose scheduling objects ``user`` wrote: a Placement (its status) or one of
    its decision pages (``<placement>-decision-<n>``; a page is created without a name in the
    request and named by the status write that follows)."""
    out = set()
    for record in hub.records(user):
        if record.verb in WRITES and record.resource in SCHEDULING and record.namespace == NS and record.name:
            out.add(record.name if record.resource == "placements" else record.name.rsplit("-decision-", 1)[0])
    return out


def scheduling_writes(hub: Hub, user: str) -> int:
    """Every write ``user`` sent for Placements and decision pages, named or not."""
    return sum(1 for r in hub.records(user) if r.verb in WRITES and r.resource in SCHEDULING)


def writes_seen(hub: Hub) -> list[str]:
    """Every write of the processes but their Lease's, one line each (shown when a test fails)."""
    return [
        f"{r.user} {r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''} {r.namespace}/{r.name} -> {r.code}"
        for user in ("proc-a", "proc-b")
        for r in hub.records(user)
        if r.verb in WRITES and r.resource != "leases"
    ]


def settle(hub: Hub, user: str, quiet: float = 1.0) -> None:
    """Wait until ``user`` has sent no write (but its Lease renewals) for ``quiet`` seconds: the
    passes its own writes triggered are over, so no write of its is still on its way."""
    seen = [-1, time.monotonic()]

    def quiet_now() -> bool:
        count = sum(1 for r in hub.records(user) if r.verb in WRITES and r.resource != "leases")
        if count != seen[0]:
            seen[0], seen[1] = count, time.monotonic()
        return time.monotonic() - seen[1] >= quiet

    wait_until(quiet_now, timeout=STARTUP_TIMEOUT, message=f"{user}'s writes to settle", state=lambda: writes_seen(hub))


# -- the processes ----------------------------------------------------------------------------


def start_candidate(hub: Hub, name: str, processes: list[RunProcess], *extra: str) -> RunProcess:
    proc = start_run(
        name,
        hub.users[name],
        hub.directory,
        "--controllers", "placement",
        "--identity", name,
        "--lease-name", LEASE,
        "--lease-namespace", LEASE_NAMESPACE,
        "--lease-duration", str(LEASE_DURATION),
        "--renew-deadline", str(RENEW_DEADLINE),
        "--retry-period", str(RETRY_PERIOD),
        *extra,
    )  # fmt: skip
    processes.append(proc)
    return proc


def start_leader(hub: Hub, processes: list[RunProcess], *extra: str) -> RunProcess:
    """proc-a, started alone, once it holds the Lease."""
    proc = start_candidate(hub, "proc-a", processes, *extra)
    wait_until(lambda: holder(hub) == "proc-a", timeout=STARTUP_TIMEOUT, message="proc-a to lead")
    return proc


def holder(hub: Hub) -> str:
    lease = asyncio.run(hub.kube().get_or_none(LEASES, LEASE, LEASE_NAMESPACE))
    return "" if lease is None else str((lease.get("spec") or {}).get("holderIdentity") or "")


# -- the tests --------------------------------------------------------------------------------


def test_only_the_leader_reconciles_and_the_standby_takes_over_within_the_lease_duration(
    fleet: Hub, processes: list[RunProcess]
) -> None:
    hub = fleet
    a = start_candidate(hub, "proc-a", processes)
    b = start_candidate(hub, "proc-b", processes)
    first = wait_until(lambda: holder(hub), timeout=STARTUP_TIMEOUT, message="a leader")
    leader, standby = (a, b) if first == "proc-a" else (b, a)
    wait_until(lambda: leader.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the leader's operator")
    # The standby is up and polling the Lease before we start.
    wait_until(lambda: standby.logged("waiting for leadership"), timeout=STARTUP_TIMEOUT, message="the standby")

    before = [f"before-{i}" for i in range(3)]
    create_placements(hub, before)
    wait_until(
        lambda: all(scheduled(hub, before).values()),
        timeout=STARTUP_TIMEOUT,
        message="the leader to schedule the Placements",
        state=lambda: writes_seen(hub),
    )
    settle(hub, leader.name)
    assert written(hub, leader.name) == set(before), writes_seen(hub)
    assert scheduling_writes(hub, standby.name) == 0, writes_seen(hub)

    leader.kill()
    killed_at = time.monotonic()
    wait_until(lambda: holder(hub) == standby.name, timeout=LEASE_DURATION * 4 + 10, message="the standby to take over")
    takeover = time.monotonic() - killed_at
    # The Lease is free one lease duration after the standby last saw it change; the standby
    # then notices at its next (jittered) retry.
    assert takeover <= LEASE_DURATION + 2.2 * RETRY_PERIOD + 2.0, f"took {takeover:.2f}s"

    after = [f"after-{i}" for i in range(3)]
    create_placements(hub, after)
    # (The new leader starts its controller only now: its caches list everything first.)
    wait_until(
        lambda: all(scheduled(hub, after).values()),
        timeout=STARTUP_TIMEOUT,
        message="the new leader to schedule the Placements",
        state=lambda: writes_seen(hub),
    )
    settle(hub, standby.name)
    # No Placement's objects were written by both processes: the new leader found the old one's
    # work done and wrote only the new Placements'.
    assert written(hub, leader.name) & written(hub, standby.name) == set(), writes_seen(hub)
    assert written(hub, leader.name) == set(before), writes_seen(hub)
    assert written(hub, standby.name) == set(after), writes_seen(hub)


def test_sigterm_stops_the_leader_cleanly_and_releases_the_lease(
    fleet: Hub, processes: list[RunProcess]
) -> None:
    hub = fleet
    a = start_leader(hub, processes)
    wait_until(lambda: a.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the operator")
    assert a.terminate() == 0
    assert holder(hub) == ""
    assert a.logged("lease released")


def test_released_lease_is_taken_over_without_waiting_for_expiry(
    fleet: Hub, processes: list[RunProcess]
) -> None:
    hub = fleet
    a = start_leader(hub, processes, "--lease-duration", "60", "--renew-deadline", "40")
    b = start_candidate(hub, "proc-b", processes, "--lease-duration", "60", "--renew-deadline", "40")
    wait_until(lambda: b.logged("waiting for leadership"), timeout=STARTUP_TIMEOUT, message="the standby")
    stopped_at = time.monotonic()
    assert a.terminate() == 0
    wait_until(lambda: holder(hub) == "proc-b", timeout=30, message="proc-b to take the released Lease")
    assert time.monotonic() - stopped_at < 30  # far below the 60 s lease duration


def test_standby_is_ready_and_says_who_leads(
    fleet: Hub, processes: list[RunProcess]
) -> None:
    import urllib.request

    hub = fleet
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
    fleet: Hub, processes: list[RunProcess]
) -> None:
    hub = fleet
    a = start_leader(hub, processes)
    wait_until(lambda: a.logged("operator started"), timeout=STARTUP_TIMEOUT, message="the operator")

    # Another candidate (here: the test, as admin) takes the Lease over and never renews it.
    async def usurp() -> None:
        kube = hub.kube()
        lease = await kube.get(LEASES, LEASE, LEASE_NAMESPACE)
        lease["spec"]["holderIdentity"] = "intruder"
        await kube.replace(LEASES, lease, LEASE_NAMESPACE)

    asyncio.run(usurp())
    wait_until(lambda: a.logged("leadership lost: stopping the operator now"), timeout=30, message="proc-a to stop acting")
    # The operator's own stop is logged just after (the race CI once lost when checked at once).
    wait_until(
        lambda: a.logged("stopping the operator") or a.logged("aborting the operator"),
        timeout=10, message="proc-a's operator to stop",
    )
    # While the intruder's Lease is valid, proc-a's controller writes nothing.
    during = [f"during-{i}" for i in range(2)]
    create_placements(hub, during)

    def reacquired() -> bool:
        # Checked at every poll until proc-a leads again: nothing scheduled in the meantime.
        # Read the Placements first: one scheduled before a read that still shows the intruder
        # can only have been scheduled while the intruder held the Lease.
        handled = any(scheduled(hub, during).values()) or bool(written(hub, "proc-a") & set(during))
        current = holder(hub)
        assert not (handled and current == "intruder"), "proc-a reconciled while another holder had the Lease"
        return current == "proc-a"

    wait_until(reacquired, timeout=LEASE_DURATION * 4 + 10, message="proc-a to take the expired Lease back")
    assert len(a.logged("became leader")) == 2
    wait_until(
        lambda: all(scheduled(hub, during).values()),
        timeout=STARTUP_TIMEOUT,
        message="proc-a to schedule the Placements once it leads again",
        state=lambda: writes_seen(hub),
    )
    assert written(hub, "proc-a") == set(during), writes_seen(hub)
