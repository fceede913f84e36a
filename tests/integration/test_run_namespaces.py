"""`ocm-rollout run --namespace`: a controller scoped to namespaces lists and watches namespaced
kinds only there, the many-object kinds (list-and-watch caches) included, so it needs no
cluster-wide permission on them; cluster-scoped kinds are always watched cluster-wide."""

from __future__ import annotations

import pytest

from tests.integration.helpers import Hub, RunProcess, start_controller, wait_until

pytestmark = pytest.mark.integration

SCOPED = ("team-a", "cluster-1")


@pytest.mark.parametrize(
    ("controller", "namespaced", "cluster_scoped"),
    [
        ("workset", {"manifestworks", "controllerrevisions", "manifestworkreplicasets", "placements", "placementdecisions"}, set()),
        ("addon", {"managedclusteraddons", "manifestworks", "placements", "placementdecisions"}, {"managedclusters", "clustermanagementaddons"}),
        ("placement", {"placements", "placementdecisions", "managedclustersetbindings", "addonplacementscores"}, {"managedclusters", "managedclustersets"}),
    ],
)
def test_a_scoped_controller_reads_namespaced_kinds_only_in_its_namespaces(
    run_hub: Hub, processes: list[RunProcess], controller: str, namespaced: set[str], cluster_scoped: set[str]
) -> None:
    args = [arg for ns in SCOPED for arg in ("--namespace", ns)]
    proc = start_controller(run_hub, controller, *args)
    processes.append(proc)

    def reads() -> list[object]:
        return [r for r in run_hub.records("proc-c") if r.verb in ("list", "watch") and r.resource]

    wanted = {(resource, ns) for resource in namespaced for ns in SCOPED}
    wait_until(
        lambda: wanted <= {(r.resource, r.namespace) for r in reads()},  # type: ignore[attr-defined]
        timeout=60, message="every namespaced kind read in every scoped namespace",
    )
    for record in reads():
        resource, namespace = record.resource, record.namespace  # type: ignore[attr-defined]
        if resource in namespaced:
            assert namespace in SCOPED, f"{record.verb} {resource} outside the controller's namespaces"  # type: ignore[attr-defined]
        if resource in cluster_scoped:
            assert not namespace
