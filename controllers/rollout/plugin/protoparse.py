"""A reader for the small part of proto3 that ``rollout_plugin.proto`` uses, producing the
``FileDescriptorProto`` protoc would (so the message classes come from the ``.proto`` text itself,
with no generated code in the repository).

Understood: comments, ``syntax = "proto3";``, ``package``, ``import``, ``message`` (nested
messages and enums), ``enum``, ``service`` with unary ``rpc``s, and fields that are scalars,
messages or enums, singular or ``repeated``. Anything else (options, ``oneof``, ``map``,
streaming, proto2) is refused with the line it is on. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto

SCALARS: dict[str, int] = {
    "double": FDP.TYPE_DOUBLE,
    "float": FDP.TYPE_FLOAT,
    "int64": FDP.TYPE_INT64,
    "uint64": FDP.TYPE_UINT64,
    "int32": FDP.TYPE_INT32,
    "fixed64": FDP.TYPE_FIXED64,
    "fixed32": FDP.TYPE_FIXED32,
    "bool": FDP.TYPE_BOOL,
    "string": FDP.TYPE_STRING,
    "bytes": FDP.TYPE_BYTES,
    "uint32": FDP.TYPE_UINT32,
    "sfixed32": FDP.TYPE_SFIXED32,
    "sfixed64": FDP.TYPE_SFIXED64,
    "sint32": FDP.TYPE_SINT32,
    "sint64": FDP.TYPE_SINT64,
}

_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<line>//[^\n]*)|(?P<block>/\*.*?\*/)|(?P<string>"[^"\n]*")"""
    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)|(?P<number>-?[0-9]+)|(?P<punct>[{}();=])""",
    re.DOTALL,
)


class ProtoSyntaxError(ValueError):
    """The text is not the proto3 subset this reader understands."""


@dataclass(frozen=True)
class _Tok:
    text: str
    line: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos, line = 0, 1
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ProtoSyntaxError(f"line {line}: unexpected character {text[pos]!r}")
        kind = match.lastgroup
        if kind not in ("space", "line", "block"):
            out.append(_Tok(match.group(), line))
        line += match.group().count("\n")
        pos = match.end()
    return out


def json_name(name: str) -> str:
    """protoc's default JSON name: underscores dropped, the letter after each one upper-cased."""
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.toks[self.pos].text if self.pos < len(self.toks) else None

    def line(self) -> int:
        return self.toks[min(self.pos, len(self.toks) - 1)].line if self.toks else 1

    def take(self, expected: str | None = None) -> str:
        if self.pos >= len(self.toks):
            raise ProtoSyntaxError(f"line {self.line()}: unexpected end of file")
        tok = self.toks[self.pos]
        if expected is not None and tok.text != expected:
            raise ProtoSyntaxError(f"line {tok.line}: expected {expected!r}, found {tok.text!r}")
        self.pos += 1
        return tok.text

    def ident(self) -> str:
        line = self.line()
        word = self.take()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", word):
            raise ProtoSyntaxError(f"line {line}: expected a name, found {word!r}")
        return word

    def number(self) -> int:
        line = self.line()
        word = self.take()
        if not re.fullmatch(r"-?[0-9]+", word):
            raise ProtoSyntaxError(f"line {line}: expected a number, found {word!r}")
        return int(word)

    def string(self) -> str:
        line = self.line()
        word = self.take()
        if not (word.startswith('"') and word.endswith('"')):
            raise ProtoSyntaxError(f"line {line}: expected a quoted string, found {word!r}")
        return word[1:-1]


