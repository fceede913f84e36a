"""A ManagedClusterAddOn's ``Progressing`` condition and ``lastAppliedConfig`` (docs/behaviour/addons.md 9), and
the MCA side of the spec-hash writer (docs/behaviour/addons.md 5.3).

In: the MCA as stored (v1alpha1 wire form), the add-on's ManifestWorks in its namespace (and, in
hosted mode, in its hosting cluster's), the clock; for the hash writer, a lookup of stored
configuration objects and of the supported configuration types. Out: the MCA's new ``status``
or its new ``status.configReferences``, or None when nothing changes. Pure: the shell lists the
works, decides whether the CMA is lifecycle-managed, and patches the status.

Two points where this follows docs/behaviour/addons.md's rule order rather than OCM's code:
- with several works, a config mismatch on any work (rule 5) wins over a work that is not ready
  (rule 6); OCM stops at whichever its lister returns first;
- pre-delete hook works are left out before "no addon works" is decided, so an add-on with only
  a pre-delete work is Progressing; OCM counts the works first and calls that Completed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ocm_rollout.api.addon_hashing import config_references, config_spec_hash_map, go_text, spec_hash
from ocm_rollout.api.constants import (
    ADDON_CONDITION_HOSTING_MANIFEST_APPLIED,
    ADDON_CONDITION_MANIFEST_APPLIED,
    ADDON_CONDITION_PROGRESSING,
    ADDON_PRE_DELETE_WORK_PREFIX,
    ANNOTATION_CONFIG_SPEC_HASH,
    ANNOTATION_HOSTING_CLUSTER_NAME,
    CONDITION_FALSE,
    CONDITION_TRUE,
    LABEL_ADDON_NAME,
    LABEL_ADDON_NAMESPACE,
    MESSAGE_ADDON_COMPLETED,
    MESSAGE_ADDON_PROGRESSING,
    MESSAGE_CONFIGURATION_UNSUPPORTED,
    MESSAGE_PROGRESSING_CONFIGS_MISMATCH,
    MESSAGE_PROGRESSING_NO_ADDON_WORKS,
    MESSAGE_PROGRESSING_WORK_NOT_READY,
    MESSAGE_WAITING_FOR_HOSTING_MANIFEST_APPLIED,
    MESSAGE_WAITING_FOR_MANIFEST_APPLIED,
    REASON_ADDON_COMPLETED,
    REASON_ADDON_FAILED,
    REASON_ADDON_PROGRESSING,
    REASON_CONFIGURATION_UNSUPPORTED,
    REASON_WAITING_FOR_HOSTING_MANIFEST_APPLIED,
    REASON_WAITING_FOR_MANIFEST_APPLIED,
    WORK_CONDITION_APPLIED,
    WORK_CONDITION_AVAILABLE,
)
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.wire import (
    JSON,
    annotations_of,
    as_list,
    as_mapping,
    as_str,
    conditions_of,
    generation_of,
    labels_of,
    mapping_at,
    mappings_in,
    name_of,
    namespace_of,
)

ConfigLookup = Callable[[str, str, str, str], JSON | None]
SupportedCheck = Callable[[str, str], bool]


def _group_resource(item: Mapping[str, Any]) -> tuple[str, str]:
    return as_str(item.get("group")), as_str(item.get("resource"))


# ------------------------------------------------------------------------------------------
# The rules of docs/behaviour/addons.md 9
# ------------------------------------------------------------------------------------------


def unsupported_config(mca: Mapping[str, Any]) -> tuple[str, str] | None:
    """Rule 1: the first ``spec.configs`` (group, resource) not in ``status.supportedConfigs``."""
    supported = {_group_resource(item) for item in mappings_in(mapping_at(mca, "status").get("supportedConfigs"))}
    for config in mappings_in(mapping_at(mca, "spec").get("configs")):
        if _group_resource(config) not in supported:
            return _group_resource(config)
    return None


def hosting_cluster(mca: Mapping[str, Any]) -> str:
    """The MCA's hosting cluster ("" when not hosted)."""
    return annotations_of(mca).get(ANNOTATION_HOSTING_CLUSTER_NAME) or ""


