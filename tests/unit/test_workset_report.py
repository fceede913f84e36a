"""The rollout report behind `ocm-rollout status` and the metrics counts (improvement 5)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.controllers.workset.plan import plan_deploy
from ocm_rollout.controllers.workset.report import build_report, progress_bar, render_report, status_counts
from ocm_rollout.controllers.workset.workbuild import owner_for
from tests.unit.test_workset_fixtures import at, cond, decision, failed, mwrs, placement, succeeded, work

STRATEGY = {"type": "Progressive", "progressive": {"maxConcurrency": 3, "progressDeadline": "10s",
                                                   "maxFailures": 2}}


def fixture() -> dict[str, Any]:
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": STRATEGY}])
    bad = work("c2", conditions=failed(ltt=at(0)))
    bad["status"]["conditions"][2]["message"] = "image pull failed"
    bad["status"]["resourceStatus"] = {"manifests": [{
        "resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "cm", "namespace": "default"},
        "conditions": [cond("Applied", "False", 1, message="Failed to apply manifest: quota exceeded")],
    }]}
    works = [work("c1", conditions=succeeded()), bad, work("c3", conditions=[cond("Applied", "True", 1),
                                                                            cond("Progressing", "True", 1, at(25))])]
    decisions = [decision(["c1", "c2"], index=0, group="canary", name="d0"),
                 decision(["c3", "c4", "c5"], index=1, name="d1")]
    return {"mwrs": m, "works": works, "placements": {"test-placement": placement(selected=5, groups=2)},
            "decisions": {"test-placement": decisions}}


def test_clusters_are_classified_per_group() -> None:
    report = build_report(**fixture(), now=at(1))
    groups = report.placements[0].groups
    assert [(g.index, g.name) for g in groups] == [(0, "canary"), (1, "")]
    assert {c.cluster: c.state for c in groups[0].clusters} == {"c1": "succeeded", "c2": "failed"}
    assert {c.cluster: c.state for c in groups[1].clusters} == {"c3": "progressing", "c4": "waiting",
                                                                "c5": "waiting"}
    assert groups[0].applied == 2 and groups[1].applied == 1


def test_failed_cluster_reason_includes_condition_and_manifest_errors() -> None:
    report = build_report(**fixture(), now=at(1))
    line = next(c for c in report.placements[0].groups[0].clusters if c.cluster == "c2")
    assert "image pull failed" in line.reason
    assert "ConfigMap/default/cm: Failed to apply manifest: quota exceeded" in line.reason


def test_cluster_past_its_deadline_is_reported_as_timed_out() -> None:
    report = build_report(**fixture(), now=at(30))
    line = next(c for c in report.placements[0].groups[0].clusters if c.cluster == "c2")
    assert (line.state, line.rollout_status) == ("failed", "TimeOut")
    assert line.reason.startswith("progressDeadline exceeded")


def test_rendering_shows_bars_counts_and_failures() -> None:
    text = render_report(build_report(**fixture(), now=at(1)))
    assert "placement test-placement (Progressive, 5 selected)" in text
    assert "group 0 (canary)" in text and "1/2 succeeded" in text
    assert "! c2 (Failed):" in text


def test_missing_placement_is_shown() -> None:
    data = fixture()
    data["placements"] = {"test-placement": None}
    text = render_report(build_report(**data, now=at(1)))
    assert "test-placement (Progressive): Placement not found" in text


def test_progress_bar_is_stacked_in_state_order() -> None:
    assert progress_bar({"succeeded": 2, "failed": 1, "progressing": 1, "waiting": 4}, width=8) == "[##!~....]"


def test_empty_progress_bar() -> None:
    assert progress_bar({}, width=4) == "[    ]"


def test_status_counts_cover_every_decided_cluster() -> None:
    data = fixture()
    m = data["mwrs"]
    plan = plan_deploy(mwrs=m, owner=owner_for("ns", "test-work"), works=data["works"],
                       placements=data["placements"], decisions=data["decisions"], now=at(30))
    assert status_counts(plan.refs[0]) == {"Succeeded": 1, "TimeOut": 1, "Progressing": 1, "ToApply": 2}


def test_strategy_spelled_rollout_type_is_shown_as_its_type() -> None:
    data = fixture()
    data["mwrs"] = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": {
        "rolloutType": "Progressive", "progressive": STRATEGY["progressive"]}}])
    report = build_report(**data, now=at(1))
    assert [p.strategy for p in report.placements] == ["Progressive"]
    # The same report as the strategy spelled type (read as All, c4 and c5 would be in flight too).
    assert render_report(report) == render_report(build_report(**fixture(), now=at(1)))
    assert "placement test-placement (Progressive, 5 selected)" in render_report(report)
    data["placements"] = {"test-placement": None}
    assert "test-placement (Progressive): Placement not found" in render_report(build_report(**data, now=at(1)))


# -- revisions, pause and abort (OCM enhancement 229) -----------------------------------------------


def with_status(status: dict[str, Any], paused: bool = False) -> dict[str, Any]:
    data = fixture()
    data["mwrs"]["status"] = status
    if paused:
        data["mwrs"]["spec"]["paused"] = True
    return data


def test_rendering_shows_the_revisions_and_the_updated_counts() -> None:
    status = {"updateRevision": "b2", "currentRevision": "a1", "summary": {"total": 3, "updated": 1, "desiredTotal": 5},
              "conditions": [cond("Progressing", "True", reason="NewRevisionCreated", message="revision test-work-b2")]}
    text = render_report(build_report(**with_status(status), now=at(1)))
    assert "  revisions: update test-work-b2 (rolling out), current test-work-a1" in text
    assert "updated 1/5" in text
    assert "Progressing          True    NewRevisionCreated: revision test-work-b2" in text
    assert "PAUSED" not in text and "ABORTED" not in text


def test_rendering_shows_a_rolled_out_revision_and_none_yet() -> None:
    done = render_report(build_report(**with_status({"updateRevision": "a1", "currentRevision": "a1"}), now=at(1)))
    assert "update test-work-a1 (rolled out), current test-work-a1" in done
    first = render_report(build_report(**with_status({"updateRevision": "a1"}), now=at(1)))
    assert "update test-work-a1 (rolling out), current none yet" in first


def test_rendering_shows_paused_and_aborted_with_how_to_retry() -> None:
    status = {"updateRevision": "b2", "currentRevision": "a1", "abortedTime": "2026-01-01T12:00:00Z"}
    text = render_report(build_report(**with_status(status, paused=True), now=at(1)))
    assert "update test-work-b2 (ABORTED at 2026-01-01T12:00:00Z)" in text
    assert "PAUSED (spec.paused)" in text
    assert "annotate rollout.ocm-rollout.io/retry=2026-01-01T12:00:00Z" in text
