"""The environment of the simulated-agent integration tests (no tests here).

- ``SimThread``: a ``sandbox.simulation.Simulation`` against a hub, on its own event loop in a
  background thread, so tests stay synchronous and look at the hub only through the official
  ``kubernetes`` client, as a user would.
- ``Recorder``: an independent watch (official client) that keeps every version of every
  ManifestWork it sees, to check what each single write contained.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from controllers.runtime.kube import Kube
from controllers.runtime.operator import load_client
from sandbox.server import HubThread
from sandbox.sim_profile import parse_profile
from sandbox.simulation import SimEvent, Simulation
from tests.integration.conftest import wait_until

WORK = ("work.open-cluster-management.io", "v1", "manifestworks")
CLUSTER = ("cluster.open-cluster-management.io", "v1", "managedclusters")
FAST = {"applyDelay": "100ms", "progressDuration": "1200ms"}

CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "default"},
    "data": {"a": "b"},
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 3},
}


class SimThread:
    """A running simulation; ``stop()`` ends it and waits for a clean shutdown."""

    def __init__(self, kubeconfig: Path, *, clusters: int, profile: dict[str, Any] | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.clusters = clusters
        self.profile = parse_profile(profile or {"defaults": FAST})
        self.events: list[SimEvent] = []
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="sim-thread", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._run())
        except BaseException as exc:
            self.failure = exc
            self._ready.set()
        finally:
            self.loop.close()

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        ready = asyncio.Event()
        kube = Kube(load_client(str(self.kubeconfig)))
        simulation = Simulation(kube, clusters=self.clusters, profile=self.profile, on_event=self.events.append)
        await simulation.register()
        task = asyncio.create_task(simulation.run(self._stop, ready=ready))
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        self._ready.set()
        await task

    def start(self) -> SimThread:
        self.thread.start()
        assert self._ready.wait(30), "the simulation did not start"
        if self.failure is not None:
            raise self.failure
        return self

    def stop(self) -> None:
        if self._stop is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
        assert not self.thread.is_alive(), "the simulation did not stop"
        if self.failure is not None:
            raise self.failure


class Recorder:
    """Every version of every ManifestWork in one namespace, in the order the hub sent them."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.api = kubernetes.client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.versions: list[dict[str, Any]] = []
        self._watch = kubernetes.watch.Watch()
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="work-recorder", daemon=True)

    def _run(self) -> None:
        group, version, plural = WORK
        listed: dict[str, Any] = self.api.list_namespaced_custom_object(group, version, self.namespace, plural)  # type: ignore[assignment]
        rv = listed["metadata"]["resourceVersion"]
        self._started.set()
        try:
            for event in self._watch.stream(
                self.api.list_namespaced_custom_object,
                group,
                version,
                self.namespace,
                plural,
                resource_version=rv,
                timeout_seconds=120,
            ):
                with self._lock:
                    self.versions.append(copy.deepcopy(event["object"]))
        except Exception:
            if not self._stopped.is_set():
                raise

    def start(self) -> Recorder:
        self.thread.start()
        assert self._started.wait(10)
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()

    def of(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [v for v in self.versions if v["metadata"]["name"] == name]


@pytest.fixture
def sim_hub(make_hub: Callable[..., HubThread]) -> HubThread:
    """A fresh hub per test: the simulated clusters are cluster-scoped and always cluster1..N."""
    return make_hub()


@pytest.fixture
def start_sim(sim_hub: HubThread) -> Iterator[Callable[..., SimThread]]:
    running: list[SimThread] = []

    def start(*, clusters: int = 2, profile: dict[str, Any] | None = None) -> SimThread:
        assert sim_hub.kubeconfig is not None
        sim = SimThread(sim_hub.kubeconfig, clusters=clusters, profile=profile).start()
        running.append(sim)
        return sim

    yield start
    for sim in running:
        sim.stop()


@pytest.fixture
def sim_api(sim_hub: HubThread, client_for: Callable[[HubThread], kubernetes.client.ApiClient]) -> Any:
    return kubernetes.client.CustomObjectsApi(client_for(sim_hub))


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def create_work(api: Any, namespace: str, name: str, *manifests: dict[str, Any], **spec: Any) -> dict[str, Any]:
    group, version, plural = WORK
    body = {
        "apiVersion": f"{group}/{version}",
        "kind": "ManifestWork",
        "metadata": {"name": name},
        "spec": {"workload": {"manifests": list(manifests)}, **spec},
    }
    result: dict[str, Any] = api.create_namespaced_custom_object(group, version, namespace, plural, body)
    return result


def get_work(api: Any, namespace: str, name: str) -> dict[str, Any] | None:
    group, version, plural = WORK
    try:
        result: dict[str, Any] = api.get_namespaced_custom_object(group, version, namespace, plural, name)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return result


def until(check: Callable[[], Any], *, timeout: float = 20, message: str) -> dict[str, Any]:
    """Wait for ``check`` to return an object (a dict) and return it."""
    value = wait_until(check, timeout=timeout, message=message)
    assert isinstance(value, dict), f"{message}: got {value!r}"
    return value


def get_cluster(api: Any, name: str) -> dict[str, Any]:
    group, version, plural = CLUSTER
    result: dict[str, Any] = api.get_cluster_custom_object(group, version, plural, name)
    return result
