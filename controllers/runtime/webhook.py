"""The conversion webhook that ``ocm-rollout run`` serves: ConversionReviews for the add-on kinds,
over TLS, as OCM's ``addon webhook-server`` serves them.

The API server posts a ``ConversionReview`` to ``/convert``; the answer comes from
``api.addon_conversion.review``. The serving certificate is ``tls.crt``/``tls.key`` in the
certificate directory (a Secret mounted by the chart, written by cert-manager or by Helm); a
renewed certificate is picked up without a restart, from the connection after the first request
that sees the files changed.
Every replica serves it, leader or not: the API server may call any of them.
"""

from __future__ import annotations

import json
import logging
import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

PATH = "/convert"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
MAX_BODY_BYTES = 32 * 1024 * 1024

Review = Callable[[dict[str, Any]], dict[str, Any]]


class CertificateError(ValueError):
    """The certificate directory has no usable certificate and key."""


class ReloadingCertificate:
    """A server TLS context whose certificate follows the files in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.cert = directory / CERT_FILE
        self.key = directory / KEY_FILE
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._loaded: tuple[float, float] | None = None
        self.reload()

    def _stamp(self) -> tuple[float, float]:
        try:
            return (os.stat(self.cert).st_mtime, os.stat(self.key).st_mtime)
        except OSError as exc:
            raise CertificateError(f"cannot read the webhook certificate: {exc}") from None

    def reload(self) -> bool:
        """Load the files if they changed since they were last loaded; True when it did."""
        stamp = self._stamp()
        if stamp == self._loaded:
            return False
        try:
            self.context.load_cert_chain(self.cert, self.key)
        except (ssl.SSLError, OSError) as exc:
            if self._loaded is None:
                raise CertificateError(f"the webhook certificate in {self.cert.parent} is not usable: {exc}") from None
            log.warning("webhook certificate not reloaded; serving the previous one", extra={"error": str(exc)})
            return False
        self._loaded = stamp
        return True

    def refresh(self) -> None:
        """``reload``, logging instead of raising: the certificate already loaded keeps serving."""
        try:
            if self.reload():
                log.info("webhook certificate reloaded", extra={"path": str(self.cert)})
        except CertificateError as exc:
            log.warning("webhook certificate not reloaded; serving the previous one", extra={"error": str(exc)})


def application(review: Review, certificate: ReloadingCertificate | None = None) -> web.Application:
    """The webhook's routes: ``POST /convert``. Each request checks the certificate files, so a
    renewed certificate serves from the next connection on."""

    async def convert(request: web.Request) -> web.Response:
        if certificate is not None:
            certificate.refresh()
        try:
            body = json.loads(await request.read())
        except ValueError as exc:
            return web.json_response({"error": f"the body is not JSON: {exc}"}, status=400)
        if not isinstance(body, dict) or body.get("kind") != "ConversionReview" or not isinstance(body.get("request"), dict):
            return web.json_response({"error": "expected a ConversionReview with a request"}, status=400)
        answer = review(body)
        failed = (answer.get("response") or {}).get("result", {}).get("status") != "Success"
        if failed:
            log.warning(
                "conversion refused",
                extra={"desired": body["request"].get("desiredAPIVersion"), "error": answer["response"]["result"].get("message")},
            )
        return web.json_response(answer)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(PATH, convert)
    return app


class WebhookServer:
    """The conversion webhook on ``address`` with the certificate in ``cert_dir``."""

    def __init__(self, address: tuple[str, int], cert_dir: Path, review: Review) -> None:
        self.address = address
        self.certificate = ReloadingCertificate(cert_dir)
        self.review = review
        self.port = address[1]
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        runner = web.AppRunner(application(self.review, self.certificate), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.address[0], self.address[1], reuse_address=True, ssl_context=self.certificate.context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._runner = runner
        log.info("conversion webhook serving", extra={"address": f"{self.address[0]}:{self.port}", "path": PATH})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
