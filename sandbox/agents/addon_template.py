"""Template add-ons: the agent of an add-on rendered from an AddOnTemplate, as OCM's template agent
(``pkg/addon/templateagent/`` in OCM's repository) renders it (pure: no I/O). This module: which
add-ons and which template, the values, the registrations; the rendering is
``addon_template_render``, the deploy work's spec ``addon_template_work``.

- An add-on is a template add-on when its ClusterManagementAddOn's ``spec.supportedConfigs`` has an
  ``addon.open-cluster-management.io/addontemplates`` item (with or without a default: OCM's
  ``SupportAddOnTemplate``, common.go, looks at the v1beta1 ``defaultConfigs``, to which every
  v1alpha1 supportedConfigs item converts).
- The template of an MCA is the first ``status.configReferences`` item of that type: its
  ``desiredConfig`` names it (without a spec hash the render fails, template_agent.go
  ``getDesiredAddOnTemplateInner``; the object is read by name, the hash is not compared).
- Variables (values.go): each manifest's JSON is a ``{{``/``}}`` template (fasttemplate, tags taken
  verbatim, an unknown tag renders as "", a ``{{`` without ``}}`` cannot be parsed). The values,
  later ones winning: ``HUB_KUBECONFIG`` = ``/managed/hub-kubeconfig/kubeconfig`` when the template
  has ``spec.registration``; the AddOnDeploymentConfig's ``customizedVariables``; then the built-in
  ``CLUSTER_NAME`` (the cluster's name) and ``INSTALL_NAMESPACE`` (only when the ADC sets
  ``agentInstallNamespace``). The ADC's ``nodePlacement``, ``registries`` (over the cluster's
  ``open-cluster-management.io/image-registries`` annotation), ``agentInstallNamespace``,
  ``proxyConfig`` and ``resourceRequirements`` are private values used by the decorations only.
- Decorations (decorator.go), for every Deployment and DaemonSet (group ``apps``) in order: env
  ``HUB_KUBECONFIG`` (if set), ``CLUSTER_NAME``, ``INSTALL_NAMESPACE`` (if set) appended to each
  container; the hub-kubeconfig / custom-signer secret volumes of the registrations; the node
  selector and tolerations (only when the placement has a nodeSelector); image mirrors; proxy env
  and CA bundle volume; resource requirements by ``<resource>:<name>:<container>``. Then, on every
  object, the install namespace (namespaced objects, Namespace names, (Cluster)RoleBinding subjects);
  with a proxy CA bundle a ConfigMap ``<addon>-proxy-ca`` is added.
- Registrations (registration.go ``TemplateCSRConfigurationsFunc``, written in the v1alpha1 shape):
  ``KubeClient`` -> signer ``kubernetes.io/kube-apiserver-client`` with the default agent user and
  groups; ``CustomSigner`` -> its signer with its subject, or the defaults without one.
- The MCA's ``status.namespace`` (template_agent.go ``TemplateAgentRegistrationNamespaceFunc``): the
  namespace of the template's first Deployment, else first DaemonSet, else
  ``open-cluster-management-agent-addon``; the ADC's ``agentInstallNamespace`` over all.

Errors are ``TemplateError`` with OCM's words; the framework turns them into ManifestApplied False.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.sandbox.agents import names

ADDON_TEMPLATES = "addontemplates"
TEMPLATE_GROUP_RESOURCE = (names.ADDON_GROUP, ADDON_TEMPLATES)
KUBE_CLIENT = "KubeClient"
CUSTOM_SIGNER = "CustomSigner"
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
HUB_KUBECONFIG_PATH = "/managed/hub-kubeconfig/kubeconfig"
HUB_KUBECONFIG_MOUNT_PATH = "/managed/hub-kubeconfig"
PROXY_CA_MOUNT_PATH = "/managed/proxy-ca"
PROXY_CA_DATA_KEY = "ca-bundle.crt"
IMAGE_REGISTRIES_ANNOTATION = "open-cluster-management.io/image-registries"
# Variable names (values.go).
CLUSTER_NAME = "CLUSTER_NAME"
INSTALL_NAMESPACE = "INSTALL_NAMESPACE"
HUB_KUBECONFIG = "HUB_KUBECONFIG"
# Private value keys (template_agent.go): an ADC customized variable of such a name is not a variable.
NODE_PLACEMENT_KEY = "__NODE_PLACEMENT"
REGISTRIES_KEY = "__REGISTRIES"
INSTALL_NAMESPACE_KEY = "__INSTALL_NAMESPACE"
PROXY_KEY = "__PROXY"
RESOURCE_REQUIREMENTS_KEY = "__RESOURCE_REQUIREMENTS"
PRIVATE_KEYS = frozenset({NODE_PLACEMENT_KEY, REGISTRIES_KEY, INSTALL_NAMESPACE_KEY, PROXY_KEY, RESOURCE_REQUIREMENTS_KEY})


class TemplateError(Exception):
    """The template agent cannot render (OCM's error text)."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


# --- which template --------------------------------------------------------------------------------


def is_template_addon(cma: Mapping[str, Any]) -> bool:
    """The CMA's supportedConfigs name the addontemplates type (OCM's ``SupportAddOnTemplate``)."""
    return any(
        isinstance(item, Mapping) and (_text(item.get("group")), _text(item.get("resource"))) == TEMPLATE_GROUP_RESOURCE
        for item in _spec(cma).get("supportedConfigs") or ()
    )


@dataclass(frozen=True)
class TemplateRef:
    name: str
    spec_hash: str


def template_reference(mca: Mapping[str, Any]) -> TemplateRef | None:
    """The desired template of the first addontemplates configReferences item (None: no item;
    name and hash "" when it has no desiredConfig)."""
    for ref in (mca.get("status") or {}).get("configReferences") or ():
        if not isinstance(ref, Mapping):
            continue
        if (_text(ref.get("group")), _text(ref.get("resource"))) != TEMPLATE_GROUP_RESOURCE:
            continue
        desired = ref.get("desiredConfig")
        desired = desired if isinstance(desired, Mapping) else {}
        return TemplateRef(_text(desired.get("name")), _text(desired.get("specHash")))
    return None


def desired_template(mca: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The AddOnTemplate ``mca`` runs with (``templates`` by name), or TemplateError as OCM says it."""
    meta = mca.get("metadata") or {}
    addon, cluster = _text(meta.get("name")), _text(meta.get("namespace"))
    ref = template_reference(mca)
    if ref is None:
        raise TemplateError(f"addon {cluster}/{addon} template not found in status")
    if not ref.spec_hash:
        raise TemplateError(f"addon {addon} template desired spec hash is empty")
    template = templates.get(ref.name)
    if template is None:
        raise TemplateError(f'addontemplate.{names.ADDON_GROUP} "{ref.name}" not found')
    return template


# --- values ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateValues:
    """``variables``: the substitution map; ``preset``: the env every workload container gets, in
    order; ``private``: the decorations' inputs by private key."""

    variables: Mapping[str, str]
    preset: tuple[tuple[str, str], ...]
    private: Mapping[str, Any] = field(default_factory=dict)


def template_registrations(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in _spec(template).get("registration") or () if isinstance(r, Mapping)]


def _cluster_registries(cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    annotations = ((cluster or {}).get("metadata") or {}).get("annotations") or {}
    raw = _text(annotations.get(IMAGE_REGISTRIES_ANNOTATION))
    if not raw:
        return {}
    try:
        registries = (json.loads(raw) or {}).get("registries") or []
    except (ValueError, AttributeError) as exc:
        raise TemplateError(f"invalid {IMAGE_REGISTRIES_ANNOTATION} annotation: {exc}") from exc
    return {REGISTRIES_KEY: list(registries)} if registries else {}


def _container_regex(container_id: str) -> str:
    parts = container_id.split(":")
    if len(parts) != 3:
        raise TemplateError(f"invalid ContainerID: {container_id}")
    parts = [".+" if part == "*" else part for part in parts]
    return f"^{parts[0]}:{parts[1]}:{parts[2]}$"


def _config_values(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """What OCM's ``GetAddOnDeploymentConfigValues`` with the template agent's functions makes of
    the AddOnDeploymentConfig (controllers/addontemplate/controller.go)."""
    if config is None:
        return {}
    spec = _spec(config)
    values: dict[str, Any] = {}
    for item in spec.get("customizedVariables") or ():
        if isinstance(item, Mapping) and _text(item.get("name")):
            values[item["name"]] = _text(item.get("value"))
    if spec.get("nodePlacement") is not None:
        values[NODE_PLACEMENT_KEY] = spec["nodePlacement"]
    if spec.get("registries") is not None:
        values[REGISTRIES_KEY] = list(spec["registries"])
    if _text(spec.get("agentInstallNamespace")):
        values[INSTALL_NAMESPACE_KEY] = spec["agentInstallNamespace"]
    proxy = spec.get("proxyConfig") or {}
    if any(_text(proxy.get(k)) for k in ("httpProxy", "httpsProxy", "noProxy", "caBundle")):
        values[PROXY_KEY] = dict(proxy)
    requirements = spec.get("resourceRequirements")
    if requirements is not None:
        values[RESOURCE_REQUIREMENTS_KEY] = [
            (_container_regex(_text(item.get("containerID"))), item.get("resources") or {})
            for item in requirements
            if isinstance(item, Mapping)
        ]
    return values


def template_values(
    cluster_name: str,
    cluster: Mapping[str, Any] | None,
    template: Mapping[str, Any],
    deployment_config: Mapping[str, Any] | None,
) -> TemplateValues:
    """The template agent's values (values.go ``getValues``)."""
    defaults: dict[str, str] = {}
    if _spec(template).get("registration") is not None:
        defaults[HUB_KUBECONFIG] = HUB_KUBECONFIG_PATH
    variables: dict[str, Any] = dict(defaults)
    private: dict[str, Any] = {}
    for source in (_cluster_registries(cluster), _config_values(deployment_config)):
        for key, value in source.items():
            if key in PRIVATE_KEYS:
                private[key] = value
            else:
                variables[key] = value
    builtin: dict[str, str] = {CLUSTER_NAME: cluster_name}
    namespace = private.get(INSTALL_NAMESPACE_KEY)
    if isinstance(namespace, str) and namespace:
        builtin[INSTALL_NAMESPACE] = namespace
    variables.update(builtin)
    for key, value in variables.items():
        if not isinstance(value, str):
            raise TemplateError(f"only support string type for variables, invalid key {key}")
    keys = [*sorted(defaults), *sorted(builtin)]
    return TemplateValues(variables, tuple((key, variables[key]) for key in keys), private)


# --- registration ------------------------------------------------------------------------------------


def default_user(cluster: str, addon: str) -> str:
    return f"system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:{addon}-agent"


def default_groups(cluster: str, addon: str) -> list[str]:
    return [
        f"system:open-cluster-management:cluster:{cluster}:addon:{addon}",
        f"system:open-cluster-management:addon:{addon}",
    ]


def registrations(cluster: str, addon: str, template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The MCA's v1alpha1 ``status.registrations`` from the template's ``spec.registration``."""
    out: list[dict[str, Any]] = []
    for registration in template_registrations(template):
        kind = registration.get("type")
        subject: dict[str, Any] = {"user": default_user(cluster, addon), "groups": default_groups(cluster, addon)}
        if kind == KUBE_CLIENT:
            out.append({"signerName": KUBE_APISERVER_CLIENT_SIGNER, "subject": subject})
        elif kind == CUSTOM_SIGNER:
            signer = registration.get("customSigner")
            if not isinstance(signer, Mapping):
                continue
            given = signer.get("subject")
            if isinstance(given, Mapping):
                subject = {k: copy.deepcopy(given[k]) for k in ("user", "groups", "organizationUnit") if given.get(k)}
            out.append({"signerName": _text(signer.get("signerName")), "subject": subject})
    return out


def _workload_kind(obj: Mapping[str, Any]) -> str | None:
    if _text(obj.get("apiVersion")).split("/")[0] != "apps":
        return None
    return {"Deployment": "deployments", "DaemonSet": "daemonsets"}.get(_text(obj.get("kind")))


def registration_namespace(template: Mapping[str, Any], deployment_config: Mapping[str, Any] | None) -> str:
    """The MCA's ``status.namespace`` (see the module docstring)."""
    override = _text(_spec(deployment_config).get("agentInstallNamespace"))
    if override:
        return override
    deployment_ns = daemonset_ns = ""
    manifests = ((_spec(template).get("agentSpec") or {}).get("workload") or {}).get("manifests") or ()
    for manifest in manifests:
        if not isinstance(manifest, Mapping):
            continue
        resource = _workload_kind(manifest)
        namespace = _text((manifest.get("metadata") or {}).get("namespace"))
        if resource == "deployments":
            deployment_ns = namespace
            break  # OCM stops at the first Deployment, even one without a namespace
        if resource == "daemonsets" and not daemonset_ns:
            daemonset_ns = namespace
    return deployment_ns or daemonset_ns or names.DEFAULT_ADDON_INSTALL_NAMESPACE
