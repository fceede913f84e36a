"""docs/behaviour/mwrs.md section 11 acceptance scenarios on the local hub, through the real kopf operator.

Work status is written by hand where a scenario needs exact control (as OCM's own integration
tests do); ``test_workset_agents.py`` drives rollouts with the simulated work agent.
"""

from __future__ import annotations

import copy
import threading
from datetime import timedelta
from typing import Any

import kubernetes
import pytest

from ocm_rollout.api.constants import ANNOTATION_MANIFESTWORK_REPLICASET as MWRS_OWNER_ANNOTATION
from ocm_rollout.api.constants import ANNOTATION_ROLLOUT_RESERVATIONS as RESERVATIONS
from ocm_rollout.api.constants import FINALIZER_MANIFESTWORK_REPLICASET_CLEANUP as MWRS_FINALIZER
from ocm_rollout.api.constants import LABEL_CONTROLLER_HASH as HASH_LABEL
from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL
from ocm_rollout.api.constants import LABEL_PLACEMENT_NAME as PLACEMENT_NAME_LABEL
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS, MANIFEST_WORKS
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.common.wire import parse_time
from tests.hub_kinds import KUBE_APISERVER
from tests.integration.helpers import holds_for, utc_now, wait_for
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition, env, summary

pytestmark = pytest.mark.integration
__all__ = ["env"]

ZERO = {"total": 0, "applied": 0, "available": 0, "degraded": 0, "progressing": 0, "desiredTotal": 0, "updated": 0}


def zero_but(**values: int) -> dict[str, int]:
    return {**ZERO, **values}


def setup_all(env: Env, count: int, **mwrs_args: Any) -> tuple[str, list[str]]:
    ns = env.namespace(env.unique("ns"))
    clusters = env.clusters(count)
    env.placement(ns, "test-placement", [clusters])
    env.mwrs(ns, "test-work", [{"name": "test-placement"}], **mwrs_args)
    return ns, clusters


def progressive(env: Env, clusters: list[str], strategy: JSON, groups: list[list[str]] | None = None) -> str:
    ns = env.namespace(env.unique("ns"))
    env.placement(ns, "test-placement", groups or [clusters])
    env.mwrs(ns, "test-work", [{"name": "test-placement", "rolloutStrategy": strategy}])
    return ns


def works_in(env: Env, ns: str, count: int) -> list[JSON]:
    return wait_for(
        lambda: (w := env.works_of(ns, "test-work")) and len(w) == count and w,
        what=f"{count} works",
    )


# --- 1-3: All, decisions, Background deletion --------------------------------------------------


def test_decided_clusters_get_one_labelled_work_each(env: Env) -> None:
    ns, clusters = setup_all(env, 3, labels={"app": "demo"})
    works = works_in(env, ns, 3)
    assert [w["metadata"]["namespace"] for w in works] == clusters
    revision = env.get_mwrs(ns, "test-work")["status"]["updateRevision"]
    for work in works:
        assert work["metadata"]["labels"] == {
            "app": "demo",
            MWRS_LABEL: f"{ns}.test-work",
            PLACEMENT_NAME_LABEL: "test-placement",
            HASH_LABEL: revision,
        }
        assert work["metadata"]["name"].startswith("test-work")
        assert work["spec"] == CONFIGMAP_TEMPLATE
    wait_for(lambda: summary(env.get_mwrs(ns, "test-work")) == zero_but(total=3, desiredTotal=3),
             what="summary total 3")


def test_cluster_dropped_from_the_decision_loses_its_work(env: Env) -> None:
    ns, clusters = setup_all(env, 3)
    works_in(env, ns, 3)
    env.set_decisions(ns, "test-placement", [clusters[:2]])
    wait_for(lambda: env.clusters_with_works(ns, "test-work") == clusters[:2], what="work of dropped cluster gone")
    wait_for(lambda: summary(env.get_mwrs(ns, "test-work")).get("total") == 2, what="total 2")


