"""The revision history of a ManifestWorkReplicaSet (ocm_rollout.controllers.workset.history): the update
revision found, created (hash, collision) or renumbered (undo), and the prune rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_CONTROLLER_HASH, LABEL_MANIFESTWORK_REPLICASET
from ocm_rollout.controllers.workset import history
from ocm_rollout.controllers.workset.history import (
    CREATED,
    EXISTING,
    UNDONE,
    HistoryError,
    prune,
    resolve_update,
)
from ocm_rollout.controllers.workset.revisions import (
    ANNOTATION_REVISION_HISTORY,
    earlier_numbers,
    revision_body,
    revision_name,
    template_hash,
)
from tests.unit.test_workset_fixtures import TEMPLATE, mwrs

OWNER = "ns.test-work"


def template(version: str) -> dict[str, Any]:
    changed = copy.deepcopy(TEMPLATE)
    changed["workload"]["manifests"][0]["data"] = {"a": version}
    return changed


def revision(version: str, number: int, *, collision: int | None = None, rv: str = "7") -> dict[str, Any]:
    body = revision_body(mwrs(), OWNER, template(version), template_hash(template(version), collision), number)
    body["metadata"]["resourceVersion"] = rv
    return body


def step_for(version: str, revisions: list[dict[str, Any]], collision: int | None = None, **kw: Any) -> Any:
    return resolve_update(
        mwrs=mwrs(template=template(version)),
        owner_label_value=OWNER,
        revisions=revisions,
        collision_count=collision,
        **kw,
    )


def test_first_template_creates_revision_one_named_by_its_hash() -> None:
    step = step_for("1", [])
    digest = template_hash(template("1"))
    assert step.update.origin == CREATED
    assert (step.update.hash, step.update.name, step.update.number) == (digest, f"test-work-{digest}", 1)
    assert step.create is not None and step.renumber is None
    assert step.create["revision"] == 1
    assert step.create["metadata"]["name"] == revision_name("test-work", digest)
    assert step.create["metadata"]["labels"] == {LABEL_MANIFESTWORK_REPLICASET: OWNER, LABEL_CONTROLLER_HASH: digest}
    assert step.create["data"] == {"spec": {"manifestWorkTemplate": template("1")}}
    assert step.collision_count is None


def test_new_template_is_numbered_after_the_highest_revision() -> None:
    step = step_for("3", [revision("1", 1), revision("2", 4)])
    assert (step.update.origin, step.update.number) == (CREATED, 5)
    assert step.create is not None and step.create["revision"] == 5


def test_template_of_the_newest_revision_needs_no_write() -> None:
    step = step_for("2", [revision("1", 1), revision("2", 2)])
    assert step.update.origin == EXISTING
    assert (step.update.number, step.create, step.renumber) == (2, None, None)
    assert not step.update.brought_back


def test_equal_template_is_found_with_go_zero_value_semantics() -> None:
    """A template that differs only by zero values (a null executor) is the same revision."""
    spelled = {**template("2"), "executor": None, "manifestConfigs": []}
    step = resolve_update(mwrs=mwrs(template=spelled), owner_label_value=OWNER,
                          revisions=[revision("1", 1), revision("2", 2)], collision_count=None)
    assert step.update.origin == EXISTING and step.update.name == revision_name("test-work", template_hash(template("2")))


def test_undo_renumbers_the_older_revision_as_the_newest() -> None:
    old = revision("1", 1, rv="11")
    step = step_for("1", [old, revision("2", 2), revision("3", 3)])
    assert step.update.origin == UNDONE and step.update.brought_back
    assert step.update.number == 4
    assert step.create is None
    assert step.renumber is not None
    assert step.renumber["metadata"]["resourceVersion"] == "11"
    assert step.renumber["metadata"]["annotations"] == {ANNOTATION_REVISION_HISTORY: "1"}
    assert step.renumber["revision"] == 4
    # the whole revision, its data as read: an update, never a patch, writes it
    assert step.renumber["data"] == old["data"] and step.renumber["metadata"]["name"] == old["metadata"]["name"]
    assert step.update.template == template("1")


def test_a_second_undo_keeps_every_earlier_number() -> None:
    back = revision("1", 3)
    back["metadata"]["annotations"] = {ANNOTATION_REVISION_HISTORY: "1"}
    step = step_for("1", [revision("2", 2), back, revision("3", 4)])
    assert step.renumber is not None
    assert step.renumber["metadata"]["annotations"] == {ANNOTATION_REVISION_HISTORY: "1,3"}
    assert step.renumber["revision"] == 5


def test_a_revision_brought_back_earlier_still_reads_as_brought_back() -> None:
    back = revision("1", 3)
    back["metadata"]["annotations"] = {ANNOTATION_REVISION_HISTORY: "1"}
    step = step_for("1", [revision("2", 2), back])
    assert step.update.origin == EXISTING and step.update.brought_back
    assert earlier_numbers(back) == [1]


def test_the_newest_of_two_equal_revisions_is_used() -> None:
    twin = revision("1", 2)
    twin["metadata"]["name"] = "test-work-twin"
    step = step_for("1", [revision("1", 1), twin, revision("2", 3)])
    assert step.update.name == "test-work-twin" and step.update.number == 4


def test_tied_highest_numbers_are_renumbered() -> None:
    step = step_for("1", [revision("1", 2), revision("2", 2)])
    assert step.update.origin == UNDONE and step.update.number == 3


def test_same_named_revision_with_another_template_is_a_collision() -> None:
    clash = revision("1", 1)
    clash["metadata"]["name"] = revision_name("test-work", template_hash(template("2")))
    step = step_for("2", [clash])
    assert step.collision_count == 1
    assert step.update.hash == template_hash(template("2"), 1) != template_hash(template("2"))
    assert step.create is not None and step.create["metadata"]["name"] == revision_name("test-work", step.update.hash)


def test_collisions_continue_from_the_recorded_count() -> None:
    step = step_for("2", [], collision=3)
    assert step.collision_count == 3 and step.update.hash == template_hash(template("2"), 3)


def test_a_name_taken_by_another_object_raises_the_collision_count() -> None:
    taken = revision_name("test-work", template_hash(template("2")))
    step = step_for("2", [], taken={taken})
    assert step.collision_count == 1 and step.update.name != taken


def test_endless_collisions_are_an_error() -> None:
    names = {revision_name("test-work", template_hash(template("2"), c)) for c in [None, *range(1, 200)]}
    with pytest.raises(HistoryError):
        step_for("2", [], taken=names)


def test_revisions_being_deleted_do_not_count() -> None:
    gone = revision("1", 1)
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    step = step_for("1", [gone])
    assert step.update.origin == CREATED and step.update.number == 1


def test_find_by_hash_and_name_fallback() -> None:
    labelled = revision("1", 1)
    unlabelled = revision("2", 2)
    del unlabelled["metadata"]["labels"][LABEL_CONTROLLER_HASH]
    revs = [labelled, unlabelled]
    assert history.find(revs, template_hash(template("1")), "test-work") is labelled
    assert history.find(revs, template_hash(template("2")), "test-work") is unlabelled
    assert history.find(revs, "nope", "test-work") is None
    assert history.find(revs, None, "test-work") is None


def _numbers(revs: list[Any]) -> list[int]:
    return [r["revision"] for r in revs]


def test_prune_deletes_the_oldest_beyond_the_limit() -> None:
    revs = [revision(str(v), v) for v in range(1, 7)]
    keep = {template_hash(template("6")), template_hash(template("5"))}
    assert _numbers(prune(revs, limit=2, keep=keep, mwrs_name="test-work")) == [1, 2]


def test_prune_never_deletes_the_current_or_update_revision() -> None:
    revs = [revision(str(v), v) for v in range(1, 5)]
    # The current revision is the oldest one (a rollout that never completed since).
    keep = {template_hash(template("1")), template_hash(template("4"))}
    assert _numbers(prune(revs, limit=0, keep=keep, mwrs_name="test-work")) == [2, 3]


def test_prune_within_the_limit_deletes_nothing() -> None:
    revs = [revision(str(v), v) for v in range(1, 4)]
    assert prune(revs, limit=10, keep={None}, mwrs_name="test-work") == []


def test_prune_follows_numbers_not_creation_order() -> None:
    """An undone revision is the newest by number and survives; the one it replaced goes first."""
    revs = [revision("2", 2), revision("1", 3), revision("3", 4)]
    keep = {template_hash(template("3"))}
    assert _numbers(prune(revs, limit=1, keep=keep, mwrs_name="test-work")) == [2]
