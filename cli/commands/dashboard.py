"""``ocm-rollout dashboard [--kubeconfig PATH] [--address 127.0.0.1] [--port 3100] [--read-only]``:
every rollout of the fleet in a browser, live, with its actions (``ocm_rollout.cli.dashboard``).

Against any hub: a real cluster or ``ocm-rollout up`` (which serves it too). The hub: --kubeconfig,
else $KUBECONFIG, else ./.ocm-rollout/kubeconfig, else the in-cluster config. The server acts with
that identity only, so the hub's RBAC decides what it may show and do. It listens on loopback
unless --address says otherwise; --read-only shows no action and refuses every one.

Prints ``dashboard: http://ADDRESS:PORT/`` once listening (port 0 picks a free one); runs until
Ctrl-C or SIGTERM. Exit codes: 0 stopped, 1 the kubeconfig or the port cannot be used, 2 bad
arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys

from kubernetes.client import ApiClient

from ocm_rollout.cli.commands.rollout import DEFAULT_KUBECONFIG, kubeconfig_path
from ocm_rollout.client import logging as runtime_logging
from ocm_rollout.client.collector import tune_collector
from ocm_rollout.client.kube import Kube
from ocm_rollout.client.kubeconfig import KubeconfigError, load_client

DEFAULT_PORT = 3100
DEFAULT_ADDRESS = "127.0.0.1"
FIELD_MANAGER = "ocm-rollout-dashboard"
CONNECTION_POOL_SIZE = 32


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "dashboard",
        help="serve a browser dashboard of every rollout, live, with pause/resume/abort/retry/undo/promote",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kubeconfig", default=None, metavar="PATH",
        help=f"kubeconfig of the hub (default: $KUBECONFIG, else {DEFAULT_KUBECONFIG}, else in-cluster)",
    )
    parser.add_argument(
        "--address", default=DEFAULT_ADDRESS, metavar="ADDR",
        help=f"address to listen on (default: {DEFAULT_ADDRESS}, loopback only)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, metavar="P", help=f"port to listen on; 0 picks a free one (default: {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--listen-fd", type=int, default=None, metavar="FD",
        help="serve on this inherited listening socket instead of binding --address/--port (how `up` runs it)",
    )
    parser.add_argument("--read-only", action="store_true", help="show no action and refuse every state-changing request")
    parser.add_argument("--log-level", default="warning", choices=runtime_logging.LEVELS, help="(default: warning)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print(f"ocm-rollout dashboard: error: --port: must be between 0 and 65535, got {args.port}", file=sys.stderr)
        return 2
    runtime_logging.configure("text", args.log_level, stream=sys.stderr)
    tune_collector()
    path = kubeconfig_path(args.kubeconfig)
    if path is not None and not os.path.exists(os.path.expanduser(path)):
        hint = " (start a local hub with `ocm-rollout up`, or pass --kubeconfig)" if args.kubeconfig is None else ""
        print(f"ocm-rollout dashboard: error: kubeconfig {path} does not exist{hint}", file=sys.stderr)
        return 1
    try:
        configuration = load_client(path).configuration
        # One connection per watched kind, plus the pages' actions.
        configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
        kube = Kube(ApiClient(configuration), field_manager=FIELD_MANAGER)
    except KubeconfigError as exc:
        print(f"ocm-rollout dashboard: error: {exc}", file=sys.stderr)
        return 1
    return asyncio.run(_serve(kube, args))


async def _serve(kube: Kube, args: argparse.Namespace) -> int:
    from ocm_rollout.cli.dashboard.security import is_loopback
    from ocm_rollout.cli.dashboard.server import Dashboard

    listening = None
    if args.listen_fd is not None:
        try:
            listening = socket.socket(fileno=args.listen_fd)
        except OSError as exc:
            print(f"ocm-rollout dashboard: error: --listen-fd {args.listen_fd}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        args.address = str(listening.getsockname()[0])
    loopback = is_loopback(args.address)
    if not loopback:
        print(
            f"ocm-rollout dashboard: warning: listening on {args.address}, not loopback: anyone who can reach it "
            "sees the hub as this kubeconfig's identity does" + ("" if args.read_only else " and can act as it"),
            file=sys.stderr,
        )
    dashboard = Dashboard(kube, read_only=args.read_only, loopback_only=loopback)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, dashboard.stop.set)

    def ready(url: str) -> None:
        print(f"dashboard: {url}" + ("  (read-only)" if args.read_only else ""), flush=True)

    try:
        await dashboard.serve(args.address, args.port, ready=ready, sock=listening)
    except OSError as exc:
        print(f"ocm-rollout dashboard: error: cannot listen on {args.address}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
    return 0