def test_background_deletion_removes_works_and_the_mwrs(env: Env) -> None:
    ns, _ = setup_all(env, 3)
    works_in(env, ns, 3)
    env.api.delete(MANIFEST_WORK_REPLICA_SETS, "test-work", ns)
    wait_for(lambda: env.get_mwrs(ns, "test-work") is None and not env.works_of(ns, "test-work"),
             what="MWRS and works gone")


# --- 4-5: conditions follow the work status --------------------------------------------------------


def test_status_follows_success_then_degradation(env: Env) -> None:
    ns, _ = setup_all(env, 1)
    (work,) = works_in(env, ns, 1)
    wait_for(lambda: condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("False", "Progressing"),
             what="not rolled out yet")
    env.succeed(work)
    wait_for(lambda: summary(env.get_mwrs(ns, "test-work"))
             == zero_but(total=1, applied=1, available=1, desiredTotal=1, updated=1),
             what="applied and available")
    mwrs = env.get_mwrs(ns, "test-work")
    assert condition(mwrs, "PlacementRolledOut") == ("True", "Complete")
    assert condition(mwrs, "ManifestworkApplied") == ("True", "AsExpected")
    env.set_work_conditions(work, [("Available", "False"), ("Progressing", "True"), ("Degraded", "True")])
    wait_for(
        lambda: summary(env.get_mwrs(ns, "test-work"))
        == zero_but(total=1, applied=1, available=0, degraded=1, progressing=1, desiredTotal=1),
        what="degraded summary",
    )
    mwrs = env.get_mwrs(ns, "test-work")
    assert condition(mwrs, "PlacementRolledOut") == ("False", "Progressing")
    assert condition(mwrs, "ManifestworkApplied") == ("False", "NotAsExpected")


# --- 6, 17: placementRefs ---------------------------------------------------------------------------


