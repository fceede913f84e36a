"""The score stage (spec §4): prioritizer weights, the built-in prioritizers and AddOn scores.

Weights start from the mode's defaults and each ``configurations`` entry is applied in order.
An entry without ``addOn`` is keyed by (type, builtIn), so a later one replaces an earlier one
(and a default); an entry with ``addOn`` is always a key of its own. Keys keep the position of
their first appearance (defaults first), which is the order prioritizers are built, checked,
scored and reported in (OCM iterates a Go map here, so its order is random).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1beta1 import Placement, PrioritizerPolicy
from ocm_rollout.controllers.placement.filters import MISCONFIGURED, OK, WARNING, Status
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot

BALANCE = constants.PRIORITIZER_BALANCE
STEADY = constants.PRIORITIZER_STEADY
RESOURCE_CPU = constants.PRIORITIZER_RESOURCE_ALLOCATABLE_CPU
RESOURCE_MEMORY = constants.PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY
BUILTIN_PRIORITIZERS = (BALANCE, STEADY, RESOURCE_CPU, RESOURCE_MEMORY)
MAX_SCORE = 100


@dataclass(frozen=True)
class PrioritizerKey:
    """A weight key: (type, builtIn) for entries without addOn, a unique entry otherwise."""

    type: str
    built_in: str
    add_on: tuple[str, str] | None = None  # (resourceName, scoreName)
    entry: int | None = None  # the configurations index of an entry with addOn


@dataclass(frozen=True)
class Prioritizer:
    name: str
    kind: str  # one of BUILTIN_PRIORITIZERS, or "AddOn"
    weight: int
    resource_name: str = ""
    score_name: str = ""


@dataclass(frozen=True)
class PrioritizerResult:
    """One prioritizer's contribution, as the debug endpoint shows it."""

    name: str
    weight: int
    scores: dict[str, int]


def prioritizer_weights(policy: PrioritizerPolicy | None) -> tuple[list[tuple[PrioritizerKey, int]], Status]:
    """The weights of a policy: defaults by mode, then each configuration in order."""
    policy = policy or PrioritizerPolicy()
    weights: dict[PrioritizerKey, int] = {}
    if policy.mode in (constants.PRIORITIZER_MODE_ADDITIVE, ""):
        weights[PrioritizerKey(constants.SCORE_COORDINATE_BUILTIN, BALANCE)] = 1
        weights[PrioritizerKey(constants.SCORE_COORDINATE_BUILTIN, STEADY)] = 1
    elif policy.mode != constants.PRIORITIZER_MODE_EXACT:
        return [], Status(MISCONFIGURED, "", f"incorrect prioritizer policy mode: {policy.mode}")
    for index, config in enumerate(policy.configurations):
        coordinate = getattr(config, "score_coordinate", None)
        if coordinate is None:
            return [], Status(MISCONFIGURED, "", "scoreCoordinate field is required")
        if coordinate.add_on is not None:
            add_on = (coordinate.add_on.resource_name, coordinate.add_on.score_name)
            key = PrioritizerKey(coordinate.type, coordinate.built_in or "", add_on, index)
        else:
            key = PrioritizerKey(coordinate.type, coordinate.built_in or "")
        weights[key] = config.weight
    return list(weights.items()), OK


def build_prioritizers(weights: Sequence[tuple[PrioritizerKey, int]]) -> tuple[list[Prioritizer], Status]:
    """Turn non-zero weights into prioritizers; unknown names and missing addOn are errors."""
    out = []
    for key, weight in weights:
        if weight == 0:
            continue
        if key.type == constants.SCORE_COORDINATE_BUILTIN:
            if key.built_in not in BUILTIN_PRIORITIZERS:
                return [], Status(MISCONFIGURED, "", f"incorrect builtin prioritizer: {key.built_in}")
            out.append(Prioritizer(key.built_in, key.built_in, weight))
        else:
            if key.add_on is None:
                return [], Status(MISCONFIGURED, "", "addOn should not be empty")
            resource, score = key.add_on
            out.append(Prioritizer(f"AddOn/{resource}/{score}", constants.SCORE_COORDINATE_ADDON, weight, resource, score))
    return out, OK


def uses_addon_scores(placement: Placement) -> list[str]:
    """The AddOnPlacementScore names a Placement's AddOn configurations read."""
    policy = placement.spec.prioritizer_policy
    if policy is None:
        return []
    names = []
    for config in policy.configurations:
        coordinate = getattr(config, "score_coordinate", None)
        if coordinate is not None and coordinate.type == constants.SCORE_COORDINATE_ADDON and coordinate.add_on is not None:
            names.append(coordinate.add_on.resource_name)
    return names


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def balance_scores(clusters: Sequence[ClusterView], snapshot: Snapshot, namespace: str, name: str) -> dict[str, int]:
    counts = snapshot.balance_counts(namespace, name)
    max_count = max(counts.values(), default=0)
    scores = {}
    for cluster in clusters:
        count = counts.get(cluster.name, 0)
        if count > 0:
            scores[cluster.name] = 2 * int(float(MAX_SCORE) * (0.5 - count / max_count))
        else:
            scores[cluster.name] = MAX_SCORE
    return scores


def steady_scores(clusters: Sequence[ClusterView], current: set[str]) -> dict[str, int]:
    return {c.name: MAX_SCORE if c.name in current else 0 for c in clusters}


def resource_scores(clusters: Sequence[ClusterView], resource: str) -> dict[str, int]:
    taking_part = [(c.name, c.resources[resource]) for c in clusters if resource in c.resources]
    if not taking_part:
        return {}
    values = [v for _, v in taking_part]
    low, high = min(values), max(values)
    scores = {}
    for name, value in taking_part:
        if high - low != 0:
            ratio = (value - low) / (high - low)
            scores[name] = int((ratio - 0.5) * 2.0 * 100.0)
        else:
            scores[name] = 100
    return scores


def addon_scores(
    clusters: Sequence[ClusterView], snapshot: Snapshot, prioritizer: Prioritizer, now: datetime
) -> tuple[dict[str, int], Status, datetime | None]:
    """Scores, a Warning naming expired AddOnPlacementScores, and the earliest future validUntil."""
    scores = {}
    expired = ""
    next_expiry: datetime | None = None
    resource = prioritizer.resource_name
    for cluster in clusters:
        scores[cluster.name] = 0
        view = snapshot.score(cluster.name, resource)
        if view is None:
            continue
        if view.valid_until is not None:
            if now > view.valid_until:
                expired += f" {cluster.name}/{resource}"
                continue
            if next_expiry is None or view.valid_until < next_expiry:
                next_expiry = view.valid_until
        for item_name, value in view.items:
            if item_name == prioritizer.score_name:
                scores[cluster.name] = value
    status = OK
    if expired:
        status = Status(WARNING, prioritizer.name, f"AddOnPlacementScores{expired} expired")
    return scores, status, next_expiry


def resource_of(kind: str) -> str:
    return "cpu" if kind == RESOURCE_CPU else "memory"
