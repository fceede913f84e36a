"""Which configurations each add-on should have: the ClusterManagementAddOn (CMA) status references
and the configuration graph (docs/behaviour/addons.md sections 5.1-5.3 and 6).

What flows through:

- ``cma_status_references``: CMA (as stored, ``addon.open-cluster-management.io/v1alpha1``) and a
  hash lookup -> the CMA's new ``status`` with ``defaultconfigReferences`` (5.1) and
  ``installProgressions`` (5.2), spec hashes filled in (5.3, CMA side).
- ``build_graph``: CMA (carrying that status), its ManagedClusterAddOns (MCAs) by cluster and its
  placements' inputs -> a ``ConfigGraph``: the defaults node and one node per placement, each with
  its desired configurations, its clusters and decision groups, and the MCAs it configures with
  their own desired configurations (defaults < placement configs < MCA ``spec.configs``, always
  per (group, resource)).

One deliberate difference from OCM (5.2 step 4): when a placement's configurations are replaced
by other objects (e.g. ``deploy-config`` -> ``deploy-config-v2``), OCM starts the entry afresh and
so forgets its ``lastKnownGoodConfig``; here each new item keeps the old item's
``lastKnownGoodConfig`` of the same (group, resource) and position, when that type has as many items
as before (``lastAppliedConfig`` and the conditions still start afresh). That is what a
``failureStrategy: AbortAll`` reverts to (``abort``).

Pure: objects are plain JSON dicts read defensively; nothing here does I/O. Written in the
v1alpha1 wire form the API server stores; a list that becomes empty is written as ``[]`` (not left
out) so that a JSON merge patch of the returned status clears it, and unset config fields are left
out (the API server prunes ``null`` from these non-nullable fields).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from ocm_rollout.api.addon_v1alpha1 import is_lifecycle_managed
from ocm_rollout.api.constants import (
    INSTALL_STRATEGY_MANUAL,
    REASON_INVALID_PLACEMENT_DECISIONS,
    REASON_PLACEMENT_NOT_FOUND,
    RESERVED_NO_DEFAULT_CONFIG_NAME,
    ROLLOUT_TYPE_ALL,
    ROLLOUT_TYPE_PROGRESSIVE,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.decisions import (
    DecisionGroupError,
    decision_groups,
    placement_counts,
    scheduling_gap,
)
from ocm_rollout.controllers.common.wire import JSON, as_list, as_mapping, as_str, mapping_at, mappings_in
from ocm_rollout.controllers.rollout.model import DecisionGroup
from ocm_rollout.controllers.rollout.strategy import effective_type

#: (group, resource, namespace, name) -> spec hash of the stored object; "" when it does not
#: exist; None when the manager does not hash that type (the carried value is kept).
HashOf = Callable[[str, str, str, str], str | None]
GroupResource = tuple[str, str]
ConfigKey = tuple[str, str, str, str]

DEFAULT_CONFIG_REFERENCES = "defaultconfigReferences"  # sic: v1alpha1 spelling (docs/behaviour/addons.md 12)
INSTALL_PROGRESSIONS = "installProgressions"


# ------------------------------------------------------------------------------------------
# The install strategy of the CMA spec (every core module reads it through these)
# ------------------------------------------------------------------------------------------


def install_type(cma: Mapping[str, Any]) -> str:
    """``spec.installStrategy.type`` ("" when unset)."""
    return as_str(mapping_at(cma, "spec", "installStrategy").get("type"))


def is_manual(cma: Mapping[str, Any]) -> bool:
    """Manual or empty install type: every MCA is configured by the defaults (docs/behaviour/addons.md 4.1)."""
    return install_type(cma) in ("", INSTALL_STRATEGY_MANUAL)


def indexed_placement_strategies(cma: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """The items of ``spec.installStrategy.placements`` that are objects, each with its index in
    that list (for field paths)."""
    raw = as_list(mapping_at(cma, "spec", "installStrategy").get("placements"))
    return [(index, item) for index, item in enumerate(raw) if isinstance(item, Mapping)]


def placement_strategies(cma: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``spec.installStrategy.placements`` (items that are objects)."""
    return mappings_in(mapping_at(cma, "spec", "installStrategy").get("placements"))


