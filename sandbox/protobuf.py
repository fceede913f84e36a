"""Kubernetes protobuf bodies: what flows through here is request and response bytes.

client-go sends and prefers `application/vnd.kubernetes.protobuf` for built-in kinds. Such a
body is `k8s\\0` followed by a runtime.Unknown message: {1: TypeMeta{1: apiVersion, 2: kind},
2: the object's message, 3: contentEncoding, 4: contentType}. A protobuf watch
(`...;stream=watch`) is a stream of frames, each a 4-byte big-endian length and a bare
metav1.WatchEvent {1: type, 2: RawExtension{1: the enveloped object}}.

The kinds' messages are in `ocm_rollout.sandbox.protobuf_kinds`, the generic translation in
`ocm_rollout.sandbox.protobuf_schema`, the wire format in `ocm_rollout.sandbox.protobuf_wire`.
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.errors import ApiError
from ocm_rollout.sandbox.protobuf_kinds import DELETE_OPTIONS, KINDS, STATUS
from ocm_rollout.sandbox.protobuf_schema import Message, decode_message, encode_message
from ocm_rollout.sandbox.protobuf_wire import ProtobufError, bytes_field, fields, frame

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_CONTENT_TYPE = f"{CONTENT_TYPE};stream=watch"

def supports(api_version: str, kind: str) -> bool:
    """Whether objects of this kind can be written and read as protobuf."""
    return (api_version, kind) in KINDS


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = bytes_field(1, api_version.encode()) + bytes_field(2, kind.encode())
    # Go writes the empty contentEncoding and contentType too.
    return MAGIC + bytes_field(1, type_meta) + bytes_field(2, raw) + bytes_field(3, b"") + bytes_field(4, b"")


def open_envelope(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, the object's message) of an enveloped body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf envelope (k8s\\0)")
    api_version = kind = ""
    raw = b""
    for n, _, v in fields(body[len(MAGIC) :]):
        if n == 1 and isinstance(v, bytes):
            for m, _, w in fields(v):
                if m == 1 and isinstance(w, bytes):
                    api_version = w.decode("utf-8", "replace")
                elif m == 2 and isinstance(w, bytes):
                    kind = w.decode("utf-8", "replace")
        elif n == 2 and isinstance(v, bytes):
            raw = v
        elif n == 3 and isinstance(v, bytes) and v:
            raise ProtobufError(f"content encoding {v.decode('utf-8', 'replace')!r} is not supported")
    return api_version, kind, raw


def _bad_body(exc: ProtobufError) -> ApiError:
    return ApiError(400, "BadRequest", f"the protobuf request body cannot be decoded: {exc}")


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf request body; 400 when malformed, 415 for a kind the hub
    has no protobuf form of (custom resources: kube-apiserver reads them as JSON or YAML only)."""
    try:
        api_version, kind, raw = open_envelope(body)
        message = KINDS.get((api_version, kind))
        if message is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - {api_version} {kind} has no protobuf form; "
                "accepted media types include: application/json, application/yaml",
            )
        obj = decode_message(message, raw)
    except ProtobufError as exc:
        raise _bad_body(exc) from exc
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj


def decode_delete_options(body: bytes) -> dict[str, Any]:
    """DeleteOptions, which client-go encodes under the group version of the resource."""
    try:
        _, kind, raw = open_envelope(body)
        if kind != "DeleteOptions":
            raise ProtobufError(f"expected DeleteOptions, got {kind or 'no kind'}")
        return decode_message(DELETE_OPTIONS, raw)
    except ProtobufError as exc:
        raise _bad_body(exc) from exc


def message_for(api_version: str, kind: str) -> Message:
    message = KINDS.get((api_version, kind))
    if message is None:
        raise ProtobufError(f"{api_version} {kind} has no protobuf form")
    return message


def encode(obj: dict[str, Any], api_version: str | None = None, kind: str | None = None) -> bytes:
    """The enveloped protobuf form of a JSON object (its own apiVersion and kind unless given)."""
    api_version = api_version or str(obj.get("apiVersion") or "")
    kind = kind or str(obj.get("kind") or "")
    return envelope(api_version, kind, encode_message(message_for(api_version, kind), obj))


def encode_status(status: dict[str, Any]) -> bytes:
    return envelope("v1", "Status", encode_message(STATUS, status))


def watch_frame(event_type: str, enveloped: bytes) -> bytes:
    """One frame of a protobuf watch stream carrying an already enveloped object."""
    event = bytes_field(1, event_type.encode()) + bytes_field(2, bytes_field(1, enveloped))
    return frame(event)
