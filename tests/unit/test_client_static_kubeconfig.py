"""Configurations read without ``kubernetes.config`` (ocm_rollout.client.static_kubeconfig) set
exactly what ``kubernetes.config`` sets, and everything else is left to it."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes.config
import pytest
import yaml
from kubernetes.client import Configuration
from kubernetes.config.incluster_config import InClusterConfigLoader

from ocm_rollout.client import static_kubeconfig
from ocm_rollout.client.kube import load_api_client

CA, CERT, KEY = b"-----CA-----\n", b"-----CERT-----\n", b"-----KEY-----\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def document(cluster: dict[str, Any], user: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    context: dict[str, Any] = {"cluster": "c"}
    if user is not None:
        context["user"] = "u"
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "ctx", "context": context}],
        "users": [{"name": "u", "user": user}] if user is not None else [],
    }  # fmt: skip
    doc.update(extra)
    return doc


def write(tmp: Path, doc: Any) -> str:
    for name, content in (("ca.crt", CA), ("client.crt", CERT), ("client.key", KEY), ("token", b"file-token\n")):
        (tmp / name).write_bytes(content)
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return str(path)


def content(path: Any) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


def seen(configuration: Any) -> dict[str, Any]:
    """What a client uses of a configuration (files by their content)."""
    return {
        "host": configuration.host, "api_key": dict(configuration.api_key), "verify_ssl": configuration.verify_ssl,
        "tls_server_name": configuration.tls_server_name, "proxy": configuration.proxy,
        "ca": content(configuration.ssl_ca_cert), "cert": content(configuration.cert_file),
        "key": content(configuration.key_file),
    }  # fmt: skip


HTTPS = "https://hub.example:6443"
STATIC = {
    "token and CA data": document({"server": HTTPS, "certificate-authority-data": b64(CA)}, {"token": "abc"}),
    "token file and CA file, relative": document({"server": HTTPS, "certificate-authority": "ca.crt"}, {"tokenFile": "token"}),
    "client certificate data, TLS not verified": document(
        {"server": HTTPS + "/", "insecure-skip-tls-verify": True},
        {"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)},
    ),
    "client certificate files, server name and proxy": document(
        {"server": HTTPS, "certificate-authority": "ca.crt", "tls-server-name": "kube", "proxy-url": "http://proxy:3128"},
        {"client-certificate": "client.crt", "client-key": "client.key"},
    ),
    "username and password": document({"server": HTTPS, "insecure-skip-tls-verify": False}, {"username": "ann", "password": "s3cret"}),
    "an empty token, then username and password": document({"server": HTTPS}, {"token": "", "username": "a", "password": "b"}),
    "http: no TLS files read": document({"server": "http://127.0.0.1:8080", "certificate-authority": "missing.crt"}, {"token": "t"}),
    "no user": document({"server": HTTPS, "certificate-authority-data": b64(CA)}, None),
    "a user the file does not hold": {
        **document({"server": HTTPS}, None),
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "nobody"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
    },
    "the first of two entries with one name": {
        **document({"server": HTTPS}, {"token": "first"}),
        "users": [{"name": "u", "user": {"token": "first"}}, {"name": "u", "user": {"token": "second"}}],
    },
}


@pytest.mark.parametrize("case", sorted(STATIC))
def test_a_static_kubeconfig_sets_what_the_library_sets(case: str, tmp_path: Path) -> None:
    path = write(tmp_path, STATIC[case])
    library, ours = Configuration(), Configuration()
    kubernetes.config.load_kube_config(config_file=path, client_configuration=library)
    assert static_kubeconfig.from_kubeconfig(ours, path)
    assert seen(ours) == seen(library)


def test_a_named_context_is_used_instead_of_the_current_one(tmp_path: Path) -> None:
    doc = document({"server": HTTPS}, {"token": "abc"})
    doc["clusters"].append({"name": "other", "cluster": {"server": "https://other:6443", "insecure-skip-tls-verify": True}})
    doc["contexts"].append({"name": "second", "context": {"cluster": "other", "user": "u"}})
    path = write(tmp_path, doc)
    library, ours = Configuration(), Configuration()
    kubernetes.config.load_kube_config(config_file=path, context="second", client_configuration=library)
    assert static_kubeconfig.from_kubeconfig(ours, path, "second")
    assert seen(ours) == seen(library) and ours.host == "https://other:6443"


def test_the_default_kubeconfig_is_the_environment_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, STATIC["token and CA data"])
    monkeypatch.setenv("KUBECONFIG", path)
    ours = Configuration()
    assert static_kubeconfig.from_kubeconfig(ours)
    assert ours.api_key == {"BearerToken": "Bearer abc"}
    monkeypatch.setenv("KUBECONFIG", f"{path}{os.pathsep}{path}")  # several files: the library merges them
    assert not static_kubeconfig.from_kubeconfig(Configuration())


LIBRARY_ONLY = {
    "an exec plugin": document({"server": HTTPS}, {"exec": {"command": "get-token", "apiVersion": "client.authentication.k8s.io/v1"}}),
    "an auth provider": document({"server": HTTPS}, {"auth-provider": {"name": "oidc", "config": {"id-token": "x"}}}),
    "a cluster field not read here": document({"server": HTTPS, "certificate-authority-data": b64(CA), "extensions": []}, {"token": "t"}),
    "a username that is not a string": document({"server": HTTPS}, {"username": 5, "password": "p"}),
    "no current context": {k: v for k, v in document({"server": HTTPS}, {"token": "t"}).items() if k != "current-context"},
    "a context the file does not hold": document({"server": HTTPS}, {"token": "t"}, **{"current-context": "nope"}),
    "a CA file that does not exist": document({"server": HTTPS, "certificate-authority": "missing.crt"}, {"token": "t"}),
    "CA data that is not base64": document({"server": HTTPS, "certificate-authority-data": "a"}, {"token": "t"}),
    "a null field": document({"server": HTTPS, "certificate-authority-data": None}, {"token": "t"}),
    "not a mapping": "- just\n- a list\n",
    "not YAML": "clusters: [\n",
}


@pytest.mark.parametrize("case", sorted(LIBRARY_ONLY))
def test_anything_else_is_left_to_the_library_untouched(case: str, tmp_path: Path) -> None:
    path = write(tmp_path, LIBRARY_ONLY[case])
    ours = Configuration()
    before = seen(ours)
    assert not static_kubeconfig.from_kubeconfig(ours, path)
    assert seen(ours) == before
    assert not static_kubeconfig.from_kubeconfig(Configuration(), str(tmp_path / "absent"))


def test_load_api_client_falls_back_to_the_library_for_an_exec_plugin(tmp_path: Path) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "from-exec"}}
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": ["-c", f"print({json.dumps(json.dumps(credential))})"], "interactiveMode": "Never"}}  # fmt: skip
    path = write(tmp_path, document({"server": HTTPS, "certificate-authority-data": b64(CA)}, user))
    client = load_api_client(path)
    assert client.configuration.get_api_key_with_prefix("BearerToken") == "Bearer from-exec"


def test_a_static_kubeconfig_is_loaded_without_the_library_s_config_package(tmp_path: Path) -> None:
    path = write(tmp_path, STATIC["client certificate files, server name and proxy"])
    code = f"""
