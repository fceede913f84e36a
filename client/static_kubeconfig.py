"""The in-cluster config, or a kubeconfig with static credentials, read without ``kubernetes.config``.

``kubernetes.config`` imports ``requests`` and ``oauthlib`` (for OIDC and GCP token refresh),
whatever the kubeconfig holds: about 5 MB of a settled controller's resident memory
(``bench/placement_compare.py``). Most configurations a controller runs with need none of it:

- **in-cluster**: the pod's service account (``$KUBERNETES_SERVICE_HOST``/``_PORT``, its token
  and CA files); the token file is read again once a minute, as bound tokens rotate;
- **a kubeconfig with static credentials**: a server, its CA (``certificate-authority`` or
  ``-data``), ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url``, and a ``token``,
  ``tokenFile``, client certificate and key, or username and password (the local hub's
  kubeconfig; most clusters made for CI).

For these, ``in_cluster`` and ``from_kubeconfig`` set exactly what ``kubernetes.config`` sets on the
client's ``Configuration`` (``tests/unit/test_client_static_kubeconfig.py`` compares the two for
every case). For anything else they return False and change nothing, and the caller loads the
configuration with ``kubernetes.config``: exec plugins, auth providers, several files in
``$KUBECONFIG``, a field not listed above, or a file the library would refuse (its error then
says why).
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import urllib3
import yaml

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
SERVICE_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_CA_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
TOKEN_REREAD_SECONDS = 60.0
DEFAULT_KUBECONFIG = "~/.kube/config"

CLUSTER_FIELDS = frozenset({
    "server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify", "tls-server-name",
    "proxy-url",
})  # fmt: skip
USER_FIELDS = frozenset({
    "token", "tokenFile", "client-certificate", "client-certificate-data", "client-key", "client-key-data", "username",
    "password",
})  # fmt: skip


class NotStatic(Exception):
    """The configuration needs ``kubernetes.config`` (or is one it refuses)."""


# -- in-cluster --------------------------------------------------------------------------------


def _host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"


def _read_nonempty(path: str) -> str:
    if not os.path.isfile(path):
        raise NotStatic(f"{path} does not exist")
    with open(path, encoding="utf-8") as handle:
        content = handle.read()
    if not content:
        raise NotStatic(f"{path} is empty")
    return content


def in_pod(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment names the API server's service, as in a pod."""
    return SERVICE_HOST_ENV in environ and SERVICE_PORT_ENV in environ


