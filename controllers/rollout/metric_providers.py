"""The registered metric providers: the ``metricProviders`` list of the work configuration file
(this project's key, next to OCM's ``plugins``), which metric checks name with
``provider.name``::

    metricProviders:
      - name: thanos                                         # unique, a DNS-1123 subdomain
        address: https://thanos-query.monitoring.svc:9090    # a Prometheus-compatible HTTP API
        caCertificate: {caBundle: <base64 of PEM>}           # optional, https only
        bearerTokenFile: /var/run/secrets/prom/token         # optional; read at each query
        headers: {X-Scope-OrgID: team-a}                     # optional, static extra headers
        timeout: 30s                                         # optional cap on a query's timeout

``address`` is an ``http://`` or ``https://`` base URL (a path prefix is kept; no user info,
query or fragment); the query goes to ``<address>/api/v1/query``. ``headers`` may not set
``Authorization`` (that is ``bearerTokenFile``'s) nor the headers that frame the request.
Unknown keys are errors; every error names the file, the entry and the field. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ocm_rollout.api.gosyntax import GoSyntaxError, parse_go_duration
from ocm_rollout.controllers.rollout.config_file import (
    WorkConfigError,
    ca_bundle,
    entry_name,
    kind,
    read_document,
    section,
    unique,
)

SECTION = "metricProviders"
ENTRY_KEYS = ("name", "address", "caCertificate", "bearerTokenFile", "headers", "timeout")
#: Headers a provider entry may not set (lower case): the token has its own field, the rest
#: frame the request.
RESERVED_HEADERS = frozenset({"authorization", "host", "content-length", "transfer-encoding", "connection"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HINTS = {
    "caBundle": "the CA goes under caCertificate.caBundle",
    "endpoint": "a metric provider has an address: http(s)://HOST[:PORT][/PATH]",
    "url": "the field is address",
    "bearerToken": "give a file: bearerTokenFile",
}


@dataclass(frozen=True)
class MetricProvider:
    name: str
    #: The base URL, without a trailing slash.
    address: str
    #: PEM CA certificates to verify an https provider; None: the system's trust roots.
    ca_pem: bytes | None = None
    #: A file holding the bearer token, read at each query (so a rotated token is used).
    bearer_token_file: str | None = None
    #: Static extra request headers.
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The longest a query to this provider may take; None: the check's own timeout.
    timeout: timedelta | None = None


@dataclass(frozen=True)
class MetricProviders(Mapping[str, MetricProvider]):
    """The registered metric providers by name (empty: none configured)."""

    providers: Mapping[str, MetricProvider] = field(default_factory=lambda: MappingProxyType({}))
    #: The file they came from, for messages; None when built in code.
    source: str | None = None

    def __getitem__(self, name: str) -> MetricProvider:
        return self.providers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.providers)

    def __len__(self) -> int:
        return len(self.providers)

    def not_registered(self, name: str) -> str:
        """The message for a check naming a provider that is not registered."""
        where = f" in {self.source}" if self.source else ""
        return f"metric provider {name!r} is not registered{where} ({SECTION})"

    def unregistered(self, checks: Iterable[tuple[str, str | None]]) -> list[str]:
        """For each (check, provider name) whose provider is named and not registered, the
        message naming the check: ``check 'errors': metric provider 'thanos' is not registered ...``."""
        return [f"check {check!r}: {self.not_registered(name)}" for check, name in checks if name is not None and name not in self]


def parse(text: str, source: str = "work config") -> MetricProviders:
    """Validate the YAML ``text`` (``source`` names it in errors)."""
    return providers_from(read_document(text, source), source)


def providers_from(doc: Mapping[str, Any], source: str) -> MetricProviders:
    """The ``metricProviders`` of the configuration document ``doc`` (read from ``source``)."""
    found = [
        parse_entry(entry, f"{source}: {SECTION}[{index}]") for index, entry in enumerate(section(doc, SECTION, source))
    ]
    unique([p.name for p in found], SECTION, source)
    return MetricProviders(MappingProxyType({p.name: p for p in found}), source=source)


def parse_entry(entry: Any, where: str) -> MetricProvider:
    name, where = entry_name(entry, where, ENTRY_KEYS, _HINTS)
    address, tls = _address(entry.get("address"), f"{where}: address")
    ca_pem = None
    if entry.get("caCertificate") is not None:
        if not tls:
            raise WorkConfigError(f"{where}: caCertificate: only for an https:// address")
        ca_pem = ca_bundle(entry["caCertificate"], f"{where}: caCertificate")
    return MetricProvider(
        name=name,
        address=address,
        ca_pem=ca_pem,
        bearer_token_file=_token_file(entry.get("bearerTokenFile"), f"{where}: bearerTokenFile"),
        headers=_headers(entry.get("headers"), f"{where}: headers"),
        timeout=_timeout(entry.get("timeout"), f"{where}: timeout"),
    )


def _address(value: Any, where: str) -> tuple[str, bool]:
    """``(base URL without a trailing slash, https?)``."""
    if not isinstance(value, str) or not value.strip():
        raise WorkConfigError(f"{where}: required (http(s)://HOST[:PORT][/PATH])")
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise WorkConfigError(f"{where}: must start with http:// or https://, got {value!r}")
    if not parts.hostname:
        raise WorkConfigError(f"{where}: no host in {value!r}")
    if "@" in parts.netloc:
        raise WorkConfigError(f"{where}: no user info in the URL (use bearerTokenFile or headers)")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise WorkConfigError(f"{where}: no query or fragment in the URL (the query goes to <address>/api/v1/query)")
    if any(ch.isspace() for ch in text):
        raise WorkConfigError(f"{where}: no white space in the URL, got {value!r}")
    try:
        port = parts.port
    except ValueError:
        raise WorkConfigError(f"{where}: the port must be 1-65535 in {value!r}") from None
    if port == 0:
        raise WorkConfigError(f"{where}: the port must be 1-65535 in {value!r}")
    return text.rstrip("/"), parts.scheme == "https"


def _token_file(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/"):
        raise WorkConfigError(f"{where}: expected an absolute path, got {kind(value)}")
    return value


def _headers(value: Any, where: str) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise WorkConfigError(f"{where}: expected a mapping of header names to values, got {kind(value)}")
    headers: dict[str, str] = {}
    seen: dict[str, str] = {}
    for header, text in value.items():
        if not isinstance(header, str) or not _TOKEN.fullmatch(header):
            raise WorkConfigError(f"{where}: {header!r} is not an HTTP header name")
        if header.lower() in RESERVED_HEADERS:
            hint = " (use bearerTokenFile)" if header.lower() == "authorization" else ""
            raise WorkConfigError(f"{where}.{header}: not allowed{hint}")
        if header.lower() in seen:
            raise WorkConfigError(f"{where}.{header}: duplicate of {seen[header.lower()]}")
        if not isinstance(text, str):
            raise WorkConfigError(f"{where}.{header}: expected a string (quote it), got {kind(text)}")
        if any(ch in text for ch in "\r\n\0"):
            raise WorkConfigError(f"{where}.{header}: no line breaks or NUL in a header value")
        headers[header] = text
        seen[header.lower()] = header
    return MappingProxyType(headers)


def _timeout(value: Any, where: str) -> timedelta | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise WorkConfigError(f"{where}: expected a Go duration such as 30s, got {kind(value)}")
    try:
        nanoseconds = parse_go_duration(value)
    except GoSyntaxError:
        raise WorkConfigError(f"{where}: {value!r} is not a Go duration such as 30s, 1m or 1m30s") from None
    if nanoseconds <= 0:
        raise WorkConfigError(f"{where}: must be more than 0, got {value!r}")
    return timedelta(microseconds=nanoseconds / 1000)
