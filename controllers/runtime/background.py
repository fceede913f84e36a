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
        # key -> (the owners to queue when it ends, the task)
        self._tasks: dict[Hashable, tuple[set[Any], asyncio.Task[None]]] = {}
        self._done: dict[Hashable, Done[T]] = {}

    def running(self, key: Hashable) -> bool:
        return key in self._tasks

    def has_result(self, key: Hashable) -> bool:
        return key in self._done

    def start(self, key: Hashable, owner: Any, make: Callable[[], Awaitable[T]], *, requeue: bool = True) -> bool:
        """Start a call of ``key`` for ``owner``; False when one runs (``owner`` then waits for
        it too: its end queues every owner that asked) or its result waits to be taken.
        ``requeue`` False: its end queues nobody (the next pass takes the result)."""
        running = self._tasks.get(key)
        if running is not None:
            if requeue:
                running[0].add(owner)
            return False
        if key in self._done:
            return False
        owners: set[Any] = {owner} if requeue else set()
        task = asyncio.get_running_loop().create_task(self._run(key, owners, make), name=f"background {key!r}")
        self._tasks[key] = (owners, task)
        return True

    async def _run(self, key: Hashable, owners: set[Any], make: Callable[[], Awaitable[T]]) -> None:
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
        self._done[key] = done
        for owner in sorted(owners, key=repr):
            self._requeue(owner)

    def take(self, key: Hashable) -> Done[T] | None:
        return self._done.pop(key, None)

    def forget(self, owner: Any, keys: Callable[[Hashable], bool] = lambda _key: False) -> None:
        """``owner`` is gone: it waits for nothing more; a call nobody waits for any more is
        cancelled. Results of the keys ``keys`` selects are dropped."""
        for key, (owners, task) in list(self._tasks.items()):
            if owner in owners:
                owners.discard(owner)
                if not owners:
                    task.cancel()
                    self._tasks.pop(key, None)
        for key in [k for k in self._done if keys(k)]:
            self._done.pop(key, None)

    def cancel_all(self) -> None:
        """Cancel every call in flight and drop every result (the controller stops)."""
        for _owners, task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        self._done.clear()

    async def close(self) -> None:
        tasks = [task for _owners, task in self._tasks.values()]
        self._tasks.clear()
        self._done.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