def test_changing_placement_refs_replaces_the_works(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    first, second = env.clusters(2), env.clusters(2)
    env.placement(ns, "p1", [first])
    env.placement(ns, "p2", [second])
    env.mwrs(ns, "test-work", [{"name": "p1"}])
    wait_for(lambda: env.clusters_with_works(ns, "test-work") == first, what="works of p1")
    env.api.patch(MANIFEST_WORK_REPLICA_SETS, "test-work", {"spec": {"placementRefs": [{"name": "p2"}]}}, ns)
    wait_for(lambda: env.clusters_with_works(ns, "test-work") == second, what="works of p2 only")
    works = env.works_of(ns, "test-work")
    assert {w["metadata"]["labels"][PLACEMENT_NAME_LABEL] for w in works} == {"p2"}


def test_owned_work_of_an_unknown_placement_is_deleted(env: Env) -> None:
    ns, clusters = setup_all(env, 1)
    works_in(env, ns, 1)
    stray = {
        "metadata": {"generateName": "stray", "namespace": clusters[0],
                     "labels": {MWRS_LABEL: f"{ns}.test-work", PLACEMENT_NAME_LABEL: "gone"}},
        "spec": CONFIGMAP_TEMPLATE,
    }
    unlabelled = copy.deepcopy(stray)
    unlabelled["metadata"]["labels"] = {MWRS_LABEL: f"{ns}.test-work"}
    env.api.create(MANIFEST_WORKS, stray, clusters[0])
    env.api.create(MANIFEST_WORKS, unlabelled, clusters[0])
    wait_for(lambda: len(env.works_of(ns, "test-work")) == 1, what="stray works deleted")
    (left,) = env.works_of(ns, "test-work")
    assert left["metadata"]["labels"][PLACEMENT_NAME_LABEL] == "test-placement"


# --- 7-10: Progressive ---------------------------------------------------------------------------------


def test_progressive_rolls_out_in_batches_of_max_concurrency(env: Env) -> None:
    clusters = env.clusters(6)
    ns = progressive(env, clusters, {"type": "Progressive", "progressive": {"maxConcurrency": 2}})
    for done in (2, 4, 6):
        works = works_in(env, ns, done)
        assert condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") in (None, ("False", "Progressing"))
        for work in works[done - 2 :]:
            env.succeed(work)
    wait_for(lambda: condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("True", "Complete"),
             what="rollout complete")
    # The event follows the status write in the same pass (a moment later under load).
    wait_for(lambda: env.events(ns, "RolloutComplete"), what="RolloutComplete")


def test_rollout_type_is_read_as_type_and_warned_about_once(env: Env) -> None:
    clusters = env.clusters(4)
    ns = progressive(env, clusters, {"rolloutType": "Progressive", "progressive": {"maxConcurrency": 2}})
    stored = env.get_mwrs(ns, "test-work")
    assert stored is not None and "type" not in stored["spec"]["placementRefs"][0]["rolloutStrategy"]
    works = works_in(env, ns, 2)
    # Read as All (what the CRD used to make of it), all four would be there at once.
    holds_for(lambda: len(env.works_of(ns, "test-work")) == 2, 1.0, what="two works at a time")
    for work in works:
        env.succeed(work)
    for work in works_in(env, ns, 4)[2:]:
        env.succeed(work)
    wait_for(lambda: condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("True", "Complete"),
             what="rollout complete")
    holds_for(lambda: len(env.events(ns, "DeprecatedRolloutType")) <= 1, 1.0, what="one warning")
    (warning,) = env.events(ns, "DeprecatedRolloutType")
    assert warning["type"] == "Warning"
    assert warning["involvedObject"]["name"] == "test-work"
    assert warning["message"] == (
        "placementRefs[0] (test-placement): rolloutStrategy.rolloutType is the older spelling of type; "
        "it is read as type: Progressive. Write type instead."
    )


def test_max_failures_breach_stops_new_works(env: Env) -> None:
    clusters = env.clusters(3)
    ns = progressive(env, clusters, {"type": "Progressive", "progressive": {"maxConcurrency": 2, "maxFailures": 1}})
    works = works_in(env, ns, 2)
    for work in works:
        env.fail(work)
    events = wait_for(lambda: env.events(ns, "MaxFailuresBreached"), what="breach event")
    assert clusters[0] in events[0]["message"] and clusters[1] in events[0]["message"]
    assert events[0]["type"] == "Warning"
    holds_for(lambda: len(env.works_of(ns, "test-work")) == 2, 2.0, what="no third work")
    assert condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("False", "RolloutDegraded")


def _not_before(env: Env, ns: str, due: Any, count: int) -> None:
    """Exactly ``count`` works until shortly before ``due``; then the next one within a second."""
    early = (due - utc_now()).total_seconds() - 0.2
    if early > 0:
        holds_for(lambda: len(env.works_of(ns, "test-work")) == count, early, what=f"only {count} work(s)")
    works_in(env, ns, count + 1)
    late = (utc_now() - due).total_seconds()
    assert -0.2 <= late < 1.0, f"next work {late:.2f}s after it was due"


def test_min_success_time_delays_the_next_work(env: Env) -> None:
    clusters = env.clusters(2)
    ns = progressive(env, clusters, {"type": "Progressive",
                                     "progressive": {"maxConcurrency": 1, "minSuccessTime": "3s"}})
    (work,) = works_in(env, ns, 1)
    done = env.succeed(work)
    ltt = parse_time(next(c for c in done["status"]["conditions"] if c["type"] == "Progressing")["lastTransitionTime"])
    assert ltt is not None
    _not_before(env, ns, ltt + timedelta(seconds=3), 1)


def test_progress_deadline_times_out_a_failed_cluster(env: Env) -> None:
    clusters = env.clusters(2)
    ns = progressive(env, clusters, {"type": "Progressive", "progressive": {
        "maxConcurrency": 1, "progressDeadline": "3s", "maxFailures": 1}})
    (work,) = works_in(env, ns, 1)
    failed = env.fail(work)
    ltt = parse_time(next(c for c in failed["status"]["conditions"] if c["type"] == "Degraded")["lastTransitionTime"])
    assert ltt is not None
    _not_before(env, ns, ltt + timedelta(seconds=3), 1)
    assert condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("False", "Progressing")


# --- 11-13: placement problems and the first pass -------------------------------------------------------


def test_missing_placement_is_reported_and_nothing_else(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    env.mwrs(ns, "test-work", [{"name": "nowhere"}])
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, "test-work")) and condition(m, "PlacementVerified") and m,
                    what="PlacementVerified")
    assert condition(mwrs, "PlacementVerified") == ("False", "PlacementDecisionNotFound")
    assert [c["type"] for c in mwrs["status"]["conditions"]] == ["PlacementVerified"]
    assert "summary" not in mwrs["status"] or mwrs["status"]["summary"] == ZERO
    assert env.works_of(ns, "test-work") == []


