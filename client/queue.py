"""An in-process work queue keyed by object, with the semantics of client-go's workqueue.

- A key is queued at most once however often it is added (de-duplication).
- A key being processed is never handed to a second worker; adding it meanwhile marks it dirty
  and it is queued again when the worker calls ``done``.
- ``add_after`` queues a key once a delay has passed (the earliest requested time wins).
- ``add_rate_limited`` queues it after an exponential back-off that ``forget`` resets; with
  ``at_least`` (an API server's Retry-After) the key is also held until then: an ``add`` or a
  shorter ``add_after`` meanwhile (a watch event) is moved to that time instead of running it
  sooner. Only the server's wait holds a key: the exponential part is superseded by an ``add``,
  as in client-go, so a fix made by a user is acted on at once.

Waiting getters are released one per ready key, and one timer (for the earliest delayed key)
serves them all: with many workers, a key coming due wakes one of them, not every one.

Controllers feed it from watch events (a change to a ManagedCluster re-queues the Placements
that depend on it, and so on) instead of writing annotations to wake each other, and drain it
with ``run_workers``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

log = logging.getLogger(__name__)


class QueueShutDown(Exception):
    """Raised by ``get`` once the queue is shut down and drained of waiting keys."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        name: str,
        *,
        base_delay: float = 0.005,
        max_delay: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        on_depth: Callable[[str, int], None] | None = None,
    ) -> None:
        self.name = name
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._clock = clock
        self._on_depth = on_depth
        self._ready: deque[K] = deque()  # FIFO of keys ready now
        self._ready_set: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()  # re-added while processing
        self._delayed: list[tuple[float, int, K]] = []  # heap of (due, seq, key)
        self._due: dict[K, float] = {}  # earliest due time of each delayed key
        self._failures: dict[K, int] = {}
        self._not_before: dict[K, float] = {}  # keys held until then (Retry-After)
        self._seq = itertools.count()
        self._waiters: deque[asyncio.Future[None]] = deque()  # getters waiting, first come first released
        self._timer: asyncio.TimerHandle | None = None  # fires at ``_timer_due`` (the queue's clock)
        self._timer_due: float | None = None
        self._shut_down = False

    def now(self) -> float:
        """The queue's clock (what ``add_after`` counts from)."""
        return self._clock()

    # -- adding ---------------------------------------------------------------------------
    def _held_for(self, key: K) -> float:
        """Seconds ``key`` is still held by a server's Retry-After (0 when it is not)."""
        until = self._not_before.get(key)
        if until is None:
            return 0.0
        left = until - self._clock()
        if left <= 0:
            del self._not_before[key]
            return 0.0
        return left

    def add(self, key: K) -> None:
        if self._shut_down:
            return
        held = self._held_for(key)
        if held > 0:
            self.add_after(key, held)
            return
        self._due.pop(key, None)  # an immediate add supersedes a pending delayed one
        if key in self._processing:
            self._dirty.add(key)
            return
        if key not in self._ready_set:
            self._ready.append(key)
            self._ready_set.add(key)
            self._report_depth()
            self._release()

    def add_after(self, key: K, delay: float) -> None:
        if self._shut_down:
            return
        delay = max(delay, self._held_for(key))
        if delay <= 0:
            self.add(key)
            return
        if key in self._ready_set:
            return  # already due now, earlier than asked
        due = self._clock() + delay
        current = self._due.get(key)
        if current is not None and current <= due:
            return
        self._due[key] = due
        heapq.heappush(self._delayed, (due, next(self._seq), key))
        if self._waiters:
            self._arm()

    def add_rate_limited(self, key: K, *, at_least: float = 0.0) -> None:
        """Queue ``key`` after its next back-off (and not before ``at_least`` seconds)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if at_least > 0:
            self._not_before[key] = self._clock() + at_least
        self.add_after(key, max(self.backoff(failures), at_least))

    def backoff(self, failures: int) -> float:
        """The delay before retry number ``failures + 1`` of a key."""
        return min(self._max_delay, self._base_delay * (2 ** min(failures, 62)))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)
        self._not_before.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    # -- taking ---------------------------------------------------------------------------
    def _promote_due(self) -> float | None:
        """Move delayed keys whose time has come to the ready list; return seconds to the next."""
        now = self._clock()
        while (due := self._next_due()) is not None:
            if due > now:
                return due - now
            _, _, key = heapq.heappop(self._delayed)
            del self._due[key]
            held = self._held_for(key)
            if held > 0:
                # Queued before a server's Retry-After began (a trigger's delay during the pass
                # that met the 429): it waits for the hold like any other add.
                self._due[key] = now + held
                heapq.heappush(self._delayed, (now + held, next(self._seq), key))
                continue
            if key in self._processing:
                self._dirty.add(key)
            elif key not in self._ready_set:
                self._ready.append(key)
                self._ready_set.add(key)
                self._report_depth()
        return None

    async def get(self) -> K:
        """Wait for a key and mark it as being processed; call ``done`` when finished."""
        while True:
            self._promote_due()
            if self._ready:
                key = self._ready.popleft()
                self._ready_set.discard(key)
                self._processing.add(key)
                self._report_depth()
                if self._ready:
                    self._release()  # more keys are ready: for another getter
                return key
            if self._shut_down:
                raise QueueShutDown(self.name)
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            self._arm()
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # released, then cancelled before it took a key: pass it on
                raise

    # -- waking getters -------------------------------------------------------------------
    def _release(self, count: int = 1) -> None:
        """Release up to ``count`` waiting getters, the longest waiting first."""
        while count > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

    def _next_due(self) -> float | None:
        """When the earliest delayed key comes due (superseded entries are dropped)."""
        while self._delayed:
            due, _, key = self._delayed[0]
            if self._due.get(key) == due:
                return due
            heapq.heappop(self._delayed)
        return None

    def _arm(self) -> None:
        """Make the timer fire when the earliest delayed key comes due (no sooner timer is kept)."""
        due = self._next_due()
        if due is None:
            self._disarm()
            return
        if self._timer is not None and self._timer_due is not None and self._timer_due <= due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet: the first getter arms it
            return
        self._disarm()
        self._timer_due = due
        self._timer = loop.call_later(max(due - self._clock(), 0.0), self._fire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_due = None

    def _fire(self) -> None:
        """The timer: release a getter per key come due, and wait for the next one."""
        self._timer = None
        self._timer_due = None
        self._promote_due()
        self._release(len(self._ready))
        if self._waiters:
            self._arm()

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    # -- state ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._ready)

    def pending(self) -> int:
        """Keys waiting now or later (not counting those being processed)."""
        return len(self._ready_set | set(self._due))

    def shut_down(self) -> None:
        self._shut_down = True
        self._ready.clear()
        self._ready_set.clear()
        self._delayed.clear()
        self._due.clear()
        self._dirty.clear()
        self._not_before.clear()
        self._report_depth()
        self._disarm()
        self._release(len(self._waiters))

    def _report_depth(self) -> None:
        if self._on_depth is not None:
            self._on_depth(self.name, len(self._ready))


R = TypeVar("R")
Reconcile = Callable[[K], Awaitable[R]]
"""A reconcile function; what it returns is for the queue's ``Settle`` to carry out."""
Settle = Callable[[WorkQueue[K], K, R | None, BaseException | None], None]
"""What happens to a key after its pass (called before the key is marked done): the pass's
result, or the exception it raised."""


