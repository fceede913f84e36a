"""A write of a ManifestWork as a rollout plugin's ``MutateManifestWork`` changed it, with the
record that lets the controller recognise it later (``mutation_record.py``). Pure: no I/O."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ocm_rollout.controllers.common.wire import JSON, annotations_of, labels_of, meta
from ocm_rollout.controllers.workset.mutation_record import ANNOTATION_MUTATION, spec_hash
from ocm_rollout.controllers.workset.plan import WorkWrite
from ocm_rollout.controllers.workset.workbuild import update_patch


def mutated_write(write: WorkWrite, mutated: Mapping[str, Any], template: Mapping[str, Any]) -> WorkWrite:
    """``write`` carrying the plugin's mutation of its ManifestWork (``mutated``): its spec, the
    labels and annotations it added, and the record of both."""
    desired = dict(write.desired)
    desired_meta = dict(meta(desired))
    labels = dict(desired_meta.get("labels") or {})
    annotations = dict(desired_meta.get("annotations") or {})
    added_labels = {k: v for k, v in labels_of(mutated).items() if labels.get(k) != v}
    added_annotations = {
        k: v for k, v in annotations_of(mutated).items() if annotations.get(k) != v and k != ANNOTATION_MUTATION
    }
    spec = mutated.get("spec") if isinstance(mutated.get("spec"), Mapping) else desired.get("spec")
    record = {"template": spec_hash(template), "spec": spec_hash(spec), "labels": added_labels,
              "annotations": added_annotations}
    desired_meta["labels"] = {**labels, **added_labels}
    desired_meta["annotations"] = {
        **annotations, **added_annotations,
        ANNOTATION_MUTATION: json.dumps(record, separators=(",", ":"), sort_keys=True),
    }
    desired = {**desired, "metadata": desired_meta, "spec": spec}
    patch: JSON | None = None
    if write.existing is not None:
        patch = update_patch(write.existing, desired, False)
    return dataclasses.replace(write, desired=desired, patch=patch)
