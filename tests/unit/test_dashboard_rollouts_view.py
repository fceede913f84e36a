"""The dashboard's view of a rollout (cli/dashboard/rollouts_view.py): states, chips, groups."""

from __future__ import annotations

from typing import Any

from ocm_rollout.cli.dashboard import rollouts_view
from ocm_rollout.cli.dashboard.rollouts_view import (
    CHIP_LIMIT,
    events_json,
    list_row,
    mwrs_rollout,
    rollout_state,
)
from tests.unit.test_workset_fixtures import at, cond, decision, failed, mwrs, placement, succeeded, work

STRATEGY = {"type": "Progressive", "progressive": {"maxConcurrency": 3, "progressDeadline": "10s", "maxFailures": 2}}


def inputs(**mwrs_status: Any) -> dict[str, Any]:
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": STRATEGY}])
    if mwrs_status:
        m["status"] = mwrs_status
    bad = work("c2", conditions=failed(ltt=at(0)))
    bad["status"]["conditions"][2]["message"] = "image pull failed"
    works = [
        work("c1", conditions=succeeded()),
        bad,
        work("c3", conditions=[cond("Applied", "True", 1), cond("Progressing", "True", 1, at(25))]),
    ]
    decisions = [decision(["c1", "c2"], index=0, group="canary", name="d0"), decision(["c3", "c4", "c5"], index=1, name="d1")]
    return {"mwrs": m, "works": works, "placements": {"test-placement": placement(selected=5, groups=2)},
            "decisions": {"test-placement": decisions}}


def test_every_cluster_is_a_chip_with_its_rollout_status_and_reason() -> None:
    view = mwrs_rollout(**inputs(), now=at(1))
    groups = view["placements"][0]["groups"]
    chips = {c["cluster"]: (c["state"], c["reason"]) for g in groups for c in g["clusters"]}
    assert {k: v[0] for k, v in chips.items()} == {
        "c1": "Succeeded", "c2": "Failed", "c3": "Progressing", "c4": "ToApply", "c5": "ToApply",
    }
    assert "image pull failed" in chips["c2"][1]


def test_the_group_in_flight_is_the_current_one() -> None:
    view = mwrs_rollout(**inputs(), now=at(1))
    placement_json = view["placements"][0]
    assert [g["current"] for g in placement_json["groups"]] == [False, True]
    assert placement_json["currentGroup"] == 1


def test_failed_clusters_are_listed_with_their_messages() -> None:
    view = mwrs_rollout(**inputs(), now=at(1))
    failures = view["placements"][0]["failures"]
    assert [f["cluster"] for f in failures] == ["c2"] and "image pull failed" in failures[0]["reason"]
    assert view["failuresTotal"] == 1


def test_a_cluster_past_its_deadline_is_a_timeout_chip() -> None:
    view = mwrs_rollout(**inputs(), now=at(30))
    chips = {c["cluster"]: c["state"] for g in view["placements"][0]["groups"] for c in g["clusters"]}
    assert chips["c2"] == "TimeOut"


def test_a_paused_rollout_is_paused_and_an_aborted_one_aborted() -> None:
    paused = inputs()
    paused["mwrs"]["spec"]["paused"] = True
    assert mwrs_rollout(**paused, now=at(1))["state"] == "Paused"
    aborted = mwrs_rollout(**inputs(updateRevision="b", currentRevision="a", abortedTime="2026-01-01T00:00:05Z"), now=at(1))
    assert aborted["state"] == "Aborted"
    assert aborted["placements"][0]["currentGroup"] is None
    waiting = [c for g in aborted["placements"][0]["groups"] for c in g["clusters"] if c["state"] == "ToApply"]
    assert waiting and all(c["detail"] == "aborted" for c in waiting)


def test_a_retried_abort_is_not_aborted() -> None:
    found = inputs(updateRevision="b", currentRevision="a", abortedTime="2026-01-01T00:00:05Z")
    found["mwrs"]["metadata"]["annotations"] = {"rollout.ocm-rollout.io/retry": "2026-01-01T00:00:05Z"}
    assert mwrs_rollout(**found, now=at(1))["state"] == "Progressing"


