"""The simulated add-on framework and agent against a local hub, with no hub controller: the test
writes what the add-on manager would (CMA, MCA, the MCA's ``status.configReferences``) by hand
and checks what the simulation writes back, through the API only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORKS,
    NAMESPACES,
    Resource,
)
from ocm_rollout.sandbox.agents.registration import fleet_member
from tests.integration.helpers import Api, wait_until
from tests.integration.test_agents_env import Recorder, conditions

pytestmark = pytest.mark.integration

PROFILES = Path(__file__).resolve().parents[2] / "examples" / "profiles"
ADDON = "helloworld"
WORK_NAME = f"addon-{ADDON}-deploy-0"
CONFIG_NS = "open-cluster-management"
ADDON_GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
EXAMPLE_GROUP = "example.open-cluster-management.io"
ANNOTATION = "open-cluster-management.io/config-spec-hash"
ADC_KEY = f"{ADC}.{ADDON_GROUP}/{CONFIG_NS}/deploy-config"
EXAMPLE_KEY = f"exampleconfigs.{EXAMPLE_GROUP}/{CONFIG_NS}/example-config"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)


@pytest.fixture
def api(sim_hub: Any) -> Api:
    return Api(str(sim_hub.kubeconfig))


@pytest.fixture
def recorder(sim_hub: Any, client_for: Any) -> Iterator[Recorder]:
    rec = Recorder(client_for(sim_hub), "cluster1").start()
    yield rec
    rec.stop()


# -- what the add-on manager would write ---------------------------------------------------------


def install(api: Api, clusters: list[str], *, variables: dict[str, str] | None = None) -> None:
    """The config namespace, an AddOnDeploymentConfig, the CMA (an ADC default and an
    ``exampleconfigs`` default the hub does not serve) and one MCA per cluster."""
    api.create(NAMESPACES, {"metadata": {"name": CONFIG_NS}})
    set_variables(api, variables or {"LOG_LEVEL": "2"}, create=True)
    api.create(CLUSTER_MANAGEMENT_ADDONS, {
        "metadata": {"name": ADDON},
        "spec": {"supportedConfigs": [
            {"group": ADDON_GROUP, "resource": ADC, "defaultConfig": {"name": "deploy-config", "namespace": CONFIG_NS}},
            {"group": EXAMPLE_GROUP, "resource": "exampleconfigs",
             "defaultConfig": {"name": "example-config", "namespace": CONFIG_NS}},
        ]},
    })  # fmt: skip
    for cluster in clusters:
        api.create(MANAGED_CLUSTER_ADDONS, {"metadata": {"name": ADDON, "namespace": cluster}, "spec": {}}, cluster)


def set_variables(api: Api, variables: dict[str, str], *, create: bool = False) -> None:
    spec = {
        "customizedVariables": [{"name": k, "value": v} for k, v in variables.items()],
        "nodePlacement": {"nodeSelector": {"kubernetes.io/os": "linux"}},
    }
    if create:
        api.create(ADDON_DEPLOYMENT_CONFIGS, {"metadata": {"name": "deploy-config", "namespace": CONFIG_NS}, "spec": spec},
                   CONFIG_NS)
    else:
        api.patch(ADDON_DEPLOYMENT_CONFIGS, "deploy-config", {"spec": spec}, CONFIG_NS)


def desire(api: Api, cluster: str, adc_hash: str, observed: int = 1) -> None:
    """The MCA's configReferences as the add-on manager writes them: the ADC with ``adc_hash`` and
    the exampleconfigs default, which has no hash (nothing serves that kind)."""
    refs = [
        {"group": ADDON_GROUP, "resource": ADC, "name": "deploy-config", "namespace": CONFIG_NS,
         "lastObservedGeneration": observed,
         "desiredConfig": {"name": "deploy-config", "namespace": CONFIG_NS, "specHash": adc_hash}},
        {"group": EXAMPLE_GROUP, "resource": "exampleconfigs", "name": "example-config", "namespace": CONFIG_NS,
         "lastObservedGeneration": 0,
         "desiredConfig": {"name": "example-config", "namespace": CONFIG_NS, "specHash": ""}},
    ]  # fmt: skip
    api.patch_status(MANAGED_CLUSTER_ADDONS, ADDON, {"status": {"configReferences": refs}}, cluster)


# -- reading -------------------------------------------------------------------------------------------


def mca(api: Api, cluster: str = "cluster1") -> JSON:
    return api.get(MANAGED_CLUSTER_ADDONS, ADDON, cluster)


def work(api: Api, cluster: str = "cluster1") -> JSON | None:
    return api.get_or_none(MANIFEST_WORKS, WORK_NAME, cluster)


def condition(obj: JSON, type_: str) -> tuple[str, str, str] | None:
    found = conditions(obj).get(type_)
    return None if found is None else (found["status"], found["reason"], found.get("message", ""))


def work_at(api: Api, generation: int, cluster: str = "cluster1") -> JSON | None:
    found = work(api, cluster)
    return found if found is not None and found["metadata"]["generation"] == generation else None


def settled(api: Api, generation: int, cluster: str = "cluster1") -> JSON | None:
    """The deploy work once the simulated agent's rollout of ``generation`` ended either way."""
    found = work_at(api, generation, cluster)
    if found is None:
        return None
    progressing = conditions(found).get("Progressing") or {}
    degraded = conditions(found).get("Degraded") or {}
    if progressing.get("observedGeneration") != generation:
        return None
    if progressing.get("status") == "False" or (degraded.get("status") == "True" and degraded.get("observedGeneration") == generation):
        return found
    return None


