"""Which ManagedClusterAddOn events queue the MCA's own pass (controllers/addon/indexes.py
``mca_pass_keys``): not one that only changed what the pass does not read, the ``Configured``
condition that the CMA's passes set (docs/behaviour/addons.md 8.2, 8.3)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ocm_rollout.api.addon_hashing import config_spec_hash_annotation
from ocm_rollout.controllers.addon.indexes import mca_pass_keys, only_configured_changed
from ocm_rollout.controllers.addon.progressing import progressing_update

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _cond(type_: str, status: str, reason: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": reason, "lastTransitionTime": "2026-11-28T11:00:00Z"}


def _mca(configured: str | None = "True", rv: str = "1") -> dict[str, Any]:
    conditions = [_cond("ManifestApplied", "True", "Applied"), _cond("Progressing", "True", "Progressing")]
    if configured is not None:
        conditions.insert(1, _cond("Configured", configured, "ConfigurationsConfigured"))
    ref = {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
           "desiredConfig": {"namespace": "ns", "name": "config", "specHash": "h2"},
           "lastAppliedConfig": {"namespace": "ns", "name": "config", "specHash": "h1"}}
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "a", "namespace": "c1", "uid": "u", "resourceVersion": rv,
                     "annotations": {"x": "1"}, "managedFields": [{"manager": rv}]},
        "spec": {"installNamespace": "open-cluster-management-agent-addon"},
        "status": {"conditions": conditions, "configReferences": [ref]},
    }


def _changed(configured: str | None = "False", **edits: Any) -> dict[str, Any]:
    new = _mca(configured, rv="2")
    for path, value in edits.items():
        target = new
        *parents, last = path.split("__")
        for part in parents:
            target = target[part]
        target[last] = value
    return new


def test_a_configured_only_change_queues_no_pass() -> None:
    assert mca_pass_keys("MODIFIED", _changed("False"), _mca("True")) == []
    assert mca_pass_keys("MODIFIED", _changed("True"), _mca(None)) == []  # the condition set first
    assert mca_pass_keys("MODIFIED", _changed(None), _mca("True")) == []  # and removed


@pytest.mark.parametrize(
    "edits",
    [
        {"metadata__annotations": {"x": "2"}},
        {"metadata__ownerReferences": [{"uid": "cma"}]},
        {"metadata__deletionTimestamp": "2026-11-28T12:00:00Z"},
        {"spec__installNamespace": "other"},
        {"status__configReferences": []},
        {"status__namespace": "n"},
        {"kind": "Other"},
    ],
    ids=lambda e: next(iter(e)),
)
def test_any_other_change_queues_the_pass(edits: dict[str, Any]) -> None:
    assert mca_pass_keys("MODIFIED", _changed("False", **edits), _mca("True")) == ["c1/a"]


def test_a_change_of_another_condition_queues_the_pass() -> None:
    new = _changed("False")
    new["status"]["conditions"][-1] = _cond("Progressing", "False", "Completed")
    assert mca_pass_keys("MODIFIED", new, _mca("True")) == ["c1/a"]
    new = _changed("True")
    new["status"]["conditions"].append(_cond("Available", "True", "Healthy"))
    assert mca_pass_keys("MODIFIED", new, _mca("True")) == ["c1/a"]


def test_first_sight_deletion_and_damaged_objects_queue_the_pass() -> None:
    assert mca_pass_keys("ADDED", _mca(), None) == ["c1/a"]
    assert mca_pass_keys("", _mca(), None) == ["c1/a"]
    assert mca_pass_keys("DELETED", _changed("False"), _mca("True")) == ["c1/a"]
    damaged = _changed("False")
    damaged["status"] = "text"
    assert not only_configured_changed(damaged, _mca("True"))
    no_meta = _changed("False")
    del no_meta["metadata"]["annotations"]
    assert not only_configured_changed(no_meta, _mca("True"))


def test_the_pass_reads_nothing_of_the_configured_condition() -> None:
    """The premise of the filter: the Progressing update of two MCAs that differ only in
    Configured differs only in Configured."""
    hashes = config_spec_hash_annotation(_mca())
    assert hashes is not None
    work = {"metadata": {"name": "addon-a-deploy-0", "namespace": "c1", "generation": 1,
                         "labels": {"open-cluster-management.io/addon-name": "a"},
                         "annotations": {"open-cluster-management.io/config-spec-hash": hashes}},
            "status": {"conditions": [{**_cond("Applied", "True", "Applied"), "observedGeneration": 1},
                                      {**_cond("Available", "True", "Available"), "observedGeneration": 1}]}}
    outputs = []
    for configured in ("True", "False", None):
        mca = _mca(configured)
        status = progressing_update(copy.deepcopy(mca), [work], NOW)
        assert status is not None
        status["conditions"] = [c for c in status["conditions"] if c["type"] != "Configured"]
        outputs.append(status)
    assert outputs[0] == outputs[1] == outputs[2]
    assert [c["reason"] for c in outputs[0]["conditions"] if c["type"] == "Progressing"] == ["Completed"]
