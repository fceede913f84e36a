"""The rollout plugin client against the example smoke plugin (examples/plugins/smoke/server.py):
every rpc, UNAVAILABLE retries, deadlines, TLS with a generated CA and with the wrong one."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from aiohttp import web

from ocm_rollout.controllers.rollout.plugin import requests as rq
from ocm_rollout.controllers.rollout.plugin.client import (
    PluginCallError,
    PluginClient,
    PluginResponseError,
    PluginUnavailableError,
    ValidationAnswer,
)
from ocm_rollout.controllers.rollout.plugin.config import PluginConfig, PluginRegistry
from ocm_rollout.controllers.rollout.plugin.loader import PluginClients
from ocm_rollout.controllers.rollout.plugin.states import Validation
from ocm_rollout.sandbox import tls

SERVER = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "smoke" / "server.py"


def _load_smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("smoke_plugin_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


smoke = _load_smoke()

CONTEXT = rq.RolloutContext(
    "hello", "default", "canary", 3,
    completed=[rq.ClusterEntry("c1", "Succeeded", "r2")],
    progressing=[rq.ClusterEntry("c2", "Progressing", "r2")],
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def plaintext(port: int) -> PluginConfig:
    return PluginConfig("smoke", f"http://127.0.0.1:{port}", f"127.0.0.1:{port}", tls=False)


class Counter:
    """A jitter source that counts the retries it is asked about."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return 0.5


@pytest.fixture
async def served() -> AsyncIterator[Callable[..., Any]]:
    servers: list[Any] = []

    async def start(plugin: Any, address: str = "127.0.0.1:0", creds: tuple[bytes, bytes] | None = None) -> int:
        server, port = await smoke.start_server(plugin, address, creds)
        servers.append(server)
        return int(port)

    yield start
    for server in servers:
        await server.stop(None)


async def test_every_rpc(served: Callable[..., Any]) -> None:
    plugin = smoke.SmokePlugin(succeed_after=2)
    port = await served(plugin)
    async with PluginClient(plaintext(port)) as client:
        loaded = await client.load()
        assert (loaded.status, loaded.reason, loaded.message) == ("True", "Available", "smoke plugin is available.")
        await client.progress_rollout(rq.rollout_request(CONTEXT))
        await client.begin_rollout(rq.rollout_request(CONTEXT, "c3"))
        first = await client.validate_rollout_completion(rq.validate_request(CONTEXT, "c3"))
        second = await client.validate_rollout_completion(rq.validate_request(CONTEXT, "c3"))
        assert (first, second) == (
            ValidationAnswer(Validation.INPROGRESS, "call 1 of 2"),
            ValidationAnswer(Validation.SUCCEEDED, "call 2 of 2"),
        )
        work = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                "metadata": {"name": "hello", "namespace": "c3"}}
        mutated = await client.mutate_manifest_work(rq.mutate_request(CONTEXT, "c3"), work)
    assert mutated["metadata"]["annotations"] == {
        "smoke.rollout-plugin.ocm-rollout.io/placement": "canary",
        "smoke.rollout-plugin.ocm-rollout.io/position": "2/3",
    }
    assert "annotations" not in work["metadata"]  # the caller's dict is not touched
    assert dict(plugin.calls) == {
        "Initialize": 1, "ProgressRollout": 1, "BeginRollout": 1, "ValidateRolloutCompletion": 2, "MutateManifestWork": 1
    }
    assert dict(plugin.validations) == {("default", "hello", "canary", "c3"): 2}


async def test_validation_fails_after_n_calls(served: Callable[..., Any]) -> None:
    port = await served(smoke.SmokePlugin(succeed_after=99, fail_after=2))
    async with PluginClient(plaintext(port)) as client:
        answers = [await client.validate_rollout_completion(rq.validate_request(CONTEXT, "c3")) for _ in range(2)]
    assert [a.result for a in answers] == [Validation.INPROGRESS, Validation.FAILED]
    assert answers[1].message == "smoke check did not pass in 2 calls: call 2 of 99"


