"""Which ManagedClusterAddOns to look at again when something they depend on changes (pure, in
memory): by add-on name (its ClusterManagementAddOn changed), by namespace (its cluster changed)
and by the AddOnDeploymentConfigs, AddOnTemplates and config objects of any kind named in their
``status.configReferences`` (desired ones). Updated from the
MCA watch, so each lookup costs the size of its answer, never a scan of every MCA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.addon import config_references
from ocm_rollout.sandbox.agents.addon_template import template_reference

Key = tuple[str, str]
"""(namespace, name)."""
ConfigKey = tuple[str, str, str, str]
"""(group, resource, namespace, name) of a config object."""


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def deployment_configs_of(mca: Mapping[str, Any]) -> set[Key]:
    """The AddOnDeploymentConfigs an MCA's configReferences name (desired ones)."""
    out: set[Key] = set()
    for ref in config_references(mca):
        if (ref.get("group"), ref.get("resource")) != (names.ADDON_GROUP, names.ADDON_DEPLOYMENT_CONFIGS):
            continue
        desired = ref.get("desiredConfig")
        if isinstance(desired, Mapping) and desired.get("name"):
            out.add((str(desired.get("namespace") or ""), str(desired["name"])))
    return out


def desired_configs_of(mca: Mapping[str, Any]) -> set[ConfigKey]:
    """Every config object an MCA's configReferences name (desired ones), of any kind."""
    out: set[ConfigKey] = set()
    for ref in config_references(mca):
        desired = ref.get("desiredConfig")
        if isinstance(desired, Mapping) and desired.get("name"):
            group, resource = str(ref.get("group") or ""), str(ref.get("resource") or "")
            out.add((group, resource, str(desired.get("namespace") or ""), str(desired["name"])))
    return out


def template_of(mca: Mapping[str, Any]) -> str | None:
    """The AddOnTemplate an MCA's configReferences name (the desired one)."""
    ref = template_reference(mca)
    return ref.name if ref is not None and ref.name else None


class AddonIndex:
    """MCA keys by add-on name, by namespace and by referenced AddOnDeploymentConfig,
    AddOnTemplate and config object of any kind."""

    def __init__(self) -> None:
        self._by_addon: dict[str, set[Key]] = {}
        self._by_namespace: dict[str, set[Key]] = {}
        self._by_config: dict[Key, set[Key]] = {}
        self._configs: dict[Key, set[Key]] = {}
        self._by_template: dict[str, set[Key]] = {}
        self._templates: dict[Key, str] = {}
        self._by_any: dict[ConfigKey, set[Key]] = {}
        self._any: dict[Key, set[ConfigKey]] = {}

    @staticmethod
    def _add(index: dict[Any, set[Key]], where: Any, key: Key) -> None:
        index.setdefault(where, set()).add(key)

    @staticmethod
    def _drop(index: dict[Any, set[Key]], where: Any, key: Key) -> None:
        keys = index.get(where)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[where]

    def update(self, mca: Mapping[str, Any]) -> None:
        key = key_of(mca)
        namespace, name = key
        self._add(self._by_addon, name, key)
        self._add(self._by_namespace, namespace, key)
        configs = deployment_configs_of(mca)
        for old in self._configs.get(key, set()) - configs:
            self._drop(self._by_config, old, key)
        for new in configs:
            self._add(self._by_config, new, key)
        self._configs[key] = configs
        desired = desired_configs_of(mca)
        for old_any in self._any.get(key, set()) - desired:
            self._drop(self._by_any, old_any, key)
        for new_any in desired:
            self._add(self._by_any, new_any, key)
        self._any[key] = desired
        template = template_of(mca)
        previous = self._templates.pop(key, None)
        if previous is not None and previous != template:
            self._drop(self._by_template, previous, key)
        if template is not None:
            self._add(self._by_template, template, key)
            self._templates[key] = template

    def remove(self, mca: Mapping[str, Any]) -> None:
        key = key_of(mca)
        namespace, name = key
        self._drop(self._by_addon, name, key)
        self._drop(self._by_namespace, namespace, key)
        for old in self._configs.pop(key, set()):
            self._drop(self._by_config, old, key)
        for old_any in self._any.pop(key, set()):
            self._drop(self._by_any, old_any, key)
        template = self._templates.pop(key, None)
        if template is not None:
            self._drop(self._by_template, template, key)

    def of_addon(self, addon: str) -> list[Key]:
        return sorted(self._by_addon.get(addon, ()))

    def in_namespace(self, namespace: str) -> list[Key]:
        return sorted(self._by_namespace.get(namespace, ()))

    def using_config(self, namespace: str, name: str) -> list[Key]:
        return sorted(self._by_config.get((namespace, name), ()))

    def naming(self, group: str, resource: str, namespace: str, name: str) -> list[Key]:
        """The MCAs whose configReferences name that config object (of any kind)."""
        return sorted(self._by_any.get((group, resource, namespace, name), ()))

    def using_template(self, name: str) -> list[Key]:
        return sorted(self._by_template.get(name, ()))

    def __len__(self) -> int:
        return len(self._configs)