def placement_ref(item: Mapping[str, Any]) -> tuple[str, str]:
    return as_str(item.get("namespace")), as_str(item.get("name"))


# ------------------------------------------------------------------------------------------
# Configurations
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Config:
    """One desired configuration object and the hash of its spec."""

    group: str
    resource: str
    namespace: str
    name: str
    spec_hash: str = ""

    @property
    def group_resource(self) -> GroupResource:
        return self.group, self.resource

    @property
    def key(self) -> ConfigKey:
        return self.group, self.resource, self.namespace, self.name

    def spec_hash_wire(self) -> JSON:
        """``{namespace?, name, specHash}`` (ConfigSpecHash; namespace left out when empty)."""
        return spec_hash_wire(self.namespace, self.name, self.spec_hash)


def spec_hash_wire(namespace: str, name: str, spec_hash: str) -> JSON:
    out: JSON = {"namespace": namespace} if namespace else {}
    out["name"] = name
    out["specHash"] = spec_hash
    return out


def referent(value: Any) -> tuple[str, str] | None:
    """(namespace, name) of a ConfigSpecHash / ConfigReferent object; None when not an object."""
    if not isinstance(value, Mapping):
        return None
    return as_str(value.get("namespace")), as_str(value.get("name"))


class DesiredConfigs:
    """An ordered set of desired configurations: groups sorted by (group, resource), each group in
    its own order, no (group, resource, namespace, name) twice. Immutable; compare with ``==``."""

    __slots__ = ("by_group", "configs", "index")

    configs: tuple[Config, ...]
    by_group: dict[GroupResource, tuple[Config, ...]]
    index: dict[ConfigKey, str]

    def __init__(self, groups: Mapping[GroupResource, Sequence[Config]] | None = None) -> None:
        ordered = sorted((gr, tuple(items)) for gr, items in (groups or {}).items() if items)
        self.by_group = dict(ordered)
        self.configs = tuple(c for _, items in ordered for c in items)
        self.index = {c.key: c.spec_hash for c in self.configs}

    def __len__(self) -> int:
        return len(self.configs)

    def __iter__(self) -> Any:
        return iter(self.configs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DesiredConfigs) and self.configs == other.configs

    def __hash__(self) -> int:
        return hash(self.configs)

    def __repr__(self) -> str:
        return f"DesiredConfigs({list(self.configs)!r})"

    def groups(self) -> dict[GroupResource, list[Config]]:
        """A mutable copy grouped by (group, resource)."""
        return {gr: list(items) for gr, items in self.by_group.items()}


def _append_unique(items: list[Config], config: Config) -> None:
    for existing in items:
        if existing.namespace == config.namespace and existing.name == config.name:
            return
    items.append(config)


def _override(groups: dict[GroupResource, list[Config]], configs: Iterable[Config]) -> None:
    """Each (group, resource) present in ``configs`` replaces that whole group (spec order,
    de-duplicated by namespace/name)."""
    replaced: set[GroupResource] = set()
    for config in configs:
        gr = config.group_resource
        if gr not in replaced:
            groups[gr] = []
            replaced.add(gr)
        _append_unique(groups[gr], config)


def _addon_configs(raw: Any) -> list[Config]:
    """``[{group, resource, namespace, name}]`` items (AddOnConfig) as Configs without hash."""
    out = []
    for item in as_list(raw):
        if isinstance(item, Mapping):
            out.append(
                Config(as_str(item.get("group")), as_str(item.get("resource")), as_str(item.get("namespace")), as_str(item.get("name")))
            )
    return out


def default_configs(cma: Mapping[str, Any]) -> list[Config]:
    """The CMA's default configurations in spec order (v1alpha1 ``spec.supportedConfigs[]`` with a
    ``defaultConfig``), skipping empty and reserved names; not de-duplicated; no hash."""
    out = []
    for item in as_list(mapping_at(cma, "spec").get("supportedConfigs")):
        if not isinstance(item, Mapping):
            continue
        default = item.get("defaultConfig")
        if not isinstance(default, Mapping):
            continue
        name = as_str(default.get("name"))
        if not name or name == RESERVED_NO_DEFAULT_CONFIG_NAME:
            continue
        out.append(Config(as_str(item.get("group")), as_str(item.get("resource")), as_str(default.get("namespace")), name))
    return out


