"""CertificateSigningRequests served as kube-apiserver serves them: the requester filled in on
create, the main endpoint changing metadata only, `/approval` and `/status` each changing their
part of the status, validation (422 with field causes), the `spec.signerName` field selector,
watch, discovery and protobuf."""

from __future__ import annotations

import base64
import datetime
import json
import uuid
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client, watch

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import api, http
from tests.unit.pb_bytes import envelope, ld, num, one, parse, text, unenvelope

SIGNER = "open-cluster-management.io/addon-signer"
PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO = {"Accept": f"{PROTOBUF}, application/json", "Content-Type": PROTOBUF}
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _request_pem(common_name: str = "system:open-cluster-management:cluster1:agent") -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:open-cluster-management:cluster1")])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(_key(), hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM)


def _certificate_pem() -> bytes:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issued")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _csr(name: str, **spec: Any) -> dict[str, Any]:
    body = {"request": _b64(_request_pem()), "signerName": SIGNER, "usages": ["digital signature", "client auth"]}
    body.update(spec)
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name}, "spec": body}


def _name() -> str:
    return f"addon-cluster1-{uuid.uuid4().hex[:6]}"


def _post(handle: HubThread, path: str, body: Any, method: str = "POST") -> tuple[int, dict[str, Any]]:
    resp = http(handle, method, path, body=body)
    return resp.status, json.loads(resp.data)


