"""Helpers for the tests that run `ocm-rollout run` as a separate process against the local hub.

No tests here: a local hub in a thread with one bearer token per process (so that the hub's
request log tells the processes apart), kubeconfigs for those tokens, and a handle on a
running `ocm-rollout run` process with its JSON logs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from controllers.runtime.kube import Kube, load_api_client

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")

# Generous bounds: the suite must pass on a loaded 2-core machine.
STARTUP_TIMEOUT = 60.0


def wait_until(condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def kubeconfig_for(admin: Path, path: Path, token: str) -> Path:
    """A copy of the hub's kubeconfig (server, CA) that authenticates with ``token``."""
    config = yaml.safe_load(admin.read_text())
    for entry in config["users"]:
        entry["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@dataclass
class Hub:
    """A local hub in a thread; ``users`` maps a user name to its kubeconfig."""

    handle: Any
    directory: Path
    users: dict[str, Path] = field(default_factory=dict)

    @property
    def admin_kubeconfig(self) -> Path:
        return self.users["admin"]

    def kube(self) -> Kube:
        return Kube(load_api_client(str(self.admin_kubeconfig)))

    def records(self, user: str) -> list[Any]:
        """The hub's request records made with ``user``'s token."""
        hub = self.handle.hub
        everything: list[Any] = self.handle.call(lambda: list(hub.requests))
        return [r for r in everything if r.user == user]


USERS = ("proc-a", "proc-b", "proc-c")


def _tokens() -> dict[str, str]:
    return {f"token-{name}-{os.getpid()}": name for name in USERS}


def _with_users(handle: Any, directory: Path, tokens: dict[str, str]) -> Hub:
    found = Hub(handle=handle, directory=directory)
    admin = handle.kubeconfig or handle.write_kubeconfig(directory / "admin.kubeconfig")
    found.users["admin"] = Path(admin)
    for token, name in tokens.items():
        found.users[name] = kubeconfig_for(Path(admin), directory / f"{name}.kubeconfig", token)
    return found


@contextmanager
def local_hub(directory: Path) -> Iterator[Hub]:
    """A local hub of its own (for module-scoped scenarios), recording every request."""
    server = pytest.importorskip("sandbox.server")
    tokens = _tokens()
    handle = server.run_in_thread(kubeconfig=directory / "admin.kubeconfig", record_requests=True, tokens=tokens)
    try:
        yield _with_users(handle, directory, tokens)
    finally:
        handle.stop()


@pytest.fixture(name="run_hub")
def run_hub_fixture(make_hub: Callable[..., Any], tmp_path: Path) -> Hub:
    """A fresh hub from conftest's ``make_hub`` that records requests, with users proc-a/b/c."""
    tokens = _tokens()
    return _with_users(make_hub(record_requests=True, tokens=tokens), tmp_path, tokens)


@dataclass
class RunProcess:
    """One `ocm-rollout run` process; its JSON log lines go to ``log_path``."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def logged(self, msg: str) -> list[dict[str, Any]]:
        """The log events with this message; fails the test if the process has died."""
        found = [e for e in self.events() if e.get("msg") == msg]
        if not found:
            self.check_alive()
        return found

    def address(self, purpose: str) -> str:
        def find() -> str | None:
            self.check_alive()
            for event in self.logged(f"serving {purpose} endpoints"):
                return str(event["address"])
            return None

        return wait_until(find, STARTUP_TIMEOUT, f"{self.name} to serve {purpose}")

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"{self.name} exited with {self.process.returncode}:\n{self.log_path.read_text()[-4000:]}")

    def terminate(self, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def start_run(
    name: str,
    kubeconfig: Path,
    directory: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> RunProcess:
    log_path = directory / f"{name}.log"
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full_env.get("PYTHONPATH", "")]))
    command = [
        sys.executable, "-m", "controllers", "run",
        "--kubeconfig", str(kubeconfig),
        "--health-bind-address", "127.0.0.1:0",
        "--metrics-bind-address", "127.0.0.1:0",
        "--log-format", "json",
        *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
    return RunProcess(name=name, process=process, log_path=log_path)


@pytest.fixture(name="processes")
def processes_fixture() -> Iterator[list[RunProcess]]:
    """Every process a test starts; killed at the end whatever happened."""
    started: list[RunProcess] = []
    yield started
    for proc in started:
        proc.kill()
