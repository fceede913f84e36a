"""``ocm-rollout up``: the local hub, simulated managed clusters and the controllers, in one process.

Starts the embedded API server (``sandbox.server.LocalHub``), writes a kubeconfig for it (mode
0600) once it answers, registers the simulated clusters and runs, until Ctrl-C or SIGTERM:

- the simulated agents (``sandbox.simulation``), shaped by ``--profile`` (``sandbox.sim_profile``);
- the controllers of this build (``controllers.runtime.registry``: every controller module that
  exists is started through ``controllers.runtime.operator.run_operator``, the same runner as
  ``ocm-rollout run``; later controllers plug in by adding themselves to that registry);
- a live view (``sandbox.sim_view``: clusters, ManifestWorkReplicaSet and add-on rollouts,
  placements; it shares the simulation's caches of clusters, works and add-ons): redrawn a few
  times a second on a terminal, one line per change otherwise;
- the controllers' debug endpoints (the routes they publish under ``extras["http_routes"]``, e.g.
  ``GET /debug/placements/NAMESPACE/NAME``) on 127.0.0.1, port ``--debug-port`` (0, the default,
  picks a free one); the start banner prints the URL next to the kubeconfig.

With ``--data FILE`` every object survives a restart and nothing is registered twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from kubernetes.client import ApiClient

from controllers.runtime import logging as runtime_logging
from controllers.runtime import operator, registry
from controllers.runtime.kube import Kube, KubeError
from sandbox.server import LocalHub
from sandbox.sim_profile import Profile, ProfileError, load_profile
from sandbox.sim_view import LiveView
from sandbox.simulation import SimEvent, Simulation

log = logging.getLogger("controllers.up")

DEFAULT_KUBECONFIG = "./.ocm-rollout/kubeconfig"
DEFAULT_CLUSTERS = 5
ANSWER_TIMEOUT_SECONDS = 15.0
SHUTDOWN_TIMEOUT_SECONDS = 20.0
CLIENT_POOL_SIZE = 32
LOG_FILE_NAME = "up.log"
DEBUG_HOST = "127.0.0.1"


class UsageError(ValueError):
    """A bad flag: printed as one line naming it, exit code 2."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "up",
        help="start a local hub with simulated managed clusters and the controllers",
        description=(
            "Start the embedded local hub (a Kubernetes-compatible API server), write a kubeconfig for "
            "it, register simulated managed clusters and run their agents and the controllers, with a "
            "live view, until Ctrl-C. On a terminal the logs go to up.log next to the kubeconfig."
        ),
    )
    parser.add_argument(
        "--clusters", type=int, default=DEFAULT_CLUSTERS, metavar="N",
        help=f"simulated managed clusters cluster1..clusterN (default: {DEFAULT_CLUSTERS})",
    )
    parser.add_argument(
        "--profile", metavar="FILE",
        help="simulation profile (YAML): per-cluster delays, outcomes, unreachable periods; "
        "see examples/profiles/",
    )
    parser.add_argument("--port", type=int, default=0, metavar="P", help="port to listen on; 0 picks a free one (default)")
    parser.add_argument(
        "--kubeconfig", default=DEFAULT_KUBECONFIG, metavar="PATH",
        help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})",
    )
    parser.add_argument("--data", metavar="FILE", help="SQLite file that keeps every object across restarts")
    parser.add_argument(
        "--debug-port", type=int, default=0, metavar="P",
        help=f"port on {DEBUG_HOST} for the controllers' debug endpoints (e.g. GET "
        "/debug/placements/NAMESPACE/NAME: how a Placement is scheduled); 0 picks a free one (default)",
    )
    parser.add_argument(
        "--controllers", default="all", metavar="NAMES",
        help="comma-separated controllers to run, 'all' (default: every one in this build) or 'none'",
    )
    parser.add_argument(
        "--no-view", action="store_true",
        help="no live view: print one line per change (the default when stdout is not a terminal)",
    )
    parser.add_argument("--log-level", default="warning", choices=runtime_logging.LEVELS, help="(default: warning)")
    parser.set_defaults(func=main)


def _controllers(spec: str) -> list[str]:
    if spec.strip() == "none":
        return []
    try:
        return registry.parse_controller_names(spec)
    except registry.UnknownControllerError as exc:
        raise UsageError(f"--controllers: {exc}") from None


def _check(args: argparse.Namespace) -> tuple[Profile, list[str]]:
    if args.clusters < 0:
        raise UsageError(f"--clusters: must be 0 or more, got {args.clusters}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: must be between 0 and 65535, got {args.port}")
    if not 0 <= args.debug_port <= 65535:
        raise UsageError(f"--debug-port: must be between 0 and 65535, got {args.debug_port}")
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        raise UsageError(f"--profile: {exc}") from None
    return profile, _controllers(args.controllers)


def main(args: argparse.Namespace) -> int:
    try:
        profile, names = _check(args)
    except UsageError as exc:
        print(f"ocm-rollout up: error: {exc}", file=sys.stderr)
        return 2
    interactive = sys.stdout.isatty() and not args.no_view
    log_stream: TextIO = sys.stderr
    log_file: TextIO | None = None
    if interactive:
        # The screen belongs to the view: logs go to a file next to the kubeconfig.
        log_path = Path(args.kubeconfig).expanduser().parent / LOG_FILE_NAME
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = log_path.open("a", encoding="utf-8")
        log_stream = log_file
    runtime_logging.configure("text", args.log_level, stream=log_stream)
    try:
        return asyncio.run(_up(args, profile, names, interactive=interactive))
    finally:
        if log_file is not None:
            log_file.close()


