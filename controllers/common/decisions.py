"""Reading a Placement's PlacementDecision pages: its decision groups, and whether the pages read
are its complete, current answer (``scheduling_gap``). Shared by every controller that rolls
something out over a placement's clusters. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ocm_rollout.api.constants import (
    CONDITION_PLACEMENT_SATISFIED,
    LABEL_DECISION_GROUP_INDEX,
    LABEL_DECISION_GROUP_NAME,
)
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.wire import labels_of, meta, name_of
from ocm_rollout.controllers.rollout.model import DecisionGroup

_GO_INT_RE = re.compile(r"^[+-]?[0-9]+$")


class DecisionGroupError(ValueError):
    """A PlacementDecision whose group-index label is missing or not an integer."""


def decided_clusters(groups: Iterable[DecisionGroup]) -> dict[str, tuple[str, int]]:
    """Cluster -> (group name, group index) of the first group that names it."""
    decided: dict[str, tuple[str, int]] = {}
    for group in groups:
        for cluster in group.clusters:
            decided.setdefault(cluster, (group.group_name, group.group_index))
    return decided


def decision_groups(decisions: Iterable[Mapping[str, Any]]) -> list[DecisionGroup]:
    """The decision groups of a placement from its PlacementDecision pages.

    Raises DecisionGroupError when a decision's group-index label does not parse as an
    integer (as OCM's decision tracker does).
    """
    merged: dict[tuple[str, int], list[str]] = {}
    for decision in decisions:
        labels = labels_of(decision)
        raw_index = labels.get(LABEL_DECISION_GROUP_INDEX, "")
        if not _GO_INT_RE.match(raw_index):
            raise DecisionGroupError(
                f"PlacementDecision {name_of(decision)!r}: label {LABEL_DECISION_GROUP_INDEX}="
                f"{raw_index!r} is not an integer"
            )
        key = (labels.get(LABEL_DECISION_GROUP_NAME, ""), int(raw_index))
        clusters = merged.setdefault(key, [])
        status = decision.get("status")
        items = status.get("decisions") if isinstance(status, Mapping) else None
        for item in items or ():
            if isinstance(item, Mapping):
                cluster = item.get("clusterName")
                if isinstance(cluster, str) and cluster:
                    clusters.append(cluster)
    return [
        DecisionGroup(group_name=name, group_index=index, clusters=tuple(clusters))
        for (name, index), clusters in sorted(merged.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


def placement_counts(placement: Mapping[str, Any]) -> tuple[int, int]:
    """(numberOfSelectedClusters, number of decision groups) from a Placement's status."""
    status = placement.get("status")
    if not isinstance(status, Mapping):
        return 0, 0
    selected = status.get("numberOfSelectedClusters")
    groups = status.get("decisionGroups")
    return (
        selected if isinstance(selected, int) and not isinstance(selected, bool) else 0,
        len(groups) if isinstance(groups, list) else 0,
    )


def scheduling_gap(placement: Mapping[str, Any], pages: Sequence[Mapping[str, Any]], decided: int) -> str | None:
    """Why the decisions read for ``placement`` are not (yet) its final word, or None.

    - It selects no cluster: never scheduled, or nothing matches (OCM calls that rolled out).
    - Its PlacementSatisfied condition answers an older generation of its spec (OCM leaves the
      condition's observedGeneration 0: then this check is skipped).
    - A decision page its status names was not read, or the pages read hold another number of
      clusters than ``numberOfSelectedClusters`` (pages and status are written one after the
      other, and caches see them at different moments).
    """
    name = name_of(placement)
    selected, _ = placement_counts(placement)
    if selected == 0:
        return f"Placement {name!r} has selected no clusters (yet)"
    status = placement.get("status")
    status = status if isinstance(status, Mapping) else {}
    generation = meta(placement).get("generation")
    satisfied = find_condition(status.get("conditions"), CONDITION_PLACEMENT_SATISFIED)
    observed = None if satisfied is None else satisfied.get("observedGeneration")
    if isinstance(observed, int) and observed > 0 and isinstance(generation, int) and observed != generation:
        return (
            f"Placement {name!r} has not been scheduled for its current spec "
            f"(generation {generation}; its status is for generation {observed})"
        )
    read = {name_of(page) for page in pages}
    missing = sorted(
        str(page)
        for group in status.get("decisionGroups") or ()
        if isinstance(group, Mapping)
        for page in group.get("decisions") or ()
        if str(page) not in read
    )
    if missing:
        return f"decision pages of Placement {name!r} not read yet: {', '.join(missing)}"
    if decided != selected:
        return f"the decisions read for Placement {name!r} hold {decided} of its {selected} selected clusters"
    return None
