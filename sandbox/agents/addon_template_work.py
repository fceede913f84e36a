"""The deploy work's spec of a template add-on, as OCM's add-on framework builds it from the rendered
manifests (addon-framework ``pkg/addonmanager/controllers/agentdeploy/utils.go``, pure)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ocm_rollout.sandbox.agents.addon_template_render import workload_resource


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


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
        resource = workload_resource(obj)
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
