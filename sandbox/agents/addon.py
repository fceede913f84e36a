"""What the simulated framework of an add-on writes for one ManagedClusterAddOn (pure: no I/O,
``now`` is an argument).

On a real hub each add-on's own manager (OCM's addon-framework) renders the agent into
ManifestWorks and reports on the ManagedClusterAddOn (MCA); the local hub stands in for it. For an
MCA of a registered add-on (a ClusterManagementAddOn, CMA, of the same name):

- ``status.supportedConfigs``: the CMA's ``spec.supportedConfigs`` group/resource pairs that the
  hub serves (a config kind without an API on the hub cannot be read, so it is not supported);
- the deploy work ``addon-<addon>-deploy-0`` in the cluster namespace, labelled
  ``open-cluster-management.io/addon-name``, owned by the MCA (controller reference), annotated
  ``open-cluster-management.io/config-spec-hash`` with the JSON map
  ``{"<resource>[.<group>]/<namespace>/<name>": "<specHash>"}`` of the MCA's
  ``status.configReferences[].desiredConfig`` (as the framework's ``ConfigsToMap``: an item without
  a desiredConfig is left out, an empty hash is kept as ``""``; no annotation when there are no
  configReferences). Its manifests are the agent (``addon_agent``); a template add-on's are
  rendered from its AddOnTemplate (``addon_template``), once its ``Configured`` is True, with
  ``manifestConfigs`` and ``deleteOption`` as the framework builds them, and its MCA gets ``registrations`` and ``namespace`` from it.
- The work is written once every configReferences item of a supported type has a desired hash;
  with no configReferences yet, a lifecycle-managed add-on that names configs of a supported type
  (CMA defaults, Placements configs, MCA ``spec.configs``) waits for the add-on manager to set
  them, or to say there are none (``Configured`` True), so a fresh install is generation 1.
- It is rendered again only when the desired hashes change: while they stay the same, the work is
  left as it is even if a config object changes (that change reaches the cluster through a new
  desired hash, i.e. through the add-on manager's rollout). So the work's generation moves
  exactly when the desired configs do.
- Conditions, as the framework writes them (set-condition semantics):
  ``ManifestApplied`` True ``AddonManifestApplied`` once the work's ``Applied`` is True, False
  ``AddonManifestAppliedFailed`` when it is not, False ``ManifestWorkApplyFailed`` when the work
  cannot be rendered or written (a stale False is dropped while the agent has not reported yet);
  ``Available`` from the agent's health once ``ManifestApplied`` exists: Unknown with the
  cluster's reason while the cluster's ``ManagedClusterConditionAvailable`` is Unknown (the hub's
  registration controller does that), Unknown ``WorkNotFound`` without the work, Unknown/False
  ``WorkNotApplied`` until the work is Available True at its current generation, False
  ``ProbeUnavailable`` while it is Degraded at that generation, else True ``ProbeAvailable``.
  ``status.healthCheck.mode`` is ``Customized`` and ``status.namespace`` the install namespace.

Nothing else of the MCA status is touched here: ``configReferences``, ``Configured`` and
``Progressing`` belong to the hub's add-on manager, except the desired spec hashes and
``lastObservedGeneration`` the framework's hub-side config controllers fill
(``addon_config_hash``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ocm_rollout.api.addon_hashing import config_key as config_hash_key
from ocm_rollout.api.addon_hashing import config_references, config_spec_hash_annotation
from ocm_rollout.api.addon_hashing import config_spec_hash_map as config_hash_map
from ocm_rollout.api.addon_v1alpha1 import is_lifecycle_managed
from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.addon_agent import agent_manifests, agent_values, manifests_install_namespace
from ocm_rollout.sandbox.agents.addon_template import (
    TemplateError,
    desired_template,
    is_template_addon,
    registration_namespace,
    registrations,
)
from ocm_rollout.sandbox.agents.addon_template_render import render_manifests
from ocm_rollout.sandbox.agents.addon_template_work import deploy_work_spec
from ocm_rollout.sandbox.agents.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    find_condition,
    make_condition,
    remove_condition,
    set_condition,
)
from ocm_rollout.sandbox.agents.work import generation_of

GroupResource = tuple[str, str]
"""(group, resource) of a config type; group "" for core."""
ConfigKey = tuple[str, str, str, str]
"""(group, resource, namespace, name) of one config object."""

MCA_KIND = "ManagedClusterAddOn"


def deploy_work_name(addon: str) -> str:
    return f"addon-{addon}-deploy-0"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _group_resource(item: Mapping[str, Any]) -> GroupResource:
    return (_text(item.get("group")), _text(item.get("resource")))


# --- supported configs ----------------------------------------------------------------------------


def declared_config_types(cma: Mapping[str, Any]) -> list[GroupResource]:
    """The CMA's ``spec.supportedConfigs`` group/resource pairs, in order, without repeats."""
    out: list[GroupResource] = []
    for item in (cma.get("spec") or {}).get("supportedConfigs") or ():
        if isinstance(item, Mapping):
            pair = _group_resource(item)
            if pair[1] and pair not in out:
                out.append(pair)
    return out


