"""OCM's ManifestWork validating webhook, as the local hub plays it: the limit on the total size
of a ManifestWork's manifests.

OCM's cluster-manager registers the webhook `manifestworkvalidators.admission.work.open-cluster-management.io`
for CREATE and UPDATE of `manifestworks` (not their status). Its validator
(ocm pkg/work/webhook/common/validator.go) adds up `manifest.Size()` over
`spec.workload.manifests` and refuses more than 500 KiB (its `--manifestLimit`, 512,000 bytes):

    the size of manifests is <total> bytes which exceeds the 512000 limit

as a BadRequest, which kube-apiserver relays as a 400 Status whose message says which webhook
denied the request (ocm_rollout.sandbox.errors.webhook_denied).

How the size is counted: a manifest is a `runtime.RawExtension`, whose `Size()` is the length of
its protobuf field: the raw bytes, plus one tag byte, plus the varint of their length. The raw
bytes are the manifest as the webhook received it in its AdmissionReview: the stored object
serialised by Go's encoding/json (compact, keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped,
other characters as UTF-8, integral numbers without a fraction).

OCM's webhook serves ManifestWorkReplicaSets too, with the same limit on the template's
manifests, but cluster-manager installs no ValidatingWebhookConfiguration for them, so a real
hub stores an oversized ManifestWorkReplicaSet and refuses each ManifestWork made from it; the
local hub does the same. OCM's other ManifestWork checks (no manifests, a manifest without a name
or with generateName, duplicate manifests, the executor's permission) are not played.

Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ocm_rollout.sandbox import errors
from ocm_rollout.sandbox.errors import ApiError

WEBHOOK = "manifestworkvalidators.admission.work.open-cluster-management.io"
MANIFEST_LIMIT = 500 * 1024

_INT64 = (-(2**63), 2**63 - 1)
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def varint_size(value: int) -> int:
    """Bytes of `value` as a protobuf varint."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def raw_extension_size(raw_length: int) -> int:
    """`runtime.RawExtension.Size()` for raw bytes of `raw_length`: tag, length varint, bytes."""
    return 1 + varint_size(raw_length) + raw_length


def go_json(value: Any) -> bytes:
    """`value` as Go's encoding/json writes an unstructured object."""
    return _encode(value).encode()


def _encode(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ",".join(_string(str(k)) + ":" + _encode(value[k]) for k in sorted(value, key=str)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        # A number that does not fit int64 is decoded (and written back) as a float64.
        return str(value) if _INT64[0] <= value <= _INT64[1] else _float(float(value))
    if isinstance(value, float):
        return _float(value)
    return _string(str(value))


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        if char in out:
            out = out.replace(char, escaped)
    return out


def _float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: the shortest form that reads back the same,
    in positional notation from 1e-6 up to 1e21, with an exponent outside (`1e+21`, `1e-7`)."""
    if not math.isfinite(value):
        return "null"  # not valid JSON input in the first place
    text = repr(value)
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        if "e" in text:
            text = format(Decimal(text), "f")
        return text[:-2] if text.endswith(".0") else text
    mantissa, _, exponent = text.partition("e")
    mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
    power = int(exponent)
    return f"{mantissa}e{'-' if power < 0 else '+'}{abs(power)}"


def manifests_size(manifests: list[Any]) -> int:
    """The total OCM's validator compares with its limit."""
    return sum(raw_extension_size(len(go_json(manifest))) for manifest in manifests)


def check(work: Mapping[str, Any], limit: int = MANIFEST_LIMIT) -> None:
    """Raise the API server's answer when OCM's webhook would deny `work` (a ManifestWork as it
    is about to be stored)."""
    spec = work.get("spec")
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    manifests = workload.get("manifests") if isinstance(workload, Mapping) else None
    if not isinstance(manifests, list) or not manifests:
        return
    total = manifests_size(manifests)
    if total > limit:
        raise denied(f"the size of manifests is {total} bytes which exceeds the {limit} limit")


def denied(message: str) -> ApiError:
    """The webhook's BadRequest as kube-apiserver returns it."""
    return errors.webhook_denied(WEBHOOK, 400, "BadRequest", message)
