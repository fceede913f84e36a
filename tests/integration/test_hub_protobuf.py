"""The hub speaks protobuf as kube-apiserver does, for the requests client-go sends: protobuf
writes of Lease, Event (both groups) and ConfigMap, protobuf answers (objects, lists, Status
errors, watch frames) for built-in kinds, JSON for custom resources; and what controllers built
on the generic API server library read at start."""

from __future__ import annotations

import json
from typing import Any

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import http
from tests.unit import client_go_bodies
from tests.unit.pb_bytes import (
    entry,
    envelope,
    ld,
    map_entries,
    num,
    one,
    parse,
    text,
    time_,
    unenvelope,
    zero_time,
)

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO = {"Accept": f"{PROTOBUF}, application/json", "Content-Type": PROTOBUF}
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def _meta(name: str, namespace: str, resource_version: str = "") -> bytes:
    return ld(1, ld(1, name), ld(2, ""), ld(3, namespace), ld(5, ""), ld(6, resource_version), num(7, 0), zero_time(8))


def _lease(namespace: str, holder: str, transitions: int, resource_version: str = "") -> bytes:
    spec = ld(2, ld(1, holder), num(2, 137), time_(3, T0, 1_000), time_(4, T0 + 26, 2_000), num(5, transitions))
    return envelope("coordination.k8s.io/v1", "Lease", _meta("placement-lock", namespace, resource_version) + spec)


def _json(handle: HubThread, path: str) -> Any:
    resp = http(handle, "GET", path)
    assert resp.status == 200, resp.data
    return json.loads(resp.data)


def test_leader_election_writes_its_lease_in_protobuf(hub: HubThread, namespace: str) -> None:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    created = http(hub, "POST", base, body=_lease(namespace, "a_1", 0), headers=CLIENT_GO)
    assert created.status == 201, created.data
    assert created.headers["Content-Type"] == PROTOBUF
    api_version, kind, lease = unenvelope(created.data)
    assert (api_version, kind) == ("coordination.k8s.io/v1", "Lease")
    meta = parse(one(lease, 1))
    rv = text(meta, 6)
    assert text(meta, 1) == "placement-lock" and text(meta, 5)  # a uid was given

    renewed = http(hub, "PUT", f"{base}/placement-lock", body=_lease(namespace, "b_2", 1, rv), headers=CLIENT_GO)
    assert renewed.status == 200, renewed.data
    spec = parse(one(unenvelope(renewed.data)[2], 2))
    assert text(spec, 1) == "b_2" and spec[5] == [1]
    stale = http(hub, "PUT", f"{base}/placement-lock", body=_lease(namespace, "c_3", 2, rv), headers=CLIENT_GO)
    assert stale.status == 409
    assert stale.headers["Content-Type"] == PROTOBUF and unenvelope(stale.data)[1] == "Status"

    stored = _json(hub, f"{base}/placement-lock")
    assert stored["spec"] == {
        "holderIdentity": "b_2",
        "leaseDurationSeconds": 137,
        "acquireTime": "2026-01-01T00:00:00.000001Z",
        "renewTime": "2026-01-01T00:00:26.000002Z",
        "leaseTransitions": 1,
    }


