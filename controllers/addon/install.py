"""The install strategy and the lifecycle of ManagedClusterAddOns (docs/behaviour/addons.md 3, 4).

In: a ClusterManagementAddOn, the Placements of its install strategy with their decision pages
(``PlacementInput``), the MCAs named like it and the ManagedClusters, all as stored (JSON
dicts). Out: which MCAs to create and delete (``plan_install``), the owner references an MCA
must carry (``owner_references_update``) and the annotations it copies from its cluster
(``annotation_sync``). Pure: the shell reads the caches and writes.

Improvement over OCM: an MCA is deleted only when its cluster is absent from a complete,
consistent view of every existing placement's decisions. While some placement's view is not
final (decision pages being re-paged or not read yet, a spec not scheduled yet, a decision
without a group index) every delete is held; creates go ahead.

Deviation from docs/behaviour/addons.md 4.2/4.4 (the hub serves only v1alpha1): the controller owner reference
names ``addon.open-cluster-management.io/v1alpha1``; references are matched by name, kind and API
group, so OCM's v1beta1 reference and ours replace each other only when other fields differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocm_rollout.api.addon_v1alpha1 import API_VERSION as ADDON_API_VERSION
from ocm_rollout.api.addon_v1alpha1 import is_lifecycle_managed
from ocm_rollout.api.constants import (
    ADDON_ANNOTATION_PREFIX,
    CONDITION_PLACEMENT_SATISFIED,
    INSTALL_STRATEGY_PLACEMENTS,
)
from ocm_rollout.controllers.addon.configs import install_type, placement_ref, placement_strategies
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.decisions import (
    DecisionGroupError,
    decided_clusters,
    decision_groups,
    placement_counts,
    scheduling_gap,
)
from ocm_rollout.controllers.common.wire import (
    JSON,
    annotations_of,
    as_list,
    as_mapping,
    as_str,
    is_deleting,
    mapping_at,
    mappings_in,
    meta,
    name_of,
    namespace_of,
)

# The kinds of ocm_rollout.api.addon_v1alpha1's ClusterManagementAddOn and ManagedClusterAddOn (the core
# does not import the models; a unit test keeps these equal to them).
CMA_KIND = "ClusterManagementAddOn"
MCA_KIND = "ManagedClusterAddOn"
_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


@dataclass(frozen=True)
class McaCreate:
    """An MCA to create in namespace ``cluster`` (``body`` is the full object)."""

    cluster: str
    body: JSON


@dataclass(frozen=True)
class McaDelete:
    """An MCA to delete (with a precondition on ``uid``), and why."""

    cluster: str
    name: str
    uid: str
    # No controller owner reference to this CMA: a user (or another tool) made it.
    user_created: bool
    reason: str


@dataclass
class InstallPlan:
    """What the install strategy asks of the MCAs of one CMA."""

    creates: list[McaCreate] = field(default_factory=list)
    deletes: list[McaDelete] = field(default_factory=list)
    # Decided clusters without a ManagedCluster: no MCA is created for them (retry later).
    missing_clusters: list[str] = field(default_factory=list)
    # Clusters whose MCA would be deleted but for an incomplete placement view.
    held_deletes: list[str] = field(default_factory=list)
    hold_reason: str | None = None


# ------------------------------------------------------------------------------------------
# Readers
# ------------------------------------------------------------------------------------------


def strategy_placements(cma: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of each ``spec.installStrategy.placements[]`` entry, in spec order,
    without repeats."""
    refs: list[tuple[str, str]] = []
    for entry in placement_strategies(cma):
        ref = placement_ref(entry)
        if ref not in refs:
            refs.append(ref)
    return refs


def addon_annotations(cluster: Mapping[str, Any]) -> dict[str, str]:
    """The cluster's annotations whose key starts with ``addon.open-cluster-management.io``."""
    return {k: v for k, v in annotations_of(cluster).items() if k.startswith(ADDON_ANNOTATION_PREFIX)}


