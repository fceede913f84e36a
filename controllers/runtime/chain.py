"""A pass as an ordered chain of steps (OCM's reconcilers: finalize, add finalizer, deploy, status).

Each step is ``async step(controller, state) -> Outcome | None``: it reads what earlier steps put
in ``state`` (the pass's explicit inputs and outputs), does one thing, and returns ``None`` to go
on or an ``Outcome`` to end the pass there (a conflict, a finalizer just added, a failure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from ocm_rollout.controllers.runtime.outcome import Outcome

C = TypeVar("C")
S = TypeVar("S")
Step = Callable[[C, S], Awaitable[Outcome | None]]


async def run_chain(steps: Sequence[Step[C, S]], controller: C, state: S) -> Outcome | None:
    """Run ``steps`` in order; the first Outcome ends the pass. None when every step went on."""
    for step in steps:
        outcome = await step(controller, state)
        if outcome is not None:
            return outcome
    return None
