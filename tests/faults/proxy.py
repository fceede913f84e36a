"""A fault-injecting reverse proxy between Kubernetes clients (the controllers) and the hub.

``FaultProxy(upstream_kubeconfig, FaultRates(...), seed=...)`` serves plain HTTP on 127.0.0.1 and
forwards every request to the API server named by ``upstream_kubeconfig`` (HTTPS with that
kubeconfig's CA; the client's own ``Authorization`` header is passed on, the kubeconfig's token
is used when a request has none). Responses are streamed through chunk by chunk, so watch streams
stay live. It runs on an event loop in a thread of its own: ``start()`` returns once it listens,
``stop()`` aborts whatever is still open. ``write_kubeconfig(path)`` writes a kubeconfig that
points at the proxy with the upstream token.

Faults are drawn from one ``random.Random(seed)`` on the proxy's loop. For each request, at most
one of these (their rates add up to at most 1):

- ``drop``: the connection is closed (FIN) before answering; the request never reaches the hub.
- ``lost_answer``: the request is forwarded and the hub's answer read, then the connection is
  closed without answering (the write happened; the client cannot know). On a watch: ``drop``.
- ``reset``: the connection is reset (RST) before answering; the request never reaches the hub.
- ``throttle``: ``429 Too Many Requests`` with ``Retry-After`` and a ``Status`` body.
- ``error``: ``500 Internal Server Error`` with a ``Status`` body.
- ``hang``: never answered; the proxy holds the connection for ``hang_seconds`` (minutes: longer
  than any sensible client timeout) unless the client gives up first, then closes it. Hung
  requests are tracked (``hung()``), so a test can see which requests a client waited on and for
  how long, and which it still waits on (``open_hangs()``).

Independently of those:

- ``latency``: the request waits ``latency_seconds`` (a random value in that range) first.
- ``watch_cut``: a forwarded watch stream is cut (the connection aborted, sometimes in the middle
  of an event's line) after a random number of events in ``watch_cut_after``. Whether a stream
  is cut is drawn once, when it starts, or, for a stream opened while faults were off, at the
  first event it relays once they are on (so long-lived streams are cut too).

Targeted faults, for reproducing one situation on purpose (whatever ``faults_off`` says):
``hang_next(pattern)`` hangs the next request whose ``METHOD path?query`` matches the regular
expression; ``cut_watches(pattern)`` cuts every open watch stream that matches, now.

``counts()`` gives every fault by kind plus ``requests`` (received) and ``forwarded`` (sent to
the hub); ``faults_off()`` / ``faults_on()`` switch injection for new requests (a request already
hung stays hung: a dead connection does not heal when the network does). ``records`` lists each
fault with its time, method and path.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import re
import socket
import ssl
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import yaml
from aiohttp import web

# The kinds of fault, as counted by ``FaultProxy.counts``.
DROP: Final = "drop"
LOST_ANSWER: Final = "lost_answer"
RESET: Final = "reset"
THROTTLE: Final = "throttle"
ERROR: Final = "error"
HANG: Final = "hang"
LATENCY: Final = "latency"
WATCH_CUT: Final = "watch_cut"
ANSWER_FAULTS: Final = (DROP, LOST_ANSWER, RESET, THROTTLE, ERROR, HANG)
KINDS: Final = (*ANSWER_FAULTS, LATENCY, WATCH_CUT)

# Headers that belong to one hop (RFC 9110 7.6.1), never forwarded; plus what aiohttp sets itself.
_HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# How often a hung request looks whether its client gave up.
_HANG_POLL_SECONDS: Final = 0.2
STARTUP_SECONDS: Final = 30.0


@dataclass(frozen=True)
class FaultRates:
    """How often each fault happens (probabilities per request) and how it behaves."""

    drop: float = 0.0
    lost_answer: float = 0.0
    reset: float = 0.0
    throttle: float = 0.0
    error: float = 0.0
    hang: float = 0.0
    latency: float = 0.0
    watch_cut: float = 0.0
    latency_seconds: tuple[float, float] = (0.05, 1.0)
    retry_after_seconds: int = 1
    hang_seconds: float = 600.0
    watch_cut_after: tuple[int, int] = (1, 30)
    # Whether a watch request may hang too (a hung watch stalls a cache until its read timeout).
    hang_watches: bool = True

    def __post_init__(self) -> None:
        answer = sum(getattr(self, kind) for kind in ANSWER_FAULTS)
        if answer > 1.0 + 1e-9:
            raise ValueError(f"the answer fault rates add up to {answer:g} (> 1)")
        for kind in KINDS:
            if not 0.0 <= getattr(self, kind) <= 1.0:
                raise ValueError(f"{kind} rate {getattr(self, kind)!r} is not a probability")


@dataclass(frozen=True)
class FaultRecord:
    """One injected fault: when (seconds since the proxy started), which, on what request."""

    at: float
    kind: str
    method: str
    path: str


@dataclass
class HungRequest:
    """A request the proxy never answered: when it was received, and how the hang ended
    (``None`` while the client still waits)."""

    method: str
    path: str
    watch: bool
    started: float
    ended: float | None = None
    how: str | None = None  # "client gave up", "expired", "proxy stopped"

    def waited(self, now: float | None = None) -> float:
        """Seconds the client waited (so far, while it still waits)."""
        return (self.ended if self.ended is not None else (now if now is not None else time.monotonic())) - self.started


@dataclass(frozen=True)
class Upstream:
    """Where the hub is and how to reach it, from a kubeconfig."""

    server: str
    token: str | None
    ssl_context: ssl.SSLContext | bool

    @classmethod
    def from_kubeconfig(cls, path: str | Path) -> Upstream:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        context_name = config.get("current-context")
        contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
        context = contexts.get(context_name) or next(iter(contexts.values()))
        cluster = {c["name"]: c["cluster"] for c in config["clusters"]}[context["cluster"]]
        user = {u["name"]: u.get("user") or {} for u in config.get("users") or []}.get(context.get("user"), {})
        server = str(cluster["server"]).rstrip("/")
        ssl_context: ssl.SSLContext | bool = False
        if server.startswith("https://"):
            if cluster.get("insecure-skip-tls-verify"):
                ssl_context = False
            elif cluster.get("certificate-authority-data"):
                pem = base64.b64decode(cluster["certificate-authority-data"]).decode()
                ssl_context = ssl.create_default_context(cadata=pem)
            elif cluster.get("certificate-authority"):
                ssl_context = ssl.create_default_context(cafile=cluster["certificate-authority"])
            else:
                ssl_context = ssl.create_default_context()
        token = user.get("token")
        return cls(server=server, token=str(token) if token else None, ssl_context=ssl_context)


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    """A Kubernetes ``Status`` (failure) as the API server sends it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


