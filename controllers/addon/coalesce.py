"""How long a change of one of its MCAs (or add-on works) waits before its CMA's pass.

A CMA pass reads every MCA of the add-on, so its cost grows with the fleet; the changes of many
MCAs within a moment share one pass. The wait is at least ``floor`` seconds and ``factor`` times
the computing time of the CMA's last pass, at most ``ceiling``: the passes of a CMA spend at most
about ``1 / (factor + 1)`` of the process's time whatever the fleet size, so the CPU spent per MCA
does not grow with the number of MCAs (bench/addon_scale.py). A change of the CMA itself, of its
placements or configurations, is not delayed (those come through other triggers).

In: the computing seconds of each finished pass (``record``), the CMA names to queue (``add``);
out: ``queue.add_after(name, delay)``. No clock: the delay is relative.
"""

from __future__ import annotations

from ocm_rollout.client.queue import WorkQueue

FLOOR_SECONDS = 0.2
FACTOR = 10.0
CEILING_SECONDS = 2.0


class Coalescer:
    """See the module docstring."""

    def __init__(
        self,
        queue: WorkQueue[str],
        floor: float = FLOOR_SECONDS,
        factor: float = FACTOR,
        ceiling: float = CEILING_SECONDS,
    ) -> None:
        self.queue = queue
        self.floor = floor
        self.factor = factor
        self.ceiling = ceiling
        self.cost: dict[str, float] = {}

    def delay(self, name: str) -> float:
        return min(max(self.floor, self.factor * self.cost.get(name, 0.0)), max(self.floor, self.ceiling))

    def record(self, name: str, seconds: float) -> None:
        """The computing time of the last pass of CMA ``name``."""
        self.cost[name] = seconds

    def forget(self, name: str) -> None:
        self.cost.pop(name, None)

    def add(self, name: str) -> list[str]:
        """Queue CMA ``name`` after its delay; returns no key (for a ``Trigger``, whose own
        delay is fixed)."""
        if name:
            self.queue.add_after(name, self.delay(name))
        return []
