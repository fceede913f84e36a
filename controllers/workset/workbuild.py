"""Building the ManifestWork a ManifestWorkReplicaSet wants on one cluster (docs/behaviour/mwrs.md 5.6, 5.7).

- Namespace = cluster; name = the existing work's name for this (cluster, placement), else
  ``generateName: <mwrs name>`` (the API server appends five random characters).
- Labels = the MWRS's labels, then the owner label and the placement label (overriding), and the
  hash of the template revision the work carries (``work.open-cluster-management.io/controller-hash``,
  OCM enhancement 229) when the caller knows it.
- Spec = the template verbatim.
- Improvement 3: when ``<namespace>.<name>`` is not a valid label value, the owner label holds a
  readable prefix plus a hash and the full owner is kept in an annotation.
- Improvement 4: the annotation ``ANNOTATION_TEMPLATE_APPLIED_TIME`` records when the controller wrote
  the current spec; it is kept unchanged while the spec is current.

Pure: no I/O, ``now`` is an argument.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ocm_rollout.api.constants import (
    ANNOTATION_MANIFESTWORK_REPLICASET,
    ANNOTATION_TEMPLATE_APPLIED_TIME,
    LABEL_CONTROLLER_HASH,
    LABEL_MANIFESTWORK_REPLICASET,
    LABEL_PLACEMENT_NAME,
)
from ocm_rollout.controllers.common.wire import JSON, annotations_of, format_time, label_of, labels_of, meta
from ocm_rollout.controllers.rollout.verification import ANNOTATION_VALIDATION
from ocm_rollout.controllers.workset.mutation_record import kept_metadata
from ocm_rollout.controllers.workset.template import spec_equals_template

LABEL_VALUE_MAX = 63
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# Kubernetes keeps at most 58 characters of a generateName (63 minus 5 random ones).
GENERATE_NAME_MAX = 58
_HASH_CHARS = 10


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value, with the API server's wording."""
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return errors


def owner_key(namespace: str, name: str) -> str:
    """The full owner reference, ``<namespace>.<name>``."""
    return f"{namespace}.{name}"


@dataclass(frozen=True)
class Owner:
    """How the works of one ManifestWorkReplicaSet are marked."""

    namespace: str
    name: str
    # The value of the owner label on its works.
    label_value: str
    # Set when the label value is a hash: the full ``<namespace>.<name>`` kept in an annotation.
    annotation: str | None
    # Why ``<namespace>.<name>`` is not a valid label value (empty when it is one).
    label_errors: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return owner_key(self.namespace, self.name)


def owner_for(namespace: str, name: str) -> Owner:
    """The owner marking of ``namespace/name`` (improvement 3 for names too long for a label)."""
    full = owner_key(namespace, name)
    errors = label_value_errors(full)
    if not errors:
        return Owner(namespace, name, full, None)
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH_CHARS]
    prefix = full[: LABEL_VALUE_MAX - _HASH_CHARS - 1]
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "-", prefix)
    prefix = prefix.rstrip("-_.")
    value = f"{prefix}-{digest}" if prefix and prefix[0].isalnum() else digest
    return Owner(namespace, name, value, full, tuple(errors))


def owner_labels(owner: Owner, placement: str) -> dict[str, str]:
    return {LABEL_MANIFESTWORK_REPLICASET: owner.label_value, LABEL_PLACEMENT_NAME: placement}


def belongs_to(work: Mapping[str, Any], owner: Owner) -> bool:
    """Whether ``work`` carries ``owner``'s label (and, for a hashed label, its annotation)."""
    if label_of(work, LABEL_MANIFESTWORK_REPLICASET) != owner.label_value:
        return False
    if owner.annotation is None:
        return True
    return annotations_of(work).get(ANNOTATION_MANIFESTWORK_REPLICASET) == owner.annotation


