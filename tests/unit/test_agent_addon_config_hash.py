"""The simulated framework's hub-side config controllers (ocm_rollout.sandbox.agents.addon_config_hash,
pure): the CMA's desired spec hashes (cmaconfig) and the MCA's lastObservedGeneration and own-config
hashes (addonconfig), written only when something changes."""

from __future__ import annotations

import copy
from typing import Any

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.client.kube import Resource
from ocm_rollout.sandbox.agents.addon_config_hash import (
    ConfigKey,
    cma_config_keys,
    cma_status_hashes,
    mca_config_keys,
    mca_status_hashes,
)
from ocm_rollout.sandbox.agents.addon_index import AddonIndex
from ocm_rollout.sandbox.sim_discovery import group_versions, resource_details

ADDON_GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
EXAMPLE_GROUP = "example.open-cluster-management.io"
EXAMPLES = "exampleconfigs"
NS = "open-cluster-management"
SUPPORTED = {(ADDON_GROUP, ADC), (EXAMPLE_GROUP, EXAMPLES)}
ADC_KEY: ConfigKey = (ADDON_GROUP, ADC, NS, "deploy-config")
OTHER_ADC_KEY: ConfigKey = (ADDON_GROUP, ADC, NS, "other-config")
EXAMPLE_KEY: ConfigKey = (EXAMPLE_GROUP, EXAMPLES, NS, "example-config")


def adc(name: str = "deploy-config", *, generation: int = 3, variables: dict[str, str] | None = None) -> dict[str, Any]:
    pairs = [{"name": k, "value": v} for k, v in (variables or {"LOG_LEVEL": "2"}).items()]
    return {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": name, "namespace": NS, "generation": generation, "resourceVersion": "11"},
        "spec": {"customizedVariables": pairs},
    }


def example() -> dict[str, Any]:
    return {
        "apiVersion": f"{EXAMPLE_GROUP}/v1alpha1",
        "kind": "ExampleConfig",
        "metadata": {"name": "example-config", "namespace": NS, "generation": 1},
        "spec": {"data": "x"},
    }


def desired(name: str, spec_hash: str | None = None, namespace: str = NS) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "namespace": namespace}
    if spec_hash is not None:
        out["specHash"] = spec_hash
    return out


def cma(status: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "helloworld"}, "spec": {}}
    if status is not None:
        obj["status"] = status
    return obj


def cma_status(spec_hash: str | None = None) -> dict[str, Any]:
    """What OCM's hub add-on manager writes: desired configs, no hashes yet."""
    return {
        "defaultconfigReferences": [
            {"group": ADDON_GROUP, "resource": ADC, "desiredConfig": desired("deploy-config", spec_hash)},
            {"group": EXAMPLE_GROUP, "resource": EXAMPLES, "desiredConfig": desired("example-config", spec_hash)},
        ],
        "installProgressions": [
            {
                "name": "global",
                "namespace": "default",
                "configReferences": [
                    {
                        "group": ADDON_GROUP,
                        "resource": ADC,
                        "desiredConfig": desired("other-config", spec_hash),
                        "lastAppliedConfig": desired("other-config", "old"),
                    }
                ],
                "conditions": [{"type": "Progressing", "status": "False"}],
            }
        ],
    }


# -- cmaconfig -----------------------------------------------------------------------------------


