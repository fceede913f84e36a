"""Hubs for tests, with the add-on kinds' conversion webhook beside them, as on an OCM hub and as
``ocm-rollout up`` runs it (there a process of its own; here the same server on an event loop of
the test process).

- ``hub_thread(kubeconfig=..., **LocalHub kwargs)``: the embedded hub in a thread.
- ``kube_hub(directory, kubeconfig=..., **KubeHub kwargs)``: etcd, kube-apiserver and
  kube-controller-manager (``ocm_rollout.sandbox.kube_hub``) in ``directory``.
- ``start_hub(kind, directory, **kwargs)``: either, by hub kind (``tests.hub_kinds``).

Both handles have ``url``, ``token``, ``port``, ``kubeconfig``, ``kind`` and ``stop()``; only the
embedded one has ``hub.store`` and ``call``/``run`` on its loop (tests of its internals).
``kube_hub(..., audited_users=[...])`` keeps kube-apiserver's audit log of those users' requests:
``handle.records(user)`` reads it (``Audited``: the attributes of the local hub's request records
that an RBAC rule is matched against); ``read_audit`` and ``audit_policy`` serve other audits.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ocm_rollout.api.addon_conversion import review
from ocm_rollout.controllers.runtime import webhook
from ocm_rollout.controllers.runtime.rbac import Request
from ocm_rollout.sandbox import tls
from ocm_rollout.sandbox.kube_hub import KubeHub
from ocm_rollout.sandbox.server import HubThread, run_in_thread
from tests.hub_kinds import KUBE_APISERVER, LOCAL


class WebhookHubThread(HubThread):
    """A HubThread whose conversion webhook stops with it."""

    server: webhook.WebhookServer
    kind = LOCAL

    def stop(self) -> None:
        if self.thread.is_alive():
            self.run(self.server.stop())
        super().stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _webhook(creds: tls.Credentials) -> tuple[webhook.WebhookServer, dict[str, Any]]:
    cert_dir = Path(tempfile.mkdtemp(prefix="ocm-rollout-webhook-"))
    (cert_dir / webhook.CERT_FILE).write_bytes(creds.cert_pem + creds.ca_pem)
    (cert_dir / webhook.KEY_FILE).write_bytes(creds.key_pem)
    server = webhook.WebhookServer(("127.0.0.1", _free_port()), cert_dir, review)
    client_config = {
        "url": f"https://127.0.0.1:{server.address[1]}{webhook.PATH}",
        "caBundle": base64.b64encode(creds.ca_pem).decode(),
    }
    return server, client_config


# The annotations kube-apiserver's authorizer leaves on an audit event.
DECISION = "authorization.k8s.io/decision"
REASON = "authorization.k8s.io/reason"


@dataclass(frozen=True)
class Audited:
    """One request as kube-apiserver's audit log tells it."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    uri: str
    code: int
    decision: str
    reason: str

    def request(self) -> Request:
        return Request(self.verb, self.group, self.resource, self.subresource)


def audit_policy(*, users: Sequence[str] = (), groups: Sequence[str] = ()) -> dict[str, Any]:
    """An audit policy recording the requests of ``users`` and ``groups`` (once the response has
    started: a watch is recorded as it begins), nothing of anyone else."""
    rules: list[dict[str, Any]] = []
    if users:
        rules.append({"level": "Metadata", "users": list(users)})
    if groups:
        rules.append({"level": "Metadata", "userGroups": list(groups)})
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
            "rules": [*rules, {"level": "None"}]}


def audit_args(directory: Path, policy: dict[str, Any]) -> tuple[Path, list[str]]:
    """The audit log's path and the kube-apiserver flags that write it with ``policy``."""
    directory.mkdir(parents=True, exist_ok=True)
    policy_file = directory / "audit-policy.yaml"
    policy_file.write_text(yaml.safe_dump(policy), encoding="utf-8")
    log = directory / "audit.log"
    return log, ["--audit-policy-file", str(policy_file), "--audit-log-path", str(log),
                 "--audit-log-format", "json", "--audit-log-maxbackup", "0"]