def available(api: Api, status: str, reason: str, cluster: str = "cluster1") -> JSON | None:
    found = mca(api, cluster)
    cond = condition(found, "Available")
    return found if cond is not None and cond[:2] == (status, reason) else None


def supported_of(api: Api, cluster: str = "cluster1") -> list[JSON]:
    return list((mca(api, cluster).get("status") or {}).get("supportedConfigs") or [])


def deployment(obj: JSON) -> JSON:
    manifests = obj["spec"]["workload"]["manifests"]
    return next(m for m in manifests if m["kind"] == "Deployment")


def env_of(obj: JSON) -> list[JSON]:
    return list(deployment(obj)["spec"]["template"]["spec"]["containers"][0].get("env") or [])


# -- tests ---------------------------------------------------------------------------------------------


def test_supported_configs_and_no_work_before_the_manager_sets_configs(start_sim: Any, api: Api) -> None:
    start_sim(clusters=1)
    install(api, ["cluster1"])
    found = wait_until(
        lambda: (m := mca(api)) and (m.get("status") or {}).get("supportedConfigs") and m,
        timeout=20, message="supportedConfigs",
    )
    assert found["status"]["supportedConfigs"] == [{"group": ADDON_GROUP, "resource": ADC}]
    assert work(api) is None, "no deploy work before the add-on manager sets the configurations"
    assert condition(found, "ManifestApplied") is None


