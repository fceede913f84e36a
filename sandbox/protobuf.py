"""Decoding of the Kubernetes protobuf request bodies kubectl sends for built-in kinds.

kubectl's imperative generators (`kubectl create namespace|configmap|secret`) use typed
clients that POST `application/vnd.kubernetes.protobuf`. The hub answers in JSON (those
clients accept it) but must read these bodies: the envelope (`k8s\\0` + runtime.Unknown) and
the messages of Namespace, ConfigMap, Secret and the access reviews (`kubectl auth can-i`,
`kubectl auth whoami`) with their ObjectMeta.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from sandbox.errors import ApiError

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs; length-delimited values as bytes, others as ints."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 1:
            yield number, int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            yield number, int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


Value = int | bytes
# Puts what one field holds into the object being decoded.
Setter = Callable[[dict[str, Any], Value], None]


def _text(value: Value) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    return value.decode("utf-8")


def _map_entry(value: Value) -> tuple[str, bytes]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, val = "", b""
    for n, v in fields(value):
        if n == 1:
            key = _text(v)
        elif n == 2 and isinstance(v, bytes):
            val = v
    return key, val


def _time(value: Value) -> str | None:
    if not isinstance(value, bytes):
        return None
    seconds = 0
    for n, v in fields(value):
        if n == 1 and isinstance(v, int):
            seconds = v
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(value: Value) -> int:
    return value if isinstance(value, int) else 0


def _utf8(value: bytes) -> str:
    return value.decode("utf-8")


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _message(spec: dict[int, Setter], what: str = "a message") -> Callable[[Value], dict[str, Any]]:
    """A decoder for a message: each field number `spec` knows is put by its setter, others skipped."""

    def decode(data: Value) -> dict[str, Any]:
        if not isinstance(data, bytes):
            raise ProtobufError(f"expected {what}")
        out: dict[str, Any] = {}
        for n, v in fields(data):
            put = spec.get(n)
            if put is not None:
                put(out, v)
        return out

    return decode


def _set(name: str, convert: Callable[[Value], Any], *, omit_empty: bool = False) -> Setter:
    def put(out: dict[str, Any], value: Value) -> None:
        got = convert(value)
        if got or not omit_empty:
            out[name] = got

    return put


def _string(name: str) -> Setter:
    """A string field, left out when empty (proto3 default)."""
    return _set(name, _text, omit_empty=True)


def _nested(name: str, decode: Callable[[Value], dict[str, Any]], *, omit_empty: bool = False) -> Setter:
    """An embedded message (a field that is not length-delimited is skipped)."""

    def put(out: dict[str, Any], value: Value) -> None:
        if isinstance(value, bytes):
            got = decode(value)
            if got or not omit_empty:
                out[name] = got

    return put


def _entry(name: str, convert: Callable[[bytes], str]) -> Setter:
    """One entry of a map<string, ...> field."""

    def put(out: dict[str, Any], value: Value) -> None:
        key, val = _map_entry(value)
        out.setdefault(name, {})[key] = convert(val)

    return put


def _append(name: str, convert: Callable[[Value], Any]) -> Setter:
    """One element of a repeated field."""

    def put(out: dict[str, Any], value: Value) -> None:
        out.setdefault(name, []).append(convert(value))

    return put


_owner_reference = _message(
    {5: _set("apiVersion", _text), 1: _set("kind", _text), 3: _set("name", _text), 4: _set("uid", _text),
     6: _set("controller", bool), 7: _set("blockOwnerDeletion", bool)},
    "an owner reference",
)
object_meta = _message(
    {1: _string("name"), 2: _string("generateName"), 3: _string("namespace"), 5: _string("uid"),
     6: _string("resourceVersion"), 7: _set("generation", _count, omit_empty=True),
     8: _set("creationTimestamp", _time, omit_empty=True), 11: _entry("labels", _utf8),
     12: _entry("annotations", _utf8), 13: _append("ownerReferences", _owner_reference),
     14: _append("finalizers", _text)}
)
_METADATA = _nested("metadata", object_meta)

_namespace = _message({1: _METADATA, 2: _nested("spec", _message({1: _append("finalizers", _text)}), omit_empty=True)})
_configmap = _message(
    {1: _METADATA, 2: _entry("data", _utf8), 3: _entry("binaryData", _base64), 4: _set("immutable", bool)}
)
_secret = _message(
    {1: _METADATA, 2: _entry("data", _base64), 3: _string("type"), 4: _entry("stringData", _utf8),
     5: _set("immutable", bool)}
)
_RESOURCE_ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
_review_spec = _message(
    {1: _nested("resourceAttributes", _message({n: _string(a) for n, a in enumerate(_RESOURCE_ATTRIBUTES, 1)})),
     2: _nested("nonResourceAttributes", _message({1: _string("path"), 2: _string("verb")})),
     3: _set("user", _text), 4: _append("groups", _text), 6: _set("uid", _text)}
)
# SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectReview (metadata and spec).
_review = _message({1: _METADATA, 2: _nested("spec", _review_spec)})


DECODERS: dict[tuple[str, str], Callable[[bytes], dict[str, Any]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _review,
    ("authorization.k8s.io/v1", "SubjectAccessReview"): _review,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): _review,
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object, or a 415 ApiError for kinds not supported."""
    try:
        if not body.startswith(MAGIC):
            raise ProtobufError("missing the k8s protobuf envelope")
        api_version = kind = ""
        raw = b""
        for n, v in fields(body[len(MAGIC) :]):
            if n == 1 and isinstance(v, bytes):
                for m, w in fields(v):
                    if m == 1:
                        api_version = _text(w)
                    elif m == 2:
                        kind = _text(w)
            elif n == 2 and isinstance(v, bytes):
                raw = v
        decoder = DECODERS.get((api_version, kind))
        if decoder is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the local hub reads protobuf bodies only for Namespace, ConfigMap, Secret and access reviews, "
                f"not {api_version} {kind}; "
                "send application/json",
            )
        obj = decoder(raw)
    except ProtobufError as exc:
        raise ApiError(400, "BadRequest", f"the protobuf request body cannot be decoded: {exc}") from exc
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj
