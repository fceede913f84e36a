"""The hub's protobuf codec against bytes built the way client-go builds them (by the
independent writer in tests.unit.pb_bytes), and its answers taken apart by the same reader."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ocm_rollout.api.crdgen import generate_crds
from ocm_rollout.sandbox import protobuf
from ocm_rollout.sandbox.errors import ApiError
from tests.unit import client_go_bodies
from tests.unit.pb_bytes import (
    GO_ZERO_INSTANT,
    entry,
    envelope,
    frames,
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

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def meta(name: str, namespace: str = "", *extra: bytes) -> bytes:
    """ObjectMeta as a Go client writes it for a new object: every string field, even empty,
    and the zero creationTimestamp."""
    return ld(1, ld(1, name), ld(2, ""), ld(3, namespace), ld(4, ""), ld(5, ""), ld(6, ""), num(7, 0),
              zero_time(8), *extra)


def test_a_lease_as_leader_election_creates_it() -> None:
    spec = ld(2, ld(1, "placement-7d9f_4b1e"), num(2, 137), time_(3, T0, 123_456_000), time_(4, T0 + 2, 500_000),
              num(5, 0))
    body = envelope("coordination.k8s.io/v1", "Lease", meta("placement-lock", "open-cluster-management-hub") + spec)
    got = protobuf.decode(body)
    assert got == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "placement-lock", "namespace": "open-cluster-management-hub"},
        "spec": {
            "holderIdentity": "placement-7d9f_4b1e",
            "leaseDurationSeconds": 137,
            "acquireTime": "2026-01-01T00:00:00.123456Z",
            "renewTime": "2026-01-01T00:00:02.000500Z",
            "leaseTransitions": 0,  # a Go pointer: a written zero is a value
        },
    }


def test_an_events_k8s_io_event_from_the_event_broadcaster() -> None:
    regarding = ld(8, ld(1, "Placement"), ld(2, "default"), ld(3, "p1"), ld(4, "uid-1"), ld(5, "cluster.open-cluster-management.io/v1beta1"),
                   ld(6, "42"), ld(7, ""))
    raw = (
        meta("p1.17a1", "default")
        + time_(2, T0, 7_000)  # eventTime
        + ld(4, "placementController")
        + ld(5, "placement-abc")
        + ld(6, "Scheduled")
        + ld(7, "DecisionCreate")
        + regarding
        + ld(10, "Decision p1-decision-1 is created with placement p1 in namespace default")
        + ld(11, "Normal")
        + ld(12, ld(1, ""), ld(2, ""))
        + zero_time(13)
        + time_(14, GO_ZERO_INSTANT)  # the zero instant, spelt out, is zero too
        + num(15, 0)
    )
    got = protobuf.decode(envelope("events.k8s.io/v1", "Event", raw))
    assert got["eventTime"] == "2026-01-01T00:00:00.000007Z"
    assert got["regarding"] == {"kind": "Placement", "namespace": "default", "name": "p1", "uid": "uid-1",
                                "apiVersion": "cluster.open-cluster-management.io/v1beta1", "resourceVersion": "42"}
    assert got["note"].startswith("Decision p1-decision-1")
    assert (got["reportingController"], got["reportingInstance"], got["action"], got["reason"], got["type"]) == (
        "placementController", "placement-abc", "Scheduled", "DecisionCreate", "Normal")
    # zero times and counts are what JSON would leave out
    for absent in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "series", "related"):
        assert absent not in got
    assert got["deprecatedSource"] == {}


def test_a_core_event_from_the_legacy_recorder() -> None:
    raw = (
        meta("work.1", "cluster1")
        + ld(2, ld(1, "ManifestWork"), ld(2, "cluster1"), ld(3, "work"))
        + ld(3, "Applied")
        + ld(4, "applied")
        + ld(5, ld(1, "work-agent"), ld(2, "host-a"))
        + time_(6, T0)
        + time_(7, T0 + 60)
        + num(8, 3)
        + ld(9, "Normal")
        + zero_time(10)
        + ld(14, "")
        + ld(15, "")
    )
    got = protobuf.decode(envelope("v1", "Event", raw))
    assert got["involvedObject"] == {"kind": "ManifestWork", "namespace": "cluster1", "name": "work"}
    assert got["source"] == {"component": "work-agent", "host": "host-a"}
    assert (got["firstTimestamp"], got["lastTimestamp"], got["count"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", 3)
    assert "eventTime" not in got and "reportingComponent" not in got


def test_a_configmap_with_text_binary_and_empty_values() -> None:
    raw = meta("cm", "ns", entry(11, "app", "x")) + entry(2, "a", "1") + entry(2, "empty", "") + entry(3, "bin", b"\x00\xff") + num(4, 0)
    got = protobuf.decode(envelope("v1", "ConfigMap", raw))
    assert got["metadata"]["labels"] == {"app": "x"}
    assert got["data"] == {"a": "1", "empty": ""}
    assert got["binaryData"] == {"bin": "AP8="}
    assert got["immutable"] is False


def test_a_controller_revision_carries_its_data_as_json() -> None:
    raw = meta("r1", "ns") + ld(2, ld(1, b'{"spec":{"x":1}}')) + num(3, 2)
    got = protobuf.decode(envelope("apps/v1", "ControllerRevision", raw))
    assert got["data"] == {"spec": {"x": 1}} and got["revision"] == 2


def test_negative_numbers_take_ten_bytes_both_ways() -> None:
    raw = meta("o", "ns", num(10, -1))  # deletionGracePeriodSeconds
    assert protobuf.decode(envelope("v1", "ConfigMap", raw))["metadata"]["deletionGracePeriodSeconds"] == -1
    encoded = protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o", "deletionGracePeriodSeconds": -1}})
    _, _, cm = unenvelope(encoded)
    assert parse(one(cm, 1))[10] == [(1 << 64) - 1]


def test_delete_options_in_the_resources_group_version() -> None:
    raw = num(1, 0) + ld(2, ld(1, "uid-9")) + ld(4, "Foreground") + ld(5, "All")
    got = protobuf.decode_delete_options(envelope("coordination.k8s.io/v1", "DeleteOptions", raw))
    assert got == {"gracePeriodSeconds": 0, "preconditions": {"uid": "uid-9"}, "propagationPolicy": "Foreground", "dryRun": ["All"]}


def test_bad_bodies_are_400_and_custom_resources_415() -> None:
    with pytest.raises(ApiError) as err:
        protobuf.decode(b"k8s\x00\x0a\x05\x0a")
    assert err.value.code == 400 and "cannot be decoded" in err.value.message
    with pytest.raises(ApiError) as err:
        protobuf.decode(b'{"kind":"ConfigMap"}')
    assert err.value.code == 400
    with pytest.raises(ApiError) as err:
        protobuf.decode(envelope("cluster.open-cluster-management.io/v1beta1", "Placement", b""))
    assert err.value.code == 415


# responses --------------------------------------------------------------------------------------


def test_a_stored_secret_encodes_as_client_go_reads_it() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"b": "2", "a": "1"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "c", "controller": True}]},
        "type": "Opaque",
        "data": {"k": "aGVsbG8="},
    }
    api_version, kind, msg = unenvelope(protobuf.encode(secret))
    assert (api_version, kind) == ("v1", "Secret")
    m = parse(one(msg, 1))
    assert (text(m, 1), text(m, 3), text(m, 5), text(m, 6)) == ("s", "ns", "u", "7")
    assert parse(one(m, 8)) == {1: [T0]}
    assert list(map_entries(m, 11)) == ["a", "b"]  # map entries in key order, as Go writes them
    owner = parse(one(m, 13))
    assert (text(owner, 5), text(owner, 1), text(owner, 3), text(owner, 4), owner[6]) == ("v1", "ConfigMap", "cm", "c", [1])
    assert map_entries(msg, 2) == {"k": b"hello"} and text(msg, 3) == "Opaque"


def test_a_lease_list_with_list_metadata() -> None:
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "h", "renewTime": "2026-01-01T00:00:00.250000Z"}}
    listing = {"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
               "metadata": {"resourceVersion": "9", "continue": "c", "remainingItemCount": 0}, "items": [lease, lease]}
    _, kind, msg = unenvelope(protobuf.encode(listing))
    assert kind == "LeaseList"
    list_meta = parse(one(msg, 1))
    assert (text(list_meta, 2), text(list_meta, 3), list_meta[4]) == ("9", "c", [0])
    assert len(msg[2]) == 2
    item = msg[2][0]
    assert isinstance(item, bytes)
    spec = parse(one(parse(item), 2))
    assert text(spec, 1) == "h" and parse(one(spec, 4)) == {1: [T0], 2: [250_000_000]}


def test_a_status_error() -> None:
    status = ApiError(404, "NotFound", 'leases.coordination.k8s.io "x" not found',
                      details={"name": "x", "group": "coordination.k8s.io", "kind": "leases"}).status()
    api_version, kind, msg = unenvelope(protobuf.encode_status(status))
    assert (api_version, kind) == ("v1", "Status")
    assert (text(msg, 2), text(msg, 4), msg[6]) == ("Failure", "NotFound", [404])
    assert text(parse(one(msg, 5)), 3) == "leases"


def test_watch_frames_wrap_an_enveloped_object() -> None:
    obj = protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    stream = protobuf.watch_frame("ADDED", obj) + protobuf.watch_frame("DELETED", obj)
    first, second = frames(stream)
    event = parse(first)
    assert text(event, 1) == "ADDED"
    raw = parse(one(event, 2))  # RawExtension
    assert unenvelope(one(raw, 1))[:2] == ("v1", "ConfigMap")
    assert text(parse(second), 1) == "DELETED"


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "finalizers": ["f"]},
         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating", "conditions": [
             {"type": "NamespaceDeletionContentFailure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z",
              "reason": "ContentDeleted", "message": "done"}]}},
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
         "eventTime": "2026-01-01T00:00:00.000001Z", "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
         "regarding": {"kind": "Pod", "name": "p"}, "related": {"kind": "Node", "name": "n"}, "note": "n",
         "reportingController": "c", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Warning"},
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
         "spec": {"resourceAttributes": {"verb": "get", "resource": "pods",
                                         "labelSelector": {"rawSelector": "a=b", "requirements": [{"key": "a", "operator": "In", "values": ["b"]}]}},
                  "user": "u", "groups": ["g"], "extra": {"scopes": ["x", "y"]}, "uid": "1"},
         "status": {"allowed": True, "reason": "ok"}},
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
         "status": {"userInfo": {"username": "admin", "groups": ["system:masters"], "extra": {"k": ["v"]}}}},
        {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "x", "generation": 3}},
    ],
    ids=lambda o: o["kind"],
)
def test_round_trip(obj: dict[str, Any]) -> None:
    assert protobuf.decode(protobuf.encode(obj)) == obj


def test_every_project_crd_round_trips() -> None:
    """CustomResourceDefinitions are built in: their JSONSchemaProps (items, additionalProperties,
    x-kubernetes-*, enum, default) survive both directions."""
    for crd in generate_crds():
        obj = copy.deepcopy(crd)
        obj.setdefault("metadata", {})
        decoded = protobuf.decode(protobuf.encode(obj))
        # `preserveUnknownFields: false` is Go's omitempty zero value: JSON leaves it out
        assert obj["spec"].pop("preserveUnknownFields", False) is False
        assert decoded == obj, obj["metadata"].get("name")


def test_what_has_a_protobuf_form() -> None:
    for api_version, kind in [("v1", "Namespace"), ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Event"),
                              ("events.k8s.io/v1", "Event"), ("coordination.k8s.io/v1", "Lease"),
                              ("apps/v1", "ControllerRevision"), ("apps/v1", "ControllerRevisionList"),
                              ("apiextensions.k8s.io/v1", "CustomResourceDefinition"), ("v1", "Status"),
                              ("authorization.k8s.io/v1", "LocalSubjectAccessReview")]:
        assert protobuf.supports(api_version, kind), (api_version, kind)
    assert not protobuf.supports("cluster.open-cluster-management.io/v1beta1", "Placement")


# bodies captured from client-go --------------------------------------------------------------------


def test_captured_leader_election_leases() -> None:
    created = protobuf.decode(client_go_bodies.LEASE_CREATE)
    assert created["metadata"] == {"name": "placement-lock", "namespace": "open-cluster-management-hub"}
    assert created["spec"] == {
        "holderIdentity": "vm_55663365-6cce-4732-a187-afd1369a2b87",
        "leaseDurationSeconds": 137,
        "acquireTime": "2026-11-26T11:34:42.423524Z",
        "renewTime": "2026-11-26T11:34:42.423524Z",
        "leaseTransitions": 0,
    }
    renewed = protobuf.decode(client_go_bodies.LEASE_RENEW)
    assert renewed["metadata"]["resourceVersion"] == "38" and renewed["metadata"]["creationTimestamp"] == "2026-11-26T11:34:42Z"
    assert renewed["spec"]["renewTime"] == "2026-11-26T11:34:42.431149Z"
    released = protobuf.decode(client_go_bodies.LEASE_RELEASE)["spec"]
    assert (released["holderIdentity"], released["leaseDurationSeconds"]) == ("", 1)  # pointers: zero values kept


def test_captured_events() -> None:
    core = protobuf.decode(client_go_bodies.CORE_EVENT)
    assert (core["apiVersion"], core["kind"], core["reason"], core["count"]) == ("v1", "Event", "LeaderElection", 1)
    assert core["involvedObject"]["kind"] == "Lease" and core["source"] == {"component": "placement"}
    assert core["firstTimestamp"] == core["lastTimestamp"] == "2026-11-26T11:34:42Z"
    assert "eventTime" not in core  # written as an empty (zero) MicroTime
    new = protobuf.decode(client_go_bodies.EVENTS_V1_EVENT)
    assert (new["apiVersion"], new["reportingController"], new["action"]) == (
        "events.k8s.io/v1", "placement-controller", "DecisionCreated")
    assert new["eventTime"] == "2026-11-26T11:34:42.534549Z"
    assert new["related"]["kind"] == "PlacementDecision"
    assert "deprecatedFirstTimestamp" not in new and "deprecatedCount" not in new


def test_captured_configmap_and_delete_options() -> None:
    cm = protobuf.decode(client_go_bodies.CONFIGMAP_CREATE)
    assert cm["data"] == {"empty": "", "k": "v"} and cm["binaryData"] == {"b": "AAE="} and cm["immutable"] is False
    options = protobuf.decode_delete_options(client_go_bodies.LEASE_DELETE_OPTIONS)
    assert options["propagationPolicy"] == "Background" and set(options["preconditions"]) == {"uid"}
