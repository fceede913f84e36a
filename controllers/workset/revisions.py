"""Template revisions of a ManifestWorkReplicaSet, kept in apps/v1 ControllerRevisions
(OCM enhancement 229).

A revision is one ``spec.manifestWorkTemplate``. Its hash (``template_hash``) names it: the
ControllerRevision ``<mwrs name>-<hash>`` in the MWRS's namespace, labelled with the MWRS's owner
label (as its works are) and ``work.open-cluster-management.io/controller-hash: <hash>``, owned
by the MWRS (a controller ownerReference, so it is garbage-collected with it), holding
``data: {"spec": {"manifestWorkTemplate": ...}}`` and its ``revision`` number. Every ManifestWork
carries the hash of the template it was written from in the same label. The history is the
revisions ordered by number; the newest is the spec's template.

The hash is FNV-32a over the template's canonical JSON (sorted keys, no spaces), followed by the
collision count (when set) as 8 little-endian bytes, written in decimal and each digit mapped
through Kubernetes' safe alphabet, like the pod-template hashes of apps/v1 controllers.

When the template of an older revision comes back (an undo), that revision becomes the newest
again: its ``revision`` is raised above every other, and the numbers it had before are kept in the
annotation ``work.ocm-rollout.io/revision-history`` (comma-separated, oldest first, as Deployments
keep ``deployment.kubernetes.io/revision-history`` on their ReplicaSets).

Pure: no I/O. Used by the workset controller and by ``ocm-rollout rollout``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ocm_rollout.api.constants import LABEL_CONTROLLER_HASH, LABEL_MANIFESTWORK_REPLICASET
from ocm_rollout.api.work_v1alpha1 import API_VERSION as MWRS_API_VERSION
from ocm_rollout.controllers.common.wire import JSON, annotations_of, is_deleting, label_of, meta, name_of

CONTROLLER_REVISION_API_VERSION = "apps/v1"
# On a revision brought back by an undo: the numbers it had before, comma-separated, oldest first.
ANNOTATION_REVISION_HISTORY = "work.ocm-rollout.io/revision-history"
# Kubernetes' rand.SafeEncodeString alphabet (no vowels, no 0, 1, 3: no words, no look-alikes).
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def _fnv32a(data: bytes, value: int = _FNV_OFFSET) -> int:
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def canonical(template: Mapping[str, Any]) -> bytes:
    return json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The revision hash of ``template`` (see the module docstring)."""
    value = _fnv32a(canonical(template))
    if collision_count is not None:
        value = _fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\0\0\0\0", value)
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(value))


def revision_name(mwrs_name: str, revision_hash: str) -> str:
    return f"{mwrs_name}-{revision_hash}"


def revision_labels(owner_label_value: str, revision_hash: str) -> dict[str, str]:
    return {LABEL_MANIFESTWORK_REPLICASET: owner_label_value, LABEL_CONTROLLER_HASH: revision_hash}


def revision_body(
    mwrs: Mapping[str, Any], owner_label_value: str, template: Mapping[str, Any], revision_hash: str, number: int
) -> JSON:
    """The ControllerRevision recording ``template`` as revision ``number`` of ``mwrs``."""
    md = meta(mwrs)
    return {
        "apiVersion": CONTROLLER_REVISION_API_VERSION,
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(name_of(mwrs), revision_hash),
            "namespace": md.get("namespace"),
            "labels": revision_labels(owner_label_value, revision_hash),
            "ownerReferences": [
                {
                    "apiVersion": MWRS_API_VERSION,
                    "kind": "ManifestWorkReplicaSet",
                    "name": name_of(mwrs),
                    "uid": md.get("uid") or "",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"spec": {"manifestWorkTemplate": dict(template)}},
        "revision": number,
    }


def template_of(revision: Mapping[str, Any]) -> JSON | None:
    """The template a ControllerRevision holds (None when it holds none)."""
    data = revision.get("data")
    spec = data.get("spec") if isinstance(data, Mapping) else None
    template = spec.get("manifestWorkTemplate") if isinstance(spec, Mapping) else None
    return dict(template) if isinstance(template, Mapping) else None


def hash_of(obj: Mapping[str, Any]) -> str | None:
    """The controller-hash label of a ManifestWork or a ControllerRevision."""
    return label_of(obj, LABEL_CONTROLLER_HASH)


def number_of(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def owned_by(revision: Mapping[str, Any], mwrs_uid: str) -> bool:
    refs = meta(revision).get("ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("controller") and r.get("uid") == mwrs_uid for r in refs)


def history(revisions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Revisions oldest first (by number, then name)."""
    return sorted(revisions, key=lambda r: (number_of(r), name_of(r)))


def by_number(revisions: Sequence[Mapping[str, Any]], number: int) -> Mapping[str, Any] | None:
    for rev in revisions:
        if number_of(rev) == number:
            return rev
    return None


def earlier_numbers(revision: Mapping[str, Any]) -> list[int]:
    """The numbers a revision had before undos raised it (its revision-history annotation)."""
    text = annotations_of(revision).get(ANNOTATION_REVISION_HISTORY) or ""
    return [int(part) for part in text.split(",") if part.strip().isdigit()]


def renumbered(revision: Mapping[str, Any], number: int) -> JSON:
    """``revision`` as a whole, numbered ``number`` (the newest), its old number recorded in the
    revision-history annotation: the body of an update (PUT), fenced on the resourceVersion it
    carries.

    Not a patch: kube-apiserver applies a patch to the revision re-encoded as JSON, which rewrites
    ``data``'s bytes (compact, keys sorted), and then refuses the change to the immutable ``data``
    that it compares byte for byte. An update sends ``data`` as it was created (by this client's
    encoder, the same bytes again)."""
    numbers = [*earlier_numbers(revision), number_of(revision)]
    body = copy.deepcopy(dict(revision))
    metadata = body.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}),
                               ANNOTATION_REVISION_HISTORY: ",".join(str(n) for n in numbers)}
    body["revision"] = number
    return body


def revision_hash(revision: Mapping[str, Any], mwrs_name: str) -> str:
    """A revision's hash: its controller-hash label, else what its name ``<mwrs>-<hash>`` says."""
    label = hash_of(revision)
    if label:
        return label
    name = name_of(revision)
    prefix = f"{mwrs_name}-"
    return name[len(prefix) :] if name.startswith(prefix) else name


def live_history(revisions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The revisions not being deleted, oldest first (by number, then name)."""
    return history(r for r in revisions if not is_deleting(r))
