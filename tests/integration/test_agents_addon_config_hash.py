"""The simulated add-on framework's hub-side config controllers (cmaconfig, addonconfig) against a
local hub: without our add-on manager the test writes what OCM's hub add-on manager would (CMA
and MCA status naming desired configs without spec hashes) and checks the simulation fills the
hashes as ``api.addon_hashing`` computes them; with our add-on manager (which computes the same
hashes itself) the two agree: the simulation finds nothing to write once our manager has written
(it may still win the race right after a spec change, writing the same hashes), and nothing
writes the status again once settled."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORKS,
    NAMESPACES,
    Resource,
)
from tests.integration.helpers import Api, SimThread, wait_until
from tests.integration.test_addon_env import AddonEnv, adc_ref

pytestmark = pytest.mark.integration

ADDON = "hashed"
CONFIG_NS = "open-cluster-management"
ADDON_GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
EXAMPLE_GROUP = "example.open-cluster-management.io"
EXAMPLES = "exampleconfigs"
EXAMPLE_CONFIGS = Resource(EXAMPLE_GROUP, "v1alpha1", EXAMPLES, "ExampleConfig")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
HASH_EVENTS = ("spec hashes of the desired configs updated", "config spec hashes updated")


@pytest.fixture
def api(sim_hub: Any) -> Api:
    return Api(str(sim_hub.kubeconfig))


def hash_writes(sim: SimThread) -> list[str]:
    """The simulation's status writes of spec hashes (its events), as ``subject: detail``."""
    return [f"{e.subject}: {e.detail}" for e in list(sim.events) if e.kind == "addon" and e.detail in HASH_EVENTS]


# -- what OCM's hub add-on manager would write -------------------------------------------------


def adc_body(name: str, value: str) -> JSON:
    return {"metadata": {"name": name, "namespace": CONFIG_NS}, "spec": {"customizedVariables": [{"name": "V", "value": value}]}}


