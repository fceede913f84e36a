"""The simulated agents' heartbeat request (``sandbox/lease_renewer.py``) against the local hub:
the patch ``Kube.patch`` would send, over aiohttp, with the client's credentials, TLS and timeouts,
and the same errors; configurations it does not send through go through ``Kube.patch``."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ocm_rollout.client.fencing import WriteFence
from ocm_rollout.client.kube import LEASES, NAMESPACES, Kube, KubeError, NotFound, RequestTimeout
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.lease_renewer import LeaseRenewer

pytestmark = pytest.mark.integration

STAMP = "2026-03-04T05:06:07.080910Z"


def _kube(kubeconfig: Path, **kwargs: Any) -> Kube:
    return Kube(load_client(str(kubeconfig)), field_manager="ocm-rollout-simulator", **kwargs)


def _kube_at(kubeconfig: Path, host: str, **kwargs: Any) -> Kube:
    """A client with the hub's credentials, pointed at ``host`` (a stand-in server)."""
    kube = _kube(kubeconfig, **kwargs)
    configuration = copy.copy(kube.api_client.configuration)
    configuration.host = host
    kube.api_client.configuration = configuration
    return kube


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request with a Content-Length body, head and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


async def _with_lease(kube: Kube, namespace: str) -> None:
    await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    await kube.create(
        LEASES,
        {
            "metadata": {"name": names.CLUSTER_LEASE_NAME, "namespace": namespace},
            "spec": {"holderIdentity": names.CLUSTER_LEASE_NAME, "renewTime": "2026-01-01T00:00:00.000000Z"},
        },
        namespace,
    )


