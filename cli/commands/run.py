"""``ocm-rollout run``: the controllers against a real cluster (or any kubeconfig), with
Lease-based leader election, probes, metrics, structured logs and graceful shutdown."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ocm_rollout.api.addon_conversion import review
from ocm_rollout.client import fencing
from ocm_rollout.client import logging as runtime_logging
from ocm_rollout.client.collector import tune_collector
from ocm_rollout.client.kubeconfig import KubeconfigError, load_client
from ocm_rollout.controllers.rollout import work_config
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders
from ocm_rollout.controllers.rollout.plugin.config import PluginRegistry
from ocm_rollout.controllers.runtime import health, leader, metrics, operator, registry, webhook

log = logging.getLogger("controllers.run")

DEFAULT_LEASE_NAME = "ocm-rollout-controllers"
DUPLICATE_SIGNAL_WINDOW = 1.0


class UsageError(ValueError):
    """Bad flags: printed as one line, exit code 2."""


@dataclass
class RunConfig:
    controllers: list[str]
    kubeconfig: str | None
    namespaces: list[str] | None
    leader_elect: bool
    lease_name: str
    lease_namespace: str
    identity: str
    timings: leader.LeaseTimings
    health_address: tuple[str, int] | None
    metrics_address: tuple[str, int] | None
    debug_address: tuple[str, int] | None
    webhook_address: tuple[str, int] | None = None
    webhook_cert_dir: Path | None = None
    # --work-config: the registered rollout plugins and metric providers (empty without the flag).
    plugins: PluginRegistry = field(default_factory=PluginRegistry)
    metric_providers: MetricProviders = field(default_factory=MetricProviders)


def _seconds(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (e.g. 15 or 15s), got {text!r}") from None
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "run",
        help="run the controllers against a cluster (leader election, probes, metrics)",
        description=(
            "Run the chosen controllers with kopf against the in-cluster config or a kubeconfig. "
            "With leader election (the default) only the replica holding the Lease reconciles; "
            "the others wait warm and take over when it goes away."
        ),
    )
    parser.add_argument(
        "--controllers",
        default="all",
        metavar="NAMES",
        help=(
            f"comma-separated controllers to run, 'all', or 'none' (only the webhook and probes) "
            f"(known: {', '.join(registry.CONTROLLERS)})"
        ),
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="kubeconfig to use (default: the in-cluster config, else $KUBECONFIG or ~/.kube/config)",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        "-n",
        dest="namespaces",
        action="append",
        metavar="NS",
        help="watch only this namespace (repeatable); cluster-scoped kinds are always watched",
    )
    scope.add_argument("--all-namespaces", "-A", action="store_true", help="watch every namespace (the default)")
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect a leader through a coordination.k8s.io Lease (default: on)",
    )
    parser.add_argument("--lease-name", default=DEFAULT_LEASE_NAME, help="name of the Lease (default: %(default)s)")
    parser.add_argument(
        "--lease-namespace",
        default=None,
        help="namespace of the Lease (default: $POD_NAMESPACE, else the service account's namespace, else 'default')",
    )
    parser.add_argument(
        "--lease-duration",
        type=_seconds,
        default=15.0,
        metavar="SECONDS",
        help="how long standbys wait, after the Lease last changed, before taking it over (default: 15)",
    )
    parser.add_argument(
        "--renew-deadline",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long the leader keeps trying to renew before it stops acting (default: 10)",
    )
    parser.add_argument(
        "--retry-period",
        type=_seconds,
        default=2.0,
        metavar="SECONDS",
        help="time between renewals and acquisition attempts (default: 2)",
    )
    parser.add_argument(
        "--identity",
        default=None,
        help="this replica's identity in the Lease (default: <hostname>_<random uuid>)",
    )
    parser.add_argument(
        "--health-bind-address",
        default=":8081",
        metavar="ADDR",
        help="HOST:PORT for /healthz and /readyz, or 0 to disable (default: %(default)s)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        default=":8080",
        metavar="ADDR",
        help="HOST:PORT for /metrics, or 0 to disable (default: %(default)s)",
    )
    parser.add_argument(
        "--debug-bind-address",
        default="0",
        metavar="ADDR",
        help="HOST:PORT for the controllers' debug endpoints (e.g. /debug/placements/NS/NAME), or 0 (default)",
    )
    parser.add_argument(
        "--webhook-bind-address",
        default="0",
        metavar="ADDR",
        help="HOST:PORT for the add-on kinds' conversion webhook (HTTPS, POST /convert), or 0 (default)",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        default=None,
        metavar="DIR",
        help="directory holding the webhook's tls.crt and tls.key (reloaded when they change)",
    )
    parser.add_argument(
        "--work-config",
        default=None,
        metavar="PATH",
        help=(
            "the work controller's configuration file (OCM's work-controller-config config.yaml): "
            "its 'plugins' list registers the rollout plugins ManifestWorkReplicaSets may name, its "
            "'metricProviders' list the metric providers metric checks may name"
        ),
    )
    parser.add_argument(
        "--log-format",
        choices=runtime_logging.FORMATS,
        default="text",
        help="log line format (default: %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        choices=runtime_logging.LEVELS,
        default="info",
        help="lowest level logged (default: %(default)s)",
    )
    parser.set_defaults(func=main)


def _default_lease_namespace() -> str:
    from_env = os.environ.get("POD_NAMESPACE")
    if from_env:
        return from_env
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as handle:
            found = handle.read().strip()
    except OSError:
        found = ""
    return found or "default"


def build_config(args: argparse.Namespace) -> RunConfig:
    """Validate every flag; raises UsageError with a one-line message."""
    try:
        names = [] if args.controllers.strip() == "none" else registry.parse_controller_names(args.controllers)
    except registry.UnknownControllerError as exc:
        raise UsageError(f"--controllers: {exc}") from None
    if not names and args.controllers.strip() != "none":
        raise UsageError("--controllers: no controller is available in this build")
    timings = leader.LeaseTimings(args.lease_duration, args.renew_deadline, args.retry_period)
    try:
        timings.validate()
    except leader.LeaderElectionConfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        health_address = health.parse_bind_address(args.health_bind_address, "--health-bind-address")
        metrics_address = health.parse_bind_address(args.metrics_bind_address, "--metrics-bind-address")
        debug_address = health.parse_bind_address(args.debug_bind_address, "--debug-bind-address")
        webhook_address = health.parse_bind_address(args.webhook_bind_address, "--webhook-bind-address")
    except health.BindAddressError as exc:
        raise UsageError(str(exc)) from None
    try:
        load_client(args.kubeconfig)
    except KubeconfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        work = work_config.load(args.work_config) if args.work_config else work_config.WorkConfig()
    except work_config.WorkConfigError as exc:
        raise UsageError(f"--work-config: {exc}") from None
    namespaces = sorted(set(args.namespaces)) if args.namespaces else None
    if namespaces is not None and any(not ns.strip() for ns in namespaces):
        raise UsageError("--namespace must not be empty")
    if not args.lease_name.strip():
        raise UsageError("--lease-name must not be empty")
    return RunConfig(
        controllers=names,
        kubeconfig=args.kubeconfig,
        namespaces=namespaces,
        leader_elect=bool(args.leader_elect),
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace or _default_lease_namespace(),
        identity=args.identity or leader.default_identity(),
        timings=timings,
        health_address=health_address,
        metrics_address=metrics_address,
        debug_address=debug_address,
        webhook_address=webhook_address,
        webhook_cert_dir=_webhook_cert_dir(args, webhook_address),
        plugins=work.plugins,
        metric_providers=work.metric_providers,
    )


def _webhook_cert_dir(args: argparse.Namespace, address: tuple[str, int] | None) -> Path | None:
    if address is None:
        return None
    if not args.webhook_cert_dir:
        raise UsageError("--webhook-bind-address needs --webhook-cert-dir (a directory with tls.crt and tls.key)")
    directory = Path(args.webhook_cert_dir)
    missing = [f for f in (webhook.CERT_FILE, webhook.KEY_FILE) if not (directory / f).is_file()]
    if missing:
        raise UsageError(f"--webhook-cert-dir {directory}: {' and '.join(missing)} not found")
    return directory


def main(args: argparse.Namespace) -> int:
    try:
        runtime_logging.configure(args.log_format, args.log_level)
        config = build_config(args)
    except (UsageError, runtime_logging.LogConfigError) as exc:
        print(f"ocm-rollout run: error: {exc}", file=sys.stderr)
        return 2
    tune_collector()
    return asyncio.run(serve(config))


async def serve(config: RunConfig) -> int:
    """Run until SIGTERM/SIGINT; returns the exit code."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    main_task = asyncio.current_task()
    first_signal: list[float] = []

    def on_signal(signum: int) -> None:
        # A second signal aborts a slow graceful shutdown; one arriving within a second of the
        # first is the same request delivered twice (to the process and to its group).
        if first_signal and loop.time() - first_signal[0] < DUPLICATE_SIGNAL_WINDOW:
            return
        if stop.is_set():
            log.warning("second signal: aborting", extra={"signal": signal.Signals(signum).name})
            if main_task is not None:
                main_task.cancel()
            return
        log.info("shutting down", extra={"signal": signal.Signals(signum).name})
        first_signal.append(loop.time())
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)

    state = health.RunState(leader_election=config.leader_elect, lease_duration=config.timings.lease_duration)
    server = health.ProbeServer(state, config.health_address, config.metrics_address)
    await server.start()
    converter = await _start_webhook(config)
    log.info(
        "starting",
        extra={
            "controllers": ",".join(config.controllers),
            "namespaces": ",".join(config.namespaces) if config.namespaces else "*",
            "leader_elect": config.leader_elect,
            "identity": config.identity,
        },
    )
    try:
        if not config.controllers:
            state.role = health.Role.LEADER
            state.operator_ready = True
            await stop.wait()
            return 0
        if config.leader_elect:
            return await _run_elected(config, state, stop)
        return await _run_unelected(config, state, stop)
    except asyncio.CancelledError:
        return 130
    finally:
        state.role = health.Role.STOPPING
        if converter is not None:
            await converter.stop()
        await server.stop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        log.info("stopped")


