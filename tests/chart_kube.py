"""The Helm chart on a real control plane, run with the chart's own identities (no tests here).

- ``skip_unless_ready()``: a pytest skip naming the command that builds what is missing (the
  control plane, ``make kube-hub``; helm, ``make helm``).
- ``ChartHub(directory, crds=...)``: etcd, kube-apiserver and kube-controller-manager
  (``sandbox/kube_hub``) with an audit log of every request a ServiceAccount makes; ``helm`` and
  ``kubectl`` run as the README tells users (``$KUBECONFIG`` the administrator's, Helm's own
  directories under the test's); ``identity(namespace, name)`` mints a token for a
  ServiceAccount with the TokenRequest API and writes a kubeconfig holding it; ``audit(user)``
  reads what that user asked and what kube-apiserver's authorizer decided.
- ``pod_command(hub, namespace, deployment, directory)``: the command line a Deployment's pod
  runs, as the kubelet would start it on this machine: its Secret and ConfigMap volumes written
  to files, every listening address on loopback (``:PORT`` becomes ``127.0.0.1:PORT``, probe
  and metrics ports a free one), the image's ``ocm-rollout`` this virtualenv's.
- ``chart_rules(hub, release, namespace, roles)``: the rules of the ClusterRoles and Roles the
  release installed.
- ``Balancer()``: a TCP load balancer on loopback in front of the pods' webhook ports, as a load
  balancer in front of pods would be (each pod listens on a port of its own here, as each has an
  IP of its own in a cluster); ``conversionWebhook.url`` names it.
- ``ocm_hub_crds(ca_bundle)``: OCM's own CRDs as its cluster-manager installs them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.controllers.runtime.rbac import (
    Request,
    Rule,
    check,
    exempt_triples,
    load_catalog,
    rules_from_objects,
)
from ocm_rollout.sandbox import gobuild
from ocm_rollout.sandbox.kube_hub import KubeHub
from tests.hub_kinds import KUBE_APISERVER, skip_unless_built
from tests.hubs import Audited, audit_policy, read_audit

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "ocm-rollout"
BIN = Path(sys.executable).parent
KUBECTL = BIN / "kubectl"
# The image's entrypoint (Dockerfile): `ocm-rollout run`; a container's `command` replaces it.
IMAGE_ENTRYPOINT = ["ocm-rollout", "run"]
# Every request of a ServiceAccount; nothing of anyone else.
AUDIT_POLICY = audit_policy(groups=["system:serviceaccounts"])
COMMAND_TIMEOUT = 180.0


def helm_binary() -> Path:
    return gobuild.set_dir("helm") / "helm"


def skip_unless_ready() -> None:
    """Skip unless the control plane and helm are built, saying how to build what is not."""
    skip_unless_built(KUBE_APISERVER)
    if not gobuild.is_built("kube-hub"):
        pytest.skip(
            f"the control plane in {gobuild.set_dir('kube-hub')} was built without its release version (it reports "
            "v0.0.0-master, which a chart's kubeVersion refuses): build it again with `make kube-hub`"
        )
    if not gobuild.is_built("helm"):
        pytest.skip(
            f"helm {gobuild.HELM_VERSION} is not built (looked in {gobuild.set_dir('helm')}): build it from its Go "
            "module with `make helm` in the ocm-rollout repository (needs Go 1.24+ and the Go module proxy)"
        )


class ChartHub:
    """A real control plane for the chart, audited; ``start()`` then ``stop()``."""

    def __init__(self, directory: Path, *, crds: Sequence[dict[str, Any]] = ()) -> None:
        self.directory = directory
        self.audit_log = directory / "audit.log"
        policy = directory / "audit-policy.yaml"
        directory.mkdir(parents=True, exist_ok=True)
        policy.write_text(yaml.safe_dump(AUDIT_POLICY), encoding="utf-8")
        self.kube = KubeHub(
            directory / "kube-hub", crds=list(crds),
            apiserver_args=["--audit-policy-file", str(policy), "--audit-log-path", str(self.audit_log),
                            "--audit-log-format", "json", "--audit-log-maxbackup", "0"],
        )  # fmt: skip
        self.admin = directory / "admin.kubeconfig"

    def start(self) -> ChartHub:
        self.kube.start()
        self.kube.write_kubeconfig(self.admin)
        return self

    def stop(self) -> None:
        self.kube.stop()

    # commands as a user runs them ---------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
        env["KUBECONFIG"] = str(self.admin)
        for what in ("CACHE", "CONFIG", "DATA"):
            env[f"HELM_{what}_HOME"] = str(self.directory / "helm" / what.lower())
        return env

    def run(self, *argv: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(a) for a in argv], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, env=self.env(),
            cwd=REPO, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            pytest.fail(f"`{' '.join(map(str, argv))}` exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def helm(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(helm_binary(), *args, check=check)

    def kubectl(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(KUBECTL, *args, check=check)

    # the API as the administrator -------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None,
                content_type: str = "application/json") -> tuple[int, Any]:
        return self.kube.request(method, path, body, token=token, content_type=content_type)

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        assert status == 200, (path, status, body)
        return body

    def get_or_none(self, path: str) -> Any:
        status, body = self.request("GET", path)
        assert status in (200, 404), (path, status, body)
        return body if status == 200 else None

    # identities -------------------------------------------------------------------------

    def token(self, namespace: str, service_account: str, seconds: int = 7200) -> str:
        """A token for the ServiceAccount from the TokenRequest API (as the kubelet asks one for a pod)."""
        status, body = self.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}},
        )  # fmt: skip
        assert status == 201, (status, body)
        return str(body["status"]["token"])

    def identity(self, namespace: str, service_account: str) -> Path:
        """A kubeconfig holding a fresh token of the ServiceAccount (its default namespace: ``namespace``)."""
        user = f"system:serviceaccount:{namespace}:{service_account}"
        path = self.directory / "identities" / f"{namespace}.{service_account}.kubeconfig"
        return self.kube.write_kubeconfig(path, token=self.token(namespace, service_account), user=user,
                                          context=service_account, namespace=namespace)

    # what the authorizer saw --------------------------------------------------------------

    def audit_size(self) -> int:
        return self.audit_log.stat().st_size if self.audit_log.exists() else 0

    def audit(self, user: str, *, start: int = 0, end: int | None = None) -> list[Audited]:
        """``user``'s requests (one per request, the first stage logged), from byte ``start`` to ``end``."""
        return read_audit(self.audit_log, user, start=start, end=end)


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def chart_rules(hub: ChartHub, release: str, namespace: str, role_names: Iterable[str]) -> list[Rule]:
    """The rules of the release's ClusterRoles and Roles (in ``namespace``) named ``role_names``,
    as kube-apiserver stores them."""
    wanted = set(role_names)
    objects = [  # a list's items carry no kind
        *({**o, "kind": "ClusterRole"} for o in hub.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")["items"]),
        *({**o, "kind": "Role"} for o in hub.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles")["items"]),
    ]
    mine = [o for o in objects if o["metadata"]["name"] in wanted
            and (o["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name") == release]
    assert {o["metadata"]["name"] for o in mine} == wanted, [o["metadata"]["name"] for o in mine]
    return rules_from_objects(mine)


# -- what the authorizer decided ----------------------------------------------------------------


@dataclass
class Measured:
    """One identity's requests over a phase, against the rules the release gave it then."""

    records: list[Audited]
    roles: list[str]
    rules: list[Any]
    exempt: set[Request]

    def resource_requests(self) -> list[Audited]:
        return [r for r in self.records if r.resource]

    def refused(self) -> list[Audited]:
        return [r for r in self.records if r.decision != "allow" or r.code == 403]

    def report(self) -> Any:
        return check([r.request() for r in self.resource_requests()], self.rules, exempt=self.exempt)


@dataclass
class Grant:
    """The roles of one identity as the release had them at some point (read from the hub)."""

    namespace: str
    service_account: str
    roles: list[str]
    parts: list[str]
    rules: list[Any]

    @classmethod
    def read(cls, hub: ChartHub, release: str, namespace: str, service_account: str, roles: list[str],
             parts: list[str]) -> Grant:
        """``roles`` of ``release``; ``parts``: the sections of the chart's files/rbac.yaml they come from."""
        return cls(namespace, service_account, roles, parts, chart_rules(hub, release, namespace, roles))

    def measure(self, hub: ChartHub, *, start: int = 0, end: int | None = None) -> Measured:
        records = hub.audit(service_account_user(self.namespace, self.service_account), start=start, end=end)
        exempt = exempt_triples(load_catalog(CHART / "files" / "rbac.yaml"), self.parts)
        return Measured(records, self.roles, self.rules, exempt)


def assert_granted_by_the_chart(found: Measured) -> None:
    """Every request allowed by kube-apiserver's authorizer, a resource request by one of the
    release's own bindings, and granted by the release's rules as the measured check reads them."""
    assert found.resource_requests(), "no request recorded"
    assert found.refused() == [], found.refused()
    names = "|".join(re.escape(r) for r in found.roles)
    by_chart = re.compile(rf'RBAC: allowed by (ClusterRoleBinding|RoleBinding) "({names})(/[^"]*)?" of (ClusterRole|Role) "({names})"')
    assert [r for r in found.resource_requests() if not by_chart.search(r.reason)] == []
    assert found.report().ungranted == [], found.report().describe()


# -- a pod's command line on this machine ---------------------------------------------------

_LISTEN = re.compile(r"^(--(?:health|metrics|debug|webhook)-bind-address|--address|--port)=(.*)$")


def _volume_files(hub: ChartHub, namespace: str, volume: dict[str, Any], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if "secret" in volume:
        secret = hub.get(f"/api/v1/namespaces/{namespace}/secrets/{volume['secret']['secretName']}")
        for key, value in (secret.get("data") or {}).items():
            (target / key).write_bytes(base64.b64decode(value))
    elif "configMap" in volume:
        config_map = hub.get(f"/api/v1/namespaces/{namespace}/configmaps/{volume['configMap']['name']}")
        for key, value in (config_map.get("data") or {}).items():
            (target / key).write_text(value, encoding="utf-8")


def pod_command(hub: ChartHub, namespace: str, deployment: str, directory: Path,
                ports: dict[str, int] | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of the Deployment's (only) container, run here: volumes as files
    under ``directory``, listening addresses on loopback (a flag's port from ``ports`` when named
    there, else a free one: 0), ``ocm-rollout`` this virtualenv's Python module."""
    found = hub.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}")
    pod = found["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts: dict[str, Path] = {}
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            continue
        local = directory / deployment / mount["name"]
        _volume_files(hub, namespace, volume, local)
        mounts[mount["mountPath"].rstrip("/")] = local
    args: list[str] = []
    for arg in container.get("args") or []:
        for path, local in mounts.items():
            arg = re.sub(re.escape(path) + r"(?=/|$)", str(local), arg)
        matched = _LISTEN.match(arg)
        if matched:
            flag, value = matched.groups()
            port = (ports or {}).get(flag, 0)
            if flag == "--port":
                value = str(port)
            elif flag != "--address":
                value = f"127.0.0.1:{port}"
            arg = f"{flag}={value}"
        args.append(arg)
    command = container.get("command") or IMAGE_ENTRYPOINT
    assert command[0] == "ocm-rollout", command
    env = {"PYTHONUNBUFFERED": "1"}
    for entry in container.get("env") or []:
        if entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[entry["name"]] = namespace
        elif "value" in entry:
            env[entry["name"]] = entry["value"]
    return [sys.executable, "-m", "ocm_rollout.cli", *command[1:], *args], env


# -- OCM's own CRDs, as its cluster-manager installs them -------------------------------------

OCM_MODULE = "open-cluster-management.io/ocm"
OCM_HUB_CRDS = "manifests/cluster-manager/hub/crds"
OCM_HUB_NAMESPACE = "open-cluster-management-hub"


def ocm_hub_crds(ca_bundle: str, namespace: str = OCM_HUB_NAMESPACE) -> list[dict[str, Any]]:
    """The CRDs OCM's cluster-manager (``open-cluster-management.io/ocm``, the version
    ``make ocm-binaries`` builds, from the Go module cache) applies to a hub, with the two values
    it fills in: its namespace and the CA of its add-on conversion webhook. Skips when the module
    cannot be had (no Go toolchain, or neither the module cache nor the Go module proxy has it)."""
    go = os.environ.get("GO") or "go"
    module = f"{OCM_MODULE}@{gobuild.OCM_VERSION}"
    try:
        done = subprocess.run([go, "mod", "download", "-json", module], capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT, check=False, cwd=REPO)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"OCM's CRDs come from the Go module {module} (`go mod download {module}`): {exc}")
    if done.returncode != 0:
        pytest.skip(f"OCM's CRDs come from the Go module {module}; `go mod download` failed: {done.stdout}{done.stderr}")
    directory = Path(json.loads(done.stdout)["Dir"]) / OCM_HUB_CRDS
    crds = []
    for path in sorted(directory.glob("*.crd.yaml")):
        text = path.read_text(encoding="utf-8")
        text = text.replace("{{ .ClusterManagerNamespace }}", namespace).replace("{{ .AddonAPIServiceCABundle }}", ca_bundle)
        assert "{{" not in text, f"{path}: a template value this test does not fill"
        crds.append(yaml.safe_load(text))
    assert crds, f"no CRDs in {directory}"
    return crds


# -- a load balancer in front of the pods' webhook ports ------------------------------------


class Balancer:
    """TCP on 127.0.0.1: each connection is relayed to the newest of ``backends`` (ports on
    127.0.0.1) that accepts it; TLS passes through untouched. Closed by ``close()``."""

    def __init__(self) -> None:
        self.backends: list[int] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, name="balancer", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        for port in list(reversed(self.backends)):
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                continue
            upstream.settimeout(None)
            threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
            _pump(client, upstream)
            return
        client.close()

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()