def test_a_renewal_sets_the_renew_time_as_kube_patch_would(kubeconfig: Path, namespace: str) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        kube = _kube(kubeconfig)
        await _with_lease(kube, f"{namespace}-c")
        renewer = LeaseRenewer(kube)
        assert renewer.direct(), "the local hub's kubeconfig goes through the renewer's own requests"
        try:
            answers = [
                await renewer.renew(f"{namespace}-c", names.CLUSTER_LEASE_NAME, STAMP.replace("07.", f"{second:02d}."))
                for second in range(10, 40)
            ]
            stored = await kube.get(LEASES, names.CLUSTER_LEASE_NAME, f"{namespace}-c")
        finally:
            await renewer.close()
            await kube.delete(NAMESPACES, f"{namespace}-c")
        return answers[-1], stored, answers

    last, stored, answers = asyncio.run(scenario())
    assert last["spec"]["renewTime"] == stored["spec"]["renewTime"] == "2026-03-04T05:06:39.080910Z"
    assert last["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert len({a["metadata"]["resourceVersion"] for a in answers}) == 30, "one write per renewal"


def test_the_request_is_the_merge_patch_kube_patch_sends(kubeconfig: Path) -> None:
    """Read off the wire by a stand-in server: method, path, fieldManager, content type, the
    client's token and the body, over one kept-alive connection for several renewals."""

    async def scenario() -> tuple[list[bytes], int, str]:
        requests: list[bytes] = []
        connections = 0

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            while True:
                try:
                    requests.append(await _read_request(reader))
                except asyncio.IncompleteReadError:
                    break
                body = b'{"kind": "Lease", "spec": {"renewTime": "' + STAMP.encode() + b'"}}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        kube = _kube_at(kubeconfig, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        token = str(kube.api_client.configuration.auth_settings()["BearerToken"]["value"])
        renewer = LeaseRenewer(kube, connections=1)
        try:
            for _ in range(3):
                assert await renewer.renew("cluster7", names.CLUSTER_LEASE_NAME, STAMP) == {
                    "kind": "Lease", "spec": {"renewTime": STAMP}
                }
        finally:
            await renewer.close()
            server.close()
            await server.wait_closed()
        return requests, connections, token

    requests, connections, token = asyncio.run(scenario())
    assert len(requests) == 3 and connections == 1
    head, _, body = requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert lines[0] == (
        "PATCH /apis/coordination.k8s.io/v1/namespaces/cluster7/leases/managed-cluster-lease"
        "?fieldManager=ocm-rollout-simulator HTTP/1.1"
    )
    assert headers["content-type"] == "application/merge-patch+json"
    assert headers["accept"] == "application/json"
    assert headers["authorization"] == token and token.startswith("Bearer ")
    assert json.loads(body) == {"spec": {"renewTime": STAMP}}


def test_a_missing_lease_raises_not_found(kubeconfig: Path, namespace: str) -> None:
    async def scenario() -> None:
        renewer = LeaseRenewer(_kube(kubeconfig))
        try:
            await renewer.renew(namespace, names.CLUSTER_LEASE_NAME, STAMP)
        finally:
            await renewer.close()

    with pytest.raises(NotFound):
        asyncio.run(scenario())


def test_the_clients_credentials_are_sent(kubeconfig: Path, namespace: str) -> None:
    """A token the hub does not know is refused (401): the renewal carries the client's own."""

    async def scenario() -> None:
        kube = _kube(kubeconfig)
        await _with_lease(kube, f"{namespace}-t")
        wrong = copy.copy(kube.api_client.configuration)
        wrong.api_key = {"authorization": "Bearer not-a-token-of-this-hub"}
        kube.api_client.configuration = wrong
        renewer = LeaseRenewer(kube)
        try:
            await renewer.renew(f"{namespace}-t", names.CLUSTER_LEASE_NAME, STAMP)
        finally:
            await renewer.close()

    with pytest.raises(KubeError) as raised:
        asyncio.run(scenario())
    assert raised.value.status == 401


def test_a_server_that_never_answers_fails_the_renewal_within_its_timeouts(kubeconfig: Path) -> None:
    async def scenario() -> float:
        held: list[asyncio.StreamWriter] = []

        async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            held.append(writer)  # reads nothing, answers nothing

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        renewer = LeaseRenewer(
            _kube_at(
                kubeconfig,
                f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}",
                request_timeout=RequestTimeout(connect=0.5, read=0.5),
            )
        )
        began = time.monotonic()
        try:
            with pytest.raises((asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
                await renewer.renew("cluster1", names.CLUSTER_LEASE_NAME, STAMP)
            return time.monotonic() - began
        finally:
            await renewer.close()
            for writer in held:
                writer.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(scenario()) < 5.0


@pytest.mark.parametrize("setting", ["proxy", "fence", "tls_server_name"])
def test_what_the_renewer_does_not_send_itself_goes_through_kube_patch(
    kubeconfig: Path, namespace: str, setting: str
) -> None:
    async def scenario() -> list[tuple[Any, ...]]:
        kube = _kube(kubeconfig, fence=WriteFence()) if setting == "fence" else _kube(kubeconfig)
        if setting == "proxy":
            kube.api_client.configuration.proxy = "http://127.0.0.1:9"
        if setting == "tls_server_name":
            kube.api_client.configuration.tls_server_name = "hub.example"
        sent: list[tuple[Any, ...]] = []

        async def patch(res: Any, name: str, body: Any, ns: str | None = None) -> dict[str, Any]:
            sent.append((res, name, body, ns))
            return {"spec": body["spec"]}

        kube.patch = patch  # type: ignore[method-assign]
        renewer = LeaseRenewer(kube)
        assert not renewer.direct()
        await renewer.renew(namespace, names.CLUSTER_LEASE_NAME, STAMP)
        await renewer.close()
        return sent

    assert asyncio.run(scenario()) == [(LEASES, names.CLUSTER_LEASE_NAME, {"spec": {"renewTime": STAMP}}, namespace)]


def test_a_connection_closed_under_the_request_is_replaced_and_the_patch_sent_again(kubeconfig: Path) -> None:
    """The stand-in server drops its first connection without answering (as a server that closed a
    kept-alive connection meanwhile); the renewal succeeds on a second one."""

    async def scenario() -> tuple[dict[str, Any], int]:
        connections = 0

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            await _read_request(reader)
            if connections > 1:
                body = b'{"kind": "Lease"}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        renewer = LeaseRenewer(_kube_at(kubeconfig, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"))
        try:
            return await renewer.renew("cluster1", names.CLUSTER_LEASE_NAME, STAMP), connections
        finally:
            await renewer.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(scenario()) == ({"kind": "Lease"}, 2)
