"""The watch history of one resource: the window of recent events a watch can resume from,
kept as kube-apiserver's watch cache keeps it (k8s.io/apiserver/pkg/storage/cacher/watch_cache.go).

Events come in from `Store.write` with the time they were recorded; a watch that names a
resourceVersion gets the events after it, or None when the window no longer reaches back that
far (the hub answers 410 Expired, "too old resource version: <rv> (<oldest - 1>)").

The window's capacity follows the write rate, as kube-apiserver's does:

- it starts at the lower bound (kube-apiserver: 100) and doubles, up to the upper bound
  (kube-apiserver: 102,400; the local hub's default is 10,000), when it is full and its oldest
  event is more recent than the freshness duration (kube-apiserver: 75 s, the bookmark interval
  plus 15 s);
- it halves, down to the lower bound, when it is full and even its most recent quarter reaches
  back further than the freshness duration;
- a full window drops its oldest event for each new one.

So a quiet resource keeps about its lower bound of events, a busy one about what the freshness
duration holds, and memory stays bounded by the upper bound whatever the number of writes.

Pure: no I/O; the caller passes the time (a monotonic clock in seconds).
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Protocol, TypeVar

# kube-apiserver's watch cache bounds (defaultLowerBoundCapacity, DefaultEventFreshDuration).
MIN_CAPACITY = 100
FRESHNESS_SECONDS = 75.0
# kube-apiserver's upper bound, 100 * 1024 (`history` changes it). The window holds about the last
# 75 s of events, so the bound is reached only by a resource written over 1,365 times a second;
# a lower bound (it was 10,000) made the ManifestWork watches of a 10,000-cluster rollout, about
# 300 writes a second, expire every 30 s and list all works again, over and over.
MAX_CAPACITY = 100 * 1024


class Recorded(Protocol):
    """What the window needs of an event: its resourceVersion and when it was recorded."""

    @property
    def rv(self) -> int: ...

    @property
    def time(self) -> float: ...


E = TypeVar("E", bound=Recorded)


class WatchWindow(Generic[E]):
    """The retained events of one resource, oldest first."""

    def __init__(
        self,
        start_rv: int,
        *,
        max_capacity: int = MAX_CAPACITY,
        min_capacity: int = MIN_CAPACITY,
        freshness: float = FRESHNESS_SECONDS,
    ) -> None:
        if max_capacity < 1:
            raise ValueError("a watch history keeps at least one event")
        # Before any event is dropped, the window reaches back to where it started (the
        # hub's resourceVersion when it started), like a watch cache right after its list.
        self.start_rv = start_rv
        self.max_capacity = max_capacity
        self.min_capacity = max(1, min(min_capacity, max_capacity))
        self.freshness = freshness
        self.capacity = self.min_capacity
        self.events: deque[E] = deque()
        self.dropped = False

    def __len__(self) -> int:
        return len(self.events)

    def add(self, event: E, now: float) -> None:
        """Record `event` (the newest), resizing the window first, then dropping the oldest
        event if it is still full."""
        self._resize(now)
        if len(self.events) >= self.capacity:
            self.events.popleft()
            self.dropped = True
        self.events.append(event)

    def _resize(self, now: float) -> None:
        events = self.events
        if len(events) < self.capacity:
            return
        if now - events[0].time < self.freshness:
            self.capacity = min(self.capacity * 2, self.max_capacity)
            return
        quarter = self.capacity // 4
        # The start of the most recent quarter (with a capacity under 4: the oldest event).
        recent = events[len(events) - quarter] if quarter else events[0]
        if now - recent.time > self.freshness:
            self.capacity = max(self.capacity // 2, self.min_capacity)
            while len(events) > self.capacity:
                events.popleft()
                self.dropped = True

    def oldest_resumable(self) -> int:
        """The oldest resourceVersion a watch can resume from (kube-apiserver's `oldest - 1`):
        every event after it is still here."""
        if self.dropped and self.events:
            return self.events[0].rv - 1
        return self.start_rv

    def since(self, rv: int) -> list[E] | None:
        """The events after `rv`, or None when `rv` is older than the window reaches."""
        if rv < self.oldest_resumable():
            return None
        events = self.events
        if not events or events[0].rv > rv:
            return list(events)
        return [e for e in events if e.rv > rv]