def controller_owner_reference(cma: Mapping[str, Any]) -> JSON:
    """The controller owner reference every MCA of a managed CMA carries."""
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": CMA_KIND,
        "name": name_of(cma),
        "uid": as_str(meta(cma).get("uid")),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _api_group(api_version: Any) -> str | None:
    """The group of an apiVersion (``v1`` -> ""), None when it does not parse (Go's
    ParseGroupVersion)."""
    if not isinstance(api_version, str):
        return None
    if not api_version:
        return ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return ""
    if len(parts) == 2:
        return parts[0]
    return None


def _same_owner(ref: Mapping[str, Any], required: Mapping[str, Any]) -> bool:
    """OCM's match: same name, same kind, same API group."""
    if ref.get("name") != required.get("name") or ref.get("kind") != required.get("kind"):
        return False
    group = _api_group(ref.get("apiVersion"))
    return group is not None and group == _api_group(required.get("apiVersion"))


def is_controlled_by(mca: Mapping[str, Any], cma: Mapping[str, Any]) -> bool:
    """Whether the MCA has a controller owner reference to this CMA (same uid when both are
    known)."""
    required = controller_owner_reference(cma)
    for ref in mappings_in(meta(mca).get("ownerReferences")):
        if ref.get("controller") is not True or not _same_owner(ref, required):
            continue
        uid = as_str(ref.get("uid"))
        if not uid or not required["uid"] or uid == required["uid"]:
            return True
    return False


# ------------------------------------------------------------------------------------------
# The install plan (4.2, 4.3)
# ------------------------------------------------------------------------------------------


def _satisfied_generation_gap(placement: Mapping[str, Any], label: str) -> str | None:
    """A Placement never scheduled (no PlacementSatisfied), or scheduled for an older spec."""
    cond = find_condition(mapping_at(placement, "status").get("conditions"), CONDITION_PLACEMENT_SATISFIED)
    if cond is None:
        return f"Placement {label} has not been scheduled yet"
    observed = cond.get("observedGeneration")
    generation = meta(placement).get("generation")
    if isinstance(observed, int) and isinstance(generation, int) and observed > 0 and observed != generation:
        return f"Placement {label} has not been scheduled for its current spec yet"
    return None


def _empty_view_gap(placement: Mapping[str, Any], pages: Sequence[Mapping[str, Any]], decided: int, label: str) -> str | None:
    """Why a view of a Placement that selects no cluster is not a final "nothing", or None.

    Final: the Placement was scheduled for its current spec, every page its status names was
    read (the scheduler writes one empty page for an empty selection) and the pages read hold
    no cluster.
    """
    gap = _satisfied_generation_gap(placement, label)
    if gap is not None:
        return gap
    read = {name_of(page) for page in pages}
    for group in as_list(mapping_at(placement, "status").get("decisionGroups")):
        for page in as_list(as_mapping(group).get("decisions")):
            if str(page) not in read:
                return f"decision pages of Placement {label} not read yet: {page}"
    if decided:
        return f"the decisions read for Placement {label} hold {decided} clusters but it selects none"
    return None


def _view_gap(placement: Mapping[str, Any], pages: Sequence[Mapping[str, Any]], label: str) -> str | None:
    """Why the decisions read are not the Placement's complete, current answer, or None."""
    try:
        groups = decision_groups(pages)
    except DecisionGroupError as exc:
        return f"Placement {label}: {exc}"
    decided = len(decided_clusters(groups))
    selected, _ = placement_counts(placement)
    if selected == 0:
        return _empty_view_gap(placement, pages, decided, label)
    return scheduling_gap(placement, pages, decided)


