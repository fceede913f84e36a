"""Manual promotion: which decision groups of a placement may be rolled out to, given
``rolloutStrategy.promotion`` and the promotions recorded on the owner.

Promotions are declarative, like pause: ``ocm-rollout rollout promote`` writes the annotation
``rollout.ocm-rollout.io/promoted`` on the ManifestWorkReplicaSet (or ClusterManagementAddOn),
JSON ``{"<placement>": {"revision": "<revision>", "groups": [<group index>, ...]}}``. A
promotion holds only for the revision it names, so the next rollout waits again.

The gate walks the placement's decision groups in rollout order (mandatory groups first, then
by index; the planner's order): every group may proceed up to the first gated group whose index
has not been promoted; that group waits, and so does every group after it.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_PROMOTED
from ocm_rollout.api.rollout_checks import RolloutPromotion
from ocm_rollout.controllers.rollout.model import DecisionGroup, GroupKey, MandatoryGroupRef


class PromotionError(ValueError):
    """A promotion that cannot be written (nothing waits, or a bad request)."""


@dataclass(frozen=True)
class Promotion:
    """The groups promoted for one placement's rollout of ``revision``."""

    revision: str
    groups: frozenset[int]

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "groups": sorted(self.groups)}


def read_promotions(annotations: Mapping[str, str]) -> tuple[dict[str, Promotion], str | None]:
    """The promotions of the annotation, by placement, and what was wrong with it (None when
    nothing). Malformed entries are skipped (a malformed annotation promotes nothing)."""
    raw = annotations.get(ANNOTATION_ROLLOUT_PROMOTED)
    if raw is None or not raw.strip():
        return {}, None
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        return {}, f"annotation {ANNOTATION_ROLLOUT_PROMOTED} is not JSON: {exc}"
    if not isinstance(doc, dict):
        return {}, f"annotation {ANNOTATION_ROLLOUT_PROMOTED} is not a JSON object"
    out: dict[str, Promotion] = {}
    problems: list[str] = []
    for placement, entry in doc.items():
        revision = entry.get("revision") if isinstance(entry, dict) else None
        groups = entry.get("groups") if isinstance(entry, dict) else None
        if (
            not isinstance(revision, str)
            or not isinstance(groups, list)
            or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in groups)
        ):
            problems.append(f"{placement!r} is not {{revision: string, groups: [index, ...]}}")
            continue
        out[placement] = Promotion(revision, frozenset(groups))
    problem = f"annotation {ANNOTATION_ROLLOUT_PROMOTED}: " + "; ".join(problems) if problems else None
    return out, problem


def promoted_groups(promotions: Mapping[str, Promotion], placement: str, revision: str) -> frozenset[int]:
    """The group indices promoted for ``placement``'s rollout of ``revision``."""
    entry = promotions.get(placement)
    if entry is None or entry.revision != revision:
        return frozenset()
    return entry.groups


def rollout_order(groups: Iterable[DecisionGroup], mandatory: Sequence[MandatoryGroupRef]) -> tuple[GroupKey, ...]:
    """The decision groups in the planner's rollout order: the mandatory groups, then the others
    whose index is below the number of distinct indices, each part by (index, name)."""
    keys = sorted({g.key for g in groups}, key=lambda k: (k.group_index, k.group_name))
    index_count = len({k.group_index for k in keys})
    selected: set[GroupKey] = set()
    for ref in mandatory:
        if ref.group_name:
            selected.update(k for k in keys if k.group_name == ref.group_name)
        else:
            selected.update(k for k in keys if k.group_index == ref.group_index)
    first = [k for k in keys if k in selected]
    rest = [k for k in keys if k not in selected and 0 <= k.group_index < index_count]
    return (*first, *rest)