def test_empty_decision_is_reported_as_empty(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    env.placement(ns, "test-placement", [[]])
    env.mwrs(ns, "test-work", [{"name": "test-placement"}])
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, "test-work")) and condition(m, "ManifestworkApplied") and m,
                    what="ManifestworkApplied")
    assert condition(mwrs, "PlacementVerified") == ("False", "PlacementDecisionEmpty")
    assert condition(mwrs, "ManifestworkApplied") == ("False", "PlacementDecisionEmpty")
    assert summary(mwrs) == ZERO


def test_first_pass_only_adds_the_finalizer(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    clusters = env.clusters(1)
    env.placement(ns, "test-placement", [clusters])
    created = env.mwrs(ns, "test-work", [{"name": "test-placement"}])
    api = kubernetes.client.CustomObjectsApi(load_client(env.kubeconfig))
    updates: list[JSON] = []
    done = threading.Event()

    def follow() -> None:
        watch = kubernetes.watch.Watch()
        for event in watch.stream(
            api.list_namespaced_custom_object, "work.open-cluster-management.io", "v1alpha1", ns,
            "manifestworkreplicasets", resource_version=created["metadata"]["resourceVersion"], timeout_seconds=10,
        ):
            if event["type"] == "MODIFIED":
                updates.append(event["object"])
            if len(updates) >= 4:
                watch.stop()
        done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    assert done.wait(15)
    first, second, third, fourth = updates[:4]
    assert first["metadata"]["finalizers"] == [MWRS_FINALIZER]
    assert not first.get("status")
    assert RESERVATIONS not in (first["metadata"].get("annotations") or {})
    # The deploy pass records the template's revision, reserves its clusters on the MWRS before
    # it writes any work, then reports.
    assert set(second["status"]) == {"updateRevision"}
    assert RESERVATIONS not in (second["metadata"].get("annotations") or {})
    assert clusters[0] in third["metadata"]["annotations"][RESERVATIONS]
    assert "conditions" not in third["status"]
    assert fourth["status"].get("conditions")


# --- 14-16, 20: existing works and template changes ------------------------------------------------------


def test_matching_works_without_progressing_are_adopted_unchanged(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    clusters = env.clusters(2)
    env.placement(ns, "test-placement", [clusters])
    versions = {}
    for cluster in clusters:
        work = env.api.create(MANIFEST_WORKS, {
            "metadata": {"name": "pre", "namespace": cluster,
                         "labels": {MWRS_LABEL: f"{ns}.test-work", PLACEMENT_NAME_LABEL: "test-placement"}},
            "spec": CONFIGMAP_TEMPLATE,
        }, cluster)
        work = env.set_work_conditions(work, [("Applied", "True"), ("Available", "True")])
        versions[cluster] = work["metadata"]["resourceVersion"]
    env.mwrs(ns, "test-work", [{"name": "test-placement"}])
    wait_for(lambda: condition(env.get_mwrs(ns, "test-work"), "ManifestworkApplied") == ("True", "AsExpected"),
             what="AsExpected")
    mwrs = env.get_mwrs(ns, "test-work")
    assert summary(mwrs) == zero_but(total=2, applied=2, available=2, desiredTotal=2, updated=2)
    # Improvement 1: Applied and Available True without Progressing is Succeeded.
    assert condition(mwrs, "PlacementRolledOut") == ("True", "Complete")
    assert {w["metadata"]["namespace"]: w["metadata"]["resourceVersion"] for w in env.works_of(ns, "test-work")} \
        == versions


def test_moving_decisions_create_new_works_then_delete_old(env: Env) -> None:
    ns, clusters = setup_all(env, 4)
    env.set_decisions(ns, "test-placement", [clusters[:2]])
    wait_for(lambda: env.clusters_with_works(ns, "test-work") == clusters[:2], what="works on 1 and 2")
    env.set_decisions(ns, "test-placement", [clusters[1:]])
    wait_for(lambda: env.clusters_with_works(ns, "test-work") == clusters[1:], what="works on 2, 3, 4")
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, "test-work")) and summary(m).get("total") == 3 and m,
                    what="total 3")
    assert condition(mwrs, "ManifestworkApplied")[0] == "False"  # type: ignore[index]


