"""A rollout is never reported Complete (nor ManifestworkApplied True) before its Placement has
been scheduled for its current spec and every decision page has been read (plan.scheduling_gap)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.common.decisions import scheduling_gap
from ocm_rollout.controllers.workset import aggregation
from ocm_rollout.controllers.workset.aggregation import DeployOutcome
from ocm_rollout.controllers.workset.plan import DeployPlan, plan_deploy
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import at, decision, mwrs, placement, succeeded, work


def scheduled(selected: int, *, generation: int = 1, observed: int | None = 1, pages: list[str] | None = None) -> Any:
    p = placement(selected=selected)
    p["metadata"]["generation"] = generation
    if pages is not None:
        p["status"]["decisionGroups"] = [{"decisionGroupIndex": 0, "decisions": pages, "clustersCount": selected}]
    if observed is not None:
        p["status"]["conditions"] = [{"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled",
                                      "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z",
                                      "observedGeneration": observed}]
    return p


def conditions_after(p: Any, pages: list[Any], works: list[Any]) -> dict[str, tuple[str, str, str]]:
    m = mwrs(refs=[{"name": "test-placement"}])
    plan: DeployPlan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=works,
                                   placements={"test-placement": p}, decisions={"test-placement": pages}, now=at(100))
    status = aggregation.build_status(old_status=None, plan=plan, outcome=DeployOutcome(), works=works,
                                      is_current=lambda w: True, now=at(100)).status
    return {c["type"]: (c["status"], c["reason"], c.get("message", "")) for c in status["conditions"]}


def done(cluster: str) -> Any:
    return work(cluster, conditions=succeeded(1, at(10)))


def test_a_placement_never_scheduled_is_not_rolled_out() -> None:
    """OCM: 0 selected == 0 succeeded, Complete at once."""
    conds = conditions_after(placement(selected=0), [], [])
    assert conds["PlacementRolledOut"][:2] == ("False", "Progressing")
    assert "selected no clusters" in conds["PlacementRolledOut"][2]


def test_a_placement_scheduled_for_an_older_spec_is_not_rolled_out() -> None:
    p = scheduled(2, generation=3, observed=2)
    conds = conditions_after(p, [decision(["c1", "c2"])], [done("c1"), done("c2")])
    assert conds["PlacementRolledOut"][:2] == ("False", "Progressing")
    assert "generation 3" in conds["PlacementRolledOut"][2]
    assert conds["ManifestworkApplied"][:2] == ("False", "Processing")


def test_decision_pages_not_read_yet_keep_the_rollout_open() -> None:
    p = scheduled(3, pages=["test-placement-decision-0", "test-placement-decision-1"])
    conds = conditions_after(p, [decision(["c1", "c2"])], [done("c1"), done("c2")])
    assert conds["PlacementRolledOut"][:2] == ("False", "Progressing")
    assert "test-placement-decision-1" in conds["PlacementRolledOut"][2]


def test_pages_holding_fewer_clusters_than_selected_keep_the_rollout_open() -> None:
    assert scheduling_gap(scheduled(3), [decision(["c1", "c2"])], 2) == (
        "the decisions read for Placement 'test-placement' hold 2 of its 3 selected clusters"
    )


def test_a_scheduled_placement_whose_works_all_succeeded_is_complete() -> None:
    p = scheduled(2, pages=["test-placement-decision-0"])
    conds = conditions_after(p, [decision(["c1", "c2"])], [done("c1"), done("c2")])
    assert conds["PlacementRolledOut"] == ("True", "Complete", "")
    assert conds["ManifestworkApplied"][:2] == ("True", "AsExpected")


def test_a_status_without_generation_from_another_scheduler_is_trusted() -> None:
    """OCM's own placement controller writes observedGeneration 0: only the counts are checked."""
    assert scheduling_gap(scheduled(1, observed=0), [decision(["c1"])], 1) is None
    assert scheduling_gap(scheduled(1, observed=None), [decision(["c1"])], 1) is None