def test_the_deploy_work_follows_the_desired_hashes_only(start_sim: Any, api: Api, recorder: Recorder) -> None:
    start_sim(clusters=1)
    install(api, ["cluster1"])
    wait_until(lambda: (mca(api).get("status") or {}).get("supportedConfigs"), timeout=20, message="supportedConfigs")
    desire(api, "cluster1", "hash-1")

    first = wait_until(lambda: work(api), timeout=20, message="the deploy work")
    owner = mca(api)
    assert first["metadata"]["generation"] == 1
    assert first["metadata"]["labels"]["open-cluster-management.io/addon-name"] == ADDON
    assert json.loads(first["metadata"]["annotations"][ANNOTATION]) == {ADC_KEY: "hash-1", EXAMPLE_KEY: ""}
    refs = first["metadata"]["ownerReferences"]
    assert [(r["apiVersion"], r["kind"], r["name"], r["uid"]) for r in refs] == [
        ("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn", ADDON, owner["metadata"]["uid"])
    ]
    kinds = [(m["kind"], m["metadata"]["name"]) for m in first["spec"]["workload"]["manifests"]]
    assert kinds == [("Namespace", "open-cluster-management-agent-addon"), ("Deployment", f"{ADDON}-agent")]
    assert env_of(first) == [{"name": "LOG_LEVEL", "value": "2"}]
    assert deployment(first)["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}

    ready = wait_until(lambda: available(api, "True", "ProbeAvailable"), timeout=20, message="Available True")
    assert condition(ready, "ManifestApplied") == ("True", "AddonManifestApplied", "manifests of addon are applied successfully")
    assert ready["status"]["namespace"] == "open-cluster-management-agent-addon"

    # No-ops: the config object changes but its desired hash does not; the manager rewrites the
    # same desired configs. Then a change the simulation must answer (a newly served supported
    # type) shows that it has looked at the add-on since.
    set_variables(api, {"LOG_LEVEL": "3"})
    desire(api, "cluster1", "hash-1", observed=2)
    api.patch(CLUSTER_MANAGEMENT_ADDONS, ADDON, {"spec": {"supportedConfigs": [
        {"group": ADDON_GROUP, "resource": ADC, "defaultConfig": {"name": "deploy-config", "namespace": CONFIG_NS}},
        {"group": "", "resource": "configmaps"},
    ]}})  # fmt: skip
    wait_until(
        lambda: {"group": "", "resource": "configmaps"} in (mca(api).get("status") or {}).get("supportedConfigs", []),
        timeout=20, message="configmaps supported",
    )
    unchanged = work(api)
    assert unchanged is not None and unchanged["metadata"]["generation"] == 1
    assert env_of(unchanged) == [{"name": "LOG_LEVEL", "value": "2"}]

    # A new desired hash: the agent is rendered again, with the config object as it is now.
    desire(api, "cluster1", "hash-2", observed=2)
    second = wait_until(lambda: work_at(api, 2), timeout=20, message="generation 2")
    assert json.loads(second["metadata"]["annotations"][ANNOTATION]) == {ADC_KEY: "hash-2", EXAMPLE_KEY: ""}
    assert env_of(second) == [{"name": "LOG_LEVEL", "value": "3"}]
    pod_annotations = deployment(second)["spec"]["template"]["metadata"]["annotations"]
    assert json.loads(next(iter(pod_annotations.values()))) == {ADC_KEY: "hash-2", EXAMPLE_KEY: ""}
    wait_until(lambda: settled(api, 2), timeout=20, message="generation 2 applied")
    wait_until(lambda: available(api, "True", "ProbeAvailable"), timeout=20, message="Available True again")

    by_generation: dict[int, set[str]] = {}
    for version in recorder.of(WORK_NAME):
        hashes = json.loads(version["metadata"]["annotations"][ANNOTATION])
        by_generation.setdefault(version["metadata"]["generation"], set()).add(hashes[ADC_KEY])
    assert by_generation == {1: {"hash-1"}, 2: {"hash-2"}}


def test_a_newly_served_config_type_becomes_supported(start_sim: Any, api: Api) -> None:
    start_sim(clusters=1)
    install(api, ["cluster1"])
    before = wait_until(partial(supported_of, api), timeout=20, message="supportedConfigs")
    assert before == [{"group": ADDON_GROUP, "resource": ADC}]
    api.create(CRDS, {
        "metadata": {"name": f"exampleconfigs.{EXAMPLE_GROUP}"},
        "spec": {
            "group": EXAMPLE_GROUP, "scope": "Namespaced",
            "names": {"plural": "exampleconfigs", "singular": "exampleconfig", "kind": "ExampleConfig"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    })  # fmt: skip

    def both() -> list[JSON] | None:
        found = supported_of(api)
        return found if len(found) == 2 else None

    after = wait_until(both, timeout=20, message="exampleconfigs supported")
    assert after == [{"group": ADDON_GROUP, "resource": ADC}, {"group": EXAMPLE_GROUP, "resource": "exampleconfigs"}]


def test_deleting_the_addon_garbage_collects_its_work(start_sim: Any, api: Api) -> None:
    start_sim(clusters=1)
    install(api, ["cluster1"])
    desire(api, "cluster1", "hash-1")
    wait_until(lambda: available(api, "True", "ProbeAvailable"), timeout=20, message="installed")
    api.delete(MANAGED_CLUSTER_ADDONS, ADDON, "cluster1")
    wait_until(lambda: work(api) is None, timeout=20, message="the deploy work deleted with its add-on")


def test_bad_config_profile_fails_the_config_update_on_production_clusters(start_sim: Any, api: Api) -> None:
    assert fleet_member(1).labels["environment"] == "production"
    assert fleet_member(3).labels["environment"] != "production"
    profile = yaml.safe_load((PROFILES / "addon-bad-config.yaml").read_text(encoding="utf-8"))
    start_sim(clusters=3, profile=profile)
    clusters = ["cluster1", "cluster3"]
    install(api, clusters)
    for cluster in clusters:
        wait_until(partial(supported_of, api, cluster), timeout=20, message=f"supportedConfigs on {cluster}")
        desire(api, cluster, "hash-1")
    for cluster in clusters:
        done = wait_until(partial(settled, api, 1, cluster), timeout=30, message=f"install on {cluster}")
        assert "Degraded" not in conditions(done), "the install succeeds everywhere"
        wait_until(partial(available, api, "True", "ProbeAvailable", cluster), timeout=20,
                   message=f"{cluster} available")

    set_variables(api, {"LOG_LEVEL": "bogus"})
    for cluster in clusters:
        desire(api, cluster, "hash-2", observed=2)
    failed = wait_until(lambda: settled(api, 2, "cluster1"), timeout=30, message="the update on cluster1")
    degraded = conditions(failed)["Degraded"]
    assert degraded["status"] == "True" and "invalid customized variable" in degraded["message"]
    assert conditions(failed)["Applied"]["status"] == "False"
    unavailable = wait_until(
        lambda: (c := condition(mca(api, "cluster1"), "Available")) is not None and c[0] != "True" and c,
        timeout=20,
        message="cluster1's add-on no longer Available",
    )
    assert unavailable[:2] == ("False", "WorkNotApplied"), unavailable

    succeeded = wait_until(lambda: settled(api, 2, "cluster3"), timeout=30, message="the update on cluster3")
    assert "Degraded" not in conditions(succeeded)
    assert conditions(succeeded)["Progressing"]["reason"] == "Completed"
    wait_until(lambda: available(api, "True", "ProbeAvailable", "cluster3"), timeout=20, message="cluster3 available")