def read_audit(path: Path, user: str, *, start: int = 0, end: int | None = None) -> list[Audited]:
    """``user``'s requests in the audit log ``path`` (one per request, the first stage logged),
    from byte ``start`` to ``end``."""
    if not path.exists():
        return []
    with path.open("rb") as log:
        log.seek(start)
        data = log.read() if end is None else log.read(end - start)
    seen: set[str] = set()
    found: list[Audited] = []
    for line in data.decode(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("user", {}).get("username") != user or event["auditID"] in seen:
            continue
        seen.add(event["auditID"])
        ref = event.get("objectRef") or {}
        notes = event.get("annotations") or {}
        found.append(Audited(
            user=user, verb=event["verb"], group=ref.get("apiGroup", ""), resource=ref.get("resource", ""),
            subresource=ref.get("subresource", ""), namespace=ref.get("namespace", ""), name=ref.get("name", ""),
            uri=event["requestURI"], code=int((event.get("responseStatus") or {}).get("code") or 0),
            decision=notes.get(DECISION, ""), reason=notes.get(REASON, ""),
        ))  # fmt: skip
    return found


def hub_thread(*, kubeconfig: str | Path | None = None, **kwargs: Any) -> WebhookHubThread:
    """``run_in_thread`` (same arguments), the CRDs converted by a webhook calling one served
    on the hub's loop with ``api.addon_conversion.review``."""
    server, client_config = _webhook(tls.generate(["127.0.0.1"]))
    plain = run_in_thread(kubeconfig=kubeconfig, conversion_webhook=client_config, **kwargs)
    handle = WebhookHubThread(plain.hub, plain.loop, plain.thread)
    handle.kubeconfig = plain.kubeconfig
    handle.server = server
    handle.run(server.start())
    return handle


class KubeHubHandle(HubThread):
    """A started ``KubeHub`` and the conversion webhook it calls (on a loop in a thread); ``url``,
    ``token``, ``port`` and ``write_kubeconfig`` as a ``HubThread``'s."""

    kind = KUBE_APISERVER
    hub: Any

    def __init__(self, hub: KubeHub, server: webhook.WebhookServer, loop: asyncio.AbstractEventLoop,
                 thread: threading.Thread, kubeconfig: Path | None, audit_log: Path | None = None) -> None:
        super().__init__(hub, loop, thread)  # type: ignore[arg-type]
        self.server = server
        self.kubeconfig = kubeconfig
        self.audit_log = audit_log

    def records(self, user: str) -> list[Audited]:
        """``user``'s requests, from the audit log (``kube_hub(audited_users=...)``)."""
        assert self.audit_log is not None, "started without audited_users"
        return read_audit(self.audit_log, user)

    def call(self, fn: Any) -> Any:
        raise TypeError("a test of the embedded hub's internals (hub.call) cannot run on kube-apiserver")

    def stop(self) -> None:
        self.hub.stop()
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)


def kube_hub(directory: str | Path, *, kubeconfig: str | Path | None = None, audited_users: Sequence[str] = (),
             **kwargs: Any) -> KubeHubHandle:
    """A started ``KubeHub`` in ``directory`` (same keyword arguments), its CRDs converted by a
    webhook served in this process; its kubeconfig written to ``kubeconfig`` when given; the
    requests of ``audited_users`` in an audit log (``records(user)``)."""
    audit_log = None
    if audited_users:
        audit_log, flags = audit_args(Path(directory).parent / "audit", audit_policy(users=audited_users))
        kwargs["apiserver_args"] = [*kwargs.get("apiserver_args", []), *flags]
    server, client_config = _webhook(tls.generate(["127.0.0.1"]))
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    thread = threading.Thread(target=main, name="kube-hub-webhook", daemon=True)
    thread.start()
    started.wait(30)
    hub = KubeHub(directory, conversion_webhook=client_config, **kwargs)
    handle = KubeHubHandle(hub, server, loop, thread, None, audit_log)
    try:
        hub.start()
    except BaseException:
        handle.stop()
        raise
    if kubeconfig is not None:
        handle.write_kubeconfig(kubeconfig)
    return handle


def start_hub(kind: str, directory: str | Path, *, kubeconfig: str | Path | None = None,
              **kwargs: Any) -> WebhookHubThread | KubeHubHandle:
    """A started hub of ``kind`` (``local`` or ``kube-apiserver``): ``hub_thread`` or ``kube_hub``
    (the keyword arguments are the hub's own, so they differ by kind)."""
    if kind == KUBE_APISERVER:
        return kube_hub(Path(directory) / "kube-hub", kubeconfig=kubeconfig, **kwargs)
    return hub_thread(kubeconfig=kubeconfig, **kwargs)
