"""Metric checks' I/O (controllers/runtime/prometheus.py) against a small aiohttp server playing
Prometheus: the query on the wire, answers of every kind, the timeout, TLS with the registered
CA, the bearer token read at each query, and unknown providers."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ocm_rollout.api.rollout_checks import MetricCheck
from ocm_rollout.controllers.rollout.checks.metric import MetricSettings
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders, parse
from ocm_rollout.controllers.runtime import prometheus
from ocm_rollout.controllers.runtime.prometheus import (
    MetricProviderError,
    MetricQueryError,
    QueryAnswer,
    measure,
    query_prometheus,
    resolve_provider,
)
from ocm_rollout.sandbox import tls

CREDS = tls.generate(["127.0.0.1"])
OTHER = tls.generate(["127.0.0.1"])
VECTOR = {
    "status": "success",
    "data": {"resultType": "vector", "result": [{"metric": {"cluster": "c1"}, "value": [1700000000.0, "0.002"]}]},
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FakePrometheus:
    """Serves ``handler`` at ``/prefix/api/v1/query``; keeps every request it saw."""

    handler: Handler
    seen: list[web.Request] = field(default_factory=list)
    address: str = ""


async def answer_json(request: web.Request) -> web.StreamResponse:
    return web.json_response(VECTOR)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def _serve(fake: FakePrometheus, tls_creds: tls.Credentials | None) -> AsyncIterator[FakePrometheus]:
    async def route(request: web.Request) -> web.StreamResponse:
        fake.seen.append(request)
        return await fake.handler(request)

    app = web.Application()
    app.router.add_get("/prefix/api/v1/query", route)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls_creds.server_context() if tls_creds else None)
    await site.start()
    port = runner.addresses[0][1]
    fake.address = f"{'https' if tls_creds else 'http'}://127.0.0.1:{port}/prefix"
    try:
        yield fake
    finally:
        await runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[FakePrometheus]:
    async for fake in _serve(FakePrometheus(answer_json), None):
        yield fake


@pytest.fixture
async def tls_server() -> AsyncIterator[FakePrometheus]:
    async for fake in _serve(FakePrometheus(answer_json), CREDS):
        yield fake


def settings(provider: dict[str, str], **fields: Any) -> MetricSettings:
    body = {"provider": provider, "query": "up{cluster={{cluster}}}", "successCondition": "result[0] < 0.01", **fields}
    return MetricSettings.compile("error-rate", MetricCheck.model_validate(body))


def providers(entry: str, source: str = "config.yaml") -> MetricProviders:
    return parse(f"metricProviders:\n  - {entry}\n", source=source)


def clock() -> datetime:
    return datetime.now(UTC)


async def query(server: FakePrometheus, session: aiohttp.ClientSession, text: str = "up", timeout: float = 5.0) -> QueryAnswer:
    return await query_prometheus(server.address, text, timeout=timeout, ssl_context=None, headers={}, session=session)


# -- the query ----------------------------------------------------------------------------------


async def test_the_query_arrives_exactly_as_written(server: FakePrometheus, session: aiohttp.ClientSession) -> None:
    text = 'sum(rate(x{a="b c+d",e=~"f|g&h"}[5m])) + 1 # é?%'
    answer = await query(server, session, text)
    assert (answer.status, json.loads(answer.body)) == (200, VECTOR)
    assert answer.content_type.startswith("application/json")
    [request] = server.seen
    assert request.path == "/prefix/api/v1/query"
    assert dict(request.query) == {"query": text}
    assert request.headers["Accept"] == "application/json"


async def test_an_error_answer_comes_back_with_its_status_and_body(
    server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    error = {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}

    async def bad_data(request: web.Request) -> web.StreamResponse:
        return web.json_response(error, status=400)

    server.handler = bad_data
    answer = await query(server, session)
    assert (answer.status, json.loads(answer.body)) == (400, error)
    assert answer.for_judge(server.address) == (answer.body, None)


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (web.Response(status=502, text="<html>Bad Gateway</html>", content_type="text/html"), "HTTP 502 from {}: <html>Bad Gateway</html>"),
        (web.Response(status=302, headers={"Location": "http://elsewhere/"}), "HTTP 302 from {}"),
    ],
)
async def test_an_http_error_without_json_is_an_error_naming_the_status(
    server: FakePrometheus, session: aiohttp.ClientSession, response: web.Response, error: str
) -> None:
    async def reply(request: web.Request) -> web.StreamResponse:
        return response

    server.handler = reply
    answer = await query(server, session)
    assert answer.for_judge(server.address) == (None, error.format(server.address))
    assert len(server.seen) == 1  # the redirect was not followed


async def test_a_slow_provider_times_out(server: FakePrometheus, session: aiohttp.ClientSession) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(10)
        return web.json_response(VECTOR)

    server.handler = slow
    started = time.monotonic()
    with pytest.raises(MetricQueryError) as info:
        await query(server, session, timeout=0.3)
    assert time.monotonic() - started < 3
    assert str(info.value) == f"no answer from {server.address} within 0.3s"


async def test_a_body_that_trickles_in_is_bounded_by_the_timeout_too(
    server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for _ in range(100):
            await response.write(b" ")
            await asyncio.sleep(0.1)
        return response

    server.handler = trickle
    with pytest.raises(MetricQueryError, match=r"within 0\.5s"):
        await query(server, session, timeout=0.5)


async def test_an_answer_too_large_is_an_error(
    server: FakePrometheus, session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prometheus, "MAX_ANSWER_BYTES", 1024 * 1024)

    async def huge(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"x" * (2 * 1024 * 1024), content_type="application/json")

    server.handler = huge
    with pytest.raises(MetricQueryError, match="larger than 1 MiB"):
        await query(server, session)


async def test_nothing_listening_is_an_error_naming_the_address(session: aiohttp.ClientSession) -> None:
    fake = FakePrometheus(answer_json)
    async for running in _serve(fake, None):
        address = running.address
    with pytest.raises(MetricQueryError, match=rf"^{address}: ClientConnectorError: "):
        await query_prometheus(address, "up", timeout=5, ssl_context=None, headers={}, session=session)


# -- TLS ----------------------------------------------------------------------------------------


def tls_provider(server: FakePrometheus, creds: tls.Credentials) -> MetricProviders:
    bundle = base64.b64encode(creds.ca_pem).decode()
    return providers(f"{{name: prom, address: '{server.address}', caCertificate: {{caBundle: '{bundle}'}}}}")


async def test_tls_is_verified_against_the_registered_ca(tls_server: FakePrometheus, session: aiohttp.ClientSession) -> None:
    endpoint = resolve_provider(settings({"name": "prom"}), tls_provider(tls_server, CREDS))
    assert endpoint.ssl_context is not None
    answer = await query_prometheus(
        endpoint.address, "up", timeout=5, ssl_context=endpoint.ssl_context, headers=endpoint.headers, session=session
    )
    assert answer.status == 200


async def test_a_ca_that_did_not_sign_the_certificate_fails_the_query(
    tls_server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    endpoint = resolve_provider(settings({"name": "prom"}), tls_provider(tls_server, OTHER))
    with pytest.raises(MetricQueryError) as info:
        await query_prometheus(
            endpoint.address, "up", timeout=5, ssl_context=endpoint.ssl_context, headers=endpoint.headers, session=session
        )
    message = str(info.value)
    assert message.startswith(f"{tls_server.address}: TLS: ")
    assert "certificate verify failed" in message and "caCertificate.caBundle" in message
    assert tls_server.seen == []


async def test_an_inline_https_address_uses_the_system_roots(
    tls_server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    endpoint = resolve_provider(settings({"address": tls_server.address + "/"}), MetricProviders())
    assert (endpoint.address, endpoint.ssl_context, endpoint.headers) == (tls_server.address, None, {})
    with pytest.raises(MetricQueryError, match=r"TLS: .*certificate verify failed"):
        await query_prometheus(endpoint.address, "up", timeout=5, ssl_context=None, headers={}, session=session)


# -- the provider -------------------------------------------------------------------------------


def test_an_unknown_provider_name_is_named_with_the_file() -> None:
    with pytest.raises(MetricProviderError) as info:
        resolve_provider(settings({"name": "thanos"}), providers("{name: prom, address: 'http://a:1'}", source="/etc/work/config.yaml"))
    assert str(info.value) == "metric provider 'thanos' is not registered in /etc/work/config.yaml (metricProviders)"


def test_the_timeout_is_the_checks_capped_by_the_providers() -> None:
    registered = providers("{name: prom, address: 'http://a:1', timeout: 5s}")
    assert resolve_provider(settings({"name": "prom"}), registered).timeout == 5
    assert resolve_provider(settings({"name": "prom"}, timeout="2s"), registered).timeout == 2
    assert resolve_provider(settings({"address": "http://a:1"}), registered).timeout == 30
    assert resolve_provider(settings({"name": "prom"}), providers("{name: prom, address: 'http://a:1'}")).timeout == 30


async def test_the_token_is_read_at_each_query_and_headers_are_sent(
    server: FakePrometheus, session: aiohttp.ClientSession, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    registered = providers(
        f"{{name: prom, address: '{server.address}', bearerTokenFile: '{token}', headers: {{X-Scope-OrgID: team-a}}}}"
    )
    check = settings({"name": "prom"})
    for value in ("first\n", "rotated"):
        token.write_text(value)
        endpoint = resolve_provider(check, registered)
        await query_prometheus(
            endpoint.address, "up", timeout=5, ssl_context=None, headers=endpoint.headers, session=session
        )
    assert [r.headers["Authorization"] for r in server.seen] == ["Bearer first", "Bearer rotated"]
    assert {r.headers["X-Scope-OrgID"] for r in server.seen} == {"team-a"}


@pytest.mark.parametrize(("content", "reason"), [(None, "No such file or directory"), ("", "not one token"), ("a b", "not one token")])
def test_an_unusable_token_file_is_named(tmp_path: Path, content: str | None, reason: str) -> None:
    token = tmp_path / "token"
    if content is not None:
        token.write_text(content)
    registered = providers(f"{{name: prom, address: 'http://a:1', bearerTokenFile: '{token}'}}")
    with pytest.raises(MetricProviderError) as info:
        resolve_provider(settings({"name": "prom"}), registered)
    assert str(info.value) == f"metric provider 'prom': bearerTokenFile {token}: {reason}"


# -- one measurement ----------------------------------------------------------------------------


async def test_a_measurement_renders_the_query_and_judges_the_answer(
    server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    registered = providers(f"{{name: prom, address: '{server.address}'}}")
    measurement = await measure(
        settings({"name": "prom"}), cluster='a"b', name="web", namespace="ns",
        providers=registered, session=session, clock=clock,
    )
    assert (measurement.phase, measurement.value) == (Phase.SUCCESSFUL, "[0.002]")
    assert server.seen[0].query["query"] == 'up{cluster="a\\"b"}'
    assert measurement.started_at <= measurement.finished_at


async def _measure_with(server: FakePrometheus, session: aiohttp.ClientSession, response: web.Response) -> str:
    async def reply(request: web.Request) -> web.StreamResponse:
        return response

    server.handler = reply
    measurement = await measure(
        settings({"address": server.address}), cluster="c1", name="web", namespace="ns",
        providers=MetricProviders(), session=session, clock=clock,
    )
    assert measurement.phase is Phase.ERROR
    return measurement.message


async def test_a_measurement_of_an_error_answer_says_what_prometheus_said(
    server: FakePrometheus, session: aiohttp.ClientSession
) -> None:
    error = {"status": "error", "errorType": "execution", "error": "query timed out"}
    message = await _measure_with(server, session, web.json_response(error, status=422))
    assert message == "Prometheus answered execution: query timed out"


async def test_a_measurement_of_garbage_is_an_error(server: FakePrometheus, session: aiohttp.ClientSession) -> None:
    message = await _measure_with(server, session, web.Response(text="hello", content_type="application/json"))
    assert message.startswith("the answer is not JSON")


async def test_a_measurement_of_a_proxy_page_names_the_status(server: FakePrometheus, session: aiohttp.ClientSession) -> None:
    message = await _measure_with(server, session, web.Response(status=503, text="upstream down"))
    assert message == f"query failed: HTTP 503 from {server.address}: upstream down"


async def test_a_measurement_with_an_unknown_provider_is_an_error(session: aiohttp.ClientSession) -> None:
    measurement = await measure(
        settings({"name": "thanos"}), cluster="c1", name="web", namespace="ns",
        providers=MetricProviders(source="cfg"), session=session, clock=clock,
    )
    assert (measurement.phase, measurement.message) == (
        Phase.ERROR,
        "query failed: metric provider 'thanos' is not registered in cfg (metricProviders)",
    )