def settle_seconds(queue: WorkQueue[K], key: K, result: float | None, error: BaseException | None) -> None:
    """The plain policy: a pass that raised is retried with back-off; one that returns seconds
    is looked at again after that long; a pass that did not raise resets the key's back-off."""
    if error is not None:
        queue.add_rate_limited(key)
        return
    queue.forget(key)
    if result is not None:
        queue.add_after(key, result)


async def run_workers(
    queue: WorkQueue[K],
    reconcile: Reconcile[K, Any],
    *,
    workers: int = 1,
    on_result: Callable[[str, float, BaseException | None], None] | None = None,
    settle: Settle[K, Any] = settle_seconds,
) -> None:
    """Drain ``queue`` with ``workers`` concurrent reconcilers until the queue shuts down; after
    each pass ``settle`` decides when the key comes back (``settle_seconds`` unless given), and
    ``on_result(queue_name, seconds_taken, error_or_None)`` is told."""

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            started = time.monotonic()
            error: BaseException | None = None
            result: Any = None
            try:
                result = await reconcile(key)
            except asyncio.CancelledError:
                queue.done(key)
                raise
            except Exception as exc:
                error = exc
                log.warning(
                    "reconcile failed",
                    extra={"key": str(key), "queue": queue.name, "error": repr(exc)},
                    exc_info=True,
                )
            # Settled before done: a hold the pass asks for (Retry-After) already applies when
            # done() re-adds a key that an event marked dirty meanwhile.
            try:
                settle(queue, key, result, error)
            finally:
                queue.done(key)
            if on_result is not None:
                on_result(queue.name, time.monotonic() - started, error)

    tasks = [asyncio.create_task(worker(), name=f"{queue.name}-worker-{i}") for i in range(workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
