"""``GET /metrics``: the simulated fleet's workload metrics over HTTP, for Prometheus to scrape.

``python -m ocm_rollout.sandbox.sim_main --metrics-address HOST:PORT`` serves it (``ocm-rollout
up`` passes 127.0.0.1 and its ``--fleet-metrics-port``): the process whose agents know which works
are applied on which cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web

from ocm_rollout.sandbox.sim_metrics import CONTENT_TYPE

log = logging.getLogger(__name__)

PATH = "/metrics"


class MetricsServer:
    """Serves ``render()`` on ``PATH`` at ``address``; ``start`` binds (``OSError`` when it cannot)
    and sets ``address`` to the one bound (a port 0 becomes the one picked)."""

    def __init__(self, render: Callable[[], bytes], address: tuple[str, int]) -> None:
        self.render = render
        self.address = address
        self._runner: web.AppRunner | None = None

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.render(), headers={"Content-Type": CONTENT_TYPE})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get(PATH, self._metrics)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.address[0], self.address[1], reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        for sock in getattr(site._server, "sockets", None) or ():
            host, port = sock.getsockname()[:2]
            self.address = (str(host), int(port))
        log.info("serving the fleet's workload metrics", extra={"address": f"{self.address[0]}:{self.address[1]}"})

    @property
    def url(self) -> str:
        return f"http://{self.address[0]}:{self.address[1]}{PATH}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
