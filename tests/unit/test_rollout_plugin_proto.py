"""The rollout plugin protocol's descriptor, read from rollout_plugin.proto at import time, is the
one protoc makes of the same file (grpcio-tools, when installed), and the wire format agrees."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from ocm_rollout.controllers.rollout.plugin import proto
from ocm_rollout.controllers.rollout.plugin.protoparse import ProtoSyntaxError, json_name, parse

ENHANCEMENT_RPCS = {
    # rpc: (request, response), as enhancement 231 writes the service.
    "Initialize": ("InitializeRequest", "InitializeResponse"),
    "BeginRollout": ("RolloutPluginRequest", "google.protobuf.Empty"),
    "ProgressRollout": ("RolloutPluginRequest", "google.protobuf.Empty"),
    "ValidateRolloutCompletion": ("ValidateCompletionRequest", "ValidateResponse"),
    "MutateManifestWork": ("MutateManifestWorkRequest", "MutateManifestWorkResponse"),
}


def test_the_service_is_the_enhancements() -> None:
    service = proto.POOL.FindServiceByName(proto.SERVICE_NAME)
    assert service.name == "RolloutPluginService"
    found = {m.name: (m.input_type.full_name, m.output_type.full_name) for m in service.methods}
    expected = {
        rpc: tuple(t if t.startswith("google.") else f"{proto.PACKAGE}.{t}" for t in types)
        for rpc, types in ENHANCEMENT_RPCS.items()
    }
    assert found == expected
    assert proto.METHODS["ValidateRolloutCompletion"].path == f"/{proto.PACKAGE}.RolloutPluginService/ValidateRolloutCompletion"


def test_requests_share_fields_one_to_six() -> None:
    shape = None
    for name in ("RolloutPluginRequest", "ValidateCompletionRequest", "MutateManifestWorkRequest"):
        fields = [(f.name, f.number, f.type) for f in proto.message_class(name).DESCRIPTOR.fields][:6]
        shape = shape or fields
        assert fields == shape
    assert [f[0] for f in shape or []] == [
        "mwrs_name", "mwrs_namespace", "placement_name", "cluster_name", "total_cluster_count", "rollout_status"
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('syntax = "proto2";', "only proto3 is understood"),
        ('syntax = "proto3"; message A { map<string, string> m = 1; }', "line 1: unexpected character '<'"),
        ('syntax = "proto3";\nmessage A {\n  oneof x { string a = 1; }\n}', "line 3: 'oneof' is not supported by this reader"),
        ('syntax = "proto3"; message A { B b = 1; }', "line 1: unknown type 'B'"),
        ('syntax = "proto3"; enum E { A = 1; }', "enum E: the first value must be 0 in proto3"),
        ('syntax = "proto3"; message A { string a = x; }', "line 1: expected a number, found 'x'"),
        ('syntax = "proto3"; message A {', "line 1: unexpected end of file"),
        ('syntax = "proto3"; enum E { A = 0; } service S { rpc M(E) returns (E); }', "line 1: E is not a message"),
    ],
)
def test_the_reader_refuses_what_it_does_not_understand(text: str, error: str) -> None:
    with pytest.raises(ProtoSyntaxError) as info:
        parse(text, "x.proto")
    assert str(info.value) == error


def test_json_names() -> None:
    assert json_name("manifest_revision_name") == "manifestRevisionName"
    assert json_name("mwrs_name") == "mwrsName"


# -- against protoc -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def protoc_out(tmp_path_factory: pytest.TempPathFactory) -> tuple[descriptor_pb2.FileDescriptorProto, ModuleType]:
    """protoc's descriptor of the shipped .proto, and the module it generates (imported under a
    name of its own: its classes live in the default pool, ours in a private one)."""
    protoc = pytest.importorskip("grpc_tools.protoc")
    grpc_tools = pytest.importorskip("grpc_tools")
    out = tmp_path_factory.mktemp("protoc")
    source = Path(proto.__file__).with_name(proto.PROTO_FILE)
    includes = Path(grpc_tools.__file__).with_name("_proto")
    code = protoc.main(
        [
            "protoc",
            f"-I{source.parent}",
            f"-I{includes}",
            f"--python_out={out}",
            f"--descriptor_set_out={out / 'set.pb'}",
            str(source),
        ]
    )
    assert code == 0
    file_set = descriptor_pb2.FileDescriptorSet.FromString((out / "set.pb").read_bytes())
    spec = importlib.util.spec_from_file_location("protoc_rollout_plugin_pb2", out / "rollout_plugin_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return file_set.file[-1], module


def test_the_descriptor_is_protocs(protoc_out: tuple[descriptor_pb2.FileDescriptorProto, ModuleType]) -> None:
    theirs, _ = protoc_out
    ours = proto.file_descriptor_proto()
    assert ours == theirs, f"ours:\n{ours}\nprotoc's:\n{theirs}"


def _sample(module: Any) -> Any:
    request = module.MutateManifestWorkRequest(
        mwrs_name="hello", mwrs_namespace="default", placement_name="canary", cluster_name="c2",
        total_cluster_count=10, manifest_work=b'{"kind":"ManifestWork"}',
    )
    request.rollout_status.completed_clusters.add(cluster_name="c1", rollout_status="Succeeded", manifest_revision_name="r2")
    request.rollout_status.timed_out_clusters.add(cluster_name="c9", rollout_status="TimeOut")
    request.rollout_status.removed_clusters.add(cluster_name="c0", rollout_status="Skip")
    return request


def test_the_wire_format_agrees_both_ways(protoc_out: tuple[descriptor_pb2.FileDescriptorProto, ModuleType]) -> None:
    _, generated = protoc_out
    ours = _sample(proto)
    theirs = _sample(generated)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert generated.MutateManifestWorkRequest.FromString(ours.SerializeToString()) == theirs
    answer = generated.ValidateResponse(result=generated.ValidateResponse.FAILED, message="smoke test failed")
    decoded: Any = proto.ValidateResponse.FromString(answer.SerializeToString())
    assert (decoded.result, decoded.message) == (proto.FAILED, "smoke test failed")
    assert proto.RESULT_NAMES == {0: "INPROGRESS", 1: "SUCCEEDED", 2: "FAILED"}
