"""The simulated managed clusters as a process of their own: ``python -m ocm_rollout.sandbox.sim_main``.

``ocm-rollout up`` starts the local hub in its own process and the fleet's agents here, so the
agents and the hub run on different cores, as a real fleet's klusterlets and its hub do. This
process reads a kubeconfig for the hub, registers ``--clusters`` simulated clusters (nothing twice
after a restart) and runs their agents (``ocm_rollout.sandbox.simulation.Simulation``) until SIGINT or
SIGTERM, printing one line per agent event (a cluster going silent or coming back) to stdout. With
``--metrics-address HOST:PORT`` it serves the clusters' workload metrics (the profile's
``metrics``) on ``http://HOST:PORT/metrics`` (``ocm_rollout.sandbox.sim_metrics_server``).

``--agents`` picks the agents this process runs: ``all`` (the default), ``registration`` (the
registration agents, the hub side of registration and the add-on frameworks: it registers the
fleet) or ``work`` (the work agents: the workload metrics are theirs). ``ocm-rollout up`` runs one
process of each, so the agents of a large fleet use two cores.

Exit codes: 0 after a signal, 2 for a bad flag or profile (one line on stderr), 1 when the hub
cannot be reached, the metrics address cannot be bound or the simulation fails.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from kubernetes.client import ApiClient

from ocm_rollout.client import logging as runtime_logging
from ocm_rollout.client.collector import tune_collector
from ocm_rollout.client.kube import Kube
from ocm_rollout.client.kubeconfig import KubeconfigError, load_client
from ocm_rollout.sandbox.sim_metrics_server import MetricsServer
from ocm_rollout.sandbox.sim_profile import ProfileError, load_profile
from ocm_rollout.sandbox.simulation import REGISTRATION, ROLES, WORK, SimEvent, Simulation

log = logging.getLogger("ocm_rollout.sandbox.sim_main")

# Requests in flight to the hub: the agents of many clusters write at once.
CLIENT_POOL_SIZE = 32
ANSWER_TIMEOUT_SECONDS = 30.0
AGENTS: dict[str, frozenset[str]] = {"all": ROLES, REGISTRATION: frozenset({REGISTRATION}), WORK: frozenset({WORK})}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ocm_rollout.sandbox.sim_main",
        description="Run simulated managed clusters (registration, work and add-on agents) against a hub.",
    )
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of the hub")
    parser.add_argument("--clusters", type=int, default=5, help="simulated clusters cluster1..clusterN")
    parser.add_argument("--profile", help="simulation profile (YAML), see examples/profiles/")
    parser.add_argument(
        "--agents", choices=list(AGENTS), default="all",
        help="the agents to run: all (default), registration (with the add-on frameworks) or work",
    )
    parser.add_argument(
        "--metrics-address", metavar="HOST:PORT", type=_address,
        help="serve the clusters' workload metrics on http://HOST:PORT/metrics (port 0: a free one)",
    )
    parser.add_argument("--log-level", default="warning", choices=runtime_logging.LEVELS)
    return parser.parse_args(argv)


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _client(kubeconfig: str) -> ApiClient:
    configuration = load_client(kubeconfig).configuration
    configuration.connection_pool_maxsize = CLIENT_POOL_SIZE
    return ApiClient(configuration)


def print_event(event: SimEvent) -> None:
    """An agent event as a log line (the format of the live view's log)."""
    if event.kind == "agent":
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        print(f"{stamp} {event.subject}: {event.detail}", flush=True)


async def _wait_answering(kube: Kube) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ANSWER_TIMEOUT_SECONDS
    while True:
        try:
            await kube.request("GET", "/version")
            return
        except Exception:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)


async def run(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile)
    kube = Kube(_client(args.kubeconfig), field_manager="ocm-rollout-simulator")
    loop = asyncio.get_running_loop()
    # The agents write many objects at once at start-up: a larger pool than asyncio's default.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(CLIENT_POOL_SIZE))
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    server: MetricsServer | None = None
    try:
        simulation = Simulation(
            kube, clusters=args.clusters, profile=profile, on_event=print_event, roles=AGENTS[args.agents]
        )
        if args.metrics_address is not None:
            server = MetricsServer(simulation.metrics.render, args.metrics_address)
            try:
                await server.start()
            except OSError as exc:
                host, port = args.metrics_address
                print(f"error: --metrics-address: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
                return 1
        await _wait_answering(kube)
        registering = asyncio.ensure_future(simulation.register())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({registering, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not registering.done():
            registering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await registering
            return 0
        registering.result()
        await simulation.run(stop)
    finally:
        if server is not None:
            await server.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
        kube.api_client.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    runtime_logging.configure("text", args.log_level, stream=sys.stderr)
    tune_collector()
    if args.clusters < 0:
        print(f"error: --clusters: must be 0 or more, got {args.clusters}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run(args))
    except ProfileError as exc:
        print(f"error: --profile: {exc}", file=sys.stderr)
        return 2
    except KubeconfigError as exc:
        print(f"error: --kubeconfig: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        log.exception("the simulation failed")
        print(f"error: the simulation failed: {exc!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