async def test_validation_by_http_check(served: Callable[..., Any]) -> None:
    async def health(request: web.Request) -> web.Response:
        return web.Response(status=200 if request.match_info["cluster"] == "good" else 503)

    app = web.Application()
    app.router.add_get("/healthz/{cluster}", health)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    http_port = runner.addresses[0][1]
    try:
        url = f"http://127.0.0.1:{http_port}/healthz/{{cluster}}"
        port = await served(smoke.SmokePlugin(check_url=url))
        async with PluginClient(plaintext(port)) as client:
            good = await client.validate_rollout_completion(rq.validate_request(CONTEXT, "good"))
            bad = await client.validate_rollout_completion(rq.validate_request(CONTEXT, "bad"))
    finally:
        await runner.cleanup()
    assert good == ValidationAnswer(Validation.SUCCEEDED, f"GET http://127.0.0.1:{http_port}/healthz/good: HTTP 200")
    assert bad == ValidationAnswer(Validation.INPROGRESS, f"GET http://127.0.0.1:{http_port}/healthz/bad: HTTP 503")


async def test_an_error_status_is_not_retried(served: Callable[..., Any]) -> None:
    plugin = smoke.SmokePlugin(fail_initialize="no Argo Rollouts CRD on the hub")
    port = await served(plugin)
    jitter = Counter()
    async with PluginClient(plaintext(port), jitter=jitter) as client:
        with pytest.raises(PluginCallError) as info:
            await client.initialize()
        loaded = await client.load()
    assert info.value.code is grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.attempts == 1
    assert str(info.value) == "plugin smoke: Initialize: FAILED_PRECONDITION: no Argo Rollouts CRD on the hub"
    assert (loaded.status, loaded.reason, loaded.message) == (
        "False", "Failed", "Initialize fails: FAILED_PRECONDITION: no Argo Rollouts CRD on the hub"
    )
    assert plugin.calls["Initialize"] == 2 and jitter.calls == 0


async def test_unavailable_is_retried_until_the_plugin_starts(served: Callable[..., Any]) -> None:
    port = free_port()
    jitter = Counter()
    client = PluginClient(plaintext(port), attempts=50, initial_backoff=0.05, max_backoff=0.2, jitter=jitter)
    async with client:
        call = asyncio.create_task(client.load())
        await asyncio.sleep(0.6)
        assert not call.done()
        await served(smoke.SmokePlugin(), f"127.0.0.1:{port}")
        loaded = await asyncio.wait_for(call, 10)
    assert loaded.status == "True"
    assert jitter.calls >= 2  # retried, with back-off, while nothing listened


async def test_unavailable_retries_are_bounded() -> None:
    port = free_port()
    jitter = Counter()
    async with PluginClient(plaintext(port), attempts=3, initial_backoff=0.01, jitter=jitter) as client:
        with pytest.raises(PluginUnavailableError) as info:
            await client.progress_rollout(rq.rollout_request(CONTEXT))
        loaded = await client.load()
    assert info.value.code is grpc.StatusCode.UNAVAILABLE and info.value.attempts == 3
    assert str(info.value).startswith("plugin smoke: ProgressRollout: UNAVAILABLE after 3 attempts: ")
    assert jitter.calls == 2 * 2
    assert loaded.status == "False"
    assert loaded.message.startswith("Initialize fails: UNAVAILABLE after 3 attempts: ")


