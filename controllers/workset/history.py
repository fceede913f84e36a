"""The revision history of a ManifestWorkReplicaSet (OCM enhancement 229): which ControllerRevision
records the spec's template (the update revision), what a pass must create or renumber for it,
and which old revisions go when the history outgrows ``spec.revisionHistoryLimit``.

- The update revision is the newest owned revision whose template equals the spec's (the same
  comparison as a work's spec against the template, ``ocm_rollout.controllers.workset.template``). When it is
  not the newest revision, the template of an older revision came back (an undo): it is raised to
  the highest number plus one (``revisions.renumbered``, written by an update).
- Without one, a new revision is created, numbered the highest plus one, named by the template's
  hash; a revision of that name with another template (a hash collision) raises
  ``status.collisionCount``, which is part of the hash, until the name is free.
- Pruning keeps the current and the update revisions and the newest ``revisionHistoryLimit`` of
  the others, deleting the rest oldest first.

Naming, labels, hashes and bodies are ``ocm_rollout.controllers.workset.revisions``'. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ocm_rollout.controllers.common.wire import JSON, name_of
from ocm_rollout.controllers.workset.revisions import (
    earlier_numbers,
    live_history,
    number_of,
    renumbered,
    revision_body,
    revision_hash,
    revision_name,
    template_hash,
    template_of,
)
from ocm_rollout.controllers.workset.template import normal_spec

# Where the update revision comes from.
CREATED: Final = "Created"  # a new template: a new revision
EXISTING: Final = "Existing"  # the newest revision already holds it
UNDONE: Final = "Undone"  # an older revision's template came back: renumbered as the newest
# Collisions tried in one pass at most (each is a 32-bit hash clash: one is already unlikely).
MAX_COLLISIONS: Final = 100


class HistoryError(Exception):
    """The history cannot name a revision for the template (every candidate name is taken)."""


@dataclass(frozen=True)
class UpdateRevision:
    """The revision of the spec's template."""

    hash: str
    name: str
    number: int
    template: JSON
    origin: str
    # Whether an undo ever brought this revision back (now or in an earlier pass).
    brought_back: bool = False


@dataclass(frozen=True)
class HistoryStep:
    """What a pass does to the history before rolling the update revision out."""

    update: UpdateRevision
    # The ControllerRevision to create (origin CREATED), or None.
    create: JSON | None = None
    # The update revision renumbered, to write whole (origin UNDONE), or None.
    renumber: JSON | None = None
    # status.collisionCount after this step (None: never collided).
    collision_count: int | None = None


def find(revisions: Iterable[Mapping[str, Any]], revision: str | None, mwrs_name: str) -> Mapping[str, Any] | None:
    """The revision with hash ``revision`` (the newest if several), or None."""
    if not revision:
        return None
    found = [r for r in live_history(revisions) if revision_hash(r, mwrs_name) == revision]
    return found[-1] if found else None


def holds_template(template: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """Does a revision hold ``template`` (compared as a work's spec is)?"""
    wanted = normal_spec(template)

    def holds(revision: Mapping[str, Any]) -> bool:
        held = template_of(revision)
        return held is not None and normal_spec(held) == wanted

    return holds


def resolve_update(
    *,
    mwrs: Mapping[str, Any],
    owner_label_value: str,
    revisions: Iterable[Mapping[str, Any]],
    collision_count: int | None,
    taken: Collection[str] = (),
    holds: Callable[[Mapping[str, Any]], bool] | None = None,
) -> HistoryStep:
    """The update revision of ``mwrs`` among its own ``revisions``, and what to write for it.

    ``taken`` are names known to be used by objects that are not revisions of this template
    (found when a create was refused with AlreadyExists); ``holds`` may be given to reuse cached
    template comparisons (``holds_template`` of the spec's template by default)."""
    mwrs_name = name_of(mwrs)
    template = dict((mwrs.get("spec") or {}).get("manifestWorkTemplate") or {})
    ordered = live_history(revisions)
    highest = max((number_of(r) for r in ordered), default=0)
    holds = holds or holds_template(template)
    equal = [r for r in ordered if holds(r)]
    if equal:
        found = equal[-1]
        number = number_of(found)
        newest = number == highest and sum(1 for r in ordered if number_of(r) == highest) == 1
        held = template_of(found) or template
        update = UpdateRevision(
            hash=revision_hash(found, mwrs_name),
            name=name_of(found),
            number=number if newest else highest + 1,
            template=held,
            origin=EXISTING if newest else UNDONE,
            brought_back=not newest or bool(earlier_numbers(found)),
        )
        renumber = None if newest else renumbered(found, highest + 1)
        return HistoryStep(update, renumber=renumber, collision_count=collision_count)
    names = {name_of(r) for r in ordered} | set(taken)
    count = collision_count
    for _ in range(MAX_COLLISIONS):
        digest = template_hash(template, count)
        name = revision_name(mwrs_name, digest)
        if name not in names:
            body = revision_body(mwrs, owner_label_value, template, digest, highest + 1)
            update = UpdateRevision(digest, name, highest + 1, template, CREATED)
            return HistoryStep(update, create=body, collision_count=count)
        count = 1 if count is None else count + 1
    raise HistoryError(f"no free revision name for the template after {MAX_COLLISIONS} hash collisions")


def prune(
    revisions: Iterable[Mapping[str, Any]], *, limit: int, keep: Collection[str | None], mwrs_name: str
) -> list[Mapping[str, Any]]:
    """The revisions to delete, oldest first: all but the newest ``limit`` of those whose hash is
    not in ``keep`` (the current and the update revisions)."""
    old = [r for r in live_history(revisions) if revision_hash(r, mwrs_name) not in keep]
    excess = len(old) - max(limit, 0)
    return old[:excess] if excess > 0 else []