def _client(kubeconfig: Path) -> ApiClient:
    """A client for the hub with a pool large enough for the agents' concurrent requests."""
    configuration = operator.load_client(str(kubeconfig)).configuration
    configuration.connection_pool_maxsize = CLIENT_POOL_SIZE
    return ApiClient(configuration)


async def _wait_answering(kube: Kube) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ANSWER_TIMEOUT_SECONDS
    while True:
        try:
            await kube.request("GET", "/version")
            return
        except (KubeError, OSError, Exception):
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)


def usage_lines(
    hub_url: str, kubeconfig: Path, clusters: int, controllers: Sequence[str], debug: str | None = None
) -> list[str]:
    """The banner: where the hub is, how to use it with kubectl, and where the debug endpoint is
    (``debug``: a URL template, e.g. ``http://127.0.0.1:PORT/debug/placements/NAMESPACE/NAME``)."""
    lines = [
        f"ocm-rollout local hub at {hub_url}  ({clusters} simulated clusters; "
        f"controllers: {', '.join(controllers) or 'none'})",
        f"kubeconfig: {kubeconfig}",
    ]
    if debug is not None:
        lines.append(f"debug: {debug}")
    lines.append(f"  export KUBECONFIG={kubeconfig}; kubectl get managedclusters")
    return lines


def _debug_port(requested: int) -> int:
    """The debug port: ``requested``, checked to be free, or a free one when 0.

    Raises ``OSError`` when the port cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((DEBUG_HOST, requested))
        port: int = probe.getsockname()[1]
        return port


def _debug_line(address: tuple[str, int] | None, names: Sequence[str]) -> str | None:
    """The banner's debug entry: the placement debug URL, with NAMESPACE/NAME to fill in."""
    if address is None or "placement" not in names:
        return None
    from controllers.placement.operator import DEBUG_PATH  # present: parse_controller_names checked

    return f"http://{address[0]}:{address[1]}{DEBUG_PATH}/NAMESPACE/NAME"


async def _up(args: argparse.Namespace, profile: Profile, names: list[str], *, interactive: bool) -> int:
    debug_address: tuple[str, int] | None = None
    if names:
        try:
            debug_address = (DEBUG_HOST, _debug_port(args.debug_port))
        except OSError as exc:
            print(
                f"ocm-rollout up: error: --debug-port: cannot listen on {DEBUG_HOST}:{args.debug_port}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
            return 1
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    hub = LocalHub(port=args.port, data=args.data)
    try:
        await hub.start()
    except OSError as exc:
        print(f"ocm-rollout up: error: cannot listen on port {args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # e.g. a --data file written by an incompatible build
        print(f"ocm-rollout up: error: {exc}", file=sys.stderr)
        await hub.stop()
        return 1
    exit_code = 0
    tasks: list[asyncio.Task[Any]] = []
    try:
        kubeconfig = Path(args.kubeconfig).expanduser().absolute()
        kube = Kube(_client(_written(hub, kubeconfig)), field_manager="ocm-rollout-simulator")
        await _wait_answering(kube)
        banner = usage_lines(hub.url, kubeconfig, args.clusters, names, _debug_line(debug_address, names))
        if interactive:
            banner.append(f"logs: {kubeconfig.parent / LOG_FILE_NAME}")

        view: LiveView | None = None

        def on_event(event: SimEvent) -> None:
            if view is not None and event.kind == "agent":
                view.log(f"{event.subject}: {event.detail}")

        simulation = Simulation(kube, clusters=args.clusters, profile=profile, on_event=on_event)
        view = LiveView(
            kube,
            clusters=simulation.clusters,
            works=simulation.works,
            addon_managers=simulation.addon_managers,
            addons=simulation.addons,
            header=banner,
            interactive=interactive,
        )
        if not interactive:
            for line in banner:
                print(line, flush=True)
        await simulation.register()
        tasks.append(asyncio.create_task(simulation.run(stop), name="simulation"))
        if names:
            tasks.append(
                asyncio.create_task(
                    operator.run_operator(names, kubeconfig=str(kubeconfig), stop=stop, debug_address=debug_address),
                    name="controllers",
                )
            )
        tasks.append(asyncio.create_task(view.run(stop), name="view"))
        exit_code = await _supervise(tasks, stop)
    finally:
        stop.set()
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_TIMEOUT_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await hub.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
    if not interactive or exit_code:
        print("ocm-rollout up: stopped" if exit_code == 0 else "ocm-rollout up: stopped after an error",
              file=sys.stderr)
    return exit_code


def _written(hub: LocalHub, kubeconfig: Path) -> Path:
    return hub.write_kubeconfig(kubeconfig)


async def _supervise(tasks: list[asyncio.Task[Any]], stop: asyncio.Event) -> int:
    """Wait for ``stop``; a part that ends on its own before that stops everything (exit 1)."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({stopping, *tasks}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if stop.is_set():
        return 0
    for task in done:
        if task is stopping:
            continue
        error = None if task.cancelled() else task.exception()
        log.error("%s ended unexpectedly", task.get_name(), exc_info=error)
        print(f"ocm-rollout up: error: {task.get_name()} stopped: {error!r}", file=sys.stderr)
    return 1
