"""What a verified rollout adds to a ManifestWorkReplicaSet's status (docs/behaviour/validation.md):

- ``PluginLoaded`` (OCM enhancement 231) when a placementRef names a plugin: Available, or Failed
  with the error (several plugins: the first that failed, else the first);
- ``PlacementVerified`` False ``InvalidCheck`` when a placementRef's checks do not compile (the
  message names the placement, the check and the field) or name a metric provider that is not
  registered; its clusters stay Validating;
- the rolling-out ``Progressing`` condition says what holds the rollout: a decision group waiting
  for a promotion (reason ``WaitingForPromotion``), the clusters being validated and each one's
  checks, the plugin's errors (the enhancement shows them in ``Progressing``).

Pure: no I/O, the clock is an argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from ocm_rollout.api.constants import (
    CONDITION_PLACEMENT_VERIFIED,
    CONDITION_PROGRESSING,
    REASON_FOUND_NEW_REVISION,
    REASON_INVALID_CHECK,
    REASON_NEW_REVISION_CREATED,
    REASON_WAITING_FOR_PROMOTION,
)
from ocm_rollout.controllers.common.conditions import find_condition, set_status_condition
from ocm_rollout.controllers.common.wire import JSON
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE, set_plugin_loaded
from ocm_rollout.controllers.rollout.verification_pass import PassVerification
from ocm_rollout.controllers.workset.plan import DeployPlan

#: Clusters listed by name in a message; the rest are counted.
LISTED: Final = 5
_ROLLING_OUT = (REASON_NEW_REVISION_CREATED, REASON_FOUND_NEW_REVISION)


def _listed(items: list[str]) -> str:
    shown = "; ".join(items[:LISTED])
    return shown + (f"; and {len(items) - LISTED} more" if len(items) > LISTED else "")


def holds(plan_u: DeployPlan, verification: PassVerification) -> tuple[str, str]:
    """What holds the update revision's rollout: (reason, text); reason is
    ``WaitingForPromotion`` when a group waits at a gate, else "" (text may still tell of
    validating clusters and plugin errors)."""
    parts: list[str] = []
    reason = ""
    for ref in plan_u.refs:
        if ref.promotion is not None and ref.promotion.waiting is not None:
            reason = REASON_WAITING_FOR_PROMOTION
            parts.append(ref.promotion.message(ref.name))
        if ref.promotion_problem:
            parts.append(f"placement {ref.name}: {ref.promotion_problem}")
        validating = ref.validating
        if validating:
            lines = [f"{c} ({ref.statuses[c].reason})" for c in validating]
            parts.append(f"placement {ref.name}: validating {len(validating)} cluster(s): {_listed(lines)}")
        found = verification.placements.get(ref.name)
        if found is not None and found.plugin_errors:
            parts.append(f"placement {ref.name}: plugin {found.plugin} errors: {_listed(found.plugin_errors)}")
    return reason, "; ".join(parts)


def apply(status: JSON, *, plan_u: DeployPlan, verification: PassVerification, now: datetime) -> JSON:
    """``status`` (as ``progress.finish_status`` made it) with the verified rollout's conditions."""
    if not verification.placements and not any(r.promotion is not None for r in plan_u.refs):
        return status
    new = copy.deepcopy(status)
    conditions: list[Any] = [dict(c) for c in new.get("conditions") or [] if isinstance(c, Mapping)]
    loaded = [f.plugin_loaded for f in verification.placements.values() if f.plugin_loaded is not None]
    if loaded:
        failed = [v for v in loaded if v.reason != REASON_AVAILABLE]
        set_plugin_loaded(conditions, failed[0] if failed else loaded[0], now)
    invalid = [f"placement {f.placement}: {f.invalid_checks}" for f in verification.placements.values() if f.invalid_checks]
    if invalid:
        set_status_condition(
            conditions, CONDITION_PLACEMENT_VERIFIED, "False", REASON_INVALID_CHECK,
            "; ".join(invalid) + " (its clusters stay Validating until the checks are fixed)", now,
        )
    progressing = find_condition(conditions, CONDITION_PROGRESSING)
    # finish_status wrote the rolling-out condition afresh on this pass; say what holds it.
    if progressing is not None and progressing.get("reason") in _ROLLING_OUT:
        reason, text = holds(plan_u, verification)
        if text:
            message = f"{progressing.get('message') or ''}; {text}"
            set_status_condition(
                conditions, CONDITION_PROGRESSING, "True", reason or str(progressing.get("reason")), message, now
            )
    new["conditions"] = conditions
    return new
