"""`certificates.k8s.io/v1` CertificateSigningRequest, served as kube-apiserver serves it
(k8s.io/kubernetes pkg/registry/certificates/certificates/strategy.go and
pkg/apis/certificates/validation):

- create: `spec.username`, `spec.groups` (and no `uid`, `extra`) come from the requesting user,
  whatever the body says; the status starts empty;
- the main endpoint changes metadata only: spec and status changes are dropped silently;
- `/approval` changes `status.conditions` only (adding or removing Approved and Denied is its
  job), `/status` everything in the status but the Approved and Denied conditions (issuing
  `status.certificate` is its job); both fill a condition's missing `lastUpdateTime` and
  `lastTransitionTime`;
- validation: `spec.request` is a PEM CERTIFICATE REQUEST with a valid signature;
  `spec.signerName` is `<domain>/<path>`; `spec.usages` is given, known and without duplicates;
  `spec.expirationSeconds` is at least 600; conditions have a type, at most one of each type, a
  status (True only for Approved, Denied and Failed), and never both Approved and Denied;
  `status.certificate` is PEM CERTIFICATE blocks, and once set cannot change; Approved, Denied
  and Failed conditions cannot be removed; each rule is relaxed for an object that already breaks
  it, as kube-apiserver relaxes it for data stored before the rule;
- list and watch take the `spec.signerName` field selector; kubectl's columns are NAME, AGE,
  SIGNERNAME, REQUESTOR, REQUESTEDDURATION, CONDITION.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ocm_rollout.sandbox.agents.objectnames import dns1123_label, dns1123_subdomain, path_segment
from ocm_rollout.sandbox.builtin_common import BYTES, I32, STRING_LIST, S, array, kind_type, obj
from ocm_rollout.sandbox.resources import Column, ResourceType
from ocm_rollout.sandbox.strategy import (
    Cause,
    KindStrategy,
    as_dict,
    as_list,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from ocm_rollout.sandbox.table import age_column, human_duration, name_column

GROUP = "certificates.k8s.io"
LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
USAGES = sorted(
    [
        "signing", "digital signature", "content commitment", "key encipherment", "key agreement",
        "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth",
        "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
        "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
    ]
)
_TRUE_ONLY = (APPROVED, DENIED, FAILED)

CONDITION = obj(type=S, status=S, reason=S, message=S, lastUpdateTime=S, lastTransitionTime=S)
PROPS: dict[str, Any] = {
    "spec": obj(
        request=BYTES,
        signerName=S,
        expirationSeconds=I32,
        usages=STRING_LIST,
        username=S,
        uid=S,
        groups=STRING_LIST,
        extra={"type": "object", "additionalProperties": STRING_LIST},
    ),
    "status": obj(conditions=array(CONDITION), certificate=BYTES),
}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bytes(value: Any) -> bytes | None:
    """The bytes of a base64 JSON field (None when absent)."""
    if value is None or value == "":
        return None if value is None else b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return str(value).encode()


# PEM and X.509 --------------------------------------------------------------------------------------

_PEM = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def _pem_blocks(data: bytes) -> list[tuple[str, bool, bytes]]:
    """(type, has headers, DER) of each PEM block in `data`, as Go's pem.Decode finds them."""
    blocks = []
    for m in _PEM.finditer(data):
        body = m.group(2)
        headers = False
        if b":" in body.split(b"\n", 1)[0]:
            headers = True
            body = body.split(b"\n\n", 1)[-1] if b"\n\n" in body else b""
        try:
            der = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        blocks.append((m.group(1).decode(errors="replace"), headers, der))
    return blocks


def request_error(data: bytes | None) -> str | None:
    """certificates.ParseCSR and CheckSignature: why `data` is not a signed PKCS#10 request."""
    blocks = _pem_blocks(data or b"")
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        csr = x509.load_der_x509_csr(blocks[0][2])
    except ValueError:
        return "x509: malformed certificate request"
    try:
        valid = csr.is_signature_valid
        key = csr.public_key()
    except (ValueError, TypeError, x509.UnsupportedGeneralNameType):
        return "x509: cannot verify signature: algorithm unimplemented"
    if valid:
        return None
    if isinstance(key, rsa.RSAPublicKey):
        return "crypto/rsa: verification error"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "x509: ECDSA verification failure"
    return "x509: signature verification failure"


def certificate_error(data: bytes | None) -> str | None:
    """validateCertificate: empty, or only CERTIFICATE blocks without headers that parse."""
    if not data:
        return None
    blocks = _pem_blocks(data)
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    for kind, headers, der in blocks:
        if kind != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind}"'
        if headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError:
            return "x509: malformed certificate"
    return None


