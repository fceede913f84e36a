"""Rendering an AddOnTemplate's manifests (pure): variable substitution and the decorations of OCM's
template agent (``pkg/addon/templateagent/template_agent.go`` ``renderObjects``, decorator.go); see
``addon_template`` for what the values are."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.addon_template import (
    CUSTOM_SIGNER,
    HUB_KUBECONFIG_MOUNT_PATH,
    INSTALL_NAMESPACE_KEY,
    KUBE_CLIENT,
    NODE_PLACEMENT_KEY,
    PROXY_CA_DATA_KEY,
    PROXY_CA_MOUNT_PATH,
    PROXY_KEY,
    REGISTRIES_KEY,
    RESOURCE_REQUIREMENTS_KEY,
    TemplateError,
    TemplateValues,
    template_registrations,
    template_values,
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


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


def workload_resource(obj: Mapping[str, Any]) -> str | None:
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
    for registration in template_registrations(template):
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
    resource = workload_resource(obj)
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
