"""docs/behaviour/addons.md 13 scenarios 1-8 and 23 (install strategy and MCA lifecycle) on the local hub,
through the real kopf operator, plus the install improvements (no churn on re-paging, events
when a hand-made MCA is deleted)."""

from __future__ import annotations

import pytest

from ocm_rollout.api.constants import (
    ADDON_CONDITION_CONFIGURED,
    ADDON_CONDITION_PROGRESSING,
    ANNOTATION_ADDON_LIFECYCLE,
    ANNOTATION_HOSTING_CLUSTER_NAME,
)
from ocm_rollout.client.kube import MANAGED_CLUSTER_ADDONS, MANAGED_CLUSTERS, PLACEMENTS
from tests.integration.helpers import condition, decide_groups, holds_for, wait_for
from tests.integration.test_addon_env import AddonEnv, env

pytestmark = pytest.mark.integration
__all__ = ["env"]


def placements_cma(
    env: AddonEnv, ns: str, *placements: str, hand_made: str | None = None, annotations: dict[str, str] | None = None
) -> str:
    """An add-on installed by ``placements`` (of namespace ``ns``), after an MCA of it made by hand
    on cluster ``hand_made`` (if given); its name."""
    name = env.unique("addon")
    if hand_made is not None:
        env.mca(hand_made, name)
    env.cma(name, placements=[{"namespace": ns, "name": p} for p in placements], annotations=annotations)
    return name


def placed(
    env: AddonEnv, decided: list[str], *, hand_made: str | None = None, annotations: dict[str, str] | None = None
) -> tuple[str, str]:
    """A new namespace with placement p deciding ``decided`` and an add-on installed by p
    (`placements_cma`): the namespace and the add-on's name."""
    ns = env.namespace(env.unique("ns"))
    env.placement(ns, "p", [decided])
    return ns, placements_cma(env, ns, "p", hand_made=hand_made, annotations=annotations)


def mca_clusters(env: AddonEnv, name: str, clusters: list[str]) -> list[str]:
    return [c for c in clusters if env.get_mca(c, name) is not None]


def test_creating_a_cma_never_adds_the_lifecycle_annotation(env: AddonEnv) -> None:
    name = env.unique("addon")
    env.cma(name)
    env.mca(env.clusters(1)[0], name)
    holds_for(lambda: ANNOTATION_ADDON_LIFECYCLE not in (env.get_cma(name)["metadata"].get("annotations") or {}), 1.0)


def test_placements_strategy_creates_owned_mcas_on_decided_clusters(env: AddonEnv) -> None:
    clusters = env.clusters(3)
    _, name = placed(env, clusters[:2])
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[:2], what="MCAs on the two decided clusters")
    cma = env.get_cma(name)
    for cluster in clusters[:2]:
        owners = env.get_mca(cluster, name)["metadata"]["ownerReferences"]  # type: ignore[index]
        assert owners == [{
            "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
            "name": name, "uid": cma["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
        }]


def test_a_new_decision_creates_and_deletes_mcas_and_leaves_the_others_untouched(env: AddonEnv) -> None:
    clusters = env.clusters(3)
    ns, name = placed(env, clusters[:2])
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[:2], what="first MCAs")
    kept_uid = env.get_mca(clusters[1], name)["metadata"]["uid"]  # type: ignore[index]
    decide_groups(env.api, ns, "p", [clusters[1:]])
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[1:], what="MCAs follow the decision")
    assert env.get_mca(clusters[1], name)["metadata"]["uid"] == kept_uid  # type: ignore[index]


def test_a_deleted_mca_of_a_selected_cluster_is_recreated(env: AddonEnv) -> None:
    clusters = env.clusters(2)
    _, name = placed(env, clusters)
    first = wait_for(lambda: env.get_mca(clusters[1], name), what="MCA")
    env.api.delete(MANAGED_CLUSTER_ADDONS, name, clusters[1])
    wait_for(
        lambda: (m := env.get_mca(clusters[1], name)) and m["metadata"]["uid"] != first["metadata"]["uid"],
        what="a new MCA",
    )


def test_prefixed_cluster_annotations_are_copied_to_new_mcas_and_others_never(env: AddonEnv) -> None:
    prefix = env.unique("ac")
    c0, c1 = f"{prefix}-01", f"{prefix}-02"
    env.clusters(2, prefix, annotations={c0: {ANNOTATION_HOSTING_CLUSTER_NAME: "hosting-cluster", "other.io/x": "y"}})
    _, name = placed(env, [c0, c1])
    m0 = wait_for(lambda: env.get_mca(c0, name), what="MCA c0")
    m1 = wait_for(lambda: env.get_mca(c1, name), what="MCA c1")
    assert m0["metadata"]["annotations"] == {ANNOTATION_HOSTING_CLUSTER_NAME: "hosting-cluster"}
    assert not m1["metadata"].get("annotations")


