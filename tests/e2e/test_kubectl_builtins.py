"""kubectl against the local hub for the built-in kinds an add-on manager and its agents use:
RBAC, ServiceAccounts and CertificateSigningRequests, with the columns kubectl shows for them
from a real API server."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ocm_rollout.sandbox.server import HubThread
from tests.e2e.helpers import KUBECTL
from tests.hubs import start_hub
from tests.integration.test_hub_csr import _request_pem

pytestmark = pytest.mark.e2e

SIGNER = "open-cluster-management.io/addon-signer"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Any]:
    directory = tmp_path_factory.mktemp("kubectl-builtins")
    handle = start_hub(hub_kind, directory, kubeconfig=directory / "kubeconfig")
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def kubectl(hub: HubThread, tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache = tmp_path_factory.mktemp("kubectl-builtins-cache")
    env = {**os.environ, "KUBECONFIG": str(hub.kubeconfig), "KUBECACHEDIR": str(cache), "HOME": str(cache)}

    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_rbac_and_service_accounts(kubectl: Any) -> None:
    kubectl("create", "namespace", "rbac-demo")
    kubectl("create", "serviceaccount", "agent", "-n", "rbac-demo")
    kubectl("create", "role", "reader", "-n", "rbac-demo", "--verb=get,list", "--resource=configmaps,secrets")
    kubectl("create", "rolebinding", "rb", "-n", "rbac-demo", "--role=reader", "--user=alice", "--group=devs",
            "--serviceaccount=rbac-demo:agent")
    kubectl("create", "clusterrole", "open-cluster-management:reader", "--verb=get", "--non-resource-url=/healthz")
    kubectl("create", "clusterrolebinding", "crb", "--clusterrole=open-cluster-management:reader",
            "--group=system:authenticated")

    out = kubectl("get", "role,rolebinding,serviceaccount", "-n", "rbac-demo").stdout
    blocks = [_table(b) for b in out.strip().split("\n\n")]
    assert blocks[0][0] == ["NAME", "CREATED", "AT"] and blocks[0][1][0] == "role.rbac.authorization.k8s.io/reader"
    assert blocks[0][1][1].endswith("Z")  # an RFC 3339 time, not an age
    assert blocks[1][0] == ["NAME", "ROLE", "AGE"] and blocks[1][1][:2] == ["rolebinding.rbac.authorization.k8s.io/rb", "Role/reader"]
    assert blocks[2][0] == ["NAME", "SECRETS", "AGE"] and blocks[2][1][:2] == ["serviceaccount/agent", "0"]

    wide = _table(kubectl("get", "rolebinding", "rb", "-n", "rbac-demo", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert wide[1][:2] == ["rb", "Role/reader"] and wide[1][3:] == ["alice", "devs", "rbac-demo/agent"]
    crb = _table(kubectl("get", "clusterrolebinding", "crb").stdout)
    assert crb == [["NAME", "ROLE", "AGE"], ["crb", "ClusterRole/open-cluster-management:reader", crb[1][2]]]
    assert "sa" in kubectl("api-resources", "--api-group=").stdout.split()

    # roleRef cannot change; kubectl shows kube-apiserver's error
    changed = kubectl("patch", "rolebinding", "rb", "-n", "rbac-demo", "--type=merge", "-p",
                      '{"roleRef":{"name":"writer"}}', check=False)
    assert changed.returncode != 0 and "cannot change roleRef" in changed.stderr
    kubectl("delete", "namespace", "rbac-demo", "--wait=true", "--timeout=30s")
    kubectl("delete", "clusterrolebinding", "crb")


def test_certificate_signing_requests(kubectl: Any) -> None:
    docs = []
    for name, extra in (("csr-a", {}), ("csr-b", {"expirationSeconds": 86400})):
        spec = {"request": base64.b64encode(_request_pem()).decode(), "signerName": SIGNER, "usages": ["client auth"], **extra}
        docs.append({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                     "metadata": {"name": name}, "spec": spec})
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    rows = _table(kubectl("get", "csr").stdout)
    assert rows[0] == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert [r[2:] for r in rows[1:]] == [[SIGNER, "admin", "<none>", "Pending"], [SIGNER, "admin", "24h", "Pending"]]

    kubectl("certificate", "approve", "csr-a")
    kubectl("certificate", "deny", "csr-b")
    refused = kubectl("certificate", "approve", "csr-b", check=False)
    assert refused.returncode != 0 and "already Denied" in refused.stderr
    rows = _table(kubectl("get", "csr", "--field-selector", f"spec.signerName={SIGNER}").stdout)
    assert {r[0]: r[-1] for r in rows[1:]} == {"csr-a": "Approved", "csr-b": "Denied"}
    reason = kubectl("get", "csr", "csr-a", "-o", "jsonpath={.status.conditions[0].reason}").stdout
    assert reason == "KubectlApprove"
    kubectl("delete", "csr", "csr-a", "csr-b")
