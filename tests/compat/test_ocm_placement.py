"""OCM's own placement controller (its `placement controller` binary) against ``ocm-rollout up
--controllers none`` on each hub kind (``hub_kind``: the embedded hub and kube-apiserver): it
schedules a Placement into a PlacementDecision, and none of its requests to the hub fails.
Skipped when the binary is absent (``make ocm-binaries`` builds it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.compat.ocm_binaries import OcmProcess, require
from tests.e2e.helpers import Up, eventually
from tests.hub_kinds import up_args

pytestmark = pytest.mark.e2e

CLUSTER_GROUP = "cluster.open-cluster-management.io"
RUN_SECONDS = 15


def test_ocm_placement_controller_schedules_against_our_hub_without_request_errors(tmp_path: Path, hub_kind: str) -> None:
    require("placement")
    up = Up(tmp_path, *up_args(hub_kind), "--controllers", "none", "--clusters", "3", "--no-view")
    ocm: OcmProcess | None = None
    try:
        kubeconfig = up.wait_kubeconfig()
        api_client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        # Untyped: the calls take and return plain dicts.
        custom: Any = kubernetes.client.CustomObjectsApi(api_client)
        core: Any = kubernetes.client.CoreV1Api(api_client)
        eventually(
            lambda: len(custom.list_cluster_custom_object(CLUSTER_GROUP, "v1", "managedclusters")["items"]) == 3,
            message="three managed clusters",
        )
        core.create_namespace({"metadata": {"name": "open-cluster-management-hub"}})
        core.create_namespace({"metadata": {"name": "compat"}})
        custom.create_namespaced_custom_object(
            CLUSTER_GROUP,
            "v1beta2",
            "compat",
            "managedclustersetbindings",
            {
                "apiVersion": f"{CLUSTER_GROUP}/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": "default", "namespace": "compat"},
                "spec": {"clusterSet": "default"},
            },
        )

        started = time.monotonic()
        ocm = OcmProcess.start("placement", kubeconfig, tmp_path / "ocm-placement.log")
        custom.create_namespaced_custom_object(
            CLUSTER_GROUP,
            "v1beta1",
            "compat",
            "placements",
            {
                "apiVersion": f"{CLUSTER_GROUP}/v1beta1",
                "kind": "Placement",
                "metadata": {"name": "two", "namespace": "compat"},
                "spec": {"clusterSets": ["default"], "numberOfClusters": 2},
            },
        )

        def decided() -> list[str] | None:
            assert ocm is not None and ocm.running(), f"OCM's placement controller exited:\n{ocm and ocm.output()}"
            pages = custom.list_namespaced_custom_object(
                CLUSTER_GROUP,
                "v1beta1",
                "compat",
                "placementdecisions",
                label_selector=f"{CLUSTER_GROUP}/placement=two",
            )["items"]
            clusters = sorted(
                d["clusterName"] for page in pages for d in (page.get("status") or {}).get("decisions") or []
            )
            return clusters if len(clusters) == 2 else None

        clusters = eventually(decided, timeout=120, message="OCM's placement controller to decide two clusters")
        assert set(clusters) <= {"cluster1", "cluster2", "cluster3"}

        # OCM writes the decisions first and the Placement's status after them (another object).
        def selected() -> int | None:
            placement = custom.get_namespaced_custom_object(CLUSTER_GROUP, "v1beta1", "compat", "placements", "two")
            count = (placement.get("status") or {}).get("numberOfSelectedClusters")
            return count if count == 2 else None

        assert eventually(selected, timeout=60, message="the Placement's status to count two clusters") == 2

        time.sleep(max(0.0, RUN_SECONDS - (time.monotonic() - started)))
        assert ocm.running(), f"OCM's placement controller exited:\n{ocm.output()}"
        ocm.stop()
        errors = ocm.request_errors()
        assert errors == [], "OCM's placement controller logged request errors:\n" + "\n".join(errors)
    finally:
        if ocm is not None:
            ocm.stop()
        up.stop()
