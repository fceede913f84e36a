"""A smoke-test rollout plugin (OCM enhancement 231's RolloutPluginService) for ocm-rollout.

ValidateRolloutCompletion answers SUCCEEDED once a smoke check passes: an HTTP GET of
``--check-url`` (``{cluster}``, ``{namespace}``, ``{name}`` and ``{placement}`` are filled in)
returning 2xx, or, without a URL, on the ``--succeed-after``-th call for that cluster. After
``--fail-after`` calls that did not pass, it answers FAILED. MutateManifestWork adds annotations
saying where the cluster stands in the rollout. Every other call is logged and answered OK.

Run ``python examples/plugins/smoke/server.py --help`` (with ocm-rollout installed) for the flags;
each has an environment variable (SMOKE_PLUGIN_<FLAG>). See README.md next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import grpc

from ocm_rollout.controllers.rollout.plugin import proto

log = logging.getLogger("smoke-plugin")

ANNOTATION_PREFIX = "smoke.rollout-plugin.ocm-rollout.io/"


class SmokePlugin:
    def __init__(
        self,
        *,
        succeed_after: int = 1,
        fail_after: int = 0,
        check_url: str | None = None,
        check_timeout: float = 5.0,
        delays: dict[str, float] | None = None,
        fail_initialize: str | None = None,
        flaky: float = 0.0,
        seed: int | None = None,
    ) -> None:
        self.succeed_after = succeed_after
        self.fail_after = fail_after
        self.check_url = check_url
        self.check_timeout = check_timeout
        self.delays = delays or {}
        self.fail_initialize = fail_initialize
        #: The share of calls (other than Initialize) answered UNAVAILABLE, as a plugin restarting.
        self.flaky = flaky
        self.random = random.Random(seed)
        #: Calls per rpc name, and ValidateRolloutCompletion calls per (namespace, name, placement, cluster).
        self.calls: Counter[str] = Counter()
        self.validations: Counter[tuple[str, str, str, str]] = Counter()

    async def _enter(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.calls[method] += 1
        delay = self.delays.get(method, 0.0)
        if delay:
            await asyncio.sleep(delay)
        if self.flaky and method != "Initialize" and self.random.random() < self.flaky:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "smoke plugin: flaky (--flaky)")

    async def initialize(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await self._enter("Initialize", context)
        log.info("Initialize plugin_name=%s", request.plugin_name)
        if self.fail_initialize:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, self.fail_initialize)
        return proto.InitializeResponse()

    async def begin_rollout(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await self._enter("BeginRollout", context)
        log.info("BeginRollout %s/%s placement=%s cluster=%s", request.mwrs_namespace, request.mwrs_name,
                 request.placement_name, request.cluster_name)
        return proto.Empty()

    async def progress_rollout(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await self._enter("ProgressRollout", context)
        status = request.rollout_status
        log.info(
            "ProgressRollout %s/%s placement=%s completed=%d progressing=%d timedOut=%d removed=%d of %d",
            request.mwrs_namespace, request.mwrs_name, request.placement_name, len(status.completed_clusters),
            len(status.progressing_clusters), len(status.timed_out_clusters), len(status.removed_clusters),
            request.total_cluster_count,
        )
        return proto.Empty()

    async def _check(self, request: Any) -> tuple[bool, str]:
        if self.check_url is None:
            return False, ""
        url = self.check_url.format(
            cluster=request.cluster_name, namespace=request.mwrs_namespace, name=request.mwrs_name,
            placement=request.placement_name,
        )
        try:
            timeout = aiohttp.ClientTimeout(total=self.check_timeout)
            async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
                ok = 200 <= response.status < 300
                return ok, f"GET {url}: HTTP {response.status}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            return False, f"GET {url}: {exc or type(exc).__name__}"

    async def validate_rollout_completion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await self._enter("ValidateRolloutCompletion", context)
        key = (request.mwrs_namespace, request.mwrs_name, request.placement_name, request.cluster_name)
        self.validations[key] += 1
        count = self.validations[key]
        if self.check_url is not None:
            passed, message = await self._check(request)
        else:
            passed, message = count >= self.succeed_after, f"call {count} of {self.succeed_after}"
        if passed:
            result = proto.SUCCEEDED
        elif self.fail_after and count >= self.fail_after:
            result, message = proto.FAILED, f"smoke check did not pass in {count} calls: {message}"
        else:
            result = proto.INPROGRESS
        log.info("ValidateRolloutCompletion %s -> %s (%s)", "/".join(key), proto.RESULT_NAMES[result], message)
        return proto.ValidateResponse(result=result, message=message)

    async def mutate_manifest_work(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await self._enter("MutateManifestWork", context)
        try:
            work = json.loads(request.manifest_work)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"manifest_work is not JSON: {exc}")
        if not isinstance(work, dict):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "manifest_work is not a JSON object")
        status = request.rollout_status
        done = len(status.completed_clusters)
        annotations = work.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION_PREFIX + "placement"] = request.placement_name
        annotations[ANNOTATION_PREFIX + "position"] = f"{done + 1}/{request.total_cluster_count}"
        return proto.MutateManifestWorkResponse(manifest_work=json.dumps(work).encode())

    def handler(self) -> grpc.GenericRpcHandler:
        implementations: dict[str, Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]] = {
            "Initialize": self.initialize,
            "BeginRollout": self.begin_rollout,
            "ProgressRollout": self.progress_rollout,
            "ValidateRolloutCompletion": self.validate_rollout_completion,
            "MutateManifestWork": self.mutate_manifest_work,
        }
        handlers = {
            name: grpc.unary_unary_rpc_method_handler(
                implementations[name],
                request_deserializer=proto.deserializer(method.request),
                response_serializer=proto.serializer,
            )
            for name, method in proto.METHODS.items()
        }
        return grpc.method_handlers_generic_handler(proto.SERVICE_NAME, handlers)


async def start_server(
    plugin: SmokePlugin, address: str, tls: tuple[bytes, bytes] | None = None
) -> tuple[grpc.aio.Server, int]:
    """Serve ``plugin`` at ``address`` (``HOST:PORT``, port 0 picks one); ``tls`` is
    (certificate chain PEM, key PEM). Returns the started server and its port."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((plugin.handler(),))
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        credentials = grpc.ssl_server_credentials([(tls[1], tls[0])])
        port = server.add_secure_port(address, credentials)
    await server.start()
    return server, port