async def _start_webhook(config: RunConfig) -> webhook.WebhookServer | None:
    """The conversion webhook, served by every replica (the API server may call any)."""
    if config.webhook_address is None or config.webhook_cert_dir is None:
        return None
    server = webhook.WebhookServer(config.webhook_address, config.webhook_cert_dir, review)
    await server.start()
    return server


def _start_operator(
    config: RunConfig, state: health.RunState, stop: asyncio.Event, fence: fencing.WriteFence = fencing.UNFENCED
) -> asyncio.Task[None]:
    ready = asyncio.Event()

    async def mark_ready() -> None:
        await ready.wait()
        state.operator_ready = True
        log.info("operator started", extra={"controllers": ",".join(config.controllers)})

    async def run() -> None:
        marker = asyncio.create_task(mark_ready())
        try:
            await operator.run_operator(
                config.controllers,
                kubeconfig=config.kubeconfig,
                namespaces=config.namespaces,
                stop=stop,
                ready=ready,
                debug_address=config.debug_address,
                fence=fence,
                plugins=config.plugins,
                metric_providers=config.metric_providers,
            )
        finally:
            marker.cancel()
            state.operator_ready = False

    return asyncio.create_task(run(), name="ocm-rollout operator")


async def _run_unelected(config: RunConfig, state: health.RunState, stop: asyncio.Event) -> int:
    metrics.set_leader("none", True)
    state.role = health.Role.LEADER
    task = _start_operator(config, state, stop)
    try:
        await task
    except Exception as exc:
        log.error("the operator failed", exc_info=exc)
        return 1
    return 0