# ------------------------------------------------------------------------------------------
# CMA status references (5.1, 5.2, 5.3)
# ------------------------------------------------------------------------------------------


def _hashed(config: Config, carried: str, hash_of: HashOf) -> str:
    """5.3: the hash of a supported type's object ("" when missing); otherwise the carried one."""
    if not config.name:
        return carried
    found = hash_of(config.group, config.resource, config.namespace, config.name)
    return carried if found is None else found


def _set_list(status: JSON, key: str, items: list[JSON]) -> None:
    """``status[key] = items``; an empty list is written only to clear a non-empty one."""
    if items or as_list(status.get(key)):
        status[key] = items
    else:
        status.pop(key, None)


def _default_references(cma: Mapping[str, Any], old: Any, hash_of: HashOf) -> list[JSON]:
    carried: dict[ConfigKey, str] = {}
    for item in as_list(old):
        if not isinstance(item, Mapping):
            continue
        ref = referent(item.get("desiredConfig"))
        if ref is None:
            continue
        key = (as_str(item.get("group")), as_str(item.get("resource")), ref[0], ref[1])
        carried.setdefault(key, as_str(as_mapping(item.get("desiredConfig")).get("specHash")))
    out = []
    for config in default_configs(cma):
        spec_hash = _hashed(config, carried.get(config.key, ""), hash_of)
        out.append(
            {
                "group": config.group,
                "resource": config.resource,
                "desiredConfig": spec_hash_wire(config.namespace, config.name, spec_hash),
            }
        )
    return out


def _progression_configs(defaults: Sequence[Config], placement: Mapping[str, Any]) -> list[Config]:
    """5.2 steps 1-3: defaults grouped by (group, resource), overridden per group by the
    placement's configs, flattened sorted by group then resource."""
    groups: dict[GroupResource, list[Config]] = {}
    for config in defaults:
        _append_unique(groups.setdefault(config.group_resource, []), config)
    _override(groups, _addon_configs(placement.get("configs")))
    return [config for gr in sorted(groups) for config in groups[gr]]


