"""The lease fence on the write path: a leader that lost its Lease sends no more writes.

Stopping the operator when a renewal fails is not enough: a pass already running (a write in a
worker thread, a coroutine between two writes) would still send. So every request that changes
something goes through ``WriteFence.admit`` first (``Kube.request_sync`` does it), at the moment
it is sent:

- A leader may send while ``now < last successful renewal + renew_deadline`` (monotonic clock,
  the renewal measured from *before* its request was sent). A standby, or a leader past that
  point, gets ``LeaseLost`` and nothing is sent.
- Another candidate may take the Lease over only ``lease_duration`` after it saw our last renewal
  (client-go's rule, see ``leader.py``), so between our last admitted write and the earliest
  moment a successor can act there are at least ``lease_duration - renew_deadline`` seconds
  (5 s by default). Each admitted write is given that much time at most (its request timeout):
  a request not answered by then is abandoned by the client.

Together with the rollout fence on the owner object (``ocm_rollout.controllers.rollout.reservations``),
which needs no timing at all, this is what keeps a lost leader from widening a rollout.
Without leader election there is no fence (``UNFENCED``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class LeaseLost(Exception):
    """A write refused because this process no longer holds the Lease (nothing was sent)."""


class WriteFence:
    """When writes may be sent, from the leader's successful renewals."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._send_until = float("-inf")
        self._land_until = float("-inf")

    def grant(self, renewed_at: float, *, renew_deadline: float, lease_duration: float) -> None:
        """A renewal (or acquisition) whose request was sent at ``renewed_at`` (this fence's
        clock) succeeded: writes may be sent until ``renewed_at + renew_deadline`` and must be
        answered by ``renewed_at + lease_duration``."""
        with self._lock:
            self._send_until = max(self._send_until, renewed_at + renew_deadline)
            self._land_until = max(self._land_until, renewed_at + lease_duration)

    def revoke(self) -> None:
        """Leadership ended (lost, released, or the process stops): refuse every write now."""
        with self._lock:
            self._send_until = float("-inf")
            self._land_until = float("-inf")

    def now(self) -> float:
        return self._clock()

    def admit(self) -> float | None:
        """Admit one write now: the seconds it may take at most, or raise LeaseLost."""
        with self._lock:
            now = self._clock()
            if now >= self._send_until:
                raise LeaseLost("this process does not hold the leader Lease (write not sent)")
            return max(self._land_until - now, 0.001)


class _Unfenced(WriteFence):
    def admit(self) -> float | None:
        return None


UNFENCED: WriteFence = _Unfenced()
"""Every write admitted, with no time of its own (``Kube``'s request timeout applies): runs
without leader election (``--no-leader-elect``, the local hub's ``up``)."""
