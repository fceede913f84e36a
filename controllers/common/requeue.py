"""When a controller looks at an object again for a timed recheck (a soak ending, a deadline
passing) when nothing else changes: in, the planner's seconds until its nearest recheck and the
resync period of the informers OCM's controller relies on for long waits; out, the requeue delay.

OCM requeues an object at its recheck only when that is nearer than its informers' resync
(30 minutes for ManifestWorkReplicaSets, 10 for add-ons) and counts on the resync for the rest.
The resync re-reconciles every object, so a progressDeadline of an hour is noticed at most one
resync late. Our controllers have no periodic resync, so a far recheck is looked at after one
resync period instead, and again from there: never later than OCM, and never forgotten.
"""

from __future__ import annotations


def next_look(recheck_after: float | None, resync_seconds: float) -> float | None:
    """Seconds until the next timed look at an object, or None when the planner has no recheck."""
    if recheck_after is None:
        return None
    return min(max(recheck_after, 0.0), resync_seconds)
