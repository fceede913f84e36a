"""docs/behaviour/addons.md 13 scenarios 9-15 and 23 (configuration references and spec hashes) on the local
hub, through the real kopf operator."""

from __future__ import annotations

import pytest

from ocm_rollout.api.constants import (
    ADDON_CONDITION_PROGRESSING,
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_GROUP,
    ANNOTATION_ADDON_LIFECYCLE,
)
from ocm_rollout.client.kube import CLUSTER_MANAGEMENT_ADDONS, JSON, MANAGED_CLUSTER_ADDONS
from tests.integration.helpers import condition, wait_for
from tests.integration.test_addon_env import AddonEnv, adc_ref, default_adc, env

pytestmark = pytest.mark.integration
__all__ = ["env"]


def adc_item(ns: str, name: str, spec_hash_value: str, generation: int) -> JSON:
    return {
        "group": ADDON_GROUP,
        "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE,
        "namespace": ns,
        "name": name,
        "lastObservedGeneration": generation,
        "desiredConfig": {"namespace": ns, "name": name, "specHash": spec_hash_value},
    }


def with_adcs(env: AddonEnv, variables: dict[str, str]) -> str:
    """A new namespace with an AddOnDeploymentConfig per ``variables`` item (name -> variable)."""
    ns = env.namespace(env.unique("cfg"))
    for config, variable in variables.items():
        env.adc(ns, config, variable)
    return ns


def defaulted(
    env: AddonEnv, variables: dict[str, str], default: str | None = "deploy-config", annotations: dict[str, str] | None = None
) -> tuple[str, str]:
    """The ADCs ``variables`` (`with_adcs`) and an add-on whose default config is ADC ``default``
    (None: no supported configs): its namespace and name."""
    ns = with_adcs(env, variables)
    name = env.unique("addon")
    env.cma(name, defaults=None if default is None else [default_adc(ns, default)], annotations=annotations)
    return ns, name


def placed(env: AddonEnv, configs: list[str], variables: dict[str, str] | None = None) -> tuple[str, str, str]:
    """The ADCs ``variables`` (`with_adcs`), one cluster decided by placement p and an add-on
    installed by p with the ADCs ``configs``: the namespace, the cluster and the add-on's name."""
    ns = with_adcs(env, variables or {})
    cluster = env.clusters(1)[0]
    env.placement(ns, "p", [[cluster]])
    name = env.unique("addon")
    env.cma(name, placements=[{"namespace": ns, "name": "p", "configs": [adc_ref(ns, c) for c in configs]}])
    return ns, cluster, name


def test_manual_default_config_is_hashed_on_the_cma_and_desired_by_user_mcas(env: AddonEnv) -> None:
    ns, name = defaulted(env, {"deploy-config": "test"})
    cluster = env.clusters(1)[0]
    env.mca(cluster, name)
    expected = env.adc_hash(ns, "deploy-config")
    status = wait_for(
        lambda: (s := env.get_cma(name).get("status") or {}).get("defaultconfigReferences")
        and s["defaultconfigReferences"][0]["desiredConfig"].get("specHash") and s,
        what="default config hashed",
    )
    assert status["defaultconfigReferences"] == [{
        "group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE,
        "desiredConfig": {"namespace": ns, "name": "deploy-config", "specHash": expected},
    }]
    assert not status.get("installProgressions")
    wait_for(lambda: env.config_refs(cluster, name) == [adc_item(ns, "deploy-config", expected, 1)], what="MCA desired config")


def test_a_missing_placement_config_is_desired_with_an_empty_hash(env: AddonEnv) -> None:
    ns, cluster, name = placed(env, ["another-config"])
    wait_for(lambda: env.config_refs(cluster, name) == [adc_item(ns, "another-config", "", 0)], what="MCA desires the missing config")
    # The CMA's status is a write of its own, which may land after the MCA's (the race CI once lost).
    wanted = {"namespace": ns, "name": "another-config", "specHash": ""}

    def desired_in_cma() -> bool:
        progressions = (env.get_cma(name).get("status") or {}).get("installProgressions") or []
        refs = progressions[0].get("configReferences") or [] if progressions else []
        return bool(refs) and refs[0].get("desiredConfig") == wanted

    wait_for(desired_in_cma, what="the CMA's installProgressions desire the missing config")


