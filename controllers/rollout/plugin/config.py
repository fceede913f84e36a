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

import base64
import binascii
import ipaddress
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509

ENTRY_KEYS = ("name", "endpoint", "caCertificate")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_HOST = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*")


class PluginConfigError(ValueError):
    """The configuration file is unusable; the message names the entry and the field."""


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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PluginConfigError(f"{path}: {exc.strerror or exc}") from None
    return parse(text, source=str(path))


def parse(text: str, source: str = "work config") -> PluginRegistry:
    """Validate the YAML ``text`` (``source`` names it in errors)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PluginConfigError(f"{source}: not valid YAML: {exc}") from None
    if doc is None:
        return PluginRegistry(source=source)
    if not isinstance(doc, Mapping):
        raise PluginConfigError(f"{source}: expected a mapping at the top, got {_kind(doc)}")
    entries = doc.get("plugins")
    if entries is None:
        return PluginRegistry(source=source)
    if not isinstance(entries, list):
        raise PluginConfigError(f"{source}: plugins: expected a list, got {_kind(entries)}")
    found: dict[str, PluginConfig] = {}
    first_index: dict[str, int] = {}
    for index, entry in enumerate(entries):
        plugin = parse_entry(entry, f"{source}: plugins[{index}]")
        if plugin.name in found:
            raise PluginConfigError(
                f"{source}: plugins[{index}] ({plugin.name}): name: duplicate of plugins[{first_index[plugin.name]}]"
            )
        found[plugin.name] = plugin
        first_index[plugin.name] = index
    return PluginRegistry(found, source=source)


def parse_entry(entry: Any, where: str) -> PluginConfig:
    if not isinstance(entry, Mapping):
        raise PluginConfigError(f"{where}: expected a mapping, got {_kind(entry)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PluginConfigError(f"{where}: name: required (a non-empty string)")
    where = f"{where} ({name})"
    if len(name) > 253 or not _NAME.fullmatch(name):
        raise PluginConfigError(
            f"{where}: name: must be lower-case letters, digits, '-' and '.', starting and ending "
            "with a letter or digit (a DNS-1123 subdomain)"
        )
    for key in entry:
        if key not in ENTRY_KEYS:
            hint = " (the CA goes under caCertificate.caBundle)" if key == "caBundle" else ""
            raise PluginConfigError(
                f"{where}: unknown field {key!r}{hint}; known: {', '.join(ENTRY_KEYS)}"
            )
    endpoint = entry.get("endpoint")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise PluginConfigError(f"{where}: endpoint: required (HOST:PORT)")
    target, tls = parse_endpoint(endpoint, f"{where}: endpoint")
    ca_pem = None
    ca = entry.get("caCertificate")
    if ca is not None:
        if not tls:
            raise PluginConfigError(f"{where}: caCertificate: not allowed with a plaintext (http://) endpoint")
        ca_pem = _ca_bundle(ca, f"{where}: caCertificate")
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


def _ca_bundle(ca: Any, where: str) -> bytes:
    if not isinstance(ca, Mapping):
        raise PluginConfigError(f"{where}: expected a mapping with caBundle, got {_kind(ca)}")
    extra = [k for k in ca if k != "caBundle"]
    if extra:
        raise PluginConfigError(f"{where}: unknown field {extra[0]!r}; known: caBundle")
    bundle = ca.get("caBundle")
    if not isinstance(bundle, str) or not bundle.strip():
        raise PluginConfigError(f"{where}.caBundle: required (base64 of PEM CA certificates)")
    try:
        pem = base64.b64decode("".join(bundle.split()), validate=True)
    except (binascii.Error, ValueError):
        raise PluginConfigError(f"{where}.caBundle: not valid base64") from None
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise PluginConfigError(f"{where}.caBundle: holds no PEM certificate (expected base64 of PEM text)")
    return pem


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"
