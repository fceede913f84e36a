"""Many writes at once: a thread pool and a connection pool of its own, beside the shared client.

A controller that writes an object per cluster (ManifestWorks, ManagedClusterAddOn statuses)
sends up to ``concurrency`` requests at a time through ``ConcurrentWriter``, so a pass over a
thousand clusters is limited neither by the event loop's default executor (a handful of threads)
nor by the shared client's connection pool. Writes go through the same ``Kube.request_sync`` (and
so through the same lease fence) as every other request.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client import ApiClient

from ocm_rollout.client.kube import JSON, Kube, NotFound, Resource

log = logging.getLogger(__name__)

# How long a stopping controller waits for the writes already sent.
CLOSE_TIMEOUT_SECONDS = 30.0


class ConcurrentWriter:
    """Creates, merge patches and deletes, ``concurrency`` of them in flight at most."""

    def __init__(self, kube: Kube, concurrency: int, *, name: str = "writer") -> None:
        configuration = copy.deepcopy(kube.api_client.configuration)
        configuration.connection_pool_maxsize = max(concurrency, configuration.connection_pool_maxsize or 0)
        self.name = name
        self.kube = Kube(
            ApiClient(configuration), field_manager=kube.field_manager, fence=kube.fence,
            request_timeout=kube.request_timeout,
        )
        self.executor = ThreadPoolExecutor(concurrency, thread_name_prefix=name)

    async def _call(self, method: str, path: str, **kwargs: Any) -> JSON:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(self.kube.request_sync, method, path, **kwargs)
        )

    async def create(self, res: Resource, body: JSON, namespace: str | None) -> JSON:
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        return await self._call("POST", res.path(namespace), body=body, query={"fieldManager": self.kube.field_manager})

    async def patch(
        self, res: Resource, name: str, patch: JSON, namespace: str | None, *, subresource: str | None = None
    ) -> JSON:
        """A merge patch (of ``subresource`` when given)."""
        return await self._call(
            "PATCH",
            res.path(namespace, name, subresource),
            body=patch,
            content_type="application/merge-patch+json",
            query={"fieldManager": self.kube.field_manager},
        )

    async def delete(self, res: Resource, name: str, namespace: str | None, *, uid: str | None = None) -> None:
        """Delete (NotFound is fine); with ``uid``, only that incarnation of the object (409 otherwise)."""
        body: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self._call("DELETE", res.path(namespace, name), body=body)
        except NotFound:
            pass

    def close(self, timeout: float = CLOSE_TIMEOUT_SECONDS) -> None:
        """Stop writing: queued writes are dropped, writes already on the wire are waited for
        (at most ``timeout`` seconds), so that a controller that stopped (a lost lease, a
        shutdown) has no write landing after a successor has listed what it writes."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        finisher = threading.Thread(target=self.executor.shutdown, kwargs={"wait": True}, daemon=True)
        finisher.start()
        finisher.join(timeout)
        if finisher.is_alive():
            log.warning("writes still in flight after stop", extra={"writer": self.name, "timeout": timeout})
        self.kube.api_client.close()
