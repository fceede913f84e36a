"""The phases of a check and of a cluster's checks together.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Phase(StrEnum):
    """A measurement's or a check's phase (Argo Rollouts' AnalysisPhase names)."""

    RUNNING = "Running"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"

    @property
    def completed(self) -> bool:
        return self is not Phase.RUNNING


def combine(phases: Iterable[Phase]) -> Phase:
    """The phase of a cluster's checks together: Failed if any failed or errored (the cluster
    fails), else Inconclusive if any is (the cluster stays Validating until its
    progressDeadline), else Running if any still runs, else Successful (also for no checks)."""
    seen = set(phases)
    if Phase.FAILED in seen or Phase.ERROR in seen:
        return Phase.FAILED
    if Phase.INCONCLUSIVE in seen:
        return Phase.INCONCLUSIVE
    if Phase.RUNNING in seen:
        return Phase.RUNNING
    return Phase.SUCCESSFUL