def test_an_mca_config_overrides_the_default_and_follows_its_updates(env: AddonEnv) -> None:
    ns, name = defaulted(env, {"deploy-config": "test", "own-config": "test1"})
    cluster = env.clusters(1)[0]
    env.mca(cluster, name, configs=[adc_ref(ns, "own-config")])
    env.api.patch(
        MANAGED_CLUSTER_ADDONS, name,
        {"status": {"supportedConfigs": [{"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIG_RESOURCE}]}},
        cluster, "status",
    )
    wait_for(lambda: env.config_refs(cluster, name) == [adc_item(ns, "own-config", env.adc_hash(ns, "own-config"), 1)], what="own config")
    default_refs = env.get_cma(name)["status"]["defaultconfigReferences"]
    assert default_refs[0]["desiredConfig"]["name"] == "deploy-config"
    env.adc(ns, "own-config", "test2")
    wait_for(lambda: env.config_refs(cluster, name) == [adc_item(ns, "own-config", env.adc_hash(ns, "own-config"), 2)], what="updated hash")


def test_an_unsupported_mca_config_is_listed_and_reported(env: AddonEnv) -> None:
    ns, name = defaulted(env, {"deploy-config": "test"})
    cluster = env.clusters(1)[0]
    unsupported = {"group": "example.io", "resource": "examples", "namespace": ns, "name": "ex"}
    env.mca(cluster, name, configs=[unsupported])
    expected = [
        adc_item(ns, "deploy-config", env.adc_hash(ns, "deploy-config"), 1),
        {**unsupported, "lastObservedGeneration": 0, "desiredConfig": {"namespace": ns, "name": "ex", "specHash": ""}},
    ]
    wait_for(lambda: env.config_refs(cluster, name) == expected, what="both items")
    progressing = wait_for(lambda: condition(env.get_mca(cluster, name), ADDON_CONDITION_PROGRESSING), what="Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ConfigurationUnsupported")
    assert progressing["message"] == "Configuration with gvr example.io/examples is not supported for this addon"


def test_several_placement_configs_of_one_type_keep_their_order(env: AddonEnv) -> None:
    ns, cluster, name = placed(env, ["config-first", "config-second"], {"config-first": "a", "config-second": "b"})
    wait_for(
        lambda: [(r["name"], r["desiredConfig"]["specHash"]) for r in env.config_refs(cluster, name)]
        == [("config-first", env.adc_hash(ns, "config-first")), ("config-second", env.adc_hash(ns, "config-second"))],
        what="ordered, hashed items",
    )
    items = env.get_cma(name)["status"]["installProgressions"][0]["configReferences"]
    assert [i["desiredConfig"]["name"] for i in items] == ["config-first", "config-second"]


def test_duplicate_mca_configs_make_one_item(env: AddonEnv) -> None:
    ns, name = defaulted(env, {"own": "x"}, default=None)
    cluster = env.clusters(1)[0]
    env.mca(cluster, name, configs=[adc_ref(ns, "own"), adc_ref(ns, "own")])
    wait_for(lambda: [r["name"] for r in env.config_refs(cluster, name)] == ["own"], what="one item")


def test_renaming_a_placement_config_drops_the_old_item_and_its_last_applied(env: AddonEnv) -> None:
    ns, cluster, name = placed(env, ["old"], {"old": "1", "new": "2"})
    wait_for(lambda: [r["name"] for r in env.config_refs(cluster, name)] == ["old"], what="old config")
    env.manifest_applied(cluster, name)
    env.agent_step([cluster], name)
    wait_for(lambda: env.config_refs(cluster, name)[0].get("lastAppliedConfig"), what="old config applied")
    env.api.patch(
        CLUSTER_MANAGEMENT_ADDONS,
        name,
        {"spec": {"installStrategy": {"type": "Placements", "placements": [{"namespace": ns, "name": "p", "configs": [adc_ref(ns, "new")]}]}}},
    )
    item = wait_for(lambda: (r := env.config_refs(cluster, name)) and r[0]["name"] == "new" and r[0], what="renamed item")
    assert item["lastObservedGeneration"] in (0, 1)
    assert "lastAppliedConfig" not in item or item["lastAppliedConfig"] in (None, {})


def test_a_self_managed_cma_still_gets_its_default_config_hashed(env: AddonEnv) -> None:
    ns, name = defaulted(env, {"deploy-config": "test"}, annotations={ANNOTATION_ADDON_LIFECYCLE: "self"})
    wait_for(
        lambda: ((env.get_cma(name).get("status") or {}).get("defaultconfigReferences") or [{}])[0]
        .get("desiredConfig", {}).get("specHash") == env.adc_hash(ns, "deploy-config"),
        what="hash maintained",
    )
