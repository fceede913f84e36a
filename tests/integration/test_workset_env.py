"""The environment of the ManifestWorkReplicaSet integration tests (no tests here).

A local hub in a thread, the real workset operator (kopf, ``run_operator``) in-process and
restartable (helpers.OperatorThread), a synchronous client over the same kubeconfig
(helpers.Api), simulated clusters (helpers.SimThread), builders for Placements,
PlacementDecisions and ManifestWorkReplicaSets, a hand-driven work agent (OCM's integration
tests write ManifestWork status by hand; so do we where a scenario needs exact control) and
a watch-driven monitor that checks invariants at every change of every ManifestWork.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import kubernetes
import pytest

from api.constants import LABEL_MANIFESTWORK_REPLICASET
from controllers.common.wire import format_time
from controllers.runtime.kube import (
    EVENTS,
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    NAMESPACES,
    PLACEMENTS,
)
from controllers.runtime.operator import load_client
from tests.integration.helpers import Api, OperatorThread, SimThread, decide_groups, wait_until

T = TypeVar("T")

CONFIGMAP_TEMPLATE: JSON = {
    "workload": {
        "manifests": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "test-cm", "namespace": "default"},
                "data": {"version": "1"},
            }
        ]
    }
}

_names = itertools.count(1)


def utc_now() -> datetime:
    return datetime.now(UTC)


class WorksetOperator(OperatorThread):
    """The workset operator in a thread; ending it also ends its writer pool, like a killed
    process: requests already on the wire complete, nothing else is sent."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(["workset"], kubeconfig)

    @property
    def controller(self) -> Any:
        return self.extras.get("workset")

    def start(self) -> None:
        before = {t for t in threading.enumerate() if t.name == "kopf-operator"}
        super().start()
        # This instance's own kopf thread (others may run beside it: overlapping instances).
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


