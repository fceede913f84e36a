"""Template add-ons: the agent of an add-on rendered from an AddOnTemplate, as OCM's template agent
(``pkg/addon/templateagent/`` in OCM's repository) renders it (pure: no I/O).

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

import base64
import binascii
import copy
import json
import re
from collections.abc import Mapping, Sequence
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


def _registrations(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
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


# --- substitution --------------------------------------------------------------------------------------


def substitute(text: str, variables: Mapping[str, str]) -> str:
    """fasttemplate's ``ExecuteString`` with ``{{``/``}}``: every tag (verbatim, spaces included)
    replaced by its value, "" when it has none; an unclosed ``{{`` is an error."""
    out: list[str] = []
    rest = text
    while True:
        start = rest.find("{{")
        if start < 0:
            out.append(rest)
            return "".join(out)
        out.append(rest[:start])
        rest = rest[start + 2 :]
        end = rest.find("}}")
        if end < 0:
            raise TemplateError(f'Cannot find end tag="}}}}" in the template={text!r} starting from {rest!r}')
        out.append(variables.get(rest[:end], ""))
        rest = rest[end + 2 :]


# --- decorations ---------------------------------------------------------------------------------------


def _workload_resource(obj: Mapping[str, Any]) -> str | None:
    """"deployments" / "daemonsets" for an apps Deployment / DaemonSet, else None."""
    if _text(obj.get("apiVersion")).split("/")[0] != "apps":
        return None
    return {"Deployment": "deployments", "DaemonSet": "daemonsets"}.get(_text(obj.get("kind")))


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    return [c for c in spec.get("containers") or () if isinstance(c, dict)]


def _add_env(pod: dict[str, Any], pairs: Sequence[tuple[str, str]]) -> None:
    if not pairs:
        return
    for container in _containers(pod):
        container["env"] = [*(container.get("env") or []), *({"name": n, "value": v} for n, v in pairs)]


def _add_volumes(pod: dict[str, Any], mounts: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> None:
    if not mounts or not volumes:
        return
    for container in _containers(pod):
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), *copy.deepcopy(mounts)]
    spec = pod["spec"]
    spec["volumes"] = [*(spec.get("volumes") or []), *volumes]


def hub_kubeconfig_secret_name(addon: str) -> str:
    return f"{addon}-hub-kubeconfig"


def custom_signed_secret_name(addon: str, signer: str) -> str:
    return f"{addon}-{signer.replace('/', '-')}-client-cert"


def _registration_volumes(addon: str, template: Mapping[str, Any], pod: dict[str, Any]) -> None:
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    for registration in _registrations(template):
        if registration.get("type") == KUBE_CLIENT:
            mounts.append({"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_MOUNT_PATH})
            volumes.append({"name": "hub-kubeconfig", "secret": {"secretName": hub_kubeconfig_secret_name(addon)}})
        if registration.get("type") == CUSTOM_SIGNER:
            signer_config = registration.get("customSigner")
            if not isinstance(signer_config, Mapping):
                raise TemplateError("custom signer is nil")
            signer = _text(signer_config.get("signerName"))
            name = "cert-" + signer.replace("/", "-").replace(".", "-")
            mounts.append({"name": name, "mountPath": f"/managed/{signer.replace('/', '-')}"})
            volumes.append({"name": name, "secret": {"secretName": custom_signed_secret_name(addon, signer)}})
    _add_volumes(pod, mounts, volumes)


def _node_placement(private: Mapping[str, Any], pod: dict[str, Any]) -> None:
    placement = private.get(NODE_PLACEMENT_KEY)
    if not isinstance(placement, Mapping) or placement.get("nodeSelector") is None:
        return  # OCM sets the tolerations only together with a nodeSelector
    spec = pod["spec"]
    for key in ("nodeSelector", "tolerations"):
        value = placement.get(key)
        if value:
            spec[key] = copy.deepcopy(value)
        else:
            spec.pop(key, None)


def override_image(registries: Sequence[Mapping[str, Any]], image: str) -> str:
    """addonfactory ``OverrideImage``: the last mirror whose source prefixes the image wins."""
    result = image
    for registry in registries:
        source = _text(registry.get("source")).rstrip("/")
        mirror = _text(registry.get("mirror")).rstrip("/")
        if not source:
            tail = image.split("/")[-1]
            name = f"{mirror}/{tail}" if mirror else tail
        elif not image.startswith(source):
            name = image
        else:
            name = mirror + image[len(source) :]
        if name != image:
            result = name
    return result


def _images(private: Mapping[str, Any], pod: dict[str, Any]) -> None:
    registries = private.get(REGISTRIES_KEY)
    if registries is None:
        return
    mirrors = [r for r in registries if isinstance(r, Mapping)]
    for container in _containers(pod):
        container["image"] = override_image(mirrors, _text(container.get("image")))


def proxy_ca_config_map_name(addon: str) -> str:
    return f"{addon}-proxy-ca"


def _ca_bundle(proxy: Mapping[str, Any]) -> str:
    raw = _text(proxy.get("caBundle"))
    try:  # []byte in the API: base64 on the wire
        return base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return raw


def _proxy(addon: str, private: Mapping[str, Any], pod: dict[str, Any]) -> None:
    proxy = private.get(PROXY_KEY)
    if not isinstance(proxy, Mapping):
        return
    pairs: list[tuple[str, str]] = []
    for key, env in (("httpProxy", "HTTP_PROXY"), ("httpsProxy", "HTTPS_PROXY"), ("noProxy", "NO_PROXY")):
        value = _text(proxy.get(key))
        if value:
            pairs += [(env, value), (env.lower(), value)]
    if not pairs:
        return
    _add_env(pod, pairs)
    if not _text(proxy.get("caBundle")):
        return
    _add_env(pod, [("CA_BUNDLE_FILE_PATH", f"{PROXY_CA_MOUNT_PATH}/{PROXY_CA_DATA_KEY}")])
    _add_volumes(
        pod,
        [{"name": "proxy-ca-bundle", "mountPath": PROXY_CA_MOUNT_PATH}],
        [{"name": "proxy-ca-bundle", "configMap": {"name": proxy_ca_config_map_name(addon)}}],
    )


def _resources(resource: str, name: str, private: Mapping[str, Any], pod: dict[str, Any]) -> None:
    requirements = private.get(RESOURCE_REQUIREMENTS_KEY)
    if not requirements:
        return
    for container in _containers(pod):
        container_id = f"{resource}:{name}:{_text(container.get('name'))}"
        for pattern, resources in reversed(requirements):  # later items win
            try:
                matched = re.search(pattern, container_id) is not None
            except re.error:
                continue
            if matched:
                container["resources"] = copy.deepcopy(resources)
                break


def _decorate_workload(
    addon: str, template: Mapping[str, Any], values: TemplateValues, obj: dict[str, Any]
) -> None:
    resource = _workload_resource(obj)
    if resource is None:
        return
    spec = obj.setdefault("spec", {})
    pod = spec.setdefault("template", {})
    if not isinstance(pod, dict):
        raise TemplateError(f"{obj.get('kind')} has an invalid pod template")
    pod.setdefault("spec", {})
    name = _text((obj.get("metadata") or {}).get("name"))
    _add_env(pod, values.preset)
    _registration_volumes(addon, template, pod)
    _node_placement(values.private, pod)
    _images(values.private, pod)
    _proxy(addon, values.private, pod)
    _resources(resource, name, values.private, pod)


_NAMESPACE_PATHS = {
    "ClusterRoleBinding": ("subjects", "namespace"),
    "RoleBinding": ("subjects", "namespace"),
    "Namespace": ("metadata", "name"),
}


def _set_nested(obj: Any, value: str, path: Sequence[str]) -> None:
    if isinstance(obj, list):
        for item in obj:
            _set_nested(item, value, path)
    elif isinstance(obj, dict):
        if len(path) == 1:
            obj[path[0]] = value
            return
        if path[0] not in obj:
            raise TemplateError(f"failed to find field {path[0]}")
        _set_nested(obj[path[0]], value, path[1:])


def _decorate_namespace(values: TemplateValues, obj: dict[str, Any]) -> None:
    namespace = values.private.get(INSTALL_NAMESPACE_KEY)
    if not isinstance(namespace, str) or not namespace:
        return
    meta = obj.get("metadata")
    if isinstance(meta, dict) and _text(meta.get("namespace")):
        meta["namespace"] = namespace
    path = _NAMESPACE_PATHS.get(_text(obj.get("kind")))
    if path is not None:
        _set_nested(obj, namespace, path)


def render_manifests(
    addon: str,
    cluster_name: str,
    cluster: Mapping[str, Any] | None,
    template: Mapping[str, Any],
    deployment_config: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """The deploy work's manifests (template_agent.go ``renderObjects``), or TemplateError."""
    values = template_values(cluster_name, cluster, template, deployment_config)
    manifests = ((_spec(template).get("agentSpec") or {}).get("workload") or {}).get("manifests") or ()
    out: list[dict[str, Any]] = []
    for manifest in manifests:
        rendered = substitute(json.dumps(manifest, separators=(",", ":")), values.variables)
        try:
            obj = json.loads(rendered)
        except ValueError as exc:
            raise TemplateError(str(exc)) from exc
        if not isinstance(obj, dict):
            raise TemplateError(f"a manifest is not an object: {rendered}")
        _decorate_workload(addon, template, values, obj)
        _decorate_namespace(values, obj)
        out.append(obj)
    proxy = values.private.get(PROXY_KEY)
    if isinstance(proxy, Mapping) and _text(proxy.get("caBundle")):
        config_map: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": proxy_ca_config_map_name(addon), "namespace": names.DEFAULT_ADDON_INSTALL_NAMESPACE},
            "data": {PROXY_CA_DATA_KEY: _ca_bundle(proxy)},
        }
        _decorate_namespace(values, config_map)
        out.append(config_map)
    return out


# --- the deploy work's spec (the framework's agentdeploy utils.go) --------------------------------------

PRE_DELETE_HOOK_KEY = "addon.open-cluster-management.io/addon-pre-delete"
DELETION_ORPHAN_KEY = "addon.open-cluster-management.io/deletion-orphan"


def _meta_map(obj: Mapping[str, Any], field_name: str) -> Mapping[str, Any]:
    found = (obj.get("metadata") or {}).get(field_name)
    return found if isinstance(found, Mapping) else {}


def is_pre_delete_hook(obj: Mapping[str, Any]) -> bool:
    """A Job or Pod labelled or annotated as the add-on's pre-delete hook (``isPreDeleteHookObject``):
    it belongs to the pre-delete work, not the deploy work."""
    if obj.get("kind") not in ("Job", "Pod"):
        return False
    return PRE_DELETE_HOOK_KEY in _meta_map(obj, "labels") or PRE_DELETE_HOOK_KEY in _meta_map(obj, "annotations")


def guess_resource(kind: str) -> str:
    """apimachinery's ``UnsafeGuessKindToResource``."""
    singular = kind.lower()
    if not singular:
        return ""
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


def _group(obj: Mapping[str, Any]) -> str:
    api_version = _text(obj.get("apiVersion"))
    return api_version.split("/")[0] if "/" in api_version else ""


def _identifier(obj: Mapping[str, Any], resource: str) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"group": _group(obj), "resource": resource, "name": _text(meta.get("name")),
            "namespace": _text(meta.get("namespace"))}  # fmt: skip


