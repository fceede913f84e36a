"""Verified configuration rollouts of add-ons, the pure parts (docs/behaviour/validation.md): an
applied ManagedClusterAddOn is Validating until the verdict on it (controllers/addon/verified.py),
the configuration rollout's in-flight count, failures and promotion gate (configrollout), the
installProgressions conditions (verification_status), the events (verification_events), the
plugin's rollout context (plugin_calls), and the report."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_PROMOTED
from ocm_rollout.api.rollout_checks import RolloutValidation
from ocm_rollout.controllers.addon import abort as aborting
from ocm_rollout.controllers.addon.configrollout import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    TIME_OUT,
    NodeReport,
    addon_rollout_status,
)
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs
from ocm_rollout.controllers.addon.plugin_calls import context, plugins_of
from ocm_rollout.controllers.addon.report import build_addon_report, render_addon_report
from ocm_rollout.controllers.addon.verification_events import promotion_events
from ocm_rollout.controllers.addon.verification_status import apply, holds
from ocm_rollout.controllers.addon.verified import mca_record, started, verified
from ocm_rollout.controllers.addon.verify import install_namespace, verifies
from ocm_rollout.controllers.rollout.checks import compile_validation
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.checks.promotion import PromotionGate
from ocm_rollout.controllers.rollout.model import GroupKey
from ocm_rollout.controllers.rollout.plugin.conditions import plugin_loaded
from ocm_rollout.controllers.rollout.timefmt import to_ns
from ocm_rollout.controllers.rollout.verification import (
    ANNOTATION_VALIDATION,
    PluginAnswer,
    ValidationRecord,
    Verdict,
    decided,
    judge,
    read_record,
    recorded_results,
)
from ocm_rollout.controllers.rollout.verification_pass import PassVerification, PlacementVerification
from tests.unit.addon_fixtures import (
    ADC,
    NS,
    H,
    Hub,
    at,
    cma,
    done,
    one_placement,
    per_group,
    progressive,
    pstrategy,
)

FEEDBACK = {"checks": [{"name": "ready", "feedback": {"successCondition": "true"}}]}
WANT = DesiredConfigs({ADC: [Config(*ADC, NS, "new-config", H("new"))]})


def checked(strategy: dict[str, Any]) -> dict[str, Any]:
    return {**strategy, "validation": FEEDBACK}


def with_verdict(obj: dict[str, Any], status: str, seconds: float, message: str = "ok", desired: DesiredConfigs = WANT) -> dict[str, Any]:
    """``obj`` (an MCA that applied ``desired``, Completed 3600 s before BASE) with a verdict at ``seconds``."""
    record = mca_record(obj, desired, to_ns(at(-3600)))
    record = ValidationRecord(record.generation, record.since, verdict=Verdict(status, at(seconds), message),  # type: ignore[arg-type]
                              revision=record.revision)
    meta = {**obj["metadata"], "annotations": {ANNOTATION_VALIDATION: record.to_json()}}
    return {**obj, "metadata": meta}


# -- the record and the status of one MCA -------------------------------------------------------------------------


def test_the_record_names_its_revision_and_one_of_another_revision_does_not_count() -> None:
    record = ValidationRecord(0, "2026-01-01T00:00:00.000000Z", message="m", revision="abc", started="2026-01-01T00:00:02.000000Z")
    assert ValidationRecord.from_json(record.to_json()) == record
    with pytest.raises(ValueError, match="not a validation record"):
        ValidationRecord.from_json(record.to_json().replace("2026-01-01T00:00:02.000000Z", "soon"))
    annotations = {ANNOTATION_VALIDATION: record.to_json()}
    since = at(0).replace(year=2026, month=1, day=1, hour=0, minute=0, second=0)
    assert read_record(annotations, 0, since, "abc") == record
    assert read_record(annotations, 0, since, "def").message == ""
    assert read_record(annotations, 0, since).message == ""  # a ManifestWork's record names no revision
    legacy = ValidationRecord(0, record.since, message="m")
    assert json.loads(legacy.to_json()).get("revision") is None


def test_what_a_write_records_is_counted_once() -> None:
    compiled = compile_validation(RolloutValidation.model_validate({"checks": [
        {"name": "ready", "feedback": {"successCondition": "true"}},
        {"name": "errors", "metric": {"provider": {"address": "http://prom:9090"}, "query": "up",
                                      "successCondition": "result[0] < 1"}},
    ]}))
    old = ValidationRecord(0, "2026-01-01T00:00:00.000000Z", revision="r")
    measured = old.with_measurement("errors", Measurement(Phase.SUCCESSFUL, at(1), at(1), "[0]"))
    answered = replace(measured, plugin=PluginAnswer("SUCCEEDED", "ok", at(2)))
    judgement = judge(compiled=compiled, plugin="smoke", variables={"feedback": {}, "manifests": [], "conditions": {},
                      "cluster": "c1"}, record=answered, since=at(0), now=at(3))
    final = decided(answered, judgement, at(3))
    assert recorded_results(old, measured, judgement) == [("errors", "Successful")]
    assert recorded_results(measured, final, judgement, "smoke") == [
        ("plugin:smoke", "SUCCEEDED"), ("ready", "Successful"), ("errors", "Successful"),
    ]
    assert recorded_results(final, final, judgement, "smoke") == []


def test_an_applied_mca_validates_until_its_verdict() -> None:
    applied = done("c", "new-config", H("new"))
    ltt = to_ns(at(-3600))
    state = verified(applied, WANT, ltt)
    # Not judged yet: in flight without a time (no deadline before the validation starts).
    assert (state.status, state.ltt_ns, state.validating, state.reason) == (PROGRESSING, None, True, "validating")
    record, since = started(mca_record(applied, WANT, ltt), at(2))
    assert since == at(2) and started(record, at(9)) == (record, at(2))
    judging = {**applied, "metadata": {**applied["metadata"], "annotations": {ANNOTATION_VALIDATION: record.to_json()}}}
    assert verified(judging, WANT, ltt).ltt_ns == to_ns(at(2))  # the deadline runs from the start
    passed = verified(with_verdict(applied, "Succeeded", 5, "check 'ready' passed"), WANT, ltt)
    assert (passed.status, passed.ltt_ns, passed.reason) == (SUCCEEDED, to_ns(at(5)), "validated: check 'ready' passed")
    failed = verified(with_verdict(applied, "Failed", 7, "check 'ready' Failed"), WANT, ltt)
    assert (failed.status, failed.ltt_ns, failed.reason) == (FAILED, to_ns(at(7)), "validation failed: check 'ready' Failed")
    # New desired configurations validate afresh, whatever was decided before.
    other = DesiredConfigs({ADC: [Config(*ADC, NS, "new-config", H("newer"))]})
    assert verified(with_verdict(applied, "Failed", 7), other, ltt).validating
    # So does a new completion.
    assert verified(with_verdict(applied, "Failed", 7), WANT, to_ns(at(10))).validating


def test_install_namespace_and_whether_a_cma_verifies() -> None:
    assert install_namespace({"status": {"namespace": "agents"}, "spec": {"installNamespace": "x"}}) == "agents"
    assert install_namespace({"spec": {"installNamespace": "x"}}) == "x"
    assert install_namespace({}) == "open-cluster-management-agent-addon"
    assert not verifies(cma(placements=[pstrategy("p1", rollout=progressive())]))
    assert verifies(cma(placements=[pstrategy("p1", rollout={"type": "All", "plugin": "smoke"})]))


# -- the configuration rollout ----------------------------------------------------------------------------------


def node_desired(hub: Hub) -> DesiredConfigs:
    return DesiredConfigs({ADC: [Config(*ADC, NS, "new-config", hub.objects[(NS, "new-config")])]})


def judged(hub: Hub, cluster: str, seconds: float, verdict: str = "", message: str = "") -> None:
    """What the verify step writes on an MCA at ``seconds``: its record (started then), with ``verdict``."""
    obj = hub.mcas[cluster]
    record, _ = started(mca_record(obj, node_desired(hub), addon_rollout_status(obj, node_desired(hub))[1]), at(seconds))
    if verdict:
        record = replace(record, verdict=Verdict(verdict, at(seconds), message))  # type: ignore[arg-type]
    hub.mcas[cluster] = {**obj, "metadata": {**obj["metadata"], "annotations": {ANNOTATION_VALIDATION: record.to_json()}}}


def test_a_validating_addon_is_in_flight_and_its_verdict_moves_the_rollout_on() -> None:
    hub = one_placement(["a", "b", "c"], checked(progressive(maxConcurrency=1)))
    hub.step(0)
    hub.agent(["a"], 1, ready=True)
    plan = hub.step(2)
    [node] = plan.nodes
    assert node.validating == {"a": "validating"} and node.statuses["a"] is PROGRESSING
    assert hub.desired_hash("b") == [H("old")]  # a is in flight: nothing widens
    assert node.status_counts() == {"Validating": 1, "ToApply": 2}
    assert "1/3 progressing" in hub.cma_message()
    judged(hub, "a", 3, "Succeeded", "check 'ready' passed")
    hub.step(4)
    assert hub.desired_hash("b") == [H("new")]


def test_a_failed_validation_counts_toward_max_failures() -> None:
    hub = one_placement(["a", "b", "c"], checked(progressive(maxConcurrency=1, maxFailures=0)))
    hub.step(0)
    hub.agent(["a"], 1, ready=True)
    hub.step(2)
    judged(hub, "a", 3, "Failed", "check 'ready' Failed: x")
    plan = hub.step(4)
    [node] = plan.nodes
    assert node.breach and node.statuses["a"] is FAILED
    assert node.failures() == {"a": ("Failed", "validation failed: check 'ready' Failed: x")}
    assert hub.desired_hash("b") == [H("old")]


def test_a_validating_addon_times_out_at_its_deadline_counted_from_its_validation() -> None:
    """The MCA's Completed condition is an hour old (it never turned Progressing for the new
    configurations): the deadline counts from when its validation started."""
    hub = one_placement(["a", "b"], checked(progressive(maxConcurrency=1, progressDeadline="10s")))
    hub.step(0)
    hub.agent(["a"], 1, ready=True)
    assert hub.step(2).nodes[0].statuses["a"] is PROGRESSING  # no record yet: no deadline
    assert hub.step(30).nodes[0].statuses["a"] is PROGRESSING
    judged(hub, "a", 3)
    assert hub.step(12).nodes[0].statuses["a"] is PROGRESSING
    node = hub.step(14).nodes[0]
    assert node.statuses["a"] is TIME_OUT and node.messages["a"] == "validating"


def test_a_promotion_gate_holds_the_next_group_for_the_revision_rolling_out() -> None:
    rollout = {**per_group(), "promotion": {"type": "Manual"}}
    hub = one_placement(["a", "b", "c"], rollout, groups=[["a"], ["b", "c"]])
    hub.step(0)
    hub.agent(["a"], 1, ready=True)
    node = hub.step(2).nodes[0]
    assert node.promotion is not None and node.promotion.waiting == GroupKey("", 1)
    assert hub.desired_hash("b") == [H("old")] and node.promotion_problem is None
    revision = node.revision
    hub.annotate(ANNOTATION_ROLLOUT_PROMOTED, json.dumps({"default/p1": {"revision": "older", "groups": [1]}}))
    hub.step(3)
    assert hub.desired_hash("b") == [H("old")]  # a promotion holds for its revision only
    hub.annotate(ANNOTATION_ROLLOUT_PROMOTED, "{not json")
    assert (hub.step(4).nodes[0].promotion_problem or "").startswith("annotation rollout.ocm-rollout.io/promoted is not JSON")
    hub.annotate(ANNOTATION_ROLLOUT_PROMOTED, json.dumps({"default/p1": {"revision": revision, "groups": [1]}}))
    node = hub.step(5).nodes[0]
    assert node.promotion is not None and node.promotion.waiting is None
    assert hub.desired_hash("b") == hub.desired_hash("c") == [H("new")]


# -- the installProgressions conditions ---------------------------------------------------------------------


def node(**kw: Any) -> NodeReport:
    return NodeReport("ns", "p", **kw)


def progression(reason: str = "Progressing", status: str = "True", extra: list[Any] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Progressing", "status": status, "reason": reason, "message": "selected clusters 2.",
                   "lastTransitionTime": "2024-05-01T09:00:00Z"}, *(extra or [])]
    return {"installProgressions": [{"namespace": "ns", "name": "p", "conditions": conditions}]}


def conditions_of(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["installProgressions"][0]["conditions"]}


def test_the_progression_says_what_holds_the_rollout() -> None:
    gate = PromotionGate((GroupKey("", 0),), GroupKey("", 1), (GroupKey("", 1),))
    waiting = node(promotion=gate, validating={"c1": "validating: check 'errors' Running: 1/3"})
    reason, text = holds("web", waiting, None)
    assert reason == "WaitingForPromotion"
    assert text == (
        "placement ns/p: decision group 1 waits for a promotion (ocm-rollout rollout promote --kind addon web "
        "--placement ns/p); placement ns/p: validating 1 add-on(s): c1 (validating: check 'errors' Running: 1/3)"
    )
    invalid = PlacementVerification("ns/p", invalid_checks="check 'x': feedback.successCondition does not compile: bad")
    assert holds("web", waiting, invalid)[0] == "InvalidCheck"
    assert holds("web", node(validating={"c1": "validating"}), None)[0] == "Validating"
    erring = PlacementVerification("ns/p", plugin="smoke", plugin_errors=["c1: BeginRollout: UNAVAILABLE"])
    assert holds("web", node(), erring) == ("", "placement ns/p: plugin smoke errors: c1: BeginRollout: UNAVAILABLE")


def test_apply_sets_the_reason_and_plugin_loaded_and_leaves_other_states_alone() -> None:
    found = PlacementVerification("ns/p", plugin="smoke", plugin_loaded=plugin_loaded("smoke", None))
    verification = PassVerification(placements={"ns/p": found})
    now = at(0)
    out = apply(progression(), cma="web", nodes=[node(validating={"c1": "validating"})], verification=verification, now=now)
    shown = conditions_of(out)
    assert shown["Progressing"] == (
        "True", "Validating", "selected clusters 2. placement ns/p: validating 1 add-on(s): c1 (validating)"
    )
    assert shown["PluginLoaded"] == ("True", "Available", "smoke plugin is available.")
    # A rollout that completed (or is aborted, paused, held) keeps its condition.
    done_status = progression("Completed", "False")
    assert apply(done_status, cma="web", nodes=[node(validating={"c1": "x"})], verification=PassVerification(), now=now) == done_status
    # A placement that no longer names a plugin loses PluginLoaded.
    stale = progression(extra=[{"type": "PluginLoaded", "status": "True", "reason": "Available", "message": "m",
                                "lastTransitionTime": "2024-05-01T09:00:00Z"}])
    assert set(conditions_of(apply(stale, cma="web", nodes=[node()], verification=PassVerification(), now=now))) == {"Progressing"}
    # Nothing to say: the very same status.
    assert apply(progression(), cma="web", nodes=[node()], verification=PassVerification(), now=now) == progression()


def test_promotion_events_tell_a_wait_once_and_its_promotion() -> None:
    gate = PromotionGate((GroupKey("", 0),), GroupKey("", 1), (GroupKey("", 1),))
    waiting = node(promotion=gate, revision="r1")
    events, memory = promotion_events("web", [waiting], {})
    assert [(e.reason, e.message) for e in events] == [(
        "RolloutAwaitingPromotion",
        "placement ns/p: decision group 1 waits for a promotion (ocm-rollout rollout promote --kind addon web --placement ns/p)",
    )]
    assert promotion_events("web", [waiting], memory) == ([], memory)
    opened = node(promotion=PromotionGate((GroupKey("", 0), GroupKey("", 1)), None, ()), revision="r1")
    events, memory = promotion_events("web", [opened], memory)
    assert [(e.reason, e.message) for e in events] == [
        ("RolloutPromoted", "placement ns/p: decision group 1 promoted; configurations r1 roll out to it")
    ]
    assert memory == {}


# -- the plugin's requests ------------------------------------------------------------------------------------


def test_the_plugin_context_of_a_placement() -> None:
    report = node(statuses={"a": SUCCEEDED, "b": PROGRESSING, "c": TIME_OUT, "d": PROGRESSING, "e": FAILED, "f": "ToApply"},
                  validating={"d": "validating"}, total=7, revision="r1")
    shown = context("web", report)
    assert (shown.mwrs_name, shown.mwrs_namespace, shown.placement_name, shown.total_cluster_count) == ("web", "ns", "p", 7)
    assert [(e.cluster_name, e.rollout_status) for e in shown.completed] == [("a", "Succeeded"), ("e", "Failed")]
    assert [(e.cluster_name, e.rollout_status) for e in shown.progressing] == [("b", "Progressing"), ("d", "Validating")]
    assert [e.cluster_name for e in shown.timed_out] == ["c"] and {e.manifest_revision_name for e in shown.completed} == {"r1"}
    the_cma = cma(placements=[pstrategy("p1", rollout={"type": "All", "plugin": "smoke"}), pstrategy("p2")])
    assert plugins_of(the_cma) == {"default/p1": "smoke"}


# -- the report ----------------------------------------------------------------------------------------------


def test_the_report_shows_validating_addons_and_a_waiting_gate() -> None:
    rollout = checked({**per_group(), "promotion": {"type": "Manual"}})
    hub = one_placement(["a", "b"], rollout, groups=[["a"], ["b"]])
    hub.step(0)
    hub.agent(["a"], 1, ready=True)
    hub.step(2)
    report = build_addon_report(cma=hub.cma, mcas=hub.mcas, placements=hub.placements, now=at(2) + timedelta(seconds=1))
    [placement] = report.placements
    assert placement.counts()["validating"] == 1
    assert placement.promotion == (
        "placement default/p1: decision group 1 waits for a promotion "
        "(ocm-rollout rollout promote --kind addon test --placement default/p1)"
    )
    text = render_addon_report(report)
    assert "0/2 succeeded, 1 configured, 0 failed, 0 progressing, 1 validating, 1 waiting" in text
    assert f"    PROMOTION: {placement.promotion}" in text
    assert "      ? a (Validating): validating" in text
    assert "validating 1" in text


def test_the_promoted_revision_is_the_abort_revision() -> None:
    hub = one_placement(["a"], checked(progressive()))
    assert hub.step(0).nodes[0].revision == aborting.revision(node_desired(hub))
