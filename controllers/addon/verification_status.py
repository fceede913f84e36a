"""What a verified rollout adds to a ClusterManagementAddOn's status (docs/behaviour/validation.md).

OCM's CMA status has no conditions of its own: each ``installProgressions`` entry has them. So per
placement whose rollout strategy has checks, a plugin or a promotion gate:

- ``PluginLoaded`` (OCM enhancement 231) on the entry when the strategy names a plugin: Available,
  or Failed with the error; removed when the strategy no longer names one;
- the entry's rolling-out ``Progressing`` condition (status True, reason Progressing) says what
  holds the rollout, with the reason of the first that applies: ``InvalidCheck`` (checks that do
  not compile, naming the check and the field, or that name an unregistered metric provider: the
  add-ons that applied stay Validating), ``WaitingForPromotion`` (a decision group waits at the
  gate, with the command that promotes it), ``Validating`` (add-ons being validated, each with
  what its checks say); the plugin's errors are listed too.

Pure: no I/O, the clock is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ocm_rollout.api.constants import (
    ADDON_CONDITION_PROGRESSING,
    CONDITION_TRUE,
    REASON_ADDON_PROGRESSING,
    REASON_INVALID_CHECK,
    REASON_VALIDATING,
    REASON_WAITING_FOR_PROMOTION,
)
from ocm_rollout.controllers.addon.configrollout import NodeReport
from ocm_rollout.controllers.addon.configs import INSTALL_PROGRESSIONS, placement_ref
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.wire import JSON
from ocm_rollout.controllers.rollout.plugin.conditions import PLUGIN_LOADED, set_plugin_loaded
from ocm_rollout.controllers.rollout.verification_pass import PassVerification, PlacementVerification

#: Add-ons listed by name in a message; the rest are counted.
LISTED: Final = 5


def promote_command(cma: str, placement: str) -> str:
    return f"ocm-rollout rollout promote --kind addon {cma} --placement {placement}"


def _listed(items: Sequence[str]) -> str:
    shown = "; ".join(items[:LISTED])
    return shown + (f"; and {len(items) - LISTED} more" if len(items) > LISTED else "")


def holds(cma: str, node: NodeReport, found: PlacementVerification | None) -> tuple[str, str]:
    """What holds the placement's rollout: (reason, text); reason is "" when nothing does (the
    text may still list the plugin's errors)."""
    parts: list[str] = []
    reasons: list[str] = []
    if found is not None and found.invalid_checks:
        reasons.append(REASON_INVALID_CHECK)
        parts.append(
            f"placement {node.key}: {found.invalid_checks} (its add-ons stay Validating until the checks are fixed)"
        )
    gate = node.promotion
    if gate is not None and gate.waiting is not None:
        reasons.append(REASON_WAITING_FOR_PROMOTION)
        parts.append(gate.message(node.key, promote_command(cma, node.key)))
    if node.promotion_problem:
        parts.append(f"placement {node.key}: {node.promotion_problem}")
    if node.validating:
        reasons.append(REASON_VALIDATING)
        lines = [f"{cluster} ({why})" for cluster, why in node.validating.items()]
        parts.append(f"placement {node.key}: validating {len(lines)} add-on(s): {_listed(lines)}")
    if found is not None and found.plugin_errors:
        parts.append(f"placement {node.key}: plugin {found.plugin} errors: {_listed(found.plugin_errors)}")
    return (reasons[0] if reasons else ""), "; ".join(parts)


def _entry(cma: str, entry: Mapping[str, Any], node: NodeReport, found: PlacementVerification | None, now: datetime) -> JSON | None:
    """The entry with the verified rollout's conditions; None when nothing changes."""
    conditions: list[Any] = [dict(c) if isinstance(c, Mapping) else c for c in entry.get("conditions") or []]
    changed = False
    if found is not None and found.plugin_loaded is not None:
        changed = set_plugin_loaded(conditions, found.plugin_loaded, now)
    elif (found is None or not found.plugin) and find_condition(conditions, PLUGIN_LOADED) is not None:
        conditions = [c for c in conditions if not (isinstance(c, Mapping) and c.get("type") == PLUGIN_LOADED)]
        changed = True
    progressing = find_condition(conditions, ADDON_CONDITION_PROGRESSING)
    # The configuration rollout wrote the rolling-out condition afresh on this pass; say what holds it.
    if (
        progressing is not None
        and progressing.get("status") == CONDITION_TRUE
        and progressing.get("reason") == REASON_ADDON_PROGRESSING
    ):
        reason, text = holds(cma, node, found)
        if text:
            message = f"{progressing.get('message') or ''} {text}".lstrip()
            changed = set_status_condition(
                conditions, ADDON_CONDITION_PROGRESSING, CONDITION_TRUE, reason or REASON_ADDON_PROGRESSING, message, now
            ) or changed
    if not changed:
        return None
    return {**entry, "conditions": conditions}


def apply(status: Mapping[str, Any], *, cma: str, nodes: Sequence[NodeReport], verification: PassVerification, now: datetime) -> JSON:
    """``status`` (as the configuration rollout planned it) with the verified rollout's
    conditions in its ``installProgressions`` entries."""
    out: JSON = dict(status)
    entries = status.get(INSTALL_PROGRESSIONS)
    if not isinstance(entries, list):
        return out
    by_placement = {(n.namespace, n.name): n for n in nodes}
    updated = list(entries)
    for position, entry in enumerate(entries):
        node = by_placement.get(placement_ref(entry)) if isinstance(entry, Mapping) else None
        if node is None:
            continue
        new = _entry(cma, entry, node, verification.placements.get(node.key), now)
        if new is not None:
            updated[position] = new
    if updated != entries:
        out[INSTALL_PROGRESSIONS] = updated
    return out
