"""WATCH: resume from a resourceVersion, selectors, bookmarks, timeouts and 410 Gone."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api, http, widget_crd

G, V = WIDGET_GROUP, "v1"


def widget(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": name, "labels": labels or {}}, "spec": {"size": 1}}


@pytest.fixture
def crs(toy_client: client.ApiClient) -> Any:
    return api("CustomObjectsApi", toy_client)


def events_from(crs: Any, ns: str, count: int, **kwargs: Any) -> list[tuple[str, str]]:
    """The first `count` (type, name) events a watch delivers (or fewer if its timeout ends it)."""
    w = watch.Watch()
    out: list[tuple[str, str]] = []
    kwargs.setdefault("timeout_seconds", 10)
    for ev in w.stream(crs.list_namespaced_custom_object, G, V, ns, "widgets", **kwargs):
        if ev["type"] != "BOOKMARK":
            out.append((ev["type"], ev["object"]["metadata"]["name"]))
        if len(out) >= count:
            w.stop()
            break
    return out


def test_watch_resumes_after_a_resource_version(crs: Any, toy_namespace: str) -> None:
    first = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("a"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "a", {"spec": {"size": 2}})
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("b"))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "a")
    got = events_from(crs, toy_namespace, 3, resource_version=first["metadata"]["resourceVersion"])
    assert got == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]


def test_watch_without_resource_version_starts_with_current_objects(crs: Any, toy_namespace: str) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("x"))
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("y"))
    assert events_from(crs, toy_namespace, 2) == [("ADDED", "x"), ("ADDED", "y")]


def test_watch_is_limited_to_its_namespace(crs: Any, toy_namespace: str, toy_client: client.ApiClient) -> None:
    other = f"{toy_namespace[:50]}-o"
    api("CoreV1Api", toy_client).create_namespace({"metadata": {"name": other}})
    start = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("mine"))
    crs.create_namespaced_custom_object(G, V, other, "widgets", widget("theirs"))
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("mine-too"))
    got = events_from(crs, toy_namespace, 1, resource_version=start["metadata"]["resourceVersion"])
    assert got == [("ADDED", "mine-too")]
    api("CoreV1Api", toy_client).delete_namespace(other)


def test_watch_with_label_selector_sees_objects_enter_and_leave(crs: Any, toy_namespace: str) -> None:
    start = crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("m"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "m", {"metadata": {"labels": {"team": "a"}}})
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "m", {"spec": {"size": 3}})
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "m", {"metadata": {"labels": {"team": "b"}}})
    got = events_from(crs, toy_namespace, 3, resource_version=start["metadata"]["resourceVersion"], label_selector="team=a")
    assert got == [("ADDED", "m"), ("MODIFIED", "m"), ("DELETED", "m")]


def test_watch_delivers_live_changes(crs: Any, toy_namespace: str, wait_for: Callable[..., Any]) -> None:
    start = crs.list_namespaced_custom_object(G, V, toy_namespace, "widgets")["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []
    w = watch.Watch()

    def consume() -> None:
        for ev in w.stream(crs.list_namespaced_custom_object, G, V, toy_namespace, "widgets", resource_version=start, timeout_seconds=20):
            if ev["type"] != "BOOKMARK":
                seen.append((ev["type"], ev["object"]["metadata"]["name"]))
            if len(seen) >= 2:
                w.stop()
                return

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("live"))
    crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "live")
    wait_for(lambda: len(seen) >= 2, message="two watch events")
    thread.join(timeout=20)
    assert seen == [("ADDED", "live"), ("DELETED", "live")]


def test_watch_sends_bookmarks_when_allowed(toy_hub: HubThread, toy_namespace: str) -> None:
    resp = http(
        toy_hub, "GET", f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=1&allowWatchBookmarks=true&timeoutSeconds=10",
        stream=True,
    )
    line = b""
    while not line.endswith(b"\n"):
        line += resp.read(1)
    resp.release_conn()
    event = json.loads(line)
    assert event["type"] == "BOOKMARK"
    assert event["object"]["kind"] == "Widget" and int(event["object"]["metadata"]["resourceVersion"]) > 0


def test_watch_without_bookmarks_sends_none(toy_hub: HubThread, toy_namespace: str) -> None:
    resp = http(toy_hub, "GET", f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=1&timeoutSeconds=1&resourceVersion=0")
    assert all(json.loads(line)["type"] != "BOOKMARK" for line in resp.data.splitlines() if line)


def test_timeout_seconds_ends_the_watch(toy_hub: HubThread, toy_namespace: str) -> None:
    started = time.monotonic()
    resp = http(toy_hub, "GET", f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=true&timeoutSeconds=1")
    assert resp.status == 200
    assert 0.9 <= time.monotonic() - started < 10


def test_send_initial_events_ends_with_an_annotated_bookmark(toy_hub: HubThread, toy_namespace: str, crs: Any) -> None:
    crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("init"))
    resp = http(
        toy_hub, "GET",
        f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    )
    events = [json.loads(line) for line in resp.data.splitlines() if line]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "init"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_from_expired_resource_version_is_gone(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]) -> None:
    hub = make_hub(crds=[widget_crd()], history=3)
    crs = api("CustomObjectsApi", client_for(hub))
    first = crs.create_namespaced_custom_object(G, V, "default", "widgets", widget("old"))
    for size in range(2, 7):
        crs.patch_namespaced_custom_object(G, V, "default", "widgets", "old", {"spec": {"size": size}})
    resp = http(hub, "GET", f"/apis/{G}/{V}/namespaces/default/widgets?watch=1&resourceVersion={first['metadata']['resourceVersion']}")
    (event,) = [json.loads(line) for line in resp.data.splitlines() if line]
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    with pytest.raises(client.ApiException) as err:
        events_from(crs, "default", 1, resource_version=first["metadata"]["resourceVersion"])
    assert err.value.status == 410


def test_watch_within_history_is_not_gone(make_hub: Callable[..., HubThread], client_for: Callable[..., client.ApiClient]) -> None:
    hub = make_hub(crds=[widget_crd()], history=3)
    crs = api("CustomObjectsApi", client_for(hub))
    crs.create_namespaced_custom_object(G, V, "default", "widgets", widget("w"))
    mid = crs.patch_namespaced_custom_object(G, V, "default", "widgets", "w", {"spec": {"size": 2}})
    crs.patch_namespaced_custom_object(G, V, "default", "widgets", "w", {"spec": {"size": 3}})
    got = events_from(crs, "default", 1, resource_version=mid["metadata"]["resourceVersion"])
    assert got == [("MODIFIED", "w")]


def test_a_watch_that_times_out_sends_every_queued_event_before_its_last_bookmark(
    toy_hub: HubThread, toy_namespace: str, crs: Any
) -> None:
    """kube-apiserver's bookmark promises that every event up to its resourceVersion was sent; a
    client resumes from it. A watch whose reader falls behind (here: does not read until after
    its timeout) still has events queued when the timeout comes; they must go out before the
    closing bookmark, or a client resuming from that bookmark never sees them."""
    path = f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=1&allowWatchBookmarks=true&timeoutSeconds=2"
    start = crs.list_namespaced_custom_object(G, V, toy_namespace, "widgets")["metadata"]["resourceVersion"]
    resp = http(toy_hub, "GET", f"{path}&resourceVersion={start}", stream=True)
    # Far more than the socket buffers and the server's write chunk hold: the server's writer is
    # blocked with most of these events still queued when the timeout comes.
    filler = "x" * 400_000
    created = []
    for i in range(80):
        body = widget(f"big-{i}")
        body["spec"]["free"] = {"data": filler}
        created.append(crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body))
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:  # the watch's own timeout must pass before we read
        time.sleep(0.1)
    seen: list[tuple[str, int]] = []
    buffer = b""
    for chunk in resp.stream(1 << 16):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                event = json.loads(line)
                seen.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))
    resp.release_conn()
    bookmarks = [rv for kind, rv in seen if kind == "BOOKMARK"]
    delivered = {rv for kind, rv in seen if kind == "ADDED"}
    assert bookmarks, "the watch ended without a bookmark"
    promised = [int(o["metadata"]["resourceVersion"]) for o in created
                if int(o["metadata"]["resourceVersion"]) <= bookmarks[-1]]
    missing = [rv for rv in promised if rv not in delivered]
    assert missing == [], f"bookmark at {bookmarks[-1]} skipped {len(missing)} queued events"


def test_a_watcher_that_vanishes_ends_its_watch_without_an_error(
    toy_hub: HubThread, crs: Any, toy_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that closes its watch connection (a controller stopping) while events are being
    written to it ends the watch quietly: no 'Error handling request' traceback in the hub's log
    (aiohttp refuses writes to a closing transport with ClientConnectionResetError)."""
    import socket
    import ssl
    from urllib.parse import urlparse

    where = urlparse(toy_hub.url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    path = f"/apis/{G}/{V}/namespaces/{toy_namespace}/widgets?watch=true"
    request = f"GET {path} HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {toy_hub.token}\r\n\r\n"
    watchers = []
    for _ in range(20):
        conn = context.wrap_socket(socket.create_connection((where.hostname, where.port)), server_hostname=where.hostname)
        conn.sendall(request.encode())
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        watchers.append(conn)
    stop = threading.Event()

    def churn() -> None:
        index = 0
        while not stop.is_set():
            crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget(f"w-{index}"))
            index += 1

    writer = threading.Thread(target=churn)
    with caplog.at_level("ERROR"):
        writer.start()
        try:
            for conn in watchers:  # each closes while events stream to it
                time.sleep(0.05)
                conn.close()
            time.sleep(0.5)
        finally:
            stop.set()
            writer.join(10)
    errors = [r.getMessage() for r in caplog.records if r.name.startswith("aiohttp") and r.levelname == "ERROR"]
    assert errors == []