def _delays(values: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for value in values:
        method, sep, seconds = value.partition("=")
        if not sep or method not in proto.METHODS:
            raise argparse.ArgumentTypeError(f"--delay: expected METHOD=SECONDS with METHOD one of {', '.join(proto.METHODS)}")
        out[method] = float(seconds)
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default=env("SMOKE_PLUGIN_ADDRESS", "127.0.0.1:10843"),
                        help="HOST:PORT to listen on (default: %(default)s)")
    parser.add_argument("--tls-cert", default=env("SMOKE_PLUGIN_TLS_CERT"), help="serving certificate chain (PEM); without it, plaintext")
    parser.add_argument("--tls-key", default=env("SMOKE_PLUGIN_TLS_KEY"), help="the certificate's key (PEM)")
    parser.add_argument("--check-url", default=env("SMOKE_PLUGIN_CHECK_URL"),
                        help="smoke check: GET this URL, 2xx passes ({cluster}, {namespace}, {name}, {placement} are filled in)")
    parser.add_argument("--check-timeout", type=float, default=float(env("SMOKE_PLUGIN_CHECK_TIMEOUT", "5")),
                        help="seconds the check may take (default: %(default)s)")
    parser.add_argument("--succeed-after", type=int, default=int(env("SMOKE_PLUGIN_SUCCEED_AFTER", "1")),
                        help="without --check-url: the call per cluster that answers SUCCEEDED (default: %(default)s)")
    parser.add_argument("--fail-after", type=int, default=int(env("SMOKE_PLUGIN_FAIL_AFTER", "0")),
                        help="answer FAILED after this many calls that did not pass (0: never; default: %(default)s)")
    parser.add_argument("--fail-initialize", default=env("SMOKE_PLUGIN_FAIL_INITIALIZE"),
                        help="answer Initialize with FAILED_PRECONDITION and this message")
    parser.add_argument("--delay", action="append", default=[d for d in env("SMOKE_PLUGIN_DELAY", "").split(",") if d],
                        metavar="METHOD=SECONDS", help="sleep before answering METHOD (repeatable; a slow plugin)")
    parser.add_argument("--flaky", type=float, default=float(env("SMOKE_PLUGIN_FLAKY", "0")), metavar="RATIO",
                        help="answer this share of calls (not Initialize) with UNAVAILABLE (default: %(default)s)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.flaky <= 1.0:
        parser.error("--flaky: a ratio between 0 and 1")
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    try:
        args.delays = _delays(args.delay)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    return args


async def serve(args: argparse.Namespace) -> None:
    plugin = SmokePlugin(
        succeed_after=args.succeed_after, fail_after=args.fail_after, check_url=args.check_url,
        check_timeout=args.check_timeout, delays=args.delays, fail_initialize=args.fail_initialize,
        flaky=args.flaky,
    )
    tls = (Path(args.tls_cert).read_bytes(), Path(args.tls_key).read_bytes()) if args.tls_cert else None
    server, port = await start_server(plugin, args.address, tls)
    host = args.address.rpartition(":")[0]
    print(f"smoke plugin serving {proto.SERVICE_NAME} on {host}:{port} ({'TLS' if tls else 'plaintext'})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(grace=2)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    asyncio.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