def addon_works(mca: Mapping[str, Any], works: Sequence[JSON], hosted_works: Sequence[JSON] = ()) -> list[JSON]:
    """Rule 4: the add-on's works, pre-delete hook works left out, sorted by namespace and name.

    ``works``: those in the MCA's namespace labelled with the add-on's name and without an
    add-on namespace label; ``hosted_works`` (only when hosted): those in the hosting cluster's
    namespace labelled with the add-on's name and the MCA's namespace.
    """
    addon = name_of(mca)
    cluster = namespace_of(mca)
    hosting = hosting_cluster(mca)
    pre_delete = ADDON_PRE_DELETE_WORK_PREFIX.format(addon)
    found: list[JSON] = []
    for work in works:
        labels = labels_of(work)
        if (
            namespace_of(work) == cluster
            and labels.get(LABEL_ADDON_NAME) == addon
            and LABEL_ADDON_NAMESPACE not in labels
        ):
            found.append(work)
    if hosting:
        for work in hosted_works:
            labels = labels_of(work)
            if (
                namespace_of(work) == hosting
                and labels.get(LABEL_ADDON_NAME) == addon
                and labels.get(LABEL_ADDON_NAMESPACE) == cluster
            ):
                found.append(work)
    found = [work for work in found if not name_of(work).startswith(pre_delete)]
    return sorted(found, key=lambda work: (namespace_of(work), name_of(work)))


def _parse_hash_map(text: str) -> dict[str, str] | None:
    """The work annotation as Go's ``json.Unmarshal`` into ``map[string]string`` reads it; None
    when that fails (not JSON, not an object, a value that is not a string or null)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        return None
    result: dict[str, str] = {}
    for key, value in parsed.items():
        if value is None:
            value = ""
        if not isinstance(value, str):
            return None
        result[go_text(key)] = go_text(value)
    return result


def work_configs_match(work: Mapping[str, Any], mca: Mapping[str, Any]) -> bool:
    """Rule 5: whether the work's config-spec-hash annotation matches the MCA's desired configs."""
    annotations = annotations_of(work)
    refs = config_references(mca)
    if ANNOTATION_CONFIG_SPEC_HASH not in annotations:
        return not refs
    work_map = _parse_hash_map(annotations[ANNOTATION_CONFIG_SPEC_HASH])
    if work_map is None or any(value == "" for value in work_map.values()):
        return False
    for ref in refs:
        desired = as_mapping(ref).get("desiredConfig")
        if not isinstance(desired, Mapping) or not as_str(desired.get("specHash")):
            return False
    return work_map == config_spec_hash_map(mca)


def work_is_ready(work: Mapping[str, Any]) -> bool:
    """Rule 6: ``Available`` and ``Applied`` both True for the work's current generation."""
    generation = generation_of(work)
    conds = conditions_of(work)
    for type_ in (WORK_CONDITION_AVAILABLE, WORK_CONDITION_APPLIED):
        cond = conds.get(type_)
        if cond is None or cond.status != CONDITION_TRUE or cond.observed_generation != generation:
            return False
    return True


def _verdict(
    mca: Mapping[str, Any], works: Sequence[JSON], hosted_works: Sequence[JSON], list_error: str | None
) -> tuple[str, str, str]:
    """(status, reason, message) of the Progressing condition: the first rule that matches."""
    unsupported = unsupported_config(mca)
    if unsupported is not None:
        return CONDITION_FALSE, REASON_CONFIGURATION_UNSUPPORTED, MESSAGE_CONFIGURATION_UNSUPPORTED.format(*unsupported)
    conditions = as_list(mapping_at(mca, "status").get("conditions"))
    if find_condition(conditions, ADDON_CONDITION_MANIFEST_APPLIED) is None:
        return CONDITION_FALSE, REASON_WAITING_FOR_MANIFEST_APPLIED, MESSAGE_WAITING_FOR_MANIFEST_APPLIED
    if hosting_cluster(mca) and find_condition(conditions, ADDON_CONDITION_HOSTING_MANIFEST_APPLIED) is None:
        return (
            CONDITION_FALSE,
            REASON_WAITING_FOR_HOSTING_MANIFEST_APPLIED,
            MESSAGE_WAITING_FOR_HOSTING_MANIFEST_APPLIED,
        )
    if list_error is not None:
        return CONDITION_FALSE, REASON_ADDON_FAILED, list_error
    found = addon_works(mca, works, hosted_works)
    if not found:
        return CONDITION_TRUE, REASON_ADDON_PROGRESSING, MESSAGE_ADDON_PROGRESSING.format(MESSAGE_PROGRESSING_NO_ADDON_WORKS)
    if not all(work_configs_match(work, mca) for work in found):
        return CONDITION_TRUE, REASON_ADDON_PROGRESSING, MESSAGE_ADDON_PROGRESSING.format(MESSAGE_PROGRESSING_CONFIGS_MISMATCH)
    if not all(work_is_ready(work) for work in found):
        return CONDITION_TRUE, REASON_ADDON_PROGRESSING, MESSAGE_ADDON_PROGRESSING.format(MESSAGE_PROGRESSING_WORK_NOT_READY)
    return CONDITION_FALSE, REASON_ADDON_COMPLETED, MESSAGE_ADDON_COMPLETED


