"""The fault proxy itself, against a local hub: it forwards faithfully (watch streams live, not
buffered) and each kind of fault is what a client sees."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from ocm_rollout.client.kube import NAMESPACES, Resource
from ocm_rollout.sandbox.server import HubThread, run_in_thread
from tests.faults.proxy import FaultProxy, FaultRates
from tests.integration.helpers import Api, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.integration]

NS = "proxied"
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubThread]:
    directory = tmp_path_factory.mktemp("proxy-hub")
    handle = run_in_thread(kubeconfig=directory / "hub.kubeconfig")
    try:
        Api(str(handle.kubeconfig)).create(NAMESPACES, {"metadata": {"name": NS}})
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def direct(hub: HubThread) -> Api:
    """The hub without the proxy."""
    return Api(str(hub.kubeconfig))


class Proxied:
    """A started proxy in front of ``hub`` and raw HTTP to it (no client retries)."""

    def __init__(self, hub: HubThread, directory: Path, rates: FaultRates) -> None:
        assert hub.kubeconfig is not None
        self.proxy = FaultProxy(hub.kubeconfig, rates, seed=1).start()
        self.kubeconfig = self.proxy.write_kubeconfig(directory / "proxy.kubeconfig")
        self.token = hub.token
        self.http = urllib3.PoolManager(retries=False)

    def request(self, method: str, path: str, *, body: Any = None, timeout: float = 10.0, stream: bool = False) -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        return self.http.request(
            method, self.proxy.url + path, body=data, headers=headers, timeout=timeout, preload_content=not stream
        )


@pytest.fixture
def proxy_with(hub: HubThread, tmp_path: Path) -> Iterator[Callable[..., Proxied]]:
    """``proxy_with(**rates)``: a started `Proxied` with those `FaultRates` (stopped afterwards)."""
    made: list[Proxied] = []

    def make(**rates: Any) -> Proxied:
        directory = tmp_path / f"proxy-{len(made)}"
        directory.mkdir()
        made.append(Proxied(hub, directory, FaultRates(**rates)))
        return made[-1]

    yield make
    for each in made:
        each.proxy.stop()


def _configmap(name: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"v": value}}


def test_without_faults_every_request_is_forwarded_through_its_kubeconfig(
    proxy_with: Callable[..., Proxied], direct: Api
) -> None:
    proxied = proxy_with()
    api = Api(str(proxied.kubeconfig))
    api.create(CONFIG_MAPS, _configmap("plain"), NS)
    assert api.get(CONFIG_MAPS, "plain", NS)["data"] == {"v": "1"}
    assert direct.get(CONFIG_MAPS, "plain", NS)["data"] == {"v": "1"}
    counts = proxied.proxy.counts()
    assert counts["requests"] == counts["forwarded"] == 2
    assert proxied.proxy.faults() == {}


def test_a_watch_stream_is_relayed_live_not_buffered(proxy_with: Callable[..., Proxied], direct: Api) -> None:
    proxied = proxy_with()
    listing = proxied.request("GET", f"/api/v1/namespaces/{NS}/configmaps").json()
    rv = listing["metadata"]["resourceVersion"]
    stream = proxied.request(
        "GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=30", stream=True
    )
    lines: list[dict[str, Any]] = []

    def read() -> None:
        pending = b""
        try:
            for chunk in stream.stream(amt=None):
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    lines.append(json.loads(line))
        except urllib3.exceptions.HTTPError:
            pass  # the proxy stopped under it at the end of the test

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    direct.create(CONFIG_MAPS, _configmap("live"), NS)
    wait_until(lambda: any(e["object"]["metadata"]["name"] == "live" for e in lines), timeout=10,
               message="the event relayed while the stream stays open")
    assert reader.is_alive(), "the stream ended instead of staying open"
    stream.release_conn()


def test_drop_closes_the_connection_without_forwarding(proxy_with: Callable[..., Proxied], direct: Api) -> None:
    proxied = proxy_with(drop=1.0)
    with pytest.raises(urllib3.exceptions.ProtocolError, match="without response"):
        proxied.request("POST", f"/api/v1/namespaces/{NS}/configmaps", body=_configmap("dropped"))
    assert direct.get_or_none(CONFIG_MAPS, "dropped", NS) is None
    assert proxied.proxy.faults() == {"drop": 1}
    assert proxied.proxy.counts()["forwarded"] == 0


def test_lost_answer_forwards_the_write_and_closes_before_answering(proxy_with: Callable[..., Proxied], direct: Api) -> None:
    proxied = proxy_with(lost_answer=1.0)
    with pytest.raises(urllib3.exceptions.ProtocolError, match="without response"):
        proxied.request("POST", f"/api/v1/namespaces/{NS}/configmaps", body=_configmap("written"))
    assert direct.get(CONFIG_MAPS, "written", NS)["data"] == {"v": "1"}
    assert proxied.proxy.faults() == {"lost_answer": 1}


def test_reset_resets_the_connection(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(reset=1.0)
    with pytest.raises(urllib3.exceptions.ProtocolError) as raised:
        proxied.request("GET", "/api/v1/namespaces")
    assert isinstance(raised.value.args[1], ConnectionResetError)
    assert proxied.proxy.faults() == {"reset": 1}


def test_throttle_answers_429_with_retry_after_and_a_status(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(throttle=1.0, retry_after_seconds=3)
    answer = proxied.request("GET", "/api/v1/namespaces")
    assert answer.status == 429
    assert answer.headers["Retry-After"] == "3"
    status = answer.json()
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 429, "TooManyRequests")
    assert status["details"]["retryAfterSeconds"] == 3


def test_error_answers_500_with_a_status(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(error=1.0)
    answer = proxied.request("GET", "/api/v1/namespaces")
    assert answer.status == 500
    status = answer.json()
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 500, "InternalError")


def test_a_hung_request_is_held_until_the_client_gives_up(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(hang=1.0, hang_seconds=600)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        proxied.request("GET", "/api/v1/namespaces", timeout=0.5)
    assert time.monotonic() - started < 5
    proxied.http.clear()  # the client closes its side
    hung = wait_until(lambda: [h for h in proxied.proxy.hung() if h.how == "client gave up"], timeout=10,
                      message="the proxy to see the client give up")
    assert hung[0].method == "GET" and hung[0].path == "/api/v1/namespaces"
    assert proxied.proxy.open_hangs() == []


def test_a_hung_request_is_closed_unanswered_when_its_hang_expires(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(hang=1.0, hang_seconds=0.5)
    with pytest.raises(urllib3.exceptions.ProtocolError, match="without response"):
        proxied.request("GET", "/api/v1/namespaces", timeout=30)
    assert [h.how for h in proxied.proxy.hung()] == ["expired"]


def test_open_hangs_lists_the_requests_a_client_still_waits_on(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(hang=1.0, hang_seconds=600)
    def wait() -> None:
        with pytest.raises(urllib3.exceptions.HTTPError):
            proxied.request("GET", "/api/v1/namespaces/default", timeout=30)

    client = threading.Thread(target=wait, daemon=True)
    client.start()
    waiting = wait_until(lambda: proxied.proxy.open_hangs(), timeout=10, message="an open hang")
    assert waiting[0].path == "/api/v1/namespaces/default" and waiting[0].waited() >= 0
    proxied.proxy.stop()
    client.join(10)
    assert [h.how for h in proxied.proxy.hung()] == ["proxy stopped"]


def test_latency_delays_the_answer(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(latency=1.0, latency_seconds=(0.4, 0.4))
    started = time.monotonic()
    assert proxied.request("GET", "/api/v1/namespaces").status == 200
    assert time.monotonic() - started >= 0.4
    assert proxied.proxy.faults() == {"latency": 1}


def test_a_watch_stream_is_cut_after_some_events(proxy_with: Callable[..., Proxied], direct: Api) -> None:
    proxied = proxy_with(watch_cut=1.0, watch_cut_after=(3, 3))
    rv = proxied.request("GET", f"/api/v1/namespaces/{NS}/configmaps").json()["metadata"]["resourceVersion"]
    for i in range(6):
        direct.create(CONFIG_MAPS, _configmap(f"cut-{i}"), NS)
    stream = proxied.request(
        "GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=30", stream=True
    )
    received = b""
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for chunk in stream.stream(amt=None):
            received += chunk
    events = [json.loads(line) for line in received.split(b"\n")[:-1]]
    assert [e["object"]["metadata"]["name"] for e in events] == ["cut-0", "cut-1", "cut-2"]
    assert proxied.proxy.faults() == {"watch_cut": 1}


def test_faults_off_forwards_faithfully_again(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with(error=1.0)
    assert proxied.request("GET", "/api/v1/namespaces").status == 500
    proxied.proxy.faults_off()
    assert proxied.request("GET", "/api/v1/namespaces").status == 200
    assert proxied.proxy.counts()["error"] == 1


def test_hang_next_hangs_only_the_next_matching_request(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with()
    proxied.proxy.hang_next(r"^GET /api/v1/namespaces/default$")
    assert proxied.request("GET", "/api/v1/namespaces").status == 200
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        proxied.request("GET", "/api/v1/namespaces/default", timeout=0.5)
    assert proxied.request("GET", "/api/v1/namespaces/default").status == 200
    assert proxied.proxy.faults() == {"hang": 1}


def test_cut_watches_cuts_the_open_streams_that_match(proxy_with: Callable[..., Proxied]) -> None:
    proxied = proxy_with()
    stream = proxied.request("GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&timeoutSeconds=30", stream=True)
    wait_until(lambda: proxied.proxy.cut_watches(r"configmaps\?watch") == 1, timeout=10, message="the stream to be cut")
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in stream.stream(amt=None):
            pass
    assert proxied.proxy.faults() == {"watch_cut": 1}


def test_rates_that_add_up_to_more_than_one_are_refused() -> None:
    with pytest.raises(ValueError, match="add up"):
        FaultRates(drop=0.6, error=0.6)


def test_the_same_seed_draws_the_same_faults(proxy_with: Callable[..., Proxied]) -> None:
    seen = []
    for _ in range(2):
        proxied = proxy_with(error=0.3, throttle=0.3)
        seen.append([proxied.request("GET", "/api/v1/namespaces").status for _ in range(20)])
    assert seen[0] == seen[1]
    assert {200, 429, 500} <= set(seen[0])