def supported_config_types(cma: Mapping[str, Any], served: Set[GroupResource]) -> list[GroupResource]:
    """The declared config types the hub serves."""
    return [pair for pair in declared_config_types(cma) if pair in served]


def rendered_config_types(cma: Mapping[str, Any], served: Set[GroupResource]) -> set[GroupResource]:
    """The config types the simulated agent renders (waits for): those the CMA declares or names
    in its install placements' ``configs`` (the add-on's framework supports what its CMA hands
    out), that the hub serves."""
    found = set(declared_config_types(cma))
    strategy = (cma.get("spec") or {}).get("installStrategy") or {}
    for placement in strategy.get("placements") or () if isinstance(strategy, Mapping) else ():
        for item in (placement or {}).get("configs") or () if isinstance(placement, Mapping) else ():
            if isinstance(item, Mapping):
                pair = _group_resource(item)
                if pair[1]:
                    found.add(pair)
    return {pair for pair in found if pair in served}


def supported_configs(cma: Mapping[str, Any], served: Set[GroupResource]) -> list[dict[str, str]]:
    """``status.supportedConfigs`` of the CMA's add-ons."""
    return [{"group": group, "resource": resource} for group, resource in supported_config_types(cma, served)]


# --- desired configs and the config-spec-hash annotation -----------------------------------------


def deployment_config_ref(mca: Mapping[str, Any]) -> ConfigKey | None:
    """The AddOnDeploymentConfig the agent is configured with: the first configReferences item of
    that type with a desiredConfig (as the framework's ``GetDesiredAddOnDeploymentConfig``)."""
    for ref in config_references(mca):
        desired = ref.get("desiredConfig")
        if _group_resource(ref) != (names.ADDON_GROUP, names.ADDON_DEPLOYMENT_CONFIGS):
            continue
        if isinstance(desired, Mapping) and _text(desired.get("name")):
            return (names.ADDON_GROUP, names.ADDON_DEPLOYMENT_CONFIGS, _text(desired.get("namespace")), desired["name"])
    return None


def _names_configs(cma: Mapping[str, Any], mca: Mapping[str, Any], supported: Set[GroupResource]) -> bool:
    """Whether the add-on manager is going to give ``mca`` configs of a supported type."""
    for item in (cma.get("spec") or {}).get("supportedConfigs") or ():
        default = (item or {}).get("defaultConfig") if isinstance(item, Mapping) else None
        name = _text((default or {}).get("name"))
        if name and name != names.RESERVED_NO_DEFAULT_CONFIG_NAME and _group_resource(item) in supported:
            return True
    strategy = (cma.get("spec") or {}).get("installStrategy") or {}
    if strategy.get("type") == "Placements":
        for placement in strategy.get("placements") or ():
            for item in (placement or {}).get("configs") or ():
                if isinstance(item, Mapping) and _group_resource(item) in supported:
                    return True
    return any(
        isinstance(item, Mapping) and _group_resource(item) in supported
        for item in (mca.get("spec") or {}).get("configs") or ()
    )