def _old_progression(
    ref: tuple[str, str], configs: Sequence[Config], old: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """5.2 step 4: the first old entry of the same placement in which every new item is found
    (OCM counts matching (old, new) pairs and compares the count with the number of new items)."""
    for entry in old:
        if placement_ref(entry) != ref:
            continue
        count = 0
        for item in as_list(entry.get("configReferences")):
            if not isinstance(item, Mapping):
                continue
            item_ref = referent(item.get("desiredConfig"))
            if item_ref is None:
                continue
            gr = (as_str(item.get("group")), as_str(item.get("resource")))
            count += sum(
                1 for c in configs if c.group_resource == gr and (c.namespace, c.name) == item_ref
            )
        if count == len(configs):
            return entry
    return None


def _renamed_known_good(
    ref: tuple[str, str], configs: Sequence[Config], old: Sequence[Mapping[str, Any]]
) -> list[Any]:
    """Improvement over OCM (which starts such an entry without any): the lastKnownGoodConfig of
    each new item when the placement's configurations were replaced by other objects (a rename),
    taken from the first old entry of the same placement, (group, resource) by (group, resource),
    position by position, when that type has as many items as before and each old one had a
    lastKnownGoodConfig; None where it cannot be paired."""
    found: list[Any] = [None] * len(configs)
    entry = next((e for e in old if placement_ref(e) == ref), None)
    if entry is None:
        return found
    before: dict[GroupResource, list[Any]] = {}
    for item in as_list(entry.get("configReferences")):
        if isinstance(item, Mapping):
            gr = (as_str(item.get("group")), as_str(item.get("resource")))
            before.setdefault(gr, []).append(item.get("lastKnownGoodConfig"))
    now: dict[GroupResource, list[int]] = {}
    for position, config in enumerate(configs):
        now.setdefault(config.group_resource, []).append(position)
    for gr, positions in now.items():
        goods = before.get(gr, [])
        if len(goods) != len(positions) or not all(isinstance(g, Mapping) for g in goods):
            continue
        for position, good in zip(positions, goods, strict=True):
            found[position] = good
    return found


def _progression(
    placement: Mapping[str, Any],
    defaults: Sequence[Config],
    old: Sequence[Mapping[str, Any]],
    hash_of: HashOf,
) -> JSON:
    ref = placement_ref(placement)
    configs = _progression_configs(defaults, placement)
    previous = _old_progression(ref, configs, old)
    old_items = [] if previous is None else mappings_in(previous.get("configReferences"))
    renamed = _renamed_known_good(ref, configs, old) if previous is None else [None] * len(configs)
    items: list[JSON] = []
    for config, known_good in zip(configs, renamed, strict=True):
        carried = ""
        last_applied: Any = None
        last_known_good: Any = known_good
        for old_item in old_items:
            desired = old_item.get("desiredConfig")
            if (
                (as_str(old_item.get("group")), as_str(old_item.get("resource"))) != config.group_resource
                or referent(desired) != (config.namespace, config.name)
            ):
                continue
            old_hash = as_str(as_mapping(desired).get("specHash"))
            if old_hash:
                carried = old_hash
            last_applied = old_item.get("lastAppliedConfig")
            last_known_good = old_item.get("lastKnownGoodConfig")
        item: JSON = {
            "group": config.group,
            "resource": config.resource,
            "desiredConfig": spec_hash_wire(config.namespace, config.name, _hashed(config, carried, hash_of)),
        }
        if isinstance(last_known_good, Mapping):
            item["lastKnownGoodConfig"] = dict(last_known_good)
        if isinstance(last_applied, Mapping):
            item["lastAppliedConfig"] = dict(last_applied)
        items.append(item)
    entry: JSON = {"namespace": ref[0], "name": ref[1]}
    if items:
        entry["configReferences"] = items
    conditions = None if previous is None else previous.get("conditions")
    if isinstance(conditions, list) and conditions:
        entry["conditions"] = [dict(c) if isinstance(c, Mapping) else c for c in conditions]
    return entry


def cma_status_references(cma: Mapping[str, Any], hash_of: HashOf) -> JSON:
    """The CMA's new ``status`` (v1alpha1): ``defaultconfigReferences`` always (5.1), and
    ``installProgressions`` cleared for Manual/empty type, rebuilt for a lifecycle-managed CMA of
    another type (5.2), left untouched for a self-managed one; spec hashes per 5.3. Other status
    keys are kept as they are."""
    status: JSON = dict(mapping_at(cma, "status"))
    _set_list(status, DEFAULT_CONFIG_REFERENCES, _default_references(cma, status.get(DEFAULT_CONFIG_REFERENCES), hash_of))
    if is_manual(cma):
        _set_list(status, INSTALL_PROGRESSIONS, [])
        return status
    if not is_lifecycle_managed(cma):
        return status
    defaults = default_configs(cma)
    old = mappings_in(status.get(INSTALL_PROGRESSIONS))
    progressions = [_progression(p, defaults, old, hash_of) for p in placement_strategies(cma)]
    _set_list(status, INSTALL_PROGRESSIONS, progressions)
    return status


# ------------------------------------------------------------------------------------------
# The configuration graph (6)
# ------------------------------------------------------------------------------------------


class AddonEntry(NamedTuple):
    """One MCA in the graph: its cluster, the object, and the configurations it should have."""

    cluster: str
    mca: Mapping[str, Any]
    desired: DesiredConfigs
    #: (group, resource) -> number of ``spec.configs`` items of that type (the MCA's overrides).
    overrides: Mapping[GroupResource, int]


@dataclass
class DefaultsNode:
    """The MCAs no placement configures: every change reaches them at once (no strategy)."""

    desired: DesiredConfigs
    children: dict[str, AddonEntry] = field(default_factory=dict)
    #: Nothing may be written to these MCAs: a placement that may own some of them is missing or
    #: unreadable (improvement 1).
    held: bool = False
    held_reason: str | None = None


@dataclass
class PlacementNode:
    """One placement of the install strategy (an ``installProgressions`` entry also in the spec)."""

    namespace: str
    name: str
    #: Position in ``spec.installStrategy.placements`` (for error paths).
    position: int
    placement: Mapping[str, Any] | None
    #: The rolloutStrategy to plan with (Progressive maxConcurrency filled in, 6.2).
    strategy: Any
    desired: DesiredConfigs
    groups: tuple[DecisionGroup, ...] = ()
    #: Every decision cluster.
    clusters: frozenset[str] = frozenset()
    #: Clusters not taken over by a later placement (those with an MCA selected by a later one).
    configured: frozenset[str] = frozenset()
    children: dict[str, AddonEntry] = field(default_factory=dict)
    #: Set when the placement cannot be rolled out (its MCAs are held): reason and message.
    error: str | None = None
    error_reason: str | None = None
    #: Why its decisions are not complete yet (no new clusters are put in flight), or None.
    unready: str | None = None
    #: Its ``installProgressions`` entry (configReferences with their lastKnownGoodConfig).
    progression: Mapping[str, Any] = field(default_factory=dict)

    @property
    def failure_strategy(self) -> str:
        """The rolloutStrategy's ``failureStrategy`` ("" when unset)."""
        return as_str(self.strategy.get("failureStrategy")) if isinstance(self.strategy, Mapping) else ""

    @property
    def key(self) -> str:
        """The reservation group and display name: ``<namespace>/<name>``."""
        return f"{self.namespace}/{self.name}"

    @property
    def strategy_type(self) -> str:
        if isinstance(self.strategy, Mapping):
            return as_str(effective_type(self.strategy)) or "?"
        return "?"

    @property
    def strategy_path(self) -> str:
        return f"spec.installStrategy.placements[{self.position}].rolloutStrategy"


@dataclass
class ConfigGraph:
    defaults: DefaultsNode
    nodes: list[PlacementNode] = field(default_factory=list)



def graph_defaults(cma: Mapping[str, Any]) -> DesiredConfigs:
    """6.1: the default configurations, de-duplicated, hashes from ``defaultconfigReferences``."""
    groups: dict[GroupResource, list[Config]] = {}
    for config in default_configs(cma):
        _append_unique(groups.setdefault(config.group_resource, []), config)
    hashes: dict[ConfigKey, str] = {}
    for item in as_list(mapping_at(cma, "status").get(DEFAULT_CONFIG_REFERENCES)):
        if not isinstance(item, Mapping):
            continue
        ref = referent(item.get("desiredConfig"))
        if ref is not None:
            key = (as_str(item.get("group")), as_str(item.get("resource")), ref[0], ref[1])
            hashes[key] = as_str(as_mapping(item.get("desiredConfig")).get("specHash"))
    for gr, items in groups.items():
        groups[gr] = [
            Config(c.group, c.resource, c.namespace, c.name, hashes[c.key]) if c.key in hashes else c for c in items
        ]
    return DesiredConfigs(groups)


def _placement_desired(
    defaults: DesiredConfigs, progression: Mapping[str, Any], field_name: str = "desiredConfig"
) -> DesiredConfigs:
    """6.2: defaults, each (group, resource) of the progression's configReferences replacing that
    group (hashes from the progression's desiredConfig, or from another ConfigSpecHash field)."""
    configs = []
    for item in as_list(progression.get("configReferences")):
        if not isinstance(item, Mapping):
            continue
        desired = item.get(field_name)
        ref = referent(desired)
        if ref is None:
            continue
        configs.append(
            Config(as_str(item.get("group")), as_str(item.get("resource")), ref[0], ref[1], as_str(as_mapping(desired).get("specHash")))
        )
    if not configs:
        return defaults
    groups = defaults.groups()
    _override(groups, configs)
    return DesiredConfigs(groups)


def last_known_good_desired(defaults: DesiredConfigs, progression: Mapping[str, Any]) -> DesiredConfigs:
    """The placement's configurations had every item its lastKnownGoodConfig (items without one
    are left out: check them first)."""
    return _placement_desired(defaults, progression, "lastKnownGoodConfig")


_NO_OVERRIDES: Mapping[GroupResource, int] = MappingProxyType({})


def _mca_desired(mca: Mapping[str, Any], base: DesiredConfigs) -> tuple[DesiredConfigs, Mapping[GroupResource, int]]:
    """6.4: the MCA's ``spec.configs`` replace whole groups; their hashes come from the MCA's own
    ``status.configReferences`` (same group/resource and desiredConfig namespace/name)."""
    spec = mca.get("spec")
    raw = spec.get("configs") if type(spec) is dict else None
    if not raw or type(raw) is not list:
        return base, _NO_OVERRIDES
    own = _addon_configs(raw)
    if not own:
        return base, _NO_OVERRIDES
    counts: dict[GroupResource, int] = {}
    for config in own:
        counts[config.group_resource] = counts.get(config.group_resource, 0) + 1
    wanted = {c.key for c in own}
    hashes: dict[ConfigKey, str] = {}
    for item in as_list(mapping_at(mca, "status").get("configReferences")):
        if not isinstance(item, Mapping):
            continue
        desired = item.get("desiredConfig")
        ref = referent(desired)
        if ref is None:
            continue
        key = (as_str(item.get("group")), as_str(item.get("resource")), ref[0], ref[1])
        if key in wanted:
            hashes[key] = as_str(as_mapping(desired).get("specHash"))
    groups = base.groups()
    _override(groups, (Config(c.group, c.resource, c.namespace, c.name, hashes.get(c.key, "")) for c in own))
    return DesiredConfigs(groups), counts


def mca_desired(mca: Mapping[str, Any], base: DesiredConfigs) -> DesiredConfigs:
    """6.4 for one MCA over ``base`` (its own ``spec.configs`` replace whole groups)."""
    return _mca_desired(mca, base)[0]


def _loose_clusters(decisions: Iterable[Any]) -> frozenset[str]:
    """Every clusterName of decision pages, whatever their labels (for a placement whose decisions
    cannot be grouped: its MCAs are held)."""
    found = set()
    for page in decisions:
        for item in as_list(mapping_at(page, "status").get("decisions")):
            cluster = as_mapping(item).get("clusterName")
            if isinstance(cluster, str) and cluster:
                found.add(cluster)
    return frozenset(found)


def effective_strategy(raw: Any, placement: Mapping[str, Any] | None) -> Any:
    """The rolloutStrategy to plan with: ``{type: All}`` when absent, or when it has neither
    ``type`` nor ``rolloutType`` (what OCM's CRD defaulting gives); ``rolloutType``, the older
    spelling of ``type``, is left for the planner to read (and to check against ``type``). A
    Progressive one without maxConcurrency (unset, 0 or "") takes the Placement's
    ``spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup`` (6.2)."""
    if raw is None:
        return {"type": ROLLOUT_TYPE_ALL}
    if not isinstance(raw, Mapping):
        return raw
    strategy = dict(raw)
    if effective_type(strategy) is None:
        strategy["type"] = ROLLOUT_TYPE_ALL
    if effective_type(strategy) != ROLLOUT_TYPE_PROGRESSIVE:
        return strategy
    body = strategy.get("progressive")
    body = dict(body) if isinstance(body, Mapping) else {}
    current = body.get("maxConcurrency")
    if current is None or (isinstance(current, int) and not isinstance(current, bool) and current == 0) or current == "":
        per_group = mapping_at(placement, "spec", "decisionStrategy", "groupStrategy").get("clustersPerDecisionGroup")
        if per_group is not None:
            body["maxConcurrency"] = per_group
    strategy["progressive"] = body
    return strategy


def _placement_node(
    position: int,
    strategy_item: Mapping[str, Any],
    progression: Mapping[str, Any],
    defaults: DesiredConfigs,
    found: PlacementInput | None,
) -> PlacementNode:
    namespace, name = placement_ref(strategy_item)
    placement = None if found is None else found.placement
    decisions = () if found is None else tuple(found.decisions)
    node = PlacementNode(
        namespace=namespace,
        name=name,
        position=position,
        placement=placement,
        strategy=effective_strategy(strategy_item.get("rolloutStrategy"), placement),
        desired=_placement_desired(defaults, progression),
        progression=progression,
    )
    if placement is None:
        node.clusters = _loose_clusters(decisions)
        node.error_reason = REASON_PLACEMENT_NOT_FOUND
        node.error = (
            f"Placement {namespace}/{name} not found: the add-ons of its clusters keep their current "
            f"configuration until it exists again or is removed from the install strategy"
        )
        return node
    try:
        node.groups = tuple(decision_groups(decisions))
    except DecisionGroupError as exc:
        node.clusters = _loose_clusters(decisions)
        node.error_reason = REASON_INVALID_PLACEMENT_DECISIONS
        node.error = (
            f"Placement {namespace}/{name} has invalid decisions ({exc}): the add-ons of its clusters "
            f"keep their current configuration until its decisions are fixed"
        )
        return node
    node.clusters = frozenset(c for group in node.groups for c in group.clusters)
    if placement_counts(placement)[0] > 0:
        node.unready = scheduling_gap(placement, decisions, len(node.clusters))
    return node


def build_graph(
    cma: Mapping[str, Any],
    mcas: Mapping[str, Mapping[str, Any]],
    placements: Mapping[tuple[str, str], PlacementInput],
) -> ConfigGraph:
    """The configuration graph of a lifecycle-managed CMA (6). ``cma`` carries the status built
    by ``cma_status_references``; ``mcas`` maps cluster name -> MCA of this add-on."""
    defaults = graph_defaults(cma)
    graph = ConfigGraph(defaults=DefaultsNode(desired=defaults))
    if not is_manual(cma):
        strategies: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
        for position, item in enumerate(placement_strategies(cma)):
            strategies.setdefault(placement_ref(item), (position, item))
        ordered: dict[tuple[str, str], Mapping[str, Any]] = {}
        for entry in as_list(mapping_at(cma, "status").get(INSTALL_PROGRESSIONS)):
            if isinstance(entry, Mapping) and placement_ref(entry) in strategies:
                ref = placement_ref(entry)
                ordered.pop(ref, None)  # a repeated entry counts at its last position
                ordered[ref] = entry
        for ref, progression in ordered.items():
            position, item = strategies[ref]
            graph.nodes.append(_placement_node(position, item, progression, defaults, placements.get(ref)))

    # 6.3: the last placement selecting a cluster configures its MCA.
    owner: dict[str, PlacementNode] = {}
    for node in graph.nodes:
        owner.update(dict.fromkeys(node.clusters, node))
    later: set[str] = set()
    for node in reversed(graph.nodes):
        # An MCA selected by a later placement is that one's: its cluster is not configured here.
        taken = [c for c in later.intersection(node.clusters) if c in mcas]
        node.configured = node.clusters.difference(taken) if taken else node.clusters
        later.update(node.clusters)
    owner_get = owner.get
    defaults_children = graph.defaults.children
    for cluster, mca in mcas.items():
        if type(mca) is not dict and not isinstance(mca, Mapping):
            continue
        target = owner_get(cluster)
        base = defaults if target is None else target.desired
        spec = mca.get("spec")
        if type(spec) is dict and not spec.get("configs"):
            entry = AddonEntry(cluster, mca, base, _NO_OVERRIDES)
        else:
            desired, overrides = _mca_desired(mca, base)
            entry = AddonEntry(cluster, mca, desired, overrides)
        if target is None:
            defaults_children[cluster] = entry
        else:
            target.children[cluster] = entry

    # Improvement 1: an MCA no readable placement selects may belong to a missing or unreadable one.
    blocked = [n for n in graph.nodes if n.error_reason in (REASON_PLACEMENT_NOT_FOUND, REASON_INVALID_PLACEMENT_DECISIONS)]
    if blocked:
        graph.defaults.held = True
        graph.defaults.held_reason = "; ".join(n.error or "" for n in blocked)
    return graph