async def _run_elected(config: RunConfig, state: health.RunState, stop: asyncio.Event) -> int:
    lease_key = f"{config.lease_namespace}/{config.lease_name}"
    client = leader.LeaseClient(
        load_client(config.kubeconfig),
        name=config.lease_name,
        namespace=config.lease_namespace,
        timeout=config.timings.renew_deadline,
    )

    def on_change(leading: bool) -> None:
        change = "acquired" if leading else ("released" if stop.is_set() or releasing else "lost")
        metrics.set_leader(lease_key, leading, change=change)

    def on_step(elector: leader.LeaderElector, decision: leader.Decision) -> None:
        state.last_api_contact = elector.last_contact
        state.leader_identity = elector.observed_holder

    # The operator's writes are admitted only while the Lease is ours (fencing.py): a leader
    # that cannot renew sends nothing after its renew deadline, even from a pass still running.
    fence = fencing.WriteFence()
    elector = leader.LeaderElector(
        client, config.identity, config.timings, on_change=on_change, on_step=on_step, fence=fence
    )
    metrics.set_leader(lease_key, False)
    releasing = False
    placeholder = (
        health.DebugPlaceholder(state, config.debug_address) if config.debug_address is not None else None
    )
    try:
        while not stop.is_set():
            state.role = health.Role.STANDBY
            if placeholder is not None:
                try:
                    await placeholder.start()
                except OSError as exc:  # the port not yet freed by a stopping operator
                    log.warning("debug placeholder not started", extra={"error": str(exc)})
            log.info("waiting for leadership", extra={"lease": lease_key, "identity": config.identity})
            if not await elector.acquire(stop):
                break
            state.role = health.Role.LEADER
            if placeholder is not None:
                await placeholder.stop()
            operator_stop = asyncio.Event()
            op_task = _start_operator(config, state, operator_stop, fence)
            hold_task = asyncio.create_task(elector.hold(stop), name="ocm-rollout lease renewal")
            await asyncio.wait({op_task, hold_task}, return_when=asyncio.FIRST_COMPLETED)
            if op_task.done():
                hold_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await hold_task
                error = op_task.exception()
                if error is not None:
                    log.error("the operator failed", exc_info=error)
                releasing = True
                await elector.release()
                return 1 if error is not None else 0
            if stop.is_set():
                # Graceful: let in-flight reconciles finish, then hand the Lease over.
                operator_stop.set()
                with contextlib.suppress(Exception):
                    await op_task
                break
            # Lost the Lease: stop acting at once, then stand by again.
            log.warning("leadership lost: stopping the operator now", extra={"lease": lease_key})
            op_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await op_task
    finally:
        if placeholder is not None:
            await placeholder.stop()
    if elector.is_leader or elector.observed_holder == config.identity:
        releasing = True
        await elector.release()
    return 0
