"""How long a change of one of an owner's many children waits before the owner's pass.

Some passes read every child of their owner: a ClusterManagementAddOn pass reads all its
ManagedClusterAddOns, a ManifestWorkReplicaSet pass plans over all its ManifestWorks. Their cost
grows with the fleet, and the children's status changes come in streams (one per agent report).
The changes within a moment share one pass: a child's change queues its owner after at least
``floor`` seconds and ``factor`` times the computing time of the owner's last pass, at most
``ceiling``. The passes of one owner then spend at most about ``1 / (factor + 1)`` of the process's
time whatever the fleet size, and the CPU spent per child does not grow with the number of
children (bench/addon_scale.py, bench/mwrs_scale.py). A change of the owner itself (its spec, its
placements) is not delayed: those come through other triggers. Fewer passes never change what a
pass decides: each plans from the caches as they are when it runs.

In: the computing seconds of each finished pass (``record``), the owner keys to queue (``add``);
out: ``queue.add_after(key, delay)``. No clock: the delay is relative.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from ocm_rollout.client.queue import WorkQueue

FLOOR_SECONDS = 0.2
FACTOR = 10.0
CEILING_SECONDS = 2.0

K = TypeVar("K", bound=Hashable)


class PassCost:
    """The computing seconds of one pass: the sum of its ``measure()`` sections (those that work
    over the owner's whole fleet), for ``Coalescer.record``."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextmanager
    def measure(self) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - began


class Coalescer(Generic[K]):
    """See the module docstring."""

    def __init__(
        self,
        queue: WorkQueue[K],
        floor: float = FLOOR_SECONDS,
        factor: float = FACTOR,
        ceiling: float = CEILING_SECONDS,
    ) -> None:
        self.queue = queue
        self.floor = floor
        self.factor = factor
        self.ceiling = ceiling
        self.cost: dict[K, float] = {}

    def delay(self, key: K) -> float:
        return min(max(self.floor, self.factor * self.cost.get(key, 0.0)), max(self.floor, self.ceiling))

    def record(self, key: K, seconds: float) -> None:
        """The computing time of the last pass of owner ``key``."""
        self.cost[key] = seconds

    def forget(self, key: K) -> None:
        self.cost.pop(key, None)

    def add(self, keys: Iterable[K]) -> list[K]:
        """Queue each owner of ``keys`` after its delay; returns no key (for a ``Trigger``, whose
        own delay is fixed)."""
        for key in keys:
            if key:
                self.queue.add_after(key, self.delay(key))
        return []
