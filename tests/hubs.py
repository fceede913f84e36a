"""Local hubs for tests, with the add-on kinds' conversion webhook beside them, as on an OCM hub
and as ``ocm-rollout up`` runs it (there a process of its own; here the same server on the hub's
event loop)."""

from __future__ import annotations

import base64
import socket
import tempfile
from pathlib import Path
from typing import Any

from ocm_rollout.api.addon_conversion import review
from ocm_rollout.controllers.runtime import webhook
from ocm_rollout.sandbox import tls
from ocm_rollout.sandbox.server import HubThread, run_in_thread


class WebhookHubThread(HubThread):
    """A HubThread whose conversion webhook stops with it."""

    server: webhook.WebhookServer

    def stop(self) -> None:
        if self.thread.is_alive():
            self.run(self.server.stop())
        super().stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def hub_thread(*, kubeconfig: str | Path | None = None, **kwargs: Any) -> WebhookHubThread:
    """``run_in_thread`` (same arguments), the CRDs converted by a webhook calling one served
    on the hub's loop with ``api.addon_conversion.review``."""
    creds = tls.generate(["127.0.0.1"])
    cert_dir = Path(tempfile.mkdtemp(prefix="ocm-rollout-webhook-"))
    (cert_dir / webhook.CERT_FILE).write_bytes(creds.cert_pem + creds.ca_pem)
    (cert_dir / webhook.KEY_FILE).write_bytes(creds.key_pem)
    server = webhook.WebhookServer(("127.0.0.1", _free_port()), cert_dir, review)
    client_config = {
        "url": f"https://127.0.0.1:{server.address[1]}{webhook.PATH}",
        "caBundle": base64.b64encode(creds.ca_pem).decode(),
    }
    plain = run_in_thread(kubeconfig=kubeconfig, conversion_webhook=client_config, **kwargs)
    handle = WebhookHubThread(plain.hub, plain.loop, plain.thread)
    handle.kubeconfig = plain.kubeconfig
    handle.server = server
    handle.run(server.start())
    return handle
