"""A pass cancelled while its writes wait for a slot leaves no coroutine that was never awaited
(each write's coroutine is made only once its slot is free)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

from ocm_rollout.controllers.workset.aggregation import WriteFailure
from ocm_rollout.controllers.workset.indexes import ByOwner
from ocm_rollout.controllers.workset.plan import DeployPlan, RefPlan, WorkWrite
from ocm_rollout.controllers.workset.workbuild import Owner, owner_for
from ocm_rollout.controllers.workset.works_io import WorksIO


class Blocking(WorksIO):
    """Every write waits for ever; counts the writes begun."""

    begun = 0

    async def write(self, write: WorkWrite, owner: Owner) -> WriteFailure | None:
        Blocking.begun += 1
        await asyncio.Event().wait()
        return None


def test_a_cancelled_pass_leaves_no_write_that_was_never_awaited() -> None:
    nothing: Any = None
    io = Blocking(nothing, nothing, ByOwner(), nothing, concurrency=1)
    writes = [WorkWrite(f"c{i}", "p", {"metadata": {"name": f"w{i}"}}, None, None) for i in range(3)]
    plan = DeployPlan(refs=[RefPlan(name="p", placement={}, writes=writes)])

    async def run() -> None:
        task = asyncio.ensure_future(io.execute(plan, owner_for("ns", "app")))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(run())
        gc.collect()
    assert Blocking.begun == 1  # one slot: the other two were waiting when the pass was cancelled
    assert not [w for w in caught if "never awaited" in str(w.message)]
