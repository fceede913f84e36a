"""How long a change of one of an owner's many children waits before the owner's pass.

Some passes read every child of their owner: a ClusterManagementAddOn pass reads all its
ManagedClusterAddOns, a ManifestWorkReplicaSet pass plans over all its ManifestWorks. Their cost
grows with the fleet, and the children's status changes come in streams (one per agent report).
The changes within a moment share one pass: a child's change queues its owner no sooner than
``factor`` times the computing time of the owner's last pass *after that pass ended*, and at
least ``floor`` and at most ``ceiling`` seconds after the change. The passes of one owner then
spend at most about ``1 / (factor + 1)`` of the time on their computing whatever the fleet size,
and the CPU spent per child does not grow with the number of children (bench/addon_scale.py,
bench/mwrs_scale.py). Counted from the change instead, a stream of changes arriving during a pass
would start the next one as soon as it ends: passes back to back (at 10,000 clusters, an add-on's
Progressive rollout ran 103 passes, each after the last). A change of the owner itself (its spec,
its placements) is not delayed: those come through other triggers. Fewer passes never change what
a pass decides: each plans from the caches as they are when it runs.

In: the computing seconds of each finished pass (``record``, at its end), the owner keys to queue
(``add``); out: ``queue.add_after(key, delay)``. The clock is the queue's.
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
    """See the module docstring. A pass of an owner runs inside ``passing(key, cost)``; a change
    heard meanwhile is held until the pass ends, and then waits as if it came at that moment (but
    no longer than ``ceiling`` from the change in all, and never less than ``floor``)."""

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
        # owner -> (computing seconds of its last pass, when that pass ended on the queue's clock)
        self.last: dict[K, tuple[float, float]] = {}
        # owners in a pass now -> when the first change heard during it came (None: none yet)
        self.running: dict[K, float | None] = {}

    def _wait(self, cost: float, ended: float, since: float, now: float) -> float:
        """From ``now``: ``factor * cost`` after ``ended``, at most ``ceiling`` after ``since``
        (the change), at least ``floor``."""
        rest = ended + self.factor * cost - now
        return max(self.floor, min(rest, since + self.ceiling - now))

    def delay(self, key: K) -> float:
        """How long a change of one of ``key``'s children, heard now between its passes, waits."""
        now = self.queue.now()
        cost, ended = self.last.get(key, (0.0, now))
        return self._wait(cost, ended, now, now)

    @contextmanager
    def passing(self, key: K, cost: PassCost) -> Iterator[None]:
        """Around a pass of owner ``key`` whose computing ``cost`` measures."""
        self.running[key] = None
        try:
            yield
        finally:
            self.record(key, cost.seconds)

    def record(self, key: K, seconds: float) -> None:
        """The computing time of the pass of owner ``key`` that just ended; a change heard during
        it is queued now."""
        now = self.queue.now()
        self.last[key] = (seconds, now)
        if key in self.running:
            since = self.running.pop(key)
            if since is not None:
                self.queue.add_after(key, self._wait(seconds, now, since, now))

    def forget(self, key: K) -> None:
        self.last.pop(key, None)
        self.running.pop(key, None)

    def add(self, keys: Iterable[K]) -> list[K]:
        """Queue each owner of ``keys`` after its delay (held until its pass ends when one is
        running); returns no key (for a ``Trigger``, whose own delay is fixed)."""
        for key in keys:
            if not key:
                continue
            if key in self.running:
                if self.running[key] is None:
                    self.running[key] = self.queue.now()
                continue
            self.queue.add_after(key, self.delay(key))
        return []