def test_cma_hashes_fill_defaults_and_install_progressions() -> None:
    configs = {ADC_KEY: adc(), OTHER_ADC_KEY: adc("other-config", variables={"A": "b"}), EXAMPLE_KEY: example()}
    obj = cma(cma_status())
    assert cma_config_keys(obj, SUPPORTED) == [ADC_KEY, EXAMPLE_KEY, OTHER_ADC_KEY]
    status = cma_status_hashes(obj, SUPPORTED, configs)
    assert status is not None
    defaults = status["defaultconfigReferences"]
    assert defaults[0]["desiredConfig"] == desired("deploy-config", spec_hash(configs[ADC_KEY]))
    assert defaults[1]["desiredConfig"]["specHash"] == spec_hash(configs[EXAMPLE_KEY])
    item = status["installProgressions"][0]["configReferences"][0]
    assert item["desiredConfig"]["specHash"] == spec_hash(configs[OTHER_ADC_KEY])
    assert item["lastAppliedConfig"] == desired("other-config", "old")  # only desiredConfig is touched
    assert status["installProgressions"][0]["conditions"] == [{"type": "Progressing", "status": "False"}]
    assert obj["status"] == cma_status()  # the input is not modified
    # Written: nothing changes any more.
    assert cma_status_hashes(cma(status), SUPPORTED, configs) is None


def test_cma_hashes_missing_config_is_an_empty_hash() -> None:
    hashed = cma_status_hashes(cma(cma_status()), SUPPORTED, {ADC_KEY: adc(), EXAMPLE_KEY: example(), OTHER_ADC_KEY: adc()})
    assert hashed is not None
    # The ADC goes away: its hash becomes "" (getConfigSpecHash answers "" on NotFound).
    status = cma_status_hashes(cma(hashed), SUPPORTED, {EXAMPLE_KEY: example()})
    assert status is not None
    assert status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] == ""
    assert status["installProgressions"][0]["configReferences"][0]["desiredConfig"]["specHash"] == ""
    assert status["defaultconfigReferences"][1] == hashed["defaultconfigReferences"][1]


def test_cma_hashes_follow_a_changed_config() -> None:
    configs = {ADC_KEY: adc(), EXAMPLE_KEY: example(), OTHER_ADC_KEY: adc("other-config")}
    hashed = cma_status_hashes(cma(cma_status()), SUPPORTED, configs)
    assert hashed is not None
    changed = {**configs, ADC_KEY: adc(generation=4, variables={"LOG_LEVEL": "4"})}
    status = cma_status_hashes(cma(hashed), SUPPORTED, changed)
    assert status is not None
    assert status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] == spec_hash(changed[ADC_KEY])
    assert status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] != (
        hashed["defaultconfigReferences"][0]["desiredConfig"]["specHash"]
    )


def test_cma_hashes_skip_unsupported_types_and_items_without_a_desired_name() -> None:
    status = cma_status()
    status["defaultconfigReferences"].append({"group": "", "resource": "configmaps", "desiredConfig": desired("cm")})
    status["defaultconfigReferences"].append({"group": ADDON_GROUP, "resource": ADC})
    status["defaultconfigReferences"].append({"group": ADDON_GROUP, "resource": ADC, "desiredConfig": {"name": ""}})
    only_adc = {(ADDON_GROUP, ADC)}
    obj = cma(status)
    assert cma_config_keys(obj, only_adc) == [ADC_KEY, OTHER_ADC_KEY]
    new = cma_status_hashes(obj, only_adc, {ADC_KEY: adc(), OTHER_ADC_KEY: adc("other-config")})
    assert new is not None
    defaults = new["defaultconfigReferences"]
    assert "specHash" not in defaults[1]["desiredConfig"]  # example configs: not supported here
    assert defaults[2:] == status["defaultconfigReferences"][2:]


def test_cma_hashes_accept_the_v1beta1_spelling_and_no_status() -> None:
    status = {"defaultConfigReferences": [{"group": ADDON_GROUP, "resource": ADC, "desiredConfig": desired("deploy-config")}]}
    new = cma_status_hashes(cma(status), SUPPORTED, {ADC_KEY: adc()})
    assert new == {"defaultConfigReferences": [
        {"group": ADDON_GROUP, "resource": ADC, "desiredConfig": desired("deploy-config", spec_hash(adc()))}]}  # fmt: skip
    assert cma_status_hashes(cma(None), SUPPORTED, {}) is None
    assert cma_status_hashes(cma({}), SUPPORTED, {}) is None