def signer_name_causes(name: str, where: str = "spec.signerName") -> list[Cause]:
    """core validation.ValidateSignerName."""
    if not name:
        return [required(where)]
    segments = name.split("/")
    if len(segments) != 2:
        return [invalid(where, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")]
    domain, path = segments
    causes: list[Cause] = []
    if len(domain) > 253:
        causes.append(invalid(where, domain, "must be no more than 253 characters"))
    labels = domain.split(".")
    for label in labels:
        problems = dns1123_label(label)
        if problems:
            causes.extend(invalid(where, domain, f'validating label "{label}": {p}') for p in problems)
            break
    if len(labels) < 2:
        causes.append(invalid(where, domain, "should be a domain with at least two segments separated by dots"))
    if len(path) > 253 + 63 + 1:
        causes.append(invalid(where, path, f"must be no more than {253 + 63 + 1} characters"))
    for segment in path.split("/"):
        problems = dns1123_subdomain(segment) if segment else ["must not be empty"]
        if problems:
            causes.extend(invalid(where, path, f'validating component "{segment}": {p}') for p in problems)
            break
    return causes


# validation -----------------------------------------------------------------------------------------


def _conditions(o: dict[str, Any]) -> list[dict[str, Any]]:
    return [as_dict(c) for c in as_list(as_dict(o.get("status")).get("conditions"))]


def _of_type(o: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in _conditions(o) if c.get("type") == kind]


def _types(o: dict[str, Any]) -> list[str]:
    return [str(c.get("type") or "") for c in _conditions(o)]


def _certificate(o: dict[str, Any]) -> bytes:
    return _bytes(as_dict(o.get("status")).get("certificate")) or b""


def _usages(o: dict[str, Any]) -> list[Any]:
    return as_list(as_dict(o.get("spec")).get("usages"))


class _Options:
    """What kube-apiserver tolerates because the stored object already has it."""

    def __init__(self, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        types = _types(old) if old is not None else []
        usages = _usages(old) if old is not None else []
        self.both_approved_and_denied = APPROVED in types and DENIED in types
        self.legacy_signer = old is not None and as_dict(old.get("spec")).get("signerName") == LEGACY_SIGNER
        self.duplicate_condition_types = len(types) != len(set(types))
        self.empty_condition_type = "" in types
        self.arbitrary_certificate = old is not None and (
            _certificate(new) == _certificate(old) or certificate_error(_certificate(old)) is not None
        )
        self.duplicate_usages = len(usages) != len(set(map(str, usages)))
        self.unknown_usages = any(u not in USAGES for u in usages)


def _validate_csr(o: dict[str, Any], opts: _Options) -> list[Cause]:
    spec = as_dict(o.get("spec"))
    causes: list[Cause] = []
    request = _bytes(spec.get("request"))
    why = request_error(request)
    if why:
        shown = "[]byte(nil)" if request is None else None
        causes.append(invalid("spec.request", request or b"", why, shown=shown))
    usages = _usages(o)
    if not usages:
        causes.append(required("spec.usages"))
    if not opts.unknown_usages:
        causes.extend(not_supported(f"spec.usages[{i}]", u, USAGES) for i, u in enumerate(usages) if u not in USAGES)
    if not opts.duplicate_usages:
        seen: set[str] = set()
        for i, u in enumerate(usages):
            if str(u) in seen:
                causes.append(duplicate(f"spec.usages[{i}]", u))
            seen.add(str(u))
    signer = str(spec.get("signerName") or "")
    if signer == LEGACY_SIGNER and not opts.legacy_signer:
        causes.append(invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    else:
        causes.extend(signer_name_causes(signer))
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < 600:
        causes.append(invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 600 seconds (10 minutes)"))
    causes.extend(_validate_conditions(o, opts))
    if not opts.arbitrary_certificate:
        why = certificate_error(_certificate(o))
        if why:
            causes.append(invalid("status.certificate", None, why, shown='"<certificate data>"'))
    return causes


def _validate_conditions(o: dict[str, Any], opts: _Options) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(_conditions(o)):
        where = f"status.conditions[{i}]"
        kind = str(c.get("type") or "")
        if not kind and not opts.empty_condition_type:
            causes.append(required(f"{where}.type"))
        allowed = ["True"] if kind in _TRUE_ONLY else ["False", "True", "Unknown"]
        status = c.get("status") or ""
        if not status:
            causes.append(required(f"{where}.status"))
        elif status not in allowed:
            causes.append(not_supported(f"{where}.status", status, allowed))
        if not opts.both_approved_and_denied:
            if kind == APPROVED:
                approved = True
                if denied:
                    causes.append(invalid("status.conditions", kind, "Approved and Denied conditions are mutually exclusive"))
            elif kind == DENIED:
                denied = True
                if approved:
                    causes.append(invalid("status.conditions", kind, "Approved and Denied conditions are mutually exclusive"))
        if not opts.duplicate_condition_types:
            if kind in seen:
                causes.append(duplicate(f"{where}.type", kind))
            seen.add(kind)
    return causes


def validate(new: dict[str, Any], old: dict[str, Any] | None, subresource: str | None) -> list[Cause]:
    opts = _Options(new, old)
    causes = _validate_csr(new, opts)
    if old is None:
        return causes
    for kind in (APPROVED, DENIED, FAILED):
        if len(_of_type(new, kind)) < len(_of_type(old, kind)):
            causes.append(forbidden("status.conditions", f'updates may not remove a condition of type "{kind}"'))
    if subresource != "approval":
        for kind in (APPROVED, DENIED):
            before, after = _of_type(old, kind), _of_type(new, kind)
            if len(after) > len(before):
                causes.append(forbidden("status.conditions", f'updates may not add a condition of type "{kind}"'))
            elif len(after) == len(before) and after != before:
                causes.append(forbidden("status.conditions", f'updates may not modify a condition of type "{kind}"'))
    if _certificate(new) != _certificate(old):
        if subresource != "status":
            causes.append(forbidden("status.certificate", "updates may not set certificate content"))
        elif _certificate(old):
            causes.append(forbidden("status.certificate", "updates may not modify existing certificate content"))
    return causes


# the strategy ---------------------------------------------------------------------------------------


def _populate_timestamps(new_conditions: list[Any], old: dict[str, Any]) -> list[Any]:
    """populateConditionTimestamps: a missing lastUpdateTime is now; a missing
    lastTransitionTime is the old one of a condition with this type and status, else now."""
    now = _now()
    out = []
    for c in new_conditions:
        if not isinstance(c, dict):
            out.append(c)
            continue
        c = dict(c)
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            c["lastTransitionTime"] = next(
                (
                    o["lastTransitionTime"]
                    for o in _conditions(old)
                    if o.get("type") == c.get("type") and o.get("status") == c.get("status") and o.get("lastTransitionTime")
                ),
                now,
            )
        out.append(c)
    return out


def _set(o: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        o.pop(key, None)
    else:
        o[key] = value


class CsrStrategy(KindStrategy):
    def name_errors(self, name: str) -> list[str] | None:
        return path_segment(name)  # "We don't care what you call your certificate requests."

    def default(self, obj_: dict[str, Any]) -> None:
        status = obj_.get("status")
        if not isinstance(status, dict) or not isinstance(status.get("conditions"), list):
            return
        conditions = [
            {**c, "status": "True"} if isinstance(c, dict) and not c.get("status") else c for c in status["conditions"]
        ]
        obj_["status"] = {**status, "conditions": conditions}

    def prepare_create(self, obj_: dict[str, Any], user: str, groups: tuple[str, ...]) -> None:
        spec = {k: v for k, v in as_dict(obj_.get("spec")).items() if k not in ("username", "uid", "groups", "extra")}
        if user:
            spec["username"] = user
        if groups:
            spec["groups"] = list(groups)
        obj_["spec"] = spec
        obj_["status"] = {}

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str | None) -> None:
        _set(new, "spec", old.get("spec"))
        if subresource is None:
            _set(new, "status", old.get("status"))
        elif subresource == "approval":
            conditions = _populate_timestamps(as_list(as_dict(new.get("status")).get("conditions")), old)
            status = dict(as_dict(old.get("status")))
            _set(status, "conditions", conditions or None)
            new["status"] = status
        elif subresource == "status":
            status = dict(as_dict(new.get("status")))
            conditions = list(as_list(status.get("conditions")))
            for kind in (APPROVED, DENIED):  # preserveConditionInstances
                before = [c for c in _conditions(old) if c.get("type") == kind]
                at = [i for i, c in enumerate(conditions) if isinstance(c, dict) and c.get("type") == kind]
                if len(before) == len(at):
                    for i, c in zip(at, before, strict=True):
                        conditions[i] = c
            conditions = _populate_timestamps(conditions, old)
            _set(status, "conditions", conditions or None)
            new["status"] = status

    def validate(self, new: dict[str, Any], old: dict[str, Any] | None, subresource: str | None) -> list[Cause]:
        return validate(new, old, subresource)


# table columns --------------------------------------------------------------------------------------


def condition_summary(o: dict[str, Any]) -> str:
    """printers' extractCSRStatus: Denied, Approved or Pending, then ,Failed and ,Issued."""
    types = set(_types(o))
    status = DENIED if DENIED in types else APPROVED if APPROVED in types else "Pending"
    if FAILED in types:
        status += ",Failed"
    if _certificate(o):
        status += ",Issued"
    return status


def _requested_duration(o: dict[str, Any]) -> str:
    seconds = as_dict(o.get("spec")).get("expirationSeconds")
    return human_duration(seconds) if isinstance(seconds, int) else "<none>"


def columns() -> list[Column]:
    return [
        name_column(),
        age_column(),
        Column(
            "SignerName", "string", lambda o: as_dict(o.get("spec")).get("signerName") or "<none>",
            description="signerName indicates the requested signer, and is a qualified name.",
        ),
        Column(
            "Requestor", "string", lambda o: as_dict(o.get("spec")).get("username") or "",
            description="Name of the user which made this request.",
        ),
        Column(
            "RequestedDuration", "string", _requested_duration,
            description="expirationSeconds is the requested duration of validity of the issued certificate.",
        ),
        Column("Condition", "string", condition_summary, description="State of the signing request."),
    ]


def types() -> list[ResourceType]:
    return [
        kind_type(
            GROUP,
            "CertificateSigningRequest",
            PROPS,
            columns(),
            namespaced=False,
            short_names=("csr",),
            field_selectors=frozenset({"metadata.name", "spec.signerName"}),
            extra_subresources=("approval", "status"),
            strategy=CsrStrategy(),
        )
    ]
