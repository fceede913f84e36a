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


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    return value.decode("utf-8")


def _map_entry(value: int | bytes) -> tuple[str, bytes]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, val = "", b""
    for n, v in fields(value):
        if n == 1:
            key = _text(v)
        elif n == 2 and isinstance(v, bytes):
            val = v
    return key, val


def _time(value: int | bytes) -> str | None:
    from datetime import UTC, datetime

    if not isinstance(value, bytes):
        return None
    seconds = 0
    for n, v in fields(value):
        if n == 1 and isinstance(v, int):
            seconds = v
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner_reference(value: int | bytes) -> dict[str, Any]:
    names = {5: "apiVersion", 1: "kind", 3: "name", 4: "uid"}
    out: dict[str, Any] = {}
    if not isinstance(value, bytes):
        raise ProtobufError("expected an owner reference")
    for n, v in fields(value):
        if n in names:
            out[names[n]] = _text(v)
        elif n == 6:
            out["controller"] = bool(v)
        elif n == 7:
            out["blockOwnerDeletion"] = bool(v)
    return out


def object_meta(data: bytes) -> dict[str, Any]:
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: dict[str, Any] = {}
    for n, v in fields(data):
        if n in strings:
            text = _text(v)
            if text:
                meta[strings[n]] = text
        elif n == 7 and isinstance(v, int) and v:
            meta["generation"] = v
        elif n in (11, 12):
            key, val = _map_entry(v)
            meta.setdefault("labels" if n == 11 else "annotations", {})[key] = val.decode("utf-8")
        elif n == 13:
            meta.setdefault("ownerReferences", []).append(_owner_reference(v))
        elif n == 14:
            meta.setdefault("finalizers", []).append(_text(v))
        elif n == 8:
            stamp = _time(v)
            if stamp:
                meta["creationTimestamp"] = stamp
    return meta


def _namespace(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2 and isinstance(v, bytes):
            finalizers = [_text(f) for k, f in fields(v) if k == 1]
            if finalizers:
                obj["spec"] = {"finalizers": finalizers}
    return obj


def _configmap(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2:
            key, val = _map_entry(v)
            obj.setdefault("data", {})[key] = val.decode("utf-8")
        elif n == 3:
            key, val = _map_entry(v)
            obj.setdefault("binaryData", {})[key] = base64.b64encode(val).decode()
        elif n == 4:
            obj["immutable"] = bool(v)
    return obj


def _secret(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2:
            key, val = _map_entry(v)
            obj.setdefault("data", {})[key] = base64.b64encode(val).decode()
        elif n == 3:
            text = _text(v)
            if text:
                obj["type"] = text
        elif n == 4:
            key, val = _map_entry(v)
            obj.setdefault("stringData", {})[key] = val.decode("utf-8")
        elif n == 5:
            obj["immutable"] = bool(v)
    return obj


def _strings(data: bytes, names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n, v in fields(data):
        if n in names:
            text = _text(v)
            if text:
                out[names[n]] = text
    return out


_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


def _review(data: bytes) -> dict[str, Any]:
    """SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectReview (metadata and spec)."""
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2 and isinstance(v, bytes):
            spec: dict[str, Any] = {}
            for m, w in fields(v):
                if m == 1 and isinstance(w, bytes):
                    spec["resourceAttributes"] = _strings(w, _RESOURCE_ATTRIBUTES)
                elif m == 2 and isinstance(w, bytes):
                    spec["nonResourceAttributes"] = _strings(w, _NON_RESOURCE_ATTRIBUTES)
                elif m == 3:
                    spec["user"] = _text(w)
                elif m == 4:
                    spec.setdefault("groups", []).append(_text(w))
                elif m == 6:
                    spec["uid"] = _text(w)
            obj["spec"] = spec
    return obj


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
