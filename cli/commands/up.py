"""``ocm-rollout up``: the local hub, simulated managed clusters and the controllers.

Serves the embedded API server (``ocm_rollout.sandbox.server.LocalHub``) in this process, writes a kubeconfig
for it (mode 0600) and starts, each in a process of its own as in a real deployment
(``up_children``), so that a fleet of thousands of clusters uses every core:

- the simulated agents, shaped by ``--profile`` (``ocm_rollout.sandbox.sim_profile``), in two
  processes as OCM's klusterlet runs them (``python -m ocm_rollout.sandbox.sim_main --agents
  registration``: registration, heartbeats and the add-on frameworks; ``--agents work``: the work
  agents); the work agents serve the clusters' workload metrics (the profile's ``metrics``) for
  Prometheus on ``http://127.0.0.1:PORT/metrics``, port ``--fleet-metrics-port`` (0, the
  default, picks a free one); the start banner prints the URL;
- each controller of this build (``ocm_rollout.controllers.runtime.registry``) as ``ocm-rollout run
  --controllers NAME`` (no leader election: it is the only replica); the placement controller
  serves its debug endpoint (``GET /debug/placements/NAMESPACE/NAME``) on 127.0.0.1, port
  ``--debug-port`` (0, the default, picks a free one); the start banner prints the URL;

and, unless ``--no-view``, a live view (``ocm_rollout.cli.view.live_view``) of clusters, ManifestWorkReplicaSet
and add-on rollouts and placements: redrawn in place on a terminal, one line per change otherwise.
It is computed incrementally and at a bounded rate, so it stays a small share of this process.

- unless ``--no-dashboard``, the browser dashboard (``ocm-rollout dashboard``) on 127.0.0.1, port
  ``--dashboard-port`` (default 3100, or a free one when that is taken), on a socket ``up`` binds and
  the child inherits (no other process can take the port in between); the banner prints its URL;

The banner's URLs are also written, as JSON, to ``endpoints.json`` next to the kubeconfig
(``hub``, ``kubeconfig``, ``fleetMetrics``, ``dashboard`` and, with the placement controller,
``debug``), so that tools and tests find them.

Ctrl-C or SIGTERM stops the children first, then the hub. A child that ends on its own stops
everything (exit 1). With ``--data FILE`` every object survives a restart and nothing is
registered twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from kubernetes.client import ApiClient

from ocm_rollout.cli.commands import up_webhook
from ocm_rollout.cli.commands.up_children import Child, python_module, stop_all
from ocm_rollout.cli.view.live_view import LiveView
from ocm_rollout.client import logging as runtime_logging
from ocm_rollout.client.collector import tune_collector
from ocm_rollout.client.kube import Kube
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.rollout.work_config import WorkConfigError
from ocm_rollout.controllers.rollout.work_config import load as load_work_config
from ocm_rollout.controllers.runtime import registry
from ocm_rollout.sandbox.kube_hub import HUB_NAME, KubeHub, MissingBinaries, StartError
from ocm_rollout.sandbox.server import LocalHub
from ocm_rollout.sandbox.sim_profile import Profile, ProfileError, load_profile

log = logging.getLogger("controllers.up")

DEFAULT_KUBECONFIG = "./.ocm-rollout/kubeconfig"
DEFAULT_CLUSTERS = 5
SHUTDOWN_TIMEOUT_SECONDS = 20.0
CLIENT_POOL_SIZE = 32
LOG_FILE_NAME = "up.log"
ENDPOINTS_FILE_NAME = "endpoints.json"
LOOPBACK = "127.0.0.1"
FLEET_METRICS_PATH = "/metrics"
DASHBOARD_PORT = 3100
HUBS = ("local", HUB_NAME)
# The controllers given `--work-config`: those that roll out (plugins, metric providers).
WORK_CONFIG_READERS = ("workset", "addon")


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
    parser.add_argument(
        "--data", metavar="PATH",
        help="keep every object across restarts: the embedded hub's SQLite file; with --hub kube-apiserver, a "
        "directory for etcd's data and the control plane's certificates and tokens",
    )
    parser.add_argument(
        "--hub", choices=HUBS, default=HUBS[0],
        help="the API server: 'local', the embedded hub (default), or 'kube-apiserver', a real control plane "
        "(etcd, kube-apiserver, kube-controller-manager) built by `make kube-hub`",
    )
    parser.add_argument(
        "--debug-port", type=int, default=0, metavar="P",
        help=f"port on {LOOPBACK} for the controllers' debug endpoints (e.g. GET "
        "/debug/placements/NAMESPACE/NAME: how a Placement is scheduled); 0 picks a free one (default)",
    )
    parser.add_argument(
        "--fleet-metrics-port", type=int, default=0, metavar="P",
        help=f"port on {LOOPBACK} for the simulated clusters' workload metrics (the profile's `metrics`; "
        f"GET {FLEET_METRICS_PATH}, Prometheus text format, label cluster); 0 picks a free one (default)",
    )
    parser.add_argument(
        "--dashboard-port", type=int, default=None, metavar="P",
        help=f"port on {LOOPBACK} for the browser dashboard (`ocm-rollout dashboard`, run as a child process); "
        f"default {DASHBOARD_PORT}, or a free one when that is taken; 0 picks a free one",
    )
    parser.add_argument("--no-dashboard", action="store_true", help="do not serve the browser dashboard")
    parser.add_argument(
        "--controllers", default="all", metavar="NAMES",
        help="comma-separated controllers to run, 'all' (default: every one in this build) or 'none'",
    )
    parser.add_argument(
        "--no-view", action="store_true",
        help="no live view: the banner, the agents' and controllers' logs and nothing else (the view is not "
        "computed at all); without it, the view is a screen on a terminal and one line per change otherwise",
    )
    parser.add_argument(
        "--work-config", metavar="PATH",
        help="the work controller's configuration file: its 'plugins' register rollout plugins, its "
        "'metricProviders' metric providers (given to the workset and addon controllers' `run "
        "--work-config`; see docs/behaviour/validation.md)",
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
    for flag, port in (
        ("--debug-port", args.debug_port),
        ("--fleet-metrics-port", args.fleet_metrics_port),
        ("--dashboard-port", args.dashboard_port or 0),
    ):
        if not 0 <= port <= 65535:
            raise UsageError(f"{flag}: must be between 0 and 65535, got {port}")
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        raise UsageError(f"--profile: {exc}") from None
    if args.work_config:
        try:
            load_work_config(args.work_config)
        except WorkConfigError as exc:
            raise UsageError(f"--work-config: {exc}") from None
    return profile, _controllers(args.controllers)


def main(args: argparse.Namespace) -> int:
    try:
        _profile, names = _check(args)
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
    tune_collector()  # this process runs the hub
    try:
        return asyncio.run(_up(args, names, interactive=interactive, output=log_file))
    finally:
        if log_file is not None:
            log_file.close()


def _client(kubeconfig: Path) -> ApiClient:
    """A client for the hub with a pool large enough for the agents' concurrent requests."""
    configuration = load_client(str(kubeconfig)).configuration
    configuration.connection_pool_maxsize = CLIENT_POOL_SIZE
    return ApiClient(configuration)


def usage_lines(
    hub_url: str,
    kubeconfig: Path,
    clusters: int,
    controllers: Sequence[str],
    debug: str | None = None,
    fleet_metrics: str | None = None,
    dashboard: str | None = None,
    hub: str = "local",
) -> list[str]:
    """The banner: where the hub is, how to use it with kubectl, where the debug endpoint is
    (``debug``: a URL template, e.g. ``http://127.0.0.1:PORT/debug/placements/NAMESPACE/NAME``),
    where the fleet's workload metrics are (``fleet_metrics``: a URL) and where the browser
    dashboard is (``dashboard``: a URL)."""
    what = "local hub" if hub == "local" else f"hub ({hub}, etcd, kube-controller-manager)"
    lines = [
        f"ocm-rollout {what} at {hub_url}  ({clusters} simulated clusters; "
        f"controllers: {', '.join(controllers) or 'none'})",
        f"kubeconfig: {kubeconfig}",
    ]
    if debug is not None:
        lines.append(f"debug: {debug}")
    if fleet_metrics is not None:
        lines.append(f"fleet metrics: {fleet_metrics}")
    if dashboard is not None:
        lines.append(f"dashboard: {dashboard}")
    lines.append(f"  export KUBECONFIG={kubeconfig}; kubectl get managedclusters")
    return lines


