"""The add-on manager's lookup tables, kept from the caches' events and from its own writes.

Events of the watched kinds flow in (``on_cma``, ``on_mca``, ``on_work``: the caches' ``index``
callbacks, which also hear the controller's own writes); what flows out is, for each change, the
queue keys that depend on it (``cmas_of_placement``, ``mca_keys_of_cma``, ``work_keys``...) and
the objects a pass reads (``mcas_of``, ``works_of``) without scanning a cache
(docs/behaviour/addons.md 2).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_ANNOTATION_PREFIX,
    ADDON_CONDITION_CONFIGURED,
    ANNOTATION_ADDON_LIFECYCLE,
    LABEL_ADDON_NAME,
    LABEL_ADDON_NAMESPACE,
)
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.common.kept_order import KeptOrder
from ocm_rollout.controllers.common.wire import (
    annotations_of,
    is_deleting,
    labels_of,
    meta,
    name_of,
    namespace_of,
)
from ocm_rollout.controllers.runtime.overlay import strictly_newer, uid_of

ConfigKey = tuple[str, str, str, str]
"""(group, resource, namespace, name) of a configuration object."""


def work_key(work: JSON | None) -> str | None:
    """The MCA key (``namespace/name``) an add-on ManifestWork reports on (docs/behaviour/addons.md 2)."""
    if work is None:
        return None
    labels = labels_of(work)
    addon = labels.get(LABEL_ADDON_NAME)
    if not addon:
        return None
    return f"{labels.get(LABEL_ADDON_NAMESPACE) or namespace_of(work)}/{addon}"


def work_keys(work: JSON, previous: JSON | None) -> list[str]:
    """The MCA keys a change of an add-on ManifestWork concerns (the one it reported on before too)."""
    return sorted(key for key in {work_key(previous), work_key(work)} if key is not None)


def config_keys(items: Iterable[Any]) -> set[ConfigKey]:
    found = set()
    for item in items:
        if isinstance(item, dict) and item.get("resource") and item.get("name"):
            found.add((str(item.get("group") or ""), str(item["resource"]), str(item.get("namespace") or ""), str(item["name"])))
    return found


def cma_config_keys(cma: JSON) -> set[ConfigKey]:
    """The default and per-placement configurations a CMA's spec names."""
    spec = cma.get("spec") or {}
    keys = set()
    for item in spec.get("supportedConfigs") or []:
        if isinstance(item, dict) and isinstance(item.get("defaultConfig"), dict):
            default = item["defaultConfig"]
            if default.get("name"):
                keys.add((str(item.get("group") or ""), str(item.get("resource") or ""), str(default.get("namespace") or ""), str(default["name"])))
    for placement in (spec.get("installStrategy") or {}).get("placements") or []:
        if isinstance(placement, dict):
            keys |= config_keys(placement.get("configs") or [])
    return keys


def known_good_keys(cma: JSON) -> set[ConfigKey]:
    """The last known good configurations the CMA's installProgressions name (what an aborted
    placement returns to: a change of them concerns the CMA)."""
    keys = set()
    for entry in (cma.get("status") or {}).get("installProgressions") or []:
        for item in (entry.get("configReferences") or []) if isinstance(entry, dict) else ():
            good = item.get("lastKnownGoodConfig") if isinstance(item, dict) else None
            if isinstance(good, dict) and good.get("name") and item.get("resource"):
                keys.add((str(item.get("group") or ""), str(item["resource"]), str(good.get("namespace") or ""), str(good["name"])))
    return keys


def mca_pass_facts(cma: JSON) -> tuple[str, bool, str | None]:
    """What an MCA pass reads of its CMA (``mca_steps``): its uid (the owner reference), whether it
    is being deleted, its lifecycle annotation (whether it is lifecycle-managed)."""
    return (
        str(meta(cma).get("uid") or ""),
        is_deleting(cma),
        annotations_of(cma).get(ANNOTATION_ADDON_LIFECYCLE),
    )


# Metadata an MCA pass never reads (and that every write changes).
_UNREAD_METADATA = frozenset({"resourceVersion", "managedFields"})


