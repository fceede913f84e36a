"""The pure parts of the RBAC and CSR strategies: field error wording, signer names, the CSR
condition column, and what each CSR endpoint keeps."""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.builtin_csr import CsrStrategy, condition_summary, signer_name_causes
from ocm_rollout.sandbox.builtin_rbac import BindingStrategy
from ocm_rollout.sandbox.strategy import go_value


def test_go_value_formats_as_field_errors_do() -> None:
    assert go_value("a") == '"a"' and go_value(60) == "60" and go_value(["/x"]) == '[]string{"/x"}'
    assert go_value(b"-\n") == "[]byte{0x2d, 0xa}"


def test_signer_names() -> None:
    assert signer_name_causes("kubernetes.io/kube-apiserver-client") == []
    assert signer_name_causes("open-cluster-management.io/addon-signer") == []
    assert [c["message"] for c in signer_name_causes("example/signer")] == [
        'Invalid value: "example": should be a domain with at least two segments separated by dots'
    ]
    assert signer_name_causes("")[0]["reason"] == "FieldValueRequired"
    assert signer_name_causes("Example.com/x")[0]["message"].startswith('Invalid value: "Example.com": validating label "Example"')


def test_condition_summary() -> None:
    def csr(*types: str, cert: str = "") -> dict[str, Any]:
        return {"status": {"conditions": [{"type": t, "status": "True"} for t in types], "certificate": cert}}

    assert condition_summary(csr()) == "Pending"
    assert condition_summary(csr("Approved", cert="eA==")) == "Approved,Issued"
    assert condition_summary(csr("Approved", "Denied", "Failed")) == "Denied,Failed"


def test_csr_endpoints_keep_their_parts() -> None:
    strategy = CsrStrategy()
    old = {"spec": {"signerName": "a.io/b"}, "status": {"conditions": [
        {"type": "Approved", "status": "True", "lastUpdateTime": "t0", "lastTransitionTime": "t0"}]}}
    new: dict[str, Any] = {"spec": {"signerName": "c.io/d"}, "status": {"certificate": "eA=="}}
    strategy.prepare_update(new, old, None)
    assert new == old
    new = {"spec": {}, "status": {"certificate": "eA==", "conditions": [
        {"type": "Approved", "status": "True", "reason": "changed"}, {"type": "Failed", "status": "True"}]}}
    strategy.prepare_update(new, old, "status")
    assert new["spec"] == old["spec"] and new["status"]["certificate"] == "eA=="
    approved, failed = new["status"]["conditions"]
    assert approved == old["status"]["conditions"][0]  # the approval is not /status's to change
    assert failed["lastUpdateTime"] and failed["lastTransitionTime"]
    new = {"status": {"certificate": "eA==", "conditions": [{"type": "Approved", "status": "True"}]}}
    strategy.prepare_update(new, old, "approval")
    assert "certificate" not in new["status"]
    assert new["status"]["conditions"][0]["lastTransitionTime"] == "t0"  # same type and status: kept


def test_binding_defaults() -> None:
    binding: dict[str, Any] = {"roleRef": {"kind": "ClusterRole", "name": "x"},
                               "subjects": [{"kind": "Group", "name": "g"}, {"kind": "ServiceAccount", "name": "s"}]}
    BindingStrategy(False).default(binding)
    assert binding["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert [s.get("apiGroup") for s in binding["subjects"]] == ["rbac.authorization.k8s.io", None]