def _same_identifier(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(_text(a.get(k)) == _text(b.get(k)) for k in ("group", "resource", "name", "namespace"))


def _merge_rule(rules: list[dict[str, Any]], rule: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``mergeFeedbackRule``: a WellKnownStatus rule once; JSONPaths not already named."""
    if rule.get("type") == "WellKnownStatus":
        if any(r.get("type") == "WellKnownStatus" for r in rules):
            return rules
        return [*rules, copy.deepcopy(dict(rule))]
    if rule.get("type") == "JSONPaths":
        known = {_text(p.get("name")) for r in rules if r.get("type") == "JSONPaths" for p in r.get("jsonPaths") or ()}
        paths = [copy.deepcopy(p) for p in rule.get("jsonPaths") or () if _text(p.get("name")) not in known]
        if paths:
            return [*rules, {"type": "JSONPaths", "jsonPaths": paths}]
    return rules


def manifest_configs(manifests: Sequence[Mapping[str, Any]], template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The deploy work's ``manifestConfigs`` (``getManifestConfigOption`` with the template agent's
    WorkloadAvailability prober): WellKnownStatus feedback for every Deployment and DaemonSet, then
    the template's ``agentSpec.manifestConfigs`` merged in by resource identifier."""
    configs: list[dict[str, Any]] = []
    for obj in manifests:
        resource = _workload_resource(obj)
        if resource is not None:
            configs.append({"resourceIdentifier": _identifier(obj, resource), "feedbackRules": [{"type": "WellKnownStatus"}]})
    for item in (_spec(template).get("agentSpec") or {}).get("manifestConfigs") or ():
        if not isinstance(item, Mapping):
            continue
        identifier = item.get("resourceIdentifier") or {}
        index = next((i for i, c in enumerate(configs) if _same_identifier(c["resourceIdentifier"], identifier)), -1)
        if index < 0:
            configs.append(copy.deepcopy(dict(item)))
            continue
        for rule in item.get("feedbackRules") or ():
            configs[index]["feedbackRules"] = _merge_rule(configs[index]["feedbackRules"], rule)
        if item.get("updateStrategy") is not None:
            configs[index]["updateStrategy"] = copy.deepcopy(item["updateStrategy"])
    return configs


def deploy_work_spec(manifests: Sequence[Mapping[str, Any]], template: Mapping[str, Any]) -> dict[str, Any]:
    """The deploy work's spec from the rendered manifests (``BuildDeployWorks``): pre-delete hooks
    left out, ``manifestConfigs``, and a SelectivelyOrphan ``deleteOption`` for the manifests
    annotated ``addon.open-cluster-management.io/deletion-orphan``."""
    deploy = [dict(m) for m in manifests if not is_pre_delete_hook(m)]
    spec: dict[str, Any] = {"workload": {"manifests": deploy}}
    configs = manifest_configs(deploy, template)
    if configs:
        spec["manifestConfigs"] = configs
    orphans = [
        _identifier(m, guess_resource(_text(m.get("kind"))))
        for m in deploy
        if DELETION_ORPHAN_KEY in _meta_map(m, "annotations")
    ]
    if orphans:
        spec["deleteOption"] = {"propagationPolicy": "SelectivelyOrphan", "selectivelyOrphans": {"orphaningRules": orphans}}
    return spec


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
    for registration in _registrations(template):
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
        resource = _workload_resource(manifest)
        namespace = _text((manifest.get("metadata") or {}).get("namespace"))
        if resource == "deployments":
            deployment_ns = namespace
            break  # OCM stops at the first Deployment, even one without a namespace
        if resource == "daemonsets" and not daemonset_ns:
            daemonset_ns = namespace
    return deployment_ns or daemonset_ns or names.DEFAULT_ADDON_INSTALL_NAMESPACE