def test_template_change_rolls_out_group_by_group_under_the_same_names(env: Env) -> None:
    clusters = env.clusters(5)
    groups = [clusters[:3], clusters[3:]]
    ns = progressive(env, clusters, {"type": "ProgressivePerGroup"}, groups)
    for count in (3, 5):
        for work in works_in(env, ns, count)[count - (3 if count == 3 else 2):]:
            env.succeed(work)
    wait_for(lambda: condition(env.get_mwrs(ns, "test-work"), "PlacementRolledOut") == ("True", "Complete"),
             what="complete before the change")
    names = {w["metadata"]["namespace"]: w["metadata"]["name"] for w in env.works_of(ns, "test-work")}
    new_template = copy.deepcopy(CONFIGMAP_TEMPLATE)
    new_template["workload"]["manifests"][0]["data"]["version"] = "2"
    env.api.patch(MANIFEST_WORK_REPLICA_SETS, "test-work", {"spec": {"manifestWorkTemplate": new_template}}, ns)

    def specs() -> dict[str, str]:
        return {w["metadata"]["namespace"]: w["spec"]["workload"]["manifests"][0]["data"]["version"]
                for w in env.works_of(ns, "test-work")}

    wait_for(lambda: specs() == {**dict.fromkeys(groups[0], "2"), **dict.fromkeys(groups[1], "1")},
             what="group 0 updated")
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, "test-work")) and summary(m).get("total") == 3 and m,
                    what="total 3 after the change")
    assert condition(mwrs, "PlacementRolledOut") == ("False", "Progressing")
    assert mwrs["status"]["placementSummary"][0]["availableDecisionGroups"] == "2 (3 / 5 clusters applied)"
    holds_for(lambda: specs()[groups[1][0]] == "1", 1.0, what="group 1 keeps the old spec")
    for work in env.works_of(ns, "test-work"):
        if work["metadata"]["namespace"] in groups[0]:
            env.succeed(work)
    wait_for(lambda: set(specs().values()) == {"2"}, what="group 1 updated after group 0 succeeded")
    assert {w["metadata"]["namespace"]: w["metadata"]["name"] for w in env.works_of(ns, "test-work")} == names


# --- 18-19: Foreground deletion, long names -------------------------------------------------------------


def test_foreground_deletion_waits_for_works_held_by_the_agent(env: Env) -> None:
    ns, clusters = setup_all(env, 2, cascade="Foreground")
    works = works_in(env, ns, 2)
    held = works[0]
    env.api.patch(MANIFEST_WORKS, held["metadata"]["name"],
                  {"metadata": {"finalizers": ["cluster.open-cluster-management.io/manifest-work-cleanup"]}},
                  held["metadata"]["namespace"])
    env.api.delete(MANIFEST_WORK_REPLICA_SETS, "test-work", ns)
    wait_for(lambda: [w["metadata"]["namespace"] for w in env.works_of(ns, "test-work")] == [clusters[0]],
             what="only the held work left")
    (left,) = env.works_of(ns, "test-work")
    assert left["metadata"].get("deletionTimestamp")
    holds_for(lambda: (m := env.get_mwrs(ns, "test-work")) is not None
              and MWRS_FINALIZER in m["metadata"].get("finalizers", []), 1.0, what="MWRS kept")
    env.api.patch(MANIFEST_WORKS, left["metadata"]["name"], {"metadata": {"finalizers": []}}, clusters[0])
    wait_for(lambda: env.get_mwrs(ns, "test-work") is None, what="MWRS removed")


