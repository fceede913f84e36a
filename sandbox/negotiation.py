"""Content negotiation: an Accept header in, the `Media` a response is written in out.

As kube-apiserver negotiates: the clauses are tried in order of preference (q, then the more
specific type first); a clause is taken when its type names an encoding the resource has and
its parameters ask for a shape the server can give. Built-in kinds have JSON, YAML and
protobuf; custom resources have no protobuf form, so client-go's
`application/vnd.kubernetes.protobuf, application/json` gets JSON for them, though their
`as=PartialObjectMetadata[List]` (a built-in type) is protobuf too, as the metadata client
asks. `as=Table` is JSON only. An empty header means JSON; a header nothing matches is a 406.
"""

from __future__ import annotations

from dataclasses import dataclass

from ocm_rollout.sandbox.errors import ApiError

JSON = "json"
YAML = "yaml"
PROTOBUF = "protobuf"

OBJECT = "object"
TABLE = "table"
META = "meta"  # PartialObjectMetadata
META_LIST = "metalist"  # PartialObjectMetadataList

_TYPES = {
    "application/json": JSON,
    "application/yaml": YAML,
    "application/vnd.kubernetes.yaml": YAML,
    "application/vnd.kubernetes.protobuf": PROTOBUF,
}
_MEDIA_TYPES = {JSON: "application/json", YAML: "application/yaml", PROTOBUF: "application/vnd.kubernetes.protobuf"}
_SHAPES = {"Table": TABLE, "PartialObjectMetadata": META, "PartialObjectMetadataList": META_LIST}


@dataclass(frozen=True)
class Media:
    encoding: str = JSON
    shape: str = OBJECT
    version: str = "v1"  # of meta.k8s.io, for the Table and partial-metadata shapes


@dataclass(frozen=True)
class Clause:
    type: str
    subtype: str
    params: dict[str, str]
    q: float

    @property
    def media_type(self) -> str:
        return f"{self.type}/{self.subtype}"


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an Accept header, most preferred first (q, then specificity; ties keep
    their order)."""
    clauses: list[Clause] = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0].lower()
        if not media:
            continue
        type_, _, subtype = media.partition("/")
        params: dict[str, str] = {}
        for p in pieces[1:]:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        clauses.append(Clause(type_, subtype or "*", params, q))
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def _encodings_for(clause: Clause, offered: tuple[str, ...]) -> list[str]:
    if clause.type == "*" and clause.subtype == "*":
        return list(offered)
    if clause.subtype == "*":
        return [e for e in offered if _MEDIA_TYPES[e].startswith(f"{clause.type}/")]
    found = _TYPES.get(clause.media_type)
    return [found] if found in offered else []


def _shape(encoding: str, params: dict[str, str], protobuf: bool) -> Media | None:
    as_ = params.get("as")
    if encoding == PROTOBUF and not protobuf and as_ not in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        return None
    if encoding == YAML or as_ is None:
        return Media(encoding)
    shape = _SHAPES.get(as_)
    version = params.get("v", "")
    if shape is None or params.get("g") != "meta.k8s.io" or version not in ("v1", "v1beta1"):
        return None
    if shape == TABLE and encoding != JSON:
        return None
    return Media(encoding, shape, version)


def negotiate(header: str | None, *, protobuf: bool) -> Media:
    """The media to answer in; `protobuf`: whether the resource has a protobuf form."""
    offered = (JSON, YAML, PROTOBUF)
    if not header or not header.strip():
        return Media()
    for clause in parse_accept(header):
        if clause.q <= 0:
            continue
        stream = clause.params.get("stream")
        if stream is not None and stream != "watch":
            continue
        for encoding in _encodings_for(clause, offered):
            media = _shape(encoding, clause.params, protobuf)
            if media is not None:
                return media
    raise ApiError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {', '.join(_MEDIA_TYPES[e] for e in offered)}",
    )


def prefers_protobuf(header: str | None, *, protobuf: bool) -> bool:
    """Whether an error answering this request is written as protobuf (a 406 is not)."""
    try:
        return negotiate(header, protobuf=protobuf).encoding == PROTOBUF
    except ApiError:
        return False
