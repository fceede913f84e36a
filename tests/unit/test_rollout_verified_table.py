"""The MWRS controller's statuses under a plugin agree with OCM enhancement 231's table
(controllers/rollout/plugin/states.py holds it as data): each row, through the controller's own
path (``rollout_status`` of the work, ``judge`` with the plugin's answer recorded, ``verified_status``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.controllers.rollout.plugin.states import STATUS_TABLE, ClusterStatus, TableRow, Validation
from ocm_rollout.controllers.rollout.verification import (
    ANNOTATION_VALIDATION,
    PluginAnswer,
    ValidationRecord,
    decided,
    judge,
)
from ocm_rollout.controllers.workset.status_mapping import revision_start, rollout_status
from ocm_rollout.controllers.workset.verified import validating_since, verified_status

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
THEN = "2026-01-01T11:59:00Z"


def work(progressing: bool | None, degraded: bool | str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Applied", "status": "True", "observedGeneration": 1, "lastTransitionTime": THEN}]
    if progressing is not None:
        conditions.append({"type": "Progressing", "status": str(progressing), "observedGeneration": 1,
                           "lastTransitionTime": THEN})
    if degraded is True:
        conditions.append({"type": "Degraded", "status": "True", "observedGeneration": 1, "lastTransitionTime": THEN})
    return {"metadata": {"name": "w", "namespace": "c1", "generation": 1, "annotations": annotations or {}},
            "status": {"conditions": conditions}}


def shown(row: TableRow) -> str:
    degraded = row.degraded if row.degraded is True else False
    plain = work(row.progressing, degraded)
    status = rollout_status(plain, revision_start(plain))
    if row.validation is None or status.status != "Succeeded":
        return verified_status(plain, status).shown
    since = validating_since(plain, status)
    record = ValidationRecord(1, since.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    if row.validation is not Validation.INPROGRESS:
        record = ValidationRecord(record.generation, record.since, plugin=PluginAnswer(row.validation.value, "", NOW))
    judgement = judge(compiled=None, plugin="p", variables={}, record=record, since=since, now=NOW)
    record = decided(record, judgement, NOW)
    annotated = work(row.progressing, degraded, {ANNOTATION_VALIDATION: record.to_json()})
    return verified_status(annotated, rollout_status(annotated, revision_start(annotated))).shown


@pytest.mark.parametrize("row", STATUS_TABLE, ids=lambda r: r.description)
def test_each_row_of_the_enhancements_table(row: TableRow) -> None:
    if row.progressing is None:
        # Without a Progressing condition the controller reads Applied and Available instead
        # (README improvement 1): here Available is not reported, so the work is not applied yet.
        # Either way the cluster is in flight, never done.
        assert shown(row) == "ToApply"
        return
    assert shown(row) == row.status.value


def test_the_table_has_validating() -> None:
    assert any(r.status is ClusterStatus.VALIDATING for r in STATUS_TABLE)
