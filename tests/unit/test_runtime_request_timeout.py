"""Every request of ``Kube`` has a timeout: an API server that accepts a connection and never
answers costs a caller a bounded time, for reads and for writes, fenced or not."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes.client import ApiClient, Configuration

from ocm_rollout.client.fencing import WriteFence
from ocm_rollout.client.kube import DEFAULT_REQUEST_TIMEOUT, MANIFEST_WORKS, Kube, RequestTimeout
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter

SHORT = RequestTimeout(connect=1.0, read=0.3)


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        for conn in self.accepted:
            conn.close()
        self._thread.join(5)


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _client(port: int) -> ApiClient:
    configuration = Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    return ApiClient(configuration)


def _timed(call: Any, bound: float) -> float:
    """Run ``call`` in a thread of its own; it must fail with an HTTP error within ``bound``
    seconds (a request without a timeout would wait forever: the thread is left behind)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound)
    elapsed = time.monotonic() - started
    assert not thread.is_alive(), f"the request was still waiting after {bound} s"
    assert len(errors) == 1 and isinstance(errors[0], urllib3.exceptions.HTTPError), errors
    return elapsed


# urllib3 retries a read three times after a read timeout (its default Retry), so a GET gives up
# after four timeouts; a write is never retried.
READ_ATTEMPTS = 4


def test_a_read_from_a_server_that_never_answers_times_out(silent: SilentServer) -> None:
    kube = Kube(_client(silent.port), request_timeout=SHORT)
    read = lambda: kube.request_sync("GET", MANIFEST_WORKS.path("cluster1"))  # noqa: E731
    elapsed = _timed(read, READ_ATTEMPTS * SHORT.read + 2.0)
    assert elapsed >= READ_ATTEMPTS * SHORT.read
    assert silent.accepted, "the request reached the server"


def test_an_unfenced_write_to_a_server_that_never_answers_times_out(silent: SilentServer) -> None:
    kube = Kube(_client(silent.port), request_timeout=SHORT)
    write = lambda: kube.request_sync("POST", MANIFEST_WORKS.path("cluster1"), body={})  # noqa: E731
    elapsed = _timed(write, SHORT.read + 2.0)
    assert elapsed >= SHORT.read


def test_a_fenced_write_gets_the_fences_time_when_it_is_shorter(silent: SilentServer) -> None:
    fence = WriteFence()
    # Renewed 9.7 s ago: writes may be sent for 0.3 s more and must be answered within 0.5 s.
    fence.grant(fence.now() - 9.7, renew_deadline=10.0, lease_duration=10.2)
    kube = Kube(_client(silent.port), fence=fence, request_timeout=RequestTimeout(connect=1.0, read=30.0))
    _timed(lambda: kube.request_sync("PATCH", MANIFEST_WORKS.path("c", "w"), body={}), 0.5 + 1.5)


def test_the_concurrent_writers_writes_time_out(silent: SilentServer) -> None:
    """``ConcurrentWriter`` sends through ``Kube.request_sync``, so its writes time out too."""
    writer = ConcurrentWriter(Kube(_client(silent.port)), concurrency=1)
    writer.kube.request_timeout = SHORT
    try:
        _timed(lambda: writer.kube.request_sync("POST", MANIFEST_WORKS.path("c"), body={}), SHORT.read + 2.0)
    finally:
        writer.close(timeout=1.0)


class RecordingClient:
    """Stands in for the kubernetes ApiClient: records the timeout each request would get."""

    def __init__(self) -> None:
        self.timeouts: list[Any] = []

    def param_serialize(self, **kwargs: Any) -> tuple[Any, ...]:
        return (kwargs["method"], kwargs["resource_path"])

    def call_api(self, method: str, path: str, _request_timeout: Any = None) -> Any:
        self.timeouts.append(_request_timeout)

        class Answer:
            status = 200
            reason = "OK"

            @staticmethod
            def read() -> bytes:
                return b"{}"

        return Answer()


def test_reads_and_unfenced_writes_get_the_default_timeout() -> None:
    client = RecordingClient()
    kube = Kube(client)  # type: ignore[arg-type]
    kube.request_sync("GET", MANIFEST_WORKS.path("c"))
    kube.request_sync("DELETE", MANIFEST_WORKS.path("c", "w"), body={})
    assert client.timeouts == [DEFAULT_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT]
    assert DEFAULT_REQUEST_TIMEOUT == (10.0, 30.0)


def test_a_fenced_write_never_gets_longer_than_the_default_read_timeout() -> None:
    client = RecordingClient()
    fence = WriteFence(lambda: 0.0)
    fence.grant(0.0, renew_deadline=100.0, lease_duration=200.0)
    Kube(client, fence=fence).request_sync("PATCH", MANIFEST_WORKS.path("c", "w"), body={})  # type: ignore[arg-type]
    assert client.timeouts == [DEFAULT_REQUEST_TIMEOUT.read]


def test_a_timeout_of_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        Kube(RecordingClient(), request_timeout=RequestTimeout(0.0, 5.0))  # type: ignore[arg-type]
