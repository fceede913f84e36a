"""Apply failures are never silent (improvement 9; docs/behaviour/mwrs.md 5.4 and 6, rollout.md 6):
the ``ManifestworkApplied`` message, the ``ManifestWorkApplyFailed`` events, what
``ocm-rollout status`` shows, and the planner's TimeOut rule for a work whose apply keeps failing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from ocm_rollout.api.constants import ANNOTATION_TEMPLATE_APPLIED_TIME
from ocm_rollout.controllers.common.wire import format_time
from ocm_rollout.controllers.rollout import ClusterRolloutStatus, DecisionGroup, RolloutStatus, plan_rollout
from ocm_rollout.controllers.rollout.wire import encode_plan, plan_document
from ocm_rollout.controllers.workset.aggregation import DeployOutcome, build_status
from ocm_rollout.controllers.workset.apply_failures import (
    LISTED_CLUSTERS,
    applied_message,
    apply_failure_events,
    apply_failures,
    work_apply_failure,
)
from ocm_rollout.controllers.workset.plan import plan_deploy
from ocm_rollout.controllers.workset.report import build_report, render_report
from ocm_rollout.controllers.workset.status_mapping import TO_APPLY, revision_start, rollout_status
from ocm_rollout.controllers.workset.template import TemplateComparer
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import TEMPLATE, at, cond, decision, mwrs, placement, succeeded, work

WIDGET_ERROR = 'Failed to apply manifest: the server doesn\'t have a resource type "Widget"'
NAMESPACE_ERROR = 'Failed to apply manifest: namespaces "missing" not found'


def failing_work(
    cluster: str,
    *,
    since: datetime | None = None,
    degraded: bool = True,
    generation: int = 1,
    errors: tuple[tuple[dict[str, Any], str], ...] | None = None,
) -> dict[str, Any]:
    """A work as the simulated agent (rollout mode) leaves it when its manifests do not apply."""
    since = at(0) if since is None else since
    conditions = [
        cond("Applied", "False", generation, since, "AppliedManifestWorkFailed", "Failed to apply manifest work"),
        cond("Available", "False", generation, since, "ResourcesNotAvailable", "2 of 2 resources are not available"),
        cond("Progressing", "True", generation, since, "Applying", "Applying the manifests"),
    ]
    if degraded:
        conditions.append(cond("Degraded", "True", generation, since, "ApplyFailed", "2 of 2 manifests failed"))
    w = work(cluster, generation=generation, conditions=conditions)
    if errors is None:
        errors = (
            ({"ordinal": 0, "group": "example.com", "version": "v1", "kind": "Widget", "resource": "",
              "namespace": "default", "name": "w"}, WIDGET_ERROR),
            ({"ordinal": 1, "group": "", "version": "v1", "kind": "ConfigMap", "resource": "configmaps",
              "namespace": "missing", "name": "cm"}, NAMESPACE_ERROR),
        )
    w["status"]["resourceStatus"] = {"manifests": [
        {"resourceMeta": meta, "conditions": [cond("Applied", "False", generation, since, "AppliedManifestFailed", msg)]}
        for meta, msg in errors
    ]}
    return w


CLUSTER1_ERRORS = (
    'the server doesn\'t have a resource type "Widget" (manifest 0: example.com/v1 Widget default/w), '
    'namespaces "missing" not found (manifest 1: v1 ConfigMap missing/cm)'
)


# --- which works failed to apply, and the words ---------------------------------------------------------


def test_a_work_with_applied_false_at_its_generation_failed_to_apply_with_each_manifest_error() -> None:
    failure = work_apply_failure(failing_work("cluster1"))
    assert failure is not None
    assert failure.cluster == "cluster1"
    assert failure.error == CLUSTER1_ERRORS
    assert failure.first_error == (
        'the server doesn\'t have a resource type "Widget" (manifest 0: example.com/v1 Widget default/w)'
    )


def test_applied_false_of_an_older_generation_or_applied_true_is_no_apply_failure() -> None:
    assert work_apply_failure(failing_work("c1", generation=1) | {"metadata": {"namespace": "c1", "generation": 2}}) is None
    assert work_apply_failure(work("c1", conditions=succeeded())) is None
    assert work_apply_failure(work("c1")) is None


def test_without_manifest_conditions_the_work_level_message_is_the_error() -> None:
    failure = work_apply_failure(failing_work("c1", errors=()))
    assert failure is not None and failure.error == "Failed to apply manifest work"


def test_the_message_names_each_failing_cluster_and_its_errors() -> None:
    failures = apply_failures([failing_work("cluster2"), failing_work("cluster1"), work("cluster3")])
    assert applied_message(failures, 5) == (
        f"2 of 5 clusters failed to apply: cluster1: {CLUSTER1_ERRORS}; cluster2: {CLUSTER1_ERRORS}"
    )


def test_the_message_is_bounded_in_clusters_and_manifests() -> None:
    many = tuple(
        ({"ordinal": i, "version": "v1", "kind": "ConfigMap", "namespace": "missing", "name": f"cm{i}"}, NAMESPACE_ERROR)
        for i in range(4)
    )
    failures = apply_failures([failing_work(f"c{i:02d}", errors=many) for i in range(12)])
    text = applied_message(failures, 20)
    assert text.startswith("12 of 20 clusters failed to apply: c00: ")
    assert text.endswith(f"; and {12 - LISTED_CLUSTERS} more")
    assert "c04:" in text and "c05:" not in text
    assert text.count("and 2 more manifest(s)") == LISTED_CLUSTERS
    assert len(text) < 2000


def test_a_long_error_is_cut() -> None:
    long = (({"ordinal": 0, "version": "v1", "kind": "ConfigMap", "name": "x"}, "Failed to apply manifest: " + "e" * 5000),)
    failure = work_apply_failure(failing_work("c1", errors=long))
    assert failure is not None and len(failure.error) < 400 and "..." in failure.error


def test_events_are_told_once_per_cluster_and_error() -> None:
    failures = apply_failures([failing_work("cluster1"), failing_work("cluster2")])
    events, told = apply_failure_events(failures, frozenset())
    assert [(e.reason, e.type) for e in events] == [("ManifestWorkApplyFailed", "Warning")]
    assert events[0].message == f"ManifestWork failed to apply in 2 cluster(s) cluster1, cluster2: {CLUSTER1_ERRORS}"
    again, told = apply_failure_events(failures, told)
    assert again == []
    # A third cluster fails the same way: only it is told.
    more = apply_failures([failing_work("cluster1"), failing_work("cluster2"), failing_work("cluster3")])
    third, told = apply_failure_events(more, told)
    assert [e.message for e in third] == [f"ManifestWork failed to apply in 1 cluster(s) cluster3: {CLUSTER1_ERRORS}"]
    # cluster1's error changes: told again, with the new error.
    other = (({"ordinal": 0, "version": "v1", "kind": "ConfigMap", "namespace": "missing", "name": "cm"},
              NAMESPACE_ERROR),)
    changed = apply_failures([failing_work("cluster1", errors=other), failing_work("cluster2"), failing_work("cluster3")])
    told_again, _ = apply_failure_events(changed, told)
    assert [e.message for e in told_again] == [
        'ManifestWork failed to apply in 1 cluster(s) cluster1: namespaces "missing" not found'
        " (manifest 0: v1 ConfigMap missing/cm)"
    ]


# --- the MWRS status ------------------------------------------------------------------------------------


def status_of(works: list[dict[str, Any]], clusters: list[str]) -> dict[str, Any]:
    cmp = TemplateComparer(TEMPLATE)
    plan = plan_deploy(
        mwrs=mwrs(), owner=owner_for("ns", "test-work"), works=works,
        placements={"test-placement": placement(selected=len(clusters))},
        decisions={"test-placement": [decision(clusters)]}, now=at(1),
    )
    return build_status(old_status=None, plan=plan, outcome=DeployOutcome(), works=works,
                        is_current=lambda w: cmp.matches(w.get("spec")), now=at(1), namespace="ns").status


def applied_condition(status: dict[str, Any]) -> tuple[str, str, str]:
    (c,) = [c for c in status["conditions"] if c["type"] == "ManifestworkApplied"]
    return c["status"], c["reason"], c["message"]


def test_manifestwork_applied_names_the_failing_clusters_with_oc_ms_reason() -> None:
    clusters = ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"]
    works = [failing_work("cluster1"), failing_work("cluster2")] + [
        work(c, conditions=succeeded()) for c in clusters[2:]
    ]
    assert applied_condition(status_of(works, clusters)) == (
        "False",
        "NotAsExpected",
        f"2 of 5 clusters failed to apply: cluster1: {CLUSTER1_ERRORS}; cluster2: {CLUSTER1_ERRORS}",
    )


def test_before_degraded_is_reported_the_reason_stays_processing_with_the_message() -> None:
    works = [failing_work("cluster1", degraded=False), work("cluster2", conditions=succeeded())]
    status, reason, message = applied_condition(status_of(works, ["cluster1", "cluster2"]))
    assert (status, reason) == ("False", "Processing")
    assert message.startswith("1 of 2 clusters failed to apply: cluster1: ")


def test_without_apply_failures_the_message_stays_empty() -> None:
    works = [work("c1", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1)])]
    assert applied_condition(status_of(works, ["c1"])) == ("False", "Processing", "")


# --- rollout status and the planner ---------------------------------------------------------------------


def test_applied_false_with_progressing_is_to_apply_with_the_failure_time_never_before_the_revision() -> None:
    w = failing_work("c1", since=at(0))
    result = rollout_status(w, revision_start(w))
    assert (result.status, result.apply_failed_since) == (TO_APPLY, at(0))
    assert result.reason.startswith("Applied False (AppliedManifestWorkFailed)")
    w["metadata"]["annotations"] = {ANNOTATION_TEMPLATE_APPLIED_TIME: format_time(at(30))}
    assert rollout_status(w, revision_start(w)).apply_failed_since == at(30)


def test_succeeded_or_progressing_works_carry_no_failure_time() -> None:
    for conditions in (succeeded(), [cond("Applied", "True", 1), cond("Progressing", "True", 1)]):
        assert rollout_status(work("c1", conditions=conditions)).apply_failed_since is None


def progressive(**body: Any) -> dict[str, Any]:
    return {"type": "Progressive", "progressive": body}


GROUPS = [DecisionGroup(group_index=0, clusters=["c1", "c2", "c3", "c4"])]


def test_without_a_deadline_an_apply_failure_stays_to_apply_for_ever() -> None:
    existing = [ClusterRolloutStatus("c1", RolloutStatus.TO_APPLY, None, at(0))]
    plan = plan_rollout(progressive(maxConcurrency=1), GROUPS, existing, at(10**7))
    assert [(e.cluster_name, e.status, e.recheck_time_ns) for e in plan.clusters_to_rollout] == [
        ("c1", RolloutStatus.TO_APPLY, None)
    ]
    assert plan.clusters_timeout == () and plan.recheck_after_ns is None


def test_within_the_deadline_it_holds_its_slot_and_asks_to_look_again_at_the_deadline() -> None:
    existing = [ClusterRolloutStatus("c1", RolloutStatus.TO_APPLY, None, at(0))]
    plan = plan_rollout(progressive(maxConcurrency=1, progressDeadline="60s"), GROUPS, existing, at(20))
    assert [(e.cluster_name, e.status) for e in plan.clusters_to_rollout] == [("c1", RolloutStatus.TO_APPLY)]
    assert plan.clusters_timeout == ()
    assert plan.recheck_after_seconds == pytest.approx(40)


def test_past_the_deadline_it_times_out_and_breaches_max_failures_0() -> None:
    existing = [ClusterRolloutStatus("c1", RolloutStatus.TO_APPLY, None, at(0))]
    plan = plan_rollout(progressive(maxConcurrency=1, progressDeadline="60s"), GROUPS, existing, at(61))
    assert [(e.cluster_name, e.status, e.last_transition_time) for e in plan.clusters_timeout] == [
        ("c1", RolloutStatus.TIME_OUT, at(0))
    ]
    assert plan.max_failure_breach and plan.clusters_to_rollout == ()


STRATEGIES = [
    progressive(maxConcurrency=2, progressDeadline="60s", maxFailures=1),
    progressive(maxConcurrency=2, progressDeadline="60s", maxFailures=0),
    progressive(maxConcurrency="50%", progressDeadline="60s", maxFailures="25%"),
    {"type": "All", "all": {"progressDeadline": "60s"}},
    {"type": "ProgressivePerGroup", "progressivePerGroup": {"progressDeadline": "60s", "maxFailures": 1}},
    {"type": "ProgressivePerGroup", "progressivePerGroup": {"progressDeadline": "60s"}},
]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_past_the_deadline_it_counts_exactly_as_a_failed_cluster_past_its_deadline(strategy: dict[str, Any]) -> None:
    """Never wider: a timed-out apply failure is judged exactly like a Failed cluster whose deadline
    ran out at the same moment (the same slots, the same failure count)."""
    groups = [DecisionGroup(group_index=0, clusters=["c1", "c2", "c3"]),
              DecisionGroup(group_index=1, clusters=["c4", "c5", "c6"])]
    others = [ClusterRolloutStatus("c2", RolloutStatus.PROGRESSING, at(50)),
              ClusterRolloutStatus("c3", RolloutStatus.SUCCEEDED, at(0))]
    ours = plan_rollout(strategy, groups, [ClusterRolloutStatus("c1", RolloutStatus.TO_APPLY, None, at(0)), *others],
                        at(90))
    theirs = plan_rollout(strategy, groups, [ClusterRolloutStatus("c1", RolloutStatus.FAILED, at(0)), *others], at(90))
    assert ours.clusters_to_rollout == theirs.clusters_to_rollout
    assert ours.clusters_timeout == theirs.clusters_timeout
    assert ours.max_failure_breach == theirs.max_failure_breach
    assert "c1" in [e.cluster_name for e in ours.clusters_timeout]


def test_progressive_per_group_judges_it_in_its_groups_turn() -> None:
    """A later group's apply failure does not stop an earlier unfinished group earlier than a
    plain ToApply cluster would."""
    strategy = {"type": "ProgressivePerGroup", "progressivePerGroup": {"progressDeadline": "60s"}}
    groups = [DecisionGroup(group_index=0, clusters=["a1", "a2"]), DecisionGroup(group_index=1, clusters=["b1"])]
    existing = [ClusterRolloutStatus("a1", RolloutStatus.SUCCEEDED, at(0)),
                ClusterRolloutStatus("b1", RolloutStatus.TO_APPLY, None, at(0))]
    plain = [ClusterRolloutStatus("a1", RolloutStatus.SUCCEEDED, at(0)),
             ClusterRolloutStatus("b1", RolloutStatus.TO_APPLY, None)]
    ours, theirs = (plan_rollout(strategy, groups, e, at(10)) for e in (existing, plain))
    assert [e.cluster_name for e in ours.clusters_to_rollout] == [e.cluster_name for e in theirs.clusters_to_rollout]
    assert [e.cluster_name for e in ours.clusters_to_rollout] == ["a2"]


# --- ocm-rollout status ---------------------------------------------------------------------------------


def report_fixture(now: datetime, deadline: str | None = None) -> str:
    body: dict[str, Any] = {}
    if deadline is not None:
        body["progressDeadline"] = deadline
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": {"type": "All", "all": body}}])
    clusters = ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"]
    works = [failing_work("cluster1"), failing_work("cluster2"),
             work("cluster3", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1)]),
             work("cluster4", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1)]),
             work("cluster5")]
    report = build_report(mwrs=m, works=works, placements={"test-placement": placement(selected=5)},
                          decisions={"test-placement": [decision(clusters)]}, now=now)
    return render_report(report)


def test_status_counts_clusters_that_failed_to_apply_and_shows_their_first_error() -> None:
    text = report_fixture(at(10))
    assert "0/5 succeeded, 2 applied, 0 failed, 2 apply failed, 3 progressing, 0 waiting" in text
    assert "apply failed 2  progressing 3" in text
    assert (
        "x cluster1 (apply failed, ToApply): the server doesn't have a resource type \"Widget\""
        " (manifest 0: example.com/v1 Widget default/w)"
    ) in text
    assert "x cluster2 (apply failed, ToApply)" in text


def test_status_shows_a_timed_out_apply_failure_as_failed() -> None:
    text = report_fixture(at(120), deadline="60s")
    assert "4 failed, 1 progressing" in text and "apply failed," not in text
    assert "! cluster1 (TimeOut): progressDeadline exceeded (failing to apply since" in text


def test_ocm_rollout_plan_reads_apply_failed_since() -> None:
    doc = {
        "now": "2026-01-01T12:01:01Z",
        "strategy": progressive(maxConcurrency=1, progressDeadline="60s"),
        "decisionGroups": [{"groupName": "", "groupIndex": 0, "clusters": ["c1", "c2"]}],
        "existing": [{"clusterName": "c1", "status": "ToApply", "lastTransitionTime": None,
                      "applyFailedSince": "2026-01-01T12:00:00Z"}],
    }
    out = encode_plan(plan_document(doc))
    assert [(e["clusterName"], e["status"]) for e in out["clustersTimeOut"]] == [("c1", "TimeOut")]
    assert out["maxFailureBreach"] is True
