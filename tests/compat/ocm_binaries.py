"""OCM's own hub binaries (``make ocm-binaries`` builds them from OCM's Go module,
``sandbox/gobuild.py``) run against our hub, to find what they ask of a Kubernetes API server that
ours does not answer as kube-apiserver would. No tests here.

- `bin_dir()`: where the binaries are: ``$OCM_BIN_DIR`` if set, else where ``make ocm-binaries``
  puts them (``gobuild.set_dir("ocm")``, in the user's cache directory).
- `require(name)`: the path of one binary (``placement``, ``work``, ``addon``), or a pytest skip
  that says to run ``make ocm-binaries`` (a failure when ``CI`` is set: CI builds them first).
- `OcmProcess.start(name, kubeconfig, log)`: one hub controller (``placement controller``,
  ``work manager``, ``addon manager``) with its own ``--listen`` port and its log in a file;
  ``stop()`` (SIGTERM, then SIGKILL), ``output()``, ``request_errors()``.
- `request_errors(text)`: the log lines that record a failed request to the API server.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path
from typing import IO, Self

import pytest

from ocm_rollout.sandbox import gobuild

BUILD_COMMAND = "make ocm-binaries"

# The subcommand of each binary that runs its hub controller.
SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "placement": ("controller",),
    "work": ("manager",),
    "addon": ("manager",),
}

# What client-go and library-go log when a request to the API server fails: a reflector's
# list/watch, a typed client's verb, discovery, a decode of the answer, leader election. Meant for
# logs at the default verbosity: at -v=6 and above client-go also logs every response, and a 404
# there is often expected (a leader lease that does not exist yet), so status codes are not matched.
REQUEST_ERROR_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"the server could not find the requested resource",
        r"the server does not allow this method",
        r"the server rejected our request",
        r"the server has asked for the client to provide credentials",
        r"the server was unable to return a response",
        r"the server is currently unable to handle the request",
        r"an error on the server",
        r"Unsupported Media Type|UnsupportedMediaType",
        r"NotAcceptable|not acceptable",
        r"unable to decode|couldn't decode|failed to decode|cannot unmarshal|json: unknown field",
        r"object has no meta|no kind .* is registered",
        r"Failed to watch|failed to list|Failed to list|failed to watch",
        r"watch of .* ended with|very short watch|unexpected watch event|an error on the server .* watch",
        r"error retrieving resource lock|failed to create lock|error initially creating leader election record",
        r"Failed to update lock|failed to renew lease",
        r"couldn't get resource list|unable to retrieve the complete list of server APIs",
        r"is forbidden|Forbidden",
        r"is invalid|Invalid value",
        r"Server rejected event|Unable to write event",
    )
)

# Lines that look like request errors but are not the hub failing a request: library-go's start-up
# lookup of its own Pod (the owner of its events) finds none for a process run outside a pod, and
# falls back to the namespace; kube-apiserver lists no Pods there (200, "there are no pods"), the
# local hub serves no Pods at all (404, "could not find the requested resource": docs/behaviour/
# limits.md). Optimistic-concurrency conflicts (409) are retried.
BENIGN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"unable to get owner reference \(falling back to namespace\)",
        r"the object has been modified; please apply your changes to the latest version",
    )
)

# klog's error and warning lines (``E1127 15:31:02.123456 ...``, ``W1127 ...``) and the
# structured ``"Unhandled Error"`` form; an info line matches only with a pattern above.
_KLOG_LEVEL = re.compile(r"^[EW]\d{4} ")


def bin_dir() -> Path:
    """``$OCM_BIN_DIR`` if set, else the folder ``make ocm-binaries`` builds into."""
    configured = os.environ.get("OCM_BIN_DIR")
    return Path(configured).expanduser() if configured else gobuild.set_dir("ocm")


def binary(name: str) -> Path | None:
    """The path of OCM's ``name`` binary if it is there and executable."""
    path = bin_dir() / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def require(name: str) -> Path:
    """The path of OCM's ``name`` binary, or skip the calling test saying how to build it (fail
    under CI, whose .ci/run builds it first)."""
    path = binary(name)
    if path is None:
        override = " (OCM_BIN_DIR names that folder; unset it to use the build's)" if os.environ.get("OCM_BIN_DIR") else ""
        message = (
            f"OCM's {name!r} binary is not in {bin_dir()}{override}: run `{BUILD_COMMAND}`, which builds "
            f"OCM {gobuild.OCM_VERSION}'s placement, work and addon commands from their Go module"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI must run tests/compat: {message}")
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request_errors(text: str) -> list[str]:
    """The lines of an OCM binary's log that record a request the API server failed or refused
    (not found, method not allowed, media type, decode, list/watch, leader election, events),
    less ``BENIGN_PATTERNS``."""
    found = []
    for line in text.splitlines():
        if any(p.search(line) for p in BENIGN_PATTERNS):
            continue
        if any(p.search(line) for p in REQUEST_ERROR_PATTERNS):
            found.append(line)
        elif _KLOG_LEVEL.match(line) and ("Unhandled Error" in line or "err=" in line):
            found.append(line)
    return found


class OcmProcess:
    """One of OCM's hub controllers as a child process, its stdout and stderr in ``log``."""

    def __init__(self, name: str, args: list[str], log: Path, port: int) -> None:
        self.name = name
        self.args = args
        self.log = log
        self.port = port
        self._log_file: IO[bytes] = log.open("wb")
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
            start_new_session=True,
        )

    @classmethod
    def start(
        cls,
        name: str,
        kubeconfig: Path | str,
        log: Path,
        *,
        port: int | None = None,
        namespace: str = "open-cluster-management-hub",
        leader_election: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> Self:
        """Start ``<name> <subcommand> --kubeconfig K --listen 127.0.0.1:PORT --namespace NS``
        (``--disable-leader-election`` unless ``leader_election``); skips when the binary is absent.
        ``namespace`` is where it keeps its leader lease and events."""
        path = require(name)
        port = port or free_port()
        args = [
            str(path),
            *SUBCOMMANDS[name],
            f"--kubeconfig={kubeconfig}",
            f"--listen=127.0.0.1:{port}",
            f"--namespace={namespace}",
        ]
        if not leader_election:
            args.append("--disable-leader-election")
        args.extend(extra_args)
        return cls(name, args, log, port)

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        self._log_file.close()
        return self.process.returncode

    def output(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log.read_text(errors="replace")

    def request_errors(self) -> list[str]:
        return request_errors(self.output())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