def waiting_for_configs(mca: Mapping[str, Any], cma: Mapping[str, Any], supported: Set[GroupResource]) -> str | None:
    """Why the deploy work cannot be rendered yet (None: it can)."""
    refs = config_references(mca)
    for ref in refs:
        if _group_resource(ref) not in supported:
            continue
        desired = ref.get("desiredConfig")
        if not isinstance(desired, Mapping) or not _text(desired.get("specHash")):
            where = desired if isinstance(desired, Mapping) else ref
            group, resource = _group_resource(ref)
            key = config_hash_key(group, resource, _text(where.get("namespace")), _text(where.get("name")))
            return f"waiting for the spec hash of {key}"
    if refs or not is_lifecycle_managed(cma):
        return None
    configured = find_condition((mca.get("status") or {}).get("conditions"), names.ADDON_CONFIGURED)
    if configured is not None and configured.get("status") == TRUE:
        return None
    if _names_configs(cma, mca, supported):
        return "waiting for the add-on manager to set the configurations"
    return None


def _configured(mca: Mapping[str, Any]) -> bool:
    configured = find_condition((mca.get("status") or {}).get("conditions"), names.ADDON_CONFIGURED)
    return configured is not None and configured.get("status") == TRUE


# --- the deploy work --------------------------------------------------------------------------------


