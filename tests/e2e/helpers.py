"""Helpers shared by the end-to-end tests (no tests here): where the commands are, a poll that
waits on a condition, and a running `ocm-rollout up` subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
OCM_ROLLOUT = BIN / "ocm-rollout"
KUBECTL = BIN / "kubectl"
T = TypeVar("T")


def eventually(check: Callable[[], T | None], *, timeout: float = 60, message: str) -> T:
    """Poll ``check`` until it returns something truthy; an exception counts as not yet (the
    server may not answer yet). Fails naming ``message``, the last value and the last error."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:
            error = exc
            last = None
        if last:
            return last
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:g}s waiting for {message}; last: {last!r} (last error: {error!r})")


class Up:
    """A running `ocm-rollout up` subprocess (a free port, its kubeconfig under ``tmp``)."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.kubeconfig = tmp / "kube" / "config"
        self.log = (tmp / f"up-{time.monotonic_ns()}.log").open("w+")
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.process = subprocess.Popen(
            [str(OCM_ROLLOUT), "up", "--port", "0", "--kubeconfig", str(self.kubeconfig), *args],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def wait_kubeconfig(self) -> Path:
        # a real control plane (--hub kube-apiserver) starts in seconds to a minute on a busy machine
        eventually(
            lambda: self.process.poll() is None and self.kubeconfig.exists() and self.kubeconfig.stat().st_size > 0,
            timeout=240,
            message=f"the kubeconfig (output so far: {self.output()!r})",
        )
        return self.kubeconfig

    def interrupt(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout)

    def stop(self) -> None:
        """Ctrl-C if it still runs, a kill if that does not end it; the log is closed."""
        if self.process.poll() is None:
            try:
                self.interrupt()
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.log.close()
