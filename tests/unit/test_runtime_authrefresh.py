"""The credentials refresh of the ``kubernetes`` client, at most once a second
(ocm_rollout.client.authrefresh)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from ocm_rollout.client.authrefresh import throttled
from ocm_rollout.client.kube import load_api_client
from tests.unit.helpers import FakeClock


def test_the_hook_runs_at_most_once_a_second() -> None:
    calls: list[Any] = []
    clock = FakeClock()
    hook = throttled(calls.append, 1.0, clock)
    hook("a")
    clock.now += 0.5
    hook("b")
    assert calls == ["a"]
    clock.now += 0.6
    hook("c")
    assert calls == ["a", "c"]


def token_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose user has a bearer token."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "secret"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    return path


def test_a_kubeconfigs_token_still_reaches_every_request(tmp_path: Path) -> None:
    path = token_kubeconfig(tmp_path)
    configuration = load_api_client(str(path)).configuration
    for _ in range(3):
        assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer secret"
    assert configuration.host == "https://127.0.0.1:1"


def exec_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose user gets a bearer token from an exec plugin (so that the official
    loader reads it, and installs its refresh hook)."""
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "secret"}}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"], "interactiveMode": "Never",
        }}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    return path


def test_the_hook_stays_throttled_after_the_kubeconfig_reinstalls_its_own(tmp_path: Path, monkeypatch: Any) -> None:
    """The official loader's hook sets the configuration again, itself included: without taking
    that one back, every request after the first ran it (and read every proxy variable)."""
    from kubernetes.config import kube_config

    path = exec_kubeconfig(tmp_path)
    runs: list[int] = []
    set_config = kube_config.KubeConfigLoader._set_config

    def counted(self: Any, client_configuration: Any) -> None:
        runs.append(1)
        set_config(self, client_configuration)

    monkeypatch.setattr(kube_config.KubeConfigLoader, "_set_config", counted)
    configuration = load_api_client(str(path)).configuration
    loaded = len(runs)
    for _ in range(20):
        assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer secret"
    assert len(runs) - loaded == 1  # the first request's refresh; the next 19 within the second: none
