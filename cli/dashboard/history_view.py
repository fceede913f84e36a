"""A ManifestWorkReplicaSet's revision history on the dashboard, and the difference between two
revisions' templates.

The history is ``ocm-rollout rollout history``'s (``history_rows``). A difference is a unified
diff of the two templates as YAML, keys in order. Secrets are never shown: a Secret manifest's
``data`` and ``stringData`` values are replaced by ``REDACTED`` before anything is compared, so a
changed value shows only as a changed line count, never its content.

Pure: no I/O.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from ocm_rollout.cli.commands.rollout_verbs import dump, history_rows
from ocm_rollout.controllers.common.wire import JSON
from ocm_rollout.controllers.workset.revisions import by_number, live_history, template_of

REDACTED = "<redacted>"
SECRET_FIELDS = ("data", "stringData")
MAX_DIFF_LINES = 2000


def history(mwrs: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]]) -> list[JSON]:
    """The revisions oldest first: number, hash, name, created and markers."""
    return [row.as_json() for row in history_rows(mwrs, revisions)]


def redacted(template: Mapping[str, Any]) -> JSON:
    """A copy of ``template`` whose Secret manifests show no value."""
    out: JSON = copy.deepcopy(dict(template))
    workload = out.get("workload")
    manifests = workload.get("manifests") if isinstance(workload, Mapping) else None
    for manifest in manifests if isinstance(manifests, list) else ():
        if not isinstance(manifest, dict) or manifest.get("kind") != "Secret":
            continue
        for key in SECRET_FIELDS:
            values = manifest.get(key)
            if isinstance(values, dict):
                manifest[key] = {k: REDACTED for k in values}
    return out


class DiffError(LookupError):
    """A revision that is not in the history (404, with this message)."""


def _template(revisions: Sequence[Mapping[str, Any]], number: int) -> JSON:
    revision = by_number(revisions, number)
    if revision is None:
        known = ", ".join(str(r) for r in sorted(_numbers(revisions))) or "none recorded"
        raise DiffError(f"revision {number} not found (revisions: {known})")
    template = template_of(revision)
    if template is None:
        raise DiffError(f"revision {number} holds no data.spec.manifestWorkTemplate")
    return redacted(template)


def _numbers(revisions: Sequence[Mapping[str, Any]]) -> list[int]:
    return [int(row["revision"]) for row in history({}, revisions)]


def diff(revisions: Sequence[Mapping[str, Any]], old: int, new: int) -> JSON:
    """The unified diff from revision ``old``'s template to revision ``new``'s."""
    ordered = live_history(revisions)
    before = dump(_template(ordered, old), "yaml").splitlines()
    after = dump(_template(ordered, new), "yaml").splitlines()
    lines = list(difflib.unified_diff(before, after, f"revision {old}", f"revision {new}", lineterm="", n=3))
    truncated = len(lines) > MAX_DIFF_LINES
    return {"from": old, "to": new, "lines": lines[:MAX_DIFF_LINES], "truncated": truncated, "same": not lines}