def _decision_clusters(pages: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every ``status.decisions[].clusterName`` of the pages (group labels not needed)."""
    clusters: set[str] = set()
    for page in pages:
        for item in as_list(mapping_at(page, "status").get("decisions")):
            cluster = as_mapping(item).get("clusterName")
            if isinstance(cluster, str) and cluster:
                clusters.add(cluster)
    return clusters


def _create_body(cma: Mapping[str, Any], cluster: str, cluster_obj: Mapping[str, Any]) -> JSON:
    metadata: JSON = {
        "name": name_of(cma),
        "namespace": cluster,
        "ownerReferences": [controller_owner_reference(cma)],
    }
    annotations = addon_annotations(cluster_obj)
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": ADDON_API_VERSION, "kind": MCA_KIND, "metadata": metadata, "spec": {}}


def plan_install(
    cma: Mapping[str, Any],
    placements: Mapping[tuple[str, str], PlacementInput],
    mcas: Iterable[Mapping[str, Any]],
    clusters: Mapping[str, Mapping[str, Any]],
) -> InstallPlan:
    """The MCAs to create and delete for ``cma`` (docs/behaviour/addons.md 4.2).

    ``placements`` maps (namespace, name) of each strategy placement to its input; ``mcas`` are
    the MCAs named like the CMA (others are ignored); ``clusters`` the ManagedClusters by name.
    Empty unless the CMA is lifecycle-managed with type Placements. A strategy placement missing
    from ``placements`` counts as an incomplete view (its answer is unknown).
    """
    plan = InstallPlan()
    if not is_lifecycle_managed(cma) or install_type(cma) != INSTALL_STRATEGY_PLACEMENTS:
        return plan
    addon = name_of(cma)
    required: set[str] = set()
    gaps: list[str] = []
    for namespace, name in strategy_placements(cma):
        label = f"{namespace}/{name}"
        given = placements.get((namespace, name))
        if given is None:
            gaps.append(f"Placement {label} was not read")
            continue
        if given.placement is None:
            continue  # 4.3: a Placement that does not exist selects nothing
        pages = [page for page in given.decisions if isinstance(page, Mapping)]
        required |= _decision_clusters(pages)
        gap = _view_gap(given.placement, pages, label)
        if gap is not None:
            gaps.append(gap)

    existing: dict[str, Mapping[str, Any]] = {}
    for mca in mcas:
        if isinstance(mca, Mapping) and name_of(mca) == addon and namespace_of(mca):
            existing[namespace_of(mca)] = mca

    for cluster in sorted(required - existing.keys()):
        cluster_obj = clusters.get(cluster)
        if not isinstance(cluster_obj, Mapping):
            plan.missing_clusters.append(cluster)
            continue
        plan.creates.append(McaCreate(cluster, _create_body(cma, cluster, cluster_obj)))

    for cluster in sorted(existing.keys() - required):
        mca = existing[cluster]
        if is_deleting(mca):
            continue
        if gaps:
            plan.held_deletes.append(cluster)
            continue
        user_created = not is_controlled_by(mca, cma)
        reason = f"cluster {cluster} is not selected by any placement of the install strategy"
        if user_created:
            reason += " (this ManagedClusterAddOn was not created by the add-on manager)"
        plan.deletes.append(
            McaDelete(cluster, addon, as_str(meta(mca).get("uid")), user_created, reason)
        )
    if plan.held_deletes:
        plan.hold_reason = "; ".join(gaps)
    return plan


# ------------------------------------------------------------------------------------------
# Owner references (4.4) and annotation sync (4.5)
# ------------------------------------------------------------------------------------------


def owner_references_update(mca: Mapping[str, Any], cma: Mapping[str, Any]) -> list[JSON] | None:
    """The MCA's new ``metadata.ownerReferences`` carrying the CMA's controller reference, or None
    when nothing changes (also when the CMA is not lifecycle-managed or is not the MCA's).

    The first existing reference with the same name, kind and API group is replaced when any of
    its fields differs; without one, the reference is appended.
    """
    if not is_lifecycle_managed(cma) or name_of(mca) != name_of(cma):
        return None
    required = controller_owner_reference(cma)
    raw = meta(mca).get("ownerReferences")
    refs: list[Any] = list(raw) if isinstance(raw, list) else []
    for index, ref in enumerate(refs):
        if not isinstance(ref, Mapping) or not _same_owner(ref, required):
            continue
        known = {key: ref[key] for key in _OWNER_FIELDS if key in ref}
        if known == required:
            return None
        refs[index] = required
        return refs
    refs.append(required)
    return refs


def annotation_sync(mca: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, str] | None:
    """The MCA's new full annotations: its ``addon.open-cluster-management.io*`` annotations made
    exactly the cluster's, other annotations kept; None when unchanged. Only for MCAs whose CMA
    has type Placements (the caller checks); the lifecycle annotation plays no part."""
    current = annotations_of(mca)
    wanted = {k: v for k, v in current.items() if not k.startswith(ADDON_ANNOTATION_PREFIX)}
    wanted.update(addon_annotations(cluster))
    return None if wanted == current else wanted
