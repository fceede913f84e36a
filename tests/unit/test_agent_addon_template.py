"""Template add-ons in the simulated add-on framework (ocm_rollout.sandbox.agents.addon_template*,
and their use in ocm_rollout.sandbox.agents.addon): OCM's template agent's variables, decorations,
registrations and failures."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.sandbox.agents.addon import addon_status, plan_addon, plan_deploy_work
from ocm_rollout.sandbox.agents.addon_index import AddonIndex
from ocm_rollout.sandbox.agents.addon_template import (
    TemplateError,
    desired_template,
    is_template_addon,
    registration_namespace,
    registrations,
    template_reference,
    template_values,
)
from ocm_rollout.sandbox.agents.addon_template_render import override_image, render_manifests, substitute
from ocm_rollout.sandbox.agents.addon_template_work import deploy_work_spec, guess_resource
from ocm_rollout.sandbox.agents.conditions import find_condition

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
TEMPLATES = "addontemplates"
SERVED = {(GROUP, ADC), (GROUP, TEMPLATES)}
ADC_KEY = (GROUP, ADC, "open-cluster-management", "deploy-config")
ADDON = "hello-template"
CLUSTER = "cluster1"
CONFIGURED = {"type": "Configured", "status": "True", "reason": "ConfigurationsConfigured", "message": "ok",
              "lastTransitionTime": "2024-05-01T11:00:00Z"}  # fmt: skip


def deployment(namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "hello-template-agent", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "hello"}},
            "template": {
                "metadata": {"labels": {"app": "hello"}},
                "spec": {
                    "containers": [{
                        "name": "helloworld-agent",
                        "image": "quay.io/open-cluster-management/addon-examples:v1",
                        "args": ["--cluster-name={{CLUSTER_NAME}}", "--log={{LOG_LEVEL}}", "--kubeconfig={{HUB_KUBECONFIG}}"],
                        "env": [{"name": "EXISTING", "value": "1"}],
                    }],
                    "tolerations": [{"key": "old", "operator": "Exists"}],
                },
            },
        },
    }  # fmt: skip


def template(*manifests: dict[str, Any], registration: list[dict[str, Any]] | None = None, **agent: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "addonName": ADDON,
        "agentSpec": {"workload": {"manifests": list(manifests) or [deployment()]}, **agent},
    }
    if registration is not None:
        spec["registration"] = registration
    return {"metadata": {"name": "hello-template-v1"}, "spec": spec}


def adc(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "deploy-config", "namespace": "open-cluster-management"}, "spec": spec}


def cma() -> dict[str, Any]:
    return {
        "metadata": {"name": ADDON, "uid": "cma-uid"},
        "spec": {"supportedConfigs": [
            {"group": GROUP, "resource": TEMPLATES, "defaultConfig": {"name": "hello-template-v1"}},
            {"group": GROUP, "resource": ADC,
             "defaultConfig": {"name": "deploy-config", "namespace": "open-cluster-management"}},
        ]},
    }  # fmt: skip


def mca(*, template_hash: str = "t-hash", configured: bool = True, with_adc: bool = True) -> dict[str, Any]:
    refs: list[dict[str, Any]] = [{
        "group": GROUP, "resource": TEMPLATES, "name": "hello-template-v1",
        "desiredConfig": {"name": "hello-template-v1", "specHash": template_hash},
    }]  # fmt: skip
    if with_adc:
        refs.append({
            "group": GROUP, "resource": ADC, "name": "deploy-config", "namespace": "open-cluster-management",
            "desiredConfig": {"name": "deploy-config", "namespace": "open-cluster-management", "specHash": "a-hash"},
        })  # fmt: skip
    status: dict[str, Any] = {"configReferences": refs}
    if configured:
        status["conditions"] = [dict(CONFIGURED)]
    return {"metadata": {"name": ADDON, "namespace": CLUSTER, "uid": "mca-uid"}, "spec": {}, "status": status}


def cluster(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": CLUSTER, "annotations": annotations or {}}}


def render(tpl: dict[str, Any], config: dict[str, Any] | None = None, managed: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return render_manifests(ADDON, CLUSTER, managed or cluster(), tpl, config)


def container(manifests: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = manifests[index]["spec"]["template"]["spec"]["containers"][0]
    return found


# --- which add-ons and which template ----------------------------------------------------------------


def test_a_template_addon_names_addontemplates_in_its_supported_configs() -> None:
    assert is_template_addon(cma())
    plain = cma()
    plain["spec"]["supportedConfigs"] = plain["spec"]["supportedConfigs"][1:]
    assert not is_template_addon(plain)
    no_default = cma()
    del no_default["spec"]["supportedConfigs"][0]["defaultConfig"]
    assert is_template_addon(no_default)


def test_the_template_is_the_desired_config_of_the_first_addontemplates_reference() -> None:
    ref = template_reference(mca())
    assert ref is not None and (ref.name, ref.spec_hash) == ("hello-template-v1", "t-hash")
    assert desired_template(mca(), {"hello-template-v1": template()}) == template()


@pytest.mark.parametrize(
    ("addon", "message"),
    [
        (mca(), 'addontemplate.addon.open-cluster-management.io "hello-template-v1" not found'),
        (mca(template_hash=""), f"addon {ADDON} template desired spec hash is empty"),
        ({**mca(), "status": {}}, f"addon {CLUSTER}/{ADDON} template not found in status"),
    ],
)
def test_no_template_is_ocms_error(addon: dict[str, Any], message: str) -> None:
    with pytest.raises(TemplateError, match="^" + message.replace(".", r"\.") + "$"):
        desired_template(addon, {})


# --- variables -----------------------------------------------------------------------------------------


def test_substitution_is_fasttemplate_execute_string() -> None:
    assert substitute("a {{X}} b {{Y}}{{X}}", {"X": "1", "Y": "2"}) == "a 1 b 21"
    assert substitute("{{UNKNOWN}}-{{ X }}", {"X": "1"}) == "-"  # unknown tags, spaces included, render as ""
    assert substitute("no tags", {}) == "no tags"
    with pytest.raises(TemplateError, match="Cannot find end tag"):
        substitute("{{X", {"X": "1"})


def test_values_defaults_customized_variables_and_builtins() -> None:
    config = adc(customizedVariables=[{"name": "LOG_LEVEL", "value": "4"}, {"name": "CLUSTER_NAME", "value": "spoofed"},
                                      {"name": "HUB_KUBECONFIG", "value": "/custom"}],
                 agentInstallNamespace="hello-ns")  # fmt: skip
    values = template_values(CLUSTER, cluster(), template(registration=[{"type": "KubeClient"}]), config)
    assert values.variables == {
        "HUB_KUBECONFIG": "/custom", "LOG_LEVEL": "4", "CLUSTER_NAME": CLUSTER, "INSTALL_NAMESPACE": "hello-ns",
    }  # fmt: skip
    assert values.preset == (("HUB_KUBECONFIG", "/custom"), ("CLUSTER_NAME", CLUSTER), ("INSTALL_NAMESPACE", "hello-ns"))
    bare = template_values(CLUSTER, None, template(), None)
    assert bare.variables == {"CLUSTER_NAME": CLUSTER} and bare.preset == (("CLUSTER_NAME", CLUSTER),)


def test_rendering_substitutes_and_appends_the_preset_env() -> None:
    tpl = template(registration=[{"type": "KubeClient"}])
    manifests = render(tpl, adc(customizedVariables=[{"name": "LOG_LEVEL", "value": "4"}]))
    agent = container(manifests)
    assert agent["args"] == ["--cluster-name=cluster1", "--log=4", "--kubeconfig=/managed/hub-kubeconfig/kubeconfig"]
    assert agent["env"] == [
        {"name": "EXISTING", "value": "1"},
        {"name": "HUB_KUBECONFIG", "value": "/managed/hub-kubeconfig/kubeconfig"},
        {"name": "CLUSTER_NAME", "value": CLUSTER},
    ]
    # Without an ADC or registration: unknown variables are empty, and the template is not changed.
    plain = render(template())
    assert container(plain)["args"] == ["--cluster-name=cluster1", "--log=", "--kubeconfig="]
    assert template()["spec"]["agentSpec"]["workload"]["manifests"][0] == deployment()


def test_a_manifest_that_is_no_json_after_substitution_is_an_error() -> None:
    config = adc(customizedVariables=[{"name": "LOG_LEVEL", "value": 'say "hi"'}])
    with pytest.raises(TemplateError):
        render(template(), config)


# --- decorations ---------------------------------------------------------------------------------------


def test_install_namespace_decorates_namespaced_objects_namespaces_and_binding_subjects() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
               "roleRef": {"kind": "ClusterRole", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "default"},
                            {"kind": "ServiceAccount", "name": "b"}]}  # fmt: skip
    manifests = render(template(namespace, role, binding, deployment()), adc(agentInstallNamespace="hello-ns"))
    assert manifests[0]["metadata"]["name"] == "hello-ns"
    assert manifests[1] == role
    assert [s["namespace"] for s in manifests[2]["subjects"]] == ["hello-ns", "hello-ns"]
    assert manifests[3]["metadata"]["namespace"] == "hello-ns"
    assert {"name": "INSTALL_NAMESPACE", "value": "hello-ns"} in container(manifests, 3)["env"]
    no_subjects = {**binding, "kind": "RoleBinding"}
    del no_subjects["subjects"]
    with pytest.raises(TemplateError, match="failed to find field subjects"):
        render(template(no_subjects), adc(agentInstallNamespace="hello-ns"))


def test_registration_volumes() -> None:
    tpl = template(registration=[
        {"type": "KubeClient"},
        {"type": "CustomSigner", "customSigner": {"signerName": "example.com/signer-name", "signingCA": {"name": "ca"}}},
    ])  # fmt: skip
    manifests = render(tpl)
    pod = manifests[0]["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "hub-kubeconfig", "secret": {"secretName": f"{ADDON}-hub-kubeconfig"}},
        {"name": "cert-example-com-signer-name", "secret": {"secretName": f"{ADDON}-example.com-signer-name-client-cert"}},
    ]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "hub-kubeconfig", "mountPath": "/managed/hub-kubeconfig"},
        {"name": "cert-example-com-signer-name", "mountPath": "/managed/example.com-signer-name"},
    ]
    with pytest.raises(TemplateError, match="custom signer is nil"):
        render(template(registration=[{"type": "CustomSigner"}]))


def test_node_placement_only_with_a_node_selector() -> None:
    toleration = {"key": "node-role", "operator": "Exists", "effect": "NoSchedule"}
    pod = render(template(), adc(nodePlacement={"nodeSelector": {"os": "linux"}, "tolerations": [toleration]}))[0]
    assert pod["spec"]["template"]["spec"]["nodeSelector"] == {"os": "linux"}
    assert pod["spec"]["template"]["spec"]["tolerations"] == [toleration]
    # OCM's decorator replaces the tolerations only together with a nodeSelector.
    untouched = render(template(), adc(nodePlacement={"tolerations": [toleration]}))[0]
    assert untouched["spec"]["template"]["spec"]["tolerations"] == [{"key": "old", "operator": "Exists"}]
    assert "nodeSelector" not in untouched["spec"]["template"]["spec"]
    cleared = render(template(), adc(nodePlacement={"nodeSelector": {"os": "linux"}}))[0]
    assert "tolerations" not in cleared["spec"]["template"]["spec"]


def test_image_registries_from_the_adc_over_the_cluster_annotation() -> None:
    annotation = {"open-cluster-management.io/image-registries": json.dumps(
        {"registries": [{"source": "quay.io/open-cluster-management", "mirror": "cluster.mirror/ocm"}]})}
    assert container(render(template(), None, cluster(annotation)))["image"] == "cluster.mirror/ocm/addon-examples:v1"
    config = adc(registries=[{"source": "quay.io/open-cluster-management", "mirror": "adc.mirror/ocm"}])
    assert container(render(template(), config, cluster(annotation)))["image"] == "adc.mirror/ocm/addon-examples:v1"
    assert override_image([{"mirror": "m.io/"}], "quay.io/a/b:v1") == "m.io/b:v1"
    assert override_image([{"source": "docker.io", "mirror": "m.io"}], "quay.io/a/b:v1") == "quay.io/a/b:v1"


def test_proxy_env_ca_bundle_volume_and_config_map() -> None:
    bundle = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
    config = adc(proxyConfig={"httpProxy": "http://p:3128", "noProxy": "localhost",
                              "caBundle": base64.b64encode(bundle.encode()).decode()},
                 agentInstallNamespace="hello-ns")  # fmt: skip
    manifests = render(template(), config)
    env = container(manifests)["env"]
    assert env[-5:] == [
        {"name": "HTTP_PROXY", "value": "http://p:3128"}, {"name": "http_proxy", "value": "http://p:3128"},
        {"name": "NO_PROXY", "value": "localhost"}, {"name": "no_proxy", "value": "localhost"},
        {"name": "CA_BUNDLE_FILE_PATH", "value": "/managed/proxy-ca/ca-bundle.crt"},
    ]  # fmt: skip
    assert manifests[0]["spec"]["template"]["spec"]["volumes"] == [
        {"name": "proxy-ca-bundle", "configMap": {"name": f"{ADDON}-proxy-ca"}}
    ]
    assert manifests[1] == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": f"{ADDON}-proxy-ca", "namespace": "hello-ns"},
        "data": {"ca-bundle.crt": bundle},
    }  # fmt: skip


def test_resource_requirements_by_container_id_later_items_win() -> None:
    daemonset = copy.deepcopy(deployment())
    daemonset["kind"] = "DaemonSet"
    small = {"requests": {"memory": "32Mi"}}
    large = {"limits": {"memory": "1Gi"}}
    config = adc(resourceRequirements=[
        {"containerID": "*:*:*", "resources": small},
        {"containerID": "deployments:hello-template-agent:helloworld-agent", "resources": large},
    ])  # fmt: skip
    manifests = render(template(deployment(), daemonset), config)
    assert container(manifests, 0)["resources"] == large
    assert container(manifests, 1)["resources"] == small
    with pytest.raises(TemplateError, match="invalid ContainerID: bad"):
        render(template(), adc(resourceRequirements=[{"containerID": "bad", "resources": small}]))


def test_only_apps_deployments_and_daemonsets_are_decorated() -> None:
    pod_like = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
    assert render(template(pod_like)) == [pod_like]


# --- registrations and the MCA status -------------------------------------------------------------------


def test_registrations_in_the_v1alpha1_shape() -> None:
    tpl = template(registration=[
        {"type": "KubeClient", "kubeClient": {"hubPermissions": [{"type": "CurrentCluster"}]}},
        {"type": "CustomSigner", "customSigner": {"signerName": "example.com/signer-name"}},
        {"type": "CustomSigner", "customSigner": {"signerName": "example.com/other",
                                                  "subject": {"user": "u", "groups": ["g"], "organizationUnit": ["o"]}}},
        {"type": "Unknown"},
    ])  # fmt: skip
    user = f"system:open-cluster-management:cluster:{CLUSTER}:addon:{ADDON}:agent:{ADDON}-agent"
    groups = [f"system:open-cluster-management:cluster:{CLUSTER}:addon:{ADDON}", f"system:open-cluster-management:addon:{ADDON}"]
    assert registrations(CLUSTER, ADDON, tpl) == [
        {"signerName": "kubernetes.io/kube-apiserver-client", "subject": {"user": user, "groups": groups}},
        {"signerName": "example.com/signer-name", "subject": {"user": user, "groups": groups}},
        {"signerName": "example.com/other", "subject": {"user": "u", "groups": ["g"], "organizationUnit": ["o"]}},
    ]


def test_registration_namespace() -> None:
    daemonset = {**deployment("ds-ns"), "kind": "DaemonSet"}
    assert registration_namespace(template(daemonset, deployment("dep-ns")), None) == "dep-ns"
    assert registration_namespace(template(daemonset), None) == "ds-ns"
    namespace_only = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    assert registration_namespace(template(namespace_only), None) == "open-cluster-management-agent-addon"
    assert registration_namespace(template(), adc(agentInstallNamespace="over")) == "over"


def test_the_deploy_work_of_a_template_addon() -> None:
    tpl = template(registration=[{"type": "KubeClient"}], manifestConfigs=[
        {"resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "x", "namespace": "default"},
         "feedbackRules": [{"type": "WellKnownStatus"}]}])  # fmt: skip
    config = adc(customizedVariables=[{"name": "LOG_LEVEL", "value": "4"}])
    plan = plan_addon(mca(), cma(), SERVED, {ADC_KEY: config}, None, cluster(), T0, templates={"hello-template-v1": tpl})
    body = plan.work.create
    assert body is not None and plan.work.failure is None
    assert body["metadata"]["name"] == f"addon-{ADDON}-deploy-0"
    assert body["metadata"]["labels"] == {"open-cluster-management.io/addon-name": ADDON}
    assert json.loads(body["metadata"]["annotations"]["open-cluster-management.io/config-spec-hash"]) == {
        "addontemplates.addon.open-cluster-management.io//hello-template-v1": "t-hash",
        "addondeploymentconfigs.addon.open-cluster-management.io/open-cluster-management/deploy-config": "a-hash",
    }
    assert body["spec"]["workload"]["manifests"] == render(tpl, config)
    assert body["spec"]["manifestConfigs"] == [
        {"resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "hello-template-agent",
                                "namespace": "default"},
         "feedbackRules": [{"type": "WellKnownStatus"}]},
        *tpl["spec"]["agentSpec"]["manifestConfigs"],
    ]  # fmt: skip
    assert "deleteOption" not in body["spec"]
    status = plan.status
    assert status is not None and status["namespace"] == "default"
    assert [r["signerName"] for r in status["registrations"]] == ["kubernetes.io/kube-apiserver-client"]


def test_the_work_spec_merges_manifest_configs_leaves_hooks_out_and_orphans_annotated_objects() -> None:
    hook = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "cleanup", "namespace": "default",
            "annotations": {"addon.open-cluster-management.io/addon-pre-delete": ""}}}  # fmt: skip
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {
        "name": "keep", "namespace": "default", "annotations": {"addon.open-cluster-management.io/deletion-orphan": ""}}}
    identifier = {"group": "apps", "resource": "deployments", "name": "hello-template-agent", "namespace": "default"}
    tpl = template(deployment(), hook, policy, manifestConfigs=[{
        "resourceIdentifier": identifier,
        "feedbackRules": [{"type": "WellKnownStatus"},
                          {"type": "JSONPaths", "jsonPaths": [{"name": "ready", "path": ".status.readyReplicas"}]}],
        "updateStrategy": {"type": "ServerSideApply"},
    }])  # fmt: skip
    spec = deploy_work_spec(render(tpl), tpl)
    assert [m["kind"] for m in spec["workload"]["manifests"]] == ["Deployment", "NetworkPolicy"]
    assert spec["manifestConfigs"] == [{
        "resourceIdentifier": identifier,
        "feedbackRules": [{"type": "WellKnownStatus"},
                          {"type": "JSONPaths", "jsonPaths": [{"name": "ready", "path": ".status.readyReplicas"}]}],
        "updateStrategy": {"type": "ServerSideApply"},
    }]  # fmt: skip
    assert spec["deleteOption"] == {"propagationPolicy": "SelectivelyOrphan", "selectivelyOrphans": {"orphaningRules": [
        {"group": "networking.k8s.io", "resource": "networkpolicies", "name": "keep", "namespace": "default"}]}}
    assert [guess_resource(k) for k in ("Deployment", "Ingress", "NetworkPolicy", "")] == [
        "deployments", "ingresses", "networkpolicies", ""]


def test_no_render_before_configured() -> None:
    plan = plan_deploy_work(mca(configured=False), cma(), SERVED, {ADC_KEY: adc()}, None,
                            templates={"hello-template-v1": template()})  # fmt: skip
    assert plan.waiting == "waiting for the Configured condition" and plan.create is None


def test_a_missing_template_is_manifest_applied_false() -> None:
    plan = plan_addon(mca(), cma(), SERVED, {ADC_KEY: adc()}, None, cluster(), T0, templates={})
    assert plan.work.create is None
    assert plan.work.failure == (
        'failed to get manifest from agent interface: addontemplate.addon.open-cluster-management.io '
        '"hello-template-v1" not found'
    )
    assert plan.status is not None
    applied = find_condition(plan.status["conditions"], "ManifestApplied")
    assert applied is not None and (applied["status"], applied["reason"]) == ("False", "ManifestWorkApplyFailed")
    assert "registrations" not in plan.status
    # An unclosed tag (the JSON's own "}}" would close it: the last value is a string here).
    unclosed = template({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "note": "{{X"})
    failed = plan_deploy_work(mca(), cma(), SERVED, {ADC_KEY: adc()}, None, templates={"hello-template-v1": unclosed})
    assert failed.failure is not None and "Cannot find end tag" in failed.failure


def test_a_new_desired_template_renders_again_and_a_status_pass_keeps_registrations() -> None:
    templates = {"hello-template-v1": template(registration=[{"type": "KubeClient"}])}
    first = plan_deploy_work(mca(), cma(), SERVED, {ADC_KEY: adc()}, None, templates=templates)
    assert first.create is not None
    work = {**first.create, "metadata": {**first.create["metadata"], "generation": 1}}
    same = plan_deploy_work(mca(), cma(), SERVED, {ADC_KEY: adc()}, work, templates=templates)
    assert same.patch is None and same.create is None
    moved = plan_deploy_work(mca(template_hash="t-hash-2"), cma(), SERVED, {ADC_KEY: adc()}, work, templates=templates)
    assert moved.patch is not None and "t-hash-2" in moved.patch["metadata"]["annotations"][
        "open-cluster-management.io/config-spec-hash"]
    status = addon_status(mca(), cma(), SERVED, work, cluster(), T0, templates=templates)
    assert status is not None and len(status["registrations"]) == 1


def test_the_index_finds_the_addons_of_a_template() -> None:
    index = AddonIndex()
    index.update(mca())
    assert index.using_template("hello-template-v1") == [(CLUSTER, ADDON)]
    moved = mca()
    moved["status"]["configReferences"][0]["desiredConfig"]["name"] = "hello-template-v2"
    index.update(moved)
    assert index.using_template("hello-template-v1") == []
    assert index.using_template("hello-template-v2") == [(CLUSTER, ADDON)]
    index.remove(moved)
    assert index.using_template("hello-template-v2") == []
