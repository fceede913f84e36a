"""The wait of an MCA change before its CMA's pass (controllers/addon/coalesce.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ocm_rollout.client.queue import WorkQueue
from ocm_rollout.controllers.addon.coalesce import Coalescer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_cma_never_passed_waits_the_floor() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    assert coalescer.delay("a") == 0.2


def test_the_wait_is_the_factor_times_the_last_pass_within_floor_and_ceiling() -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.05)
    assert coalescer.delay("a") == 0.5
    coalescer.record("a", 0.001)
    assert coalescer.delay("a") == 0.2
    coalescer.record("a", 1.0)
    assert coalescer.delay("a") == 2.0
    assert coalescer.delay("b") == 0.2
    coalescer.forget("a")
    assert coalescer.delay("a") == 0.2


def test_add_queues_the_cma_after_its_wait_and_returns_no_key() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue("addon", clock=clock)
    coalescer = Coalescer(queue, floor=0.2, factor=10, ceiling=2)
    coalescer.record("a", 0.1)
    assert coalescer.add("a") == []
    assert coalescer.add("") == []
    assert queue._due == {"a": clock.now + 1.0}


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=20))
def test_the_wait_stays_within_floor_and_ceiling(costs: list[float]) -> None:
    coalescer = Coalescer(WorkQueue("addon", clock=Clock()), floor=0.2, factor=10, ceiling=2)
    for cost in costs:
        coalescer.record("a", cost)
        assert 0.2 <= coalescer.delay("a") <= 2.0


# -- which CMA events queue the add-on's MCAs again (controllers/addon/indexes.py) ----------------

def _cma(uid: str = "u1", status: str = "", annotations: dict[str, str] | None = None, deleting: bool = False) -> dict:
    meta: dict = {"name": "a", "uid": uid, "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    return {"metadata": meta, "spec": {}, "status": {"note": status}}


def test_only_what_an_mca_pass_reads_of_its_cma_queues_its_mcas_again() -> None:
    from ocm_rollout.controllers.addon.indexes import AddonIndexes

    ix = AddonIndexes()
    for cluster in ("c1", "c2"):
        ix.on_mca("ADDED", {"metadata": {"name": "a", "namespace": cluster}}, None)
    keys = ["c1/a", "c2/a"]
    assert sorted(ix.mca_keys_of_cma_event("", _cma())) == keys  # first sight (also after a restart)
    assert ix.mca_keys_of_cma_event("MODIFIED", _cma(status="x")) == []  # a status write
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(annotations={LIFECYCLE: "self"}))) == keys
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(annotations={LIFECYCLE: "self"}, deleting=True))) == keys
    assert sorted(ix.mca_keys_of_cma_event("ADDED", _cma(uid="u2"))) == keys  # created again
    assert sorted(ix.mca_keys_of_cma_event("DELETED", _cma(uid="u2"))) == keys
    assert sorted(ix.mca_keys_of_cma_event("MODIFIED", _cma(uid="u2"))) == keys  # forgotten on DELETED


LIFECYCLE = "addon.open-cluster-management.io/lifecycle"
