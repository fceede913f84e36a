"""Finished-work garbage collection decisions (docs/behaviour/mwrs.md 9)."""

from __future__ import annotations

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL
from ocm_rollout.controllers.workset.ttl import DELETE, KEEP, WAIT, ttl_decision
from tests.unit.test_workset_fixtures import at, cond, work


def finished(ttl: int | None, *, complete: str = "True", ltt: float = 0, **kwargs: object) -> dict:
    spec: dict = {"workload": {"manifests": []}}
    if ttl is not None:
        spec["deleteOption"] = {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl}
    w = work("c1", spec=spec, labels={}, conditions=[cond("Complete", complete, 1, at(ltt))], **kwargs)  # type: ignore[arg-type]
    return w


def test_completed_work_waits_until_its_ttl_passes() -> None:
    decision = ttl_decision(finished(30), at(10))
    assert (decision.action, decision.after) == (WAIT, 20)


def test_completed_work_past_its_ttl_is_deleted() -> None:
    assert ttl_decision(finished(30), at(30)).action == DELETE


def test_zero_ttl_deletes_at_once() -> None:
    assert ttl_decision(finished(0), at(0)).action == DELETE


def test_work_without_ttl_is_kept() -> None:
    assert ttl_decision(finished(None), at(100)).action == KEEP


def test_work_not_complete_is_kept() -> None:
    assert ttl_decision(finished(0, complete="False"), at(100)).action == KEEP


def test_work_of_a_replica_set_is_never_collected() -> None:
    w = finished(0)
    w["metadata"]["labels"] = {MWRS_LABEL: "ns.x"}
    assert ttl_decision(w, at(100)).action == KEEP


def test_work_being_deleted_is_left_alone() -> None:
    assert ttl_decision(finished(0, deleting=True), at(100)).action == KEEP