def test_rollout_state_words() -> None:
    base = {"aborted": False, "paused": False, "promotion": False, "breach": False, "rolled_out": False}
    assert rollout_state(**base, counts={"Succeeded": 3}, total=3) == "Complete"
    assert rollout_state(**base, counts={"Succeeded": 1, "ToApply": 2}, total=3) == "Progressing"
    assert rollout_state(**base, counts={"Succeeded": 1, "Validating": 1}, total=2) == "Validating"
    assert rollout_state(**base, counts={"Succeeded": 2, "Failed": 1}, total=3) == "Failed"
    assert rollout_state(**{**base, "breach": True}, counts={"ToApply": 2}, total=2) == "Failed"
    assert rollout_state(**{**base, "promotion": True}, counts={"ToApply": 2}, total=2) == "Awaiting promotion"
    assert rollout_state(**base, counts={}, total=0) == "Pending"
    assert rollout_state(**{**base, "paused": True, "aborted": True}, counts={}, total=0) == "Aborted"


def test_a_large_group_is_aggregated_to_the_clusters_needing_attention() -> None:
    names = [f"c{i}" for i in range(CHIP_LIMIT + 80)]
    m = mwrs(refs=[{"name": "test-placement", "rolloutStrategy": {"type": "All"}}])
    works = [work(n, conditions=succeeded()) for n in names[:150]]
    bad = work(names[150], conditions=failed(ltt=at(0)))
    works.append(bad)
    found = {"mwrs": m, "works": works, "placements": {"test-placement": placement(selected=len(names))},
             "decisions": {"test-placement": [decision(names, index=0, name="d0")]}}
    group = mwrs_rollout(**found, now=at(1))["placements"][0]["groups"][0]
    assert group["aggregated"] and group["total"] == len(names)
    assert group["counts"]["Succeeded"] == 150 and group["counts"]["Failed"] == 1
    assert group["clusters"][0]["cluster"] == names[150]  # the failed one first
    assert all(c["state"] != "Succeeded" for c in group["clusters"])
    whole = mwrs_rollout(**found, now=at(1), expand=[("test-placement", 0)])["placements"][0]["groups"][0]
    assert not whole["aggregated"] and len(whole["clusters"]) == len(names)


def test_the_list_row_carries_what_the_list_filters_on() -> None:
    row = list_row(mwrs_rollout(**inputs(), now=at(1)))
    assert row["key"] == "mwrs/ns/test-work" and row["state"] == "Progressing"
    assert set(row) >= {"kind", "namespace", "name", "strategy", "state", "counts", "total", "age"}


def test_events_are_the_newest_oldest_first() -> None:
    events = [
        {"reason": f"R{i}", "message": f"m{i}", "type": "Normal", "lastTimestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}
        for i in range(rollouts_view.EVENT_LIMIT + 5)
    ]
    shown = events_json(list(reversed(events)))
    assert len(shown) == rollouts_view.EVENT_LIMIT
    assert shown[0]["reason"] == "R5" and shown[-1]["reason"] == f"R{rollouts_view.EVENT_LIMIT + 4}"


def test_an_addon_rollout_shows_chips_and_each_mca_config_hashes() -> None:
    from ocm_rollout.cli.dashboard.rollouts_view import addon_rollout
    from tests.unit.test_addon_report import rolling

    hub = rolling()
    view = addon_rollout(cma=hub.cma, mcas=hub.mcas, placements=hub.placements, now=at_addon(60))
    chips = {c["cluster"]: c["state"] for g in view["placements"][0]["groups"] for c in g["clusters"]}
    assert chips == {"a": "Succeeded", "b": "Progressing", "c": "TimeOut", "d": "Failed", "e": "Progressing", "f": "ToApply"}
    assert view["key"] == f"addon/{view['name']}" and view["placements"][0]["name"].endswith("/p1")
    rows = {r["cluster"]: r for r in view["mcas"]["rows"]}
    assert not rows["b"]["inSync"] and rows["a"]["inSync"]
    assert rows["b"]["desired"][0]["specHash"] != rows["b"]["applied"][0]["specHash"]
    assert view["mcas"]["rows"][0]["inSync"] is False  # those not in sync first


def at_addon(seconds: float) -> Any:
    from tests.unit.addon_fixtures import at as addon_at

    return addon_at(seconds)
