"""Schema-driven translation between protobuf messages and their Kubernetes JSON form.

A `Message` lists its fields: number, JSON name and type (a scalar name, another `Message`, a
`MapOf`, or a `Custom` pair of functions for the few fields whose JSON form is not a plain
object, such as RawExtension or JSONSchemaPropsOrBool). `decode_message(message, bytes)`
gives the JSON dict; `encode_message(message, dict)` gives the bytes. The tables themselves live in
`ocm_rollout.sandbox.protobuf_kinds`.

Conventions, as Kubernetes' generated Go code and its JSON tags behave:
- decoding leaves out a scalar that holds its zero value (the JSON tags say `omitempty`)
  unless the field is marked `keep` (a Go pointer, or a field without `omitempty`);
  embedded messages are kept even when empty; a zero Time (an empty message, as Go writes it,
  or Go's zero instant, -62135596800 seconds) is left out, as JSON shows it as null;
- encoding writes what the dict holds (None and absent fields are not written), map entries
  in key order, fields in number order; keys the message does not know are dropped, as a typed
  Go client drops them.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.sandbox.protobuf_wire import (
    FIXED64,
    LENGTH,
    VARINT,
    ProtobufError,
    bytes_field,
    double_field,
    double_of,
    fields,
    signed64,
    varint_field,
)

STRING = "string"
BYTES = "bytes"  # base64 in JSON
INT32 = "int32"
INT64 = "int64"
BOOL = "bool"
DOUBLE = "double"
TIME = "time"  # metav1.Time: seconds only, JSON "2006-01-02T15:04:05Z"
MICROTIME = "microtime"  # metav1.MicroTime: JSON "2006-01-02T15:04:05.000000Z"

_SCALARS = frozenset({STRING, BYTES, INT32, INT64, BOOL, DOUBLE, TIME, MICROTIME})
_WIRE = {STRING: LENGTH, BYTES: LENGTH, INT32: VARINT, INT64: VARINT, BOOL: VARINT, DOUBLE: FIXED64,
         TIME: LENGTH, MICROTIME: LENGTH}
# time.Time{}.Unix() in Go: what a zero metav1.Time is written as.
GO_ZERO_TIME_SECONDS = -62135596800


@dataclass(frozen=True)
class Custom:
    """A message-typed field with its own JSON form: `encode` turns the JSON value into the
    message's bytes, `decode` the bytes into the JSON value (None: leave the field out)."""

    name: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]


class Message:
    """A protobuf message: its fields by number and by JSON name. `define` may come after
    construction so that messages can refer to themselves."""

    def __init__(self, name: str, fields_: list[Field] | None = None) -> None:
        self.name = name
        self.by_number: dict[int, Field] = {}
        self.ordered: list[Field] = []
        if fields_ is not None:
            self.define(fields_)

    def define(self, fields_: list[Field]) -> Message:
        self.ordered = sorted(fields_, key=lambda f: f.number)
        self.by_number = {f.number: f for f in self.ordered}
        if len(self.by_number) != len(self.ordered):
            raise ValueError(f"{self.name}: a field number is used twice")
        return self

    def __repr__(self) -> str:
        return f"Message({self.name})"


@dataclass(frozen=True)
class MapOf:
    """map<string, value>: on the wire, repeated entries {1: key, 2: value}."""

    value: str | Message | Custom


FieldType = str | Message | MapOf | Custom


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    type: FieldType = STRING
    repeated: bool = False
    keep: bool = False  # a zero value on the wire still shows in JSON

    def __post_init__(self) -> None:
        if isinstance(self.type, str) and self.type not in _SCALARS:
            raise ValueError(f"unknown scalar type {self.type!r}")


# time ---------------------------------------------------------------------------------------------

_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(text: str) -> tuple[int, int]:
    """(seconds since the epoch, nanoseconds) of an RFC 3339 time."""
    m = _TIME.match(text)
    if m is None:
        raise ProtobufError(f"{text!r} is not an RFC 3339 time")
    date, clock, fraction, zone = m.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError as exc:
        raise ProtobufError(f"{text!r} is not an RFC 3339 time") from exc
    nanos = int((fraction or "0").ljust(9, "0"))
    return int(moment.timestamp()), nanos


