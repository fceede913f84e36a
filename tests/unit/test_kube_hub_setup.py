"""What comes before the real control plane runs: where its binaries are built and found, the
go.mod that builds Kubernetes from its module, the PKI kept across restarts, and what `up --hub
kube-apiserver` says when the binaries are missing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ocm_rollout.sandbox import gobuild, kube_hub, kube_pki

KUBERNETES_GO_MOD = """module k8s.io/kubernetes

go 1.24.0

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/api => ./staging/src/k8s.io/api
)
"""


def test_every_staging_module_is_replaced_by_the_releases_published_version() -> None:
    assert gobuild.staging_replaces(KUBERNETES_GO_MOD, "v1.34.4") == [
        "\tk8s.io/api => k8s.io/api v0.34.4",
        "\tk8s.io/client-go => k8s.io/client-go v0.34.4",
    ]


def test_the_cache_is_the_users_keyed_by_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OCM_ROLLOUT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    directory = gobuild.set_dir("kube-hub")
    assert directory.parent == tmp_path / "ocm-rollout" / "bin"
    assert gobuild.KUBERNETES_VERSION in directory.name and gobuild.ETCD_VERSION in directory.name
    monkeypatch.setenv("OCM_ROLLOUT_CACHE", str(tmp_path / "elsewhere"))
    assert gobuild.set_dir("ocm") == tmp_path / "elsewhere" / "bin" / f"ocm-{gobuild.OCM_VERSION}"


def test_a_set_counts_as_built_only_with_every_binary_and_its_record(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OCM_ROLLOUT_CACHE", str(tmp_path))
    directory = gobuild.set_dir("kube-hub")
    directory.mkdir(parents=True)
    for name in ("kube-apiserver", "kube-controller-manager", "etcd"):
        (directory / name).write_text("")
    assert not gobuild.is_built("kube-hub")  # a build that stopped half-way writes no record
    (directory / gobuild.DONE_FILE).write_text(json.dumps({"ldflags": {}}))
    assert not gobuild.is_built("kube-hub")  # built without today's version stamps
    (directory / gobuild.DONE_FILE).write_text(json.dumps({"ldflags": gobuild._stamps("kube-hub")}))
    assert gobuild.is_built("kube-hub")
    (directory / "etcd").unlink()
    assert not gobuild.is_built("kube-hub")


def test_missing_binaries_say_how_to_build_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OCM_ROLLOUT_CACHE", str(tmp_path))
    with pytest.raises(kube_hub.MissingBinaries) as raised:
        kube_hub.find_binaries()
    message = str(raised.value)
    assert "etcd, kube-apiserver, kube-controller-manager not built" in message
    assert str(gobuild.set_dir("kube-hub")) in message and "`make kube-hub`" in message


def test_the_pki_is_kept_and_new_users_get_tokens(tmp_path: Path) -> None:
    first = kube_pki.ensure(tmp_path, {"admin": ("system:masters",)})
    ca, token = first.ca_cert.read_bytes(), first.token("admin")
    again = kube_pki.ensure(tmp_path, {"admin": ("system:masters",), "proc-a": ()})
    assert again.ca_cert.read_bytes() == ca and again.token("admin") == token
    assert again.token("proc-a") != token
    lines = again.tokens.read_text().splitlines()
    assert f'{token},admin,admin,"system:masters"' in lines
    assert oct(again.tokens.stat().st_mode & 0o777) == "0o600"


def test_up_on_kube_apiserver_without_binaries_is_a_one_line_error(tmp_path: Path) -> None:
    env = {"OCM_ROLLOUT_CACHE": str(tmp_path / "cache"), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run(
        [sys.executable, "-m", "ocm_rollout.cli", "up", "--hub", "kube-apiserver", "--no-view", "--no-dashboard",
         "--kubeconfig", str(tmp_path / "kubeconfig")],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ocm-rollout up: error:")]
    assert len(errors) == 1 and "`make kube-hub`" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
