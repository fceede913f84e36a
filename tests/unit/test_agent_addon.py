"""The simulated add-on framework (ocm_rollout.sandbox.agents.addon, pure): supported configs, the deploy
work and its config-spec-hash annotation, ManifestApplied and Available."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import go_json
from ocm_rollout.sandbox.agents.addon import (
    ConfigKey,
    addon_status,
    apply_failure,
    available_condition,
    config_hash_map,
    config_spec_hash_annotation,
    deploy_work_name,
    deployment_config_ref,
    needs_render,
    plan_addon,
    plan_deploy_work,
    supported_configs,
    waiting_for_configs,
)
from ocm_rollout.sandbox.agents.addon_agent import AGENT_CONFIG_HASH_ANNOTATION, agent_values
from ocm_rollout.sandbox.agents.addon_index import AddonIndex
from ocm_rollout.sandbox.agents.conditions import find_condition, format_time
from ocm_rollout.sandbox.agents.registration import fleet_member
from ocm_rollout.sandbox.agents.work import Outcome
from ocm_rollout.sandbox.sim_discovery import group_versions, resources_of
from ocm_rollout.sandbox.sim_profile import load_profile

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
ADDON_GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
EXAMPLE_GROUP = "example.open-cluster-management.io"
SERVED = {(ADDON_GROUP, ADC), (ADDON_GROUP, "managedclusteraddons"), ("", "configmaps")}
ADC_KEY: ConfigKey = (ADDON_GROUP, ADC, "open-cluster-management", "deploy-config")
ANNOTATION = "open-cluster-management.io/config-spec-hash"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cma(*, lifecycle: str | None = None, default: bool = True, example: bool = True) -> dict[str, Any]:
    supported: list[dict[str, Any]] = [{"group": ADDON_GROUP, "resource": ADC}]
    if default:
        supported[0]["defaultConfig"] = {"name": "deploy-config", "namespace": "open-cluster-management"}
    if example:
        supported.append(
            {"group": EXAMPLE_GROUP, "resource": "exampleconfigs",
             "defaultConfig": {"name": "example-config", "namespace": "open-cluster-management"}}
        )  # fmt: skip
    meta: dict[str, Any] = {"name": "helloworld", "uid": "cma-uid"}
    if lifecycle is not None:
        meta["annotations"] = {"addon.open-cluster-management.io/lifecycle": lifecycle}
    return {"metadata": meta, "spec": {"supportedConfigs": supported}}


def ref(group: str, resource: str, name: str, spec_hash: str | None, namespace: str = "open-cluster-management") -> dict[str, Any]:
    item: dict[str, Any] = {"group": group, "resource": resource, "name": name, "namespace": namespace}
    if spec_hash is not None:
        item["desiredConfig"] = {"name": name, "namespace": namespace, "specHash": spec_hash}
    return item


def mca(*refs: dict[str, Any], conditions: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if refs:
        status["configReferences"] = list(refs)
    if conditions:
        status["conditions"] = conditions
    return {
        "metadata": {"name": "helloworld", "namespace": "cluster1", "uid": "mca-uid", "resourceVersion": "7"},
        "spec": {"installNamespace": "open-cluster-management-agent-addon", **spec},
        "status": status,
    }


def adc(*variables: tuple[str, str], namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"customizedVariables": [{"name": n, "value": v} for n, v in variables], **spec}
    if namespace is not None:
        body["agentInstallNamespace"] = namespace
    return {"metadata": {"name": "deploy-config", "namespace": "open-cluster-management"}, "spec": body}


def configured(h: str = "h1") -> dict[str, Any]:
    return mca(ref(ADDON_GROUP, ADC, "deploy-config", h))


def created(addon: dict[str, Any], config: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    """The work the plan creates for ``addon``, as the hub would store it."""
    configs = {ADC_KEY: config if config is not None else adc(("LOG_LEVEL", "2"))}
    plan = plan_deploy_work(addon, cma(), SERVED, configs, None)
    assert plan.create is not None
    work = copy.deepcopy(plan.create)
    work["metadata"].update(generation=generation, uid="work-uid", resourceVersion="9")
    return work


def with_work_conditions(work: dict[str, Any], *conds: tuple[str, str, int], degraded: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(work)
    conditions = [
        {"type": t, "status": s, "observedGeneration": g, "reason": "R", "message": f"{t} is {s}",
         "lastTransitionTime": format_time(T0)}
        for t, s, g in conds
    ]  # fmt: skip
    if degraded is not None:
        conditions.append({"type": "Degraded", "status": "True", "observedGeneration": out["metadata"]["generation"],
                           "reason": "ApplyFailed", "message": degraded, "lastTransitionTime": format_time(T0)})
    out["status"] = {"conditions": conditions}
    return out


def ready(work: dict[str, Any]) -> dict[str, Any]:
    g = work["metadata"]["generation"]
    return with_work_conditions(work, ("Applied", "True", g), ("Available", "True", g))


def deployment(work: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in work["spec"]["workload"]["manifests"] if m["kind"] == "Deployment")


def cond(status: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    found = find_condition((status or {}).get("conditions"), type_)
    return dict(found) if found is not None else None


# --- supported configs ------------------------------------------------------------------------------


def test_supported_configs_are_the_declared_types_the_hub_serves() -> None:
    assert supported_configs(cma(), SERVED) == [{"group": ADDON_GROUP, "resource": ADC}]
    served = SERVED | {(EXAMPLE_GROUP, "exampleconfigs")}
    assert supported_configs(cma(), served) == [
        {"group": ADDON_GROUP, "resource": ADC},
        {"group": EXAMPLE_GROUP, "resource": "exampleconfigs"},
    ]


def test_core_config_types_count_and_repeats_are_dropped() -> None:
    manager = {"metadata": {"name": "a"}, "spec": {"supportedConfigs": [
        {"resource": "configmaps"}, {"group": "", "resource": "configmaps"}, {"group": "x.io", "resource": "things"}]}}
    assert supported_configs(manager, SERVED) == [{"group": "", "resource": "configmaps"}]


def test_status_sets_supported_configs_and_never_touches_the_managers_fields() -> None:
    progressing = {"type": "Progressing", "status": "True", "reason": "Progressing", "message": "m",
                   "lastTransitionTime": "2020-01-01T00:00:00Z"}
    configured_cond = {**progressing, "type": "Configured", "reason": "ConfigurationsConfigured"}
    addon = mca(ref(ADDON_GROUP, ADC, "deploy-config", "h1"), conditions=[configured_cond, progressing])
    status = addon_status(addon, cma(), SERVED, None, None, T0)
    assert status is not None
    assert status["supportedConfigs"] == [{"group": ADDON_GROUP, "resource": ADC}]
    assert status["configReferences"] == addon["status"]["configReferences"]
    assert status["conditions"] == [configured_cond, progressing]
    assert status["healthCheck"] == {"mode": "Customized"}


def test_status_unchanged_gives_none() -> None:
    addon = configured()
    status = addon_status(addon, cma(), SERVED, None, None, T0)
    assert status is not None
    addon["status"] = status
    assert addon_status(addon, cma(), SERVED, None, None, at(60)) is None


# --- the config-spec-hash annotation -----------------------------------------------------------------


def test_annotation_keys_follow_the_framework_format() -> None:
    addon = mca(
        ref(ADDON_GROUP, ADC, "deploy-config", "h1"),
        ref(ADDON_GROUP, "addonhubconfigs", "default", "h2", namespace=""),
        ref("", "configmaps", "cm", "h3", namespace="ns"),
    )
    assert config_hash_map(addon) == {
        "addondeploymentconfigs.addon.open-cluster-management.io/open-cluster-management/deploy-config": "h1",
        "addonhubconfigs.addon.open-cluster-management.io//default": "h2",
        "configmaps/ns/cm": "h3",
    }
    text = config_spec_hash_annotation(addon)
    assert text is not None and json.loads(text) == config_hash_map(addon)
    assert text.startswith('{"addondeploymentconfigs.') and " " not in text


def test_annotation_keeps_empty_hashes_and_skips_items_without_desired_config() -> None:
    addon = mca(
        ref(ADDON_GROUP, ADC, "deploy-config", "h1"),
        ref(EXAMPLE_GROUP, "exampleconfigs", "example-config", ""),
        ref(ADDON_GROUP, ADC, "legacy", None),
    )
    assert config_hash_map(addon) == {
        "addondeploymentconfigs.addon.open-cluster-management.io/open-cluster-management/deploy-config": "h1",
        "exampleconfigs.example.open-cluster-management.io/open-cluster-management/example-config": "",
    }


def test_no_config_references_no_annotation() -> None:
    assert config_spec_hash_annotation(mca()) is None
    plan = plan_deploy_work(mca(), cma(default=False, example=False), SERVED, {}, None)
    assert plan.create is not None
    assert "annotations" not in plan.create["metadata"]
    assert "annotations" not in deployment(plan.create)["spec"]["template"]["metadata"]


def test_go_json_escapes_like_go() -> None:
    assert go_json({"b": "<&>", "a": "é\u2028"}) == '{"a":"é\\u2028","b":"\\u003c\\u0026\\u003e"}'


# --- when the work is written ------------------------------------------------------------------------


def test_waits_for_the_hash_of_every_supported_config() -> None:
    supported = {(ADDON_GROUP, ADC)}
    waiting = waiting_for_configs(mca(ref(ADDON_GROUP, ADC, "deploy-config", "")), cma(), supported)
    assert waiting is not None and "deploy-config" in waiting
    assert waiting_for_configs(mca(ref(ADDON_GROUP, ADC, "deploy-config", None)), cma(), supported)
    unsupported_empty = mca(ref(ADDON_GROUP, ADC, "deploy-config", "h1"), ref(EXAMPLE_GROUP, "exampleconfigs", "e", ""))
    assert waiting_for_configs(unsupported_empty, cma(), supported) is None


def test_a_fresh_addon_waits_for_the_manager_to_set_its_configs() -> None:
    supported = {(ADDON_GROUP, ADC)}
    assert waiting_for_configs(mca(), cma(), supported) is not None
    assert waiting_for_configs(mca(), cma(default=False), supported) is None
    assert waiting_for_configs(mca(), cma(lifecycle="self"), supported) is None
    told_none = [{"type": "Configured", "status": "True", "reason": "ConfigurationsConfigured", "message": "",
                  "lastTransitionTime": format_time(T0)}]
    assert waiting_for_configs(mca(conditions=told_none), cma(), supported) is None
    own = mca(configs=[{"group": ADDON_GROUP, "resource": ADC, "name": "mine", "namespace": "cluster1"}])
    assert waiting_for_configs(own, cma(default=False), supported) is not None
    placements = cma(default=False)
    placements["spec"]["installStrategy"] = {"type": "Placements", "placements": [
        {"name": "p", "namespace": "default", "configs": [{"group": ADDON_GROUP, "resource": ADC, "name": "x"}]}]}
    assert waiting_for_configs(mca(), placements, supported) is not None


def test_waiting_writes_no_work_but_the_status() -> None:
    plan = plan_addon(mca(), cma(), SERVED, {}, None, None, T0)
    assert plan.work.create is None and plan.work.patch is None and plan.work.waiting
    assert plan.status is not None and plan.status["supportedConfigs"]
    assert cond(plan.status, "ManifestApplied") is None and cond(plan.status, "Available") is None


# --- the deploy work ------------------------------------------------------------------------------------


def test_create_renders_the_agent_with_name_labels_annotation_and_owner() -> None:
    addon = mca(ref(ADDON_GROUP, ADC, "deploy-config", "h1"), ref(EXAMPLE_GROUP, "exampleconfigs", "e", ""))
    config = adc(("LOG_LEVEL", "2"), ("MODE", "fast"), namespace="addon-ns",
                 nodePlacement={"nodeSelector": {"zone": "a", "arch": "arm64"},
                                "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]})
    plan = plan_deploy_work(addon, cma(), SERVED, {ADC_KEY: config}, None)
    assert plan.create is not None and plan.patch is None
    meta = plan.create["metadata"]
    assert meta["name"] == deploy_work_name("helloworld") == "addon-helloworld-deploy-0"
    assert meta["namespace"] == "cluster1"
    assert meta["labels"] == {"open-cluster-management.io/addon-name": "helloworld"}
    assert json.loads(meta["annotations"][ANNOTATION]) == config_hash_map(addon)
    assert meta["ownerReferences"] == [{
        "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
        "name": "helloworld", "uid": "mca-uid", "controller": True, "blockOwnerDeletion": True}]
    namespace, deploy = plan.create["spec"]["workload"]["manifests"]
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "addon-ns"}}
    assert deploy["metadata"]["namespace"] == "addon-ns"
    pod = deploy["spec"]["template"]
    assert pod["metadata"]["annotations"] == {AGENT_CONFIG_HASH_ANNOTATION: meta["annotations"][ANNOTATION]}
    assert pod["spec"]["containers"][0]["env"] == [{"name": "LOG_LEVEL", "value": "2"}, {"name": "MODE", "value": "fast"}]
    assert list(pod["spec"]["nodeSelector"].items()) == [("arch", "arm64"), ("zone", "a")]
    assert pod["spec"]["tolerations"] == [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]


def test_install_namespace_falls_back_to_the_addon_spec() -> None:
    assert agent_values(mca(installNamespace="hello"), None).install_namespace == "hello"
    assert agent_values(mca(installNamespace="hello"), adc(namespace="from-config")).install_namespace == "from-config"
    bare = mca()
    del bare["spec"]["installNamespace"]
    assert agent_values(bare, None).install_namespace == "open-cluster-management-agent-addon"


def test_rendering_is_deterministic() -> None:
    one = plan_deploy_work(configured(), cma(), SERVED, {ADC_KEY: adc(("A", "1"))}, None)
    two = plan_deploy_work(copy.deepcopy(configured()), cma(), SERVED, {ADC_KEY: adc(("A", "1"))}, None)
    assert one == two


def test_same_hashes_leave_the_work_alone_even_when_the_config_object_changed() -> None:
    addon = configured("h1")
    work = created(addon, adc(("LOG_LEVEL", "2")))
    assert not needs_render(addon, work)
    plan = plan_deploy_work(addon, cma(), SERVED, {ADC_KEY: adc(("LOG_LEVEL", "9"))}, work)
    assert plan.create is None and plan.patch is None and plan.failure is None


def test_a_new_hash_renders_the_agent_again() -> None:
    work = created(configured("h1"), adc(("LOG_LEVEL", "2")))
    addon = configured("h2")
    assert needs_render(addon, work)
    plan = plan_deploy_work(addon, cma(), SERVED, {ADC_KEY: adc(("LOG_LEVEL", "9"))}, work)
    assert plan.patch is not None
    assert json.loads(plan.patch["metadata"]["annotations"][ANNOTATION]) == config_hash_map(addon)
    env = deployment(plan.patch)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "LOG_LEVEL", "value": "9"}]
    assert plan.patch["spec"]["workload"]["manifests"] != work["spec"]["workload"]["manifests"]


def test_losing_every_config_removes_the_annotation() -> None:
    work = created(configured("h1"))
    plan = plan_deploy_work(mca(), cma(default=False), SERVED, {}, work)
    assert plan.patch is not None
    assert plan.patch["metadata"]["annotations"] == {ANNOTATION: None}


def test_missing_label_or_owner_is_patched_without_touching_the_spec() -> None:
    addon = configured("h1")
    work = created(addon)
    work["metadata"]["labels"] = {}
    work["metadata"]["ownerReferences"] = [
        {"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn", "name": "helloworld",
         "uid": "old-uid"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "cm-uid"},
    ]
    plan = plan_deploy_work(addon, cma(), SERVED, {}, work)
    assert plan.patch is not None and "spec" not in plan.patch
    owners = plan.patch["metadata"]["ownerReferences"]
    assert [o["uid"] for o in owners] == ["mca-uid", "cm-uid"]


def test_a_missing_deployment_config_is_a_manifest_failure() -> None:
    plan = plan_addon(configured("h1"), cma(), SERVED, {}, None, None, T0)
    assert plan.work.create is None and plan.work.failure is not None
    manifest_applied = cond(plan.status, "ManifestApplied")
    assert manifest_applied is not None
    assert (manifest_applied["status"], manifest_applied["reason"]) == ("False", "ManifestWorkApplyFailed")
    assert manifest_applied["message"] == (
        'failed to get manifest from agent interface: '
        'addondeploymentconfigs.addon.open-cluster-management.io "deploy-config" not found'
    )


def test_unserved_deployment_configs_are_not_read() -> None:
    plan = plan_deploy_work(configured("h1"), cma(), {("", "configmaps")}, {}, None)
    assert plan.create is not None
    assert "env" not in deployment(plan.create)["spec"]["template"]["spec"]["containers"][0]


def test_deployment_config_ref_is_the_first_of_its_type() -> None:
    addon = mca(ref("", "configmaps", "c", "x"), ref(ADDON_GROUP, ADC, "first", "a"), ref(ADDON_GROUP, ADC, "second", "b"))
    assert deployment_config_ref(addon) == (ADDON_GROUP, ADC, "open-cluster-management", "first")


def test_a_work_being_deleted_is_waited_for() -> None:
    work = created(configured("h1"))
    work["metadata"]["deletionTimestamp"] = format_time(T0)
    plan = plan_deploy_work(configured("h2"), cma(), SERVED, {ADC_KEY: adc()}, work)
    assert plan.create is None and plan.patch is None and plan.waiting


# --- ManifestApplied ---------------------------------------------------------------------------------------


def test_manifest_applied_follows_the_works_applied_condition() -> None:
    addon = configured()
    work = created(addon)
    assert cond(addon_status(addon, cma(), SERVED, work, None, T0), "ManifestApplied") is None
    applied = addon_status(addon, cma(), SERVED, ready(work), None, T0)
    manifest_applied = cond(applied, "ManifestApplied")
    assert manifest_applied is not None
    assert (manifest_applied["status"], manifest_applied["reason"]) == ("True", "AddonManifestApplied")
    failed = addon_status(addon, cma(), SERVED, with_work_conditions(work, ("Applied", "False", 1)), None, T0)
    manifest_failed = cond(failed, "ManifestApplied")
    assert manifest_failed is not None
    assert (manifest_failed["status"], manifest_failed["reason"]) == ("False", "AddonManifestAppliedFailed")


def test_a_failed_write_sets_manifest_work_apply_failed_and_a_stale_false_goes_once_written() -> None:
    addon = configured()
    status = addon_status(addon, cma(), SERVED, None, None, T0, failure=apply_failure("namespaces \"cluster1\" not found"))
    manifest_applied = cond(status, "ManifestApplied")
    assert manifest_applied is not None
    assert (manifest_applied["status"], manifest_applied["reason"]) == ("False", "ManifestWorkApplyFailed")
    assert manifest_applied["message"] == 'failed to apply manifestWork: namespaces "cluster1" not found'
    assert status is not None
    addon["status"] = status
    later = addon_status(addon, cma(), SERVED, created(addon), None, at(5))
    assert cond(later, "ManifestApplied") is None


# --- Available -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "degraded", "expected"),
    [
        ([], None, ("Unknown", "WorkNotApplied")),
        ([("Applied", "True", 1), ("Available", "True", 1)], None, ("Unknown", "WorkNotApplied")),
        ([("Applied", "True", 2), ("Available", "False", 2)], None, ("False", "WorkNotApplied")),
        ([("Applied", "True", 2), ("Available", "Unknown", 2)], None, ("Unknown", "WorkNotApplied")),
        ([("Applied", "True", 2), ("Available", "True", 2)], "image pull back-off", ("False", "ProbeUnavailable")),
        ([("Applied", "True", 2), ("Available", "True", 2)], None, ("True", "ProbeAvailable")),
    ],
    ids=["not-reported", "old-generation", "not-available", "unknown", "degraded", "available"],
)
def test_available_mirrors_the_work_at_its_current_generation(
    conditions: list[tuple[str, str, int]], degraded: str | None, expected: tuple[str, str]
) -> None:
    work = with_work_conditions(created(configured(), generation=2), *conditions, degraded=degraded)
    available = available_condition("helloworld", work, None)
    assert (available["status"], available["reason"]) == expected
    if degraded:
        assert available["message"] == "Probe addon unavailable with err image pull back-off"
    if expected[0] == "True":
        assert available["message"] == "helloworld add-on is available."


def test_available_without_work_and_with_an_unknown_cluster() -> None:
    missing = available_condition("helloworld", None, None)
    assert (missing["status"], missing["reason"]) == ("Unknown", "WorkNotFound")
    cluster = {"status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "Unknown",
                                          "reason": "ManagedClusterLeaseUpdateStopped", "message": "no lease"}]}}
    work = ready(created(configured()))
    unknown = available_condition("helloworld", work, cluster)
    assert (unknown["status"], unknown["reason"], unknown["message"]) == (
        "Unknown", "ManagedClusterLeaseUpdateStopped", "no lease")


def test_available_waits_for_manifest_applied_and_keeps_its_transition_time() -> None:
    addon = configured()
    work = created(addon)
    assert cond(addon_status(addon, cma(), SERVED, work, None, T0), "Available") is None
    first = addon_status(addon, cma(), SERVED, ready(work), None, T0)
    available = cond(first, "Available")
    assert available is not None and available["status"] == "True"
    assert first is not None
    addon["status"] = first
    assert addon_status(addon, cma(), SERVED, ready(work), None, at(30)) is None
    flipped = addon_status(addon, cma(), SERVED, with_work_conditions(work, ("Applied", "True", 1), degraded="x"),
                           None, at(40))
    assert flipped is not None
    available_later = cond(flipped, "Available")
    assert available_later is not None and available_later["lastTransitionTime"] == format_time(at(40))
    manifest_applied = cond(flipped, "ManifestApplied")
    assert manifest_applied is not None and manifest_applied["lastTransitionTime"] == format_time(T0)


def test_status_records_the_install_namespace_of_the_work() -> None:
    addon = configured()
    status = addon_status(addon, cma(), SERVED, created(addon, adc(namespace="agents")), None, T0)
    assert status is not None and status["namespace"] == "agents"


# --- the index and discovery ------------------------------------------------------------------------------------


def test_index_finds_addons_by_name_namespace_and_config() -> None:
    index = AddonIndex()
    one = configured()
    two = copy.deepcopy(one)
    two["metadata"]["namespace"] = "cluster2"
    index.update(one)
    index.update(two)
    assert index.of_addon("helloworld") == [("cluster1", "helloworld"), ("cluster2", "helloworld")]
    assert index.in_namespace("cluster2") == [("cluster2", "helloworld")]
    assert index.using_config("open-cluster-management", "deploy-config") == [
        ("cluster1", "helloworld"), ("cluster2", "helloworld")]
    moved = mca(ref(ADDON_GROUP, ADC, "other", "h"))
    index.update(moved)
    assert index.using_config("open-cluster-management", "deploy-config") == [("cluster2", "helloworld")]
    index.remove(two)
    assert index.of_addon("helloworld") == [("cluster1", "helloworld")]
    assert index.using_config("open-cluster-management", "deploy-config") == []


def test_discovery_listings_give_group_resources_without_subresources() -> None:
    listing = {"resources": [{"name": "managedclusteraddons"}, {"name": "managedclusteraddons/status"}]}
    assert resources_of(ADDON_GROUP, listing) == {(ADDON_GROUP, "managedclusteraddons")}
    groups = {"groups": [{"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]}]}
    assert group_versions(groups) == [("apps", "apps/v1")]


def test_addon_bad_config_profile_fails_addon_config_updates_on_production_only() -> None:
    profile = load_profile(Path(__file__).resolve().parents[2] / "examples" / "profiles" / "addon-bad-config.yaml")
    production, staging = profile.plan(fleet_member(1)), profile.plan(fleet_member(3))
    work = deploy_work_name("helloworld")
    assert production.work_behaviour(work, 2).outcome is Outcome.APPLY_FAILED
    assert production.work_behaviour(work, 2).message
    assert production.work_behaviour(work, 1).outcome is Outcome.SUCCEEDED
    assert production.work_behaviour("web", 2).outcome is Outcome.SUCCEEDED
    assert staging.work_behaviour(work, 2).outcome is Outcome.SUCCEEDED