@dataclass
class WorkMonitor:
    """Follows every ManifestWork change through a watch and checks invariants on each one."""

    kubeconfig: str
    # (namespace, name) -> latest object
    works: dict[tuple[str, str], JSON] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    checks: list[Callable[[dict[tuple[str, str], JSON]], str | None]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="work-monitor", daemon=True)
        self._thread.start()
        assert self._ready.wait(30), "the work monitor could not start"

    def _run(self) -> None:
        client = load_client(self.kubeconfig)
        api = kubernetes.client.CustomObjectsApi(client)
        listing = api.list_cluster_custom_object("work.open-cluster-management.io", "v1", "manifestworks")
        for item in listing.get("items") or []:
            self.works[(item["metadata"]["namespace"], item["metadata"]["name"])] = item
        rv = listing["metadata"]["resourceVersion"]
        self._ready.set()
        while not self._stop.is_set():
            watch = kubernetes.watch.Watch()
            try:
                for event in watch.stream(
                    api.list_cluster_custom_object,
                    "work.open-cluster-management.io",
                    "v1",
                    "manifestworks",
                    resource_version=rv,
                    timeout_seconds=2,
                    allow_watch_bookmarks=True,
                ):
                    obj = event["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                    if event["type"] == "DELETED":
                        self.works.pop(key, None)
                    else:
                        self.works[key] = obj
                    for check in self.checks:
                        problem = check(self.works)
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


class Env:
    """A local hub (shared or private) and one workset operator shared by a test module."""

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
        self.operator = WorksetOperator(self.kubeconfig)
        self.simulation: SimThread | None = None

    def simulate(self, clusters: int, profile: JSON) -> list[str]:
        """Start simulated clusters cluster1..clusterN with their work agents."""
        self.simulation = SimThread(self.kubeconfig, clusters=clusters, profile=profile).start()
        return self.simulation.cluster_names()

    def close(self) -> None:
        # kopf's graceful stop waits for its watch streams; nothing is left to finish here.
        self.operator.kill()
        if self.simulation is not None:
            self.simulation.stop()
        if self.own_hub:
            self.hub.stop()

    # -- names and namespaces ------------------------------------------------------------------
    def unique(self, prefix: str) -> str:
        return f"{prefix}{next(_names)}"

    def namespace(self, name: str) -> str:
        if self.api.get_or_none(NAMESPACES, name) is None:
            self.api.create(NAMESPACES, {"metadata": {"name": name}})
        return name

    def clusters(self, count: int, prefix: str | None = None) -> list[str]:
        base = prefix or self.unique("cl")
        names = [f"{base}-{i:02d}" for i in range(1, count + 1)]
        for name in names:
            self.namespace(name)
        return names

    # -- placements ----------------------------------------------------------------------------
    def placement(self, ns: str, name: str, groups: list[list[str]] | None = None) -> None:
        """A Placement with status and its PlacementDecisions (created directly, as OCM's own
        ManifestWorkReplicaSet tests do); ``groups`` are its decision groups' clusters."""
        if self.api.get_or_none(PLACEMENTS, name, ns) is None:
            self.api.create(PLACEMENTS, {"metadata": {"name": name, "namespace": ns}, "spec": {}}, ns)
        self.set_decisions(ns, name, groups if groups is not None else [[]])

    def set_decisions(self, ns: str, name: str, groups: list[list[str]]) -> None:
        decide_groups(self.api, ns, name, groups)

    # -- ManifestWorkReplicaSets ---------------------------------------------------------------
    def mwrs(
        self,
        ns: str,
        name: str,
        refs: list[JSON],
        *,
        template: JSON | None = None,
        labels: dict[str, str] | None = None,
        cascade: str | None = None,
    ) -> JSON:
        spec: JSON = {"placementRefs": refs, "manifestWorkTemplate": template or CONFIGMAP_TEMPLATE}
        if cascade:
            spec["cascadeDeletionPolicy"] = cascade
        return self.api.create(
            MANIFEST_WORK_REPLICA_SETS,
            {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec},
            ns,
        )

    def get_mwrs(self, ns: str, name: str) -> JSON | None:
        return self.api.get_or_none(MANIFEST_WORK_REPLICA_SETS, name, ns)

    def works_of(self, ns: str, name: str) -> list[JSON]:
        works = self.api.list(MANIFEST_WORKS, labels=f"{LABEL_MANIFESTWORK_REPLICASET}={ns}.{name}")
        return sorted(works, key=lambda w: w["metadata"]["namespace"])

    def clusters_with_works(self, ns: str, name: str) -> list[str]:
        return [w["metadata"]["namespace"] for w in self.works_of(ns, name)]

    def events(self, ns: str, reason: str | None = None) -> list[JSON]:
        found = self.api.list(EVENTS, ns)
        return [e for e in found if reason is None or e.get("reason") == reason]

    # -- the hand-driven agent -------------------------------------------------------------------
    def set_work_conditions(self, work: JSON, conditions: list[tuple[str, str]], *, reason: str = "Test") -> JSON:
        """Write work-level conditions at the work's generation, set-condition style."""
        fresh = self.api.get(MANIFEST_WORKS, work["metadata"]["name"], work["metadata"]["namespace"])
        generation = fresh["metadata"].get("generation", 0)
        old = {c["type"]: c for c in (fresh.get("status") or {}).get("conditions") or []}
        now = format_time(utc_now())
        out = dict(old)
        for type_, status in conditions:
            previous = old.get(type_)
            ltt = previous["lastTransitionTime"] if previous and previous["status"] == status else now
            out[type_] = {
                "type": type_,
                "status": status,
                "observedGeneration": generation,
                "lastTransitionTime": ltt,
                "reason": reason,
                "message": "",
            }
        return self.api.patch_status(
            MANIFEST_WORKS,
            fresh["metadata"]["name"],
            {"status": {"conditions": list(out.values())}},
            fresh["metadata"]["namespace"],
        )

    def succeed(self, work: JSON) -> JSON:
        return self.set_work_conditions(
            work, [("Applied", "True"), ("Available", "True"), ("Progressing", "False")]
        )

    def fail(self, work: JSON) -> JSON:
        return self.set_work_conditions(work, [("Applied", "True"), ("Progressing", "True"), ("Degraded", "True")])


def wait_for(predicate: Callable[[], T], *, timeout: float = 20.0, what: str = "condition") -> T:
    """Poll ``predicate`` (every 50 ms, for 20 s unless told) until it returns something truthy;
    its value is returned."""
    return wait_until(predicate, timeout=timeout, interval=0.05, message=what)


def holds_for(predicate: Callable[[], bool], seconds: float, *, what: str = "invariant") -> None:
    """Check ``predicate`` repeatedly for ``seconds`` (used to show that something does NOT happen)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), f"{what} broken"
        time.sleep(0.05)


def condition(obj: JSON | None, type_: str) -> tuple[str, str] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return (cond.get("status"), cond.get("reason"))
    return None


def summary(obj: JSON | None) -> JSON:
    return dict(((obj or {}).get("status") or {}).get("summary") or {})


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, hub: Any) -> Iterator[Env]:
    """The workset operator on the session's shared local hub."""
    environment = Env(tmp_path_factory.mktemp("workset"), hub)
    environment.operator.start()
    try:
        yield environment
    finally:
        environment.close()
