"""The processes ``ocm-rollout up`` starts next to its local hub, and how they are stopped.

``up`` serves the hub (and the live view) itself; the simulated agents
(``python -m ocm_rollout.sandbox.sim_main``) and each controller (``python -m ocm_rollout.cli run --controllers
NAME``, the deployment's own command) run as children, so that a fleet of thousands of clusters
spreads over every core as a real hub, its controllers and its klusterlets do.

Each child:
- starts in a session of its own, so a Ctrl-C on the terminal reaches ``up`` alone and ``up``
  stops the children in order (controllers and agents first, the hub last) instead of every
  process racing to exit;
- is told to end with SIGTERM if ``up`` itself dies (Linux ``PR_SET_PDEATHSIG``), so no agent or
  controller outlives a killed ``up``;
- writes its output where ``up`` says (the terminal, or ``up.log`` when the screen is the view's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ocm_rollout.sandbox.parent_death import parent_death_hook

log = logging.getLogger("controllers.up")

STOP_TIMEOUT_SECONDS = 20.0


@dataclass
class Child:
    """One child process of ``up``: its name (for messages), its command line and, once started,
    its ``asyncio`` process."""

    name: str
    argv: list[str]
    process: asyncio.subprocess.Process | None = field(default=None, repr=False)
    stopping: bool = False
    # File descriptors the child inherits (e.g. a listening socket ``up`` bound for it).
    pass_fds: tuple[int, ...] = ()

    async def start(self, output: IO[Any] | None) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            preexec_fn=parent_death_hook(),
            pass_fds=self.pass_fds,
        )

    async def wait(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit code (None if it never started)."""
        self.stopping = True
        process = self.process
        if process is None:
            return None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                log.warning("%s did not stop within %.0f s: killed", self.name, timeout)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        return process.returncode


def python_module(module: str, *args: str) -> list[str]:
    """The command line running ``module`` with this interpreter (the same virtualenv)."""
    return [sys.executable, "-m", module, *args]


async def stop_all(children: Sequence[Child]) -> None:
    """Stop every child at once and wait for all of them."""
    await asyncio.gather(*(child.stop() for child in children), return_exceptions=True)
