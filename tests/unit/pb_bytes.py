"""A minimal protobuf writer and reader for tests, independent of ocm_rollout.sandbox.protobuf*.

It builds the bytes client-go sends (field by field, by hand, from the numbers in
k8s.io/api's generated.proto) and takes apart the bytes the hub answers, so the tests do not
check the hub's codec against itself. No schema: a message reads back as
{field number: [values]} with length-delimited values as bytes.
"""

from __future__ import annotations

from collections import defaultdict

GO_ZERO_INSTANT = -62135596800  # time.Time{}.Unix()


def uvarint(n: int) -> bytes:
    if n < 0:
        n &= (1 << 64) - 1
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def num(field: int, value: int) -> bytes:
    """A varint field (int32, int64, bool)."""
    return uvarint(field << 3) + uvarint(value)


def ld(field: int, *parts: bytes | str) -> bytes:
    """A length-delimited field holding a string or the concatenation of encoded fields."""
    payload = b"".join(p.encode() if isinstance(p, str) else p for p in parts)
    return uvarint(field << 3 | 2) + uvarint(len(payload)) + payload


def entry(field: int, key: str, value: bytes | str) -> bytes:
    """One map<string, string|bytes> entry."""
    return ld(field, ld(1, key), ld(2, value))


def time_(field: int, seconds: int, nanos: int = 0) -> bytes:
    """A metav1.Time / MicroTime field."""
    return ld(field, num(1, seconds), *([num(2, nanos)] if nanos else []))


def zero_time(field: int) -> bytes:
    """An unset (zero) metav1.Time / MicroTime: Go writes an empty message."""
    return ld(field)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """`k8s\\0` + runtime.Unknown, as client-go's protobuf serializer writes a body."""
    return b"k8s\x00" + ld(1, ld(1, api_version), ld(2, kind)) + ld(2, raw) + ld(3, "") + ld(4, "")


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def parse(data: bytes) -> dict[int, list[int | bytes]]:
    out: dict[int, list[int | bytes]] = defaultdict(list)
    pos = 0
    while pos < len(data):
        key, pos = _read_uvarint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_uvarint(data, pos)
            out[field].append(value)
        elif wire == 2:
            size, pos = _read_uvarint(data, pos)
            out[field].append(data[pos : pos + size])
            pos += size
        elif wire == 1:
            out[field].append(int.from_bytes(data[pos : pos + 8], "little"))
            pos += 8
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return dict(out)


def one(msg: dict[int, list[int | bytes]], field: int) -> bytes:
    values = msg[field]
    assert len(values) == 1 and isinstance(values[0], bytes), values
    return values[0]


def text(msg: dict[int, list[int | bytes]], field: int) -> str:
    return one(msg, field).decode()


def unenvelope(body: bytes) -> tuple[str, str, dict[int, list[int | bytes]]]:
    """(apiVersion, kind, the object's fields) of an enveloped response body."""
    assert body[:4] == b"k8s\x00", body[:16]
    unknown = parse(body[4:])
    type_meta = parse(one(unknown, 1))
    return text(type_meta, 1), text(type_meta, 2), parse(one(unknown, 2))


def map_entries(msg: dict[int, list[int | bytes]], field: int) -> dict[str, bytes]:
    out = {}
    for raw in msg.get(field, []):
        assert isinstance(raw, bytes)
        e = parse(raw)
        out[text(e, 1)] = one(e, 2) if 2 in e else b""
    return out


def frames(stream: bytes) -> list[bytes]:
    """The payloads of a length-prefixed (4-byte big-endian) frame stream."""
    out, pos = [], 0
    while pos < len(stream):
        size = int.from_bytes(stream[pos : pos + 4], "big")
        out.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    assert pos == len(stream), "a frame is cut short"
    return out
