"""The environment of the add-on manager integration tests (no tests here).

A local hub in a thread, the real addon operator (kopf, ``run_operator``) in-process and
restartable, a synchronous client (helpers.Api), builders for ManagedClusters, Placements with
hand-written decisions, ClusterManagementAddOns, ManagedClusterAddOns and AddOnDeploymentConfigs,
a hand-driven add-on agent (as OCM's own integration tests do: the test creates the add-on's
ManifestWork with the config annotation and marks it ready) and a watch-driven monitor that
checks invariants at every change of every ManagedClusterAddOn.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from api.constants import (
    ADDON_CONDITION_MANIFEST_APPLIED,
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    LABEL_ADDON_NAME,
)
from api.addon_hashing import config_spec_hash_annotation
from controllers.common.wire import format_time
from controllers.runtime.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    EVENTS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    NAMESPACES,
    PLACEMENTS,
)
from controllers.runtime.operator import load_client
from tests.integration.helpers import Api, OperatorThread, SimThread, decide_groups, wait_until

ANNOTATION_CONFIG_SPEC_HASH = "open-cluster-management.io/config-spec-hash"
_names = itertools.count(1)


def utc_now() -> datetime:
    return datetime.now(UTC)


class AddonOperator(OperatorThread):
    """The addon operator in a thread; ending it also ends its writer pool, like a killed process."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(["addon"], kubeconfig)

    @property
    def controller(self) -> Any:
        return self.extras.get("addon")

    def start(self) -> None:
        before = {t for t in threading.enumerate() if t.name == "kopf-operator"}
        super().start()
        self.kopf_threads = {t for t in threading.enumerate() if t.name == "kopf-operator"} - before

    def _end(self, how: Callable[[], object]) -> None:
        if self.thread is None or self.loop is None:
            return
        controller = self.controller
        super()._end(how)
        if controller is not None:
            controller.writer.executor.shutdown(wait=True, cancel_futures=True)
        for thread in getattr(self, "kopf_threads", ()):
            thread.join(60)


def condition(obj: JSON | None, type_: str) -> JSON | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def desired_hashes(mca: JSON | None) -> dict[str, str]:
    """``resource/namespace/name`` -> desired spec hash of each configReferences item."""
    found = {}
    for ref in ((mca or {}).get("status") or {}).get("configReferences") or []:
        desired = ref.get("desiredConfig") or {}
        found[f"{ref.get('resource')}/{desired.get('namespace') or ''}/{desired.get('name')}"] = str(desired.get("specHash") or "")
    return found


@dataclass
class McaMonitor:
    """Follows every ManagedClusterAddOn change through a watch and checks invariants on each."""

    kubeconfig: str
    mcas: dict[tuple[str, str], JSON] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    checks: list[Callable[[dict[tuple[str, str], JSON]], str | None]] = field(default_factory=list)
    changes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> McaMonitor:
        self._thread = threading.Thread(target=self._run, name="mca-monitor", daemon=True)
        self._thread.start()
        assert self._ready.wait(30), "the MCA monitor could not start"
        return self

    def _run(self) -> None:
        client = load_client(self.kubeconfig)
        api = kubernetes.client.CustomObjectsApi(client)
        args = (ADDON_GROUP, "v1alpha1", "managedclusteraddons")
        listing = api.list_cluster_custom_object(*args)
        for item in listing.get("items") or []:
            self.mcas[(item["metadata"]["namespace"], item["metadata"]["name"])] = item
        rv = listing["metadata"]["resourceVersion"]
        self._ready.set()
        while not self._stop.is_set():
            watch = kubernetes.watch.Watch()
            try:
                for event in watch.stream(
                    api.list_cluster_custom_object, *args, resource_version=rv, timeout_seconds=2, allow_watch_bookmarks=True
                ):
                    obj = event["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                    if event["type"] == "DELETED":
                        self.mcas.pop(key, None)
                    else:
                        self.mcas[key] = obj
                    self.changes += 1
                    for check in self.checks:
                        problem = check(self.mcas)
                        if problem is not None:
                            self.violations.append(problem)
                    if self._stop.is_set():
                        break
            except Exception as exc:
                if not self._stop.is_set():
                    self.violations.append(f"monitor watch broke: {exc!r}")
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def in_flight_check(addon: str, desired: Callable[[], dict[str, str]], bound: int) -> Callable[[dict[tuple[str, str], JSON]], str | None]:
    """At most ``bound`` MCAs of ``addon`` whose desired configs are the new ones (``desired()``)
    and that have not applied them yet."""

    def check(mcas: dict[tuple[str, str], JSON]) -> str | None:
        wanted = desired()
        flying = []
        for (cluster, name), mca in mcas.items():
            if name != addon or desired_hashes(mca) != wanted:
                continue
            refs = (mca.get("status") or {}).get("configReferences") or []
            applied = all((r.get("lastAppliedConfig") or {}) == (r.get("desiredConfig") or {}) for r in refs)
            if not applied:
                flying.append(cluster)
        if len(flying) > bound:
            return f"{len(flying)} MCAs in flight (bound {bound}): {sorted(flying)}"
        return None

    return check


class AddonEnv:
    """A local hub (shared or private) and one addon operator."""

    def __init__(self, tmp: Path, hub: Any = None) -> None:
        from sandbox.server import run_in_thread

        self.own_hub = hub is None
        if hub is None:
            self.kubeconfig = str(tmp / "kubeconfig")
            self.hub = run_in_thread(kubeconfig=self.kubeconfig)
        else:
            self.hub = hub
            self.kubeconfig = str(hub.kubeconfig)
        self.api = Api(self.kubeconfig)
        self.operator = AddonOperator(self.kubeconfig)
        self.simulation: SimThread | None = None

    def close(self) -> None:
        self.operator.kill()
        if self.simulation is not None:
            self.simulation.stop()
        if self.own_hub:
            self.hub.stop()

    def simulate(self, clusters: int, profile: JSON) -> list[str]:
        self.simulation = SimThread(self.kubeconfig, clusters=clusters, profile=profile).start()
        return self.simulation.cluster_names()

    # -- names ------------------------------------------------------------------------------------
    def unique(self, prefix: str) -> str:
        return f"{prefix}{next(_names)}"

    def namespace(self, name: str) -> str:
        if self.api.get_or_none(NAMESPACES, name) is None:
            self.api.create(NAMESPACES, {"metadata": {"name": name}})
        return name

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

    # -- the hand-driven add-on agent (ADDON.md 9: what the per-add-on framework does) -------------
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


def wait_for(predicate: Callable[[], Any], *, timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``predicate`` every 50 ms (for 20 s unless told) until it returns something truthy."""
    return wait_until(predicate, timeout=timeout, interval=0.05, message=what)


def holds_for(predicate: Callable[[], bool], seconds: float, *, what: str = "invariant") -> None:
    """Check ``predicate`` repeatedly for ``seconds`` (to show that something does NOT happen)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), f"{what} broken"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, hub: Any) -> Iterator[AddonEnv]:
    """The addon operator on the session's shared local hub."""
    environment = AddonEnv(tmp_path_factory.mktemp("addon"), hub)
    environment.operator.start()
    try:
        yield environment
    finally:
        environment.close()