def _without_configured(conditions: Any) -> Any:
    if not isinstance(conditions, list):
        return conditions
    return [c for c in conditions if not (isinstance(c, dict) and c.get("type") == ADDON_CONDITION_CONFIGURED)]


def only_configured_changed(mca: JSON, previous: JSON | None) -> bool:
    """Is the only change from ``previous`` to ``mca`` in what an MCA pass does not read
    (``mca_steps``): its ``Configured`` condition (set by the CMA's passes, 8.2 and 8.3) and
    ``resourceVersion``? Anything else, or no previous version, says no."""
    if previous is None or mca.keys() != previous.keys():
        return False
    for key, value in mca.items():
        if key == "metadata" or key == "status":
            continue
        if previous[key] != value:
            return False
    old_meta, new_meta = previous.get("metadata"), mca.get("metadata")
    if not isinstance(old_meta, dict) or not isinstance(new_meta, dict) or old_meta.keys() != new_meta.keys():
        return False
    if any(value != old_meta[key] for key, value in new_meta.items() if key not in _UNREAD_METADATA):
        return False
    old_status, new_status = previous.get("status"), mca.get("status")
    if not isinstance(old_status, dict) or not isinstance(new_status, dict) or old_status.keys() != new_status.keys():
        return False
    for key, value in new_status.items():
        if key == "conditions":
            if _without_configured(value) != _without_configured(old_status[key]):
                return False
        elif value != old_status[key]:
            return False
    return True


def mca_pass_keys(event_type: str, mca: JSON, previous: JSON | None) -> list[str]:
    """The MCA pass a change of an MCA queues: its own, unless only what the pass does not read
    changed (``only_configured_changed``). A wide rollout sets ``Configured`` False on every MCA
    it does not give the configurations yet, often after their own passes ran: each such write
    would otherwise queue a pass that finds nothing to do."""
    if event_type != "DELETED" and only_configured_changed(mca, previous):
        return []
    return [f"{namespace_of(mca)}/{name_of(mca)}"]


def cma_placements(cma: JSON) -> set[tuple[str, str]]:
    found = set()
    for placement in ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or []:
        if isinstance(placement, dict) and placement.get("name"):
            found.add((str(placement.get("namespace") or ""), str(placement["name"])))
    return found


def addon_annotations(cluster: JSON | None) -> dict[str, str] | None:
    """A ManagedCluster's ``addon.open-cluster-management.io*`` annotations (None: no cluster)."""
    if cluster is None:
        return None
    return {k: v for k, v in annotations_of(cluster).items() if k.startswith(ADDON_ANNOTATION_PREFIX)}


class Reverse:
    """A many-to-many index ``key -> owners`` with its reverse ``owner -> keys``."""

    def __init__(self) -> None:
        self.forward: dict[Hashable, set[Any]] = {}
        self.backward: dict[Hashable, set[Any]] = {}

    def put(self, owner: Hashable, keys: set[Any]) -> None:
        for old in self.backward.pop(owner, set()):
            bucket = self.forward.get(old)
            if bucket is not None:
                bucket.discard(owner)
                if not bucket:
                    del self.forward[old]
        if keys:
            self.backward[owner] = keys
            for key in keys:
                self.forward.setdefault(key, set()).add(owner)

    def owners(self, key: Hashable) -> set[Any]:
        return set(self.forward.get(key, ()))