def gated_groups(spec: RolloutPromotion | None, order: Sequence[GroupKey]) -> tuple[GroupKey, ...]:
    """The groups of ``order`` that wait for a promotion: those ``decisionGroups`` selects (a
    name selects every group of that name; otherwise the index selects), or, when it is empty,
    every group after the first in rollout order."""
    if spec is None or not order:
        return ()
    if not spec.decision_groups:
        return tuple(order[1:])
    selected = []
    for key in order:
        for ref in spec.decision_groups:
            if ref.group_name is not None:
                if key.group_name == ref.group_name:
                    selected.append(key)
                    break
            elif key.group_index == ref.group_index:
                selected.append(key)
                break
    return tuple(selected)


@dataclass(frozen=True)
class PromotionGate:
    """Which groups may proceed (``open``), and the group waiting for a promotion (None when
    none waits); ``waiting`` and every group after it in rollout order are held."""

    open: tuple[GroupKey, ...]
    waiting: GroupKey | None
    held: tuple[GroupKey, ...]

    def allows(self, key: GroupKey) -> bool:
        return key in self.open

    def message(self, placement: str, command: str = "") -> str:
        """What waits, and the command that promotes it (``command``; default: a
        ManifestWorkReplicaSet's ``ocm-rollout rollout promote --placement <placement>``)."""
        if self.waiting is None:
            return ""
        name = f" ({self.waiting.group_name})" if self.waiting.group_name else ""
        return (
            f"placement {placement}: decision group {self.waiting.group_index}{name} waits for a promotion "
            f"({command or f'ocm-rollout rollout promote --placement {placement}'})"
        )


def gate(spec: RolloutPromotion | None, order: Sequence[GroupKey], promoted: frozenset[int]) -> PromotionGate:
    """The gate of one placement's rollout: ``order`` its decision groups in rollout order,
    ``promoted`` the group indices promoted for the revision rolling out."""
    gated = set(gated_groups(spec, order))
    for position, key in enumerate(order):
        if key in gated and key.group_index not in promoted:
            return PromotionGate(tuple(order[:position]), key, tuple(order[position:]))
    return PromotionGate(tuple(order), None, ())


def promote(
    annotations: Mapping[str, str],
    placement: str,
    revision: str,
    spec: RolloutPromotion | None,
    order: Sequence[GroupKey],
    group: int | None = None,
) -> tuple[str, int]:
    """The new annotation value that promotes ``group`` (default: the group waiting now) of
    ``placement``'s rollout of ``revision``, and the promoted index. A promotion recorded for
    another revision is replaced. Raises ``PromotionError`` when there is nothing to promote."""
    if spec is None:
        raise PromotionError(f"placement {placement} has no promotion gate (rolloutStrategy.promotion)")
    promotions, _ = read_promotions(annotations)
    already = promoted_groups(promotions, placement, revision)
    gated_indices = {key.group_index for key in gated_groups(spec, order)}
    if group is None:
        waiting = gate(spec, order, already).waiting
        if waiting is None:
            raise PromotionError(f"placement {placement}: no decision group waits for a promotion")
        group = waiting.group_index
    elif group not in gated_indices:
        raise PromotionError(f"placement {placement}: decision group {group} is not gated")
    elif group in already:
        raise PromotionError(f"placement {placement}: decision group {group} is already promoted")
    promotions[placement] = Promotion(revision, already | {group})
    value = json.dumps({k: v.to_json() for k, v in sorted(promotions.items())}, separators=(",", ":"))
    return value, group


def placement_gate(
    raw_promotion: Any,
    groups: Iterable[DecisionGroup],
    mandatory: Sequence[MandatoryGroupRef],
    promotions: Mapping[str, Promotion],
    placement: str,
    revision: str,
) -> PromotionGate | None:
    """The gate of ``placement``'s rollout of ``revision`` from its strategy's ``promotion`` as
    stored (wire JSON; None: no gate). A ``promotion`` the model rejects gates every group after
    the first (the default of a ``Manual`` promotion): a gate that cannot be read holds rather
    than opens."""
    if raw_promotion is None:
        return None
    try:
        spec = RolloutPromotion.model_validate(raw_promotion)
    except ValueError:
        spec = RolloutPromotion(type="Manual")
    order = rollout_order(groups, mandatory)
    return gate(spec, order, promoted_groups(promotions, placement, revision))
