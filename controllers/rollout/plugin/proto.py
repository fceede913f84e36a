"""The rollout plugin protocol's message classes, built at import time from
``rollout_plugin.proto`` (package data): the text is read into a ``FileDescriptorProto``
(``protoparse``), added to a private descriptor pool next to ``google/protobuf/empty.proto``, and
each message class comes from ``message_factory.GetMessageClass``.

``METHODS`` maps each rpc name to its gRPC path (``/<package>.RolloutPluginService/<rpc>``) and
its request and response classes; the client and the example server both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2, message_factory
from google.protobuf.message import Message

from ocm_rollout.controllers.rollout.plugin.protoparse import parse

PROTO_FILE = "rollout_plugin.proto"
SERVICE = "RolloutPluginService"


def proto_text() -> str:
    return resources.files(__package__).joinpath(PROTO_FILE).read_text(encoding="utf-8")


def _empty_file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    empty_pb2.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The protocol's ``FileDescriptorProto``, as protoc would produce it from the file."""
    return parse(proto_text(), PROTO_FILE, imports=[_empty_file()])


FILE = file_descriptor_proto()
POOL = descriptor_pool.DescriptorPool()
POOL.Add(_empty_file())
POOL.Add(FILE)
PACKAGE = FILE.package
SERVICE_NAME = f"{PACKAGE}.{SERVICE}" if PACKAGE else SERVICE


def message_class(name: str) -> type[Message]:
    """The class of the message ``name`` (relative to the package, e.g. ``ValidateResponse``)."""
    full = f"{PACKAGE}.{name}" if PACKAGE else name
    cls: type[Message] = message_factory.GetMessageClass(POOL.FindMessageTypeByName(full))
    return cls


InitializeRequest = message_class("InitializeRequest")
InitializeResponse = message_class("InitializeResponse")
ClusterRolloutStatus = message_class("ClusterRolloutStatus")
RolloutStatus = message_class("RolloutStatus")
RolloutPluginRequest = message_class("RolloutPluginRequest")
ValidateCompletionRequest = message_class("ValidateCompletionRequest")
ValidateResponse = message_class("ValidateResponse")
MutateManifestWorkRequest = message_class("MutateManifestWorkRequest")
MutateManifestWorkResponse = message_class("MutateManifestWorkResponse")
Empty: type[Message] = message_factory.GetMessageClass(POOL.FindMessageTypeByName("google.protobuf.Empty"))

# ValidateResponse.Result values.
_RESULT = POOL.FindEnumTypeByName(f"{PACKAGE}.ValidateResponse.Result" if PACKAGE else "ValidateResponse.Result")
INPROGRESS: int = _RESULT.values_by_name["INPROGRESS"].number
SUCCEEDED: int = _RESULT.values_by_name["SUCCEEDED"].number
FAILED: int = _RESULT.values_by_name["FAILED"].number
RESULT_NAMES: dict[int, str] = {v.number: v.name for v in _RESULT.values}


@dataclass(frozen=True)
class Method:
    name: str
    path: str
    request: type[Message]
    response: type[Message]


def _methods() -> dict[str, Method]:
    service = POOL.FindServiceByName(SERVICE_NAME)
    out: dict[str, Method] = {}
    for method in service.methods:
        out[method.name] = Method(
            method.name,
            f"/{SERVICE_NAME}/{method.name}",
            message_factory.GetMessageClass(method.input_type),
            message_factory.GetMessageClass(method.output_type),
        )
    return out


METHODS: dict[str, Method] = _methods()


def serializer(message: Message) -> bytes:
    return message.SerializeToString()


def deserializer(cls: type[Message]) -> Any:
    """``bytes -> cls`` for grpc's ``response_deserializer``/``request_deserializer``."""
    return cls.FromString
