"""An asyncio gRPC client (``grpc.aio``) for one registered rollout plugin.

- Connection: TLS verified against the entry's CA bundle (else the system's roots), or plaintext
  for an ``http://`` endpoint (``config.py``). The channel is made on first use, in the running
  event loop (a grpc.aio channel belongs to one loop: make one client per loop).
- Every attempt has a deadline of ``timeout`` seconds (the enhancement's 30 s bound).
- ``UNAVAILABLE`` is retried, like gRPC's standard retry policy (retryableStatusCodes
  UNAVAILABLE): ``attempts`` tries in all, sleeping ``initial_backoff`` seconds, doubled each
  time up to ``max_backoff``, with up to 20% jitter. What is left is ``PluginUnavailableError``.
- Every other status is ``PluginCallError`` with the gRPC code and the plugin's message; an
  answer the controller cannot use is ``PluginResponseError``.

``load()`` calls Initialize and turns the outcome into the ``PluginLoaded`` condition value.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

import grpc
from google.protobuf.message import Message

from ocm_rollout.controllers.rollout.plugin import proto
from ocm_rollout.controllers.rollout.plugin.conditions import ConditionValue, plugin_loaded
from ocm_rollout.controllers.rollout.plugin.config import PluginConfig
from ocm_rollout.controllers.rollout.plugin.states import Validation

CALL_TIMEOUT_SECONDS: Final = 30.0
ATTEMPTS: Final = 5
INITIAL_BACKOFF_SECONDS: Final = 0.5
MAX_BACKOFF_SECONDS: Final = 5.0
#: How soon the channel tries to reconnect after a failed connection (gRPC's default starts at
#: 1 s and grows to 120 s, which would outlast our retries).
RECONNECT_BACKOFF_MS: Final = 200

_RESULTS: Final = {proto.INPROGRESS: Validation.INPROGRESS, proto.SUCCEEDED: Validation.SUCCEEDED, proto.FAILED: Validation.FAILED}


class PluginError(Exception):
    """A call to a plugin did not give a usable answer."""

    def __init__(self, plugin: str, method: str, message: str) -> None:
        super().__init__(f"plugin {plugin}: {method}: {message}")
        self.plugin = plugin
        self.method = method
        #: The message without the plugin and method names.
        self.reason = message


class PluginCallError(PluginError):
    """The call ended with a gRPC status other than OK."""

    def __init__(self, plugin: str, method: str, code: grpc.StatusCode, details: str, attempts: int = 1) -> None:
        hint = ""
        if "CERTIFICATE_VERIFY_FAILED" in details or "handshake" in details.lower():
            hint = " (TLS: check caCertificate.caBundle and the plugin's serving certificate)"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(plugin, method, f"{code.name}{tries}: {details}{hint}")
        self.code = code
        self.details = details
        self.attempts = attempts


class PluginUnavailableError(PluginCallError):
    """Still UNAVAILABLE when the retries ran out."""


class PluginResponseError(PluginError):
    """The plugin answered, but with something the controller cannot use."""


@dataclass(frozen=True)
class ValidationAnswer:
    result: Validation
    message: str = ""


class PluginClient:
    def __init__(
        self,
        config: PluginConfig,
        *,
        timeout: float = CALL_TIMEOUT_SECONDS,
        attempts: int = ATTEMPTS,
        initial_backoff: float = INITIAL_BACKOFF_SECONDS,
        max_backoff: float = MAX_BACKOFF_SECONDS,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.config = config
        self.timeout = timeout
        self.attempts = attempts
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._jitter = jitter
        self._channel: grpc.aio.Channel | None = None
        self._calls: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self.config.name

    def _channel_now(self) -> grpc.aio.Channel:
        if self._channel is None:
            options = [
                ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
                ("grpc.min_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
                ("grpc.max_reconnect_backoff_ms", int(self.max_backoff * 1000)),
            ]
            if self.config.tls:
                credentials = grpc.ssl_channel_credentials(root_certificates=self.config.ca_pem)
                self._channel = grpc.aio.secure_channel(self.config.target, credentials, options=options)
            else:
                self._channel = grpc.aio.insecure_channel(self.config.target, options=options)
        return self._channel

    def _stub(self, method: proto.Method) -> Any:
        call = self._calls.get(method.name)
        if call is None:
            call = self._channel_now().unary_unary(
                method.path,
                request_serializer=proto.serializer,
                response_deserializer=proto.deserializer(method.response),
            )
            self._calls[method.name] = call
        return call

    def backoff(self, retry: int) -> float:
        """Seconds to sleep before retry number ``retry`` (1-based)."""
        base = min(self.max_backoff, self.initial_backoff * 2 ** (retry - 1))
        return base * (0.8 + 0.2 * self._jitter())

    async def call(self, method_name: str, request: Message) -> Message:
        """One rpc by name, with the deadline and the UNAVAILABLE retries."""
        method = proto.METHODS[method_name]
        if not isinstance(request, method.request):
            raise TypeError(f"{method_name} takes {method.request.DESCRIPTOR.name}, not {type(request).__name__}")
        stub = self._stub(method)
        attempt = 0
        while True:
            attempt += 1
            try:
                response: Message = await stub(request, timeout=self.timeout)
                return response
            except grpc.aio.AioRpcError as exc:
                code, details = exc.code(), exc.details() or ""
                if code is not grpc.StatusCode.UNAVAILABLE:
                    raise PluginCallError(self.name, method_name, code, details, attempt) from None
                if attempt >= self.attempts:
                    raise PluginUnavailableError(self.name, method_name, code, details, attempt) from None
            await asyncio.sleep(self.backoff(attempt))

    async def initialize(self) -> Message:
        return await self.call("Initialize", proto.InitializeRequest(plugin_name=self.name))

    async def load(self) -> ConditionValue:
        """Initialize, as the ``PluginLoaded`` condition's value (never raises a PluginError)."""
        try:
            await self.initialize()
        except PluginError as exc:
            return plugin_loaded(self.name, f"Initialize fails: {exc.reason}")
        return plugin_loaded(self.name, None)

    async def begin_rollout(self, request: Message) -> None:
        await self.call("BeginRollout", request)

    async def progress_rollout(self, request: Message) -> None:
        await self.call("ProgressRollout", request)

    async def validate_rollout_completion(self, request: Message) -> ValidationAnswer:
        response: Any = await self.call("ValidateRolloutCompletion", request)
        result = _RESULTS.get(response.result)
        if result is None:
            raise PluginResponseError(self.name, "ValidateRolloutCompletion", f"unknown result {response.result}")
        return ValidationAnswer(result, response.message)

    async def mutate_manifest_work(self, request: Message, work: Mapping[str, Any]) -> dict[str, Any]:
        """The ManifestWork to apply: ``work`` as the plugin mutated it (an empty answer: unchanged).

        ``request`` is a MutateManifestWorkRequest whose manifest_work this fills from ``work``."""
        sent: Any = proto.MutateManifestWorkRequest()
        sent.CopyFrom(request)
        sent.manifest_work = json.dumps(work, separators=(",", ":")).encode()
        response: Any = await self.call("MutateManifestWork", sent)
        if not response.manifest_work:
            return dict(work)
        try:
            mutated = json.loads(response.manifest_work)
        except (UnicodeDecodeError, ValueError) as exc:
            raise PluginResponseError(self.name, "MutateManifestWork", f"manifest_work is not JSON: {exc}") from None
        if not isinstance(mutated, dict):
            raise PluginResponseError(self.name, "MutateManifestWork", "manifest_work is not a JSON object")
        return mutated

    async def close(self) -> None:
        if self._channel is not None:
            channel, self._channel = self._channel, None
            self._calls.clear()
            await channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
