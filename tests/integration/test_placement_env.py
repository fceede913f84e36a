"""The environment of the placement controller's integration tests (no tests here).

The session's local hub, the real placement operator (kopf, ``run_operator``) in a thread with
one worker (so the queue is FIFO, which lets a test prove that a change re-queued nothing
else), a synchronous client over the same kubeconfig, and builders.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from ocm_rollout.api.constants import LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    ADDON_PLACEMENT_SCORES,
    EVENTS,
    JSON,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from tests.integration import helpers

T = TypeVar("T")
SET_LABEL = "cluster.open-cluster-management.io/clusterset"


class Api(helpers.Api):
    """Synchronous CRUD through the kubeconfig, as a user would do it, and builders."""

    # -- builders ------------------------------------------------------------------------------
    def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.create(NAMESPACES, {"metadata": {"name": name}})
        return name

    def cluster_set(self, name: str) -> None:
        self.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": name}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}})

    def binding(self, name: str, namespace: str) -> None:
        self.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterSet": name}}, namespace)

    def cluster(
        self,
        name: str,
        set_name: str,
        labels: dict[str, str] | None = None,
        memory: str | None = None,
        taints: list[JSON] | None = None,
    ) -> None:
        self.create(
            MANAGED_CLUSTERS,
            {
                "metadata": {"name": name, "labels": {SET_LABEL: set_name, **(labels or {})}},
                "spec": {"hubAcceptsClient": True, "taints": taints or []},
            },
        )
        if memory is not None:
            self.set_memory(name, memory)

    def set_memory(self, name: str, memory: str) -> None:
        resources = {"cpu": "4", "memory": memory}
        self.patch(MANAGED_CLUSTERS, name, {"status": {"allocatable": resources, "capacity": resources}}, sub="status")

    def placement(self, name: str, namespace: str, spec: JSON) -> JSON:
        return self.create(PLACEMENTS, {"metadata": {"name": name, "namespace": namespace}, "spec": spec}, namespace)

    def score(self, cluster: str, name: str, values: dict[str, int]) -> None:
        body = {"metadata": {"name": name, "namespace": cluster}}
        if self.get_or_none(ADDON_PLACEMENT_SCORES, name, cluster) is None:
            self.create(ADDON_PLACEMENT_SCORES, body, cluster)
        self.patch(ADDON_PLACEMENT_SCORES, name, {"status": {"scores": [{"name": k, "value": v} for k, v in values.items()]}}, cluster, "status")

    # -- reading -------------------------------------------------------------------------------
    def decisions(self, placement: str, namespace: str) -> list[JSON]:
        items = self.list(PLACEMENT_DECISIONS, namespace, f"{LABEL_PLACEMENT}={placement}")
        return sorted(items, key=lambda d: d["metadata"]["name"])

    def decided(self, placement: str, namespace: str) -> list[str]:
        """The decided cluster names over every page, in page order."""
        return [d["clusterName"] for pd in self.decisions(placement, namespace) for d in (pd.get("status") or {}).get("decisions") or []]

    def condition(self, placement: str, namespace: str, type_: str) -> JSON | None:
        obj = self.get_or_none(PLACEMENTS, placement, namespace) or {}
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") == type_:
                return dict(cond)
        return None

    def events(self, namespace: str, involved: str) -> list[JSON]:
        return [e for e in self.list(EVENTS, namespace) if (e.get("involvedObject") or {}).get("name") == involved]


class PlacementOperator(helpers.OperatorThread):
    """The placement operator in a thread (one worker: the queue is processed in FIFO order)."""

    def __init__(self, kubeconfig: str, debug_port: int | None = None) -> None:
        debug = ("127.0.0.1", debug_port) if debug_port else None
        super().__init__(["placement"], kubeconfig, workers=1, debug_address=debug)

    @property
    def controller(self) -> Any:
        return self.handles.by_name("placement")

    def passes(self, namespace: str, name: str) -> int:
        return self.handles.runtime("placement").passes("placement", f"{namespace}/{name}")


def first(items: list[T], predicate: Callable[[T], bool]) -> T | None:
    for item in items:
        if predicate(item):
            return item
    return None
