"""The registered rollout plugins: the ``plugins`` list of the work controller's configuration file
(OCM's ``work-controller-config`` ConfigMap, key ``config.yaml``, given to ``ocm-rollout run
--work-config PATH``)::

    plugins:
      - name: my-rollout-1
        endpoint: my-rollout1.my-namespace:10843
        caCertificate:
          caBundle: "<base64 of the PEM CA certificates>"

Each entry needs ``name`` (unique, a DNS-1123 subdomain) and ``endpoint`` (``HOST:PORT``, or
``[IPv6]:PORT``). The connection is TLS, verified against ``caCertificate.caBundle`` when given,
else against the system's trust roots. This project's one addition: an endpoint written
``http://HOST:PORT`` is plaintext (a sidecar on loopback, tests), and then takes no CA.
Other keys of the file are left to the features they belong to; unknown keys inside an entry
are errors. Every error names the file, the entry and the field. Pure apart from reading the file.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocm_rollout.controllers.rollout.config_file import (
    WorkConfigError,
    ca_bundle,
    entry_name,
    read_document,
    read_text,
    section,
    unique,
)

ENTRY_KEYS = ("name", "endpoint", "caCertificate")
_HOST = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*")


#: The configuration file's one error type, under the name it had before other sections came.
PluginConfigError = WorkConfigError


@dataclass(frozen=True)
class PluginConfig:
    name: str
    #: As written in the file.
    endpoint: str
    #: The gRPC target (``HOST:PORT``).
    target: str
    #: False only for an ``http://`` endpoint.
    tls: bool = True
    #: PEM CA certificates to verify the plugin's serving certificate; None: the system's roots.
    ca_pem: bytes | None = None


@dataclass(frozen=True)
class PluginRegistry:
    """The registered plugins by name (an empty registry: no plugin configured)."""

    plugins: Mapping[str, PluginConfig] = field(default_factory=dict)
    #: The file they came from, for messages; None when built in code.
    source: str | None = None

    def get(self, name: str) -> PluginConfig | None:
        return self.plugins.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.plugins

    def __iter__(self) -> Iterator[PluginConfig]:
        return iter(self.plugins.values())

    def __len__(self) -> int:
        return len(self.plugins)


def load(path: str | Path) -> PluginRegistry:
    """Read and validate the configuration file at ``path``."""
    return parse(read_text(path), source=str(path))


def parse(text: str, source: str = "work config") -> PluginRegistry:
    """Validate the YAML ``text`` (``source`` names it in errors)."""
    return registry_from(read_document(text, source), source)


def registry_from(doc: Mapping[str, Any], source: str) -> PluginRegistry:
    """The ``plugins`` of the configuration document ``doc`` (read from ``source``)."""
    plugins = [parse_entry(entry, f"{source}: plugins[{index}]") for index, entry in enumerate(section(doc, "plugins", source))]
    unique([p.name for p in plugins], "plugins", source)
    return PluginRegistry({p.name: p for p in plugins}, source=source)


def parse_entry(entry: Any, where: str) -> PluginConfig:
    name, where = entry_name(entry, where, ENTRY_KEYS, {"caBundle": "the CA goes under caCertificate.caBundle"})
    endpoint = entry.get("endpoint")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise PluginConfigError(f"{where}: endpoint: required (HOST:PORT)")
    target, tls = parse_endpoint(endpoint, f"{where}: endpoint")
    ca_pem = None
    ca = entry.get("caCertificate")
    if ca is not None:
        if not tls:
            raise PluginConfigError(f"{where}: caCertificate: not allowed with a plaintext (http://) endpoint")
        ca_pem = ca_bundle(ca, f"{where}: caCertificate")
    return PluginConfig(name=name, endpoint=endpoint, target=target, tls=tls, ca_pem=ca_pem)


def parse_endpoint(endpoint: str, where: str) -> tuple[str, bool]:
    """``(gRPC target, TLS?)`` from ``HOST:PORT``, ``https://HOST:PORT`` or ``http://HOST:PORT``."""
    text = endpoint.strip()
    tls = True
    scheme, sep, rest = text.partition("://")
    if sep:
        if scheme not in ("http", "https"):
            raise PluginConfigError(f"{where}: unknown scheme {scheme!r} in {endpoint!r} (use HOST:PORT)")
        tls = scheme == "https"
        text = rest
    host, colon, port_text = text.rpartition(":")
    if not colon or not host:
        raise PluginConfigError(f"{where}: expected HOST:PORT, got {endpoint!r}")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise PluginConfigError(f"{where}: port must be 1-65535, got {port_text!r} in {endpoint!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise PluginConfigError(f"{where}: {host} is not an IPv6 address") from None
    elif not _HOST.fullmatch(host):
        raise PluginConfigError(f"{where}: {host!r} is not a host name or IP address (HOST:PORT; IPv6 as [ADDR]:PORT)")
    return f"{host}:{int(port_text)}", tls
