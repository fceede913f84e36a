"""Decision groups and PlacementDecision pages (spec §6).

Groups are cut from the selected clusters only: first the named ``decisionGroups`` (each takes
the clusters its selector matches that no earlier entry took), then the remaining clusters,
each sorted by name (or, with ``sortBy: Score``, by score then name) and cut into chunks of the
group length. Every group is then cut into pages
of at most 100 clusters named ``<placement>-decision-<k>``, k counting from 1 across groups.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ocm_rollout.api.cluster_v1beta1 import DECISION_PAGE_SIZE, GroupStrategy
from ocm_rollout.api.meta import parse_go_float
from ocm_rollout.controllers.placement.filters import MISCONFIGURED, OK, Status
from ocm_rollout.controllers.placement.selectors import (
    SelectorError,
    compile_claim_selector,
    compile_label_selector,
)
from ocm_rollout.controllers.placement.snapshot import ClusterView

PAGE_SIZE = DECISION_PAGE_SIZE


@dataclass(frozen=True)
class DecisionGroupResult:
    index: int
    name: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class DecisionPage:
    name: str
    group_index: int
    group_name: str
    clusters: tuple[str, ...]


def group_length(value: int | str, total: int) -> tuple[int, Status]:
    """The largest group size: an integer, or ceil(p / 100 * total) for ``"p%"`` in doubles."""
    if isinstance(value, int):
        length = value
    else:
        not_percentage = Status(MISCONFIGURED, "", f"{value} invalid type: string is not a percentage")
        if not value.endswith("%"):
            return total, not_percentage
        try:
            percent = parse_go_float(value[:-1])
        except ValueError:
            return total, not_percentage
        product = percent / 100 * float(total)
        length = math.ceil(product) if math.isfinite(product) else 0
    if length <= 0 or length > total:
        length = total
    return length, OK


def _chunks(
    name: str, clusters: list[str], length: int, scores: Mapping[str, int] | None
) -> list[tuple[str, tuple[str, ...]]]:
    if scores is None:
        clusters = sorted(clusters)
    else:
        clusters = sorted(clusters, key=lambda c: (-scores.get(c, 0), c))
    out = []
    while clusters:
        out.append((name, tuple(clusters[:length])))
        clusters = clusters[length:]
    return out


def decision_groups(
    strategy: GroupStrategy, selected: Sequence[ClusterView], scores: Mapping[str, int] | None = None
) -> tuple[list[DecisionGroupResult], Status]:
    """The groups of the selected clusters, and Misconfigured when the strategy is invalid.

    Each named group, and the remaining clusters before they are cut, are ordered by name, or
    with ``scores`` (``sortBy: Score``) by score, highest first, then by name.
    """
    length, status = group_length(strategy.clusters_per_decision_group, len(selected))
    if status.is_error:
        return [], status
    remaining = {c.name for c in selected}
    made: list[tuple[str, tuple[str, ...]]] = []
    for entry in strategy.decision_groups:
        selector = entry.group_cluster_selector
        try:
            labels = compile_label_selector(selector.label_selector)
            claims = compile_claim_selector(selector.claim_selector)
        except SelectorError as exc:
            return _indexed(made), Status(MISCONFIGURED, "", str(exc))
        matched = []
        for cluster in selected:
            if cluster.name in remaining and labels.matches(cluster.labels) and claims.matches(cluster.claims):
                matched.append(cluster.name)
                remaining.discard(cluster.name)
        made.extend(_chunks(entry.group_name, matched, length, scores))
    made.extend(_chunks("", list(remaining), length, scores))
    if not made:
        made.append(("", ()))
    return _indexed(made), OK


def _indexed(made: list[tuple[str, tuple[str, ...]]]) -> list[DecisionGroupResult]:
    return [DecisionGroupResult(index, name, clusters) for index, (name, clusters) in enumerate(made)]


def decision_pages(placement_name: str, groups: Sequence[DecisionGroupResult]) -> list[DecisionPage]:
    """Pages of at most 100 clusters; an empty group makes one empty page."""
    pages = []
    number = 1
    for group in groups:
        chunks = [group.clusters[i : i + PAGE_SIZE] for i in range(0, len(group.clusters), PAGE_SIZE)] or [()]
        for chunk in chunks:
            pages.append(DecisionPage(f"{placement_name}-decision-{number}", group.index, group.name, tuple(chunk)))
            number += 1
    return pages
