"""Metric checks' I/O: where a check's query goes, one instant query, one measurement.

- ``resolve_provider``: a check's ``provider`` (an ``address``, or a ``name`` registered under
  ``metricProviders`` in the work configuration) to a ``ProviderEndpoint``: the base URL, the TLS
  context, the request headers (the bearer token read from its file now, so a rotated token is
  used) and the query's timeout (the check's, capped by the provider's).
- ``query_prometheus``: GET ``<address>/api/v1/query?query=...`` with a hard timeout; the HTTP
  status and body as they came (Prometheus' error answers have a JSON body too), or a
  ``MetricQueryError`` when there is no answer.
- ``measure``: the two above, the query rendered (``checks/promql.py``) and the answer judged
  (``checks/metric.py``): a ``Measurement``, an errored one for anything that went wrong.

The judging is pure and lives in ``controllers/rollout/checks/``; nothing here decides a phase.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

import aiohttp
from yarl import URL

from ocm_rollout.controllers.rollout.checks.metric import Measurement, MetricSettings, judge
from ocm_rollout.controllers.rollout.checks.promql import QueryTemplateError, render_query
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders

QUERY_PATH = "/api/v1/query"
#: The largest answer read; a larger one is an error (a query that returns the whole TSDB).
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_CHUNK = 64 * 1024


class MetricProviderError(ValueError):
    """The check's provider cannot be used now: not registered, or its token file unreadable."""


class MetricQueryError(Exception):
    """The query got no usable HTTP answer: not sent, refused, TLS failed, timed out, too large."""


@dataclass(frozen=True)
class ProviderEndpoint:
    """Where and how one query is sent."""

    #: The base URL, without a trailing slash.
    address: str
    #: Verifies an https provider against its registered CA; None: the system's trust roots.
    ssl_context: ssl.SSLContext | None
    headers: Mapping[str, str]
    #: Seconds.
    timeout: float


@dataclass(frozen=True)
class QueryAnswer:
    status: int
    body: bytes
    content_type: str

    def for_judge(self, address: str) -> tuple[bytes | None, str | None]:
        """``(answer, error)`` for ``judge``: the body, unless the answer is an HTTP error
        without a JSON body (a proxy's page, a redirect), which is an error naming the status."""
        if self.status < 300 or "json" in self.content_type:
            return self.body, None
        text = self.body[:200].decode("utf-8", "replace").strip()
        return None, f"HTTP {self.status} from {address}" + (f": {text}" if text else "")


def resolve_provider(settings: MetricSettings, providers: MetricProviders) -> ProviderEndpoint:
    """Where the query of ``settings`` goes; raises ``MetricProviderError``."""
    timeout = settings.timeout.total_seconds()
    if settings.provider_address is not None:
        return ProviderEndpoint(settings.provider_address.rstrip("/"), None, {}, timeout)
    name = settings.provider_name or ""
    provider = providers.get(name)
    if provider is None:
        raise MetricProviderError(providers.not_registered(name))
    headers = dict(provider.headers)
    if provider.bearer_token_file is not None:
        headers["Authorization"] = f"Bearer {_token(name, provider.bearer_token_file)}"
    if provider.timeout is not None:
        timeout = min(timeout, provider.timeout.total_seconds())
    context = verifying_context(provider.ca_pem) if provider.ca_pem is not None else None
    return ProviderEndpoint(provider.address, context, headers, timeout)


def _token(name: str, path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise MetricProviderError(f"metric provider {name!r}: bearerTokenFile {path}: {reason}") from None
    if not token or any(ch.isspace() for ch in token):
        raise MetricProviderError(f"metric provider {name!r}: bearerTokenFile {path}: not one token")
    return token


@functools.lru_cache(maxsize=64)
def verifying_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client TLS context that trusts exactly the CA certificates ``ca_pem`` (one per bundle)."""
    return ssl.create_default_context(cadata=ca_pem.decode("ascii"))


async def query_prometheus(
    address: str,
    query: str,
    *,
    timeout: float,
    ssl_context: ssl.SSLContext | None,
    headers: Mapping[str, str],
    session: aiohttp.ClientSession,
) -> QueryAnswer:
    """One instant query: GET ``<address>/api/v1/query`` with ``query`` URL-encoded, done within
    ``timeout`` seconds (connecting and reading included), redirects not followed. Raises
    ``MetricQueryError`` when no answer came."""
    url = URL(f"{address.rstrip('/')}{QUERY_PATH}?{urlencode({'query': query})}", encoded=True)
    try:
        async with asyncio.timeout(timeout):
            async with session.get(
                url,
                headers={"Accept": "application/json", **headers},
                ssl=ssl_context if ssl_context is not None else True,
                allow_redirects=False,
            ) as response:
                body = await _read(response)
                return QueryAnswer(response.status, body, response.headers.get("Content-Type", ""))
    except TimeoutError:
        raise MetricQueryError(f"no answer from {address} within {timeout:g}s") from None
    except aiohttp.ClientConnectorCertificateError as exc:
        raise MetricQueryError(
            f"{address}: TLS: {exc.certificate_error} (check the provider's caCertificate.caBundle "
            "and its serving certificate)"
        ) from None
    except aiohttp.ClientError as exc:
        raise MetricQueryError(f"{address}: {type(exc).__name__}: {exc}") from None


async def _read(response: aiohttp.ClientResponse) -> bytes:
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise MetricQueryError(f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB")
    return bytes(body)


async def measure(
    settings: MetricSettings,
    *,
    cluster: str,
    name: str,
    namespace: str,
    providers: MetricProviders,
    session: aiohttp.ClientSession,
    clock: Callable[[], datetime],
) -> Measurement:
    """One measurement of the metric check ``settings`` for ``cluster`` (``name`` and
    ``namespace``: the ManifestWorkReplicaSet's or add-on's, for the query's placeholders)."""
    started = clock()
    try:
        endpoint = resolve_provider(settings, providers)
        query = render_query(settings.query, cluster=cluster, name=name, namespace=namespace)
        answer = await query_prometheus(
            endpoint.address,
            query,
            timeout=endpoint.timeout,
            ssl_context=endpoint.ssl_context,
            headers=endpoint.headers,
            session=session,
        )
        body, error = answer.for_judge(endpoint.address)
    except (MetricProviderError, MetricQueryError, QueryTemplateError) as exc:
        body, error = None, str(exc)
    return judge(settings, body, cluster=cluster, started_at=started, finished_at=clock(), error=error)