def test_cma_hashes_stop_at_an_unhashable_config() -> None:
    bad = adc("other-config")
    bad["spec"]["weird"] = {1, 2}  # not JSON
    status = cma_status_hashes(cma(cma_status()), SUPPORTED, {ADC_KEY: adc(), EXAMPLE_KEY: example(), OTHER_ADC_KEY: bad})
    assert status is not None
    assert status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] == spec_hash(adc())
    assert "specHash" not in status["installProgressions"][0]["configReferences"][0]["desiredConfig"]


def test_cma_hashes_already_written_by_the_hub_manager_are_left_alone() -> None:
    configs = {ADC_KEY: adc(), EXAMPLE_KEY: example(), OTHER_ADC_KEY: adc("other-config")}
    status = cma_status()
    for item in status["defaultconfigReferences"]:
        key = (item["group"], item["resource"], NS, item["desiredConfig"]["name"])
        item["desiredConfig"]["specHash"] = spec_hash(configs[key])
    progression = status["installProgressions"][0]["configReferences"][0]
    progression["desiredConfig"]["specHash"] = spec_hash(configs[OTHER_ADC_KEY])
    assert cma_status_hashes(cma(status), SUPPORTED, configs) is None


# -- addonconfig ---------------------------------------------------------------------------------


def mca(*refs: dict[str, Any], own: tuple[ConfigKey, ...] = ()) -> dict[str, Any]:
    spec_configs = [{"group": g, "resource": r, "namespace": ns, "name": n} for g, r, ns, n in own]
    return {
        "metadata": {"name": "helloworld", "namespace": "cluster1", "resourceVersion": "5"},
        "spec": {"configs": spec_configs} if spec_configs else {},
        "status": {"configReferences": list(refs), "conditions": [{"type": "Configured", "status": "False"}]},
    }


def mca_ref(key: ConfigKey, spec_hash_value: str | None = None, *, generation: int | None = None) -> dict[str, Any]:
    group, resource, namespace, name = key
    item: dict[str, Any] = {
        "group": group,
        "resource": resource,
        "namespace": namespace,
        "name": name,
        "desiredConfig": desired(name, spec_hash_value, namespace),
    }
    if generation is not None:
        item["lastObservedGeneration"] = generation
    return item


def test_mca_hashes_fill_own_configs_and_generations() -> None:
    configs = {ADC_KEY: adc(generation=3), EXAMPLE_KEY: example()}
    obj = mca(mca_ref(ADC_KEY), mca_ref(EXAMPLE_KEY), own=(ADC_KEY,))
    assert mca_config_keys(obj, SUPPORTED) == [ADC_KEY, EXAMPLE_KEY]
    status = mca_status_hashes(obj, SUPPORTED, configs)
    assert status is not None
    first, second = status["configReferences"]
    assert first["desiredConfig"]["specHash"] == spec_hash(configs[ADC_KEY])
    assert first["lastObservedGeneration"] == 3
    # From the CMA (not in spec.configs): the generation only; the hash is the hub manager's.
    assert "specHash" not in second["desiredConfig"]
    assert second["lastObservedGeneration"] == 1
    assert status["conditions"] == obj["status"]["conditions"]
    assert mca_status_hashes(dict(obj, status=status), SUPPORTED, configs) is None


def test_mca_hashes_leave_missing_and_unsupported_configs_alone() -> None:
    obj = mca(mca_ref(ADC_KEY, "kept"), mca_ref(EXAMPLE_KEY), own=(ADC_KEY, EXAMPLE_KEY))
    assert mca_status_hashes(obj, SUPPORTED, {}) is None  # missing: nothing changes ("kept" stays)
    assert mca_status_hashes(obj, {(ADDON_GROUP, ADC)}, {EXAMPLE_KEY: example()}) is None
    no_desired = mca({"group": ADDON_GROUP, "resource": ADC, "name": "deploy-config", "namespace": NS}, own=(ADC_KEY,))
    assert mca_status_hashes(no_desired, SUPPORTED, {ADC_KEY: adc()}) is None


