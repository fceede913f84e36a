"""Building works (docs/behaviour/mwrs.md 5.6, 5.7; improvements 3 and 4)."""

from __future__ import annotations

from ocm_rollout.api.constants import ANNOTATION_MANIFESTWORK_REPLICASET as MWRS_OWNER_ANNOTATION
from ocm_rollout.api.constants import ANNOTATION_TEMPLATE_APPLIED_TIME as TEMPLATE_APPLIED_ANNOTATION
from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL
from ocm_rollout.api.constants import LABEL_PLACEMENT_NAME as PLACEMENT_NAME_LABEL
from ocm_rollout.controllers.workset.workbuild import (
    belongs_to,
    desired_work,
    label_value_errors,
    merge_patch,
    owner_for,
    update_patch,
)
from tests.unit.test_workset_fixtures import TEMPLATE, at, mwrs, work


def build(existing: dict | None = None, **kwargs: object) -> dict:
    m = mwrs(**kwargs)  # type: ignore[arg-type]
    owner = owner_for(m["metadata"]["namespace"], m["metadata"]["name"])
    return desired_work(mwrs=m, owner=owner, placement="test-placement", cluster="c1", existing=existing, now=at(0))


def test_new_work_uses_generate_name_in_cluster_namespace() -> None:
    body = build()
    assert body["metadata"]["namespace"] == "c1"
    assert body["metadata"]["generateName"] == "test-work"
    assert "name" not in body["metadata"]


def test_existing_work_keeps_its_name() -> None:
    body = build(existing=work("c1", name="test-workabcde"))
    assert body["metadata"]["name"] == "test-workabcde"


def test_labels_are_mwrs_labels_plus_owner_labels() -> None:
    body = build(labels={"app": "x", MWRS_LABEL: "spoofed"})
    assert body["metadata"]["labels"] == {
        "app": "x",
        MWRS_LABEL: "ns.test-work",
        PLACEMENT_NAME_LABEL: "test-placement",
    }


def test_spec_is_the_template_verbatim() -> None:
    assert build()["spec"] == TEMPLATE


def test_new_work_records_when_its_revision_started() -> None:
    assert build()["metadata"]["annotations"] == {TEMPLATE_APPLIED_ANNOTATION: "2026-01-01T12:00:00Z"}


def test_current_work_keeps_its_revision_time() -> None:
    existing = work("c1", annotations={TEMPLATE_APPLIED_ANNOTATION: "2025-05-05T00:00:00Z"})
    assert build(existing=existing)["metadata"]["annotations"] == {
        TEMPLATE_APPLIED_ANNOTATION: "2025-05-05T00:00:00Z"
    }


def test_current_work_without_revision_time_gets_none() -> None:
    assert "annotations" not in build(existing=work("c1"))["metadata"]


def test_outdated_work_gets_a_new_revision_time() -> None:
    existing = work("c1", spec={"workload": {"manifests": []}},
                    annotations={TEMPLATE_APPLIED_ANNOTATION: "2025-05-05T00:00:00Z"})
    assert build(existing=existing)["metadata"]["annotations"][TEMPLATE_APPLIED_ANNOTATION] == "2026-01-01T12:00:00Z"


def test_long_generate_name_is_cut_to_what_the_api_server_keeps() -> None:
    body = build(name="n" * 80)
    assert body["metadata"]["generateName"] == "n" * 58


# --- owner label (improvement 3) -----------------------------------------------------------


def test_short_owner_is_the_plain_label_value() -> None:
    owner = owner_for("ns", "test-work")
    assert (owner.label_value, owner.annotation) == ("ns.test-work", None)


def test_long_owner_gets_a_valid_hashed_label_and_an_annotation() -> None:
    owner = owner_for("n" * 40, "w" * 40)
    assert owner.label_value != "n" * 40 + "." + "w" * 40
    assert label_value_errors(owner.label_value) == []
    assert owner.annotation == "n" * 40 + "." + "w" * 40
    assert owner.label_errors == ("must be no more than 63 characters",)


def test_hashed_label_differs_between_owners_sharing_a_prefix() -> None:
    assert owner_for("n" * 40, "w" * 40 + "a").label_value != owner_for("n" * 40, "w" * 40 + "b").label_value


def test_long_owner_work_carries_hashed_label_and_owner_annotation() -> None:
    body = build(name="w" * 70)
    owner = owner_for("ns", "w" * 70)
    assert body["metadata"]["labels"][MWRS_LABEL] == owner.label_value
    assert body["metadata"]["annotations"][MWRS_OWNER_ANNOTATION] == "ns." + "w" * 70


def test_hashed_owner_needs_the_annotation_to_claim_a_work() -> None:
    owner = owner_for("ns", "w" * 70)
    w = work("c1", owner=owner.label_value)
    assert not belongs_to(w, owner)
    w["metadata"]["annotations"] = {MWRS_OWNER_ANNOTATION: owner.key}
    assert belongs_to(w, owner)


# --- patches ---------------------------------------------------------------------------------


def test_merge_patch_removes_replaces_and_adds() -> None:
    assert merge_patch({"a": 1, "b": {"c": 1, "d": 2}, "e": [1]}, {"b": {"c": 1, "d": 3}, "e": [2], "f": 0}) == {
        "a": None,
        "b": {"d": 3},
        "e": [2],
        "f": 0,
    }


def test_up_to_date_work_needs_no_patch() -> None:
    existing = work("c1")
    assert update_patch(existing, build(existing=existing)) is None


def test_foreign_labels_and_annotations_are_removed() -> None:
    existing = work("c1", annotations={"foo": "bar"})
    existing["metadata"]["labels"]["extra"] = "1"
    patch = update_patch(existing, build(existing=existing))
    assert patch is not None
    assert patch["metadata"]["labels"] == {"extra": None}
    assert patch["metadata"]["annotations"] == {"foo": None}
    assert "spec" not in patch


def test_outdated_spec_is_replaced_with_uid_precondition() -> None:
    existing = work("c1", spec={"workload": {"manifests": [{"kind": "Secret"}]}, "executor": {"x": 1}})
    patch = update_patch(existing, build(existing=existing))
    assert patch is not None
    assert patch["metadata"]["uid"] == existing["metadata"]["uid"]
    assert patch["spec"] == {"workload": {"manifests": TEMPLATE["workload"]["manifests"]}, "executor": None}
