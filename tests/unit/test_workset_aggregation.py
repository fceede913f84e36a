"""Status aggregation (docs/behaviour/mwrs.md 5.3 after the loop, 6; improvement 2)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.common.conditions import set_status_condition as set_condition
from ocm_rollout.controllers.workset.aggregation import (
    DeployOutcome,
    WriteFailure,
    build_status,
    failure_message,
    status_changed,
)
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.template import TemplateComparer
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import (
    TEMPLATE,
    at,
    cond,
    decision,
    failed,
    mwrs,
    placement,
    succeeded,
    work,
)

CMP = TemplateComparer(TEMPLATE)


def current(w: dict[str, Any]) -> bool:
    return CMP.matches(w.get("spec"))


def deploy(works: list[dict[str, Any]], clusters: list[str], *, selected: int | None = None,
           placements: dict[str, Any] | None = None, groups: int = 1) -> DeployPlan:
    m = mwrs()
    return plan_deploy(
        mwrs=m,
        owner=owner_for("ns", "test-work"),
        works=works,
        placements=placements if placements is not None else {
            "test-placement": placement(selected=len(clusters) if selected is None else selected, groups=groups)
        },
        decisions={"test-placement": [decision(clusters)]},
        now=at(0),
    )


def status_after(works: list[dict[str, Any]], clusters: list[str], *, old: dict | None = None,
                 outcome: DeployOutcome | None = None, applied_all: bool = True, **kw: Any) -> dict[str, Any]:
    plan = deploy(works, clusters, **kw)
    if outcome is None:
        outcome = DeployOutcome()
        for ref in plan.refs:
            if applied_all:
                outcome.ref(ref.name).applied.update(w.cluster for w in ref.writes)
            outcome.ref(ref.name).deleted.update(d.namespace for d in ref.deletes)
    return build_status(old_status=old, plan=plan, outcome=outcome, works=works, is_current=current,
                        now=at(1), namespace="ns").status


def conds(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_three_new_works_give_total_three_and_zero_counts() -> None:
    status = status_after([], ["c1", "c2", "c3"])
    assert status["summary"] == {"total": 3, "progressing": 0, "available": 0, "degraded": 0, "applied": 0,
                                 "desiredTotal": 0, "updated": 0}


def test_available_decision_groups_text() -> None:
    status = status_after([work("c1"), work("c2"), work("c3")], ["c1", "c2", "c3"], selected=5, groups=2)
    assert status["placementSummary"][0]["availableDecisionGroups"] == "2 (3 / 5 clusters applied)"


def test_placement_without_decision_groups_reports_zero_groups() -> None:
    status = status_after([work("c1")], ["c1"], groups=0)
    assert status["placementSummary"][0]["availableDecisionGroups"] == "0 (1 / 1 clusters applied)"


def test_no_status_yet_is_not_rolled_out() -> None:
    status = status_after([], ["c1"])
    assert conds(status)["PlacementRolledOut"] == ("False", "Progressing")
    assert conds(status)["PlacementVerified"] == ("True", "AsExpected")


def test_succeeded_work_completes_the_rollout_and_is_as_expected() -> None:
    status = status_after([work("c1", conditions=succeeded())], ["c1"])
    assert status["summary"]["applied"] == 1 and status["summary"]["available"] == 1
    assert conds(status)["PlacementRolledOut"] == ("True", "Complete")
    assert conds(status)["ManifestworkApplied"] == ("True", "AsExpected")


def test_degraded_work_is_not_as_expected() -> None:
    w = work("c1", conditions=[cond("Applied", "True", 1), cond("Available", "False", 1),
                               cond("Progressing", "True", 1), cond("Degraded", "True", 1)])
    status = status_after([w], ["c1"])
    summary = status["summary"]
    assert (summary["applied"], summary["available"], summary["degraded"], summary["progressing"]) == (1, 0, 1, 1)
    assert conds(status)["PlacementRolledOut"] == ("False", "Progressing")
    assert conds(status)["ManifestworkApplied"] == ("False", "NotAsExpected")


def test_progressing_without_degraded_is_processing() -> None:
    w = work("c1", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1)])
    assert conds(status_after([w], ["c1"]))["ManifestworkApplied"] == ("False", "Processing")


def test_counts_ignore_observed_generation() -> None:
    w = work("c1", generation=3, conditions=succeeded(og=1))
    assert status_after([w], ["c1"])["summary"]["applied"] == 1


def test_empty_decision_is_placement_decision_empty_everywhere() -> None:
    status = status_after([], [])
    assert conds(status)["PlacementVerified"] == ("False", "PlacementDecisionEmpty")
    assert conds(status)["ManifestworkApplied"] == ("False", "PlacementDecisionEmpty")
    assert set(status["summary"].values()) == {0}


def test_works_already_matching_without_progressing_are_applied_and_as_expected() -> None:
    works = [work(c, conditions=[cond("Applied", "True", 1), cond("Available", "True", 1)]) for c in ("c1", "c2")]
    status = status_after(works, ["c1", "c2"])
    assert status["summary"]["applied"] == 2
    assert conds(status)["ManifestworkApplied"] == ("True", "AsExpected")
    # Improvement 1: such works count as Succeeded, so the rollout completes.
    assert conds(status)["PlacementRolledOut"] == ("True", "Complete")


def test_outdated_works_are_not_counted() -> None:
    old = {"workload": {"manifests": []}}
    works = [work(c, spec=old, conditions=succeeded()) for c in ("c1", "c2", "c3", "c4")]
    status = status_after(works, ["c1", "c2", "c3", "c4"])
    assert status["summary"]["total"] == 4 and status["summary"]["applied"] == 0
    assert conds(status)["ManifestworkApplied"] == ("False", "NotAsExpected")


def test_works_being_deleted_are_not_counted() -> None:
    works = [work("c1", conditions=succeeded()), work("c2", conditions=succeeded(), deleting=True)]
    assert status_after(works, ["c1", "c2"])["summary"]["applied"] == 1


def test_missing_placement_changes_only_placement_verified() -> None:
    old = status_after([work("c1", conditions=succeeded())], ["c1"])
    plan = deploy([], [], placements={"test-placement": None})
    status = build_status(old_status=old, plan=plan, outcome=DeployOutcome(), works=[], is_current=current,
                          now=at(5), namespace="ns").status
    assert conds(status)["PlacementVerified"] == ("False", "PlacementDecisionNotFound")
    assert status["summary"] == old["summary"]
    assert conds(status)["ManifestworkApplied"] == conds(old)["ManifestworkApplied"]


def test_transition_time_moves_only_when_status_flips() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "X", "False", "A", "", at(0))
    set_condition(conditions, "X", "False", "B", "m", at(5))
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    set_condition(conditions, "X", "True", "B", "", at(9))
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T12:00:09Z"


def test_unchanged_status_needs_no_write() -> None:
    first = status_after([work("c1", conditions=succeeded())], ["c1"])
    again = status_after([work("c1", conditions=succeeded())], ["c1"], old=first)
    assert not status_changed(first, again)


def test_changed_summary_needs_a_write() -> None:
    first = status_after([work("c1")], ["c1"])
    second = status_after([work("c1", conditions=succeeded())], ["c1"], old=first)
    assert status_changed(first, second)


# --- improvement 2 -------------------------------------------------------------------------------


def test_missing_cluster_namespace_is_reported_with_clusters_and_error() -> None:
    plan = deploy([], ["c1", "c2"])
    outcome = DeployOutcome()
    for cluster in ("c1", "c2"):
        outcome.ref("test-placement").failures.append(
            WriteFailure(cluster, "test-placement", "NamespaceNotFound", f'namespaces "{cluster}" not found')
        )
    status = build_status(old_status=None, plan=plan, outcome=outcome, works=[], is_current=current,
                          now=at(1)).status
    applied = next(c for c in status["conditions"] if c["type"] == "ManifestworkApplied")
    assert (applied["status"], applied["reason"]) == ("False", "ClusterNamespaceNotFound")
    assert "c1, c2" in applied["message"] and 'namespaces "<cluster>" not found' in applied["message"]
    # The placement is fine: it is not reported as empty.
    assert conds(status)["PlacementVerified"] == ("True", "AsExpected")


def test_mixed_write_failures_use_the_generic_reason() -> None:
    plan = deploy([], ["c1", "c2"])
    outcome = DeployOutcome()
    outcome.ref("test-placement").failures += [
        WriteFailure("c1", "test-placement", "Invalid", "spec.workload: Invalid value"),
        WriteFailure("c2", "test-placement", "Forbidden", "forbidden"),
    ]
    status = build_status(old_status=None, plan=plan, outcome=outcome, works=[], is_current=current, now=at(1)).status
    assert conds(status)["ManifestworkApplied"] == ("False", "ManifestWorkWriteFailed")


def test_schema_rejection_reason() -> None:
    plan = deploy([], ["c1"])
    outcome = DeployOutcome()
    outcome.ref("test-placement").failures.append(WriteFailure("c1", "test-placement", "Invalid", "bad"))
    status = build_status(old_status=None, plan=plan, outcome=outcome, works=[], is_current=current, now=at(1)).status
    assert conds(status)["ManifestworkApplied"] == ("False", "ManifestWorkInvalid")


def test_failure_message_lists_at_most_ten_clusters() -> None:
    failures = [WriteFailure(f"c{i:02d}", "p", "Forbidden", "no") for i in range(25)]
    message = failure_message(failures)
    assert "25 cluster(s)" in message and "and 15 more" in message and "c10" not in message


def test_strategy_error_is_reported_in_placement_verified() -> None:
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": {"type": "Sideways"}}])
    plan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=[],
                       placements={"test-placement": placement(selected=1)},
                       decisions={"test-placement": [decision(["c1"])]}, now=at(0))
    status = build_status(old_status=None, plan=plan, outcome=DeployOutcome(), works=[], is_current=current,
                          now=at(1)).status
    verified = next(c for c in status["conditions"] if c["type"] == "PlacementVerified")
    assert (verified["status"], verified["reason"]) == ("False", "NotAsExpected")
    assert "rolloutStrategy.type" in verified["message"]
    assert status["placementSummary"] == []


def test_rollout_type_contradicting_type_is_reported_in_placement_verified() -> None:
    # A stored object may predate the CRD's rule: the decoder names the field, the placement holds.
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": {"type": "All", "rolloutType": "Progressive"}}])
    plan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=[],
                       placements={"test-placement": placement(selected=1)},
                       decisions={"test-placement": [decision(["c1"])]}, now=at(0))
    assert plan.refs[0].error_is_strategy and plan.refs[0].writes == []
    status = build_status(old_status=None, plan=plan, outcome=DeployOutcome(), works=[], is_current=current,
                          now=at(1)).status
    verified = next(c for c in status["conditions"] if c["type"] == "PlacementVerified")
    assert (verified["status"], verified["reason"]) == ("False", "NotAsExpected")
    assert "spec.placementRefs[0].rolloutStrategy.rolloutType: 'Progressive' disagrees with type 'All'" in (
        verified["message"]
    )


def test_failed_works_keep_the_rollout_progressing() -> None:
    status = status_after([work("c1", conditions=failed())], ["c1"])
    assert conds(status)["PlacementRolledOut"] == ("False", "Progressing")
