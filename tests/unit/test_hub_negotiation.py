"""Content negotiation with the Accept headers client-go and kubectl send, and the
`/openapi/v2` content type that Go's MIME parser must accept."""

from __future__ import annotations

import re
from email.message import Message

import pytest

from ocm_rollout.sandbox.errors import ApiError
from ocm_rollout.sandbox.negotiation import JSON, META, META_LIST, PROTOBUF, TABLE, YAML, Media, negotiate
from ocm_rollout.sandbox.openapi import v2_media_type

CLIENT_GO = "application/vnd.kubernetes.protobuf, application/json"
KUBECTL_CREATE = "application/vnd.kubernetes.protobuf,application/json"
KUBECTL_GET = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
METADATA_CLIENT = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)


@pytest.mark.parametrize(
    ("accept", "builtin", "custom"),
    [
        (CLIENT_GO, Media(PROTOBUF), Media(JSON)),
        (KUBECTL_CREATE, Media(PROTOBUF), Media(JSON)),
        (KUBECTL_GET, Media(JSON, TABLE, "v1"), Media(JSON, TABLE, "v1")),
        (METADATA_CLIENT, Media(PROTOBUF, META_LIST, "v1"), Media(PROTOBUF, META_LIST, "v1")),
        ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", Media(JSON), Media(JSON)),
        ("application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io", Media(JSON, META, "v1beta1"),
         Media(JSON, META, "v1beta1")),
        ("application/vnd.kubernetes.protobuf;stream=watch, application/json", Media(PROTOBUF), Media(JSON)),
        ("application/json;q=0.5, application/vnd.kubernetes.protobuf", Media(PROTOBUF), Media(JSON)),
        ("application/yaml", Media(YAML), Media(YAML)),
        ("*/*", Media(JSON), Media(JSON)),
        ("application/*", Media(JSON), Media(JSON)),
        ("", Media(JSON), Media(JSON)),
        (None, Media(JSON), Media(JSON)),
    ],
)
def test_negotiation(accept: str | None, builtin: Media, custom: Media) -> None:
    assert negotiate(accept, protobuf=True) == builtin
    assert negotiate(accept, protobuf=False) == custom


def test_nothing_acceptable_is_406_naming_what_is() -> None:
    with pytest.raises(ApiError) as err:
        negotiate("text/html", protobuf=True)
    assert err.value.code == 406
    assert err.value.message.endswith("application/json, application/yaml, application/vnd.kubernetes.protobuf")
    with pytest.raises(ApiError) as err:
        negotiate("application/vnd.kubernetes.protobuf", protobuf=False)
    assert err.value.code == 406
    with pytest.raises(ApiError):
        negotiate("application/json;as=Table;g=meta.k8s.io;v=v2", protobuf=True)


# Go's mime.ParseMediaType: type "/" subtype, both RFC 1521 tokens (no tspecials such as "@").
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
GO_MEDIA_TYPE = re.compile(rf"^{_TOKEN}/{_TOKEN}(\s*;\s*{_TOKEN}=({_TOKEN}|\"[^\"]*\"))*$")


def _email_parses(content_type: str) -> bool:
    msg = Message()
    msg["Content-Type"] = content_type
    return msg.get_content_type() == content_type.split(";")[0].strip().lower()


def test_openapi_v2_protobuf_content_type_parses() -> None:
    # what client-go's discovery client asks for
    answer = v2_media_type("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert answer == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert GO_MEDIA_TYPE.match(answer)
    assert _email_parses(answer)
    # the name that is asked for is not a valid media type: answering with it breaks kubectl
    assert not GO_MEDIA_TYPE.match("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        ("application/json", "application/json"),
        ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0.5, application/json", "application/json"),
        ("*/*", "application/json"),
        (None, "application/json"),
        ("text/plain", None),
    ],
)
def test_openapi_v2_negotiation(accept: str | None, answer: str | None) -> None:
    assert v2_media_type(accept) == answer