class AddonIndexes:
    """See the module docstring."""

    def __init__(self) -> None:
        self.mcas_by_name: dict[str, dict[str, JSON]] = {}  # addon name -> cluster -> MCA
        # addon name -> its clusters in order, kept until an MCA of that add-on comes or goes (a
        # new version of an MCA, the common event of a rollout, changes no cluster).
        self.mca_order: KeptOrder[str, str] = KeptOrder()
        self.works_by_key: dict[str, dict[tuple[str, str], JSON]] = {}  # MCA key -> works
        self.cma_placements = Reverse()  # CMA name -> (namespace, name) of its placements
        self.cma_configs = Reverse()  # CMA name -> configurations it names
        self.mca_configs = Reverse()  # MCA key -> configurations its spec names
        # CMA name -> the CMA the index describes: kopf handles each CMA in a worker of its own,
        # so the events of a deleted CMA (its DELETED above all) may come after the ADDED of the
        # CMA created again under its name, and must not replace or wipe what the new one names.
        self.cmas: dict[str, JSON] = {}
        # CMA name -> ``mca_pass_facts`` of the CMA as last seen by ``mca_keys_of_cma_event``.
        self.mca_facts: dict[str, tuple[str, bool, str | None]] = {}

    # -- index callbacks (every event and own write) -------------------------------------------
    def on_cma(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        name = name_of(obj)
        deleted = event_type == "DELETED"
        known = self.cmas.get(name)
        if known is not None and uid_of(known) != uid_of(obj) and not strictly_newer(obj, known):
            return  # an event of an older CMA of this name: the index describes the newer one
        if deleted:
            self.cmas.pop(name, None)
        else:
            self.cmas[name] = obj
        self.cma_placements.put(name, set() if deleted else cma_placements(obj))
        self.cma_configs.put(name, set() if deleted else cma_config_keys(obj) | known_good_keys(obj))

    def on_mca(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        name, cluster = name_of(obj), namespace_of(obj)
        if event_type == "DELETED":
            bucket = self.mcas_by_name.get(name)
            if bucket is not None:
                if bucket.pop(cluster, None) is not None:
                    self.mca_order.forget(name)
                if not bucket:
                    del self.mcas_by_name[name]
            self.mca_configs.put(f"{cluster}/{name}", set())
            return
        bucket = self.mcas_by_name.setdefault(name, {})
        if cluster not in bucket:
            self.mca_order.forget(name)
        bucket[cluster] = obj
        self.mca_configs.put(f"{cluster}/{name}", config_keys((obj.get("spec") or {}).get("configs") or []))

    def on_work(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        ref = (namespace_of(obj), name_of(obj))
        for old in work_keys(obj, previous):
            bucket = self.works_by_key.get(old)
            if bucket is not None:
                bucket.pop(ref, None)
                if not bucket:
                    del self.works_by_key[old]
        key = work_key(obj)
        if key is not None and event_type != "DELETED":
            self.works_by_key.setdefault(key, {})[ref] = obj

    def sorted_mcas(self, name: str) -> list[tuple[str, JSON]]:
        """(cluster, MCA) of add-on ``name`` in cluster order."""
        return self.mca_order.items(name, self.mcas_by_name.get(name))

    # -- keys to re-queue ----------------------------------------------------------------------
    def mca_keys_of_cma(self, name: str) -> list[str]:
        return [f"{cluster}/{name}" for cluster in self.mcas_by_name.get(name, {})]

    def mca_keys_of_cma_event(self, event_type: str, cma: JSON) -> list[str]:
        """The MCA keys a CMA event concerns: all of them when what an MCA pass reads of the CMA
        (``mca_pass_facts``) changed since the last event of its name, or the CMA went; none for
        a change of its status or of the rest of its spec (its own status writes above all,
        whose echoes would otherwise queue every MCA of the add-on again). Without a memory
        (a restart) the first event of each CMA queues them all."""
        name = name_of(cma)
        if event_type == "DELETED":
            self.mca_facts.pop(name, None)
            return self.mca_keys_of_cma(name)
        facts = mca_pass_facts(cma)
        if self.mca_facts.get(name) == facts:
            return []
        self.mca_facts[name] = facts
        return self.mca_keys_of_cma(name)

    def cmas_of_placement(self, namespace: str, name: str) -> set[str]:
        return self.cma_placements.owners((namespace, name))

    def placed_cmas(self) -> list[str]:
        """Every CMA with placements in its install strategy."""
        return [str(name) for name in self.cma_placements.backward]

    # -- reading -------------------------------------------------------------------------------
    def works_of(self, key: str) -> list[tuple[tuple[str, str], JSON]]:
        return sorted(self.works_by_key.get(key, {}).items())
