"""Deadlines of objects stored with a time to live, as etcd leases expire them.

kube-apiserver stores Events with a lease of `--event-ttl` (default one hour), renewed by every
write of the Event; when it runs out etcd deletes the key, whatever its finalizers, and watches
see DELETED. The local hub's engine keeps one `Expiry` for Events: it records each write
(`touch`) and deletion (`forget`), asks which keys are `due`, and sleeps until `next_deadline`.

Pure: the caller passes the time (monotonic seconds).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

# kube-apiserver's --event-ttl default.
EVENT_TTL_SECONDS = 3600.0


class Expiry(Generic[K]):
    """The deadline of each live key, with a heap to find the next one."""

    def __init__(self) -> None:
        self.deadlines: dict[K, float] = {}
        # (deadline, order, key); entries whose deadline is no longer the key's are skipped.
        self._heap: list[tuple[float, int, K]] = []
        self._order = 0

    def __len__(self) -> int:
        return len(self.deadlines)

    def touch(self, key: K, deadline: float) -> bool:
        """Set `key`'s deadline; True when it is now the earliest of all (a sleeper should wake)."""
        earliest = self.next_deadline()
        self.deadlines[key] = deadline
        self._order += 1
        heapq.heappush(self._heap, (deadline, self._order, key))
        if len(self._heap) > 2 * len(self.deadlines) + 64:
            self._compact()
        return earliest is None or deadline < earliest

    def forget(self, key: K) -> None:
        self.deadlines.pop(key, None)

    def next_deadline(self) -> float | None:
        heap = self._heap
        while heap and self.deadlines.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def due(self, now: float) -> list[K]:
        """Keys whose deadline has passed, earliest first; they are forgotten."""
        out: list[K] = []
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > now:
                return out
            _, _, key = heapq.heappop(self._heap)
            del self.deadlines[key]
            out.append(key)

    def _compact(self) -> None:
        self._heap = [entry for entry in self._heap if self.deadlines.get(entry[2]) == entry[0]]
        heapq.heapify(self._heap)
