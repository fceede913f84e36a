"""The spec hashes the simulated framework of an add-on writes on the hub (pure: no I/O).

On a real hub the desired spec hashes of add-on configurations are not computed by OCM's hub
add-on manager but by each add-on's own manager, built on OCM's addon-framework, for the add-ons
it serves (``addonmanager/base_manager.go``: the ``SupportedConfigGVRs`` of its agents; CMAs and
MCAs filtered by add-on name). The local hub's simulated framework plays those two controllers
for every registered add-on (a ClusterManagementAddOn, CMA; ``addon``), with the config types it
supports being those it renders (``addon.rendered_config_types``: the types the CMA declares or
hands out through its install placements, that the hub serves):

- ``cmaconfig`` (``addonmanager/controllers/cmaconfig/controller.go``, ``updateConfigSpecHash``):
  on the CMA status, every ``defaultconfigReferences[]`` (v1alpha1 spelling; v1beta1:
  ``defaultConfigReferences``) and ``installProgressions[].configReferences[]`` item of a
  supported type whose ``desiredConfig`` names an object gets ``desiredConfig.specHash`` := the
  object's spec hash (``api.addon_hashing.spec_hash``, Go's ``GetSpecHash``), or ``""`` when the
  object does not exist. An object that cannot be hashed stops the pass there: the items before
  it keep their new hashes (Go returns nil from the loop and still patches).
- ``addonconfig`` (``addonmanager/controllers/addonconfig/controller.go``,
  ``updateConfigSpecHashAndGenerations``): on the MCA status, every ``configReferences[]`` item
  of a supported type with a ``desiredConfig`` whose object exists gets ``lastObservedGeneration``
  := the object's ``metadata.generation``; when the item is also one of the MCA's own
  ``spec.configs`` (same group, resource, namespace and name) its ``desiredConfig.specHash`` :=
  the object's spec hash. A missing object leaves the item as it is; items coming from the CMA
  keep the hash the hub's add-on manager copied from the CMA. An object that cannot be hashed
  means no write at all (Go returns the error before patching).

Both return the new status only when it differs (the framework patches only a change), so when
the hub's add-on manager already wrote the same hashes (ours computes them itself) the
simulation writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Set
from typing import Any

from ocm_rollout.api.addon_hashing import spec_hash

GroupResource = tuple[str, str]
"""(group, resource) of a config type; group "" for core."""
ConfigKey = tuple[str, str, str, str]
"""(group, resource, namespace, name) of one config object."""
Configs = Mapping[ConfigKey, Mapping[str, Any]]
"""The config objects that exist, by key; a key that is absent is an object that does not."""

DEFAULT_CONFIG_REFERENCES = ("defaultconfigReferences", "defaultConfigReferences")  # v1alpha1, v1beta1
INSTALL_PROGRESSIONS = "installProgressions"
CONFIG_REFERENCES = "configReferences"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _items(value: Any) -> list[dict[str, Any]]:
    """The dict items of a JSON list (a deep copy's items are written in place)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _desired_key(item: Mapping[str, Any], supported: Set[GroupResource]) -> ConfigKey | None:
    """The object an item's desiredConfig names, if it is of a supported type and has a name."""
    group, resource = _text(item.get("group")), _text(item.get("resource"))
    desired = item.get("desiredConfig")
    if (group, resource) not in supported or not isinstance(desired, Mapping):
        return None
    name = _text(desired.get("name"))
    if not name:
        return None
    return (group, resource, _text(desired.get("namespace")), name)


def _cma_items(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The CMA status items the cmaconfig controller looks at, in its order."""
    out: list[dict[str, Any]] = []
    for key in DEFAULT_CONFIG_REFERENCES:
        out.extend(_items(status.get(key)))
    for progression in _items(status.get(INSTALL_PROGRESSIONS)):
        out.extend(_items(progression.get(CONFIG_REFERENCES)))
    return out


def cma_config_keys(cma: Mapping[str, Any], supported: Set[GroupResource]) -> list[ConfigKey]:
    """The config objects the CMA's status names (supported types), in order, without repeats:
    what the runner reads before ``cma_status_hashes``."""
    out: list[ConfigKey] = []
    for item in _cma_items(cma.get("status") or {}):
        key = _desired_key(item, supported)
        if key is not None and key not in out:
            out.append(key)
    return out


def mca_config_keys(mca: Mapping[str, Any], supported: Set[GroupResource]) -> list[ConfigKey]:
    """The config objects the MCA's ``status.configReferences`` name (supported types)."""
    out: list[ConfigKey] = []
    for item in _items((mca.get("status") or {}).get(CONFIG_REFERENCES)):
        key = _desired_key(item, supported)
        if key is not None and key not in out:
            out.append(key)
    return out


def _hash_of(obj: Mapping[str, Any]) -> str | None:
    try:
        return spec_hash(obj)
    except (ValueError, TypeError):
        return None


def cma_status_hashes(
    cma: Mapping[str, Any], supported: Set[GroupResource], configs: Configs
) -> dict[str, Any] | None:
    """The CMA's new status with the desired spec hashes filled (module docstring, cmaconfig);
    None when nothing changes."""
    old = cma.get("status")
    if not isinstance(old, Mapping):
        return None
    status: dict[str, Any] = copy.deepcopy(dict(old))
    for item in _cma_items(status):
        key = _desired_key(item, supported)
        if key is None:
            continue
        obj = configs.get(key)
        value = "" if obj is None else _hash_of(obj)
        if value is None:
            break
        item["desiredConfig"]["specHash"] = value
    return None if status == old else status


def _own_configs(mca: Mapping[str, Any]) -> set[ConfigKey]:
    out: set[ConfigKey] = set()
    for item in _items((mca.get("spec") or {}).get("configs")):
        name = _text(item.get("name"))
        if name:
            out.add((_text(item.get("group")), _text(item.get("resource")), _text(item.get("namespace")), name))
    return out


def _generation(obj: Mapping[str, Any]) -> int:
    value = (obj.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def mca_status_hashes(
    mca: Mapping[str, Any], supported: Set[GroupResource], configs: Configs
) -> dict[str, Any] | None:
    """The MCA's new status with ``lastObservedGeneration`` and the desired spec hashes of its
    own configs filled (module docstring, addonconfig); None when nothing changes."""
    old = mca.get("status")
    if not isinstance(old, Mapping):
        return None
    status: dict[str, Any] = copy.deepcopy(dict(old))
    own = _own_configs(mca)
    for item in _items(status.get(CONFIG_REFERENCES)):
        key = _desired_key(item, supported)
        obj = None if key is None else configs.get(key)
        if key is None or obj is None:
            continue
        item["lastObservedGeneration"] = _generation(obj)
        if key in own:
            value = _hash_of(obj)
            if value is None:
                return None
            item["desiredConfig"]["specHash"] = value
    return None if status == old else status


__all__ = [
    "ConfigKey",
    "Configs",
    "GroupResource",
    "cma_config_keys",
    "cma_status_hashes",
    "mca_config_keys",
    "mca_status_hashes",
]
