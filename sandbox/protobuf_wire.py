"""The protobuf wire format: what flows through here is bytes and (field number, value) pairs.

Reading yields each field of a message as (number, wire type, value): varints and fixed-size
numbers as unsigned ints, length-delimited fields as bytes. Writing builds a message from
tagged fields. Kubernetes' generated messages use only varints (int32, int64, bool, enum-like
strings are not used), 64-bit doubles and length-delimited fields (strings, bytes, embedded
messages, map entries), so that is what this module supports; groups are refused.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT = 0
FIXED64 = 1
LENGTH = 2
FIXED32 = 5

_U64 = 1 << 64
_MAX_VARINT_BYTES = 10  # a varint carries at most 64 bits


class ProtobufError(ValueError):
    """The bytes are not a well-formed protobuf message (or not the one expected)."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return result & (_U64 - 1), pos
    raise ProtobufError("varint longer than 10 bytes")


def signed64(value: int) -> int:
    """An int32/int64 field's value: varints carry negative numbers in two's complement."""
    return value - _U64 if value >= 1 << 63 else value


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field of a message, in wire order."""
    pos = 0
    end = len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("field number 0")
        if wire == VARINT:
            value, pos = read_varint(data, pos)
            yield number, wire, value
        elif wire == LENGTH:
            size, pos = read_varint(data, pos)
            if pos + size > end:
                raise ProtobufError(f"field {number} runs past the end of the message")
            yield number, wire, data[pos : pos + size]
            pos += size
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > end:
                raise ProtobufError(f"field {number} runs past the end of the message")
            yield number, wire, int.from_bytes(data[pos : pos + width], "little")
            pos += width
        else:
            raise ProtobufError(f"unsupported wire type {wire} (field {number})")


def double_of(bits: int) -> float:
    """The float64 whose IEEE-754 bits a fixed64 field carried."""
    value: float = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    return value


def write_varint(value: int) -> bytes:
    if value < 0:
        value += _U64  # int32 and int64 negatives take ten bytes, as Go writes them
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return write_varint((number << 3) | wire)


def varint_field(number: int, value: int) -> bytes:
    return tag(number, VARINT) + write_varint(value)


def bytes_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes, an embedded message or a map entry."""
    return tag(number, LENGTH) + write_varint(len(payload)) + payload


def double_field(number: int, value: float) -> bytes:
    return tag(number, FIXED64) + struct.pack("<d", value)


def frame(payload: bytes) -> bytes:
    """One length-delimited frame of a stream (a 4-byte big-endian size, then the bytes), as
    Kubernetes frames protobuf watch events."""
    return len(payload).to_bytes(4, "big") + payload
