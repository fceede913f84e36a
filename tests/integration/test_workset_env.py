"""The environment of the ManifestWorkReplicaSet integration tests (no tests here).

A local hub in a thread, the real workset operator (kopf, ``run_operator``) in-process and
restartable, a synchronous client over the same kubeconfig and simulated clusters
(helpers.ControllerEnv), builders for Placements, PlacementDecisions and
ManifestWorkReplicaSets and a hand-driven work agent (OCM's integration tests write ManifestWork
status by hand; so do we where a scenario needs exact control). The watch-driven monitor that
checks invariants at every change of every ManifestWork is helpers.WatchMonitor.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET
from ocm_rollout.cli.main import main
from ocm_rollout.client.kube import (
    EVENTS,
    JSON,
    MANIFEST_WORK_REPLICA_SETS,
    MANIFEST_WORKS,
    PLACEMENTS,
)
from ocm_rollout.controllers.common.wire import format_time
from tests.integration import helpers
from tests.integration.helpers import ControllerEnv, decide_groups, operating, utc_now

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


class Env(ControllerEnv):
    """A local hub (shared or private) and one workset operator shared by a test module."""

    def __init__(self, tmp: Path, hub: Any = None, *, kind: str = "local") -> None:
        super().__init__(tmp, "workset", hub, kind=kind)

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


def status_text(env: Env, ns: str, capsys: pytest.CaptureFixture[str], name: str = "web") -> str:
    """What `ocm-rollout status -n NS NAME` prints."""
    capsys.readouterr()
    assert main(["status", "--kubeconfig", env.kubeconfig, "-n", ns, name]) == 0
    return capsys.readouterr().out


def condition(obj: JSON | None, type_: str) -> tuple[str | None, str | None] | None:
    """The status and reason of ``obj``'s condition ``type_``."""
    found = helpers.condition(obj, type_)
    return None if found is None else (found.get("status"), found.get("reason"))


def summary(obj: JSON | None) -> JSON:
    return dict(((obj or {}).get("status") or {}).get("summary") or {})


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, controller_hub: Any) -> Iterator[Env]:
    """The workset operator on the module's hub (``controller_hub``: the shared local one, or a
    kube-apiserver of its own)."""
    yield from operating(Env(tmp_path_factory.mktemp("workset"), controller_hub))
