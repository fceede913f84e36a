"""MCA Progressing and lastAppliedConfig (docs/behaviour/addons.md 9, 11) and the MCA side of the spec-hash
writer (docs/behaviour/addons.md 5.3; scenarios 9, 11-13, 16-18 of 13)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import config_spec_hash_annotation, spec_hash
from ocm_rollout.api.constants import (
    ANNOTATION_CONFIG_SPEC_HASH,
    ANNOTATION_HOSTING_CLUSTER_NAME,
    LABEL_ADDON_NAME,
    LABEL_ADDON_NAMESPACE,
)
from ocm_rollout.controllers.addon.progressing import (
    addon_works,
    mca_config_hash_update,
    progressing_update,
    work_configs_match,
    work_is_ready,
)
from ocm_rollout.controllers.common.conditions import set_status_condition
from ocm_rollout.controllers.common.wire import format_time

ADDON = "test-addon"
CLUSTER = "cluster1"
GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)


# --- fixtures ------------------------------------------------------------------------------------


def adc(variable: str, generation: int = 1, name: str = "config", namespace: str = CLUSTER) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": {
            "agentInstallNamespace": "open-cluster-management-agent-addon",
            "customizedVariables": [{"name": variable, "value": variable}],
            "proxyConfig": {},
        },
    }


def H(variable: str) -> str:
    return spec_hash(adc(variable))


def cond(type_: str, status: str, reason: str = "R", *, ltt: datetime = T0, og: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": type_, "status": status}
    if og is not None:
        c["observedGeneration"] = og
    c.update(lastTransitionTime=format_time(ltt), reason=reason, message="m")
    return c


def config_ref(
    name: str = "config",
    hash_: str | None = "h1",
    *,
    namespace: str = CLUSTER,
    group: str = GROUP,
    resource: str = ADC,
    applied: str | None = None,
    og: int = 1,
) -> dict[str, Any]:
    desired: dict[str, Any] | None = None
    if hash_ is not None:
        desired = {"namespace": namespace, "name": name, "specHash": hash_} if namespace else {"name": name, "specHash": hash_}
    item: dict[str, Any] = {"group": group, "resource": resource, "name": name}
    if namespace:
        item["namespace"] = namespace
    item.update(lastObservedGeneration=og, desiredConfig=desired)
    item["lastAppliedConfig"] = None if applied is None else {**(desired or {}), "specHash": applied}
    return item


def mca(
    *,
    conditions: list[dict[str, Any]] | None = None,
    refs: list[dict[str, Any]] | None = None,
    spec_configs: list[dict[str, Any]] | None = None,
    supported: list[dict[str, Any]] | None = None,
    hosting: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": ADDON, "namespace": CLUSTER, "generation": 1}
    if hosting is not None:
        metadata["annotations"] = {ANNOTATION_HOSTING_CLUSTER_NAME: hosting}
    status: dict[str, Any] = {
        "conditions": conditions if conditions is not None else [cond("ManifestApplied", "True")],
        "supportedConfigs": supported if supported is not None else [{"group": GROUP, "resource": ADC}],
    }
    if refs is not None:
        status["configReferences"] = refs
    return {"metadata": metadata, "spec": {"configs": spec_configs or []}, "status": status}


def work(
    name: str = f"addon-{ADDON}-deploy-0",
    *,
    namespace: str = CLUSTER,
    for_mca: dict[str, Any] | None = None,
    annotation: str | None = None,
    ready: bool = True,
    generation: int = 1,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if for_mca is not None:
        value = config_spec_hash_annotation(for_mca)
        if value is not None:
            annotations[ANNOTATION_CONFIG_SPEC_HASH] = value
    if annotation is not None:
        annotations[ANNOTATION_CONFIG_SPEC_HASH] = annotation
    status = "True" if ready else "False"
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "generation": generation,
            "labels": labels if labels is not None else {LABEL_ADDON_NAME: ADDON},
            "annotations": annotations,
        },
        "status": {
            "conditions": [cond("Applied", "True", og=generation), cond("Available", status, og=generation)]
        },
    }


def progressing(status: dict[str, Any] | None) -> dict[str, Any]:
    assert status is not None
    found = [c for c in status["conditions"] if c["type"] == "Progressing"]
    assert len(found) == 1
    return found[0]


def verdict(status: dict[str, Any] | None) -> tuple[str, str, str]:
    c = progressing(status)
    return c["status"], c["reason"], c["message"]


# --- rule 1: unsupported configuration ---------------------------------------------------------------


def test_rule1_unsupported_spec_config_is_configuration_unsupported() -> None:
    body = mca(spec_configs=[{"group": "g", "resource": "foos", "namespace": "n", "name": "x"}])
    assert verdict(progressing_update(body, [work(for_mca=body)], NOW)) == (
        "False",
        "ConfigurationUnsupported",
        "Configuration with gvr g/foos is not supported for this addon",
    )


def test_rule1_names_the_first_unsupported_config_in_spec_order() -> None:
    body = mca(
        spec_configs=[
            {"group": GROUP, "resource": ADC, "name": "ok"},
            {"group": "", "resource": "configmaps", "name": "a"},
            {"group": "g", "resource": "bars", "name": "b"},
        ]
    )
    assert verdict(progressing_update(body, [], NOW))[2] == "Configuration with gvr /configmaps is not supported for this addon"


def test_rule1_compares_group_and_resource_only() -> None:
    body = mca(spec_configs=[{"group": GROUP, "resource": ADC, "namespace": "any", "name": "any"}], refs=[])
    assert verdict(progressing_update(body, [], NOW))[1] != "ConfigurationUnsupported"


def test_rule1_missing_group_is_the_core_group() -> None:
    body = mca(spec_configs=[{"resource": "configmaps", "name": "a"}], supported=[{"resource": "configmaps"}], refs=[])
    assert verdict(progressing_update(body, [], NOW))[1] != "ConfigurationUnsupported"


def test_rule1_applies_before_manifest_applied_is_checked() -> None:
    body = mca(conditions=[], spec_configs=[{"group": "g", "resource": "r", "name": "x"}])
    assert verdict(progressing_update(body, [], NOW))[1] == "ConfigurationUnsupported"


def test_scenario_13_unsupported_mca_config_progressing_is_false_unsupported() -> None:
    refs = [
        config_ref("default", H("test"), namespace="open-cluster-management", og=1),
        config_ref("x", "", group="g", resource="unsupported", og=0),
    ]
    body = mca(refs=refs, spec_configs=[{"group": "g", "resource": "unsupported", "namespace": CLUSTER, "name": "x"}])
    status_, reason, _ = verdict(progressing_update(body, [], NOW))
    assert (status_, reason) == ("False", "ConfigurationUnsupported")


# --- rules 2, 3: waiting for the framework -------------------------------------------------------------


def test_rule2_without_manifest_applied_waits_for_it() -> None:
    assert verdict(progressing_update(mca(conditions=[]), [work()], NOW)) == (
        "False",
        "WaitingForManifestApplied",
        "Waiting for ManagedClusterAddOn ManifestApplied condition",
    )


def test_rule2_manifest_applied_false_still_counts_as_present() -> None:
    body = mca(conditions=[cond("ManifestApplied", "False")], refs=[])
    assert verdict(progressing_update(body, [work()], NOW))[1] == "Completed"


def test_rule3_hosted_without_hosting_manifest_applied_waits_for_it() -> None:
    assert verdict(progressing_update(mca(hosting="hub-1"), [work()], NOW)) == (
        "False",
        "WaitingForHostingManifestApplied",
        "Waiting for ManagedClusterAddOn HostingManifestApplied condition",
    )


def test_rule3_not_hosted_does_not_need_hosting_manifest_applied() -> None:
    assert verdict(progressing_update(mca(refs=[]), [work()], NOW))[1] == "Completed"


def test_rule3_empty_hosting_annotation_is_not_hosted() -> None:
    assert verdict(progressing_update(mca(hosting="", refs=[]), [work()], NOW))[1] == "Completed"


def test_list_error_after_rules_1_to_3_is_failed_with_its_text() -> None:
    assert verdict(progressing_update(mca(), [], NOW, list_error="boom")) == ("False", "Failed", "boom")


def test_list_error_does_not_override_waiting() -> None:
    assert verdict(progressing_update(mca(conditions=[]), [], NOW, list_error="boom"))[1] == "WaitingForManifestApplied"


# --- rule 4: which works --------------------------------------------------------------------------------

NO_WORKS = ("True", "Progressing", "progressing... no addon works")


def test_rule4_no_works_is_progressing() -> None:
    assert verdict(progressing_update(mca(), [], NOW)) == NO_WORKS


def test_rule4_ignores_works_with_an_addon_namespace_label() -> None:
    hosted_style = work(labels={LABEL_ADDON_NAME: ADDON, LABEL_ADDON_NAMESPACE: "x"})
    assert verdict(progressing_update(mca(), [hosted_style], NOW)) == NO_WORKS


def test_rule4_ignores_an_empty_addon_namespace_label_too() -> None:
    labelled = work(labels={LABEL_ADDON_NAME: ADDON, LABEL_ADDON_NAMESPACE: ""})
    assert verdict(progressing_update(mca(), [labelled], NOW)) == NO_WORKS


def test_rule4_ignores_works_of_other_addons_and_namespaces() -> None:
    other = work(labels={LABEL_ADDON_NAME: "other"})
    elsewhere = work(namespace="cluster2")
    assert verdict(progressing_update(mca(), [other, elsewhere], NOW)) == NO_WORKS


def test_rule4_ignores_pre_delete_hook_works() -> None:
    assert verdict(progressing_update(mca(refs=[]), [work(f"addon-{ADDON}-pre-delete")], NOW)) == NO_WORKS


def test_rule4_pre_delete_prefix_is_a_prefix() -> None:
    assert addon_works(mca(), [work(f"addon-{ADDON}-pre-delete-0"), work()]) == [work()]


def test_rule4_hosted_works_count_when_hosted() -> None:
    body = mca(hosting="hub-1", conditions=[cond("ManifestApplied", "True"), cond("HostingManifestApplied", "True")], refs=[])
    hosted = work(namespace="hub-1", labels={LABEL_ADDON_NAME: ADDON, LABEL_ADDON_NAMESPACE: CLUSTER})
    assert verdict(progressing_update(body, [], NOW, hosted_works=[hosted]))[1] == "Completed"


def test_rule4_hosted_works_of_another_cluster_do_not_count() -> None:
    body = mca(hosting="hub-1", conditions=[cond("ManifestApplied", "True"), cond("HostingManifestApplied", "True")])
    hosted = work(namespace="hub-1", labels={LABEL_ADDON_NAME: ADDON, LABEL_ADDON_NAMESPACE: "cluster9"})
    assert verdict(progressing_update(body, [], NOW, hosted_works=[hosted])) == NO_WORKS


def test_rule4_hosted_works_are_ignored_when_not_hosted() -> None:
    hosted = work(namespace="hub-1", labels={LABEL_ADDON_NAME: ADDON, LABEL_ADDON_NAMESPACE: CLUSTER})
    assert verdict(progressing_update(mca(), [], NOW, hosted_works=[hosted])) == NO_WORKS


# --- rule 5: config match --------------------------------------------------------------------------------

MISMATCH = ("True", "Progressing", "progressing... mca and work configs mismatch")


def test_rule5_work_without_annotation_matches_an_mca_without_configs() -> None:
    assert work_configs_match(work(), mca())
    assert work_configs_match(work(), mca(refs=[]))


def test_rule5_work_without_annotation_mismatches_an_mca_with_configs() -> None:
    body = mca(refs=[config_ref()])
    assert verdict(progressing_update(body, [work()], NOW)) == MISMATCH


def test_rule5_equal_maps_match() -> None:
    body = mca(refs=[config_ref(hash_="a"), config_ref("other", "b", namespace="")])
    assert work_configs_match(work(for_mca=body), body)


def test_rule5_different_hash_mismatches() -> None:
    body = mca(refs=[config_ref(hash_="new")])
    old = mca(refs=[config_ref(hash_="old")])
    assert verdict(progressing_update(body, [work(for_mca=old)], NOW)) == MISMATCH


def test_rule5_extra_key_in_work_mismatches() -> None:
    body = mca(refs=[config_ref(hash_="a")])
    more = mca(refs=[config_ref(hash_="a"), config_ref("b", "b")])
    assert not work_configs_match(work(for_mca=more), body)


def test_rule5_unparsable_annotation_mismatches() -> None:
    assert not work_configs_match(work(annotation="{not json"), mca(refs=[config_ref()]))


@pytest.mark.parametrize("text", ["[]", '"x"', "1", '{"k": 1}', '{"k": ["h"]}'])
def test_rule5_annotation_that_is_not_a_string_map_mismatches(text: str) -> None:
    assert not work_configs_match(work(annotation=text), mca(refs=[config_ref()]))


def test_rule5_empty_hash_in_work_mismatches() -> None:
    body = mca(refs=[config_ref(hash_="")])
    assert not work_configs_match(work(for_mca=body), body)


def test_rule5_null_hash_in_work_mismatches() -> None:
    key = f"{ADC}.{GROUP}/{CLUSTER}/config"
    assert not work_configs_match(work(annotation=f'{{"{key}": null}}'), mca(refs=[config_ref()]))


def test_rule5_mca_item_without_desired_config_mismatches() -> None:
    body = mca(refs=[config_ref(hash_="a"), config_ref("b", None)])
    assert not work_configs_match(work(for_mca=body), body)


def test_rule5_mca_item_with_empty_desired_hash_mismatches() -> None:
    body = mca(refs=[config_ref(hash_="")])
    key = f"{ADC}.{GROUP}/{CLUSTER}/config"
    assert not work_configs_match(work(annotation=f'{{"{key}":"x"}}'), body)


def test_rule5_annotation_of_null_or_empty_object_matches_an_mca_without_configs() -> None:
    assert work_configs_match(work(annotation="null"), mca(refs=[]))
    assert work_configs_match(work(annotation="{}"), mca())


def test_rule5_annotation_key_order_and_spacing_do_not_matter() -> None:
    body = mca(refs=[config_ref("a", "1"), config_ref("b", "2")])
    ka, kb = (f"{ADC}.{GROUP}/{CLUSTER}/{n}" for n in "ab")
    assert work_configs_match(work(annotation=f'{{ "{kb}": "2", "{ka}": "1" }}'), body)


def test_rule5_mismatch_on_any_work_wins_over_an_unready_work() -> None:
    body = mca(refs=[config_ref(hash_="a")])
    unready = work("addon-test-addon-deploy-0", for_mca=body, ready=False)
    stale = work("addon-test-addon-deploy-1", annotation='{"x":"y"}')
    assert verdict(progressing_update(body, [unready, stale], NOW)) == MISMATCH


# --- rule 6: readiness -----------------------------------------------------------------------------------

NOT_READY = ("True", "Progressing", "progressing... work is not ready")


def test_rule6_unavailable_work_is_not_ready() -> None:
    assert verdict(progressing_update(mca(), [work(ready=False)], NOW)) == NOT_READY


def test_rule6_ready_needs_available_and_applied_true() -> None:
    w = work()
    assert work_is_ready(w)
    w["status"]["conditions"][0]["status"] = "False"
    assert not work_is_ready(w)
    w["status"]["conditions"] = [cond("Available", "True", og=1)]
    assert not work_is_ready(w)


def test_rule6_conditions_of_an_older_generation_are_not_ready() -> None:
    w = work(generation=2)
    w["status"]["conditions"][1]["observedGeneration"] = 1
    assert not work_is_ready(w)


def test_rule6_any_unready_work_keeps_progressing() -> None:
    assert verdict(progressing_update(mca(), [work(), work("addon-test-addon-deploy-1", ready=False)], NOW)) == NOT_READY


def test_scenario_18_unready_work_with_new_config_is_progressing() -> None:
    body = mca(refs=[config_ref("update-config", H("test2"), applied=H("test1"))])
    assert verdict(progressing_update(body, [work(for_mca=body, ready=False)], NOW)) == NOT_READY


# --- rule 7: completed --------------------------------------------------------------------------------


def test_rule7_completed_sets_last_applied_to_desired() -> None:
    body = mca(refs=[config_ref(hash_="a"), config_ref("b", "b", namespace="")])
    status = progressing_update(body, [work(for_mca=body)], NOW)
    assert verdict(status) == ("False", "Completed", "completed with no errors.")
    assert status is not None
    for item in status["configReferences"]:
        assert item["lastAppliedConfig"] == item["desiredConfig"]
        assert item["lastAppliedConfig"] is not item["desiredConfig"]


def test_rule7_completed_without_configs_writes_only_the_condition() -> None:
    status = progressing_update(mca(), [work()], NOW)
    assert verdict(status)[1] == "Completed"
    assert status is not None and "configReferences" not in status


def test_rule7_cannot_be_reached_with_an_item_lacking_a_desired_config() -> None:
    body = mca(refs=[config_ref("b", None)])
    assert verdict(progressing_update(body, [work("w", annotation="{}")], NOW)) == MISMATCH


def test_rule7_keeps_the_v1alpha1_top_level_referent() -> None:
    body = mca(refs=[config_ref(hash_="a")])
    status = progressing_update(body, [work(for_mca=body)], NOW)
    assert status is not None
    assert status["configReferences"][0]["name"] == "config"
    assert status["configReferences"][0]["namespace"] == CLUSTER


def test_scenario_16_ready_works_complete_with_last_applied_equal_to_desired() -> None:
    body = mca(refs=[config_ref("config", H("test"), og=1)])
    status = progressing_update(body, [work(for_mca=body)], NOW)
    assert status is not None
    item = status["configReferences"][0]
    assert item["lastAppliedConfig"]["specHash"] == item["desiredConfig"]["specHash"] == H("test")
    assert verdict(status) == ("False", "Completed", "completed with no errors.")


def test_regression_after_completed_keeps_last_applied() -> None:
    body = mca(refs=[config_ref(hash_="a", applied="a")])
    status = progressing_update(body, [work(for_mca=body, ready=False)], NOW)
    assert status is not None
    assert verdict(status) == NOT_READY
    assert status["configReferences"] == body["status"]["configReferences"]


def test_mismatch_does_not_touch_last_applied() -> None:
    body = mca(refs=[config_ref(hash_="new", applied="old")])
    status = progressing_update(body, [work(annotation='{"x":"y"}')], NOW)
    assert status is not None
    assert status["configReferences"][0]["lastAppliedConfig"]["specHash"] == "old"


# --- condition semantics and change detection -------------------------------------------------------


def test_unchanged_status_returns_none() -> None:
    body = mca(refs=[config_ref(hash_="a")])
    first = progressing_update(body, [work(for_mca=body)], NOW)
    assert first is not None
    again = {**body, "status": first}
    assert progressing_update(again, [work(for_mca=again)], NOW + timedelta(minutes=5)) is None


def test_transition_time_moves_when_status_flips() -> None:
    body = mca(conditions=[cond("ManifestApplied", "True"), cond("Progressing", "True", "Progressing")], refs=[])
    assert progressing(progressing_update(body, [work()], NOW))["lastTransitionTime"] == format_time(NOW)


def test_transition_time_stays_when_status_does_not_flip() -> None:
    body = mca(conditions=[cond("ManifestApplied", "True"), cond("Progressing", "True", "Progressing")])
    c = progressing(progressing_update(body, [work(ready=False)], NOW))
    assert c["lastTransitionTime"] == format_time(T0)
    assert c["message"] == "progressing... work is not ready"


def test_false_to_false_keeps_the_older_transition_time_section_11() -> None:
    body = mca(conditions=[cond("ManifestApplied", "True"), cond("Progressing", "False", "WaitingForManifestApplied")], refs=[])
    c = progressing(progressing_update(body, [work()], NOW))
    assert (c["reason"], c["lastTransitionTime"]) == ("Completed", format_time(T0))


def test_new_progressing_condition_is_appended_with_now() -> None:
    status = progressing_update(mca(), [], NOW)
    assert status is not None
    assert [c["type"] for c in status["conditions"]] == ["ManifestApplied", "Progressing"]
    assert progressing(status) == {
        "type": "Progressing",
        "status": "True",
        "lastTransitionTime": format_time(NOW),
        "reason": "Progressing",
        "message": "progressing... no addon works",
    }


def test_observed_generation_on_the_progressing_condition_is_dropped() -> None:
    body = mca(conditions=[cond("ManifestApplied", "True"), cond("Progressing", "True", "Progressing", og=3)])
    assert "observedGeneration" not in progressing(progressing_update(body, [], NOW))


def test_other_conditions_and_fields_are_kept() -> None:
    body = mca(conditions=[cond("Available", "True"), cond("ManifestApplied", "True"), cond("Configured", "True")])
    body["status"]["namespace"] = "agent-ns"
    status = progressing_update(body, [], NOW)
    assert status is not None
    assert [c["type"] for c in status["conditions"]] == ["Available", "ManifestApplied", "Configured", "Progressing"]
    assert status["namespace"] == "agent-ns"
    assert status["conditions"][:3] == body["status"]["conditions"]


def test_input_mca_is_not_modified() -> None:
    body = mca(refs=[config_ref(hash_="a")])
    before = copy.deepcopy(body)
    progressing_update(body, [work(for_mca=body)], NOW)
    assert body == before


def test_mca_without_status_gets_a_status() -> None:
    status = progressing_update({"metadata": {"name": ADDON, "namespace": CLUSTER}}, [], NOW)
    assert status is not None
    assert verdict(status)[1] == "WaitingForManifestApplied"


def test_oddly_typed_status_does_not_crash() -> None:
    body = {"metadata": {"name": ADDON, "namespace": CLUSTER}, "spec": {"configs": "x"}, "status": {"conditions": "x", "configReferences": 3, "supportedConfigs": None}}
    assert verdict(progressing_update(body, [], NOW))[1] == "WaitingForManifestApplied"


def test_set_status_condition_reports_no_change_for_an_equal_condition() -> None:
    conditions = [cond("Progressing", "True", "Progressing")]
    conditions[0]["message"] = "same"
    assert not set_status_condition(conditions, "Progressing", "True", "Progressing", "same", NOW)
    assert set_status_condition(conditions, "Progressing", "True", "Progressing", "other", NOW)
    assert conditions[0]["lastTransitionTime"] == format_time(T0)


def test_set_status_condition_updates_only_the_first_of_a_type() -> None:
    conditions = [cond("Progressing", "True"), cond("Progressing", "True")]
    set_status_condition(conditions, "Progressing", "False", "Completed", "done", NOW, observed_generation=2)
    assert conditions[0]["status"] == "False" and conditions[0]["observedGeneration"] == 2
    assert conditions[1] == cond("Progressing", "True")


# --- the MCA side of the spec-hash writer (5.3) ---------------------------------------------------------


class Store:
    """Configuration objects by (group, resource, namespace, name); records the lookups."""

    def __init__(self, *objects: tuple[str, str, dict[str, Any]]) -> None:
        self.objects = {
            (group, resource, o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for group, resource, o in objects
        }
        self.asked: list[tuple[str, str, str, str]] = []

    def __call__(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append((group, resource, namespace, name))
        return self.objects.get((group, resource, namespace, name))


def supports_adc(group: str, resource: str) -> bool:
    return (group, resource) == (GROUP, ADC)


def test_scenario_9_default_config_item_gets_observed_generation_and_keeps_its_hash() -> None:
    body = mca(refs=[config_ref("test", H("test"), namespace="default", og=0)])
    store = Store((GROUP, ADC, adc("other-content", generation=1, name="test", namespace="default")))
    refs = mca_config_hash_update(body, store, supports_adc)
    assert refs is not None
    assert refs[0]["lastObservedGeneration"] == 1
    assert refs[0]["desiredConfig"]["specHash"] == H("test")  # hashes of CMA configs come from the CMA


def test_scenario_11_own_spec_config_gets_the_object_hash() -> None:
    body = mca(
        refs=[config_ref("config", "", og=0)],
        spec_configs=[{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}],
    )
    refs = mca_config_hash_update(body, Store((GROUP, ADC, adc("test1"))), supports_adc)
    assert refs is not None
    assert refs[0]["desiredConfig"]["specHash"] == H("test1")
    assert refs[0]["lastObservedGeneration"] == 1


def test_scenario_12_updated_own_config_gets_new_hash_and_generation() -> None:
    body = mca(
        refs=[config_ref("config", H("test1"), og=1)],
        spec_configs=[{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}],
    )
    refs = mca_config_hash_update(body, Store((GROUP, ADC, adc("test2", generation=2))), supports_adc)
    assert refs is not None
    assert refs[0]["desiredConfig"]["specHash"] == H("test2")
    assert refs[0]["lastObservedGeneration"] == 2


def test_scenario_13_unsupported_item_is_left_alone_and_not_looked_up() -> None:
    body = mca(refs=[config_ref("x", "", group="g", resource="unsupported", og=0)])
    store = Store(("g", "unsupported", adc("x", name="x")))
    assert mca_config_hash_update(body, store, supports_adc) is None
    assert store.asked == []


def test_missing_config_object_leaves_the_item_alone() -> None:
    body = mca(refs=[config_ref("config", "", og=0)], spec_configs=[{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}])
    assert mca_config_hash_update(body, Store(), supports_adc) is None


def test_item_without_desired_config_is_left_alone() -> None:
    body = mca(refs=[config_ref("config", None, og=0)])
    store = Store((GROUP, ADC, adc("test")))
    assert mca_config_hash_update(body, store, supports_adc) is None
    assert store.asked == []


def test_unchanged_items_return_none() -> None:
    body = mca(
        refs=[config_ref("config", H("test"), og=1)],
        spec_configs=[{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}],
    )
    assert mca_config_hash_update(body, Store((GROUP, ADC, adc("test"))), supports_adc) is None


def test_lookup_uses_the_desired_config_not_the_top_level_referent() -> None:
    item = config_ref("desired", "", og=0)
    item["name"] = "stale"
    store = Store((GROUP, ADC, adc("test", name="desired")))
    refs = mca_config_hash_update(mca(refs=[item]), store, supports_adc)
    assert store.asked == [(GROUP, ADC, CLUSTER, "desired")]
    assert refs is not None and refs[0]["name"] == "desired"


def test_spec_config_match_needs_group_resource_namespace_and_name() -> None:
    body = mca(
        refs=[config_ref("config", "", og=0)],
        spec_configs=[{"group": GROUP, "resource": ADC, "namespace": "elsewhere", "name": "config"}],
    )
    refs = mca_config_hash_update(body, Store((GROUP, ADC, adc("test"))), supports_adc)
    assert refs is not None
    assert refs[0]["desiredConfig"]["specHash"] == ""
    assert refs[0]["lastObservedGeneration"] == 1


def test_cluster_scoped_config_is_looked_up_without_namespace() -> None:
    hub_config = {"metadata": {"name": "default", "generation": 4}, "spec": {"x": 1}}
    body = mca(
        refs=[config_ref("default", "", namespace="", group=GROUP, resource="addonhubconfigs", og=0)],
        spec_configs=[{"group": GROUP, "resource": "addonhubconfigs", "name": "default"}],
    )
    refs = mca_config_hash_update(body, Store((GROUP, "addonhubconfigs", hub_config)), lambda g, r: True)
    assert refs is not None
    assert refs[0]["desiredConfig"]["specHash"] == spec_hash(hub_config)
    assert refs[0]["lastObservedGeneration"] == 4
    assert "namespace" not in refs[0]


def test_top_level_referent_is_synced_from_desired_config() -> None:
    item = config_ref("config", "h", og=0)
    item["name"] = "old"
    item["namespace"] = "old-ns"
    refs = mca_config_hash_update(mca(refs=[item]), Store(), supports_adc)
    assert refs is not None
    assert (refs[0]["name"], refs[0]["namespace"]) == ("config", CLUSTER)


def test_top_level_referent_is_added_when_missing() -> None:
    item = config_ref("config", "h", og=0)
    del item["name"], item["namespace"]
    refs = mca_config_hash_update(mca(refs=[item]), Store(), supports_adc)
    assert refs is not None
    assert (refs[0]["name"], refs[0]["namespace"]) == ("config", CLUSTER)


def test_hash_update_does_not_modify_its_input() -> None:
    body = mca(refs=[config_ref("config", "", og=0)], spec_configs=[{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}])
    before = copy.deepcopy(body)
    mca_config_hash_update(body, Store((GROUP, ADC, adc("test"))), supports_adc)
    assert body == before


def test_hash_update_keeps_odd_items_and_order() -> None:
    body = mca(refs=["junk", config_ref("config", "", og=0)])  # type: ignore[list-item]
    body["spec"]["configs"] = [{"group": GROUP, "resource": ADC, "namespace": CLUSTER, "name": "config"}]
    refs = mca_config_hash_update(body, Store((GROUP, ADC, adc("test"))), supports_adc)
    assert refs is not None
    assert refs[0] == "junk"
    assert refs[1]["desiredConfig"]["specHash"] == H("test")


def test_hash_update_without_config_references_is_none() -> None:
    assert mca_config_hash_update(mca(), Store(), supports_adc) is None
    assert mca_config_hash_update({"status": {"configReferences": "x"}}, Store(), supports_adc) is None
