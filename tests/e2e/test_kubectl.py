"""kubectl, as a user runs it, against the local hub: apply, get (printer columns), patch and
delete an example of every CRD kind the project serves."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.api import crdgen
from ocm_rollout.sandbox.server import HubThread
from tests.e2e.helpers import KUBECTL, REPO, eventually
from tests.hubs import start_hub

pytestmark = pytest.mark.e2e

CRDS = crdgen.generate_crds()

# Minimal valid objects for kinds the examples/ folder does not (yet) show.
FALLBACK: dict[str, dict[str, Any]] = {
    "AddOnDeploymentConfig": {"metadata": {"name": "deploy-config", "namespace": "default"}, "spec": {}},
    "AddOnPlacementScore": {"metadata": {"name": "score", "namespace": "default"}},
    "AddOnTemplate": {
        "metadata": {"name": "template"},
        "spec": {"addonName": "addon", "agentSpec": {"workload": {"manifests": []}}},
    },
    "ClusterManagementAddOn": {"metadata": {"name": "addon"}, "spec": {}},
    "ManagedCluster": {"metadata": {"name": "cluster1"}, "spec": {"hubAcceptsClient": True}},
    "ManagedClusterAddOn": {"metadata": {"name": "addon", "namespace": "default"}, "spec": {}},
    "ManagedClusterSet": {"metadata": {"name": "set1"}, "spec": {}},
    "ManagedClusterSetBinding": {"metadata": {"name": "set1", "namespace": "default"}, "spec": {"clusterSet": "set1"}},
    "Placement": {"metadata": {"name": "placement1", "namespace": "default"}, "spec": {}},
    "PlacementDecision": {"metadata": {"name": "placement1-decision-1", "namespace": "default"}},
    "ManifestWork": {"metadata": {"name": "work1", "namespace": "default"}, "spec": {"workload": {"manifests": []}}},
    "ManifestWorkReplicaSet": {
        "metadata": {"name": "mwrs1", "namespace": "default"},
        "spec": {"placementRefs": [{"name": "placement1"}], "manifestWorkTemplate": {"workload": {"manifests": []}}},
    },
}


def _example(kind: str, api_version: str) -> dict[str, Any]:
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        if "profiles" in path.parts:
            continue
        with path.open(encoding="utf-8") as fh:
            for doc in yaml.safe_load_all(fh):
                if isinstance(doc, dict) and doc.get("kind") == kind and doc.get("apiVersion") == api_version:
                    return doc
    fallback = FALLBACK.get(kind)
    if fallback is None:
        pytest.fail(f"no example of {kind} in examples/ and no fallback in this test")
    return {"apiVersion": api_version, "kind": kind, **fallback}


def _cases() -> list[Any]:
    """Every served version of every kind (the storage version keeps the bare kind as its id)."""
    cases = []
    for crd in CRDS:
        spec = crd["spec"]
        for version in spec["versions"]:
            name = spec["names"]["kind"] if version.get("storage") else f"{spec['names']['kind']}-{version['name']}"
            cases.append(pytest.param(crd, version, id=name))
    return cases


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Any]:
    directory = tmp_path_factory.mktemp("kubectl")
    handle = start_hub(hub_kind, directory, kubeconfig=directory / "kubeconfig")
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def kubectl_env(hub: HubThread, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """kubectl's environment: the hub's kubeconfig and a discovery cache of its own."""
    cache = tmp_path_factory.mktemp("kubectl-cache")
    return {**os.environ, "KUBECONFIG": str(hub.kubeconfig), "KUBECACHEDIR": str(cache), "HOME": str(cache)}


@pytest.fixture(scope="module")
def kubectl(kubectl_env: dict[str, str]) -> Any:
    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=kubectl_env, timeout=60
        )
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


def test_kubectl_talks_to_the_hub(kubectl: Any) -> None:
    out = kubectl("api-resources", "--api-group=cluster.open-cluster-management.io").stdout
    assert "managedclusters" in out and "placements" in out


@pytest.mark.parametrize(("crd", "version"), _cases())
def test_apply_get_patch_delete_every_kind(kubectl: Any, crd: dict[str, Any], version: dict[str, Any], tmp_path: Path) -> None:
    spec = crd["spec"]
    # <plural>.<version>.<group>: kubectl reads this version (a bare plural reads the preferred one).
    plural = f"{spec['names']['plural']}.{version['name']}.{spec['group']}"
    doc = _example(spec["names"]["kind"], f"{spec['group']}/{version['name']}")
    if "status" in version.get("subresources", {}):
        doc.pop("status", None)  # the API drops it; a second apply would re-send it and say "configured"
    meta = doc.setdefault("metadata", {})
    name = meta["name"]
    scope: list[str] = []
    if spec["scope"] == "Namespaced":
        ns = meta.setdefault("namespace", "default")
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        scope = ["-n", ns]
    manifest = tmp_path / "object.yaml"
    manifest.write_text(yaml.safe_dump(doc))

    assert "created" in kubectl("apply", "-f", str(manifest)).stdout
    rv = kubectl("get", plural, name, *scope, "-o", "jsonpath={.metadata.resourceVersion}").stdout
    kubectl("apply", "-f", str(manifest))  # may resend defaulted lists ("configured"), a no-op for the server
    assert kubectl("get", plural, name, *scope, "-o", "jsonpath={.metadata.resourceVersion}").stdout == rv

    header = kubectl("get", plural, name, *scope).stdout.splitlines()[0]
    expected = ["NAME"] + [c["name"].upper() for c in version.get("additionalPrinterColumns", [])] or ["NAME", "AGE"]
    for column in expected:
        assert column in header, f"{column} missing from {header!r}"

    kubectl("patch", plural, name, *scope, "--type", "merge", "-p", '{"metadata":{"labels":{"patched":"yes"}}}')
    labels = kubectl("get", plural, name, *scope, "-o", "jsonpath={.metadata.labels.patched}").stdout
    assert labels == "yes"

    kubectl("label", plural, name, *scope, "second=label")
    listed = kubectl("get", plural, *scope, "-l", "second=label", "-o", "name").stdout.split()
    assert listed == [f"{spec['names']['kind'].lower()}.{spec['group']}/{name}"]

    kubectl("delete", "-f", str(manifest), "--wait=true", "--timeout=30s")
    gone = kubectl("get", plural, name, *scope, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_short_names_read_add_ons_in_the_preferred_version(kubectl: Any) -> None:
    cma = {"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
           "metadata": {"name": "preferred"}, "spec": {"addOnMeta": {"displayName": "Preferred"}}}  # fmt: skip
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cma))
    header, row = kubectl("get", "cma", "preferred").stdout.splitlines()[:2]
    assert "DISPLAY NAME" in header and "CRD NAME" not in header  # v1beta1's columns
    assert "Preferred" in row
    assert kubectl("get", "cma", "preferred", "-o", "jsonpath={.apiVersion}").stdout == "addon.open-cluster-management.io/v1beta1"
    old = kubectl("get", "clustermanagementaddons.v1alpha1.addon.open-cluster-management.io", "preferred").stdout
    assert "CRD NAME" in old.splitlines()[0]
    kubectl("delete", "cma", "preferred")


def test_apply_validates_on_the_server(kubectl: Any) -> None:
    bad = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": "typo"}, "spec": {"hubAcceptsClients": True}}
    proc = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(bad), check=False)
    assert proc.returncode != 0
    assert 'unknown field "spec.hubAcceptsClients"' in proc.stderr


def test_get_watch_prints_changes(kubectl: Any, kubectl_env: dict[str, str]) -> None:
    watch = subprocess.Popen(
        [str(KUBECTL), "get", "namespaces", "--watch"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=kubectl_env,
    )  # fmt: skip
    names: list[str] = []

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            names.append(line.split(maxsplit=1)[0] if line.strip() else "")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        eventually(lambda: "default" in names, message="the listed namespaces")
        kubectl("create", "namespace", "watched")
        eventually(lambda: "watched" in names, message="the new namespace on the watch")
    finally:
        watch.kill()
        watch.wait(10)
        reader.join(10)


def test_configmap_apply_uses_strategic_merge(kubectl: Any) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}, "data": {"a": "1", "b": "2"}}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cm))
    cm["data"] = {"a": "1", "c": "3"}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cm))
    out = kubectl("get", "configmap", "settings", "-n", "default", "-o", "jsonpath={.data}").stdout
    assert yaml.safe_load(out) == {"a": "1", "c": "3"}


def test_imperative_create_of_core_kinds(kubectl: Any) -> None:
    kubectl("create", "namespace", "imperative")
    kubectl("create", "configmap", "cfg", "-n", "imperative", "--from-literal=a=1")
    kubectl("create", "secret", "generic", "pw", "-n", "imperative", "--from-literal=password=hunter2")
    assert kubectl("get", "configmap", "cfg", "-n", "imperative", "-o", "jsonpath={.data.a}").stdout == "1"
    encoded = kubectl("get", "secret", "pw", "-n", "imperative", "-o", "jsonpath={.data.password}").stdout
    assert encoded == "aHVudGVyMg=="
    kubectl("delete", "namespace", "imperative", "--wait=true", "--timeout=30s")


def test_auth_can_i_and_whoami(kubectl: Any) -> None:
    assert kubectl("auth", "can-i", "delete", "manifestworks", "-n", "default").stdout.strip() == "yes"
    assert "admin" in kubectl("auth", "whoami").stdout


def test_describe_shows_the_object(kubectl: Any) -> None:
    cluster = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": "described"}, "spec": {"hubAcceptsClient": True}}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cluster))
    out = kubectl("describe", "managedcluster", "described").stdout
    assert "Hub Accepts Client:" in out and "Events:" in out
    kubectl("delete", "managedcluster", "described")


def test_apply_a_json_list_of_core_kinds(kubectl: Any, tmp_path: Path) -> None:
    """kubectl reads /openapi/v2 in protobuf first: its Content-Type must parse."""
    kubectl("create", "namespace", "listed")
    items = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l1", "namespace": "listed"}, "data": {"a": "1"}},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l2", "namespace": "listed"},
         "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "l3", "namespace": "listed"},
         "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "test", "reportingInstance": "test-1",
         "action": "Listing", "reason": "Listed", "note": "from a list", "type": "Normal",
         "regarding": {"kind": "ConfigMap", "name": "l1", "namespace": "listed"}},
    ]
    manifest = tmp_path / "list.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = kubectl("apply", "-f", str(manifest)).stdout
    assert out.split("\n")[:3] == ["configmap/l1 created", "lease.coordination.k8s.io/l2 created", "event.events.k8s.io/l3 created"]
    assert "unchanged" in kubectl("apply", "-f", str(manifest)).stdout
    assert kubectl("get", "lease", "l2", "-n", "listed", "-o", "jsonpath={.spec.holderIdentity}").stdout == "me"
    events = kubectl("get", "events", "-n", "listed").stdout
    assert "Listed" in events and "configmap/l1" in events and "from a list" in events
    kubectl("delete", "-f", str(manifest))
    kubectl("delete", "namespace", "listed", "--wait=true", "--timeout=30s")


def test_describe_finds_an_objects_events(kubectl: Any) -> None:
    """describe lists events with a typed (protobuf) client and field selectors."""
    kubectl("create", "configmap", "watched-cm", "-n", "default", "--from-literal=a=1")
    uid = kubectl("get", "configmap", "watched-cm", "-n", "default", "-o", "jsonpath={.metadata.uid}").stdout
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "watched-cm.1", "namespace": "default"},
             "involvedObject": {"kind": "ConfigMap", "name": "watched-cm", "namespace": "default", "uid": uid},
             "reason": "Checked", "message": "looked at it", "type": "Normal", "count": 1,
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    kubectl("create", "-f", "-", stdin=json.dumps(event))
    out = kubectl("describe", "configmap", "watched-cm", "-n", "default").stdout
    assert "Checked" in out and "looked at it" in out
    kubectl("delete", "configmap", "watched-cm", "-n", "default")


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_edit_an_addon_in_either_version(
    kubectl: Any, kubectl_env: dict[str, str], version: str, tmp_path: Path
) -> None:
    """``kubectl edit`` reads the object in one version (through the conversion webhook for
    v1beta1) and writes it back in that version; the other version sees the change."""
    name = f"edited-{version}"
    cma = {"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
           "metadata": {"name": name}, "spec": {"addOnMeta": {"displayName": "before"}}}
    kubectl("apply", "-f", "-", stdin=json.dumps(cma))
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/displayName: before/displayName: after/' \"$1\"\n")
    editor.chmod(0o755)
    resource = f"clustermanagementaddons.{version}.addon.open-cluster-management.io/{name}"
    proc = subprocess.run([str(KUBECTL), "edit", resource], capture_output=True, text=True, timeout=60,
                          env={**kubectl_env, "KUBE_EDITOR": str(editor)})
    assert proc.returncode == 0, proc.stderr
    assert "edited" in proc.stdout
    for other in ("v1alpha1", "v1beta1"):
        got = json.loads(kubectl("get", f"clustermanagementaddons.{other}.addon.open-cluster-management.io", name,
                                 "-o", "json").stdout)
        assert got["apiVersion"].endswith(other) and got["spec"]["addOnMeta"]["displayName"] == "after"
    kubectl("delete", resource)