def parse(
    text: str, name: str, imports: Iterable[descriptor_pb2.FileDescriptorProto] = ()
) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of ``text`` (its file name in the pool: ``name``). ``imports``
    are the descriptors of the files it imports (for the names their types have)."""
    reader = _Reader(text)
    fdp = descriptor_pb2.FileDescriptorProto(name=name)
    unresolved: list[tuple[descriptor_pb2.FieldDescriptorProto, str, str, int]] = []
    methods: list[tuple[descriptor_pb2.MethodDescriptorProto, str, str, int]] = []
    reader.take("syntax")
    reader.take("=")
    if reader.string() != "proto3":
        raise ProtoSyntaxError("only proto3 is understood")
    reader.take(";")
    fdp.syntax = "proto3"
    while reader.peek() is not None:
        line = reader.line()
        word = reader.take()
        if word == "package":
            fdp.package = reader.ident()
            reader.take(";")
        elif word == "import":
            fdp.dependency.append(reader.string())
            reader.take(";")
        elif word == "message":
            _message(reader, fdp.message_type.add(), fdp.package, unresolved)
        elif word == "enum":
            _enum(reader, fdp.enum_type.add())
        elif word == "service":
            service = fdp.service.add(name=reader.ident())
            reader.take("{")
            while reader.peek() != "}":
                mline = reader.line()
                reader.take("rpc")
                method = service.method.add(name=reader.ident())
                reader.take("(")
                request = reader.ident()
                reader.take(")")
                reader.take("returns")
                reader.take("(")
                response = reader.ident()
                reader.take(")")
                reader.take(";")
                methods.append((method, request, response, mline))
            reader.take("}")
        else:
            raise ProtoSyntaxError(f"line {line}: unexpected {word!r}")
    known = _declared(fdp)
    for imported in imports:
        if imported.name not in fdp.dependency:
            continue
        known.update(_declared(imported))
    scope0 = f".{fdp.package}" if fdp.package else ""
    for field, type_name, scope, line in unresolved:
        full, kind = _resolve(type_name, scope, known, line)
        field.type_name = full
        field.type = FDP.TYPE_MESSAGE if kind == "message" else FDP.TYPE_ENUM
    for method, request, response, line in methods:
        for attr, type_name in (("input_type", request), ("output_type", response)):
            full, kind = _resolve(type_name, scope0, known, line)
            if kind != "message":
                raise ProtoSyntaxError(f"line {line}: {type_name} is not a message")
            setattr(method, attr, full)
    return fdp


def _message(
    reader: _Reader,
    msg: descriptor_pb2.DescriptorProto,
    scope: str,
    unresolved: list[tuple[descriptor_pb2.FieldDescriptorProto, str, str, int]],
) -> None:
    msg.name = reader.ident()
    inner = f"{scope}.{msg.name}" if scope else msg.name
    reader.take("{")
    while reader.peek() != "}":
        line = reader.line()
        word = reader.take()
        if word == "message":
            _message(reader, msg.nested_type.add(), inner, unresolved)
            continue
        if word == "enum":
            _enum(reader, msg.enum_type.add())
            continue
        if word in ("oneof", "map", "option", "reserved", "extensions", "optional", "required", "group"):
            raise ProtoSyntaxError(f"line {line}: {word!r} is not supported by this reader")
        label = FDP.LABEL_OPTIONAL
        type_name = word
        if word == "repeated":
            label = FDP.LABEL_REPEATED
            type_name = reader.ident()
        field = msg.field.add(name=reader.ident(), label=label)
        reader.take("=")
        field.number = reader.number()
        reader.take(";")
        field.json_name = json_name(field.name)
        if type_name in SCALARS:
            field.type = SCALARS[type_name]
        else:
            unresolved.append((field, type_name, "." + inner, line))
    reader.take("}")


def _enum(reader: _Reader, enum: descriptor_pb2.EnumDescriptorProto) -> None:
    enum.name = reader.ident()
    reader.take("{")
    while reader.peek() != "}":
        value = enum.value.add(name=reader.ident())
        reader.take("=")
        value.number = reader.number()
        reader.take(";")
    reader.take("}")
    if not enum.value or enum.value[0].number != 0:
        raise ProtoSyntaxError(f"enum {enum.name}: the first value must be 0 in proto3")


def _declared(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    """Fully-qualified type name (leading dot) -> "message" or "enum"."""
    out: dict[str, str] = {}
    prefix = f".{fdp.package}" if fdp.package else ""

    def walk(msgs: Iterable[descriptor_pb2.DescriptorProto], scope: str) -> None:
        for msg in msgs:
            full = f"{scope}.{msg.name}"
            out[full] = "message"
            for enum in msg.enum_type:
                out[f"{full}.{enum.name}"] = "enum"
            walk(msg.nested_type, full)

    walk(fdp.message_type, prefix)
    for enum in fdp.enum_type:
        out[f"{prefix}.{enum.name}"] = "enum"
    return out


def _resolve(type_name: str, scope: str, known: dict[str, str], line: int) -> tuple[str, str]:
    """protoc's lookup: a leading dot is absolute; otherwise the innermost enclosing scope first."""
    if type_name.startswith("."):
        if type_name in known:
            return type_name, known[type_name]
        raise ProtoSyntaxError(f"line {line}: unknown type {type_name!r}")
    parts = scope.split(".") if scope else [""]
    for end in range(len(parts), 0, -1):
        candidate = ".".join([*parts[:end], type_name])
        if not candidate.startswith("."):
            candidate = "." + candidate
        if candidate in known:
            return candidate, known[candidate]
    if "." + type_name in known:
        return "." + type_name, known["." + type_name]
    raise ProtoSyntaxError(f"line {line}: unknown type {type_name!r}")
