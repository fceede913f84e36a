"""A ManifestWork as a rollout plugin's ``MutateManifestWork`` changed it (OCM enhancement 231).

The controller tells that a work holds a revision by its spec: equal to the revision's template.
A mutated work's spec differs from the template on purpose, so the controller records the
mutation on the work, in the annotation ``rollout.ocm-rollout.io/mutated``::

    {"template": "<hash of the template>", "spec": "<hash of the mutated spec>",
     "labels": {...}, "annotations": {...}}

- ``template`` and ``spec`` (sha256 of the specs' canonical forms, ``template.normal_spec``): the
  work holds the revision when the template's hash is the one recorded and its own spec still
  hashes to the mutated one. A spec changed by anyone else is then outdated, and written again
  (mutated again) like any outdated work.
- ``labels`` and ``annotations``: those the plugin added to the ManifestWork, kept on later
  metadata writes (the controller otherwise removes labels and annotations it did not set).

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ocm_rollout.controllers.common.wire import annotations_of
from ocm_rollout.controllers.workset.template import form_hash, normal_spec

ANNOTATION_MUTATION: Final = "rollout.ocm-rollout.io/mutated"


def spec_hash(spec: Mapping[str, Any] | None) -> str:
    return form_hash(normal_spec(spec))


def record_of(work: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The work's mutation record, None without one (or one that does not parse)."""
    raw = annotations_of(work).get(ANNOTATION_MUTATION)
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("template"), str) or not isinstance(record.get("spec"), str):
        return None
    return record


def holds_mutated(work: Mapping[str, Any], template_hash: str) -> bool:
    """Whether ``work`` holds the template of hash ``template_hash`` as a plugin mutated it."""
    record = record_of(work)
    return record is not None and record["template"] == template_hash and record["spec"] == spec_hash(work.get("spec"))


def kept_metadata(work: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations a plugin added to ``work`` (to keep on metadata writes), with
    the record itself among the annotations."""
    record = record_of(work)
    if record is None:
        return {}, {}
    labels = {str(k): str(v) for k, v in (record.get("labels") or {}).items()}
    annotations = {str(k): str(v) for k, v in (record.get("annotations") or {}).items()}
    annotations[ANNOTATION_MUTATION] = annotations_of(work)[ANNOTATION_MUTATION]
    return labels, annotations