def _mark_applied(status: JSON) -> None:
    """Rule 7: every configReferences item's ``lastAppliedConfig`` := its ``desiredConfig``."""
    refs = status.get("configReferences")
    if not isinstance(refs, list):
        return
    updated: list[Any] = []
    for ref in refs:
        if isinstance(ref, Mapping):
            desired = ref.get("desiredConfig")
            if desired is not None or ref.get("lastAppliedConfig") is not None:
                ref = {**ref, "lastAppliedConfig": copy.deepcopy(desired) if isinstance(desired, Mapping) else None}
        updated.append(ref)
    status["configReferences"] = updated


def progressing_update(
    mca: Mapping[str, Any],
    works: Sequence[JSON],
    now: datetime,
    *,
    hosted_works: Sequence[JSON] = (),
    list_error: str | None = None,
) -> JSON | None:
    """The MCA's new ``status`` with ``Progressing`` set per docs/behaviour/addons.md 9 (and, when Completed,
    ``lastAppliedConfig`` of every configReferences item), or None when nothing changes.

    ``works``/``hosted_works`` as in ``addon_works``. ``list_error``: the works could not be
    listed (then False/Failed with that text, after rules 1-3). Once Completed, a later
    regression leaves ``lastAppliedConfig`` alone.
    """
    old_status = mca.get("status")
    status: JSON = copy.deepcopy(dict(old_status)) if isinstance(old_status, Mapping) else {}
    state, reason, message = _verdict(mca, works, hosted_works, list_error)
    conditions = list(as_list(status.get("conditions")))
    set_status_condition(conditions, ADDON_CONDITION_PROGRESSING, state, reason, message, now)
    status["conditions"] = conditions
    if reason == REASON_ADDON_COMPLETED:
        _mark_applied(status)
    if isinstance(old_status, Mapping) and status == old_status:
        return None
    return status


# ------------------------------------------------------------------------------------------
# The MCA side of the spec-hash writer (docs/behaviour/addons.md 5.3)
# ------------------------------------------------------------------------------------------


def _spec_configs(mca: Mapping[str, Any]) -> set[tuple[str, str, str, str]]:
    configs: set[tuple[str, str, str, str]] = set()
    for item in mappings_in(mapping_at(mca, "spec").get("configs")):
        configs.add((*_group_resource(item), as_str(item.get("namespace")), as_str(item.get("name"))))
    return configs


def _sync_referent(ref: JSON, desired: Mapping[str, Any]) -> None:
    """v1alpha1: the item's top-level name/namespace repeat its desiredConfig's."""
    ref["name"] = as_str(desired.get("name"))
    namespace = as_str(desired.get("namespace"))
    if namespace:
        ref["namespace"] = namespace
    else:
        ref.pop("namespace", None)


def mca_config_hash_update(
    mca: Mapping[str, Any], configs: ConfigLookup, supported: SupportedCheck
) -> list[JSON] | None:
    """The MCA's new ``status.configReferences``, or None when unchanged.

    For every item of a supported (group, resource) whose desired object exists (``configs``
    returns it): ``lastObservedGeneration`` := the object's ``metadata.generation``, and when
    the item is one of the MCA's own ``spec.configs``, ``desiredConfig.specHash`` := its spec
    hash. Items coming from the CMA keep the hash the configuration reconciler gave them. Every
    item with a desiredConfig gets the v1alpha1 top-level name/namespace of it.
    """
    refs = config_references(mca)
    own = _spec_configs(mca)
    updated: list[Any] = []
    for item in refs:
        if not isinstance(item, Mapping) or not isinstance(item.get("desiredConfig"), Mapping):
            updated.append(item)
            continue
        ref: JSON = copy.deepcopy(dict(item))
        desired: JSON = dict(ref["desiredConfig"])
        ref["desiredConfig"] = desired
        _sync_referent(ref, desired)
        group, resource = _group_resource(ref)
        namespace, name = as_str(desired.get("namespace")), as_str(desired.get("name"))
        obj = configs(group, resource, namespace, name) if supported(group, resource) else None
        if isinstance(obj, Mapping):
            ref["lastObservedGeneration"] = generation_of(obj)
            if (group, resource, namespace, name) in own:
                desired["specHash"] = spec_hash(obj)
        updated.append(ref)
    return None if updated == refs else updated
