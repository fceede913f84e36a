"""The environment of the simulated-agent integration tests (no tests here).

The simulation runs in a thread (helpers.SimThread, through the ``start_sim`` fixture of
conftest.py), so tests stay synchronous and look at the hub only through the official
``kubernetes`` client, as a user would.

- ``Recorder``: an independent watch (official client) that keeps every version of every
  ManifestWork it sees, to check what each single write contained.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import kubernetes

from tests.integration.helpers import wait_until

WORK = ("work.open-cluster-management.io", "v1", "manifestworks")
CLUSTER = ("cluster.open-cluster-management.io", "v1", "managedclusters")

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
