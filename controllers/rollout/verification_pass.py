"""What one pass's ``verify`` step found (docs/behaviour/validation.md), for the controllers that
validate clusters (the ManifestWorkReplicaSet controller, the add-on manager): per placement its
checks' and plugin's state, the clusters whose validation failed on this pass, and when to look
again; and the ``ValidationFailed`` events of those failures.

Pure: plain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ocm_rollout.api.constants import EVENT_VALIDATION_FAILED
from ocm_rollout.controllers.common.rollout_text import WARNING, RolloutEvent
from ocm_rollout.controllers.rollout.plugin.conditions import ConditionValue


@dataclass(frozen=True)
class ValidationFailure:
    """A cluster whose validation failed on this pass (the ValidationFailed event)."""

    placement: str
    cluster: str
    message: str


@dataclass
class PlacementVerification:
    """What the step found for one placement: why its checks cannot run (they do not compile, or
    name an unregistered metric provider), its plugin, that plugin's PluginLoaded condition, and
    the errors of the plugin's calls (shown in the rollout's condition)."""

    placement: str
    invalid_checks: str = ""
    plugin: str = ""
    plugin_loaded: ConditionValue | None = None
    plugin_errors: list[str] = field(default_factory=list)


@dataclass
class PassVerification:
    """What the step found for the owner: per placement, the failures it decided, and the
    earliest moment a measurement or a plugin poll falls due."""

    placements: dict[str, PlacementVerification] = field(default_factory=dict)
    failures: list[ValidationFailure] = field(default_factory=list)
    next_at: datetime | None = None

    def due_at(self, moment: datetime | None) -> None:
        if moment is not None and (self.next_at is None or moment < self.next_at):
            self.next_at = moment

    def of(self, placement: str, plugin: str = "") -> PlacementVerification:
        """The placement's findings (made empty, naming ``plugin``, on first use)."""
        found = self.placements.get(placement)
        if found is None:
            found = self.placements[placement] = PlacementVerification(placement, plugin=plugin)
        return found


def validation_failed_events(failures: Sequence[ValidationFailure]) -> list[RolloutEvent]:
    """One Warning ``ValidationFailed`` per failure: the placement, the cluster and why."""
    return [
        RolloutEvent(
            EVENT_VALIDATION_FAILED,
            f"placement {f.placement}: cluster {f.cluster} failed validation: {f.message}",
            WARNING,
        )
        for f in failures
    ]
