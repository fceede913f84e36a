"""Install strategy and MCA lifecycle (docs/behaviour/addons.md 3, 4; scenarios 1-8 and 23 of 13)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ocm_rollout.api.constants import (
    ANNOTATION_ADDON_LIFECYCLE,
    ANNOTATION_HOSTING_CLUSTER_NAME,
    ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE,
    LABEL_DECISION_GROUP_INDEX,
    LABEL_PLACEMENT,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.install import (
    InstallPlan,
    annotation_sync,
    controller_owner_reference,
    is_lifecycle_managed,
    owner_references_update,
    plan_install,
)

ADDON = "test-addon"
CMA_UID = "cma-uid"
NS = "default"
OWNER = {
    "apiVersion": "addon.open-cluster-management.io/v1alpha1",
    "kind": "ClusterManagementAddOn",
    "name": ADDON,
    "uid": CMA_UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


# --- fixtures ------------------------------------------------------------------------------------


def cma(
    type_: str | None = "Placements",
    placements: list[tuple[str, str]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": ADDON, "uid": CMA_UID, "generation": 1}
    if annotations is not None:
        metadata["annotations"] = annotations
    strategy: dict[str, Any] = {}
    if type_ is not None:
        strategy["type"] = type_
    strategy["placements"] = [
        {"namespace": ns, "name": name, "rolloutStrategy": {"type": "All"}}
        for ns, name in (placements if placements is not None else [(NS, "p1")])
    ]
    return {"metadata": metadata, "spec": {"installStrategy": strategy}}


def page(placement: str, number: int, clusters: list[str], group_index: str | None = "0", ns: str = NS) -> dict[str, Any]:
    labels = {LABEL_PLACEMENT: placement}
    if group_index is not None:
        labels[LABEL_DECISION_GROUP_INDEX] = group_index
    return {
        "metadata": {"name": f"{placement}-decision-{number}", "namespace": ns, "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def placement_obj(
    name: str,
    selected: int,
    page_names: list[str],
    *,
    ns: str = NS,
    generation: int = 1,
    satisfied_generation: int | None = 1,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "numberOfSelectedClusters": selected,
        "decisionGroups": [
            {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": page_names, "clusterCount": selected}
        ],
        "conditions": [],
    }
    if satisfied_generation is not None:
        status["conditions"].append(
            {
                "type": "PlacementSatisfied",
                "status": "True" if selected else "False",
                "observedGeneration": satisfied_generation,
                "reason": "AllDecisionsScheduled" if selected else "NoManagedClusterMatched",
                "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        )
    return {"metadata": {"name": name, "namespace": ns, "generation": generation}, "status": status}


def scheduled(name: str, *pages_clusters: list[str], ns: str = NS) -> PlacementInput:
    """A Placement whose status and decision pages agree (one page per list)."""
    pages = [page(name, i + 1, clusters, ns=ns) for i, clusters in enumerate(pages_clusters or ([],))]
    selected = len({c for clusters in pages_clusters for c in clusters})
    return PlacementInput(placement_obj(name, selected, [p["metadata"]["name"] for p in pages], ns=ns), pages)


def mca(
    cluster: str,
    *,
    owners: list[dict[str, Any]] | None = None,
    uid: str | None = None,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    name: str = ADDON,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": cluster, "uid": uid or f"uid-{cluster}"}
    if owners is not None:
        metadata["ownerReferences"] = owners
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {}}


def owned(cluster: str, **kwargs: Any) -> dict[str, Any]:
    return mca(cluster, owners=[dict(OWNER)], **kwargs)


def cluster(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"hubAcceptsClient": True}}


def clusters(*names: str) -> dict[str, dict[str, Any]]:
    return {name: cluster(name) for name in names}


ALL = clusters("c0", "c1", "c2", "c3", "cluster0")


def created(plan: InstallPlan) -> list[str]:
    return [c.cluster for c in plan.creates]


def deleted(plan: InstallPlan) -> list[str]:
    return [d.cluster for d in plan.deletes]


def is_empty(plan: InstallPlan) -> bool:
    return not (plan.creates or plan.deletes or plan.missing_clusters or plan.held_deletes or plan.hold_reason)


# --- lifecycle annotation (3) ---------------------------------------------------------------------


def test_cma_without_annotations_is_managed() -> None:
    assert is_lifecycle_managed(cma())


def test_cma_with_other_annotations_only_is_managed() -> None:
    assert is_lifecycle_managed(cma(annotations={"x": "y"}))


def test_lifecycle_addon_manager_is_managed() -> None:
    assert is_lifecycle_managed(cma(annotations={ANNOTATION_ADDON_LIFECYCLE: "addon-manager"}))


def test_lifecycle_self_is_self_managed() -> None:
    assert not is_lifecycle_managed(cma(annotations={ANNOTATION_ADDON_LIFECYCLE: "self"}))


def test_lifecycle_empty_value_is_self_managed() -> None:
    assert not is_lifecycle_managed(cma(annotations={ANNOTATION_ADDON_LIFECYCLE: ""}))


def test_lifecycle_any_other_value_is_self_managed() -> None:
    assert not is_lifecycle_managed(cma(annotations={ANNOTATION_ADDON_LIFECYCLE: "Addon-Manager"}))


def test_lifecycle_reads_oddly_typed_metadata() -> None:
    assert is_lifecycle_managed({"metadata": {"annotations": "nope"}})
    assert is_lifecycle_managed({"metadata": None})
    assert is_lifecycle_managed({})


# --- which CMAs install ----------------------------------------------------------------------------


def test_manual_strategy_plans_nothing() -> None:
    plan = plan_install(cma("Manual"), {(NS, "p1"): scheduled("p1", ["c0"])}, [owned("c1")], ALL)
    assert is_empty(plan)


def test_empty_strategy_type_plans_nothing() -> None:
    plan = plan_install(cma(None), {(NS, "p1"): scheduled("p1", ["c0"])}, [owned("c1")], ALL)
    assert is_empty(plan)


def test_cma_without_install_strategy_plans_nothing() -> None:
    assert is_empty(plan_install({"metadata": {"name": ADDON}, "spec": {}}, {}, [owned("c1")], ALL))


def test_scenario_23_self_managed_cma_creates_and_deletes_nothing() -> None:
    self_managed = cma(annotations={ANNOTATION_ADDON_LIFECYCLE: "self"})
    plan = plan_install(self_managed, {(NS, "p1"): scheduled("p1", ["c0"])}, [owned("c1"), mca("c2")], ALL)
    assert is_empty(plan)


def test_scenario_1_plan_never_touches_the_lifecycle_annotation() -> None:
    body = cma()
    plan = plan_install(body, {(NS, "p1"): scheduled("p1", ["c0"])}, [], ALL)
    assert "annotations" not in body["metadata"]
    assert all(ANNOTATION_ADDON_LIFECYCLE not in c.body["metadata"].get("annotations", {}) for c in plan.creates)


# --- creates (4.2) ---------------------------------------------------------------------------------


def test_scenario_2_decided_clusters_get_mcas_with_the_controller_owner_reference() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0", "c1"])}, [], ALL)
    assert created(plan) == ["c0", "c1"]
    for create in plan.creates:
        assert create.body["metadata"]["ownerReferences"] == [OWNER]


def test_created_mca_body_is_name_namespace_owner_and_empty_spec() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0"])}, [], ALL)
    assert plan.creates[0].body == {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": ADDON, "namespace": "c0", "ownerReferences": [OWNER]},
        "spec": {},
    }


def test_scenario_3_changed_decision_creates_new_deletes_old_keeps_common() -> None:
    plan = plan_install(
        cma(), {(NS, "p1"): scheduled("p1", ["c1", "c2"])}, [owned("c0"), owned("c1")], ALL
    )
    assert created(plan) == ["c2"]
    assert deleted(plan) == ["c0"]
    assert plan.held_deletes == []


def test_scenario_4_deleted_mca_of_selected_cluster_is_created_again() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0", "c1"])}, [owned("c0")], ALL)
    assert created(plan) == ["c1"]


def test_scenario_5_prefixed_cluster_annotations_are_copied_to_the_created_mca() -> None:
    cluster_objs = {
        "c0": cluster("c0", {ANNOTATION_HOSTING_CLUSTER_NAME: "hosting-cluster", "other.io/x": "y"}),
        "c1": cluster("c1", {"unrelated": "z"}),
    }
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0", "c1"])}, [], cluster_objs)
    bodies = {c.cluster: c.body for c in plan.creates}
    assert bodies["c0"]["metadata"]["annotations"] == {ANNOTATION_HOSTING_CLUSTER_NAME: "hosting-cluster"}
    assert "annotations" not in bodies["c1"]["metadata"]


def test_annotation_prefix_is_matched_without_a_slash_as_ocm_does() -> None:
    cluster_objs = {"c0": cluster("c0", {"addon.open-cluster-management.io.example/x": "1"})}
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0"])}, [], cluster_objs)
    assert plan.creates[0].body["metadata"]["annotations"] == {"addon.open-cluster-management.io.example/x": "1"}


def test_decided_cluster_without_managed_cluster_is_not_created_and_reported() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0", "ghost"])}, [], clusters("c0"))
    assert created(plan) == ["c0"]
    assert plan.missing_clusters == ["ghost"]


def test_scenario_8_two_placements_install_the_union_of_their_decisions() -> None:
    placements = {(NS, "p1"): scheduled("p1", ["c0", "c1"]), (NS, "p2"): scheduled("p2", ["c1", "c2"])}
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, [], ALL)
    assert created(plan) == ["c0", "c1", "c2"]


def test_decisions_across_pages_are_all_installed() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0"], ["c1"])}, [], ALL)
    assert created(plan) == ["c0", "c1"]


def test_existing_mca_of_any_origin_is_not_created_again() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0", "c1"])}, [mca("c0"), owned("c1")], ALL)
    assert plan.creates == []


def test_mca_being_deleted_in_a_selected_cluster_counts_as_existing() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0"])}, [owned("c0", deleting=True)], ALL)
    assert is_empty(plan)


def test_mcas_of_other_addons_are_ignored() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c0"])}, [mca("c0", name="other"), mca("c1", name="other")], ALL)
    assert created(plan) == ["c0"]
    assert plan.deletes == []


# --- deletes (4.2, 4.3) -----------------------------------------------------------------------------


def test_scenario_6_user_created_mca_in_unselected_cluster_is_deleted() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [mca("cluster0"), owned("c1")], ALL)
    assert deleted(plan) == ["cluster0"]
    assert plan.deletes[0].user_created
    assert "not created by the add-on manager" in plan.deletes[0].reason


def test_delete_carries_the_mca_uid_for_a_precondition() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [owned("c0", uid="abc")], ALL)
    assert plan.deletes[0].uid == "abc"
    assert plan.deletes[0].name == ADDON
    assert not plan.deletes[0].user_created
    assert "c0" in plan.deletes[0].reason


def test_mca_owned_through_the_v1beta1_reference_is_not_user_created() -> None:
    beta_owner = {**OWNER, "apiVersion": "addon.open-cluster-management.io/v1beta1"}
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [mca("c0", owners=[beta_owner])], ALL)
    assert not plan.deletes[0].user_created


def test_mca_with_non_controller_reference_is_user_created() -> None:
    plan = plan_install(
        cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [mca("c0", owners=[{**OWNER, "controller": False}])], ALL
    )
    assert plan.deletes[0].user_created


def test_mca_controlled_by_an_earlier_cma_of_the_same_name_is_user_created() -> None:
    plan = plan_install(
        cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [mca("c0", owners=[{**OWNER, "uid": "old"}])], ALL
    )
    assert plan.deletes[0].user_created


def test_mca_being_deleted_in_an_unselected_cluster_is_left_alone() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [owned("c0", deleting=True), owned("c1")], ALL)
    assert is_empty(plan)


def test_deletes_are_sorted_by_cluster() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1", ["c1"])}, [owned("c3"), owned("c0"), owned("c2")], ALL)
    assert deleted(plan) == ["c0", "c2", "c3"]


def test_placements_strategy_without_placements_deletes_every_mca() -> None:
    plan = plan_install(cma(placements=[]), {}, [owned("c0"), mca("c1")], ALL)
    assert deleted(plan) == ["c0", "c1"]


def test_scenario_7_missing_placement_plans_nothing_and_is_no_error() -> None:
    plan = plan_install(cma(), {(NS, "p1"): PlacementInput(None, ())}, [], ALL)
    assert is_empty(plan)


def test_scenario_7_placement_without_decisions_plans_nothing() -> None:
    never_decided = PlacementInput(placement_obj("p1", 0, [], satisfied_generation=None), ())
    assert is_empty(plan_install(cma(), {(NS, "p1"): never_decided}, [], ALL))


def test_deleted_placement_takes_its_mcas_with_it() -> None:
    plan = plan_install(cma(), {(NS, "p1"): PlacementInput(None, ())}, [owned("c0"), owned("c1")], ALL)
    assert deleted(plan) == ["c0", "c1"]
    assert plan.held_deletes == []


def test_decisions_of_a_deleted_placement_are_ignored() -> None:
    leftover = PlacementInput(None, [page("p1", 1, ["c0"])])
    plan = plan_install(cma(), {(NS, "p1"): leftover}, [owned("c0")], ALL)
    assert deleted(plan) == ["c0"]


def test_deleted_placement_keeps_mcas_another_placement_selects() -> None:
    placements = {(NS, "p1"): PlacementInput(None, ()), (NS, "p2"): scheduled("p2", ["c1"])}
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, [owned("c0"), owned("c1")], ALL)
    assert deleted(plan) == ["c0"]


def test_placement_removed_from_the_strategy_takes_its_mcas_with_it() -> None:
    placements = {(NS, "p1"): scheduled("p1", ["c0"]), (NS, "p2"): scheduled("p2", ["c1"])}
    plan = plan_install(cma(placements=[(NS, "p2")]), placements, [owned("c0"), owned("c1")], ALL)
    assert deleted(plan) == ["c0"]


def test_placement_of_same_name_in_another_namespace_is_another_placement() -> None:
    placements = {("other", "p1"): scheduled("p1", ["c0"], ns="other"), (NS, "p1"): scheduled("p1", ["c1"])}
    plan = plan_install(cma(placements=[(NS, "p1")]), placements, [owned("c0"), owned("c1")], ALL)
    assert deleted(plan) == ["c0"]


def test_repeated_placement_entries_count_once() -> None:
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p1")]), {(NS, "p1"): scheduled("p1", ["c0"])}, [], ALL)
    assert created(plan) == ["c0"]


# --- improvement: no churn while a placement's view is incomplete ------------------------------------


def test_unread_decision_page_holds_deletes_but_not_creates() -> None:
    pages = [page("p1", 1, ["c1", "c2"])]  # the status names -decision-2 too (c0 is on it)
    view = PlacementInput(placement_obj("p1", 3, ["p1-decision-1", "p1-decision-2"]), pages)
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert created(plan) == ["c1", "c2"]
    assert plan.deletes == []
    assert plan.held_deletes == ["c0"]
    assert plan.hold_reason is not None and "p1-decision-2" in plan.hold_reason


def test_repaged_decisions_do_not_delete_a_cluster_moving_between_pages() -> None:
    # c0 moved from page 1 to page 2; page 2 is not in the cache yet, page 1 already lost it.
    pages = [page("p1", 1, ["c1"])]
    view = PlacementInput(placement_obj("p1", 2, ["p1-decision-1", "p1-decision-2"]), pages)
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0"), owned("c1")], ALL)
    assert plan.deletes == []
    assert plan.held_deletes == ["c0"]


def test_decisions_holding_another_count_than_selected_hold_deletes() -> None:
    view = PlacementInput(placement_obj("p1", 3, ["p1-decision-1"]), [page("p1", 1, ["c1", "c2"])])
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]
    assert plan.hold_reason is not None and "2 of its 3" in plan.hold_reason


def test_placement_scheduled_for_an_older_spec_holds_deletes() -> None:
    view = PlacementInput(
        placement_obj("p1", 1, ["p1-decision-1"], generation=2, satisfied_generation=1), [page("p1", 1, ["c1"])]
    )
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]


def test_decision_without_group_index_holds_deletes_but_still_installs() -> None:
    view = PlacementInput(placement_obj("p1", 1, ["p1-decision-1"]), [page("p1", 1, ["c1"], group_index=None)])
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert created(plan) == ["c1"]
    assert plan.held_deletes == ["c0"]
    assert plan.hold_reason is not None and "decision-group-index" in plan.hold_reason


def test_placement_not_given_to_the_plan_holds_deletes() -> None:
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), {(NS, "p1"): scheduled("p1", ["c1"])}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]
    assert plan.hold_reason is not None and f"{NS}/p2" in plan.hold_reason


def test_one_incomplete_placement_holds_deletes_of_every_placement() -> None:
    incomplete = PlacementInput(placement_obj("p2", 1, ["p2-decision-1"]), [])
    placements = {(NS, "p1"): scheduled("p1", ["c1"]), (NS, "p2"): incomplete}
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, [owned("c0"), owned("c1")], ALL)
    assert plan.deletes == []
    assert plan.held_deletes == ["c0"]


def test_placement_selecting_no_cluster_with_its_empty_page_read_is_a_complete_view() -> None:
    plan = plan_install(cma(), {(NS, "p1"): scheduled("p1")}, [owned("c0")], ALL)
    assert deleted(plan) == ["c0"]
    assert plan.hold_reason is None


def test_placement_selecting_no_cluster_and_naming_no_page_is_a_complete_view() -> None:
    view = PlacementInput(placement_obj("p1", 0, []), ())
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert deleted(plan) == ["c0"]


def test_placement_never_scheduled_holds_deletes() -> None:
    view = PlacementInput({"metadata": {"name": "p1", "namespace": NS, "generation": 1}}, ())
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]
    assert plan.hold_reason is not None and "not been scheduled" in plan.hold_reason


def test_empty_placement_whose_empty_page_is_not_read_holds_deletes() -> None:
    view = PlacementInput(placement_obj("p1", 0, ["p1-decision-1"]), ())
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]


def test_empty_placement_with_stale_decisions_holds_deletes_and_installs_them() -> None:
    view = PlacementInput(placement_obj("p1", 0, ["p1-decision-1"]), [page("p1", 1, ["c1"])])
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert created(plan) == ["c1"]
    assert plan.held_deletes == ["c0"]


def test_empty_placement_scheduled_for_an_older_spec_holds_deletes() -> None:
    view = PlacementInput(placement_obj("p1", 0, ["p1-decision-1"], generation=3, satisfied_generation=2), [page("p1", 1, [])])
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c0")], ALL)
    assert plan.held_deletes == ["c0"]


def test_missing_placement_does_not_hold_deletes() -> None:
    placements = {(NS, "p1"): PlacementInput(None, ()), (NS, "p2"): scheduled("p2", ["c1"])}
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, [owned("c0")], ALL)
    assert deleted(plan) == ["c0"]


def test_hold_reason_is_none_when_nothing_is_held() -> None:
    view = PlacementInput(placement_obj("p1", 2, ["p1-decision-1"]), [page("p1", 1, ["c1"])])
    plan = plan_install(cma(), {(NS, "p1"): view}, [owned("c1")], ALL)
    assert plan.held_deletes == []
    assert plan.hold_reason is None


# --- defensive reading -------------------------------------------------------------------------------


def test_oddly_typed_inputs_do_not_crash() -> None:
    body = {"metadata": {"name": ADDON}, "spec": {"installStrategy": {"type": "Placements", "placements": ["x", None, {"name": 5}]}}}
    assert is_empty(plan_install(body, {}, [], {}))
    odd_page = {"metadata": {"name": "p1-decision-1", "labels": {LABEL_DECISION_GROUP_INDEX: "0"}}, "status": {"decisions": ["c0", {"clusterName": 3}, None]}}
    odd_placement = {"metadata": {"name": "p1"}, "status": {"numberOfSelectedClusters": "2", "decisionGroups": "x", "conditions": None}}
    plan = plan_install(cma(), {(NS, "p1"): PlacementInput(odd_placement, [odd_page, "junk"])}, ["junk", {"metadata": None}], ALL)  # type: ignore[list-item]
    assert plan.creates == []


# --- properties --------------------------------------------------------------------------------------

_names = st.sampled_from(["c0", "c1", "c2", "c3", "c4"])


@st.composite
def _scenarios(draw: st.DrawFn) -> tuple[dict[tuple[str, str], PlacementInput], list[dict[str, Any]]]:
    placements: dict[tuple[str, str], PlacementInput] = {}
    for name in ("p1", "p2"):
        kind = draw(st.sampled_from(["complete", "missing", "unread-page", "miscounted", "no-index", "absent"]))
        chosen = sorted(draw(st.sets(_names, max_size=4)))
        if kind == "complete":
            placements[(NS, name)] = scheduled(name, chosen)
        elif kind == "missing":
            placements[(NS, name)] = PlacementInput(None, ())
        elif kind == "unread-page":
            placements[(NS, name)] = PlacementInput(
                placement_obj(name, len(chosen) + 1, [f"{name}-decision-1", f"{name}-decision-2"]),
                [page(name, 1, chosen)],
            )
        elif kind == "miscounted":
            placements[(NS, name)] = PlacementInput(
                placement_obj(name, len(chosen) + 1, [f"{name}-decision-1"]), [page(name, 1, chosen)]
            )
        elif kind == "no-index":
            placements[(NS, name)] = PlacementInput(
                placement_obj(name, len(chosen), [f"{name}-decision-1"]), [page(name, 1, chosen, group_index="x")]
            )
    existing = [
        owned(c, deleting=draw(st.booleans())) if draw(st.booleans()) else mca(c)
        for c in sorted(draw(st.sets(_names, max_size=5)))
    ]
    return placements, existing


def _complete(view: PlacementInput) -> bool:
    if view.placement is None:
        return True
    names = {p["metadata"]["name"] for p in view.decisions}
    groups = view.placement["status"]["decisionGroups"]
    wanted = {n for g in groups for n in g["decisions"]}
    indexed = all(p["metadata"]["labels"].get(LABEL_DECISION_GROUP_INDEX, "").isdigit() for p in view.decisions)
    counted = len({d["clusterName"] for p in view.decisions for d in p["status"]["decisions"]})
    return wanted <= names and indexed and counted == view.placement["status"]["numberOfSelectedClusters"]


@given(_scenarios())
def test_property_no_cluster_is_both_created_and_deleted(scenario: Any) -> None:
    placements, existing = scenario
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, existing, clusters("c0", "c1", "c2", "c3"))
    touched = set(created(plan)) | set(plan.missing_clusters)
    assert not touched & (set(deleted(plan)) | set(plan.held_deletes))


@given(_scenarios())
def test_property_no_delete_while_some_view_is_incomplete(scenario: Any) -> None:
    placements, existing = scenario
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, existing, ALL)
    refs = [(NS, "p1"), (NS, "p2")]
    complete = all(ref in placements and _complete(placements[ref]) for ref in refs)
    if not complete:
        assert plan.deletes == []
    else:
        assert plan.held_deletes == []


@given(_scenarios())
def test_property_creates_and_deletes_follow_required_minus_existing(scenario: Any) -> None:
    placements, existing = scenario
    plan = plan_install(cma(placements=[(NS, "p1"), (NS, "p2")]), placements, existing, clusters("c0", "c1", "c2", "c3"))
    required = {
        d["clusterName"]
        for view in placements.values()
        if view.placement is not None
        for p in view.decisions
        for d in p["status"]["decisions"]
    }
    present = {m["metadata"]["namespace"] for m in existing}
    live = {m["metadata"]["namespace"] for m in existing if "deletionTimestamp" not in m["metadata"]}
    assert set(created(plan)) | set(plan.missing_clusters) == required - present
    assert set(deleted(plan)) | set(plan.held_deletes) == live - required
    assert set(plan.missing_clusters) <= {"c4"}


# --- owner references (4.4) ----------------------------------------------------------------------------


def test_controller_owner_reference_names_the_served_version() -> None:
    assert controller_owner_reference(cma()) == OWNER


def test_owner_reference_is_added_to_an_mca_without_owners() -> None:
    assert owner_references_update(mca("c0"), cma()) == [OWNER]


def test_owner_reference_is_added_after_other_owners() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}
    assert owner_references_update(mca("c0", owners=[other]), cma()) == [other, OWNER]


def test_owner_reference_already_present_changes_nothing() -> None:
    assert owner_references_update(owned("c0"), cma()) is None


def test_owner_reference_with_unknown_extra_fields_changes_nothing() -> None:
    assert owner_references_update(mca("c0", owners=[{**OWNER, "extra": 1}]), cma()) is None


def test_owner_reference_of_another_version_of_the_group_is_replaced() -> None:
    beta = {**OWNER, "apiVersion": "addon.open-cluster-management.io/v1beta1"}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}
    assert owner_references_update(mca("c0", owners=[beta, other]), cma()) == [OWNER, other]


def test_owner_reference_without_controller_flag_is_replaced() -> None:
    partial = {k: v for k, v in OWNER.items() if k != "controller"}
    assert owner_references_update(mca("c0", owners=[partial]), cma()) == [OWNER]


def test_owner_reference_with_old_uid_is_replaced() -> None:
    assert owner_references_update(mca("c0", owners=[{**OWNER, "uid": "old"}]), cma()) == [OWNER]


def test_owner_reference_of_another_group_is_not_matched() -> None:
    foreign = {**OWNER, "apiVersion": "example.io/v1", "controller": False}
    assert owner_references_update(mca("c0", owners=[foreign]), cma()) == [foreign, OWNER]


def test_owner_reference_with_unparsable_api_version_is_not_matched() -> None:
    broken = {**OWNER, "apiVersion": "a/b/c", "controller": False}
    assert owner_references_update(mca("c0", owners=[broken]), cma()) == [broken, OWNER]


def test_only_the_first_matching_owner_reference_is_replaced() -> None:
    first = {**OWNER, "controller": False}
    second = {**OWNER, "blockOwnerDeletion": False}
    assert owner_references_update(mca("c0", owners=[first, second]), cma()) == [OWNER, second]


def test_owner_reference_is_ensured_for_manual_cmas_too() -> None:
    assert owner_references_update(mca("c0"), cma("Manual")) == [OWNER]


def test_scenario_23_self_managed_cma_adds_no_owner_reference() -> None:
    assert owner_references_update(mca("c0"), cma(annotations={ANNOTATION_ADDON_LIFECYCLE: "self"})) is None


def test_owner_reference_is_not_added_for_a_cma_of_another_name() -> None:
    assert owner_references_update(mca("c0", name="other"), cma()) is None


def test_owner_references_of_odd_types_are_kept() -> None:
    body = mca("c0")
    body["metadata"]["ownerReferences"] = ["junk"]
    assert owner_references_update(body, cma()) == ["junk", OWNER]
    body["metadata"]["ownerReferences"] = "junk"
    assert owner_references_update(body, cma()) == [OWNER]


# --- annotation sync (4.5) ----------------------------------------------------------------------------

HOSTING = ANNOTATION_HOSTING_CLUSTER_NAME


def test_sync_adds_cluster_annotations_missing_on_the_mca() -> None:
    assert annotation_sync(mca("c0"), cluster("c0", {HOSTING: "h"})) == {HOSTING: "h"}


def test_sync_updates_changed_values() -> None:
    assert annotation_sync(mca("c0", annotations={HOSTING: "old"}), cluster("c0", {HOSTING: "new"})) == {HOSTING: "new"}


def test_sync_removes_prefixed_annotations_gone_from_the_cluster() -> None:
    body = mca("c0", annotations={HOSTING: "h", "keep": "me"})
    assert annotation_sync(body, cluster("c0")) == {"keep": "me"}


def test_sync_keeps_other_annotations_and_ignores_unprefixed_cluster_ones() -> None:
    body = mca("c0", annotations={"keep": "me"})
    assert annotation_sync(body, cluster("c0", {HOSTING: "h", "cluster-only": "x"})) == {"keep": "me", HOSTING: "h"}


def test_sync_changes_nothing_when_equal() -> None:
    assert annotation_sync(mca("c0", annotations={HOSTING: "h", "x": "y"}), cluster("c0", {HOSTING: "h"})) is None


def test_sync_changes_nothing_without_annotations_on_either() -> None:
    assert annotation_sync(mca("c0"), cluster("c0")) is None


def test_sync_strips_the_v1alpha1_install_namespace_annotation_quirk() -> None:
    body = mca("c0", annotations={ANNOTATION_V1ALPHA1_INSTALL_NAMESPACE: "ns"})
    assert annotation_sync(body, cluster("c0")) == {}