def test_long_owner_names_get_hashed_labels(env: Env) -> None:
    ns = env.namespace(env.unique("ns") + "-" + "n" * 30)
    name = "w" * 50
    clusters = env.clusters(2)
    env.placement(ns, "test-placement", [clusters])
    env.mwrs(ns, name, [{"name": "test-placement"}])
    from ocm_rollout.controllers.workset.workbuild import owner_for

    owner = owner_for(ns, name)
    assert owner.annotation is not None  # the label value is a hash
    works = wait_for(lambda: len(w := env.api.list(MANIFEST_WORKS, labels=f"{MWRS_LABEL}={owner.label_value}")) == 2
                     and w, what="works with a hashed owner label")
    assert all(w["metadata"]["annotations"][MWRS_OWNER_ANNOTATION] == f"{ns}.{name}" for w in works)
    mwrs = wait_for(lambda: (m := env.get_mwrs(ns, name)) and summary(m).get("total") == 2 and m, what="total 2")
    assert condition(mwrs, "ManifestworkApplied") != ("False", "InvalidManifestWorkName")
    # Work status changes reach the MWRS through the hashed label.
    for work in works:
        env.succeed(work)
    wait_for(lambda: summary(env.get_mwrs(ns, name)).get("available") == 2, what="available 2")
    env.api.delete(MANIFEST_WORK_REPLICA_SETS, name, ns)
    wait_for(lambda: not env.api.list(MANIFEST_WORKS, labels=f"{MWRS_LABEL}={owner.label_value}"),
             what="hashed works deleted")


# --- improvement 2: works that cannot be written ----------------------------------------------------------


def test_missing_cluster_namespace_is_reported_in_manifestwork_applied(env: Env) -> None:
    ns = env.namespace(env.unique("ns"))
    good = env.clusters(1)
    missing = [env.unique("ghost")]
    env.placement(ns, "test-placement", [good + missing])
    env.mwrs(ns, "test-work", [{"name": "test-placement"}])
    mwrs = wait_for(
        lambda: (m := env.get_mwrs(ns, "test-work"))
        and condition(m, "ManifestworkApplied") == ("False", "ClusterNamespaceNotFound") and m,
        what="ClusterNamespaceNotFound",
    )
    message = next(c["message"] for c in mwrs["status"]["conditions"] if c["type"] == "ManifestworkApplied")
    assert missing[0] in message and "not found" in message
    assert condition(mwrs, "PlacementVerified") == ("True", "AsExpected")
    # Once the namespace exists the retry creates the work.
    env.namespace(missing[0])
    wait_for(lambda: len(env.works_of(ns, "test-work")) == 2, timeout=30, what="work created after the fix")


