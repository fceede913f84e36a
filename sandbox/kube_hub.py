"""A real hub on one machine: etcd, kube-apiserver and kube-controller-manager, as processes.

The binaries are built from their Go modules by ``make kube-hub`` (``sandbox/gobuild.py``) into
the user's cache directory; ``find_binaries()`` finds them there, or raises ``MissingBinaries``
saying how to build them. ``KubeHub(directory)`` runs them on loopback:

- etcd with its data in ``directory/etcd`` (a client and a peer port on 127.0.0.1);
- kube-apiserver with TLS (a CA and serving certificate of its own, ``kube_pki``), kubeadm's
  request-header authentication (a front-proxy CA and client certificate), the RBAC and Node
  authorizers, static bearer tokens (an administrator in ``system:masters``, and
  kube-controller-manager's own user), a service-account issuer and signing key (so the
  TokenRequest API mints tokens), and its default admission plugins;
- kube-controller-manager with the garbage collector, the namespace controller, the
  service-account controllers, the root CA publisher, the CSR signer, approver and cleaner (it
  signs with the cluster CA) and the ClusterRole aggregator.

``start()`` returns once kube-apiserver is ready and the project's CRDs are established (the
add-on kinds' conversion webhook at ``conversion_webhook``'s ``url`` and ``caBundle``, called by
kube-apiserver itself). ``write_kubeconfig(path)`` writes the administrator's kubeconfig.
``stop()`` stops the three processes; a temporary ``directory`` is then removed by its owner.
A ``directory`` that already holds a control plane's files (``up --hub kube-apiserver --data``)
starts it again with its objects and identities.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from ocm_rollout.sandbox import gobuild, kube_pki
from ocm_rollout.sandbox.crd import default_crds, with_conversion_webhook
from ocm_rollout.sandbox.parent_death import parent_death_hook

log = logging.getLogger("sandbox.kube_hub")

LOOPBACK = "127.0.0.1"
ADMIN_USER = "admin"  # as the local hub names its kubeconfig's user
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# No traffic ever goes to these addresses: kube-apiserver needs a range for Services'
# cluster IPs, and nothing here runs a proxy that would route them.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "certificatesigningrequest-signing-controller",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-cleaner-controller",
    "clusterrole-aggregation-controller",
)
READY_TIMEOUT_SECONDS = 180.0
REQUEST_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 15.0
HUB_NAME = "kube-apiserver"


class MissingBinaries(RuntimeError):
    """The control plane's binaries are not built; the message says how to build them."""


class StartError(RuntimeError):
    """A process of the control plane did not start; the message names it and ends with its log."""


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    apiserver: Path
    controller_manager: Path


def find_binaries() -> Binaries:
    """The binaries ``make kube-hub`` builds, or ``MissingBinaries`` saying how to build them."""
    directory = gobuild.set_dir("kube-hub")
    found = Binaries(directory / "etcd", directory / "kube-apiserver", directory / "kube-controller-manager")
    missing = [p.name for p in (found.etcd, found.apiserver, found.controller_manager) if not os.access(p, os.X_OK)]
    if missing:
        raise MissingBinaries(
            f"{', '.join(missing)} not built (looked in {directory}). Build them from their Go modules with "
            "`make kube-hub` in the ocm-rollout repository (needs Go 1.24+ and the Go module proxy; a "
            "first build takes about 15 minutes on 2 cores, later runs are instant)"
        )
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
    return port


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


