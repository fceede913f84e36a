"""Run the chosen controllers as one kopf operator: the one entry point ``run`` and ``up`` share.

``run_operator`` constructs the named controllers (``registry``: each declares into its own
``shell.Runtime``), installs their declarations on a fresh kopf registry (``shell.install``), adds a
login handler for the given kubeconfig (or the in-cluster config), and runs kopf with the
project's settings until ``stop`` is set (graceful: in-flight reconciles finish) or the
calling task is cancelled (immediate: every kopf task is cancelled at once, which is what a
leader that lost its Lease needs).

kopf runs in a thread of its own with its own event loop. Two things make that the safe
choice for an embedded operator: kopf installs SIGINT/SIGTERM handlers when it starts on the
main thread (the runner owns the signals: it must release the Lease on SIGTERM), and when kopf
stops it cancels *every* task created in its loop after it started (in a shared loop that
would include the probe server's and the local hub's connections). Run in its own loop, kopf
only ever sees its own tasks, and it can be started and stopped many times in one process.

kopf settings: standalone (no peering; leader election is ours), resource scanning disabled
(no CRD or namespace watch, so no RBAC for them; the CRDs must exist when the operator starts,
which the Helm chart and the local hub guarantee), watch requests bounded by a server-side
timeout, no ultimate SIGKILL (the runner decides when the process exits).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import kopf
from aiohttp import web
from kubernetes.client import Configuration

from ocm_rollout.client.fencing import UNFENCED, WriteFence
from ocm_rollout.client.kube import Kube
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders
from ocm_rollout.controllers.rollout.plugin.config import PluginRegistry
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.registry import Handles, build
from ocm_rollout.controllers.runtime.shell import ControllerContext, install

log = logging.getLogger(__name__)

# How long a cancelled operator may take to unwind before we stop waiting for it.
CANCEL_GRACE_SECONDS = 30.0
# kopf's non-watch requests.
REQUEST_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0


def connection_info(configuration: Configuration) -> kopf.ConnectionInfo:
    """kopf's credentials from a configured ``kubernetes`` client.

    The bearer token is read through ``get_api_key_with_prefix``, which runs the client's
    refresh hook (in-cluster token rotation, exec plugins); newer clients keep it under
    ``BearerToken``, older ones under ``authorization``.
    """
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    scheme: str | None = None
    token: str | None = None
    if header:
        first, _, rest = header.partition(" ")
        scheme, token = (first, rest) if rest else (None, first)
    return kopf.ConnectionInfo(
        server=str(configuration.host),
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
    )


def install_login(registry: kopf.OperatorRegistry, kubeconfig: str | None) -> None:
    """Make kopf authenticate exactly as the ``kubernetes`` client does for ``kubeconfig``.

    The configuration is loaded again on every login (kopf logs in at start and after a 401),
    so rotated tokens and certificates are picked up.
    """

    @kopf.on.login(registry=registry, id="ocm-rollout-login")
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(load_client(kubeconfig).configuration)


def operator_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.peering.mandatory = False
    settings.scanning.disabled = True
    settings.process.ultimate_exiting_timeout = None
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    # kopf's own requests (listings, discovery, patches) are bounded like ours (client/kube.py).
    settings.networking.request_timeout = REQUEST_TIMEOUT_SECONDS
    settings.networking.connect_timeout = CONNECT_TIMEOUT_SECONDS
    settings.posting.reporting_component = "ocm-rollout"
    return settings


@dataclass
class _Inner:
    loop: asyncio.AbstractEventLoop
    stop: asyncio.Event
    task: asyncio.Task[None]


async def run_operator(
    names: Sequence[str],
    *,
    kubeconfig: str | None = None,
    namespaces: Sequence[str] | None = None,
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
    workers: int | None = None,
    clock: Callable[[], datetime] | None = None,
    handles: Handles | None = None,
    debug_address: tuple[str, int] | None = None,
    fence: WriteFence = UNFENCED,
    plugins: PluginRegistry | None = None,
    metric_providers: MetricProviders | None = None,
) -> None:
    """Run the named controllers until ``stop`` is set; cancel the caller's task to abort.

    - ``names``: controller names (``registry.parse_controller_names``).
    - ``kubeconfig``: a path, or None for the in-cluster config (else the default kubeconfig).
    - ``namespaces``: watch only these; None or empty watches all namespaces.
    - ``ready``: set once kopf has started (startup handlers done).
    - ``handles``: filled with the running controllers (by name and class) once they are built.
    - ``debug_address``: serve the controllers' routes (``Runtime.routes``) there.
    - ``fence``: admits every write the controllers send (the leader's Lease, ``fencing.py``).
    - ``plugins``: the registered rollout plugins (``ControllerContext.plugins``); None: none.
    - ``metric_providers``: the registered metric providers (``ControllerContext.metric_providers``);
      None: none.

    Raises ``KubeconfigError`` before starting anything if the kubeconfig is unusable, and
    re-raises whatever made kopf itself fail. Returns only once every kopf task has ended.
    """
    api_client = load_client(kubeconfig)
    outer = asyncio.get_running_loop()
    started: concurrent.futures.Future[_Inner] = concurrent.futures.Future()
    finished: concurrent.futures.Future[None] = concurrent.futures.Future()
    running = handles if handles is not None else Handles()
    running.clear()
    context = ControllerContext(kube=Kube(api_client, fence=fence), namespaces=list(namespaces) if namespaces else None)
    if workers is not None:
        context.workers = workers
    if clock is not None:
        context.clock = clock
    if plugins is not None:
        context.plugins = plugins
    if metric_providers is not None:
        context.metric_providers = metric_providers
    context.on_reconcile = metrics.on_reconcile
    context.on_queue_depth = metrics.on_queue_depth

    async def inner_main() -> None:
        loop = asyncio.get_running_loop()
        inner_stop = asyncio.Event()
        inner_ready = asyncio.Event()
        task = asyncio.current_task()
        assert task is not None
        started.set_result(_Inner(loop, inner_stop, task))
        registry = kopf.OperatorRegistry()
        for runtime in build(names, context, running):
            install(runtime, registry)
        install_login(registry, kubeconfig)
        debug_runner = await _start_debug(running.routes(), debug_address)

        async def relay_ready() -> None:
            await inner_ready.wait()
            if ready is not None:
                outer.call_soon_threadsafe(ready.set)

        relay = asyncio.create_task(relay_ready(), name="ocm-rollout ready relay")
        try:
            await kopf.operator(
                registry=registry,
                settings=operator_settings(),
                standalone=True,
                clusterwide=not namespaces,
                namespaces=list(namespaces or ()),
                stop_flag=inner_stop,
                ready_flag=inner_ready,
            )
        finally:
            relay.cancel()
            if debug_runner is not None:
                await debug_runner.cleanup()

    def thread_main() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        outcome: BaseException | None = None
        try:
            loop.run_until_complete(inner_main())
        except asyncio.CancelledError:
            outcome = None
        except BaseException as exc:
            outcome = exc
            if not started.done():
                started.set_exception(exc)
        finally:
            try:
                _drain(loop)
            finally:
                loop.close()
                if outcome is None:
                    finished.set_result(None)
                else:
                    finished.set_exception(outcome)

    thread = threading.Thread(target=thread_main, name="kopf-operator", daemon=True)
    thread.start()
    done = asyncio.wrap_future(finished)
    inner: _Inner | None = None
    waited = False
    try:
        inner = await asyncio.wrap_future(started)
        stopping: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
        waiting: set[asyncio.Future[object]] = {stopping, done}  # type: ignore[arg-type]
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not done.done():
            log.info("stopping the operator")
            inner.loop.call_soon_threadsafe(inner.stop.set)
        await asyncio.shield(done)
    except asyncio.CancelledError:
        if inner is None and not done.done():
            inner = await _started_or_none(started)
        if inner is not None and not done.done():
            log.warning("aborting the operator")
            inner.loop.call_soon_threadsafe(inner.task.cancel)
        waited = True
        await _wait_quietly(done, CANCEL_GRACE_SECONDS)
        raise
    finally:
        if not done.done() and not waited:  # one grace period, not two (a lost lease)
            await _wait_quietly(done, CANCEL_GRACE_SECONDS)


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel whatever an aborted kopf left running, and let it unwind (bounded)."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=CANCEL_GRACE_SECONDS))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())


async def _started_or_none(started: concurrent.futures.Future[_Inner]) -> _Inner | None:
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(started)), timeout=CANCEL_GRACE_SECONDS)
    except BaseException:
        return None


async def _wait_quietly(done: asyncio.Future[None], timeout: float) -> None:
    try:
        await asyncio.wait_for(asyncio.shield(done), timeout=timeout)
    except TimeoutError:
        log.error("the operator did not stop in time", extra={"seconds": timeout})
    except BaseException as exc:  # its own failure, already reported by the caller's path
        log.debug("operator ended with %r", exc)


async def _start_debug(routes: list[web.RouteDef], address: tuple[str, int] | None) -> web.AppRunner | None:
    if address is None or not routes:
        return None
    app = web.Application()
    app.router.add_routes(routes)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, address[0], address[1], reuse_address=True)
    await site.start()
    log.info("serving debug endpoints", extra={"address": f"{address[0]}:{address[1]}", "purpose": "debug"})
    return runner
