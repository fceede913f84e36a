"""Calls a pass starts but never waits for: a metric query, a rollout plugin's RPC.

A pass must not wait on a slow or hung service: that would hold a worker of the controller's
queue, and with it other owners' rollouts. So a pass *starts* such a call under a key (at most
one call per key runs at a time) and returns; when the call ends its result is kept under the
key and the owner's queue key is queued again, and the next pass *takes* the result.

- ``start(key, owner, make)``: start ``make()`` unless a call of ``key`` runs or its result
  waits to be taken; at most ``limit`` calls run at once (the others wait for a slot).
- ``take(key)``: the finished call's ``Done`` (its value, or the exception it raised), once.
- ``running(key)``: whether a call of ``key`` is started and not finished.
- ``forget(owner)``: cancel and drop everything of an owner that is gone.

Nothing here is persisted: what a result means is for the pass to write (e.g. a measurement on
the workload). A restart loses calls in flight, and the next pass starts them again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Done(Generic[T]):
    """A finished call: ``value`` when it returned, ``error`` when it raised."""

    value: T | None
    error: BaseException | None

    @property
    def ok(self) -> bool:
        return self.error is None


class BackgroundCalls(Generic[T]):
    """Keyed calls started by passes of one queue; ``requeue(owner)`` is called when one ends."""

    def __init__(self, requeue: Callable[[Any], None], limit: int = 64) -> None:
        self._requeue = requeue
        self._slots = asyncio.Semaphore(limit) if limit > 0 else None
        self._tasks: dict[Hashable, tuple[Any, asyncio.Task[None]]] = {}
        self._done: dict[Hashable, tuple[Any, Done[T]]] = {}

    def running(self, key: Hashable) -> bool:
        return key in self._tasks

    def has_result(self, key: Hashable) -> bool:
        return key in self._done

    def start(self, key: Hashable, owner: Any, make: Callable[[], Awaitable[T]], *, requeue: bool = True) -> bool:
        """Start a call of ``key`` for ``owner``; False when one runs or waits to be taken.
        ``requeue`` False: its end does not queue the owner (the next pass takes the result)."""
        if key in self._tasks or key in self._done:
            return False
        task = asyncio.get_running_loop().create_task(
            self._run(key, owner, make, requeue), name=f"background {key!r}"
        )
        self._tasks[key] = (owner, task)
        return True

    async def _run(self, key: Hashable, owner: Any, make: Callable[[], Awaitable[T]], requeue: bool) -> None:
        try:
            if self._slots is not None:
                async with self._slots:
                    done: Done[T] = Done(await make(), None)
            else:
                done = Done(await make(), None)
        except asyncio.CancelledError:
            self._tasks.pop(key, None)
            raise
        except Exception as exc:  # the pass that takes it reports it
            done = Done(None, exc)
        self._tasks.pop(key, None)
        self._done[key] = (owner, done)
        if requeue:
            self._requeue(owner)

    def take(self, key: Hashable) -> Done[T] | None:
        found = self._done.pop(key, None)
        return None if found is None else found[1]

    def forget(self, owner: Any) -> None:
        for key, (who, task) in list(self._tasks.items()):
            if who == owner:
                task.cancel()
                self._tasks.pop(key, None)
        for key, (who, _done) in list(self._done.items()):
            if who == owner:
                self._done.pop(key, None)

    def cancel_all(self) -> None:
        """Cancel every call in flight and drop every result (the controller stops)."""
        for _owner, task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        self._done.clear()

    async def close(self) -> None:
        tasks = [task for _owner, task in self._tasks.values()]
        self._tasks.clear()
        self._done.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
