"""The simulated work agent against docs/behaviour/work-agent.md (ocm_rollout.sandbox.agents.work, pure)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.conditions import find_condition, format_time
from ocm_rollout.sandbox.agents.work import (
    Mode,
    Outcome,
    Phase,
    Sighting,
    WorkBehaviour,
    compute_status,
    plan_work,
    sighting_for,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
FAST = WorkBehaviour(apply_delay=1.0, progress_duration=2.0)

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 3},
}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def work(*manifests: dict[str, Any], generation: int = 1, finalizer: bool = True, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "cluster1", "uid": "u1", "generation": generation}
    if finalizer:
        meta["finalizers"] = [names.MANIFEST_WORK_FINALIZER]
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": meta,
        "spec": {"workload": {"manifests": list(manifests)}, **spec},
    }


def run(obj: dict[str, Any], behaviour: WorkBehaviour, seconds: float, sighting: Sighting | None = None) -> dict[str, Any]:
    """Apply the plan at T0+seconds to a copy of ``obj`` and return the new object."""
    plan = plan_work(obj, behaviour, sighting or Sighting(T0), at(seconds))
    out = copy.deepcopy(obj)
    if plan.status is not None:
        out["status"] = plan.status
    return out


def cond(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = find_condition((obj.get("status") or {}).get("conditions"), type_)
    assert found is not None, f"no {type_} condition in {obj.get('status')}"
    return dict(found)


def manifest_cond(obj: dict[str, Any], index: int, type_: str) -> dict[str, Any]:
    entry = obj["status"]["resourceStatus"]["manifests"][index]
    found = find_condition(entry["conditions"], type_)
    assert found is not None, f"no {type_} in {entry}"
    return dict(found)


# --- preconditions ---------------------------------------------------------------------------------


def test_finalizer_is_added_before_anything_is_reported() -> None:
    plan = plan_work(work(CONFIGMAP, finalizer=False), FAST, Sighting(T0), at(10))
    assert plan.add_finalizer
    assert plan.status is None


def test_nothing_is_reported_before_the_apply_delay() -> None:
    plan = plan_work(work(CONFIGMAP), FAST, Sighting(T0), at(0.5))
    assert plan.status is None
    assert plan.phase is Phase.WAITING
    assert plan.wake_at == at(1)


def test_work_with_complete_true_is_never_reapplied() -> None:
    done = run(work(CONFIGMAP), FAST, 5)
    done["status"]["conditions"].append(
        {"type": "Complete", "status": "True", "lastTransitionTime": format_time(T0), "reason": "x", "message": ""}
    )
    done["metadata"]["generation"] = 2
    plan = plan_work(done, FAST, Sighting(at(10)), at(60))
    assert plan.status is None and not plan.add_finalizer


# --- the first write at a generation ---------------------------------------------------------------


def test_first_write_carries_applied_available_and_progressing_together() -> None:
    out = run(work(CONFIGMAP), FAST, 1)
    types = [c["type"] for c in out["status"]["conditions"]]
    assert types == ["Applied", "Available", "Progressing"]
    assert cond(out, "Progressing")["status"] == "True"
    assert cond(out, "Progressing")["reason"] == names.REASON_PROGRESSING_APPLYING


def test_work_level_conditions_carry_the_work_generation() -> None:
    out = run(work(CONFIGMAP, generation=4), FAST, 1)
    for type_ in ("Applied", "Available", "Progressing"):
        assert cond(out, type_)["observedGeneration"] == 4


def test_work_applied_true_reason_and_message() -> None:
    out = run(work(CONFIGMAP), FAST, 1)
    applied = cond(out, "Applied")
    assert (applied["status"], applied["reason"], applied["message"]) == (
        "True",
        "AppliedManifestWorkComplete",
        "Apply manifest work complete",
    )


def test_work_available_true_reason_and_message() -> None:
    out = run(work(CONFIGMAP), FAST, 1)
    available = cond(out, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "ResourcesAvailable",
        "All resources are available",
    )


def test_resource_meta_of_a_core_kind() -> None:
    out = run(work(CONFIGMAP), FAST, 1)
    assert out["status"]["resourceStatus"]["manifests"][0]["resourceMeta"] == {
        "ordinal": 0,
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
        "resource": "configmaps",
        "name": "cm",
        "namespace": "default",
    }


def test_resource_meta_of_a_grouped_kind_in_spec_order() -> None:
    out = run(work(CONFIGMAP, DEPLOYMENT), FAST, 1)
    meta = out["status"]["resourceStatus"]["manifests"][1]["resourceMeta"]
    assert (meta["ordinal"], meta["group"], meta["version"], meta["resource"]) == (1, "apps", "v1", "deployments")


def test_manifest_conditions_without_feedback_rules() -> None:
    out = run(work(CONFIGMAP, generation=3), FAST, 1)
    entry = out["status"]["resourceStatus"]["manifests"][0]
    summary = [(c["type"], c["status"], c["reason"], c["message"], c.get("observedGeneration")) for c in entry["conditions"]]
    assert summary == [
        ("Applied", "True", "AppliedManifestComplete", "Apply manifest complete", 3),
        ("Available", "True", "ResourceAvailable", "Resource is available", None),
        ("StatusFeedbackSynced", "True", "NoStatusFeedbackSynced", "", None),
    ]
    assert entry["statusFeedback"] == {}


def test_no_manifests_gives_no_applied_condition() -> None:
    out = run(work(), FAST, 5)
    assert find_condition((out.get("status") or {}).get("conditions"), "Applied") is None


# --- outcomes (rollout mode) -------------------------------------------------------------------------


def test_success_turns_progressing_false_completed_after_the_progress_duration() -> None:
    first = run(work(CONFIGMAP), FAST, 1)
    assert plan_work(first, FAST, Sighting(T0), at(2.5)).status is None
    settled = run(first, FAST, 3)
    progressing = cond(settled, "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["observedGeneration"]) == ("False", "Completed", 1)
    assert progressing["lastTransitionTime"] == format_time(at(3))


def test_success_keeps_applied_transition_time() -> None:
    first = run(work(CONFIGMAP), FAST, 1)
    settled = run(first, FAST, 3)
    assert cond(settled, "Applied")["lastTransitionTime"] == format_time(at(1))


def test_a_late_first_write_still_shows_progressing_true() -> None:
    late = run(work(CONFIGMAP), FAST, 60)
    assert cond(late, "Progressing")["status"] == "True"
    assert cond(run(late, FAST, 61), "Progressing")["status"] == "False"


def test_progressing_plan_wakes_up_when_the_outcome_is_due() -> None:
    plan = plan_work(work(CONFIGMAP), FAST, Sighting(T0), at(1))
    assert plan.phase is Phase.PROGRESSING
    assert plan.wake_at == at(3)


def test_degraded_keeps_progressing_true_and_adds_degraded() -> None:
    behaviour = WorkBehaviour(apply_delay=1, progress_duration=2, outcome=Outcome.DEGRADED, message="boom")
    settled = run(run(work(CONFIGMAP), behaviour, 1), behaviour, 3)
    assert cond(settled, "Progressing")["status"] == "True"
    degraded = cond(settled, "Degraded")
    assert (degraded["status"], degraded["reason"], degraded["message"], degraded["observedGeneration"]) == (
        "True",
        "ApplyFailed",
        "boom",
        1,
    )
    assert cond(settled, "Applied")["status"] == "True"


def test_apply_failure_reports_manifest_and_work_applied_false() -> None:
    behaviour = WorkBehaviour(outcome=Outcome.APPLY_FAILED, message="quota exceeded")
    out = run(work(CONFIGMAP), behaviour, 1)
    applied = manifest_cond(out, 0, "Applied")
    assert (applied["status"], applied["reason"], applied["message"]) == (
        "False",
        "AppliedManifestFailed",
        "Failed to apply manifest: quota exceeded",
    )
    work_applied = cond(out, "Applied")
    assert (work_applied["status"], work_applied["reason"], work_applied["message"]) == (
        "False",
        "AppliedManifestWorkFailed",
        "Failed to apply manifest work",
    )


def test_apply_failure_makes_resources_not_available() -> None:
    out = run(work(CONFIGMAP, DEPLOYMENT), WorkBehaviour(outcome=Outcome.APPLY_FAILED), 1)
    assert manifest_cond(out, 0, "Available")["reason"] == "ResourceNotAvailable"
    available = cond(out, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "False",
        "ResourcesNotAvailable",
        "2 of 2 resources are not available",
    )


def test_apply_failure_ends_degraded() -> None:
    behaviour = WorkBehaviour(apply_delay=1, progress_duration=2, outcome=Outcome.APPLY_FAILED)
    settled = run(run(work(CONFIGMAP), behaviour, 1), behaviour, 3)
    assert cond(settled, "Degraded")["status"] == "True"


def test_stuck_never_settles() -> None:
    behaviour = WorkBehaviour(apply_delay=1, progress_duration=2, outcome=Outcome.STUCK)
    first = run(work(CONFIGMAP), behaviour, 1)
    plan = plan_work(first, behaviour, Sighting(T0), at(3600))
    assert plan.status is None and plan.wake_at is None
    assert cond(first, "Progressing")["status"] == "True"


# --- generations ---------------------------------------------------------------------------------------


def bumped(obj: dict[str, Any], *manifests: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["generation"] += 1
    out["spec"]["workload"]["manifests"] = list(manifests)
    return out


def test_old_generation_conditions_stay_until_the_new_apply() -> None:
    done = run(run(work(CONFIGMAP), FAST, 1), FAST, 3)
    updated = bumped(done, CONFIGMAP, DEPLOYMENT)
    plan = plan_work(updated, FAST, Sighting(at(10)), at(10.5))
    assert plan.status is None
    assert cond(updated, "Applied")["observedGeneration"] == 1


def test_new_generation_first_write_flips_progressing_back_to_true() -> None:
    done = run(run(work(CONFIGMAP), FAST, 1), FAST, 3)
    out = run(bumped(done, CONFIGMAP, DEPLOYMENT), FAST, 11, Sighting(at(10)))
    progressing = cond(out, "Progressing")
    assert (progressing["status"], progressing["observedGeneration"]) == ("True", 2)
    assert progressing["lastTransitionTime"] == format_time(at(11))


def test_new_generation_keeps_applied_transition_time() -> None:
    done = run(run(work(CONFIGMAP), FAST, 1), FAST, 3)
    out = run(bumped(done, CONFIGMAP, DEPLOYMENT), FAST, 11, Sighting(at(10)))
    applied = cond(out, "Applied")
    assert applied["observedGeneration"] == 2
    assert applied["lastTransitionTime"] == format_time(at(1))


def test_observed_generation_is_never_newer_than_the_generation() -> None:
    out = run(work(CONFIGMAP, generation=2), FAST, 5)
    generations = [c.get("observedGeneration", 0) for c in out["status"]["conditions"]]
    for entry in out["status"]["resourceStatus"]["manifests"]:
        generations += [c.get("observedGeneration", 0) for c in entry["conditions"]]
    assert max(generations) == 2


def test_entries_of_removed_manifests_disappear() -> None:
    first = run(work(CONFIGMAP, DEPLOYMENT), FAST, 3)
    out = run(bumped(first, DEPLOYMENT), FAST, 20, Sighting(at(10)))
    metas = [e["resourceMeta"] for e in out["status"]["resourceStatus"]["manifests"]]
    assert [(m["ordinal"], m["kind"]) for m in metas] == [(0, "Deployment")]


def test_manifest_conditions_follow_a_manifest_that_moved_in_the_spec() -> None:
    first = run(work(CONFIGMAP, DEPLOYMENT), FAST, 3)
    out = run(bumped(first, DEPLOYMENT, CONFIGMAP), FAST, 20, Sighting(at(10)))
    assert manifest_cond(out, 0, "Applied")["lastTransitionTime"] == format_time(at(3))
    assert out["status"]["resourceStatus"]["manifests"][1]["resourceMeta"]["ordinal"] == 1


def test_a_success_after_a_failure_removes_the_stale_degraded() -> None:
    failing = WorkBehaviour(apply_delay=1, progress_duration=2, outcome=Outcome.DEGRADED)
    failed = run(run(work(CONFIGMAP), failing, 1), failing, 3)
    out = run(bumped(failed, CONFIGMAP), FAST, 11, Sighting(at(10)))
    assert find_condition(out["status"]["conditions"], "Degraded") is None


# --- available aggregation ---------------------------------------------------------------------------


def test_incomplete_resource_meta_gives_unknown_availability() -> None:
    nameless = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
    out = run(work(CONFIGMAP, nameless), FAST, 1)
    available = manifest_cond(out, 1, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "Unknown",
        "IncompleteResourceMeta",
        "Resource meta is incomplete",
    )
    work_available = cond(out, "Available")
    assert (work_available["status"], work_available["message"]) == ("Unknown", "1 of 2 resources have unknown status")


def test_nameless_manifest_fails_to_apply() -> None:
    nameless = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
    out = run(work(nameless), FAST, 1)
    assert manifest_cond(out, 0, "Applied")["message"] == "Failed to apply manifest: resource name may not be empty"


def test_unparsable_manifest_has_only_its_ordinal() -> None:
    out = run(work(CONFIGMAP, {"data": "x"}), FAST, 1)
    meta = out["status"]["resourceStatus"]["manifests"][1]["resourceMeta"]
    assert meta["ordinal"] == 1
    assert all(meta[key] == "" for key in ("group", "version", "kind", "resource", "name", "namespace"))
    assert manifest_cond(out, 1, "Applied")["status"] == "False"


# --- faithful mode ---------------------------------------------------------------------------------


FAITHFUL = WorkBehaviour(mode=Mode.FAITHFUL, apply_delay=1, progress_duration=2)


def test_faithful_mode_writes_no_progressing_without_rules() -> None:
    out = run(run(work(DEPLOYMENT), FAITHFUL, 1), FAITHFUL, 5)
    types = {c["type"] for c in out["status"]["conditions"]}
    assert types == {"Applied", "Available"}


PROGRESSING_RULE = {
    "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
    "conditionRules": [
        {
            "type": "CEL",
            "condition": "Progressing",
            "celExpressions": ["!has(object.status.readyReplicas) || object.status.readyReplicas < object.spec.replicas"],
        }
    ],
}


def test_faithful_mode_progressing_comes_from_condition_rules() -> None:
    out = run(work(DEPLOYMENT, manifestConfigs=[PROGRESSING_RULE], generation=2), FAITHFUL, 1)
    progressing = cond(out, "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["observedGeneration"]) == (
        "True",
        "ConditionRulesAggregated",
        2,
    )


def test_faithful_mode_rule_progressing_turns_false_when_the_workload_is_ready() -> None:
    first = run(work(DEPLOYMENT, manifestConfigs=[PROGRESSING_RULE]), FAITHFUL, 1)
    settled = run(first, FAITHFUL, 3)
    assert cond(settled, "Progressing")["status"] == "False"
    assert cond(settled, "Progressing")["message"] == "Manifest is not Progressing"


def test_rule_generated_work_condition_is_pruned_when_the_rule_goes() -> None:
    first = run(work(DEPLOYMENT, manifestConfigs=[PROGRESSING_RULE]), FAITHFUL, 1)
    updated = copy.deepcopy(first)
    updated["metadata"]["generation"] = 2
    updated["spec"]["manifestConfigs"] = []
    out = run(updated, FAITHFUL, 20, Sighting(at(10)))
    assert find_condition(out["status"]["conditions"], "Progressing") is None
    assert find_condition(out["status"]["resourceStatus"]["manifests"][0]["conditions"], "Progressing") is None


def test_rollout_mode_overrides_rule_generated_progressing() -> None:
    first = run(work(DEPLOYMENT, manifestConfigs=[PROGRESSING_RULE]), FAST, 1)
    assert cond(first, "Progressing")["reason"] == "Applying"
    assert cond(run(first, FAST, 3), "Progressing")["reason"] == "Completed"


# --- status feedback in a work ----------------------------------------------------------------------


FEEDBACK_CONFIG = {
    "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "*", "namespace": "*"},
    "feedbackRules": [{"type": "WellKnownStatus"}],
}


def test_feedback_values_follow_the_simulated_rollout() -> None:
    first = run(work(DEPLOYMENT, manifestConfigs=[FEEDBACK_CONFIG]), FAST, 1)
    values = first["status"]["resourceStatus"]["manifests"][0]["statusFeedback"]["values"]
    assert values == [{"name": "Replicas", "fieldValue": {"type": "Integer", "integer": 3}}]
    settled = run(first, FAST, 3)
    values = settled["status"]["resourceStatus"]["manifests"][0]["statusFeedback"]["values"]
    assert [v["name"] for v in values] == ["ReadyReplicas", "Replicas", "AvailableReplicas"]
    assert values[0]["fieldValue"] == {"type": "Integer", "integer": 3}


def test_feedback_synced_condition_is_re_added_when_values_change() -> None:
    first = run(work(DEPLOYMENT, manifestConfigs=[FEEDBACK_CONFIG]), FAST, 1)
    settled = run(first, FAST, 3)
    conditions = settled["status"]["resourceStatus"]["manifests"][0]["conditions"]
    assert conditions[-1]["type"] == "StatusFeedbackSynced"
    assert conditions[-1]["lastTransitionTime"] == format_time(at(3))
    assert (conditions[-1]["reason"], conditions[-1]["status"]) == ("StatusFeedbackSynced", "True")


def test_feedback_synced_keeps_its_time_while_values_stay() -> None:
    config = {
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
        "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "replicas", "path": ".spec.replicas"}]}],
    }
    settled = run(run(work(DEPLOYMENT, manifestConfigs=[config]), FAST, 1), FAST, 3)
    out = run(bumped(settled, DEPLOYMENT), FAST, 21, Sighting(at(20)))
    assert cond(out, "Applied")["observedGeneration"] == 2
    assert manifest_cond(out, 0, "StatusFeedbackSynced")["lastTransitionTime"] == format_time(at(1))


def test_feedback_failure_is_reported_on_the_manifest() -> None:
    config = {
        "resourceIdentifier": {"resource": "configmaps", "name": "cm", "namespace": "default"},
        "feedbackRules": [{"type": "WellKnownStatus"}],
    }
    out = run(work(CONFIGMAP, manifestConfigs=[config]), FAST, 1)
    synced = manifest_cond(out, 0, "StatusFeedbackSynced")
    assert (synced["status"], synced["reason"], synced["message"]) == (
        "False",
        "StatusFeedbackSyncFailed",
        "Sync status feedback failed with error cannot find the wellknown statuses for resource with gvk /v1, Kind=ConfigMap",
    )


def test_first_matching_manifest_config_with_feedback_rules_wins() -> None:
    empty = {"resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"}}
    paths = {
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "w*", "namespace": "default"},
        "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "r", "path": ".spec.replicas"}]}],
    }
    out = run(work(DEPLOYMENT, manifestConfigs=[empty, paths, FEEDBACK_CONFIG]), FAST, 1)
    values = out["status"]["resourceStatus"]["manifests"][0]["statusFeedback"]["values"]
    assert values == [{"name": "r", "fieldValue": {"type": "Integer", "integer": 3}}]


# --- deletion ----------------------------------------------------------------------------------------


def deleting(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["deletionTimestamp"] = format_time(at(20))
    return out


def test_deleting_work_reports_deleting_and_drops_the_finalizer() -> None:
    live = run(work(CONFIGMAP), FAST, 3)
    plan = plan_work(deleting(live), FAST, Sighting(at(20)), at(20))
    assert plan.remove_finalizer
    assert plan.status is not None
    found = find_condition(plan.status["conditions"], "Deleting")
    assert found is not None
    assert (found["status"], found["reason"], found["message"], found["observedGeneration"]) == (
        "True",
        "WorkDeleting",
        "ManifestWork is being deleted",
        1,
    )


def test_cleanup_delay_holds_the_finalizer() -> None:
    behaviour = WorkBehaviour(cleanup_delay=5)
    plan = plan_work(deleting(run(work(CONFIGMAP), behaviour, 3)), behaviour, Sighting(at(20)), at(21))
    assert not plan.remove_finalizer
    assert plan.wake_at == at(25)


def test_deleting_work_without_the_finalizer_is_left_alone() -> None:
    plan = plan_work(deleting(work(CONFIGMAP, finalizer=False)), FAST, Sighting(at(20)), at(20))
    assert plan == type(plan)()


# --- restarts ----------------------------------------------------------------------------------------


def test_restart_does_not_reopen_a_settled_rollout() -> None:
    done = run(run(work(CONFIGMAP), FAST, 1), FAST, 3)
    sighting = sighting_for(done, at(100))
    assert sighting.already_reported
    plan = plan_work(done, FAST, sighting, at(100))
    assert plan.status is None and plan.phase is Phase.SETTLED


def test_restart_in_flight_settles_after_the_progress_duration() -> None:
    in_flight = run(work(CONFIGMAP), FAST, 1)
    sighting = sighting_for(in_flight, at(100))
    assert plan_work(in_flight, FAST, sighting, at(101)).status is None
    settled = plan_work(in_flight, FAST, sighting, at(102))
    assert settled.status is not None
    assert find_condition(settled.status["conditions"], "Progressing") == {
        "type": "Progressing",
        "status": "False",
        "observedGeneration": 1,
        "lastTransitionTime": format_time(at(102)),
        "reason": "Completed",
        "message": "All manifests are applied and rolled out",
    }


def test_faithful_restart_treats_a_reported_generation_as_settled() -> None:
    first = run(work(DEPLOYMENT), FAITHFUL, 1)
    plan = plan_work(first, FAITHFUL, sighting_for(first, at(100)), at(100))
    assert plan.phase is Phase.SETTLED


def test_compute_status_keeps_foreign_status_fields() -> None:
    obj = work(CONFIGMAP)
    obj["status"] = {"conditions": [], "extra": {"kept": True}}
    assert compute_status(obj, FAST, Phase.PROGRESSING, at(1))["extra"] == {"kept": True}