def test_mca_hashes_match_on_the_whole_referent() -> None:
    # spec.configs names another namespace: the status item is not the MCA's own.
    elsewhere: ConfigKey = (ADDON_GROUP, ADC, "elsewhere", "deploy-config")
    obj = mca(mca_ref(ADC_KEY), own=(elsewhere,))
    status = mca_status_hashes(obj, SUPPORTED, {ADC_KEY: adc()})
    assert status is not None
    assert "specHash" not in status["configReferences"][0]["desiredConfig"]


def test_mca_hashes_written_by_the_hub_manager_are_left_alone() -> None:
    configs = {ADC_KEY: adc(generation=7), EXAMPLE_KEY: example()}
    obj = mca(
        mca_ref(ADC_KEY, spec_hash(configs[ADC_KEY]), generation=7),
        mca_ref(EXAMPLE_KEY, "from-the-cma", generation=1),
        own=(ADC_KEY,),
    )
    assert mca_status_hashes(obj, SUPPORTED, configs) is None


def test_mca_hashes_update_on_a_changed_config_and_skip_an_unhashable_one() -> None:
    obj = mca(mca_ref(ADC_KEY, spec_hash(adc()), generation=3), own=(ADC_KEY,))
    changed = adc(generation=4, variables={"LOG_LEVEL": "9"})
    status = mca_status_hashes(obj, SUPPORTED, {ADC_KEY: changed})
    assert status is not None
    assert status["configReferences"][0]["desiredConfig"]["specHash"] == spec_hash(changed)
    assert status["configReferences"][0]["lastObservedGeneration"] == 4
    bad = copy.deepcopy(changed)
    bad["spec"]["weird"] = {1}
    assert mca_status_hashes(obj, SUPPORTED, {ADC_KEY: bad}) is None  # an error: no write at all


def test_index_finds_mcas_by_any_config_kind() -> None:
    index = AddonIndex()
    obj = mca(mca_ref(ADC_KEY), mca_ref(EXAMPLE_KEY))
    index.update(obj)
    assert index.naming(*EXAMPLE_KEY) == [("cluster1", "helloworld")]
    assert index.naming(*ADC_KEY) == [("cluster1", "helloworld")]
    index.update(mca(mca_ref(ADC_KEY)))
    assert index.naming(*EXAMPLE_KEY) == []
    index.remove(obj)
    assert index.naming(*ADC_KEY) == []


def test_discovery_gives_each_served_type_its_rest_resource_preferred_version_first() -> None:
    listing = {
        "groupVersion": f"{EXAMPLE_GROUP}/v1beta1",
        "resources": [
            {"name": EXAMPLES, "kind": "ExampleConfig", "namespaced": True},
            {"name": f"{EXAMPLES}/status", "kind": "ExampleConfig", "namespaced": True},
            {"name": "clusterexamples", "kind": "ClusterExample", "namespaced": False},
        ],
    }
    found = resource_details(EXAMPLE_GROUP, listing)
    assert found == {
        (EXAMPLE_GROUP, EXAMPLES): Resource(EXAMPLE_GROUP, "v1beta1", EXAMPLES, "ExampleConfig", namespaced=True),
        (EXAMPLE_GROUP, "clusterexamples"): Resource(EXAMPLE_GROUP, "v1beta1", "clusterexamples", "ClusterExample", namespaced=False),
    }
    groups = {"groups": [{
        "name": EXAMPLE_GROUP,
        "versions": [{"groupVersion": f"{EXAMPLE_GROUP}/v1alpha1"}, {"groupVersion": f"{EXAMPLE_GROUP}/v1beta1"}],
        "preferredVersion": {"groupVersion": f"{EXAMPLE_GROUP}/v1beta1"},
    }]}  # fmt: skip
    assert group_versions(groups) == [(EXAMPLE_GROUP, f"{EXAMPLE_GROUP}/v1beta1"), (EXAMPLE_GROUP, f"{EXAMPLE_GROUP}/v1alpha1")]
