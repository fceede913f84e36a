"""``/healthz``, ``/readyz`` and ``/metrics`` on one aiohttp server (one or two listeners).

What the probes mean:

- ``/healthz`` (liveness): the process is working. It fails only when something it cannot
  recover from has happened (the leader-election loop died); a standby is healthy.
- ``/readyz`` (readiness): the replica can do its job *in its role*.
  - Leader (or ``--no-leader-elect``): ready once the kopf operator has started (caches listed),
    not ready while it is starting or after it stopped.
  - Standby: ready while it can reach the API server, i.e. its last successful read of the Lease
    is younger than the lease duration, so that it could take over. A standby is *ready* on
    purpose: readiness gates rolling updates and PodDisruptionBudgets, and a warm standby is
    exactly what both should count. Which replica leads shows in the body (``role: standby``),
    in the Lease, and in the ``ocm_rollout_leader`` metric.
  - Shutting down: not ready.

Both probes answer ``200 ok`` or ``503`` with one ``[+]``/``[-]`` line per check, like
kube-apiserver's ``?verbose`` output, always (the body is tiny).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from aiohttp import web

from ocm_rollout.controllers.runtime import metrics

log = logging.getLogger(__name__)


class BindAddressError(ValueError):
    """A ``--*-bind-address`` that is not ``host:port``, ``:port`` or ``0``."""


def parse_bind_address(value: str, flag: str) -> tuple[str, int] | None:
    """``host:port`` / ``:port`` (all interfaces) / ``[v6]:port``; ``"0"`` disables (None)."""
    text = value.strip()
    if text == "0":
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise BindAddressError(f"{flag} must look like HOST:PORT, :PORT or 0, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or "0.0.0.0", int(port_text))


class Role(StrEnum):
    STARTING = "starting"  # no leadership decision yet
    STANDBY = "standby"
    LEADER = "leader"
    STOPPING = "stopping"


@dataclass
class RunState:
    """What the probes look at; updated by ``ocm-rollout run``."""

    leader_election: bool = True
    lease_duration: float = 15.0
    role: Role = Role.STARTING
    operator_ready: bool = False
    leader_identity: str = ""  # the holder as last seen
    last_api_contact: datetime | None = None
    fatal: str | None = None  # set when the process can no longer work
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


Check = tuple[str, bool, str]


def liveness(state: RunState) -> list[Check]:
    return [("process", state.fatal is None, state.fatal or "running")]


def readiness(state: RunState) -> list[Check]:
    checks = liveness(state)
    role = state.role
    if role is Role.STOPPING:
        checks.append(("role", False, "shutting down"))
    elif role is Role.LEADER:
        checks.append(("role", True, "leader"))
        checks.append(("operator", state.operator_ready, "started" if state.operator_ready else "starting"))
    else:
        checks.append(("role", True, role.value if state.leader_identity == "" else f"{role.value} (leader: {state.leader_identity})"))
        contact = state.last_api_contact
        fresh = contact is not None and state.clock() - contact < timedelta(seconds=state.lease_duration)
        if contact is None:
            detail = "the API server has not been reached yet"
        elif fresh:
            detail = "the API server is reachable"
        else:
            detail = f"the API server has not answered since {contact.isoformat()}"
        checks.append(("api", fresh, detail))
    return checks


def _answer(checks: list[Check]) -> web.Response:
    ok = all(passed for _, passed, _ in checks)
    lines = [f"[{'+' if passed else '-'}]{name} {detail}" for name, passed, detail in checks]
    lines.append("ok" if ok else "failed")
    return web.Response(status=200 if ok else 503, text="\n".join(lines) + "\n")


@dataclass
class ProbeServer:
    """The HTTP endpoints; ``start`` binds, ``stop`` closes."""

    state: RunState
    health_address: tuple[str, int] | None
    metrics_address: tuple[str, int] | None
    # Extra routes (for example the placement debug endpoint) served next to the probes.
    extra_routes: list[web.RouteDef] = field(default_factory=list)
    bound: dict[str, tuple[str, int]] = field(default_factory=dict)
    _runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_routes(self.extra_routes)
        return app

    async def _healthz(self, request: web.Request) -> web.Response:
        return _answer(liveness(self.state))

    async def _readyz(self, request: web.Request) -> web.Response:
        return _answer(readiness(self.state))

    async def _metrics(self, request: web.Request) -> web.Response:
        body, content_type = metrics.render()
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        addresses: dict[str, tuple[str, int]] = {}
        if self.health_address is not None:
            addresses["health"] = self.health_address
        if self.metrics_address is not None and self.metrics_address != self.health_address:
            addresses["metrics"] = self.metrics_address
        for purpose, (host, port) in addresses.items():
            site = web.TCPSite(self._runner, host, port, reuse_address=True)
            await site.start()
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            actual = sockets[0].getsockname()[:2] if sockets else (host, port)
            self.bound[purpose] = (str(actual[0]), int(actual[1]))
        if self.metrics_address is not None and "metrics" not in self.bound and "health" in self.bound:
            self.bound["metrics"] = self.bound["health"]  # the same address: one shared listener
        for purpose, (host, port) in self.bound.items():
            log.info("serving %s endpoints", purpose, extra={"address": f"{host}:{port}", "purpose": purpose})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@dataclass
class DebugPlaceholder:
    """Answers 503 on the debug address while this replica is not the leader.

    The leader's operator serves the controllers' debug routes on that address itself; a
    standby has no caches to answer from, so it says who to ask instead of refusing the
    connection (a Service spreads requests over every ready replica).
    """

    state: RunState
    address: tuple[str, int]
    _runner: web.AppRunner | None = None

    async def _answer(self, request: web.Request) -> web.Response:
        leader = self.state.leader_identity or "unknown"
        return web.Response(
            status=503, text=f"this replica is not the leader; the leader is {leader}\n", headers={"Retry-After": "5"}
        )

    async def start(self) -> None:
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, self.address[0], self.address[1], reuse_address=True).start()
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