class PortError(OSError):
    """A port that cannot be listened on; the message names the flag."""


def _listen_ports(requests: Sequence[tuple[str, int]]) -> dict[str, int]:
    """For each (flag, port): the port, checked to be free, or a free one when 0; all different.

    Raises ``PortError`` naming the first flag whose port cannot be bound."""
    ports: dict[str, int] = {}
    with contextlib.ExitStack() as held:  # every probe stays bound until all are chosen
        for flag, requested in requests:
            probe = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, requested))
                probe.listen()
            except OSError as exc:
                raise PortError(f"{flag}: cannot listen on {LOOPBACK}:{requested}: {exc.strerror or exc}") from None
            ports[flag] = int(probe.getsockname()[1])
    return ports


def dashboard_socket(requested: int | None) -> socket.socket:
    """The dashboard's listening socket on loopback, bound here and handed to its child process
    (so no other process can take the port in between): ``--dashboard-port`` as given (0: a free
    one); unset: DASHBOARD_PORT, or a free one when something else listens there (two hubs on
    one machine both start). Raises ``PortError`` naming the flag."""
    candidates = [requested] if requested is not None else [DASHBOARD_PORT, 0]
    for port in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            if port == candidates[-1]:
                raise PortError(f"--dashboard-port: cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}") from None
            log.info("port %s is taken: the dashboard listens on a free one", port)
            continue
        sock.set_inheritable(True)
        return sock
    raise AssertionError("unreachable")


def write_endpoints(directory: Path, endpoints: dict[str, str]) -> Path:
    """``endpoints`` as JSON in ``directory/endpoints.json`` (replaced whole: a reader never sees half)."""
    target = directory / ENDPOINTS_FILE_NAME
    partial = target.with_suffix(".json.tmp")
    partial.write_text(json.dumps(endpoints, indent=2) + "\n", encoding="utf-8")
    partial.replace(target)
    return target


def _debug_line(address: tuple[str, int] | None, names: Sequence[str]) -> str | None:
    """The banner's debug entry: the placement debug URL, with NAMESPACE/NAME to fill in."""
    if address is None or "placement" not in names:
        return None
    from ocm_rollout.controllers.placement.debug import (
        DEBUG_PATH,  # present: parse_controller_names checked
    )

    return f"http://{address[0]}:{address[1]}{DEBUG_PATH}/NAMESPACE/NAME"


def _controller_argv(
    name: str, kubeconfig: Path, log_level: str, debug_address: tuple[str, int] | None, work_config: str | None = None
) -> list[str]:
    """``ocm-rollout run`` for one controller against the local hub: no leader election (it is
    the only replica), no probe or metrics ports, the debug endpoint for the placement controller,
    the work configuration (rollout plugins, metric providers) for the controllers that roll out
    (workset and addon)."""
    debug = "0"
    if debug_address is not None and name == "placement":
        debug = f"{debug_address[0]}:{debug_address[1]}"
    extra = ["--work-config", str(Path(work_config).expanduser().absolute())] if work_config and name in WORK_CONFIG_READERS else []
    return python_module(
        "ocm_rollout.cli", "run", "--controllers", name, "--kubeconfig", str(kubeconfig), "--no-leader-elect",
        "--health-bind-address", "0", "--metrics-bind-address", "0", "--debug-bind-address", debug,
        "--log-level", log_level, *extra,
    )