def work_annotation(work: Mapping[str, Any] | None) -> str | None:
    annotations = ((work or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(names.CONFIG_SPEC_HASH_ANNOTATION)
    return value if isinstance(value, str) else None


def needs_render(mca: Mapping[str, Any], work: Mapping[str, Any] | None) -> bool:
    """The agent must be rendered (again): no work yet, or the desired hashes changed. Only then
    are the config objects read (the runner reads them fresh from the API for that)."""
    return work is None or work_annotation(work) != config_spec_hash_annotation(mca)


def owner_reference(mca: Mapping[str, Any]) -> dict[str, Any]:
    meta = mca.get("metadata") or {}
    return {
        "apiVersion": names.ADDON_API_VERSION,
        "kind": MCA_KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owner_references(mca: Mapping[str, Any], work: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The work's owner references with the MCA's controller reference in place of any other
    reference to a ManagedClusterAddOn."""
    others = [
        dict(ref)
        for ref in ((work or {}).get("metadata") or {}).get("ownerReferences") or ()
        if not (ref.get("kind") == MCA_KIND and _text(ref.get("apiVersion")).startswith(names.ADDON_GROUP + "/"))
    ]
    return [owner_reference(mca), *others]


@dataclass(frozen=True)
class DeployPlan:
    """What to do with the deploy work. ``create``: the body of a new work; ``patch``: a merge
    patch of the existing one; ``failure``: why the agent cannot be rendered (ManifestApplied
    False); ``waiting``: why nothing is written yet (no condition changes)."""

    create: dict[str, Any] | None = None
    patch: dict[str, Any] | None = None
    failure: str | None = None
    waiting: str | None = None


def manifest_failure(error: str) -> str:
    return f"failed to get manifest from agent interface: {error}"


def apply_failure(error: str) -> str:
    return f"failed to apply manifestWork: {error}"


def _not_found(key: ConfigKey) -> str:
    group, resource, _namespace, name = key
    return f'{resource}.{group} "{name}" not found' if group else f'{resource} "{name}" not found'


def plan_deploy_work(
    mca: Mapping[str, Any],
    cma: Mapping[str, Any],
    served: Set[GroupResource],
    configs: Mapping[ConfigKey, Mapping[str, Any]],
    work: Mapping[str, Any] | None,
    *,
    templates: Mapping[str, Mapping[str, Any]] | None = None,
    cluster: Mapping[str, Any] | None = None,
) -> DeployPlan:
    """The write (if any) that makes ``work`` the deploy work of ``mca``. ``configs`` holds the
    config objects by key (only the AddOnDeploymentConfig is read); ``templates`` the
    AddOnTemplates by name (a template add-on's manifests are rendered from its template,
    ``addon_template``, with ``cluster``'s image-registries annotation)."""
    work_meta = (work or {}).get("metadata") or {}
    if work_meta.get("deletionTimestamp"):
        return DeployPlan(waiting="the previous deploy work is being deleted")
    supported = rendered_config_types(cma, served)
    waiting = waiting_for_configs(mca, cma, supported)
    if waiting is not None:
        return DeployPlan(waiting=waiting)
    template_addon = is_template_addon(cma)
    if template_addon and not _configured(mca):
        # The template agent's ConfigCheckEnabled: nothing is rendered before Configured is True.
        return DeployPlan(waiting="waiting for the Configured condition")
    meta = mca.get("metadata") or {}
    addon, namespace = str(meta.get("name")), str(meta.get("namespace"))
    annotation = config_spec_hash_annotation(mca)
    owners = _owner_references(mca, work)
    if work is not None and not needs_render(mca, work):
        labels_ok = (work_meta.get("labels") or {}).get(names.ADDON_NAME_LABEL) == addon
        if labels_ok and (work_meta.get("ownerReferences") or []) == owners:
            return DeployPlan()
        return DeployPlan(patch={"metadata": {"labels": {names.ADDON_NAME_LABEL: addon}, "ownerReferences": owners}})

    deployment_config: Mapping[str, Any] | None = None
    ref = deployment_config_ref(mca)
    if ref is not None and (ref[0], ref[1]) in supported:
        deployment_config = configs.get(ref)
        if deployment_config is None:
            return DeployPlan(failure=manifest_failure(_not_found(ref)))
    spec: dict[str, Any]
    if template_addon:
        try:
            template = desired_template(mca, templates or {})
            manifests = render_manifests(addon, namespace, cluster, template, deployment_config)
        except TemplateError as exc:
            return DeployPlan(failure=manifest_failure(str(exc)))
        spec = deploy_work_spec(manifests, template)
    else:
        spec = {"workload": {"manifests": agent_manifests(addon, agent_values(mca, deployment_config), annotation)}}
    if work is None:
        body_meta: dict[str, Any] = {
            "name": deploy_work_name(addon),
            "namespace": namespace,
            "labels": {names.ADDON_NAME_LABEL: addon},
            "ownerReferences": owners,
        }
        if annotation is not None:
            body_meta["annotations"] = {names.CONFIG_SPEC_HASH_ANNOTATION: annotation}
        return DeployPlan(create={"metadata": body_meta, "spec": spec})
    patch_meta: dict[str, Any] = {
        "labels": {names.ADDON_NAME_LABEL: addon},
        "annotations": {names.CONFIG_SPEC_HASH_ANNOTATION: annotation},
        "ownerReferences": owners,
    }
    for key in ("manifestConfigs", "deleteOption"):  # merge patch: drop what the previous render had
        if key not in spec and (work.get("spec") or {}).get(key) is not None:
            spec[key] = None
    return DeployPlan(patch={"metadata": patch_meta, "spec": spec})


# --- MCA status -------------------------------------------------------------------------------------


def _manifest_applied(
    conditions: list[Condition], work: Mapping[str, Any] | None, failure: str | None, now: datetime
) -> list[Condition]:
    if failure is not None:
        return set_condition(
            conditions,
            make_condition(names.ADDON_MANIFEST_APPLIED, FALSE, names.REASON_MANIFEST_WORK_APPLY_FAILED, failure),
            now,
        )
    if work is None:
        return conditions
    applied = find_condition((work.get("status") or {}).get("conditions"), names.WORK_APPLIED)
    if applied is None:
        current = find_condition(conditions, names.ADDON_MANIFEST_APPLIED)
        if current is not None and current.get("status") == FALSE:
            return remove_condition(conditions, names.ADDON_MANIFEST_APPLIED)
        return conditions
    if applied.get("status") == TRUE:
        new = make_condition(
            names.ADDON_MANIFEST_APPLIED,
            TRUE,
            names.REASON_ADDON_MANIFEST_APPLIED,
            "manifests of addon are applied successfully",
        )
    else:
        new = make_condition(
            names.ADDON_MANIFEST_APPLIED,
            FALSE,
            names.REASON_ADDON_MANIFEST_APPLIED_FAILED,
            "failed to apply the manifests of addon",
        )
    return set_condition(conditions, new, now)


def available_condition(
    addon: str, work: Mapping[str, Any] | None, cluster: Mapping[str, Any] | None
) -> Condition:
    """The MCA ``Available`` condition from the cluster and the deploy work (module docstring)."""
    cluster_available = find_condition(((cluster or {}).get("status") or {}).get("conditions"), names.CLUSTER_AVAILABLE)
    if cluster_available is not None and cluster_available.get("status") == UNKNOWN:
        return make_condition(
            names.ADDON_AVAILABLE,
            UNKNOWN,
            _text(cluster_available.get("reason")) or names.REASON_LEASE_UPDATE_STOPPED,
            _text(cluster_available.get("message")),
        )
    if work is None or (work.get("metadata") or {}).get("deletionTimestamp"):
        return make_condition(
            names.ADDON_AVAILABLE, UNKNOWN, names.REASON_ADDON_WORK_NOT_FOUND, "Addon manifestWork is not found"
        )
    generation = generation_of(work)
    conditions = (work.get("status") or {}).get("conditions")
    available = find_condition(conditions, names.WORK_AVAILABLE)
    if available is None:
        return make_condition(
            names.ADDON_AVAILABLE, UNKNOWN, names.REASON_ADDON_WORK_NOT_APPLIED, "Addon manifestWork is not applied yet"
        )
    if available.get("observedGeneration") != generation:
        return make_condition(
            names.ADDON_AVAILABLE,
            UNKNOWN,
            names.REASON_ADDON_WORK_NOT_APPLIED,
            f"Addon manifestWork generation {generation} is not applied yet",
        )
    if available.get("status") != TRUE:
        status = FALSE if available.get("status") == FALSE else UNKNOWN
        # The agent's own words when the apply failed (a real agent reports why it is unhealthy).
        applied = find_condition(conditions, names.WORK_APPLIED)
        degraded = find_condition(conditions, names.WORK_DEGRADED)
        message = _text(available.get("message"))
        if degraded is not None and degraded.get("status") == TRUE and _text(degraded.get("message")):
            message = _text(degraded.get("message"))
        elif applied is not None and applied.get("status") == FALSE and _text(applied.get("message")):
            message = _text(applied.get("message"))
        return make_condition(names.ADDON_AVAILABLE, status, names.REASON_ADDON_WORK_NOT_APPLIED, message)
    degraded = find_condition(conditions, names.WORK_DEGRADED)
    if degraded is not None and degraded.get("status") == TRUE and degraded.get("observedGeneration") == generation:
        return make_condition(
            names.ADDON_AVAILABLE,
            FALSE,
            names.REASON_ADDON_PROBE_UNAVAILABLE,
            f"Probe addon unavailable with err {_text(degraded.get('message'))}",
        )
    return make_condition(
        names.ADDON_AVAILABLE, TRUE, names.REASON_ADDON_PROBE_AVAILABLE, f"{addon} add-on is available."
    )


def _template_of(
    mca: Mapping[str, Any], cma: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]] | None
) -> Mapping[str, Any] | None:
    if not is_template_addon(cma):
        return None
    try:
        return desired_template(mca, templates or {})
    except TemplateError:
        return None  # as OCM's registration controller: the status is left as it is


def addon_status(
    mca: Mapping[str, Any],
    cma: Mapping[str, Any],
    served: Set[GroupResource],
    work: Mapping[str, Any] | None,
    cluster: Mapping[str, Any] | None,
    now: datetime,
    *,
    failure: str | None = None,
    templates: Mapping[str, Mapping[str, Any]] | None = None,
    configs: Mapping[ConfigKey, Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The MCA's complete new status with the framework's fields set, given the deploy work as it
    is and ``failure`` (the work could not be rendered or written); None when nothing changes.
    A template add-on whose template is in ``templates`` also gets ``registrations`` and its
    ``namespace`` from it (with the AddOnDeploymentConfig in ``configs``)."""
    old: dict[str, Any] = copy.deepcopy(dict(mca.get("status") or {}))
    status = copy.deepcopy(old)
    supported = supported_configs(cma, served)
    if supported:
        status["supportedConfigs"] = supported
    else:
        status.pop("supportedConfigs", None)
    status["healthCheck"] = {"mode": names.HEALTH_CHECK_MODE_CUSTOMIZED}
    template = _template_of(mca, cma, templates)
    if template is not None:
        meta = mca.get("metadata") or {}
        found = registrations(str(meta.get("namespace")), str(meta.get("name")), template)
        if found:
            status["registrations"] = found
        else:
            status.pop("registrations", None)
        ref = deployment_config_ref(mca)
        status["namespace"] = registration_namespace(template, (configs or {}).get(ref) if ref else None)
    elif work is not None and not is_template_addon(cma):
        namespace = manifests_install_namespace(((work.get("spec") or {}).get("workload") or {}).get("manifests") or ())
        if namespace:
            status["namespace"] = namespace
    conditions = _manifest_applied([dict(c) for c in status.get("conditions") or ()], work, failure, now)
    if find_condition(conditions, names.ADDON_MANIFEST_APPLIED) is not None:
        addon = str((mca.get("metadata") or {}).get("name"))
        conditions = set_condition(conditions, available_condition(addon, work, cluster), now)
    if conditions or "conditions" in status:
        status["conditions"] = conditions
    return None if status == old else status


@dataclass(frozen=True)
class AddonPlan:
    """The deploy work write (``work``) and the MCA status given the work as it is now."""

    work: DeployPlan
    status: dict[str, Any] | None


def plan_addon(
    mca: Mapping[str, Any],
    cma: Mapping[str, Any],
    served: Set[GroupResource],
    configs: Mapping[ConfigKey, Mapping[str, Any]],
    work: Mapping[str, Any] | None,
    cluster: Mapping[str, Any] | None,
    now: datetime,
    *,
    templates: Mapping[str, Mapping[str, Any]] | None = None,
) -> AddonPlan:
    """Everything the framework does for ``mca`` at ``now``. After writing ``work.create`` or
    ``work.patch`` the runner computes the status again with ``addon_status`` on the written work
    (or with ``failure=apply_failure(error)`` if the write failed)."""
    deploy = plan_deploy_work(mca, cma, served, configs, work, templates=templates, cluster=cluster)
    status = addon_status(
        mca, cma, served, work, cluster, now, failure=deploy.failure, templates=templates, configs=configs
    )
    return AddonPlan(deploy, status)


__all__ = [
    "AddonPlan",
    "ConfigKey",
    "DeployPlan",
    "GroupResource",
    "addon_status",
    "apply_failure",
    "available_condition",
    "config_hash_key",
    "config_hash_map",
    "config_references",
    "config_spec_hash_annotation",
    "declared_config_types",
    "deploy_work_name",
    "deployment_config_ref",
    "is_lifecycle_managed",
    "is_template_addon",
    "manifest_failure",
    "needs_render",
    "owner_reference",
    "plan_addon",
    "plan_deploy_work",
    "supported_config_types",
    "supported_configs",
    "waiting_for_configs",
    "work_annotation",
]
