"""Spec §6 page objects and §9 (writes and event texts), §10 (debug output)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.placement.decisions import (
    created_message,
    deleted_message,
    desired_decisions,
    plan_decision_writes,
    score_note,
    updated_message,
)
from ocm_rollout.controllers.placement.explain import debug_result
from ocm_rollout.controllers.placement.filters import Status
from tests.unit.test_sched_builders import cluster, placement, plain, run, world

PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"


def desired(count: int, **spec: Any) -> list[dict[str, Any]]:
    p = placement(**spec)
    result = run(p, world(plain(count)))
    return desired_decisions(p, result.pages, result.decision_scores)


def existing_from(pages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {page["metadata"]["name"]: page for page in pages}


def test_page_labels_and_owner() -> None:
    page = desired(2)[0]
    assert page["metadata"]["labels"] == {
        PLACEMENT_LABEL: "p",
        "cluster.open-cluster-management.io/decision-group-name": "",
        "cluster.open-cluster-management.io/decision-group-index": "0",
    }
    assert page["metadata"]["ownerReferences"] == [
        {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "name": "p",
         "uid": "uid-p", "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert page["status"] == {
        "decisions": [{"clusterName": "c1", "reason": "", "score": 100}, {"clusterName": "c2", "reason": "", "score": 100}]
    }


def test_page_without_owner_for_offline_output() -> None:
    p = placement()
    result = run(p, world(plain(1)))
    page = desired_decisions(p, result.pages, result.decision_scores, owner=False)[0]
    assert "ownerReferences" not in page["metadata"]


def test_missing_page_is_created_then_status_patched() -> None:
    writes = plan_decision_writes(desired(2), {})
    assert [(w.action, w.name) for w in writes] == [("create", "p-decision-1"), ("status", "p-decision-1")]
    assert "status" not in writes[0].body


def test_missing_empty_page_is_only_created() -> None:
    writes = plan_decision_writes(desired(0), {})
    assert [(w.action, w.name) for w in writes] == [("create", "p-decision-1")]


def test_unchanged_pages_need_no_write() -> None:
    pages = desired(3)
    assert plan_decision_writes(pages, existing_from(pages)) == []


def test_absent_decisions_equal_empty_list() -> None:
    pages = desired(0)
    current = existing_from(pages)
    current["p-decision-1"] = {**current["p-decision-1"], "status": {}}
    assert plan_decision_writes(pages, current) == []


def test_changed_decisions_patch_status_not_labels() -> None:
    old = desired(2)
    new = desired(3, decisionStrategy={"groupStrategy": {"decisionGroups": [
        {"groupName": "all", "groupClusterSelector": {}}]}})  # fmt: skip
    writes = plan_decision_writes(new, existing_from(old))
    assert [(w.action, w.name) for w in writes] == [("status", "p-decision-1")]


def test_label_change_alone_patches_labels_exactly() -> None:
    old = desired(2)
    old[0]["metadata"]["labels"] = {**old[0]["metadata"]["labels"], "extra": "x"}
    new = desired(2)
    new[0]["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-name"] = "g"
    writes = plan_decision_writes(new, existing_from(old))
    assert [(w.action, w.name) for w in writes] == [("labels", "p-decision-1")]
    assert writes[0].body["metadata"]["labels"]["extra"] is None
    assert writes[0].body["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-name"] == "g"


def test_surplus_labelled_pages_are_deleted() -> None:
    old = desired(250)
    writes = plan_decision_writes(desired(10), existing_from(old))
    assert [(w.action, w.name) for w in writes] == [
        ("status", "p-decision-1"), ("delete", "p-decision-2"), ("delete", "p-decision-3")
    ]  # fmt: skip


def test_unlabelled_surplus_page_is_left_alone() -> None:
    stray = {"metadata": {"name": "p-decision-9", "labels": {}}, "status": {}}
    assert plan_decision_writes(desired(1), {**existing_from(desired(1)), "p-decision-9": stray}) == []


def test_event_texts() -> None:
    p = placement(name="demo", namespace="ns1")
    assert created_message("demo-decision-1", p) == "Decision demo-decision-1 is created with placement demo in namespace ns1"
    assert deleted_message("demo-decision-2", p) == "Decision demo-decision-2 is deleted with placement demo in namespace ns1"
    assert updated_message("demo-decision-1", p, Status()) == (
        "Decision demo-decision-1 is updated with placement demo in namespace ns1", False
    )  # fmt: skip


def test_update_event_is_warning_with_plugin_message() -> None:
    text, warning = updated_message("d-1", placement(name="d"), Status("Warning", "AddOn/r/s", "AddOnPlacementScores c1/r expired"))
    assert warning
    assert text.endswith(": AddOnPlacementScores c1/r expired in plugin AddOn/r/s")


def test_score_note_lists_clusters_in_name_order() -> None:
    assert score_note({"cluster3": 200, "cluster1": 0, "cluster2": 100}) == "cluster1:0 cluster2:100 cluster3:200 "


def test_score_note_is_cut_at_1000_characters() -> None:
    note = score_note({f"cluster-{i:04d}": 100 for i in range(200)})
    assert note.endswith("......")
    assert len(note) <= 1006
    assert len(note.removesuffix("......")) <= 1000


def test_debug_result_fields() -> None:
    p = placement(numberOfClusters=1)
    p.metadata.labels = {"team": "a"}
    out = debug_result(run(p, world([cluster("b"), cluster("a")])))
    assert out["placement"]["metadata"] == {"name": "p", "namespace": "default", "labels": {"team": "a"}}
    assert out["placement"]["spec"]["numberOfClusters"] == 1
    assert out["filteredPipelineResults"] == [
        {"name": "Predicate", "filteredClusters": ["a", "b"]},
        {"name": "Predicate,TaintToleration", "filteredClusters": ["a", "b"]},
    ]
    assert out["prioritizeResults"] == [
        {"name": "Balance", "weight": 1, "scores": {"a": 100, "b": 100}},
        {"name": "Steady", "weight": 1, "scores": {"a": 0, "b": 0}},
    ]
    assert out["aggregatedScores"] == [{"clusterName": "a", "score": 100}, {"clusterName": "b", "score": 100}]
    assert "error" not in out


def test_debug_last_filter_list_in_score_order() -> None:
    p = placement(prioritizerPolicy={"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]})
    clusters = [cluster("a", allocatable={"memory": "1Gi"}), cluster("b", allocatable={"memory": "2Gi"})]
    out = debug_result(run(p, world(clusters)))
    assert out["filteredPipelineResults"][1]["filteredClusters"] == ["b", "a"]
    assert out["aggregatedScores"][0] == {"clusterName": "b", "score": 200}


def test_debug_omits_empty_lists() -> None:
    out = debug_result(run(placement(), world([])))
    assert "aggregatedScores" not in out
    assert out["filteredPipelineResults"] == [
        {"name": "Predicate", "filteredClusters": []},
        {"name": "Predicate,TaintToleration", "filteredClusters": []},
    ]