def format_time(seconds: int, nanos: int, *, micro: bool) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if micro:
        text += f".{nanos // 1000:06d}"
    return text + "Z"


def _encode_time(value: Any, micro: bool) -> bytes:
    if not isinstance(value, str):
        raise ProtobufError(f"expected a time string, got {type(value).__name__}")
    seconds, nanos = parse_time(value)
    out = varint_field(1, seconds)
    if micro and nanos // 1000:
        out += varint_field(2, nanos // 1000 * 1000)
    return out


def _decode_time(data: bytes, micro: bool) -> str | None:
    if not data:  # Go writes a zero Time as an empty message
        return None
    seconds = nanos = 0
    for n, wire, v in fields(data):
        if n == 1 and wire == VARINT:
            assert isinstance(v, int)
            seconds = signed64(v)
        elif n == 2 and wire == VARINT:
            assert isinstance(v, int)
            nanos = signed64(v)
    if seconds == GO_ZERO_TIME_SECONDS:
        return None
    try:
        return format_time(seconds, nanos if micro else 0, micro=micro)
    except (OverflowError, OSError, ValueError) as exc:
        raise ProtobufError(f"time {seconds}s out of range") from exc


# decoding -----------------------------------------------------------------------------------------


def _scalar(kind: str, wire: int, value: int | bytes, where: str) -> Any:
    expected = _WIRE[kind]
    if wire != expected:
        raise ProtobufError(f"{where}: wire type {wire}, expected {expected}")
    if kind == STRING:
        assert isinstance(value, bytes)
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtobufError(f"{where}: invalid UTF-8") from exc
    if kind == BYTES:
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()
    if kind in (INT32, INT64):
        assert isinstance(value, int)
        return signed64(value)
    if kind == BOOL:
        return bool(value)
    if kind == DOUBLE:
        assert isinstance(value, int)
        number = double_of(value)
        return int(number) if math.isfinite(number) and number.is_integer() else number
    assert isinstance(value, bytes)
    return _decode_time(value, kind == MICROTIME)


def _value(kind: str | Message | Custom, wire: int, value: int | bytes, where: str) -> Any:
    if isinstance(kind, str):
        return _scalar(kind, wire, value, where)
    if wire != LENGTH or not isinstance(value, bytes):
        raise ProtobufError(f"{where}: expected an embedded message")
    if isinstance(kind, Message):
        return decode_message(kind, value, where)
    return kind.decode(value)


def _zero(value: Any) -> bool:
    return value is None or value == "" or value == 0 or value is False


def _map_entry(kind: str | Message | Custom, data: bytes, where: str) -> tuple[str, Any]:
    key = ""
    value: Any = None
    seen_value = False
    for n, wire, v in fields(data):
        if n == 1:
            key = _scalar(STRING, wire, v, f"{where} key")
        elif n == 2:
            value = _value(kind, wire, v, f"{where}[{key}]")
            seen_value = True
    if not seen_value:  # an entry with the zero value leaves it out
        if isinstance(kind, Message):
            value = {}
        elif kind in (STRING, BYTES):
            value = ""
        elif isinstance(kind, str):
            value = False if kind == BOOL else 0
    return key, value


def decode_message(message: Message, data: bytes, where: str = "") -> dict[str, Any]:
    """The JSON form of the message `data` holds; unknown field numbers are skipped."""
    out: dict[str, Any] = {}
    where = where or message.name
    for number, wire, value in fields(data):
        field = message.by_number.get(number)
        if field is None:
            continue
        at = f"{where}.{field.name}"
        if isinstance(field.type, MapOf):
            if wire != LENGTH or not isinstance(value, bytes):
                raise ProtobufError(f"{at}: expected a map entry")
            key, got = _map_entry(field.type.value, value, at)
            if got is not None:
                out.setdefault(field.name, {})[key] = got
            continue
        got = _value(field.type, wire, value, at)
        if field.repeated:
            if got is not None:
                out.setdefault(field.name, []).append(got)
        elif got is None or (isinstance(field.type, str) and not field.keep and _zero(got)):
            out.pop(field.name, None)
        else:
            out[field.name] = got
    return out


# encoding -----------------------------------------------------------------------------------------


def _encode_scalar(kind: str, number: int, value: Any, where: str) -> bytes:
    if kind == STRING:
        if not isinstance(value, str):
            raise ProtobufError(f"{where}: expected a string, got {type(value).__name__}")
        return bytes_field(number, value.encode("utf-8"))
    if kind == BYTES:
        if not isinstance(value, str):
            raise ProtobufError(f"{where}: expected base64 text, got {type(value).__name__}")
        try:
            return bytes_field(number, base64.b64decode(value, validate=True))
        except ValueError as exc:
            raise ProtobufError(f"{where}: invalid base64") from exc
    if kind in (INT32, INT64):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProtobufError(f"{where}: expected an integer, got {type(value).__name__}")
        return varint_field(number, value)
    if kind == BOOL:
        if not isinstance(value, bool):
            raise ProtobufError(f"{where}: expected a boolean, got {type(value).__name__}")
        return varint_field(number, int(value))
    if kind == DOUBLE:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ProtobufError(f"{where}: expected a number, got {type(value).__name__}")
        return double_field(number, float(value))
    try:
        return bytes_field(number, _encode_time(value, kind == MICROTIME))
    except ProtobufError as exc:
        raise ProtobufError(f"{where}: {exc}") from exc


def _encode_value(kind: str | Message | Custom, number: int, value: Any, where: str) -> bytes:
    if isinstance(kind, str):
        return _encode_scalar(kind, number, value, where)
    if isinstance(kind, Message):
        if not isinstance(value, dict):
            raise ProtobufError(f"{where}: expected an object, got {type(value).__name__}")
        return bytes_field(number, encode_message(kind, value, where))
    return bytes_field(number, kind.encode(value))


def encode_message(message: Message, obj: dict[str, Any], where: str = "") -> bytes:
    """The message bytes of the JSON dict `obj`."""
    out = bytearray()
    where = where or message.name
    for field in message.ordered:
        value = obj.get(field.name)
        if value is None:
            continue
        at = f"{where}.{field.name}"
        if isinstance(field.type, MapOf):
            if not isinstance(value, dict):
                raise ProtobufError(f"{at}: expected an object, got {type(value).__name__}")
            for key in sorted(value):
                if value[key] is None:
                    continue
                entry = bytes_field(1, str(key).encode("utf-8")) + _encode_value(field.type.value, 2, value[key], f"{at}[{key}]")
                out += bytes_field(field.number, entry)
        elif field.repeated:
            if not isinstance(value, list):
                raise ProtobufError(f"{at}: expected a list, got {type(value).__name__}")
            for i, item in enumerate(value):
                if item is not None:
                    out += _encode_value(field.type, field.number, item, f"{at}[{i}]")
        else:
            out += _encode_value(field.type, field.number, value, at)
    return bytes(out)


# helpers for Custom fields ------------------------------------------------------------------------


def raw_json(name: str) -> Custom:
    """A message whose field 1 holds raw JSON bytes (runtime.RawExtension, apiextensions JSON,
    FieldsV1): the JSON form is the embedded value itself."""

    def enc(value: Any) -> bytes:
        return bytes_field(1, json.dumps(value, separators=(",", ":")).encode())

    def dec(data: bytes) -> Any:
        raw = b""
        for n, wire, v in fields(data):
            if n == 1 and wire == LENGTH and isinstance(v, bytes):
                raw = v
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ProtobufError(f"{name}: the embedded value is not JSON") from exc

    return Custom(name, enc, dec)


def string_list(name: str) -> Custom:
    """A message whose repeated field 1 holds strings, shown in JSON as the list itself."""

    def enc(value: Any) -> bytes:
        if not isinstance(value, list):
            raise ProtobufError(f"{name}: expected a list of strings")
        return b"".join(_encode_scalar(STRING, 1, item, name) for item in value)

    def dec(data: bytes) -> list[str]:
        return [_scalar(STRING, wire, v, name) for n, wire, v in fields(data) if n == 1]

    return Custom(name, enc, dec)


def list_of(item: Message, list_meta: Message) -> Message:
    """`<Kind>List`: {1: ListMeta metadata, 2: repeated items}."""
    return Message(f"{item.name}List", [Field(1, "metadata", list_meta), Field(2, "items", item, repeated=True)])
