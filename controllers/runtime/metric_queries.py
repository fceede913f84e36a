"""A controller's metric queries: one HTTP session for every measurement of its metric checks,
the registered providers, and the clock (``prometheus.measure`` does one measurement).

The session is made on the first measurement, in the controller's event loop, and closed when
the controller stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime

import aiohttp

from ocm_rollout.controllers.rollout.checks.metric import Measurement, MetricSettings
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders
from ocm_rollout.controllers.runtime import prometheus


class MetricQueries:
    def __init__(self, providers: MetricProviders, clock: Callable[[], datetime]) -> None:
        self.providers = providers
        self.clock = clock
        self._session: aiohttp.ClientSession | None = None

    async def measure(self, settings: MetricSettings, cluster: str, name: str, namespace: str) -> Measurement:
        """One measurement of ``settings`` for ``cluster`` of the rollout ``namespace/name``."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return await prometheus.measure(
            settings, cluster=cluster, name=name, namespace=namespace, providers=self.providers,
            session=self._session, clock=self.clock,
        )

    def stop(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            with contextlib.suppress(RuntimeError):  # no loop running: the session never opened
                asyncio.get_running_loop().create_task(session.close())