def test_cluster_annotation_changes_are_synced_onto_its_mcas(env: AddonEnv) -> None:
    clusters = env.clusters(1)
    _, name = placed(env, clusters)
    wait_for(lambda: env.get_mca(clusters[0], name), what="MCA")
    env.api.patch(MANAGED_CLUSTER_ADDONS, name, {"metadata": {"annotations": {"keep.io/me": "1"}}}, clusters[0])
    env.api.patch(MANAGED_CLUSTERS, clusters[0], {"metadata": {"annotations": {ANNOTATION_HOSTING_CLUSTER_NAME: "h1"}}})
    wait_for(
        lambda: (env.get_mca(clusters[0], name) or {}).get("metadata", {}).get("annotations")
        == {"keep.io/me": "1", ANNOTATION_HOSTING_CLUSTER_NAME: "h1"},
        what="annotation added",
    )
    env.api.patch(MANAGED_CLUSTERS, clusters[0], {"metadata": {"annotations": {ANNOTATION_HOSTING_CLUSTER_NAME: None}}})
    wait_for(
        lambda: (env.get_mca(clusters[0], name) or {}).get("metadata", {}).get("annotations") == {"keep.io/me": "1"},
        what="annotation removed",
    )


def test_a_hand_made_mca_on_an_unselected_cluster_is_deleted_with_an_event(env: AddonEnv) -> None:
    clusters = env.clusters(2)
    _, name = placed(env, clusters[:1], hand_made=clusters[1])
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[:1], what="the hand-made MCA deleted")
    event = wait_for(
        lambda: [e for e in env.events(name) if e.get("reason") == "ManagedClusterAddOnDeleted"], what="event"
    )[0]
    assert event["type"] == "Warning"
    assert f"{clusters[1]}/{name}" in event["message"]


@pytest.mark.parametrize("missing", ["placement", "decision"])
def test_a_missing_placement_or_decision_does_nothing(env: AddonEnv, missing: str) -> None:
    clusters = env.clusters(1)
    ns = env.namespace(env.unique("ns"))
    if missing == "decision":
        env.placement(ns, "p")
    name = placements_cma(env, ns, "p")
    holds_for(lambda: env.get_mca(clusters[0], name) is None, 1.0, what="no MCA")


def test_two_placements_install_on_the_union_of_their_decisions(env: AddonEnv) -> None:
    clusters = env.clusters(3)
    ns = env.namespace(env.unique("ns"))
    env.placement(ns, "p1", [clusters[:2]])
    env.placement(ns, "p2", [clusters[1:]])
    name = placements_cma(env, ns, "p1", "p2")
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters, what="MCAs on the union")


def test_a_deleted_placement_removes_the_mcas_only_it_selected(env: AddonEnv) -> None:
    clusters = env.clusters(3)
    ns = env.namespace(env.unique("ns"))
    env.placement(ns, "p1", [clusters[:2]])
    env.placement(ns, "p2", [clusters[1:2]])
    name = placements_cma(env, ns, "p1", "p2")
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[:2], what="MCAs")
    env.api.delete(PLACEMENTS, "p1", ns)
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters[1:2], what="only p2's cluster keeps its MCA")


def test_repaging_decisions_never_deletes_an_mca(env: AddonEnv) -> None:
    """Improvement 2: a cluster that moves to another page, or pages rewritten one after the
    other, never lose their MCA (OCM enhancement 171)."""
    clusters = env.clusters(4)
    ns, name = placed(env, clusters)
    wait_for(lambda: mca_clusters(env, name, clusters) == clusters, what="MCAs")
    uids = {c: env.get_mca(c, name)["metadata"]["uid"] for c in clusters}  # type: ignore[index]
    # Re-page: two groups of two clusters; the status names pages the caches have not seen yet
    # when the first page already holds only two clusters.
    decide_groups(env.api, ns, "p", [clusters[:2], clusters[2:]])
    holds_for(
        lambda: all((m := env.get_mca(c, name)) is not None and m["metadata"]["uid"] == uids[c] for c in clusters),
        2.0,
        what="every MCA kept",
    )


def test_a_self_managed_cma_gets_no_install_and_no_rollout_writes(env: AddonEnv) -> None:
    clusters = env.clusters(2)
    _, name = placed(env, clusters[:1], hand_made=clusters[1], annotations={ANNOTATION_ADDON_LIFECYCLE: "self"})

    def untouched() -> bool:
        mca = env.get_mca(clusters[1], name)
        return (
            env.get_mca(clusters[0], name) is None
            and mca is not None
            and not mca["metadata"].get("ownerReferences")
            and condition(mca, ADDON_CONDITION_CONFIGURED) is None
            and condition(mca, ADDON_CONDITION_PROGRESSING) is None
        )

    holds_for(untouched, 1.5, what="self-managed add-on left alone")


def test_an_mca_in_a_namespace_without_a_managed_cluster_is_reported(env: AddonEnv) -> None:
    name = env.unique("addon")
    env.cma(name)
    namespace = env.namespace(env.unique("nocluster"))
    env.mca(namespace, name)
    event = wait_for(
        lambda: [e for e in env.events(name) if e.get("reason") == "ManagedClusterNotFound"
                 and (e.get("involvedObject") or {}).get("namespace") == namespace],
        what="a warning on the MCA",
    )[0]
    assert event["type"] == "Warning" and namespace in event["message"]