def in_cluster(
    configuration: Any,
    *,
    environ: Mapping[str, str] = os.environ,
    token_file: str = SERVICE_TOKEN_FILE,
    ca_file: str = SERVICE_CA_FILE,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Configure the pod's service account; False (nothing set) when not in a pod."""
    host, port = environ.get(SERVICE_HOST_ENV), environ.get(SERVICE_PORT_ENV)
    if not host or not port:
        return False
    try:
        token = _read_nonempty(token_file)
        _read_nonempty(ca_file)
    except (NotStatic, OSError, UnicodeDecodeError):
        return False
    lock = threading.Lock()
    current = [token]
    read_at = [clock()]

    def refresh(target: Any) -> None:
        with lock:
            if clock() - read_at[0] >= TOKEN_REREAD_SECONDS:
                current[0], read_at[0] = _read_nonempty(token_file), clock()
            target.api_key["BearerToken"] = "bearer " + current[0]

    configuration.host = "https://" + _host_port(host, port)
    configuration.ssl_ca_cert = ca_file
    configuration.api_key["BearerToken"] = "bearer " + token
    configuration.refresh_api_key_hook = refresh
    return True


# -- kubeconfig --------------------------------------------------------------------------------

_temp_files: dict[bytes, str] = {}
_temp_lock = threading.Lock()


def _remove_temp_files() -> None:
    for path in _temp_files.values():
        with contextlib.suppress(OSError):
            os.remove(path)
    _temp_files.clear()


def _temp_file(content: bytes) -> str:
    """A file holding ``content`` (one per distinct content), removed when the process exits."""
    with _temp_lock:
        found = _temp_files.get(content)
        if found is not None and os.path.isfile(found):
            return found
        if not _temp_files:
            atexit.register(_remove_temp_files)
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        _temp_files[content] = path
        return path


def _named(items: Any, name: Any, what: str) -> Mapping[str, Any] | None:
    """The first item of ``what`` called ``name`` (a kubeconfig's merge keeps the first)."""
    if not isinstance(items, list):
        raise NotStatic(f"{what} is not a list")
    for item in items:
        if not isinstance(item, dict) or "name" not in item:
            raise NotStatic(f"an entry of {what} has no name")
        if item["name"] == name:
            return item
    return None


def _section(item: Mapping[str, Any] | None, key: str, allowed: frozenset[str]) -> dict[str, Any]:
    value = (item or {}).get(key)
    if not isinstance(value, dict) or any(v is None for v in value.values()):
        raise NotStatic(f"no {key} mapping")
    unknown = set(value) - allowed
    if unknown:
        raise NotStatic(f"{key} needs kubernetes.config for {sorted(unknown)}")
    return value


def _file_or_data(section: Mapping[str, Any], key: str, base: str) -> str | None:
    """The path of ``key``'s file: ``key-data`` (base64) written out, else ``key`` (relative
    to the kubeconfig's directory), else None."""
    if f"{key}-data" in section:
        data = section[f"{key}-data"]
        if not data:
            return None
        try:
            raw = base64.b64decode(data.encode() if isinstance(data, str) else data, validate=False)
        except (binascii.Error, ValueError, TypeError, AttributeError) as exc:
            raise NotStatic(f"{key}-data is not base64") from exc
        return _temp_file(raw)
    if key in section:
        path = os.path.normpath(os.path.join(base, str(section[key])))
        if not os.path.isfile(path):
            raise NotStatic(f"{path} does not exist")
        return path
    return None


def _token(user: Mapping[str, Any], base: str) -> str | None:
    if "token" in user:
        token = user["token"]
        return f"Bearer {token}" if token else None
    if "tokenFile" in user:
        path = os.path.normpath(os.path.join(base, str(user["tokenFile"])))
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
        return f"Bearer {content}" if content else None
    return None


def _settings(path: str, context: str | None) -> dict[str, Any]:
    """What ``kubernetes.config`` would set on a Configuration for this single file."""
    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    if not isinstance(document, dict):
        raise NotStatic("not a mapping")
    name = context if context is not None else document.get("current-context")
    if name is None:
        raise NotStatic("no current-context")
    found = _named(document.get("contexts"), name, "contexts")
    context_of = found.get("context") if found is not None else None
    if not isinstance(context_of, dict) or context_of.get("cluster") is None:
        raise NotStatic(f"no usable context {name!r}")
    cluster_item = _named(document.get("clusters"), context_of["cluster"], "clusters")
    cluster = _section(cluster_item, "cluster", CLUSTER_FIELDS)
    user: dict[str, Any] = {}
    if context_of.get("user") and document.get("users"):
        user_item = _named(document["users"], context_of["user"], "users")
        if user_item is not None:
            user = _section(user_item, "user", USER_FIELDS)
    base = os.path.abspath(os.path.dirname(path))

    settings: dict[str, Any] = {}
    token = _token(user, base)
    if token is None and "username" in user and "password" in user:
        if not isinstance(user["username"], str) or not isinstance(user["password"], str):
            raise NotStatic("username and password are not strings")
        token = urllib3.util.make_headers(basic_auth=f"{user['username']}:{user['password']}").get("authorization")
    if token is not None:
        settings["api_key"] = token
    if "server" in cluster:
        settings["host"] = str(cluster["server"]).rstrip("/")
        if settings["host"].startswith("https"):
            settings["ssl_ca_cert"] = _file_or_data(cluster, "certificate-authority", base)
            settings["cert_file"] = _file_or_data(user, "client-certificate", base)
            settings["key_file"] = _file_or_data(user, "client-key", base)
    if "insecure-skip-tls-verify" in cluster:
        settings["verify_ssl"] = not cluster["insecure-skip-tls-verify"]
    if "tls-server-name" in cluster:
        settings["tls_server_name"] = cluster["tls-server-name"]
    if "proxy-url" in cluster:
        settings["proxy"] = cluster["proxy-url"]
    return settings


def from_kubeconfig(configuration: Any, kubeconfig: str | None = None, context: str | None = None) -> bool:
    """Configure from a kubeconfig with static credentials (``None``: ``$KUBECONFIG``, else
    ``~/.kube/config``); False (nothing set) when it needs ``kubernetes.config``."""
    location = kubeconfig if kubeconfig is not None else os.environ.get("KUBECONFIG", DEFAULT_KUBECONFIG)
    if not location or os.pathsep in location:
        return False  # several files to merge
    path = os.path.expanduser(location)
    try:
        settings = _settings(path, context)
    except (NotStatic, OSError, UnicodeDecodeError, yaml.YAMLError, TypeError, AttributeError):
        return False
    token = settings.pop("api_key", None)
    if token is not None:
        configuration.api_key["BearerToken"] = token
    for key, value in settings.items():
        setattr(configuration, key, value)
    return True