def test_events_are_written_in_protobuf_in_both_groups(hub: HubThread, namespace: str) -> None:
    regarding = ld(1, "Placement"), ld(2, namespace), ld(3, "p1"), ld(5, "cluster.open-cluster-management.io/v1beta1")
    new_event = (
        _meta("p1.a", namespace) + time_(2, T0, 5_000) + ld(4, "placement-controller") + ld(5, "placement-controller-vm")
        + ld(6, "DecisionCreated") + ld(7, "DecisionCreate") + ld(8, *regarding) + ld(10, "created") + ld(11, "Normal")
        + ld(12, ld(1, ""), ld(2, "")) + zero_time(13) + zero_time(14) + num(15, 0)
    )
    resp = http(hub, "POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                body=envelope("events.k8s.io/v1", "Event", new_event), headers=CLIENT_GO)
    assert resp.status == 201, resp.data
    assert text(unenvelope(resp.data)[2], 10) == "created"

    core_event = (
        _meta("lock.b", namespace) + ld(2, ld(1, "Lease"), ld(2, namespace), ld(3, "placement-lock"))
        + ld(3, "LeaderElection") + ld(4, "x became leader") + ld(5, ld(1, "placement"))
        + time_(6, T0) + time_(7, T0) + num(8, 1) + ld(9, "Normal") + zero_time(10)
    )
    resp = http(hub, "POST", f"/api/v1/namespaces/{namespace}/events",
                body=envelope("v1", "Event", core_event), headers=CLIENT_GO)
    assert resp.status == 201, resp.data

    # one store, read in the other group's JSON form
    core = {e["metadata"]["name"]: e for e in _json(hub, f"/api/v1/namespaces/{namespace}/events")["items"]}
    assert core["p1.a"]["message"] == "created" and core["p1.a"]["eventTime"] == "2026-01-01T00:00:00.000005Z"
    assert "firstTimestamp" not in core["p1.a"]  # a zero Time is no time
    assert core["lock.b"]["involvedObject"]["name"] == "placement-lock" and core["lock.b"]["count"] == 1
    # and listed in protobuf
    listing = http(hub, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", headers=CLIENT_GO)
    api_version, kind, events = unenvelope(listing.data)
    assert (api_version, kind) == ("events.k8s.io/v1", "EventList")
    notes = sorted(text(parse(item), 10) for item in events[2] if isinstance(item, bytes))
    assert notes == ["created", "x became leader"]


def test_configmaps_in_protobuf_and_custom_resources_in_json(hub: HubThread, namespace: str) -> None:
    body = envelope("v1", "ConfigMap", _meta("settings", namespace) + entry(2, "mode", "fast") + entry(3, "blob", b"\x01\x02"))
    assert http(hub, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=body, headers=CLIENT_GO).status == 201
    listing = http(hub, "GET", f"/api/v1/namespaces/{namespace}/configmaps", headers=CLIENT_GO)
    assert listing.headers["Content-Type"] == PROTOBUF
    _, kind, cms = unenvelope(listing.data)
    assert kind == "ConfigMapList" and text(parse(one(cms, 1)), 2).isdigit()
    (item,) = cms[2]
    assert isinstance(item, bytes)
    assert map_entries(parse(item), 2) == {"mode": b"fast"} and map_entries(parse(item), 3) == {"blob": b"\x01\x02"}

    missing = http(hub, "GET", f"/api/v1/namespaces/{namespace}/configmaps/nope", headers=CLIENT_GO)
    assert missing.status == 404 and missing.headers["Content-Type"] == PROTOBUF
    _, kind, status = unenvelope(missing.data)
    assert (kind, text(status, 4), status[6]) == ("Status", "NotFound", [404])

    # custom resources: JSON whatever protobuf is preferred, and protobuf bodies are refused
    placements = f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{namespace}/placements"
    resp = http(hub, "GET", placements, headers=CLIENT_GO)
    assert resp.headers["Content-Type"].startswith("application/json") and json.loads(resp.data)["kind"] == "PlacementList"
    resp = http(hub, "GET", f"{placements}/nope", headers=CLIENT_GO)
    assert resp.status == 404 and json.loads(resp.data)["kind"] == "Status"
    refused = http(hub, "POST", placements, body=envelope("cluster.open-cluster-management.io/v1beta1", "Placement", b""),
                   headers=CLIENT_GO)
    assert refused.status == 415


def test_deletes_take_protobuf_delete_options(hub: HubThread, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    created = http(hub, "POST", base, body=envelope("v1", "ConfigMap", _meta("doomed", namespace)), headers=CLIENT_GO)
    uid = text(parse(one(unenvelope(created.data)[2], 1)), 5)

    def options(uid: str) -> bytes:
        return envelope("v1", "DeleteOptions", ld(2, ld(1, uid)) + ld(4, "Background"))

    wrong = http(hub, "DELETE", f"{base}/doomed", body=options("not-" + uid), headers=CLIENT_GO)
    assert wrong.status == 409, wrong.data
    gone = http(hub, "DELETE", f"{base}/doomed", body=options(uid), headers=CLIENT_GO)
    assert gone.status == 200 and unenvelope(gone.data)[:2] == ("v1", "Status")


def test_watches_stream_protobuf_frames(hub: HubThread, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    http(hub, "POST", base, body=envelope("v1", "ConfigMap", _meta("first", namespace)), headers=CLIENT_GO)
    resp = http(hub, "GET", f"{base}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
                f"&resourceVersionMatch=NotOlderThan&timeoutSeconds=30", headers=CLIENT_GO, stream=True)
    assert resp.headers["Content-Type"] == f"{PROTOBUF};stream=watch"

    def next_event() -> tuple[str, str, dict[int, list[int | bytes]]]:
        size = int.from_bytes(resp.read(4), "big")
        event = parse(resp.read(size))  # a bare metav1.WatchEvent
        _, kind, obj = unenvelope(one(parse(one(event, 2)), 1))
        return text(event, 1), kind, obj

    try:
        kind, what, obj = next_event()
        assert (kind, what, text(parse(one(obj, 1)), 1)) == ("ADDED", "ConfigMap", "first")
        kind, what, obj = next_event()
        assert (kind, what) == ("BOOKMARK", "ConfigMap")
        assert map_entries(parse(one(obj, 1)), 12) == {"k8s.io/initial-events-end": b"true"}
        http(hub, "POST", base, body=envelope("v1", "ConfigMap", _meta("second", namespace)), headers=CLIENT_GO)
        kind, _, obj = next_event()
        assert (kind, text(parse(one(obj, 1)), 1)) == ("ADDED", "second")
    finally:
        resp.release_conn()


def test_the_authentication_configmap_is_published(hub: HubThread) -> None:
    cm = _json(hub, "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")
    data = cm["data"]
    assert hub.hub.ca_pem is not None
    assert data["client-ca-file"] == data["requestheader-client-ca-file"] == hub.hub.ca_pem.decode()
    assert json.loads(data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert json.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert json.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]
    assert json.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]


def test_openapi_v2_answers_protobuf_under_a_parseable_name(hub: HubThread) -> None:
    resp = http(hub, "GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert resp.data.startswith(ld(1, "2.0"))  # gnostic Document.swagger
    assert http(hub, "GET", "/openapi/v2", headers={"Accept": "text/html"}).status == 406


def test_metadata_requests_get_protobuf_for_custom_resources_too(hub: HubThread, namespace: str) -> None:
    """PartialObjectMetadata is a built-in type: kube-apiserver encodes it in protobuf whatever
    the resource, as client-go's metadata client (the garbage collector's, the namespace
    controller's) asks."""
    placements = f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{namespace}/placements"
    for name in ("a", "b"):
        body = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "metadata": {"name": name}, "spec": {}}
        assert http(hub, "POST", placements, body=body).status == 201
    metadata_client = {"Accept": f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                                 "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"}
    listing = http(hub, "GET", placements, headers=metadata_client)
    assert listing.headers["Content-Type"] == PROTOBUF
    api_version, kind, msg = unenvelope(listing.data)
    assert (api_version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    names = sorted(text(parse(one(parse(item), 1)), 1) for item in msg[2] if isinstance(item, bytes))
    assert names == ["a", "b"]
    gone = http(hub, "DELETE", placements, headers=metadata_client)
    assert gone.status == 200 and unenvelope(gone.data)[1] == "PartialObjectMetadataList"
    assert _json(hub, placements)["items"] == []


def test_token_reviews_authenticate_the_hubs_tokens(hub: HubThread) -> None:
    """What a controller's metrics endpoint asks (in protobuf) before it answers a caller."""
    path = "/apis/authentication.k8s.io/v1/tokenreviews"

    def review(token: str) -> dict[int, list[int | bytes]]:
        body = envelope("authentication.k8s.io/v1", "TokenReview", ld(1) + ld(2, ld(1, token)))
        resp = http(hub, "POST", path, body=body, headers=CLIENT_GO)
        assert resp.status == 201, resp.data
        api_version, kind, msg = unenvelope(resp.data)
        assert (api_version, kind) == ("authentication.k8s.io/v1", "TokenReview")
        return parse(one(msg, 3))

    status = review(hub.token)
    assert status[1] == [1]
    user = parse(one(status, 2))
    assert text(user, 1) == "admin" and b"system:authenticated" in user[3]
    assert review("not-" + hub.token).get(1, [0]) == [0]
    missing = http(hub, "POST", path, body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}})
    assert missing.status == 400 and "token is required" in json.loads(missing.data)["message"]


def test_replayed_client_go_writes(hub: HubThread) -> None:
    """The bodies OCM's placement controller sent at start, byte for byte."""
    ns = "open-cluster-management-hub"
    assert http(hub, "POST", "/api/v1/namespaces", body={"metadata": {"name": ns}}).status in (201, 409)
    try:
        lease = http(hub, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
                     body=client_go_bodies.LEASE_CREATE, headers=CLIENT_GO)
        assert lease.status == 201, lease.data
        assert http(hub, "POST", f"/api/v1/namespaces/{ns}/events", body=client_go_bodies.CORE_EVENT,
                    headers=CLIENT_GO).status == 201
        event = http(hub, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", body=client_go_bodies.EVENTS_V1_EVENT,
                     headers=CLIENT_GO)
        assert event.status == 201, event.data
        core = _json(hub, "/api/v1/namespaces/default/events/p1.18eb9529a52cb6c1")
        assert core["reportingComponent"] == "placement-controller" and core["involvedObject"]["name"] == "p1"
        assert _json(hub, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/placement-lock")["spec"]["leaseTransitions"] == 0
    finally:
        http(hub, "DELETE", "/apis/events.k8s.io/v1/namespaces/default/events/p1.18eb9529a52cb6c1")
        http(hub, "DELETE", f"/api/v1/namespaces/{ns}")