class _Process:
    """One control-plane process, its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        # a session of its own (a Ctrl-C reaches its owner, which stops it in order), and ended by
        # the kernel if its owner dies
        self.popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True, preexec_fn=parent_death_hook())

    def check(self) -> None:
        if self.popen is not None and self.popen.poll() is not None:
            raise StartError(f"{self.name} exited with code {self.popen.returncode}; the end of its log "
                             f"({self.log_path}):\n{_tail(self.log_path)}")

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


class KubeHub:
    """etcd, kube-apiserver and kube-controller-manager on loopback, with data in ``directory``."""

    name = HUB_NAME

    def __init__(
        self,
        directory: str | Path,
        *,
        port: int = 0,
        conversion_webhook: Mapping[str, Any] | None = None,
        crds: Sequence[Mapping[str, Any]] | None = None,
        users: Mapping[str, Sequence[str]] | None = None,
        binaries: Binaries | None = None,
        apiserver_args: Sequence[str] = (),
    ) -> None:
        self.directory = Path(directory).absolute()
        self.port = port
        self.conversion_webhook = dict(conversion_webhook) if conversion_webhook is not None else None
        self.crds = [dict(c) for c in crds] if crds is not None else None
        # Extra static-token users (name -> groups), e.g. for tests of RBAC.
        self.extra_users = {name: tuple(groups) for name, groups in (users or {}).items()}
        self.binaries = binaries
        # Extra kube-apiserver flags, e.g. an audit policy and log (tests that measure requests).
        self.apiserver_args = list(apiserver_args)
        self.pki: kube_pki.Pki | None = None
        self.processes: list[_Process] = []
        self._ssl: ssl.SSLContext | None = None

    # what clients need ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    @property
    def token(self) -> str:
        assert self.pki is not None, "not started"
        return self.pki.token(ADMIN_USER)

    def user_token(self, user: str) -> str:
        assert self.pki is not None, "not started"
        return self.pki.token(user)

    @property
    def ca_pem(self) -> bytes:
        assert self.pki is not None, "not started"
        return self.pki.ca_cert.read_bytes()

    def kubeconfig(self, *, token: str | None = None, user: str = ADMIN_USER, context: str = "ocm-rollout-kube",
                   namespace: str = "default") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kube-hub", "cluster": {
                "server": self.url, "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": user, "user": {"token": token or self.user_token(user)}}],
            "contexts": [{"name": context, "context": {"cluster": "kube-hub", "user": user, "namespace": namespace}}],
            "current-context": context,
        }

    def write_kubeconfig(self, path: str | Path, **kwargs: Any) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".tmp")
        partial.write_text(yaml.safe_dump(self.kubeconfig(**kwargs), sort_keys=False), encoding="utf-8")
        partial.chmod(0o600)
        partial.replace(target)
        return target

    # life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start etcd, kube-apiserver and kube-controller-manager; install the CRDs. Raises
        ``MissingBinaries``, or ``StartError`` (the processes started are stopped again)."""
        binaries = self.binaries or find_binaries()
        self.directory.mkdir(parents=True, exist_ok=True)
        users = {ADMIN_USER: ("system:masters",), CONTROLLER_MANAGER_USER: (), **self.extra_users}
        self.pki = kube_pki.ensure(self.directory / "pki", users)
        self._ssl = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        if self.port == 0:
            self.port = free_port()
        logs = self.directory / "logs"
        logs.mkdir(exist_ok=True)
        try:
            etcd_url = self._start_etcd(binaries, logs)
            self._start_apiserver(binaries, logs, etcd_url)
            self._wait_ready()
            # The CRDs first: kube-controller-manager's garbage collector finds the kinds to watch
            # by discovery when it starts, and only every 30 s after that.
            self.install_crds(self.crds if self.crds is not None else default_crds())
            self._start_controller_manager(binaries, logs)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def __enter__(self) -> KubeHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, argv: Sequence[str], logs: Path) -> _Process:
        process = _Process(name, argv, logs / f"{name}.log")
        process.start()
        self.processes.append(process)
        return process

    def _start_etcd(self, binaries: Binaries, logs: Path) -> str:
        client_url = f"http://{LOOPBACK}:{free_port()}"
        peer_url = f"http://{LOOPBACK}:{free_port()}"
        etcd = self._spawn("etcd", [
            str(binaries.etcd), "--name", "hub", "--data-dir", str(self.directory / "etcd"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"hub={peer_url}", "--listen-metrics-urls", f"http://{LOOPBACK}:{free_port()}",
            # a machine's own test control plane: no fsync (its data is thrown away or rebuilt)
            "--unsafe-no-fsync", "--log-level", "warn", "--quota-backend-bytes", str(4 << 30),
        ], logs)
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while True:
            etcd.check()
            try:
                with urllib.request.urlopen(f"{client_url}/health", timeout=2) as answer:
                    if json.loads(answer.read()).get("health") == "true":
                        return client_url
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise StartError(f"etcd was not healthy within {READY_TIMEOUT_SECONDS:.0f} s:\n{_tail(etcd.log_path)}")
            time.sleep(0.2)

    def _start_apiserver(self, binaries: Binaries, logs: Path, etcd_url: str) -> None:
        assert self.pki is not None
        pki = self.pki
        self._spawn("kube-apiserver", [
            str(binaries.apiserver),
            "--etcd-servers", etcd_url,
            "--bind-address", LOOPBACK, "--advertise-address", LOOPBACK, "--secure-port", str(self.port),
            "--cert-dir", str(self.directory / "apiserver-certs"),
            "--tls-cert-file", str(pki.serving_cert), "--tls-private-key-file", str(pki.serving_key),
            "--client-ca-file", str(pki.ca_cert),
            # request-header authentication as kubeadm configures it (a front-proxy CA of its own);
            # kube-apiserver publishes it in kube-system/extension-apiserver-authentication
            "--requestheader-client-ca-file", str(pki.front_proxy_ca_cert),
            "--requestheader-allowed-names", kube_pki.FRONT_PROXY_CLIENT,
            "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
            "--requestheader-group-headers", "X-Remote-Group",
            "--requestheader-username-headers", "X-Remote-User",
            "--proxy-client-cert-file", str(pki.front_proxy_client_cert),
            "--proxy-client-key-file", str(pki.front_proxy_client_key),
            "--token-auth-file", str(pki.tokens),
            "--authorization-mode", "Node,RBAC",
            "--service-account-issuer", SERVICE_ACCOUNT_ISSUER,
            "--service-account-key-file", str(pki.sa_pub),
            "--service-account-signing-key-file", str(pki.sa_key),
            "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
            "--allow-privileged",
            "--profiling=false",
            "--v", "1",
            *self.apiserver_args,
        ], logs)

    def _start_controller_manager(self, binaries: Binaries, logs: Path) -> None:
        assert self.pki is not None
        pki = self.pki
        kubeconfig = self.write_kubeconfig(self.directory / "kube-controller-manager.kubeconfig",
                                           user=CONTROLLER_MANAGER_USER)
        self._spawn("kube-controller-manager", [
            str(binaries.controller_manager),
            "--kubeconfig", str(kubeconfig),
            "--authentication-kubeconfig", str(kubeconfig), "--authorization-kubeconfig", str(kubeconfig),
            "--bind-address", LOOPBACK, "--secure-port", "0",
            "--leader-elect=false",
            "--controllers", ",".join(CONTROLLERS),
            "--service-account-private-key-file", str(pki.sa_key),
            "--root-ca-file", str(pki.ca_cert),
            "--cluster-signing-cert-file", str(pki.ca_cert), "--cluster-signing-key-file", str(pki.ca_key),
            # each controller acts as its own service account, with its bootstrap role (as kubeadm runs it)
            "--use-service-account-credentials=true",
            "--v", "1",
        ], logs)

    # requests ---------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                token: str | None = None) -> tuple[int, Any]:
        """One request as the administrator (or ``token``); (status, parsed JSON body or text)."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token or self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_SECONDS, context=self._ssl) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        last: object = None
        while time.monotonic() < deadline:
            for process in self.processes:
                process.check()
            try:
                status, body = self.request("GET", "/readyz")
                if status == 200:
                    # the bootstrap RBAC roles and the default namespace exist once readyz is ok
                    status, _ = self.request("GET", "/api/v1/namespaces/default")
                    if status == 200:
                        return
                last = body
            except OSError as exc:
                last = exc
            time.sleep(0.25)
        raise StartError(f"kube-apiserver was not ready within {READY_TIMEOUT_SECONDS:.0f} s (last answer: {last!r}); "
                         f"the end of its log:\n{_tail(self.directory / 'logs' / 'kube-apiserver.log')}")

    def install_crds(self, crds: Sequence[Mapping[str, Any]]) -> None:
        """Create or update each CRD and wait until every one is Established."""
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        refused: list[str] = []
        for raw in crds:
            crd = with_conversion_webhook(dict(raw), self.conversion_webhook)
            name = crd["metadata"]["name"]
            names.append(name)
            body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": name}, "spec": crd["spec"]}
            status, answer = self.request("POST", base, body)
            if status == 409:
                status, current = self.request("GET", f"{base}/{name}")
                if status == 200 and current.get("spec") != crd["spec"]:
                    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    status, answer = self.request("PUT", f"{base}/{name}", body)
            if status >= 300:
                message = answer.get("message") if isinstance(answer, dict) else answer
                refused.append(f"CRD {name}: {status} {message}")
        if refused:
            raise StartError("kube-apiserver refused " + "; ".join(refused))
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        pending = set(names)
        while pending:
            for name in sorted(pending):
                status, current = self.request("GET", f"{base}/{name}")
                conditions = (current.get("status") or {}).get("conditions") or [] if status == 200 else []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise StartError(f"CRDs not Established within {READY_TIMEOUT_SECONDS:.0f} s: {', '.join(sorted(pending))}")
            if pending:
                time.sleep(0.2)
        # An Established CRD's lists answer 429 "storage is (re)initializing" until its watch cache
        # is filled: clients retry that, but the hub is handed over only once every one answers.
        for raw in crds:
            spec = raw["spec"]
            group, plural = spec["group"], spec["names"]["plural"]
            for version in (v["name"] for v in spec["versions"] if v.get("served", True)):
                path = f"/apis/{group}/{version}/{plural}?limit=1"
                while (status := self.request("GET", path)[0]) != 200:
                    if status != 429 or time.monotonic() > deadline:
                        raise StartError(f"kube-apiserver answers {status} to GET {path}")
                    time.sleep(0.2)