def is_watch(request: web.BaseRequest) -> bool:
    return request.query.get("watch", "").lower() in ("true", "1") or "/watch/" in request.path


def _abort(request: web.BaseRequest, *, reset: bool) -> None:
    """Close the client's connection now: a reset (RST, SO_LINGER 0) or an orderly close (FIN)."""
    transport = request.transport
    if transport is None:
        return
    if reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class FaultProxy:
    """The proxy; see the module docstring."""

    def __init__(
        self,
        upstream_kubeconfig: str | Path,
        rates: FaultRates | None = None,
        *,
        seed: int | str = 0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.upstream = Upstream.from_kubeconfig(upstream_kubeconfig)
        self.rates = rates or FaultRates()
        self.host = host
        self.port = port
        self.rng = random.Random(seed)
        self.enabled = True
        self.records: list[FaultRecord] = []
        self._counts: Counter[str] = Counter()
        self._hangs: list[HungRequest] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self._targeted_hangs: list[re.Pattern[str]] = []
        # Open watch streams being relayed: id(request) -> (request, "GET path?query").
        self._watches: dict[int, tuple[web.BaseRequest, str]] = {}
        self._stopping: asyncio.Event | None = None
        self._started_at = time.monotonic()

    # -- control (any thread) -----------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def faults_off(self) -> None:
        """Forward every new request faithfully from now on (hung requests stay hung)."""
        self.enabled = False

    def faults_on(self) -> None:
        self.enabled = True

    def hang_next(self, pattern: str) -> None:
        """Hang the next request whose ``METHOD path?query`` matches ``pattern`` (``re.search``)."""
        with self._lock:
            self._targeted_hangs.append(re.compile(pattern))

    def cut_watches(self, pattern: str) -> int:
        """Cut every open watch stream whose ``GET path?query`` matches ``pattern`` now; how many."""
        loop = self._loop
        assert loop is not None, "the proxy is not running"

        async def cut() -> int:
            matched = [r for r, line in self._watches.values() if re.search(pattern, line)]
            for request in matched:
                self._count(WATCH_CUT, request)
                _abort(request, reset=False)
            return len(matched)

        return asyncio.run_coroutine_threadsafe(cut(), loop).result(timeout=10)

    def set_rates(self, rates: FaultRates) -> None:
        self.rates = rates

    def counts(self) -> dict[str, int]:
        """Every fault kind (0 if none happened), ``requests`` and ``forwarded``."""
        with self._lock:
            counted = dict(self._counts)
        return {kind: counted.get(kind, 0) for kind in (*KINDS, "requests", "forwarded")}

    def faults(self) -> dict[str, int]:
        """The faults injected, by kind (only kinds that happened)."""
        return {kind: n for kind, n in self.counts().items() if kind in KINDS and n}

    def hung(self) -> list[HungRequest]:
        """Every hung request so far (copies)."""
        with self._lock:
            return [HungRequest(**vars(h)) for h in self._hangs]

    def open_hangs(self) -> list[HungRequest]:
        """Hung requests whose client still waits."""
        return [h for h in self.hung() if h.ended is None]

    def write_kubeconfig(self, path: str | Path, *, context: str = "fault-proxy") -> Path:
        """A kubeconfig (mode 0600) for the proxy, with the upstream's token."""
        user: dict[str, Any] = {"token": self.upstream.token} if self.upstream.token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": "default"}}],
            "current-context": context,
            "preferences": {},
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        target.chmod(0o600)
        return target

    def start(self) -> FaultProxy:
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=main, name="fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(STARTUP_SECONDS):
            raise RuntimeError("the fault proxy did not start")
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Abort every open request and stop serving."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        try:
            future.result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving (the proxy's loop) -----------------------------------------------------------
    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._started_at = time.monotonic()
        connector = aiohttp.TCPConnector(limit=0, ssl=self.upstream.ssl_context)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        server = web.Server(self._handle)
        self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])  # the port chosen for port 0

    async def _shutdown(self) -> None:
        assert self._stopping is not None
        self._stopping.set()
        now = time.monotonic()
        with self._lock:
            for hang in self._hangs:
                if hang.ended is None:
                    hang.ended, hang.how = now, "proxy stopped"
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=5)
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def _count(self, kind: str, request: web.BaseRequest | None = None) -> None:
        with self._lock:
            self._counts[kind] += 1
            if request is not None:
                at = time.monotonic() - self._started_at
                self.records.append(FaultRecord(at, kind, request.method, request.path_qs))

    def _draw_answer_fault(self, watch: bool) -> str | None:
        rates = self.rates
        roll = self.rng.random()
        total = 0.0
        for kind in ANSWER_FAULTS:
            total += getattr(rates, kind)
            if roll < total:
                if kind == HANG and watch and not rates.hang_watches:
                    return None
                if kind == LOST_ANSWER and watch:
                    return DROP
                return kind
        return None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            return await self._handle_one(request)
        finally:
            if task is not None:
                self._handlers.discard(task)

    def _targeted(self, request: web.BaseRequest) -> bool:
        line = f"{request.method} {request.path_qs}"
        with self._lock:
            for index, pattern in enumerate(self._targeted_hangs):
                if pattern.search(line):
                    del self._targeted_hangs[index]
                    return True
        return False

    async def _handle_one(self, request: web.BaseRequest) -> web.StreamResponse:
        self._count("requests")
        watch = is_watch(request)
        body = await request.read() if request.can_read_body else None
        fault: str | None = None
        if self.enabled:
            rates = self.rates
            if rates.latency and self.rng.random() < rates.latency:
                self._count(LATENCY, request)
                await asyncio.sleep(self.rng.uniform(*rates.latency_seconds))
            fault = self._draw_answer_fault(watch)
        if self._targeted(request):
            fault = HANG
        if fault is not None:
            self._count(fault, request)
        if fault in (DROP, RESET):
            _abort(request, reset=fault == RESET)
            return web.Response(status=503)  # never written: the connection is gone
        if fault == THROTTLE:
            seconds = self.rates.retry_after_seconds
            text = status_body(429, "TooManyRequests", "Too many requests, please try again later.",
                               {"retryAfterSeconds": seconds})
            return web.Response(status=429, body=text, content_type="application/json",
                                headers={"Retry-After": str(seconds)})
        if fault == ERROR:
            text = status_body(500, "InternalError", "Internal error occurred: injected by the fault proxy")
            return web.Response(status=500, body=text, content_type="application/json")
        if fault == HANG:
            return await self._hang(request, watch)
        return await self._forward(request, body, watch=watch, lost_answer=fault == LOST_ANSWER)

    async def _hang(self, request: web.BaseRequest, watch: bool) -> web.StreamResponse:
        hang = HungRequest(request.method, request.path_qs, watch, time.monotonic())
        with self._lock:
            self._hangs.append(hang)
        assert self._stopping is not None
        deadline = hang.started + self.rates.hang_seconds
        how = "expired"
        while time.monotonic() < deadline and not self._stopping.is_set():
            if _client_gone(request):
                how = "client gave up"
                break
            await asyncio.sleep(_HANG_POLL_SECONDS)
        with self._lock:
            if hang.ended is None:
                hang.ended, hang.how = time.monotonic(), how
        _abort(request, reset=False)
        return web.Response(status=503)

    def _upstream_headers(self, request: web.BaseRequest) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers.pop("Accept-Encoding", None)  # keep streams plain: the proxy counts watch events
        if "Authorization" not in request.headers and self.upstream.token:
            headers["Authorization"] = f"Bearer {self.upstream.token}"
        return headers

    async def _forward(
        self,
        request: web.BaseRequest,
        body: bytes | None,
        *,
        watch: bool,
        lost_answer: bool,
    ) -> web.StreamResponse:
        assert self._session is not None
        url = self.upstream.server + request.raw_path
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=None)
        self._count("forwarded")
        try:
            async with self._session.request(
                request.method, url, headers=self._upstream_headers(request), data=body,
                allow_redirects=False, timeout=timeout,
            ) as upstream:
                if lost_answer:
                    await upstream.read()
                    _abort(request, reset=False)
                    return web.Response(status=503)
                return await self._relay(request, upstream, watch=watch)
        except (aiohttp.ClientError, TimeoutError) as exc:
            text = status_body(503, "ServiceUnavailable", f"the fault proxy cannot reach the hub: {exc}")
            return web.Response(status=503, body=text, content_type="application/json")

    async def _relay(self, request: web.BaseRequest, upstream: aiohttp.ClientResponse, *, watch: bool) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for name, value in upstream.headers.items():
            if name.lower() not in _HOP_BY_HOP:
                response.headers.add(name, value)
        if upstream.content_length is not None and "chunked" not in upstream.headers.get("Transfer-Encoding", ""):
            response.content_length = upstream.content_length
        cut = _Cut() if watch and upstream.status == 200 else None
        if watch:
            self._watches[id(request)] = (request, f"{request.method} {request.path_qs}")
        try:
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                if cut is None:
                    await response.write(chunk)
                    continue
                for piece, ends_event in _lines(chunk):
                    if cut.due(self):
                        # Cut: sometimes in the middle of the next event, then abort.
                        if cut.torn and piece:
                            await response.write(piece[: max(1, len(piece) // 2)])
                        self._count(WATCH_CUT, request)
                        _abort(request, reset=False)
                        return response
                    await response.write(piece)
                    cut.events += ends_event
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away (or was cut off): nothing more to send
        finally:
            self._watches.pop(id(request), None)
        return response


@dataclass
class _Cut:
    """Whether and when one watch stream is cut: drawn at its first event relayed while faults
    are on; then ``after`` is the number of events it relays before the cut (None: never)."""

    events: int = 0
    drawn: bool = False
    after: int | None = None
    torn: bool = False

    def due(self, proxy: FaultProxy) -> bool:
        if not self.drawn and proxy.enabled:
            self.drawn = True
            rates = proxy.rates
            if rates.watch_cut and proxy.rng.random() < rates.watch_cut:
                self.after = self.events + proxy.rng.randint(*rates.watch_cut_after)
                self.torn = proxy.rng.random() < 0.5
        return self.after is not None and self.events >= self.after and proxy.enabled


def _lines(chunk: bytes) -> Iterator[tuple[bytes, int]]:
    """Split ``chunk`` after each newline: (piece, 1 if the piece ends an event else 0)."""
    start = 0
    while start < len(chunk):
        end = chunk.find(b"\n", start)
        if end < 0:
            yield chunk[start:], 0
            return
        yield chunk[start : end + 1], 1
        start = end + 1


@dataclass
class FaultSummary:
    """What a run through the proxy saw, for printing."""

    counts: dict[str, int] = field(default_factory=dict)
    hung: list[HungRequest] = field(default_factory=list)

    @classmethod
    def of(cls, proxy: FaultProxy) -> FaultSummary:
        return cls(counts=proxy.counts(), hung=proxy.hung())

    def lines(self) -> list[str]:
        faults = {k: v for k, v in self.counts.items() if k in KINDS}
        out = [
            f"requests {self.counts.get('requests', 0)}, forwarded {self.counts.get('forwarded', 0)}, "
            f"faults {sum(faults.values())}",
            "faults by kind: " + ", ".join(f"{k} {v}" for k, v in faults.items()),
        ]
        ends = Counter(h.how or "still waiting" for h in self.hung)
        if self.hung:
            longest = max(self.hung, key=lambda h: h.waited())
            out.append(
                "hung requests: " + ", ".join(f"{how} {n}" for how, n in sorted(ends.items()))
                + f"; longest wait {longest.waited():.1f}s ({longest.method} {longest.path})"
            )
        return out