def example_crd() -> JSON:
    return {
        "metadata": {"name": f"{EXAMPLES}.{EXAMPLE_GROUP}"},
        "spec": {
            "group": EXAMPLE_GROUP, "scope": "Namespaced",
            "names": {"plural": EXAMPLES, "singular": "exampleconfig", "kind": "ExampleConfig"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }  # fmt: skip


def desired(name: str) -> JSON:
    return {"name": name, "namespace": CONFIG_NS}


def install(api: Api, sim: SimThread) -> None:
    """Configs (three ADCs, an ExampleConfig of a CRD), the CMA (ADC and ExampleConfig defaults,
    a placement handing out another ADC) and the MCA (its own ADC in ``spec.configs``), with the
    statuses OCM's manager writes before any hash is known."""
    api.create(NAMESPACES, {"metadata": {"name": CONFIG_NS}})
    api.create(CRDS, example_crd())
    wait_until(lambda: _served(api), timeout=20, message="exampleconfigs served")
    # ... and known to be served by the simulation (else its framework would not wait for them).
    wait_until(lambda: sim.simulation is not None and (EXAMPLE_GROUP, EXAMPLES) in sim.simulation.served, timeout=20,
               message="exampleconfigs discovered")  # fmt: skip
    for name in ("deploy-config", "progression-config", "own-config"):
        api.create(ADDON_DEPLOYMENT_CONFIGS, adc_body(name, "1"), CONFIG_NS)
    api.create(EXAMPLE_CONFIGS, {"metadata": {"name": "example-config", "namespace": CONFIG_NS}, "spec": {"x": 1}}, CONFIG_NS)
    api.create(CLUSTER_MANAGEMENT_ADDONS, {
        "metadata": {"name": ADDON},
        "spec": {
            "supportedConfigs": [
                {"group": ADDON_GROUP, "resource": ADC, "defaultConfig": desired("deploy-config")},
                {"group": EXAMPLE_GROUP, "resource": EXAMPLES, "defaultConfig": desired("example-config")},
            ],
            "installStrategy": {"type": "Placements", "placements": [
                {"namespace": "default", "name": "global", "configs": [adc_ref(CONFIG_NS, "progression-config")]},
            ]},
        },
    })  # fmt: skip
    api.patch_status(CLUSTER_MANAGEMENT_ADDONS, ADDON, {"status": {
        "defaultconfigReferences": [
            {"group": ADDON_GROUP, "resource": ADC, "desiredConfig": desired("deploy-config")},
            {"group": EXAMPLE_GROUP, "resource": EXAMPLES, "desiredConfig": desired("example-config")},
        ],
        "installProgressions": [{"namespace": "default", "name": "global", "configReferences": [
            {"group": ADDON_GROUP, "resource": ADC, "desiredConfig": desired("progression-config")},
        ]}],
    }})  # fmt: skip
    api.create(MANAGED_CLUSTER_ADDONS, {
        "metadata": {"name": ADDON, "namespace": "cluster1"},
        "spec": {"configs": [{"group": ADDON_GROUP, "resource": ADC, "namespace": CONFIG_NS, "name": "own-config"}]},
    }, "cluster1")  # fmt: skip
    api.patch_status(MANAGED_CLUSTER_ADDONS, ADDON, {"status": {"configReferences": [
        {"group": ADDON_GROUP, "resource": ADC, "name": "own-config", "namespace": CONFIG_NS, "lastObservedGeneration": 0,
         "desiredConfig": desired("own-config")},
        {"group": EXAMPLE_GROUP, "resource": EXAMPLES, "name": "example-config", "namespace": CONFIG_NS,
         "lastObservedGeneration": 0, "desiredConfig": desired("example-config")},
    ]}}, "cluster1")  # fmt: skip


def _served(api: Api) -> bool:
    try:
        api.list(EXAMPLE_CONFIGS, CONFIG_NS)
    except Exception:
        return False
    return True


# -- reading --------------------------------------------------------------------------------------


def cma_hashes(api: Api) -> dict[str, str | None]:
    """``default|<progression>:<resource>/<name>`` -> desired spec hash (None: not set) of the CMA."""
    status = api.get(CLUSTER_MANAGEMENT_ADDONS, ADDON).get("status") or {}
    out: dict[str, str | None] = {}
    for item in status.get("defaultconfigReferences") or []:
        out[f"default:{item['resource']}/{item['desiredConfig']['name']}"] = item["desiredConfig"].get("specHash")
    for progression in status.get("installProgressions") or []:
        for item in progression.get("configReferences") or []:
            key = f"{progression['name']}:{item['resource']}/{item['desiredConfig']['name']}"
            out[key] = item["desiredConfig"].get("specHash")
    return out


def mca_refs(api: Api, cluster: str = "cluster1") -> dict[str, JSON]:
    status = api.get(MANAGED_CLUSTER_ADDONS, ADDON, cluster).get("status") or {}
    return {f"{r['resource']}/{r['desiredConfig']['name']}": r for r in status.get("configReferences") or []}


def adc_hash(api: Api, name: str) -> str:
    return spec_hash(api.get(ADDON_DEPLOYMENT_CONFIGS, name, CONFIG_NS))


def expected_cma(api: Api) -> dict[str, str | None]:
    return {
        f"default:{ADC}/deploy-config": adc_hash(api, "deploy-config"),
        f"default:{EXAMPLES}/example-config": spec_hash(api.get(EXAMPLE_CONFIGS, "example-config", CONFIG_NS)),
        f"global:{ADC}/progression-config": adc_hash(api, "progression-config"),
    }


# -- without our add-on manager ----------------------------------------------------------------------


def test_the_simulation_fills_and_follows_the_spec_hashes(start_sim: Any, api: Api) -> None:
    sim = start_sim(clusters=1)
    install(api, sim)

    wait_until(lambda: cma_hashes(api) == expected_cma(api), timeout=20, message="the CMA's spec hashes")
    assert all(cma_hashes(api).values())

    def own_hashed() -> JSON | None:
        refs = mca_refs(api)
        own = refs[f"{ADC}/own-config"]
        return refs if own["desiredConfig"].get("specHash") == adc_hash(api, "own-config") else None

    refs = wait_until(own_hashed, timeout=20, message="the MCA's own config hash")
    assert refs[f"{ADC}/own-config"]["lastObservedGeneration"] == 1
    example = refs[f"{EXAMPLES}/example-config"]
    # From the CMA, not one of the MCA's own configs: the generation only (OCM's hub manager
    # copies the CMA's hash); so the framework still waits, no deploy work yet.
    assert example["lastObservedGeneration"] == 1
    assert "specHash" not in example["desiredConfig"]
    assert api.get_or_none(MANIFEST_WORKS, f"addon-{ADDON}-deploy-0", "cluster1") is None

    # OCM's manager copies the CMA's hash: the framework deploys.
    cma_example = cma_hashes(api)[f"default:{EXAMPLES}/example-config"]
    current = api.get(MANAGED_CLUSTER_ADDONS, ADDON, "cluster1")
    items = current["status"]["configReferences"]
    for item in items:
        if item["resource"] == EXAMPLES:
            item["desiredConfig"]["specHash"] = cma_example
    api.patch_status(MANAGED_CLUSTER_ADDONS, ADDON, {"status": {"configReferences": items}}, "cluster1")
    wait_until(lambda: api.get_or_none(MANIFEST_WORKS, f"addon-{ADDON}-deploy-0", "cluster1"), timeout=20,
               message="the deploy work")  # fmt: skip

    # Config changes: new hashes (own config on the MCA, defaults and progressions on the CMA).
    before = dict(cma_hashes(api))
    api.patch(ADDON_DEPLOYMENT_CONFIGS, "own-config", {"spec": {"customizedVariables": [{"name": "V", "value": "2"}]}}, CONFIG_NS)
    api.patch(ADDON_DEPLOYMENT_CONFIGS, "deploy-config", {"spec": {"customizedVariables": [{"name": "V", "value": "2"}]}}, CONFIG_NS)
    api.patch(EXAMPLE_CONFIGS, "example-config", {"spec": {"x": 2}}, CONFIG_NS)
    refs = wait_until(own_hashed, timeout=20, message="the MCA's own config hash after a change")
    assert refs[f"{ADC}/own-config"]["lastObservedGeneration"] == 2
    wait_until(lambda: cma_hashes(api) == expected_cma(api), timeout=20, message="the CMA's new spec hashes")
    after = cma_hashes(api)
    assert after[f"default:{ADC}/deploy-config"] != before[f"default:{ADC}/deploy-config"]
    assert after[f"default:{EXAMPLES}/example-config"] != before[f"default:{EXAMPLES}/example-config"]
    assert after[f"global:{ADC}/progression-config"] == before[f"global:{ADC}/progression-config"]

    # A config that goes away: an empty hash on the CMA (the MCA item is left as it is).
    api.delete(ADDON_DEPLOYMENT_CONFIGS, "progression-config", CONFIG_NS)
    wait_until(lambda: cma_hashes(api)[f"global:{ADC}/progression-config"] == "", timeout=20, message="an empty hash")

    # Settled: no more hash writes.
    settled = len(hash_writes(sim))
    time.sleep(1.0)
    assert len(hash_writes(sim)) == settled


# -- with our add-on manager -------------------------------------------------------------------------


@pytest.fixture
def managed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AddonEnv]:
    environment = AddonEnv(tmp_path_factory.mktemp("addon-config-hash"))
    try:
        environment.simulate(3, {"defaults": {"mode": "rollout", "applyDelay": "20ms", "progressDuration": "50ms", "outcome": "Succeeded"}})
        environment.operator.start()
        yield environment
    finally:
        environment.close()


def test_with_our_add_on_manager_nothing_fights_over_the_hashes(managed: AddonEnv) -> None:
    env = managed
    sim = env.simulation
    assert sim is not None
    clusters = ["cluster1", "cluster2", "cluster3"]
    ns = env.namespace("hash-agents")
    env.adc(CONFIG_NS, "deploy-config", "v1")
    env.adc(CONFIG_NS, "progression-config", "v1")
    env.adc(CONFIG_NS, "own-config", "v1")
    env.placement(ns, "p", [clusters])
    env.cma(
        ADDON,
        defaults=[{"group": ADDON_GROUP, "resource": ADC, "defaultConfig": desired("deploy-config")}],
        placements=[{"namespace": ns, "name": "p", "configs": [adc_ref(CONFIG_NS, "progression-config")]}],
    )
    wait_until(lambda: env.get_mca("cluster1", ADDON), timeout=30, message="the MCA")
    env.api.patch(MANAGED_CLUSTER_ADDONS, ADDON, {"spec": {"configs": [
        {"group": ADDON_GROUP, "resource": ADC, "namespace": CONFIG_NS, "name": "own-config"}]}}, "cluster1")  # fmt: skip

    def deployed() -> bool:
        for cluster in clusters:
            mca = env.get_mca(cluster, ADDON) or {}
            available = [c for c in (mca.get("status") or {}).get("conditions") or [] if c.get("type") == "Available"]
            if not available or available[0].get("status") != "True":
                return False
        refs = {r["desiredConfig"]["name"]: r for r in env.config_refs("cluster1", ADDON)}
        return (refs.get("own-config") or {}).get("desiredConfig", {}).get("specHash") == env.adc_hash(CONFIG_NS, "own-config")

    wait_until(deployed, timeout=60, message="the add-on available everywhere with its own config")
    wait_until(lambda: (env.progression_condition(ADDON) or {}).get("reason") == "Completed", timeout=60,
               message="the install progression Completed")  # fmt: skip
    cma_status = env.get_cma(ADDON).get("status") or {}
    progression = cma_status["installProgressions"][0]["configReferences"][0]["desiredConfig"]
    assert progression["specHash"] == env.adc_hash(CONFIG_NS, "progression-config")
    assert cma_status["defaultconfigReferences"][0]["desiredConfig"]["specHash"] == env.adc_hash(CONFIG_NS, "deploy-config")
    # Our manager writes every hash and generation itself; the simulation, which computes the same
    # ones, writes only what it finds missing (a race it can win right after a change), and
    # neither writes again once settled: the stored objects stay as they are.
    writes = hash_writes(sim)
    versions = stored_versions(env)
    time.sleep(1.0)
    assert hash_writes(sim) == writes
    assert stored_versions(env) == versions, "nothing fights over the status once settled"


def stored_versions(env: AddonEnv) -> list[str]:
    """The resourceVersions of the CMA and of every MCA."""
    objs = [env.get_cma(ADDON), *(env.get_mca(c, ADDON) or {} for c in ("cluster1", "cluster2", "cluster3"))]
    return [str((o.get("metadata") or {}).get("resourceVersion")) for o in objs]