import json, sys
from ocm_rollout.client import lazy_kubernetes
lazy_kubernetes.install()
from ocm_rollout.client.kube import load_api_client
client = load_api_client({path!r})
print(json.dumps([client.configuration.host, "kubernetes.config" in sys.modules, "requests" in sys.modules]))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [HTTPS, False, False]


# -- in-cluster --------------------------------------------------------------------------------


def pod(tmp: Path, host: str = "10.0.0.1", token: str = "sa-token") -> tuple[dict[str, str], str, str]:
    (tmp / "token").write_text(token)
    (tmp / "ca.crt").write_bytes(CA)
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}, str(tmp / "token"), str(tmp / "ca.crt")


@pytest.mark.parametrize("host", ["10.0.0.1", "fd00::1", "kubernetes.default.svc"])
def test_in_cluster_sets_what_the_library_sets(host: str, tmp_path: Path) -> None:
    environ, token, ca = pod(tmp_path, host)
    library, ours = Configuration(), Configuration()
    InClusterConfigLoader(token_filename=token, cert_filename=ca, environ=environ).load_and_set(library)
    assert static_kubeconfig.in_cluster(ours, environ=environ, token_file=token, ca_file=ca)
    assert seen(ours) == seen(library)
    library.refresh_api_key_hook(library)
    ours.refresh_api_key_hook(ours)
    assert seen(ours) == seen(library)


@pytest.mark.parametrize("missing", ["environment", "token", "empty token", "ca"])
def test_in_cluster_is_false_where_the_library_refuses(missing: str, tmp_path: Path) -> None:
    environ, token, ca = pod(tmp_path)
    if missing == "environment":
        environ = {}
    elif missing == "token":
        os.remove(token)
    elif missing == "empty token":
        Path(token).write_text("")
    else:
        os.remove(ca)
    with pytest.raises(kubernetes.config.ConfigException):
        InClusterConfigLoader(token_filename=token, cert_filename=ca, environ=environ).load_and_set(Configuration())
    ours = Configuration()
    assert not static_kubeconfig.in_cluster(ours, environ=environ, token_file=token, ca_file=ca)
    assert ours.host == Configuration().host and ours.api_key == {}


def test_in_cluster_reads_the_rotated_token_once_a_minute(tmp_path: Path) -> None:
    environ, token, ca = pod(tmp_path, token="first")
    now = [100.0]
    ours = Configuration()
    assert static_kubeconfig.in_cluster(ours, environ=environ, token_file=token, ca_file=ca, clock=lambda: now[0])
    Path(token).write_text("second")
    now[0] += static_kubeconfig.TOKEN_REREAD_SECONDS - 1
    ours.refresh_api_key_hook(ours)
    assert ours.api_key["BearerToken"] == "bearer first"
    now[0] += 1
    ours.refresh_api_key_hook(ours)
    assert ours.api_key["BearerToken"] == "bearer second"
