"""`ocm-rollout rollout`: what each verb decides to write and print (controllers/commands/rollout_verbs.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.cli.commands.rollout_verbs import (
    Change,
    RolloutError,
    Target,
    abort_change,
    dump,
    find_revision,
    history_rows,
    pause_change,
    previous_revision,
    render_history,
    render_table,
    resume_change,
    retry_change,
    revision_hash,
    same_template,
    undo_change,
)
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.workset.revisions import history, revision_body, template_hash

WEB = Target("mwrs", "web", "ns1")
ADDON = Target("addon", "my-addon")
WEB_ID = "manifestworkreplicaset.work.open-cluster-management.io/web"
ADDON_ID = "clustermanagementaddon.addon.open-cluster-management.io/my-addon"


def tmpl(version: str) -> JSON:
    return {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": version}}]}}


def mwrs(template: JSON | None = None, annotations: dict[str, str] | None = None, **status: Any) -> JSON:
    return {
        "metadata": {"name": "web", "namespace": "ns1", "uid": "u1", "resourceVersion": "42",
                     **({"annotations": annotations} if annotations else {})},
        "spec": {"placementRefs": [{"name": "all"}], "manifestWorkTemplate": template or tmpl("v3")},
        "status": status,
    }


def revision(number: int, version: str, created: str = "2024-05-01T10:00:00Z") -> JSON:
    body = revision_body(mwrs(), "ns1.web", tmpl(version), template_hash(tmpl(version)), number)
    body["metadata"]["creationTimestamp"] = created
    return body


H1, H2, H3 = (template_hash(tmpl(v)) for v in ("v1", "v2", "v3"))
REVISIONS = [revision(3, "v3"), revision(1, "v1"), revision(2, "v2")]  # any order: sorted by number


# -- names and errors ---------------------------------------------------------------------------------


def test_targets_are_named_as_kubectl_names_them() -> None:
    assert WEB.display == WEB_ID
    assert ADDON.display == ADDON_ID
    assert Target("mwrs", "x", "ns").not_found() == (
        'Error from server (NotFound): manifestworkreplicasets.work.open-cluster-management.io "x" not found'
    )
    assert ADDON.not_found() == (
        'Error from server (NotFound): clustermanagementaddons.addon.open-cluster-management.io "my-addon" not found'
    )


# -- pause / resume -----------------------------------------------------------------------------------


def test_pause_and_resume_a_manifestworkreplicaset() -> None:
    assert pause_change(WEB, mwrs()) == Change(f"{WEB_ID} paused", {"spec": {"paused": True}})
    paused = {**mwrs(), "spec": {**mwrs()["spec"], "paused": True}}
    assert pause_change(WEB, paused) == Change(f"{WEB_ID} already paused")
    assert resume_change(WEB, paused) == Change(f"{WEB_ID} resumed", {"spec": {"paused": None}})
    assert resume_change(WEB, mwrs()) == Change(f"{WEB_ID} not paused")


def test_pause_and_resume_an_addon_through_its_annotation() -> None:
    cma: JSON = {"metadata": {"name": "my-addon"}, "spec": {}}
    assert pause_change(ADDON, cma) == Change(
        f"{ADDON_ID} paused", {"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: "true"}}}
    )
    paused = {"metadata": {"name": "my-addon", "annotations": {ANNOTATION_ROLLOUT_PAUSED: "true"}}}
    assert pause_change(ADDON, paused).patch is None
    assert resume_change(ADDON, paused) == Change(
        f"{ADDON_ID} resumed", {"metadata": {"annotations": {ANNOTATION_ROLLOUT_PAUSED: None}}}
    )
    assert resume_change(ADDON, cma) == Change(f"{ADDON_ID} not paused")


# -- abort / retry ------------------------------------------------------------------------------------


def test_abort_names_the_update_revision() -> None:
    change = abort_change(WEB, mwrs(currentRevision=H2, updateRevision=H3))
    assert change == Change(
        f"{WEB_ID} aborted (update revision {H3})", {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: H3}}}
    )
    requested = mwrs({}, {ANNOTATION_ROLLOUT_ABORT: H3}, currentRevision=H2, updateRevision=H3)
    assert abort_change(WEB, requested) == Change(f"{WEB_ID} abort already requested (update revision {H3})")
    aborted = mwrs(currentRevision=H2, updateRevision=H3, abortedTime="2024-05-01T12:00:00Z")
    assert abort_change(WEB, aborted) == Change(f"{WEB_ID} already aborted (update revision {H3}, at 2024-05-01T12:00:00Z)")
    # A retry of that abort is requested: aborting again is a new request.
    retried = mwrs({}, {ANNOTATION_ROLLOUT_RETRY: "2024-05-01T12:00:00Z"}, currentRevision=H2, updateRevision=H3,
                   abortedTime="2024-05-01T12:00:00Z")
    assert abort_change(WEB, retried).patch == {"metadata": {"annotations": {ANNOTATION_ROLLOUT_ABORT: H3}}}


@pytest.mark.parametrize(
    ("status", "why"),
    [
        ({}, "status.updateRevision is not set"),
        ({"currentRevision": H3, "updateRevision": H3}, f"updateRevision equals currentRevision {H3}"),
    ],
)
def test_abort_needs_a_rollout_in_progress(status: dict[str, Any], why: str) -> None:
    with pytest.raises(RolloutError) as exc:
        abort_change(WEB, mwrs(**status))
    assert str(exc.value) == f"{WEB_ID} has no rollout in progress to abort ({why})"


def test_retry_names_the_aborted_time_and_withdraws_the_abort() -> None:
    aborted = mwrs({}, {ANNOTATION_ROLLOUT_ABORT: H3}, updateRevision=H3, abortedTime="2024-05-01T12:00:00Z")
    assert retry_change(WEB, aborted) == Change(
        f"{WEB_ID} retried (aborted at 2024-05-01T12:00:00Z)",
        {"metadata": {"annotations": {ANNOTATION_ROLLOUT_RETRY: "2024-05-01T12:00:00Z", ANNOTATION_ROLLOUT_ABORT: None}}},
    )
    again = mwrs({}, {ANNOTATION_ROLLOUT_RETRY: "2024-05-01T12:00:00Z"}, abortedTime="2024-05-01T12:00:00Z")
    assert retry_change(WEB, again) == Change(f"{WEB_ID} retry already requested (aborted at 2024-05-01T12:00:00Z)")
    with pytest.raises(RolloutError, match=r"is not aborted \(status.abortedTime is not set\)$"):
        retry_change(WEB, mwrs(updateRevision=H3))


# -- undo ---------------------------------------------------------------------------------------------


def test_undo_defaults_to_the_revision_before_the_update_revision() -> None:
    change = undo_change(WEB, mwrs(tmpl("v3"), currentRevision=H2, updateRevision=H3), REVISIONS)
    assert change.message == f"{WEB_ID} rolled back to revision 2"
    assert change.patch == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "replace", "path": "/spec/manifestWorkTemplate", "value": tmpl("v2")},
    ]
    # The update revision is 2 (a rollback in progress): the default is 1.
    assert undo_change(WEB, mwrs(tmpl("v2"), updateRevision=H2), REVISIONS).message == f"{WEB_ID} rolled back to revision 1"


def test_undo_without_an_update_revision_starts_from_the_spec_s_template() -> None:
    ordered = history(REVISIONS)
    assert previous_revision(WEB, mwrs(tmpl("v2")), ordered)["revision"] == 1
    # A template in no revision: the newest one is the starting point.
    assert previous_revision(WEB, mwrs(tmpl("v9")), ordered)["revision"] == 2


def test_undo_to_a_revision() -> None:
    change = undo_change(WEB, mwrs(tmpl("v3"), updateRevision=H3), REVISIONS, 1)
    assert change.message == f"{WEB_ID} rolled back to revision 1"
    assert isinstance(change.patch, list)
    assert change.patch[1]["value"] == tmpl("v1")


def test_undo_to_the_current_template_is_skipped() -> None:
    change = undo_change(WEB, mwrs(tmpl("v2"), updateRevision=H3), REVISIONS, 2)
    assert change == Change(f"{WEB_ID} skipped rollback (current template already matches revision 2)")
    # Key order does not matter.
    reordered = json.loads(json.dumps(tmpl("v2"), sort_keys=True))
    assert undo_change(WEB, mwrs(reordered), REVISIONS, 2).patch is None


def test_undo_errors() -> None:
    with pytest.raises(RolloutError) as exc:
        undo_change(WEB, mwrs(), REVISIONS, 7)
    assert str(exc.value) == f"revision 7 not found in the history of {WEB_ID} (revisions: 1, 2, 3)"
    with pytest.raises(RolloutError) as exc:
        undo_change(WEB, mwrs(), [])
    assert str(exc.value) == f"no rollout history found for {WEB_ID}"
    with pytest.raises(RolloutError) as exc:
        undo_change(WEB, mwrs(tmpl("v1"), updateRevision=H1), REVISIONS)
    assert str(exc.value) == f"no previous revision to roll back to: revision 1 is the oldest in the history of {WEB_ID}"
    empty = revision(4, "v4")
    del empty["data"]
    with pytest.raises(RolloutError, match=r"^revision 4 \(controllerrevision web-\w+\) holds no data.spec.manifestWorkTemplate$"):
        undo_change(WEB, mwrs(), [*REVISIONS, empty], 4)
    with pytest.raises(RolloutError, match=r"\(revisions: none recorded\)$"):
        find_revision(WEB, [], 1)


# -- history ------------------------------------------------------------------------------------------


def test_history_rows_are_ordered_and_marked() -> None:
    rows = history_rows(mwrs(currentRevision=H2, updateRevision=H3), REVISIONS)
    assert [(r.revision, r.hash, r.markers) for r in rows] == [(1, H1, ()), (2, H2, ("current",)), (3, H3, ("update",))]
    done = history_rows(mwrs(currentRevision=H3, updateRevision=H3), REVISIONS)
    assert done[2].markers == ("current", "update")
    aborted = history_rows(mwrs(currentRevision=H2, updateRevision=H3, abortedTime="2024-05-01T12:00:00Z"), REVISIONS)
    assert aborted[2].markers == ("update", "aborted")
    assert aborted[2].as_json() == {
        "revision": 3, "hash": H3, "name": f"web-{H3}", "created": "2024-05-01T10:00:00Z",
        "current": False, "update": True, "aborted": True,
    }


def test_the_history_table() -> None:
    revisions = [revision(1, "v1", "2024-05-01T10:00:00Z"), revision(2, "v2", "2024-05-02T11:30:00Z"),
                 revision(10, "v3", "")]
    text = render_history(WEB, history_rows(mwrs(currentRevision=H2, updateRevision=H3), revisions))
    width = max(len(H1), len(H2), len(H3), len("HASH")) + 3
    expected = [
        WEB_ID,
        "REVISION   " + "HASH".ljust(width) + "CREATED                MARKERS",
        "1          " + H1.ljust(width) + "2024-05-01T10:00:00Z",
        "2          " + H2.ljust(width) + "2024-05-02T11:30:00Z   current",
        "10         " + H3.ljust(width) + "<unknown>              update",
    ]
    assert text.splitlines() == expected
    assert render_history(WEB, []) == f"{WEB_ID}\nNo rollout history found."


def test_render_table_pads_columns_three_apart_without_trailing_spaces() -> None:
    assert render_table(("A", "BB"), [("xxx", ""), ("y", "z")]) == "A     BB\nxxx\ny     z"


def test_templates_dump_as_yaml_or_json() -> None:
    template = {"workload": {"manifests": [{"kind": "ConfigMap", "apiVersion": "v1"}]}}
    assert dump(template, "yaml") == "workload:\n  manifests:\n  - kind: ConfigMap\n    apiVersion: v1\n"
    assert yaml.safe_load(dump(template, "yaml")) == template
    assert dump(template, "json") == json.dumps(template, indent=2) + "\n"


# -- the workset controller's conventions ----------------------------------------------------------------


def test_a_revision_without_its_hash_label_is_known_by_its_name() -> None:
    unlabelled = revision(2, "v2")
    del unlabelled["metadata"]["labels"]
    assert revision_hash(unlabelled, "web") == H2
    rows = history_rows(mwrs(currentRevision=H2, updateRevision=H3), [revision(1, "v1"), unlabelled])
    assert [(r.hash, r.markers) for r in rows] == [(H1, ()), (H2, ("current",))]


def test_revisions_being_deleted_are_not_history() -> None:
    going = revision(2, "v2")
    going["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    assert [r.revision for r in history_rows(mwrs(), [revision(1, "v1"), going, revision(3, "v3")])] == [1, 3]
    # Undo skips it too: the revision before 3 is 1.
    change = undo_change(WEB, mwrs(tmpl("v3"), updateRevision=H3), [revision(1, "v1"), going, revision(3, "v3")])
    assert change.message == f"{WEB_ID} rolled back to revision 1"


def test_an_abort_request_may_name_the_revision() -> None:
    requested = mwrs({}, {ANNOTATION_ROLLOUT_ABORT: f"web-{H3}"}, currentRevision=H2, updateRevision=H3)
    assert abort_change(WEB, requested).patch is None


def test_templates_compare_as_the_controller_compares_them() -> None:
    with_zeros = {**tmpl("v2"), "manifestConfigs": []}
    assert same_template(with_zeros, tmpl("v2"))
    assert not same_template(tmpl("v1"), tmpl("v2"))
    assert undo_change(WEB, mwrs(with_zeros), REVISIONS, 2).patch is None
