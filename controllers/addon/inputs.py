"""What the add-on manager's pure modules receive about one placement of a ClusterManagementAddOn:
the Placement object as stored (None when it does not exist) and its PlacementDecision pages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ocm_rollout.controllers.common.wire import JSON


@dataclass(frozen=True)
class PlacementInput:
    placement: JSON | None
    decisions: Sequence[JSON] = ()