def test_works_over_ocms_size_limit_are_reported_with_the_servers_message_and_retried(env: Env) -> None:
    """OCM's hub webhook refuses ManifestWorks whose manifests exceed 500 KiB (the
    ManifestWorkReplicaSet itself is not checked): the condition and one Warning event carry the
    API server's message, the controller retries with back-off, and a fixed template deploys."""
    if env.hub.kind == KUBE_APISERVER:
        pytest.skip("the refusal comes from OCM's work admission webhook, which the local hub plays and a bare "
                    "kube-apiserver does not have (OCM's cluster-manager installs it)")
    ns = env.namespace(env.unique("ns"))
    clusters = env.clusters(2)
    env.placement(ns, "test-placement", [clusters])
    big = copy.deepcopy(CONFIGMAP_TEMPLATE)
    big["workload"]["manifests"][0]["data"]["blob"] = "x" * (600 * 1024)
    env.mwrs(ns, "too-big", [{"name": "test-placement"}], template=big)
    mwrs = wait_for(
        lambda: (m := env.get_mwrs(ns, "too-big"))
        and condition(m, "ManifestworkApplied") == ("False", "ManifestWorkInvalid") and m,
        what="ManifestWorkInvalid",
    )
    message = next(c["message"] for c in mwrs["status"]["conditions"] if c["type"] == "ManifestworkApplied")
    assert f"create failed in {', '.join(clusters)}: " in message
    assert 'admission webhook "manifestworkvalidators.admission.work.open-cluster-management.io" denied the request: ' \
        "the size of manifests is " in message and "bytes which exceeds the 512000 limit" in message
    assert env.works_of(ns, "too-big") == []
    (warning,) = wait_for(lambda: env.events(ns, "ManifestWorkInvalid"), what="the warning event")
    assert warning["type"] == "Warning" and warning["message"] == message
    # Retried with back-off, telling nothing new.
    queue = env.operator.handles.runtime("workset").queues["workset"].queue
    wait_for(lambda: queue.failures(f"{ns}/too-big") >= 2, what="a retry")
    assert len(env.events(ns, "ManifestWorkInvalid")) == 1
    env.api.patch(MANIFEST_WORK_REPLICA_SETS, "too-big", {"spec": {"manifestWorkTemplate": CONFIGMAP_TEMPLATE}}, ns)
    wait_for(lambda: len(env.works_of(ns, "too-big")) == 2, what="works of the fixed template")
    wait_for(lambda: condition(env.get_mwrs(ns, "too-big"), "ManifestworkApplied") != ("False", "ManifestWorkInvalid"),
             what="the failure cleared")


# --- 23: finished-work garbage collection ------------------------------------------------------------------


def _standalone(env: Env, cluster: str, name: str, ttl: int | None, labels: dict[str, str] | None = None) -> JSON:
    spec = copy.deepcopy(CONFIGMAP_TEMPLATE)
    if ttl is not None:
        spec["deleteOption"] = {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl}
    return env.api.create(MANIFEST_WORKS, {"metadata": {"name": name, "namespace": cluster, "labels": labels or {}},
                                           "spec": spec}, cluster)


def test_finished_works_are_collected_after_their_ttl(env: Env) -> None:
    (cluster,) = env.clusters(1)
    timed = _standalone(env, cluster, "timed", 2)
    at_once = _standalone(env, cluster, "at-once", 0)
    no_ttl = _standalone(env, cluster, "no-ttl", None)
    unfinished = _standalone(env, cluster, "unfinished", 0)
    owned = _standalone(env, cluster, "owned", 0, {MWRS_LABEL: "elsewhere.owner", PLACEMENT_NAME_LABEL: "p"})
    for work in (at_once, no_ttl, owned):
        env.set_work_conditions(work, [("Complete", "True")])
    env.set_work_conditions(unfinished, [("Complete", "False")])
    done = env.set_work_conditions(timed, [("Complete", "True")])
    due = parse_time(done["status"]["conditions"][0]["lastTransitionTime"]) + timedelta(seconds=2)  # type: ignore[operator]

    def names() -> set[str]:
        return {w["metadata"]["name"] for w in env.api.list(MANIFEST_WORKS, cluster)}

    wait_for(lambda: "at-once" not in names(), what="ttl 0 deleted at once")
    early = (due - utc_now()).total_seconds() - 0.2
    if early > 0:
        holds_for(lambda: "timed" in names(), early, what="timed work kept until due")
    wait_for(lambda: "timed" not in names(), what="timed work deleted")
    assert utc_now() - due < timedelta(seconds=1)
    assert names() == {"no-ttl", "unfinished", "owned"}
