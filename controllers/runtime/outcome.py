"""What a pass says happens next, and the one retry policy that carries it out.

A reconcile function returns an ``Outcome`` value instead of a number of seconds or a private
retry counter (OCM's sdk-go returns ``RequeueError`` as a value for the same reason: the shell
decides, the controller only says what it needs):

- ``DONE``: nothing more to do until an event comes; the key's failures are forgotten.
- ``after(seconds)``: look again after that long (a soak, a deadline, a resync); failures are
  forgotten.
- ``back_off(reason, at_least=s)``: the pass could not do its work (a write failed, an input is
  broken); retry after the queue's exponential back-off, which grows with each consecutive
  back-off or exception and is only reset by a pass that ends in ``DONE`` or ``after``, and never
  sooner than ``at_least`` (an API server's ``Retry-After``).
- ``CONFLICT``: a write met a newer object (409); the watch event that caused it is usually a
  moment away, so look again shortly, neither growing nor resetting the back-off.

A pass that raises counts as ``back_off`` (at least the ``Retry-After`` of a 429 it raised).
``apply_outcome`` is the only place where these turn
into queue operations.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal, TypeVar

from ocm_rollout.client.queue import WorkQueue

Kind = Literal["done", "after", "back_off", "conflict"]

# After a write conflict the watch event that caused it is usually a moment away.
CONFLICT_RETRY_SECONDS = 0.5

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Outcome:
    """How a pass ended; build one with ``DONE``, ``after``, ``back_off`` or ``CONFLICT``."""

    kind: Kind
    seconds: float = 0.0
    reason: str = ""

    def __str__(self) -> str:
        if self.kind == "after":
            return f"after {self.seconds:.3g}s"
        if self.kind == "back_off":
            return f"back off ({self.reason})" if self.reason else "back off"
        return self.kind


DONE = Outcome("done")
CONFLICT = Outcome("conflict")


def after(seconds: float | None) -> Outcome:
    """Look again after ``seconds`` (``None``: nothing to look at, same as ``DONE``)."""
    if seconds is None:
        return DONE
    return Outcome("after", max(0.0, float(seconds)))


def back_off(reason: str = "", *, at_least: float | None = None) -> Outcome:
    return Outcome("back_off", seconds=max(0.0, at_least or 0.0), reason=reason)


def raised(exc: BaseException) -> Outcome:
    """The outcome of a pass that raised ``exc``: a back-off, no sooner than its Retry-After."""
    retry_after = getattr(exc, "retry_after", None)
    return back_off(repr(exc), at_least=retry_after if isinstance(retry_after, int | float) else None)


def sooner(first: Outcome, second: Outcome) -> Outcome:
    """The outcome that looks again first: a back-off or a conflict wins over a plan's recheck."""
    rank = {"back_off": 0, "conflict": 1, "after": 2, "done": 3}
    if rank[first.kind] != rank[second.kind]:
        return first if rank[first.kind] < rank[second.kind] else second
    if first.kind == "after" and second.seconds < first.seconds:
        return second
    return first


def apply_outcome(queue: WorkQueue[K], key: K, outcome: Outcome | None) -> float | None:
    """Carry ``outcome`` out on ``queue`` for ``key`` (which the worker has marked done).
    ``None`` is a pass that raised. Returns the delay chosen, or None when nothing is queued."""
    if outcome is None or outcome.kind == "back_off":
        # Only the server's wait (a 429's Retry-After) holds the key against events; the
        # exponential part is superseded by an event, as in client-go (a user's fix acts at once).
        at_least = 0.0 if outcome is None else outcome.seconds
        delay = max(queue.backoff(queue.failures(key)), at_least)
        queue.add_rate_limited(key, at_least=at_least)
        return delay
    if outcome.kind == "conflict":
        queue.add_after(key, CONFLICT_RETRY_SECONDS)
        return CONFLICT_RETRY_SECONDS
    queue.forget(key)
    if outcome.kind == "after":
        queue.add_after(key, outcome.seconds)
        return outcome.seconds
    return None
