"""Template add-ons (AddOnTemplate) in the simulated add-on framework against a local hub: the test
serves ``addontemplates`` itself (OCM's CRD from the shared reference; skipped without it) and
writes what the add-on manager would (the MCA's configReferences and Configured) by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.api import crdgen
from ocm_rollout.api.addon_template import AddOnTemplate
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANIFEST_WORKS,
    NAMESPACES,
    NotFound,
    Resource,
)
from ocm_rollout.sandbox.sim_templates import ADDON_TEMPLATES
from tests.integration.helpers import Api, wait_until
from tests.integration.test_agents_env import conditions

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "addons" / "template" / "hello-template.yaml"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
ADDON = "hello-template"
WORK_NAME = f"addon-{ADDON}-deploy-0"
GROUP = "addon.open-cluster-management.io"
CONFIG_NS = "open-cluster-management"


@pytest.fixture
def api(sim_hub: Any) -> Api:
    return Api(str(sim_hub.kubeconfig))


def serves_addontemplates(api: Api) -> bool:
    try:
        api.list(ADDON_TEMPLATES)
    except NotFound:
        return False
    return True


def serve_addontemplates(api: Api) -> None:
    """Create the AddOnTemplate CRD (generated from api/) unless the hub serves addontemplates already."""
    if serves_addontemplates(api):
        return
    crd = crdgen.crd_for(AddOnTemplate)
    api.create(CRDS, {"metadata": {"name": crd["metadata"]["name"]}, "spec": crd["spec"]})
    wait_until(lambda: serves_addontemplates(api), timeout=20, message="addontemplates served")


def example_objects() -> list[JSON]:
    return [doc for doc in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if doc]


def apply_example(api: Api, *, template: bool = True) -> None:
    resources = {"Namespace": NAMESPACES, "AddOnDeploymentConfig": ADDON_DEPLOYMENT_CONFIGS,
                 "AddOnTemplate": ADDON_TEMPLATES, "ClusterManagementAddOn": CLUSTER_MANAGEMENT_ADDONS,
                 "ManagedClusterAddOn": MANAGED_CLUSTER_ADDONS}  # fmt: skip
    for doc in example_objects():
        if doc["kind"] == "AddOnTemplate" and not template:
            continue
        body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
        api.create(resources[doc["kind"]], body, doc["metadata"].get("namespace"))


def desire(api: Api, refs: list[JSON]) -> None:
    """What the add-on manager writes: the desired configs and Configured True."""
    configured = {"type": "Configured", "status": "True", "reason": "ConfigurationsConfigured",
                  "message": "Configurations configured", "lastTransitionTime": "2024-05-01T12:00:00Z"}  # fmt: skip
    wait_until(lambda: (mca(api).get("status") or {}).get("supportedConfigs"), timeout=20, message="supportedConfigs")
    existing = (mca(api).get("status") or {}).get("conditions") or []
    status = {"configReferences": refs, "conditions": [*existing, configured]}
    api.patch_status(MANAGED_CLUSTER_ADDONS, ADDON, {"status": status}, "cluster1")


def template_ref(spec_hash: str) -> JSON:
    return {"group": GROUP, "resource": "addontemplates", "name": "hello-template",
            "desiredConfig": {"name": "hello-template", "specHash": spec_hash}}  # fmt: skip


ADC_REF: JSON = {
    "group": GROUP, "resource": "addondeploymentconfigs", "name": "hello-template-config", "namespace": CONFIG_NS,
    "desiredConfig": {"name": "hello-template-config", "namespace": CONFIG_NS, "specHash": "adc-hash"},
}  # fmt: skip


def mca(api: Api) -> JSON:
    return api.get(MANAGED_CLUSTER_ADDONS, ADDON, "cluster1")


def condition(obj: JSON, type_: str) -> tuple[str, str, str] | None:
    found = conditions(obj).get(type_)
    return None if found is None else (found["status"], found["reason"], found.get("message", ""))


def available(api: Api) -> JSON | None:
    found = mca(api)
    cond = condition(found, "Available")
    return found if cond is not None and cond[:2] == ("True", "ProbeAvailable") else None


def test_a_template_addon_is_rendered_from_its_addontemplate(start_sim: Any, api: Api) -> None:
    start_sim(clusters=1)
    serve_addontemplates(api)
    apply_example(api)
    desire(api, [template_ref("tpl-hash"), ADC_REF])

    work = wait_until(lambda: api.get_or_none(MANIFEST_WORKS, WORK_NAME, "cluster1"), timeout=30, message="deploy work")
    assert work["metadata"]["labels"]["open-cluster-management.io/addon-name"] == ADDON
    assert json.loads(work["metadata"]["annotations"]["open-cluster-management.io/config-spec-hash"]) == {
        "addontemplates.addon.open-cluster-management.io//hello-template": "tpl-hash",
        f"addondeploymentconfigs.addon.open-cluster-management.io/{CONFIG_NS}/hello-template-config": "adc-hash",
    }
    manifests = work["spec"]["workload"]["manifests"]
    assert [(m["kind"], m["metadata"]["name"]) for m in manifests] == [
        ("Namespace", "hello-template-agent"),
        ("ServiceAccount", "hello-template-agent-sa"),
        ("ClusterRoleBinding", "hello-template-agent"),
        ("Deployment", "hello-template-agent"),
    ]
    deployment = manifests[3]
    assert deployment["metadata"]["namespace"] == "hello-template-agent"
    assert manifests[2]["subjects"][0]["namespace"] == "hello-template-agent"
    pod = deployment["spec"]["template"]["spec"]
    agent = pod["containers"][0]
    assert agent["args"] == ["/helloworld", "agent", "--cluster-name=cluster1", "--addon-namespace=hello-template-agent",
                             "--log-level=debug", "--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig"]  # fmt: skip
    assert agent["env"] == [
        {"name": "HUB_KUBECONFIG", "value": "/managed/hub-kubeconfig/kubeconfig"},
        {"name": "CLUSTER_NAME", "value": "cluster1"},
        {"name": "INSTALL_NAMESPACE", "value": "hello-template-agent"},
    ]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["volumes"] == [{"name": "hub-kubeconfig", "secret": {"secretName": "hello-template-hub-kubeconfig"}}]

    ready = wait_until(lambda: available(api), timeout=30, message="Available True")
    assert condition(ready, "ManifestApplied") == ("True", "AddonManifestApplied", "manifests of addon are applied successfully")
    assert ready["status"]["namespace"] == "hello-template-agent"
    user = "system:open-cluster-management:cluster:cluster1:addon:hello-template:agent:hello-template-agent"
    assert ready["status"]["registrations"] == [{
        "signerName": "kubernetes.io/kube-apiserver-client",
        "subject": {"user": user, "groups": ["system:open-cluster-management:cluster:cluster1:addon:hello-template",
                                             "system:open-cluster-management:addon:hello-template"]},
    }]  # fmt: skip


def test_a_missing_template_is_reported_then_rendered_once_it_exists(start_sim: Any, api: Api) -> None:
    start_sim(clusters=1)
    serve_addontemplates(api)
    apply_example(api, template=False)
    desire(api, [template_ref("tpl-hash"), ADC_REF])

    def failed() -> tuple[str, str, str] | None:
        found = condition(mca(api), "ManifestApplied")
        return found if found is not None and found[0] == "False" else None

    assert wait_until(failed, timeout=30, message="ManifestApplied False") == (
        "False", "ManifestWorkApplyFailed",
        'failed to get manifest from agent interface: addontemplate.addon.open-cluster-management.io "hello-template" not found',
    )  # fmt: skip
    assert api.get_or_none(MANIFEST_WORKS, WORK_NAME, "cluster1") is None
    template = next(doc for doc in example_objects() if doc["kind"] == "AddOnTemplate")
    api.create(ADDON_TEMPLATES, {k: v for k, v in template.items() if k not in ("apiVersion", "kind")})
    wait_until(lambda: available(api), timeout=30, message="Available True once the template exists")


def test_a_hub_without_addontemplates_has_no_templates(start_sim: Any, api: Api) -> None:
    if serves_addontemplates(api):
        pytest.skip("this hub serves addontemplates")
    start_sim(clusters=1)
    apply_example(api, template=False)
    desire(api, [ADC_REF])

    def failed() -> tuple[str, str, str] | None:
        found = condition(mca(api), "ManifestApplied")
        return found if found is not None and found[0] == "False" else None

    assert wait_until(failed, timeout=30, message="ManifestApplied False") == (
        "False", "ManifestWorkApplyFailed",
        f"failed to get manifest from agent interface: addon cluster1/{ADDON} template not found in status",
    )  # fmt: skip


def test_with_the_addon_manager_the_example_ends_available(tmp_path: Path) -> None:
    """The whole path: our add-on manager hashes the AddOnTemplate and the ADC into the MCA's
    configReferences and says Configured; the simulated framework renders the template."""
    from tests.integration.test_addon_env import AddonEnv

    env = AddonEnv(tmp_path)
    try:
        api = env.api
        serve_addontemplates(api)
        env.simulate(1, {})
        env.operator.start()
        apply_example(api)

        def rendered() -> JSON | None:
            found = available(api)
            work = api.get_or_none(MANIFEST_WORKS, WORK_NAME, "cluster1")
            return found if found is not None and work is not None else None

        ready = wait_until(rendered, timeout=60, message="the template add-on Available")
        refs = {r["resource"]: r for r in ready["status"]["configReferences"]}
        template_hash = refs["addontemplates"]["desiredConfig"]["specHash"]
        assert template_hash
        work = api.get(MANIFEST_WORKS, WORK_NAME, "cluster1")
        hashes = json.loads(work["metadata"]["annotations"]["open-cluster-management.io/config-spec-hash"])
        assert hashes["addontemplates.addon.open-cluster-management.io//hello-template"] == template_hash
        deployment = work["spec"]["workload"]["manifests"][3]
        assert "--log-level=debug" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert ready["status"]["registrations"][0]["signerName"] == "kubernetes.io/kube-apiserver-client"
    finally:
        env.close()