def test_back_off_doubles_up_to_the_maximum() -> None:
    client = PluginClient(plaintext(1), initial_backoff=0.5, max_backoff=5.0, jitter=lambda: 1.0)
    assert [client.backoff(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    low = PluginClient(plaintext(1), initial_backoff=0.5, jitter=lambda: 0.0)
    assert low.backoff(1) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="attempts must be at least 1"):
        PluginClient(plaintext(1), attempts=0)


async def test_a_hung_plugin_hits_the_deadline(served: Callable[..., Any]) -> None:
    plugin = smoke.SmokePlugin(delays={"ValidateRolloutCompletion": 30.0})
    port = await served(plugin)
    jitter = Counter()
    async with PluginClient(plaintext(port), timeout=0.3, jitter=jitter) as client:
        started = asyncio.get_running_loop().time()
        with pytest.raises(PluginCallError) as info:
            await client.validate_rollout_completion(rq.validate_request(CONTEXT, "c3"))
        elapsed = asyncio.get_running_loop().time() - started
    assert info.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
    assert info.value.attempts == 1 and jitter.calls == 0
    assert elapsed < 5
    assert str(info.value).startswith("plugin smoke: ValidateRolloutCompletion: DEADLINE_EXCEEDED: ")


def test_the_default_deadline_is_the_enhancements_30_seconds() -> None:
    assert PluginClient(plaintext(1)).timeout == 30.0


async def test_a_bad_mutation_answer_is_a_response_error(served: Callable[..., Any]) -> None:
    class Broken(smoke.SmokePlugin):  # type: ignore[name-defined]
        async def mutate_manifest_work(self, request: Any, context: Any) -> Any:
            return smoke.proto.MutateManifestWorkResponse(manifest_work=b"[1, 2]")

    class Quiet(smoke.SmokePlugin):  # type: ignore[name-defined]
        async def mutate_manifest_work(self, request: Any, context: Any) -> Any:
            assert json.loads(request.manifest_work) == {"kind": "ManifestWork"}
            return smoke.proto.MutateManifestWorkResponse()

    broken, quiet = await served(Broken()), await served(Quiet())
    async with PluginClient(plaintext(broken)) as client:
        with pytest.raises(PluginResponseError, match=r"^plugin smoke: MutateManifestWork: manifest_work is not a JSON object$"):
            await client.mutate_manifest_work(rq.mutate_request(CONTEXT, "c3"), {"kind": "ManifestWork"})
    async with PluginClient(plaintext(quiet)) as client:  # an empty answer: unchanged
        assert await client.mutate_manifest_work(rq.mutate_request(CONTEXT, "c3"), {"kind": "ManifestWork"}) == {
            "kind": "ManifestWork"
        }


async def test_tls_with_the_plugins_ca(served: Callable[..., Any]) -> None:
    creds = tls.generate(["127.0.0.1"], days=1)
    port = await served(smoke.SmokePlugin(), "127.0.0.1:0", (creds.cert_pem + creds.ca_pem, creds.key_pem))
    config = PluginConfig("smoke", f"127.0.0.1:{port}", f"127.0.0.1:{port}", ca_pem=creds.ca_pem)
    async with PluginClient(config) as client:
        assert (await client.load()).status == "True"
    # Plaintext to a TLS port does not get through either.
    async with PluginClient(plaintext(port), attempts=2, initial_backoff=0.01) as client:
        assert (await client.load()).status == "False"


async def test_tls_with_the_wrong_ca_is_a_clear_failure(served: Callable[..., Any]) -> None:
    creds, other = tls.generate(["127.0.0.1"], days=1), tls.generate(["127.0.0.1"], days=1)
    port = await served(smoke.SmokePlugin(), "127.0.0.1:0", (creds.cert_pem + creds.ca_pem, creds.key_pem))
    config = PluginConfig("smoke", f"127.0.0.1:{port}", f"127.0.0.1:{port}", ca_pem=other.ca_pem)
    async with PluginClient(config, attempts=2, initial_backoff=0.01) as client:
        loaded = await client.load()
    assert (loaded.status, loaded.reason) == ("False", "Failed")
    assert loaded.message.startswith("Initialize fails: UNAVAILABLE after 2 attempts: ")
    assert "CERTIFICATE_VERIFY_FAILED" in loaded.message
    assert loaded.message.endswith("(TLS: check caCertificate.caBundle and the plugin's serving certificate)")


async def test_the_example_server_runs_from_its_command_line(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "SMOKE_PLUGIN_SUCCEED_AFTER": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--address", f"127.0.0.1:{port}", "--delay", "BeginRollout=0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)
        assert line.strip() == (
            f"smoke plugin serving ocm_rollout.rolloutplugin.v1alpha1.RolloutPluginService on 127.0.0.1:{port} (plaintext)"
        )
        async with PluginClient(plaintext(port)) as client:
            assert (await client.load()).status == "True"
            answer = await client.validate_rollout_completion(rq.validate_request(CONTEXT, "c1"))
            assert answer.result is Validation.SUCCEEDED
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "ValidateRolloutCompletion default/hello/canary/c1 -> SUCCEEDED (call 1 of 1)" in err


async def test_plugin_clients_load_once_and_retry_failures(served: Callable[..., Any]) -> None:
    port = free_port()
    registry = PluginRegistry({"smoke": plaintext(port)}, source="config.yaml")
    clients = PluginClients(registry, lambda config: PluginClient(config, attempts=3, initial_backoff=0.25))
    try:
        missing = await clients.loaded("other")
        assert (missing.status, missing.message) == (
            "False", "plugin 'other' is not registered in config.yaml (work-controller-config plugins)"
        )
        assert clients.client("other") is None
        assert (await clients.loaded("smoke")).status == "False"  # nothing listens yet
        plugin = smoke.SmokePlugin()
        await served(plugin, f"127.0.0.1:{port}")
        for _ in range(3):
            assert (await clients.loaded("smoke")).status == "True"
        assert plugin.calls["Initialize"] == 1
        assert clients.client("smoke") is clients.client("smoke")
    finally:
        await clients.close()
