"""`python -m ocm_rollout.sandbox.server`, dry runs and metadata-only answers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api, http, widget_crd

REPO = Path(__file__).resolve().parents[2]


def test_server_command_serves_the_given_crds_and_stops_cleanly(tmp_path: Path) -> None:
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    (crd_dir / "widgets.yaml").write_text(yaml.safe_dump(widget_crd()))
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ocm_rollout.sandbox.server", "--port", "0", "--kubeconfig", str(kubeconfig), "--crds", str(crd_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[0].startswith("local hub serving at https://127.0.0.1:")
        apic = config.new_client_from_config(config_file=str(kubeconfig))
        groups = [g.name for g in api("ApisApi", apic).get_api_versions().groups]
        assert WIDGET_GROUP in groups
        apic.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_server_command_reports_a_missing_crd_path(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ocm_rollout.sandbox.server", "--kubeconfig", str(tmp_path / "k"), "--crds", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "nope does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_dry_run_create_persists_nothing(toy_client: Any, toy_namespace: str) -> None:
    crs = api("CustomObjectsApi", toy_client)
    body = {"apiVersion": f"{WIDGET_GROUP}/v1", "kind": "Widget", "metadata": {"name": "dry"}, "spec": {"size": 1}}
    out = crs.create_namespaced_custom_object(WIDGET_GROUP, "v1", toy_namespace, "widgets", body, dry_run="All")
    assert out["spec"]["mode"] == "Small"
    assert crs.list_namespaced_custom_object(WIDGET_GROUP, "v1", toy_namespace, "widgets")["items"] == []


def test_dry_run_delete_keeps_the_object(toy_client: Any, toy_namespace: str) -> None:
    crs = api("CustomObjectsApi", toy_client)
    body = {"apiVersion": f"{WIDGET_GROUP}/v1", "kind": "Widget", "metadata": {"name": "stay"}, "spec": {"size": 1}}
    crs.create_namespaced_custom_object(WIDGET_GROUP, "v1", toy_namespace, "widgets", body)
    crs.delete_namespaced_custom_object(WIDGET_GROUP, "v1", toy_namespace, "widgets", "stay", dry_run="All")
    assert crs.get_namespaced_custom_object(WIDGET_GROUP, "v1", toy_namespace, "widgets", "stay")["metadata"]["name"] == "stay"


def test_partial_object_metadata_list(toy_hub: HubThread, toy_namespace: str) -> None:
    resp = http(
        toy_hub, "GET", f"/api/v1/namespaces/{toy_namespace}",
        headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
    )
    body = json.loads(resp.data)
    assert body["kind"] == "PartialObjectMetadata" and body["metadata"]["name"] == toy_namespace
    assert "spec" not in body


def test_unacceptable_media_type_is_refused(toy_hub: HubThread) -> None:
    """Custom resources have no protobuf form (built-in kinds do: see test_hub_protobuf)."""
    resp = http(toy_hub, "GET", f"/apis/{WIDGET_GROUP}/v1/widgets", headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert resp.status == 406
    assert json.loads(resp.data)["message"] == (
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


@pytest.mark.parametrize("path", ["/apis/test.ocm-rollout.io/v1/namespaces/default/widgets/x/scale", "/apis/nope/v1/things"])
def test_unknown_paths_are_not_found(toy_hub: HubThread, path: str) -> None:
    resp = http(toy_hub, "GET", path)
    assert resp.status == 404 and json.loads(resp.data)["kind"] == "Status"
