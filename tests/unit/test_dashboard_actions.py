"""Which actions the dashboard offers (the CLI verbs' own decisions) and the requests it accepts."""

from __future__ import annotations

import pytest

from ocm_rollout.cli.dashboard.actions import ActionRequestError, mwrs_actions, parse_request
from tests.unit.test_workset_fixtures import mwrs


def replica_set(**status: str) -> dict:
    m = mwrs(refs=[{"name": "p", "rolloutStrategy": {"type": "All"}}])
    m["status"] = dict(status)
    return m


def revision(number: int, image: str) -> dict:
    template = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": image}}]}}
    return {
        "metadata": {"name": f"test-work-{number}", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"work.open-cluster-management.io/manifestworkreplicaset": "ns.test-work"}},
        "revision": number,
        "data": {"spec": {"manifestWorkTemplate": template}},
    }


def test_a_rolling_out_replica_set_can_be_paused_and_aborted_not_resumed_or_retried() -> None:
    found = mwrs_actions(replica_set(updateRevision="b", currentRevision="a"), {}, [])
    assert found["pause"]["enabled"] and found["abort"]["enabled"]
    assert not found["resume"]["enabled"] and "not paused" in found["resume"]["reason"]
    assert not found["retry"]["enabled"] and "not aborted" in found["retry"]["reason"]


def test_a_paused_replica_set_can_be_resumed() -> None:
    m = replica_set(updateRevision="b", currentRevision="a")
    m["spec"]["paused"] = True
    found = mwrs_actions(m, {}, [])
    assert found["resume"]["enabled"] and not found["pause"]["enabled"]


def test_a_rolled_out_replica_set_has_nothing_to_abort() -> None:
    found = mwrs_actions(replica_set(updateRevision="a", currentRevision="a"), {}, [])
    assert not found["abort"]["enabled"] and "no rollout in progress" in found["abort"]["reason"]


def test_an_aborted_replica_set_can_be_retried_not_aborted_again() -> None:
    found = mwrs_actions(replica_set(updateRevision="b", currentRevision="a", abortedTime="2026-01-01T00:00:00Z"), {}, [])
    assert found["retry"]["enabled"] and not found["abort"]["enabled"] and "already aborted" in found["abort"]["reason"]


def test_undo_offers_the_revisions_holding_another_template() -> None:
    m = replica_set(updateRevision="b", currentRevision="a")
    m["spec"]["manifestWorkTemplate"] = revision(2, "new")["data"]["spec"]["manifestWorkTemplate"]
    found = mwrs_actions(m, {}, [revision(1, "old"), revision(2, "new")])["undo"]
    assert found["enabled"] and [r["revision"] for r in found["revisions"]] == [1] and found["default"] == 1


def test_undo_without_history_is_disabled() -> None:
    found = mwrs_actions(replica_set(), {}, [])["undo"]
    assert not found["enabled"] and found["reason"] == "no rollout history found"


def test_promote_is_offered_per_gated_placement_only() -> None:
    m = mwrs(refs=[{"name": "gated", "rolloutStrategy": {"type": "All", "promotion": {"decisionGroups": [{"groupIndex": 1}]}}},
                   {"name": "plain", "rolloutStrategy": {"type": "All"}}])
    m["status"] = {}
    found = mwrs_actions(m, {}, [])["promote"]
    assert list(found) == ["gated"] and not found["gated"]["enabled"]


def test_a_request_names_a_verb_a_kind_and_an_object() -> None:
    asked = parse_request({"verb": "undo", "kind": "mwrs", "namespace": "web", "name": "web", "toRevision": 1})
    assert (asked.target.kind, asked.target.namespace, asked.target.name) == ("mwrs", "web", "web")
    assert (asked.verb.verb, asked.verb.to_revision) == ("undo", 1)
    addon = parse_request({"verb": "abort", "kind": "addon", "name": "a", "placement": "ns/p", "namespace": "ignored"})
    assert addon.target.namespace is None and addon.verb.placement == "ns/p"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"kind": "mwrs", "name": "a", "namespace": "n"}, "'verb' is required"),
        ({"verb": "undo", "kind": "addon", "name": "a"}, "verb 'undo' is not one of"),
        ({"verb": "pause", "kind": "pod", "name": "a"}, "kind must be"),
        ({"verb": "pause", "kind": "mwrs", "name": "a"}, "'namespace' is required"),
        ({"verb": "promote", "kind": "mwrs", "name": "a", "namespace": "n", "group": -1}, "'group' must be a whole number"),
        ({"verb": "pause", "kind": "mwrs", "name": 3, "namespace": "n"}, "'name' must be a string"),
    ],
)
def test_a_bad_request_says_what_is_wrong(body: object, message: str) -> None:
    with pytest.raises(ActionRequestError, match=message):
        parse_request(body)
