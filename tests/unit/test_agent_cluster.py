"""The objects of a simulated cluster (ocm_rollout.sandbox.agents.cluster) and the work agent using them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.cluster import (
    DEFAULT_NAMESPACES,
    ClusterObject,
    ClusterObjects,
    applied_objects,
)
from ocm_rollout.sandbox.agents.conditions import find_condition
from ocm_rollout.sandbox.agents.work import Mode, Outcome, Sighting, WorkBehaviour, plan_work

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
FAST = WorkBehaviour(apply_delay=1.0, progress_duration=2.0)

TEAM = ClusterObject("", "Namespace", "namespaces", "", "team")
CM = ClusterObject("", "ConfigMap", "configmaps", "team", "cm")
ROLE = ClusterObject("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", "", "reader")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ns_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def cm_manifest(namespace: str, name: str = "cm") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def work(*manifests: dict[str, Any], name: str = "w", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "cluster1", "uid": name, "generation": 1,
                     "finalizers": [names.MANIFEST_WORK_FINALIZER]},
        "spec": {"workload": {"manifests": list(manifests)}, **spec},
    }  # fmt: skip


def run(obj: dict[str, Any], seconds: float, store: ClusterObjects, behaviour: WorkBehaviour = FAST) -> dict[str, Any]:
    """One pass of the agent over ``obj`` on the cluster ``store``; records what it applied."""
    name = obj["metadata"]["name"]
    plan = plan_work(obj, behaviour, Sighting(T0), at(seconds), store.view(excluding=name))
    out = copy.deepcopy(obj)
    if plan.status is not None:
        out["status"] = plan.status
    if plan.applied is not None:
        store.record(name, plan.applied, obj["spec"].get("deleteOption"))
    return out


def cond(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = find_condition(obj["status"]["conditions"], type_)
    assert found is not None, type_
    return dict(found)


def manifest_applied(obj: dict[str, Any], index: int) -> dict[str, Any]:
    found = find_condition(obj["status"]["resourceStatus"]["manifests"][index]["conditions"], "Applied")
    assert found is not None
    return dict(found)


# --- the store ----------------------------------------------------------------------------------------


def test_a_fresh_cluster_has_its_own_namespaces() -> None:
    assert ClusterObjects().view().namespaces == DEFAULT_NAMESPACES


def test_an_object_stays_while_any_work_holds_it() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM])
    store.record("b", [TEAM, CM])
    store.release("a")
    assert "team" in store.view().namespaces
    store.release("b")
    assert "team" not in store.view().namespaces


def test_a_works_own_objects_are_left_out_of_its_view() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM])
    assert "team" not in store.view(excluding="a").namespaces
    assert "team" in store.view(excluding="b").namespaces


def test_orphan_delete_option_keeps_every_object() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM, ROLE])
    store.release("a", {"propagationPolicy": "Orphan"})
    assert store.objects() == {TEAM, ROLE}


def test_selectively_orphan_keeps_the_matching_objects_only() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM, ROLE])
    rule = {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "namespace": "", "name": "reader"}
    store.release("a", {"propagationPolicy": "SelectivelyOrphan", "selectivelyOrphans": {"orphaningRules": [rule]}})
    assert store.objects() == {ROLE}


def test_an_object_dropped_from_a_work_goes_unless_orphaned() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM, ROLE])
    store.record("a", [TEAM])
    assert store.objects() == {TEAM}
    store.record("a", [ROLE])
    store.record("a", [], {"propagationPolicy": "Orphan"})
    assert store.objects() == {ROLE}


def test_an_orphan_goes_with_its_namespace() -> None:
    store = ClusterObjects()
    store.record("a", [TEAM])
    store.record("b", [CM])
    store.release("b", {"propagationPolicy": "Orphan"})
    assert CM in store.objects()
    store.release("a")
    assert store.objects() == set()


def test_the_shape_follows_every_change_and_is_computed_once_per_change(monkeypatch: Any) -> None:
    from ocm_rollout.sandbox.agents import cluster

    views = []
    real = cluster.view_of
    monkeypatch.setattr(cluster, "view_of", lambda objects: views.append(1) or real(objects))
    store = ClusterObjects()
    fresh = store.shape()
    assert fresh == store.shape() and len(views) == 1, "asked twice, computed once"
    store.record("a", [TEAM])
    with_team = store.shape()
    assert "team" in with_team[0] and with_team != fresh and len(views) == 2
    store.record("a", [TEAM])  # the same objects again (its status write after the apply)
    assert store.shape() == with_team and len(views) == 2, "no change, nothing computed"
    store.record("b", [TEAM, CM])
    assert store.shape() == with_team and len(views) == 3  # a change, though not of the shape
    store.release("b", {"propagationPolicy": "Orphan"})  # CM stays as an orphan
    store.record("a", [TEAM])  # with orphans, the same objects are still looked at again
    assert CM in store.objects() and store.shape() == with_team
    store.release("a")  # the namespace goes, and the orphan with it
    assert store.objects() == set() and store.shape() == fresh


def test_the_store_is_rebuilt_from_the_works_statuses() -> None:
    store = ClusterObjects()
    applied = run(run(work(ns_manifest("team"), cm_manifest("team"), name="a"), 1, store), 3, store)
    failed = run(work(cm_manifest("elsewhere"), name="b"), 1, store)
    rebuilt = ClusterObjects.from_works([applied, failed, {"metadata": {"name": "c"}}])
    assert rebuilt.objects() == store.objects() == {TEAM, CM}
    assert applied_objects(failed) == []


def test_a_crd_is_rebuilt_with_the_kinds_it_serves() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    }  # fmt: skip
    store = ClusterObjects()
    applied = run(work(crd, name="crds"), 1, store)
    rebuilt = ClusterObjects.from_works([applied])
    assert rebuilt.view().discovery.lookup("example.com", "v1", "Widget") is not None


# --- the work agent on a cluster -----------------------------------------------------------------------


def test_a_work_needing_a_namespace_another_work_creates_applies_once_it_exists() -> None:
    store = ClusterObjects()
    consumer = work(cm_manifest("team"), name="consumer")
    first = run(consumer, 1, store)
    assert manifest_applied(first, 0)["message"] == 'Failed to apply manifest: namespaces "team" not found'
    run(work(ns_manifest("team"), name="creator"), 1, store)
    again = run(first, 1.5, store)
    assert cond(again, "Applied")["status"] == "True"
    assert store.held_by("consumer") == frozenset({CM})


def test_deleting_the_work_that_made_a_namespace_fails_later_works_again() -> None:
    store = ClusterObjects()
    run(work(ns_manifest("team"), name="creator"), 1, store)
    assert cond(run(work(cm_manifest("team"), name="early"), 1, store), "Applied")["status"] == "True"
    store.release("creator")
    late = run(work(cm_manifest("team", "other"), name="late"), 1, store)
    assert cond(late, "Applied")["status"] == "False"


def test_a_failed_manifest_is_not_available_and_not_on_the_cluster() -> None:
    store = ClusterObjects()
    out = run(work(cm_manifest("default"), cm_manifest("nowhere", "x")), 1, store)
    available = cond(out, "Available")
    assert (available["status"], available["message"]) == ("False", "1 of 2 resources are not available")
    assert store.held_by("w") == frozenset({ClusterObject("", "ConfigMap", "configmaps", "default", "cm")})


def test_an_unknown_kind_has_incomplete_meta_and_unknown_availability() -> None:
    ghost = {"apiVersion": "nothing.example.com/v9", "kind": "Ghost", "metadata": {"name": "boo", "namespace": "default"}}
    out = run(work(ghost), 1, ClusterObjects())
    entry = out["status"]["resourceStatus"]["manifests"][0]
    assert entry["resourceMeta"]["resource"] == ""
    applied = manifest_applied(out, 0)
    assert (applied["reason"], applied["message"]) == (
        "AppliedManifestFailed",
        'Failed to apply manifest: the server doesn\'t have a resource type "Ghost"',
    )
    available = find_condition(entry["conditions"], "Available")
    assert available is not None and (available["status"], available["reason"]) == ("Unknown", "IncompleteResourceMeta")
    assert (cond(out, "Applied")["status"], cond(out, "Applied")["reason"]) == ("False", "AppliedManifestWorkFailed")


def test_a_refused_manifest_fails_the_rollout_and_it_recovers_when_the_cluster_allows_it() -> None:
    store = ClusterObjects()
    failing = run(run(work(cm_manifest("default"), cm_manifest("team", "x")), 1, store), 3, store)
    degraded = cond(failing, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ApplyFailed")
    assert degraded["message"] == '1 of 2 manifests failed to apply: namespaces "team" not found'
    assert cond(failing, "Progressing")["status"] == "True"
    store.record("creator", [TEAM])
    healed = run(failing, 10, store)
    assert cond(healed, "Progressing")["status"] == "False"
    assert find_condition(healed["status"]["conditions"], "Degraded") is None


def test_a_profile_message_names_the_failure_of_a_refused_manifest() -> None:
    behaviour = WorkBehaviour(apply_delay=1.0, progress_duration=2.0, message="bad manifest")
    out = run(run(work(cm_manifest("team")), 1, ClusterObjects(), behaviour), 3, ClusterObjects(), behaviour)
    assert cond(out, "Degraded")["message"] == "bad manifest"


def test_faithful_mode_reports_a_refused_manifest_without_progressing() -> None:
    behaviour = WorkBehaviour(mode=Mode.FAITHFUL)
    out = run(work(cm_manifest("team")), 1, ClusterObjects(), behaviour)
    assert {c["type"] for c in out["status"]["conditions"]} == {"Applied", "Available"}


def test_a_profile_apply_failure_puts_nothing_on_the_cluster() -> None:
    store = ClusterObjects()
    run(work(ns_manifest("team")), 1, store, WorkBehaviour(outcome=Outcome.APPLY_FAILED))
    assert store.objects() == set()
