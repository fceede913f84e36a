"""The probe and metrics HTTP endpoints, and what /readyz means in each role."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.health import (
    BindAddressError,
    DebugPlaceholder,
    ProbeServer,
    Role,
    RunState,
    liveness,
    parse_bind_address,
    readiness,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def state(**fields: object) -> RunState:
    s = RunState(lease_duration=15, clock=lambda: NOW)
    for key, value in fields.items():
        setattr(s, key, value)
    return s


def ok(checks: list[tuple[str, bool, str]]) -> bool:
    return all(passed for _, passed, _ in checks)


def test_standby_that_reaches_the_api_is_ready() -> None:
    assert ok(readiness(state(role=Role.STANDBY, last_api_contact=NOW - timedelta(seconds=3))))


def test_standby_that_lost_the_api_for_a_lease_duration_is_not_ready() -> None:
    assert not ok(readiness(state(role=Role.STANDBY, last_api_contact=NOW - timedelta(seconds=15))))


def test_standby_that_never_reached_the_api_is_not_ready() -> None:
    assert not ok(readiness(state(role=Role.STARTING)))


def test_leader_is_ready_only_once_its_operator_started() -> None:
    assert not ok(readiness(state(role=Role.LEADER, operator_ready=False)))
    assert ok(readiness(state(role=Role.LEADER, operator_ready=True)))


def test_stopping_replica_is_not_ready_but_still_live() -> None:
    stopping = state(role=Role.STOPPING)
    assert not ok(readiness(stopping))
    assert ok(liveness(stopping))


def test_fatal_error_fails_liveness() -> None:
    assert not ok(liveness(state(fatal="lease loop crashed")))


def test_standby_readiness_names_the_leader() -> None:
    checks = readiness(state(role=Role.STANDBY, leader_identity="pod-a", last_api_contact=NOW))
    assert any("leader: pod-a" in detail for _, _, detail in checks)


@pytest.mark.parametrize(
    ("text", "expected"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9", ("::1", 9)), ("0", None)],
)
def test_bind_addresses(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text, "--x") == expected


@pytest.mark.parametrize("text", ["8080", "host:", "host:http", ":70000"])
def test_bad_bind_address_names_the_flag(text: str) -> None:
    with pytest.raises(BindAddressError, match="--metrics-bind-address"):
        parse_bind_address(text, "--metrics-bind-address")


async def test_server_answers_probes_and_metrics_on_one_listener() -> None:
    metrics.on_reconcile("t-server", 0.01, None)
    server = ProbeServer(state(role=Role.LEADER, operator_ready=True), ("127.0.0.1", 0), ("127.0.0.1", 0))
    await server.start()
    try:
        host, port = server.bound["health"]
        assert server.bound["metrics"] == (host, port)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://{host}:{port}/healthz") as response:
                assert response.status == 200
            async with session.get(f"http://{host}:{port}/readyz") as response:
                assert response.status == 200
                assert "[+]role leader" in await response.text()
            async with session.get(f"http://{host}:{port}/metrics") as response:
                assert response.status == 200
                assert 'ocm_rollout_reconcile_total{controller="t-server"} 1.0' in await response.text()
    finally:
        await server.stop()


async def test_metrics_and_health_can_listen_on_separate_ports() -> None:
    server = ProbeServer(state(role=Role.STARTING), ("127.0.0.1", 0), None)
    await server.start()
    try:
        assert "metrics" not in server.bound
        host, port = server.bound["health"]
        async with aiohttp.ClientSession() as session, session.get(f"http://{host}:{port}/readyz") as response:
            assert response.status == 503
    finally:
        await server.stop()


async def test_debug_placeholder_tells_callers_who_leads() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    placeholder = DebugPlaceholder(state(role=Role.STANDBY, leader_identity="pod-a"), ("127.0.0.1", port))
    await placeholder.start()
    try:
        url = f"http://127.0.0.1:{port}/debug/placements/ns/p"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 503
            assert "pod-a" in await response.text()
    finally:
        await placeholder.stop()
