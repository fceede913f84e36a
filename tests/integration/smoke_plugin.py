"""The example smoke plugin (examples/plugins/smoke/server.py) as a test's subprocess."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "smoke" / "server.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def smoke_plugin(*args: str) -> Iterator[int]:
    """Run the smoke plugin on a free loopback port with ``args``; yield the port once it listens."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--address", f"127.0.0.1:{port}", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"the smoke plugin exited with {proc.returncode}")
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
