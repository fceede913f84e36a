"""Stopping the workset controller's writer waits for the writes already on the wire."""

from __future__ import annotations

import threading
import time

from kubernetes.client import ApiClient, Configuration

from ocm_rollout.client.kube import Kube
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter


def _writer() -> ConcurrentWriter:
    return ConcurrentWriter(Kube(ApiClient(Configuration())), concurrency=2)


def test_close_waits_for_a_write_already_sent() -> None:
    writer = _writer()
    landed = threading.Event()

    def slow_write() -> None:
        time.sleep(0.2)
        landed.set()

    started = writer.executor.submit(slow_write)
    while not started.running():
        time.sleep(0.001)
    writer.close()
    assert landed.is_set()


def test_close_drops_writes_not_yet_started() -> None:
    writer = _writer()
    gate = threading.Event()
    blockers = [writer.executor.submit(gate.wait, 5) for _ in range(2)]
    queued = writer.executor.submit(lambda: None)
    threading.Timer(0.05, gate.set).start()
    writer.close()
    assert all(b.done() for b in blockers)
    assert queued.cancelled()


def test_close_gives_up_waiting_after_its_timeout() -> None:
    writer = _writer()
    gate = threading.Event()
    writer.executor.submit(gate.wait, 5)
    begun = time.monotonic()
    writer.close(timeout=0.05)
    assert time.monotonic() - begun < 2
    gate.set()
