"""The conversion webhook that ``ocm-rollout up`` runs beside its local hub.

The add-on kinds are stored in ``v1alpha1`` and served in ``v1beta1`` too, converted by a webhook,
as on an OCM hub. ``up`` serves it as a deployment of the chart does: ``ocm-rollout run`` with
``--webhook-bind-address`` (and no controller of its own, ``--controllers none``), with a
certificate for 127.0.0.1 written next to the kubeconfig; the hub installs the CRDs calling it at
that URL with that CA, as the chart installs them calling its Service.
"""

from __future__ import annotations

import base64
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocm_rollout.cli.commands.up_children import Child, python_module
from ocm_rollout.controllers.runtime import webhook
from ocm_rollout.sandbox import tls

HOST = "127.0.0.1"
DIRECTORY_NAME = "webhook"


@dataclass(frozen=True)
class LocalWebhook:
    """Where the webhook listens and the certificate it serves."""

    port: int
    cert_dir: Path
    ca_pem: bytes

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.port}{webhook.PATH}"

    def client_config(self) -> dict[str, Any]:
        """``spec.conversion.webhook.clientConfig`` for the hub's CRDs."""
        return {"url": self.url, "caBundle": base64.b64encode(self.ca_pem).decode()}

    def child(self, kubeconfig: Path, log_level: str) -> Child:
        return Child("the conversion webhook", python_module(
            "ocm_rollout.cli", "run", "--controllers", "none", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
            "--health-bind-address", "0", "--metrics-bind-address", "0",
            "--webhook-bind-address", f"{HOST}:{self.port}", "--webhook-cert-dir", str(self.cert_dir),
            "--log-level", log_level,
        ))


def prepare(directory: Path) -> LocalWebhook:
    """A fresh certificate for 127.0.0.1 in ``directory/webhook`` and a free port."""
    creds = tls.generate([HOST])
    cert_dir = directory / DIRECTORY_NAME
    cert_dir.mkdir(parents=True, exist_ok=True)
    (cert_dir / webhook.CERT_FILE).write_bytes(creds.cert_pem + creds.ca_pem)
    key = cert_dir / webhook.KEY_FILE
    key.write_bytes(creds.key_pem)
    key.chmod(0o600)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return LocalWebhook(port, cert_dir, creds.ca_pem)
