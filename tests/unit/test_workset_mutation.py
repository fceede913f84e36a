"""A rollout plugin's MutateManifestWork (controllers/workset/mutation.py, mutation_record.py):
the mutated work counts as holding the revision until someone else changes its spec, and the
labels and annotations the plugin added are kept on later metadata writes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.controllers.workset.indexes import Forms
from ocm_rollout.controllers.workset.mutation import mutated_write
from ocm_rollout.controllers.workset.mutation_record import ANNOTATION_MUTATION
from ocm_rollout.controllers.workset.plan import WorkWrite
from ocm_rollout.controllers.workset.workbuild import desired_metadata, owner_for

TEMPLATE: dict[str, Any] = {"workload": {"manifests": [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}},
]}}
MWRS: dict[str, Any] = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}, "spec": {"manifestWorkTemplate": TEMPLATE}}
OWNER = owner_for("ns", "web")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def created(mutated_spec: dict[str, Any]) -> dict[str, Any]:
    desired = {"metadata": {"name": "w", "namespace": "c1", "labels": {"owner": "x"}, "annotations": {}},
               "spec": copy.deepcopy(TEMPLATE)}
    write = WorkWrite("c1", "fleet", desired, None, None)
    mutated = {"metadata": {"annotations": {"plugin/position": "1/3"}, "labels": {"plugin/wave": "1"}},
               "spec": mutated_spec}
    done = mutated_write(write, mutated, TEMPLATE)
    assert done.widens and done.patch is None
    stored = copy.deepcopy(done.desired)
    stored["metadata"].update(uid="w1", generation=1)
    return stored


def mutated_spec() -> dict[str, Any]:
    spec = copy.deepcopy(TEMPLATE)
    spec["workload"]["manifests"][0]["metadata"]["labels"] = {"rollout-index": "1"}
    return spec


def test_a_mutated_work_holds_the_revision_until_its_spec_changes() -> None:
    stored = created(mutated_spec())
    assert stored["spec"] == mutated_spec()
    assert stored["metadata"]["annotations"]["plugin/position"] == "1/3"
    matches = Forms().spec_matcher(TEMPLATE)
    assert matches(stored)
    drifted = copy.deepcopy(stored)
    drifted["metadata"]["generation"] = 2
    drifted["spec"]["workload"]["manifests"][0]["data"] = {"a": "changed by hand"}
    assert not matches(drifted)
    other = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}}
    assert not Forms().spec_matcher(other)(stored)


def test_the_plugins_labels_and_annotations_are_kept() -> None:
    stored = created(mutated_spec())
    metadata = desired_metadata(mwrs=MWRS, owner=OWNER, placement="fleet", cluster="c1", existing=stored,
                                existing_current=True, now=NOW)
    assert metadata["labels"]["plugin/wave"] == "1"
    assert metadata["annotations"]["plugin/position"] == "1/3"
    assert ANNOTATION_MUTATION in metadata["annotations"]


def test_a_patch_carries_the_mutated_spec_and_the_version_it_was_planned_from() -> None:
    existing = {"metadata": {"name": "w", "namespace": "c1", "uid": "w1", "resourceVersion": "7", "generation": 1},
                "spec": {"workload": {"manifests": []}}}
    desired = {"metadata": {"name": "w", "namespace": "c1"}, "spec": copy.deepcopy(TEMPLATE)}
    write = WorkWrite("c1", "fleet", desired, existing, {"spec": TEMPLATE})
    done = mutated_write(write, {"spec": mutated_spec()}, TEMPLATE)
    assert done.patch is not None and done.widens
    assert done.patch["metadata"]["resourceVersion"] == "7"
    assert done.patch["spec"]["workload"]["manifests"][0]["metadata"]["labels"] == {"rollout-index": "1"}
