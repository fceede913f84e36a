"""The manifests of a simulated add-on agent (pure: no I/O).

What a per-addon manager would render into its deploy ManifestWork: the agent's install
Namespace and a Deployment. The Deployment carries what the agent is configured with, so the
work's spec (and so its ``metadata.generation``) changes when, and only when, that changes:

- the desired config spec hashes, as one pod-template annotation (sorted JSON);
- the AddOnDeploymentConfig's ``customizedVariables`` as container env (in the config's order)
  and its ``nodePlacement`` as the pod's nodeSelector and tolerations.

The install namespace is the AddOnDeploymentConfig's ``agentInstallNamespace`` when set, else the
ManagedClusterAddOn's v1alpha1 ``spec.installNamespace`` (or the v1beta1 annotation carrying it),
else ``open-cluster-management-agent-addon``. Nothing here depends on time or on map ordering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.sandbox.agents import names

# Pod-template annotation holding the desired config hashes the agent runs with.
AGENT_CONFIG_HASH_ANNOTATION = "addon.ocm-rollout.io/config-spec-hash"
AGENT_IMAGE_REGISTRY = "registry.ocm-rollout.local/addons"


@dataclass(frozen=True)
class AgentValues:
    """What an add-on agent is configured with."""

    install_namespace: str = names.DEFAULT_ADDON_INSTALL_NAMESPACE
    variables: tuple[tuple[str, str | None], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def install_namespace(mca: Mapping[str, Any], deployment_config: Mapping[str, Any] | None) -> str:
    """Where the agent is installed on the managed cluster (see the module docstring)."""
    from_config = _text(((deployment_config or {}).get("spec") or {}).get("agentInstallNamespace"))
    if from_config:
        return from_config
    from_spec = _text((mca.get("spec") or {}).get("installNamespace"))
    if from_spec:
        return from_spec
    annotations = (mca.get("metadata") or {}).get("annotations") or {}
    from_annotation = _text(annotations.get(names.V1ALPHA1_INSTALL_NAMESPACE_ANNOTATION))
    return from_annotation or names.DEFAULT_ADDON_INSTALL_NAMESPACE


def agent_values(mca: Mapping[str, Any], deployment_config: Mapping[str, Any] | None) -> AgentValues:
    """The values an AddOnDeploymentConfig (or none) gives the agent of ``mca``."""
    spec = (deployment_config or {}).get("spec") or {}
    variables: list[tuple[str, str | None]] = []
    for item in spec.get("customizedVariables") or ():
        if isinstance(item, Mapping) and _text(item.get("name")):
            value = item.get("value")
            variables.append((str(item["name"]), value if isinstance(value, str) else None))
    placement = spec.get("nodePlacement") or {}
    selector = placement.get("nodeSelector") or {}
    tolerations = [dict(t) for t in placement.get("tolerations") or () if isinstance(t, Mapping)]
    return AgentValues(
        install_namespace=install_namespace(mca, deployment_config),
        variables=tuple(variables),
        node_selector={str(k): str(v) for k, v in sorted(selector.items())} if isinstance(selector, Mapping) else {},
        tolerations=tuple(tolerations),
    )


def agent_name(addon: str) -> str:
    return f"{addon}-agent"


def _env(variables: Sequence[tuple[str, str | None]]) -> list[dict[str, str]]:
    env: list[dict[str, str]] = []
    for name, value in variables:
        entry = {"name": name}
        if value is not None:
            entry["value"] = value
        env.append(entry)
    return env


def agent_manifests(addon: str, values: AgentValues, config_hashes: str | None) -> list[dict[str, Any]]:
    """The Namespace and Deployment of the agent; ``config_hashes`` is the JSON of the desired
    config hashes (None: the add-on has no configs)."""
    name = agent_name(addon)
    labels = {"app": name, names.ADDON_NAME_LABEL: addon}
    container: dict[str, Any] = {"name": "agent", "image": f"{AGENT_IMAGE_REGISTRY}/{name}:latest"}
    env = _env(values.variables)
    if env:
        container["env"] = env
    pod_spec: dict[str, Any] = {"containers": [container]}
    if values.node_selector:
        pod_spec["nodeSelector"] = dict(values.node_selector)
    if values.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in values.tolerations]
    template_meta: dict[str, Any] = {"labels": {"app": name}}
    if config_hashes is not None:
        template_meta["annotations"] = {AGENT_CONFIG_HASH_ANNOTATION: config_hashes}
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": values.install_namespace},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": values.install_namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }
    return [namespace, deployment]


def manifests_install_namespace(manifests: Sequence[Any]) -> str | None:
    """The install namespace of rendered agent manifests (the Namespace manifest's name)."""
    for manifest in manifests:
        if isinstance(manifest, Mapping) and manifest.get("kind") == "Namespace" and manifest.get("apiVersion") == "v1":
            name = _text((manifest.get("metadata") or {}).get("name"))
            if name:
                return name
    return None