def desired_metadata(
    *,
    mwrs: Mapping[str, Any],
    owner: Owner,
    placement: str,
    cluster: str,
    existing: Mapping[str, Any] | None,
    existing_current: bool,
    now: datetime,
    revision_hash: str | None = None,
) -> JSON:
    """The metadata of the work ``mwrs`` wants in ``cluster`` for ``placement``.

    ``existing`` is the current work of this (cluster, placement), if any: its name is kept, and
    so is its revision time when ``existing_current`` (its spec already equals the template).
    ``revision_hash`` is the hash of the template's revision (the controller-hash label).
    """
    labels = dict(labels_of(mwrs))
    labels.update(owner_labels(owner, placement))
    if revision_hash:
        labels[LABEL_CONTROLLER_HASH] = revision_hash
    annotations: dict[str, str] = {}
    if owner.annotation is not None:
        annotations[ANNOTATION_MANIFESTWORK_REPLICASET] = owner.annotation
    if existing is not None and existing_current:
        kept = annotations_of(existing).get(ANNOTATION_TEMPLATE_APPLIED_TIME)
        applied_at = kept if kept is not None else ""
    else:
        applied_at = format_time(now)
    if applied_at:
        annotations[ANNOTATION_TEMPLATE_APPLIED_TIME] = applied_at
    if existing is not None and existing_current:
        # A verified rollout's record of this revision's validation stays with it (a new spec
        # starts a new validation: the record is dropped with the old revision).
        record = annotations_of(existing).get(ANNOTATION_VALIDATION)
        if record is not None:
            annotations[ANNOTATION_VALIDATION] = record
        # So do the labels and annotations a rollout plugin's MutateManifestWork added.
        plugin_labels, plugin_annotations = kept_metadata(existing)
        labels = {**plugin_labels, **labels}
        annotations.update({k: v for k, v in plugin_annotations.items() if k not in annotations})
    metadata: JSON = {"namespace": cluster, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    if existing is not None and meta(existing).get("name"):
        metadata["name"] = meta(existing)["name"]
    else:
        metadata["generateName"] = str(meta(mwrs).get("name") or "")[:GENERATE_NAME_MAX]
    return metadata


def metadata_matches(existing: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """Whether ``existing`` already carries exactly these labels and annotations, and no
    ownerReferences (what OCM compares besides the spec)."""
    old = meta(existing)
    return (
        (old.get("labels") or {}) == (metadata.get("labels") or {})
        and (old.get("annotations") or {}) == (metadata.get("annotations") or {})
        and not old.get("ownerReferences")
    )


def desired_work(
    *,
    mwrs: Mapping[str, Any],
    owner: Owner,
    placement: str,
    cluster: str,
    existing: Mapping[str, Any] | None,
    now: datetime,
    existing_current: bool | None = None,
    metadata: JSON | None = None,
    revision_hash: str | None = None,
) -> JSON:
    """The ManifestWork ``mwrs`` wants in ``cluster`` for ``placement``: ``desired_metadata``
    and the template verbatim as its spec. ``existing_current`` says whether ``existing``'s spec
    equals the template (computed when not given)."""
    template = (mwrs.get("spec") or {}).get("manifestWorkTemplate") or {}
    if existing_current is None:
        existing_current = existing is not None and spec_equals_template(existing.get("spec"), template)
    if metadata is None:
        metadata = desired_metadata(
            mwrs=mwrs,
            owner=owner,
            placement=placement,
            cluster=cluster,
            existing=existing,
            existing_current=existing_current,
            now=now,
            revision_hash=revision_hash,
        )
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(template)),
    }


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return copy.deepcopy(new)
    patch: JSON = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = _nulls_removed(value)
        elif old[key] != value:
            if isinstance(old[key], Mapping) and isinstance(value, Mapping):
                patch[key] = merge_patch(old[key], value)
            else:
                patch[key] = _nulls_removed(value)
    return patch


def _nulls_removed(value: Any) -> Any:
    """A merge patch cannot set a null inside a map; drop such keys (they mean "absent")."""
    if isinstance(value, Mapping):
        return {k: _nulls_removed(v) for k, v in value.items() if v is not None}
    return copy.deepcopy(value)


_MANAGED_METADATA = ("labels", "annotations", "ownerReferences")


def update_patch(
    existing: Mapping[str, Any], desired: Mapping[str, Any], spec_current: bool | None = None
) -> JSON | None:
    """The one merge patch that makes ``existing`` carry ``desired``'s labels, annotations,
    ownerReferences and spec (None when nothing differs). Foreign labels and annotations are
    removed, like OCM does. The patch carries the work's uid as a precondition, and its
    resourceVersion too when it changes the spec.
    ``spec_current`` says whether ``existing``'s spec already equals the template."""
    old_meta = meta(existing)
    new_meta = meta(desired)
    meta_patch: JSON = {}
    for field in _MANAGED_METADATA:
        old_value = old_meta.get(field) or ({} if field != "ownerReferences" else [])
        new_value = new_meta.get(field) or ({} if field != "ownerReferences" else [])
        if old_value != new_value:
            meta_patch[field] = merge_patch(old_value, new_value) if field != "ownerReferences" else new_value
    spec_patch = None
    template = desired.get("spec") or {}
    if spec_current is None:
        spec_current = spec_equals_template(existing.get("spec"), template)
    if not spec_current:
        spec_patch = merge_patch(existing.get("spec") or {}, template)
    if not meta_patch and spec_patch is None:
        return None
    patch: JSON = {"metadata": {"uid": old_meta.get("uid"), **meta_patch}}
    if spec_patch is not None:
        patch["spec"] = spec_patch
        # A new spec puts the cluster in flight: written only over the version it was planned
        # from, so a stale instance's late update is refused (409) instead of landing.
        if old_meta.get("resourceVersion"):
            patch["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
    return patch