def _dashboard_argv(kubeconfig: Path, listening: int, log_level: str) -> list[str]:
    """``ocm-rollout dashboard`` against the local hub, serving the loopback socket ``up`` bound
    (its file descriptor ``listening``, inherited)."""
    return python_module(
        "ocm_rollout.cli", "dashboard", "--kubeconfig", str(kubeconfig), "--listen-fd", str(listening),
        "--log-level", log_level,
    )


def _children(args: argparse.Namespace, names: Sequence[str], kubeconfig: Path,
              debug_address: tuple[str, int] | None, fleet_metrics_port: int) -> list[Child]:
    agents = ["--kubeconfig", str(kubeconfig), "--clusters", str(args.clusters), "--log-level", args.log_level]
    if args.profile:
        agents += ["--profile", str(Path(args.profile).expanduser().absolute())]
    # Two processes, as OCM's klusterlet runs its registration and work agents: a large fleet's
    # agents then use two cores. The work agents serve the workload metrics (they apply the works).
    work_agents = [*agents, "--agents", "work", "--metrics-address", f"{LOOPBACK}:{fleet_metrics_port}"]
    registration_agents = [*agents, "--agents", "registration"]
    children = [
        Child("the simulated registration agents", python_module("ocm_rollout.sandbox.sim_main", *registration_agents)),
        Child("the simulated work agents", python_module("ocm_rollout.sandbox.sim_main", *work_agents)),
    ]
    for name in names:
        children.append(
            Child(f"the {name} controller", _controller_argv(name, kubeconfig, args.log_level, debug_address, args.work_config))
        )
    return children


async def _up(args: argparse.Namespace, names: list[str], *, interactive: bool, output: TextIO | None) -> int:
    wanted = [("--debug-port", args.debug_port)] if names else []
    try:
        ports = _listen_ports([*wanted, ("--fleet-metrics-port", args.fleet_metrics_port)])
        listening = None if args.no_dashboard else dashboard_socket(args.dashboard_port)
    except PortError as exc:
        print(f"ocm-rollout up: error: {exc}", file=sys.stderr)
        return 1
    debug_address = (LOOPBACK, ports["--debug-port"]) if names else None
    fleet_metrics_port = ports["--fleet-metrics-port"]
    fleet_metrics = f"http://{LOOPBACK}:{fleet_metrics_port}{FLEET_METRICS_PATH}"
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    kubeconfig = Path(args.kubeconfig).expanduser().absolute()
    converter = up_webhook.prepare(kubeconfig.parent)
    hub: LocalHub | _RealHub
    if args.hub == HUB_NAME:
        hub = _RealHub(args.port, args.data, converter.client_config())
    else:
        hub = LocalHub(port=args.port, data=args.data, conversion_webhook=converter.client_config())
    try:
        await hub.start()
    except OSError as exc:
        print(f"ocm-rollout up: error: cannot listen on port {args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except (ValueError, MissingBinaries, StartError) as exc:  # e.g. a --data file written by an incompatible build
        print(f"ocm-rollout up: error: {exc}", file=sys.stderr)
        await hub.stop()
        return 1
    exit_code = 0
    children: list[Child] = []
    view_task: asyncio.Task[None] | None = None
    try:
        _written(hub, kubeconfig)
        debug = _debug_line(debug_address, names)
        dashboard = None if listening is None else f"http://{LOOPBACK}:{listening.getsockname()[1]}/"
        banner = usage_lines(hub.url, kubeconfig, args.clusters, names, debug, fleet_metrics, dashboard, hub=args.hub)
        endpoints = {"hub": hub.url, "kubeconfig": str(kubeconfig), "fleetMetrics": fleet_metrics}
        if debug is not None:
            endpoints["debug"] = debug
        if dashboard is not None:
            endpoints["dashboard"] = dashboard
        write_endpoints(kubeconfig.parent, endpoints)
        if interactive:
            banner.append(f"logs: {kubeconfig.parent / LOG_FILE_NAME}")
        else:
            for line in banner:
                print(line, flush=True)
        children = [
            converter.child(kubeconfig, args.log_level),
            *_children(args, names, kubeconfig, debug_address, fleet_metrics_port),
        ]
        if listening is not None:
            fd = listening.fileno()
            children.append(Child("the dashboard", _dashboard_argv(kubeconfig, fd, args.log_level), pass_fds=(fd,)))
        for child in children:
            await child.start(output)
        if not args.no_view:
            kube = Kube(_client(kubeconfig), field_manager="ocm-rollout-view")
            view = LiveView(kube, header=banner, interactive=interactive)
            view_task = asyncio.create_task(view.run(stop), name="view")
        exit_code = await _supervise(children, view_task, stop)
    finally:
        stop.set()
        await stop_all(children)
        if listening is not None:
            listening.close()
        if view_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(view_task), SHUTDOWN_TIMEOUT_SECONDS)
            except (TimeoutError, Exception):
                view_task.cancel()
                await asyncio.gather(view_task, return_exceptions=True)
        await hub.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
    if not interactive or exit_code:
        print("ocm-rollout up: stopped" if exit_code == 0 else "ocm-rollout up: stopped after an error",
              file=sys.stderr)
    return exit_code


