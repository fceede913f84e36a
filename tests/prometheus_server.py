"""A real Prometheus server for tests (Debian's ``prometheus`` package; ``.ci/run`` installs it).

``running_prometheus(targets, workdir)`` starts ``prometheus`` scraping ``targets`` (``HOST:PORT``,
path ``/metrics``) every second, with its TSDB in ``workdir``, on a free loopback port; it yields
the server's base URL once ``/-/ready`` answers and stops the server after. ``query(url, expr)`` runs
an instant query through the HTTP API. Without the binary, ``prometheus_binary()`` skips the test.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

NOT_INSTALLED = "prometheus is not installed: .ci/run installs Debian's prometheus package"
DEBIAN_BINARY = Path("/usr/bin/prometheus")
READY_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0


def prometheus_binary() -> str:
    """The ``prometheus`` binary (PATH, else Debian's path); skips the calling test without one."""
    found = shutil.which("prometheus") or (str(DEBIAN_BINARY) if DEBIAN_BINARY.is_file() else None)
    if found is None:
        pytest.skip(NOT_INSTALLED)
    return found


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def scrape_config(targets: Sequence[str], *, interval: str = "1s", job: str = "fleet") -> dict[str, Any]:
    """A Prometheus configuration scraping ``targets`` (``HOST:PORT``, path ``/metrics``)."""
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": job,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "metrics_path": "/metrics",
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def running_prometheus(targets: Sequence[str], workdir: Path) -> Iterator[str]:
    """A Prometheus server scraping ``targets`` every second; yields its base URL (``http://127.0.0.1:P``)."""
    binary = prometheus_binary()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(scrape_config(targets)), encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = workdir / "prometheus.log"
    with log_path.open("w+") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
        try:
            deadline = time.monotonic() + READY_TIMEOUT_SECONDS
            while not _ready(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"prometheus did not become ready at {url}: {log.read()[-4000:]}")
                time.sleep(0.1)
            yield url
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(STOP_TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(STOP_TIMEOUT_SECONDS)


def query(url: str, expr: str) -> list[dict[str, Any]]:
    """The result vector of the instant query ``expr`` (each: ``metric`` labels and ``value``)."""
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(address, timeout=10) as response:
        body = json.loads(response.read())
    if body.get("status") != "success":
        raise AssertionError(f"query {expr!r} failed: {body}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def values_by(url: str, expr: str, label: str) -> dict[str, float]:
    """``query(url, expr)`` as {the value of ``label``: the sample value}."""
    return {item["metric"].get(label, ""): float(item["value"][1]) for item in query(url, expr)}