def _causes(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    assert status["reason"] == "Invalid", status
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


def _read(handle: HubThread, name: str) -> dict[str, Any]:
    return json.loads(http(handle, "GET", f"{CSRS}/{name}").data)


def test_create_takes_the_requester_and_clears_the_status(toy_client: client.ApiClient) -> None:
    certs = api("CertificatesV1Api", toy_client)
    body = _csr(_name(), username="mallory", groups=["system:masters"], uid="u-1", extra={"x": ["y"]})
    body["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    created = certs.create_certificate_signing_request(body)
    assert created.spec.username == "admin"
    assert created.spec.groups == ["system:masters", "system:authenticated"]
    assert created.spec.uid is None and created.spec.extra is None
    assert created.status.conditions is None and created.status.certificate is None
    assert created.spec.signer_name == SIGNER and created.spec.usages == ["digital signature", "client auth"]


def test_main_endpoint_changes_metadata_only(toy_hub: HubThread) -> None:
    name = _name()
    code, created = _post(toy_hub, CSRS, _csr(name, expirationSeconds=3600))
    assert code == 201, created
    changed = json.loads(json.dumps(created))
    changed["metadata"]["labels"] = {"open-cluster-management.io/cluster-name": "cluster1"}
    changed["spec"]["signerName"] = "example.com/other"
    changed["spec"]["usages"] = ["server auth"]
    changed["status"] = {"conditions": [{"type": "Approved", "status": "True"}], "certificate": _b64(_certificate_pem())}
    code, updated = _post(toy_hub, f"{CSRS}/{name}", changed, method="PUT")
    assert code == 200, updated
    assert updated["metadata"]["labels"] == {"open-cluster-management.io/cluster-name": "cluster1"}
    assert updated["spec"] == created["spec"] and updated["status"] == {}


def test_approval_sets_conditions_with_timestamps(toy_client: client.ApiClient) -> None:
    certs = api("CertificatesV1Api", toy_client)
    name = _name()
    csr = certs.create_certificate_signing_request(_csr(name))
    csr.status.conditions = [client.V1CertificateSigningRequestCondition(
        type="Approved", status="True", reason="AutoApprovedByHubCSRApprovingController", message="approved")]
    csr.status.certificate = _b64(_certificate_pem())  # not the approval's business: dropped
    approved = certs.replace_certificate_signing_request_approval(name, csr)
    (cond,) = approved.status.conditions
    assert (cond.type, cond.status, cond.reason) == ("Approved", "True", "AutoApprovedByHubCSRApprovingController")
    assert cond.last_update_time is not None and cond.last_transition_time is not None
    assert approved.status.certificate is None
    assert certs.read_certificate_signing_request_approval(name).status.conditions[0].type == "Approved"


def test_approval_validation(toy_hub: HubThread) -> None:
    name = _name()
    _post(toy_hub, CSRS, _csr(name))
    csr = _read(toy_hub, name)
    csr["status"] = {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}
    code, status = _post(toy_hub, f"{CSRS}/{name}/approval", csr, method="PUT")
    assert code == 422
    assert _causes(status) == [
        ("FieldValueInvalid", "status.conditions", 'Invalid value: "Denied": Approved and Denied conditions are mutually exclusive'),
    ]
    assert status["message"].startswith('CertificateSigningRequest.certificates.k8s.io "' + name + '" is invalid: ')

    csr["status"] = {"conditions": [{"type": "Approved"}]}  # status defaults to True
    code, approved = _post(toy_hub, f"{CSRS}/{name}/approval", csr, method="PUT")
    assert code == 200 and approved["status"]["conditions"][0]["status"] == "True"

    approved["status"] = {"conditions": []}
    code, status = _post(toy_hub, f"{CSRS}/{name}/approval", approved, method="PUT")
    assert code == 422
    assert _causes(status) == [
        ("FieldValueForbidden", "status.conditions", 'Forbidden: updates may not remove a condition of type "Approved"'),
    ]
    approved["status"] = {"conditions": [{"type": "Approved", "status": "False"}]}
    code, status = _post(toy_hub, f"{CSRS}/{name}/approval", approved, method="PUT")
    assert _causes(status) == [
        ("FieldValueNotSupported", "status.conditions[0].status", 'Unsupported value: "False": supported values: "True"'),
    ]


def test_status_issues_the_certificate_once(toy_client: client.ApiClient, toy_hub: HubThread) -> None:
    certs = api("CertificatesV1Api", toy_client)
    name = _name()
    certs.create_certificate_signing_request(_csr(name))
    certs.patch_certificate_signing_request_approval(
        name, {"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "ok"}]}})
    pem = _certificate_pem()
    issued = certs.patch_certificate_signing_request_status(name, {"status": {"certificate": _b64(pem)}})
    assert base64.b64decode(issued.status.certificate) == pem
    assert [c.type for c in issued.status.conditions] == ["Approved"]
    row = http(toy_hub, "GET", f"{CSRS}/{name}", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert json.loads(row.data)["rows"][0]["cells"][2:] == [SIGNER, "admin", "<none>", "Approved,Issued"]

    csr = _read(toy_hub, name)
    csr["status"]["certificate"] = _b64(_certificate_pem())
    code, status = _post(toy_hub, f"{CSRS}/{name}/status", csr, method="PUT")
    assert _causes(status) == [
        ("FieldValueForbidden", "status.certificate", "Forbidden: updates may not modify existing certificate content"),
    ]
    csr = _read(toy_hub, name)
    csr["status"]["conditions"].append({"type": "Denied", "status": "True"})
    code, status = _post(toy_hub, f"{CSRS}/{name}/status", csr, method="PUT")
    assert code == 422
    assert ("FieldValueForbidden", "status.conditions", 'Forbidden: updates may not add a condition of type "Denied"') in _causes(status)

    # a Failed condition is the signer's to add, through /status
    csr = _read(toy_hub, name)
    csr["status"]["conditions"].append({"type": "Failed", "status": "True", "reason": "SignerValidationFailure"})
    code, failed = _post(toy_hub, f"{CSRS}/{name}/status", csr, method="PUT")
    assert code == 200 and [c["type"] for c in failed["status"]["conditions"]] == ["Approved", "Failed"]


def test_bad_certificate_content_is_refused(toy_hub: HubThread) -> None:
    name = _name()
    _post(toy_hub, CSRS, _csr(name))
    csr = _read(toy_hub, name)
    csr["status"] = {"certificate": _b64(_request_pem())}
    code, status = _post(toy_hub, f"{CSRS}/{name}/status", csr, method="PUT")
    assert code == 422
    assert _causes(status) == [
        ("FieldValueInvalid", "status.certificate",
         'Invalid value: "<certificate data>": only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"'),
    ]


def test_create_validation(toy_hub: HubThread) -> None:
    body = _csr(_name(), signerName="no-slash", usages=["client auth", "teleport", "client auth"], expirationSeconds=60)
    body["spec"]["request"] = _b64(b"not a pem")
    code, status = _post(toy_hub, CSRS, body)
    assert code == 422
    causes = _causes(status)
    assert [(r, f) for r, f, _ in causes] == [
        ("FieldValueInvalid", "spec.request"),
        ("FieldValueNotSupported", "spec.usages[1]"),
        ("FieldValueDuplicate", "spec.usages[2]"),
        ("FieldValueInvalid", "spec.signerName"),
        ("FieldValueInvalid", "spec.expirationSeconds"),
    ]
    assert causes[0][2].endswith(": PEM block type must be CERTIFICATE REQUEST")
    assert causes[2][2] == 'Duplicate value: "client auth"'
    assert causes[3][2] == (
        "Invalid value: \"no-slash\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
    )
    assert causes[4][2] == "Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"

    body = _csr(_name())
    del body["spec"]["signerName"], body["spec"]["usages"]
    code, status = _post(toy_hub, CSRS, body)
    assert _causes(status) == [
        ("FieldValueRequired", "spec.usages", "Required value"),
        ("FieldValueRequired", "spec.signerName", "Required value"),
    ]
    code, status = _post(toy_hub, CSRS, _csr(_name(), signerName="kubernetes.io/legacy-unknown"))
    assert _causes(status)[0][2] == (
        'Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version'
    )


def test_signer_name_field_selector_and_watch(toy_client: client.ApiClient) -> None:
    certs = api("CertificatesV1Api", toy_client)
    rv = certs.list_certificate_signing_request().metadata.resource_version
    mine, other = _name(), _name()
    certs.create_certificate_signing_request(_csr(mine))
    certs.create_certificate_signing_request(_csr(other, signerName="kubernetes.io/kube-apiserver-client"))
    selected = certs.list_certificate_signing_request(field_selector=f"spec.signerName={SIGNER},metadata.name={mine}")
    assert [c.metadata.name for c in selected.items] == [mine]
    certs.patch_certificate_signing_request_approval(mine, {"status": {"conditions": [{"type": "Denied", "status": "True"}]}})
    seen = []
    stream = watch.Watch().stream(certs.list_certificate_signing_request, resource_version=rv, timeout_seconds=2,
                                  field_selector="spec.signerName=kubernetes.io/kube-apiserver-client")
    for event in stream:
        seen.append((event["type"], event["object"].metadata.name))
        break
    assert seen == [("ADDED", other)]
    with pytest.raises(client.ApiException) as err:
        certs.list_certificate_signing_request(field_selector="spec.username=admin")
    assert err.value.status == 400


def test_discovery_lists_the_subresources(toy_hub: HubThread) -> None:
    listing = json.loads(http(toy_hub, "GET", "/apis/certificates.k8s.io/v1").data)
    found = {r["name"]: r for r in listing["resources"]}
    assert sorted(found) == [
        "certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"
    ]
    main = found["certificatesigningrequests"]
    assert (main["namespaced"], main["kind"], main["shortNames"], main["singularName"]) == (
        False, "CertificateSigningRequest", ["csr"], "certificatesigningrequest")
    assert found["certificatesigningrequests/approval"]["verbs"] == ["get", "patch", "update"]
    assert found["certificatesigningrequests/status"]["verbs"] == ["get", "patch", "update"]
    doc = json.loads(http(toy_hub, "GET", "/openapi/v3/apis/certificates.k8s.io/v1").data)
    assert f"{CSRS}/{{name}}/approval" in doc["paths"] and f"{CSRS}/{{name}}/status" in doc["paths"]


def test_protobuf_round_trip(toy_hub: HubThread) -> None:
    name = _name()
    pem = _request_pem()
    spec = ld(2, ld(1, pem), ld(5, "digital signature"), ld(5, "client auth"), ld(7, SIGNER), num(8, 86400))
    body = envelope("certificates.k8s.io/v1", "CertificateSigningRequest", ld(1, ld(1, name)) + spec)
    created = http(toy_hub, "POST", CSRS, body=body, headers=CLIENT_GO)
    assert created.status == 201, created.data
    api_version, kind, msg = unenvelope(created.data)
    assert (api_version, kind) == ("certificates.k8s.io/v1", "CertificateSigningRequest")
    got = parse(one(msg, 2))
    assert one(got, 1) == pem and text(got, 7) == SIGNER and got[8] == [86400] and text(got, 2) == "admin"

    # client-go's UpdateApproval: a PUT of the whole object, in protobuf, to /approval
    rv = text(parse(one(msg, 1)), 6)
    condition = ld(1, ld(1, "Approved"), ld(6, "True"), ld(2, "r"), ld(4, b""), ld(5, b""))
    body = envelope("certificates.k8s.io/v1", "CertificateSigningRequest",
                    ld(1, ld(1, name), ld(6, rv)) + spec + ld(3, condition))
    approved = http(toy_hub, "PUT", f"{CSRS}/{name}/approval", body=body, headers=CLIENT_GO)
    assert approved.status == 200, approved.data
    fetched = http(toy_hub, "GET", f"{CSRS}/{name}", headers=CLIENT_GO)
    status = parse(one(unenvelope(fetched.data)[2], 3))
    condition = parse(one(status, 1))
    assert (text(condition, 1), text(condition, 6), text(condition, 2)) == ("Approved", "True", "r")
    assert 4 in condition and 5 in condition  # lastUpdateTime, lastTransitionTime

    listing = http(toy_hub, "GET", f"{CSRS}?fieldSelector=metadata.name%3D{name}", headers=CLIENT_GO)
    _, kind, items = unenvelope(listing.data)
    assert kind == "CertificateSigningRequestList" and len(items[2]) == 1
    stored = _read(toy_hub, name)
    assert base64.b64decode(stored["spec"]["request"]) == pem and stored["spec"]["expirationSeconds"] == 86400


def test_protobuf_watch_with_the_signer_selector(toy_hub: HubThread) -> None:
    """What a client-go informer on CSRs of one signer reads."""
    signer = f"example.com/{uuid.uuid4().hex[:8]}"
    name = _name()
    assert _post(toy_hub, CSRS, _csr(name, signerName=signer))[0] == 201
    selector = f"spec.signerName%3D{signer}"
    resp = http(toy_hub, "GET", f"{CSRS}?watch=true&fieldSelector={selector}&sendInitialEvents=true"
                f"&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=30",
                headers=CLIENT_GO, stream=True)
    assert resp.headers["Content-Type"] == f"{PROTOBUF};stream=watch"

    def next_event() -> tuple[str, str, dict[int, list[int | bytes]]]:
        """The next event that is not a bookmark (this hub sends them every 0.2 s)."""
        while True:
            size = int.from_bytes(resp.read(4), "big")
            event = parse(resp.read(size))
            _, kind, obj = unenvelope(one(parse(one(event, 2)), 1))
            if text(event, 1) != "BOOKMARK":
                return text(event, 1), kind, obj

    try:
        kind, what, obj = next_event()
        assert (kind, what, text(parse(one(obj, 1)), 1)) == ("ADDED", "CertificateSigningRequest", name)
        _post(toy_hub, CSRS, _csr(_name()))  # another signer: not seen
        approval = _read(toy_hub, name)
        approval["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        assert _post(toy_hub, f"{CSRS}/{name}/approval", approval, method="PUT")[0] == 200
        kind, _, obj = next_event()
        condition = parse(one(parse(one(obj, 3)), 1))
        assert (kind, text(parse(one(obj, 1)), 1), text(condition, 1)) == ("MODIFIED", name, "Approved")
    finally:
        resp.release_conn()
