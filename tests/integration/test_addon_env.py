"""The environment of the add-on manager integration tests (no tests here).

A local hub in a thread, the real addon operator (kopf, ``run_operator``) in-process and
restartable and a synchronous client (helpers.ControllerEnv), builders for ManagedClusters,
Placements with hand-written decisions, ClusterManagementAddOns, ManagedClusterAddOns and
AddOnDeploymentConfigs, and a hand-driven add-on agent (as OCM's own integration tests do: the
test creates the add-on's ManifestWork with the config annotation and marks it ready). The
watch-driven monitor that checks invariants at every change of every ManagedClusterAddOn is
helpers.WatchMonitor over MANAGED_CLUSTER_ADDONS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import config_spec_hash_annotation, spec_hash
from ocm_rollout.api.constants import (
    ADDON_CONDITION_MANIFEST_APPLIED,
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    LABEL_ADDON_NAME,
)
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    EVENTS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    PLACEMENTS,
)
from ocm_rollout.controllers.common.wire import format_time
from tests.integration.helpers import ControllerEnv, decide_groups, operating, utc_now, wait_until

ANNOTATION_CONFIG_SPEC_HASH = "open-cluster-management.io/config-spec-hash"


def desired_hashes(mca: JSON | None) -> dict[str, str]:
    """``resource/namespace/name`` -> desired spec hash of each configReferences item."""
    found = {}
    for ref in ((mca or {}).get("status") or {}).get("configReferences") or []:
        desired = ref.get("desiredConfig") or {}
        found[f"{ref.get('resource')}/{desired.get('namespace') or ''}/{desired.get('name')}"] = str(desired.get("specHash") or "")
    return found


class AddonEnv(ControllerEnv):
    """A local hub (shared or private) and one addon operator."""

    def __init__(self, tmp: Path, hub: Any = None, *, kind: str = "local") -> None:
        super().__init__(tmp, "addon", hub, kind=kind)

    # -- clusters ---------------------------------------------------------------------------------
    def clusters(self, count: int, prefix: str | None = None, annotations: dict[str, dict[str, str]] | None = None) -> list[str]:
        """ManagedClusters (with their namespaces) ``<prefix>-01``..; ``annotations`` by cluster."""
        base = prefix or self.unique("ac")
        names = [f"{base}-{i:02d}" for i in range(1, count + 1)]
        for name in names:
            self.namespace(name)
            metadata: JSON = {"name": name}
            if annotations and name in annotations:
                metadata["annotations"] = annotations[name]
            self.api.create(MANAGED_CLUSTERS, {"metadata": metadata, "spec": {"hubAcceptsClient": True}})
        return names

    # -- objects ----------------------------------------------------------------------------------
    def placement(self, ns: str, name: str, groups: list[list[str]] | None = None) -> None:
        """A Placement and, with ``groups``, its status and decision pages written by hand."""
        self.namespace(ns)
        if self.api.get_or_none(PLACEMENTS, name, ns) is None:
            self.api.create(PLACEMENTS, {"metadata": {"name": name, "namespace": ns}, "spec": {}}, ns)
        if groups is not None:
            decide_groups(self.api, ns, name, groups)

    def adc(self, ns: str, name: str, variable: str) -> JSON:
        """An AddOnDeploymentConfig with one customized variable ``test=<variable>``: created, or updated."""
        self.namespace(ns)
        spec = {"customizedVariables": [{"name": "test", "value": variable}]}
        existing = self.api.get_or_none(ADDON_DEPLOYMENT_CONFIGS, name, ns)
        if existing is None:
            return self.api.create(ADDON_DEPLOYMENT_CONFIGS, {"metadata": {"name": name, "namespace": ns}, "spec": spec}, ns)
        return self.api.patch(ADDON_DEPLOYMENT_CONFIGS, name, {"spec": spec}, ns)

    def cma(
        self,
        name: str,
        *,
        placements: list[JSON] | None = None,
        defaults: list[JSON] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> JSON:
        spec: JSON = {"addOnMeta": {"displayName": name}}
        if defaults is not None:
            spec["supportedConfigs"] = defaults
        if placements is not None:
            spec["installStrategy"] = {"type": "Placements", "placements": placements}
        metadata: JSON = {"name": name}
        if annotations:
            metadata["annotations"] = annotations
        return self.api.create(CLUSTER_MANAGEMENT_ADDONS, {"metadata": metadata, "spec": spec})

    def mca(self, cluster: str, name: str, configs: list[JSON] | None = None) -> JSON:
        spec: JSON = {}
        if configs is not None:
            spec["configs"] = configs
        return self.api.create(MANAGED_CLUSTER_ADDONS, {"metadata": {"name": name, "namespace": cluster}, "spec": spec}, cluster)

    def get_mca(self, cluster: str, name: str) -> JSON | None:
        return self.api.get_or_none(MANAGED_CLUSTER_ADDONS, name, cluster)

    def get_cma(self, name: str) -> JSON:
        return self.api.get(CLUSTER_MANAGEMENT_ADDONS, name)

    def config_refs(self, cluster: str, name: str) -> list[JSON]:
        """The MCA's status.configReferences."""
        return list(((self.get_mca(cluster, name) or {}).get("status") or {}).get("configReferences") or [])

    def adc_hash(self, ns: str, name: str) -> str:
        """The spec hash of an AddOnDeploymentConfig as stored."""
        return spec_hash(self.api.get(ADDON_DEPLOYMENT_CONFIGS, name, ns))

    def progression_condition(self, name: str, index: int = 0) -> JSON | None:
        progressions = (self.get_cma(name).get("status") or {}).get("installProgressions") or []
        if len(progressions) <= index:
            return None
        for cond in progressions[index].get("conditions") or []:
            if cond.get("type") == "Progressing":
                return dict(cond)
        return None

    def events(self, name: str) -> list[JSON]:
        return [
            e for e in self.api.list(EVENTS, None)
            if (e.get("involvedObject") or {}).get("name") == name
        ]

    # -- the hand-driven add-on agent (docs/behaviour/addons.md 9: what the per-add-on framework does) -------------
    def manifest_applied(self, cluster: str, name: str) -> None:
        """Set the MCA's ManifestApplied condition True (read-modify-write with its resourceVersion)."""

        def attempt() -> bool:
            mca = self.get_mca(cluster, name)
            if mca is None:
                return False
            conditions = [c for c in (mca.get("status") or {}).get("conditions") or [] if c.get("type") != ADDON_CONDITION_MANIFEST_APPLIED]
            conditions.append({
                "type": ADDON_CONDITION_MANIFEST_APPLIED, "status": "True", "reason": "AddonManifestApplied",
                "message": "manifests of addon are applied successfully", "lastTransitionTime": format_time(utc_now()),
            })
            try:
                self.api.patch_status(
                    MANAGED_CLUSTER_ADDONS, name,
                    {"metadata": {"resourceVersion": mca["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}},
                    cluster,
                )
            except Exception:
                return False
            return True

        wait_until(attempt, timeout=30, message=f"ManifestApplied on {cluster}/{name}")

    def deploy_work(self, cluster: str, name: str) -> JSON:
        """Create or update work ``addon-<name>-deploy-0`` whose config annotation mirrors the MCA's
        desired hashes (its manifests change with them, so its generation does)."""
        mca = self.get_mca(cluster, name)
        annotation = config_spec_hash_annotation(mca or {})
        work_name = f"addon-{name}-deploy-0"
        annotations = {} if annotation is None else {ANNOTATION_CONFIG_SPEC_HASH: annotation}
        manifest = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{name}-agent", "namespace": "default"},
            "data": {"hashes": json.dumps(desired_hashes(mca), sort_keys=True)},
        }
        body: JSON = {
            "metadata": {"name": work_name, "namespace": cluster, "labels": {LABEL_ADDON_NAME: name}, "annotations": annotations},
            "spec": {"workload": {"manifests": [manifest]}},
        }
        existing = self.api.get_or_none(MANIFEST_WORKS, work_name, cluster)
        if existing is None:
            return self.api.create(MANIFEST_WORKS, body, cluster)
        return self.api.patch(
            MANIFEST_WORKS, work_name, {"metadata": {"annotations": annotations}, "spec": body["spec"]}, cluster
        )

    def work_ready(self, cluster: str, name: str, ready: bool = True) -> None:
        """Mark the add-on's deploy work Applied/Available (``ready``) or not, at its generation."""
        work_name = f"addon-{name}-deploy-0"
        work = self.api.get(MANIFEST_WORKS, work_name, cluster)
        generation = work["metadata"].get("generation", 1)
        status = "True" if ready else "False"
        now = format_time(utc_now())
        conditions = [
            {"type": t, "status": status, "reason": "Test", "message": "", "lastTransitionTime": now, "observedGeneration": generation}
            for t in ("Applied", "Available")
        ]
        self.api.patch_status(MANIFEST_WORKS, work_name, {"status": {"conditions": conditions}}, cluster)

    def describe(self, clusters: list[str], name: str) -> JSON:
        """What a failed wait shows: per cluster, the MCA's resourceVersion, conditions and config
        hashes, and its deploy work's annotation, generation and conditions; and the CMA's status."""
        shown: JSON = {}
        for cluster in clusters:
            mca = self.get_mca(cluster, name) or {}
            status = mca.get("status") or {}
            work = self.api.get_or_none(MANIFEST_WORKS, f"addon-{name}-deploy-0", cluster) or {}
            shown[cluster] = {
                "mca": {
                    "rv": (mca.get("metadata") or {}).get("resourceVersion"),
                    "conditions": [(c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in status.get("conditions") or []],
                    "configs": [
                        ((r.get("desiredConfig") or {}).get("specHash"), (r.get("lastAppliedConfig") or {}).get("specHash"))
                        for r in status.get("configReferences") or []
                    ],
                },
                "work": {
                    "annotation": ((work.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_CONFIG_SPEC_HASH),
                    "generation": (work.get("metadata") or {}).get("generation"),
                    "conditions": [
                        (c.get("type"), c.get("status"), c.get("observedGeneration")) for c in (work.get("status") or {}).get("conditions") or []
                    ],
                },
            }
        shown["cma"] = (self.api.get_or_none(CLUSTER_MANAGEMENT_ADDONS, name) or {}).get("status")
        return shown

    def agent_step(self, clusters: list[str], name: str, ready: bool = True) -> None:
        """What the add-on's framework and agent do after a config change: the work mirrors the
        MCA's desired configs and reports ``ready``."""
        for cluster in clusters:
            self.deploy_work(cluster, name)
            self.work_ready(cluster, name, ready)


def adc_ref(ns: str, name: str) -> JSON:
    return {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE, "namespace": ns, "name": name}


def default_adc(ns: str, name: str) -> JSON:
    return {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE, "defaultConfig": {"namespace": ns, "name": name}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, controller_hub: Any) -> Iterator[AddonEnv]:
    """The addon operator on the module's hub (``controller_hub``: the shared local one, or a
    kube-apiserver of its own)."""
    yield from operating(AddonEnv(tmp_path_factory.mktemp("addon"), controller_hub))
