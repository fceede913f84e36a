"""The simulated registration agents' heartbeat: one merge patch of a cluster's Lease, sent with
aiohttp on the event loop over a few kept-alive connections.

Heartbeats are the one request of the simulation whose volume does not follow the rollout: one
per cluster per lease period for as long as the fleet runs, 148 a second at 10,000 clusters. Sent
through ``Kube`` (the official client: urllib3 in a worker thread), each costs the simulation
about 0.6 ms of CPU; through aiohttp (kopf's HTTP client, installed already), about 0.2 ms
(``bench/heartbeat.py``). On one laptop the simulated fleet shares the cores with the hub and the
controllers, so that difference is CPU the hub and the controllers get back.

The request is the one ``Kube.patch`` sends (same path, content type, ``fieldManager``, the
client's credentials and TLS settings, its connect and read timeouts), and an answer other than
2xx raises the same ``KubeError``. A configuration this module does not send through (an HTTP
proxy, a client with a write fence, a TLS server name other than the host's) goes through
``Kube.patch`` instead.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import aiohttp

from ocm_rollout.client.fencing import UNFENCED
from ocm_rollout.client.kube import JSON, LEASES, Kube, error_from

# Kept-alive connections to the API server for the heartbeats of one simulation.
CONNECTIONS = 4
MERGE_PATCH = "application/merge-patch+json"


def _tls(configuration: Any) -> ssl.SSLContext:
    """The TLS settings the official client takes from the same configuration."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    return context


class LeaseRenewer:
    """Renews ``namespace``'s Lease ``name`` (see the module's docstring). Opened at the first
    renewal, on the running loop; ``close()`` when the simulation stops."""

    def __init__(self, kube: Kube, connections: int = CONNECTIONS) -> None:
        self.kube = kube
        self.connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._direct: bool | None = None

    def direct(self) -> bool:
        """Does this client's configuration go through aiohttp (else through ``Kube.patch``)?"""
        if self._direct is None:
            configuration = self.kube.api_client.configuration
            self._direct = bool(
                self.kube.fence is UNFENCED
                and not configuration.proxy
                and not getattr(configuration, "tls_server_name", None)
                and str(configuration.host).startswith(("https://", "http://"))
            )
        return self._direct

    def _open(self) -> aiohttp.ClientSession:
        configuration = self.kube.api_client.configuration
        https = str(configuration.host).startswith("https://")
        connector = aiohttp.TCPConnector(limit=self.connections, ssl=_tls(configuration) if https else False)
        timeout = self.kube.request_timeout
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=timeout.connect + timeout.read, sock_connect=timeout.connect, sock_read=timeout.read
            ),
            # The answer's JSON is parsed here, not by aiohttp; no cookies between agents.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self._session

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": MERGE_PATCH}
        for setting in self.kube.api_client.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        user_agent = self.kube.api_client.user_agent
        if user_agent:
            headers["User-Agent"] = str(user_agent)
        return headers

    async def renew(self, namespace: str, name: str, renew_time: str) -> JSON:
        """Set the Lease's ``spec.renewTime``; the Lease as stored after it. A connection the
        server closed or reset under the request is replaced and the patch sent once more (it sets
        one field to one value: sending it twice does what sending it once does), as urllib3 does
        for ``Kube``."""
        patch = {"spec": {"renewTime": renew_time}}
        if not self.direct():
            return await self.kube.patch(LEASES, name, patch, namespace)
        try:
            return await self._send(namespace, name, patch)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            return await self._send(namespace, name, patch)

    async def _send(self, namespace: str, name: str, patch: JSON) -> JSON:
        session = self._session or self._open()
        url = str(self.kube.api_client.configuration.host).rstrip("/") + LEASES.path(namespace, name)
        async with session.patch(
            url,
            data=json.dumps(patch),
            headers=self._headers(),
            params={"fieldManager": self.kube.field_manager},
        ) as response:
            data = await response.read()
            if not 200 <= response.status <= 299:
                raise error_from(response.status, str(response.reason or ""), data, response.headers)
        parsed = json.loads(data)
        if not isinstance(parsed, dict):
            raise ValueError(f"the API server answered a Lease patch with {type(parsed).__name__}, not an object")
        return parsed

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