def _written(hub: LocalHub | _RealHub, kubeconfig: Path) -> Path:
    return hub.write_kubeconfig(kubeconfig)


class _RealHub:
    """``KubeHub`` (etcd, kube-apiserver, kube-controller-manager) started and stopped from the
    event loop; its files in ``data`` (kept) or a temporary directory (removed at the end)."""

    def __init__(self, port: int, data: str | None, conversion_webhook: dict[str, Any]) -> None:
        self.temporary = data is None
        directory = Path(tempfile.mkdtemp(prefix="ocm-rollout-kube-hub-")) if data is None else Path(data).expanduser()
        self.hub = KubeHub(directory, port=port, conversion_webhook=conversion_webhook)

    @property
    def url(self) -> str:
        return self.hub.url

    def write_kubeconfig(self, path: Path) -> Path:
        return self.hub.write_kubeconfig(path)

    async def start(self) -> None:
        print(f"starting etcd, kube-apiserver and kube-controller-manager in {self.hub.directory} ...",
              file=sys.stderr, flush=True)
        # On this (the main) thread: its processes end with it when up dies (PR_SET_PDEATHSIG
        # counts the thread that started them). Nothing else runs yet.
        self.hub.start()

    async def stop(self) -> None:
        await asyncio.to_thread(self.hub.stop)
        if self.temporary:
            shutil.rmtree(self.hub.directory, ignore_errors=True)


async def _supervise(children: Sequence[Child], view: asyncio.Task[None] | None, stop: asyncio.Event) -> int:
    """Wait for ``stop``; a child or the view that ends on its own before that stops everything
    (exit 1)."""
    stopping = asyncio.ensure_future(stop.wait())
    waits: dict[asyncio.Future[Any], str] = {asyncio.ensure_future(c.wait()): c.name for c in children}
    if view is not None:
        waits[view] = "the live view"
    try:
        done, _ = await asyncio.wait({stopping, *waits}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        for future in waits:
            if future is not view:
                future.cancel()
    if stop.is_set():
        return 0
    for future in done:
        if future is stopping:
            continue
        name = waits[future]
        if future is view:
            error = None if view.cancelled() else view.exception()
            log.error("%s ended unexpectedly", name, exc_info=error)
            print(f"ocm-rollout up: error: {name} stopped: {error!r}", file=sys.stderr)
        else:
            print(f"ocm-rollout up: error: {name} stopped (exit code {future.result()})", file=sys.stderr)
    return 1
