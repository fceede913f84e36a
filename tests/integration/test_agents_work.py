"""The simulated work agent drives ManifestWork status through the API exactly as docs/behaviour/work-agent.md
says: checked with the official client against a local hub, write by write."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest

from tests.integration.helpers import FAST, SimThread, wait_until
from tests.integration.test_agents_env import (
    CONFIGMAP,
    DEPLOYMENT,
    WORK,
    Recorder,
    conditions,
    create_work,
    get_work,
    until,
)

pytestmark = pytest.mark.integration

FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup"


def settled(api: Any, name: str, namespace: str = "cluster1") -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        work = get_work(api, namespace, name)
        if work is None:
            return None
        progressing = conditions(work).get("Progressing")
        generation = work["metadata"]["generation"]
        if progressing and progressing.get("observedGeneration") == generation:
            degraded = conditions(work).get("Degraded")
            if progressing["status"] == "False" or (degraded and degraded["status"] == "True"):
                return work
        return None

    return check


@pytest.fixture
def recorder(sim_hub: Any, client_for: Any) -> Any:
    rec = Recorder(client_for(sim_hub), "cluster1").start()
    yield rec
    rec.stop()


def test_finalizer_comes_before_any_status(start_sim: Any, sim_api: Any, recorder: Recorder) -> None:
    start_sim()
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    until(settled(sim_api, "w"), timeout=20, message="work settled")
    versions = recorder.of("w")
    first_status = next(i for i, v in enumerate(versions) if (v.get("status") or {}).get("conditions"))
    first_finalized = next(i for i, v in enumerate(versions) if FINALIZER in (v["metadata"].get("finalizers") or []))
    assert first_finalized < first_status


def test_first_status_write_carries_applied_available_and_progressing(
    start_sim: Any, sim_api: Any, recorder: Recorder
) -> None:
    start_sim()
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    until(settled(sim_api, "w"), timeout=20, message="work settled")
    first = next(v for v in recorder.of("w") if (v.get("status") or {}).get("conditions"))
    summary = {t: (c["status"], c.get("observedGeneration")) for t, c in conditions(first).items()}
    assert summary == {"Applied": ("True", 1), "Available": ("True", 1), "Progressing": ("True", 1)}
    assert first["status"]["resourceStatus"]["manifests"][0]["resourceMeta"]["resource"] == "configmaps"


def test_success_flips_progressing_and_keeps_applied_transition_time(start_sim: Any, sim_api: Any) -> None:
    start_sim()
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    first = until(
        lambda: (w := get_work(sim_api, "cluster1", "w")) and "Applied" in conditions(w) and w,
        timeout=20,
        message="first status",
    )
    done = until(settled(sim_api, "w"), timeout=20, message="work settled")
    progressing = conditions(done)["Progressing"]
    assert (progressing["status"], progressing["reason"]) == ("False", "Completed")
    assert conditions(done)["Applied"]["lastTransitionTime"] == conditions(first)["Applied"]["lastTransitionTime"]
    assert progressing["lastTransitionTime"] > conditions(first)["Progressing"]["lastTransitionTime"]


def test_spec_update_keeps_old_generation_until_applied(start_sim: Any, sim_api: Any, recorder: Recorder) -> None:
    start_sim(profile={"defaults": {"applyDelay": "1500ms", "progressDuration": "300ms"}})
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    until(settled(sim_api, "w"), timeout=20, message="generation 1 settled")
    group, version, plural = WORK
    updated = copy.deepcopy(CONFIGMAP)
    updated["data"] = {"a": "c"}
    sim_api.patch_namespaced_custom_object(
        group, version, "cluster1", plural, "w", {"spec": {"workload": {"manifests": [updated]}}}
    )
    done = until(
        lambda: (w := settled(sim_api, "w")()) and w["metadata"]["generation"] == 2 and w,
        timeout=20,
        message="generation 2 settled",
    )
    assert conditions(done)["Applied"]["observedGeneration"] == 2
    for seen in recorder.of("w"):
        generation = seen["metadata"]["generation"]
        for cond in conditions(seen).values():
            assert cond.get("observedGeneration", 0) <= generation
    bumped = [v for v in recorder.of("w") if v["metadata"]["generation"] == 2]
    assert conditions(bumped[0])["Applied"]["observedGeneration"] == 1, "old conditions stay until the apply"


def test_degraded_outcome_reports_progressing_and_degraded(start_sim: Any, sim_api: Any) -> None:
    start_sim(profile={"defaults": {**FAST, "outcome": "Degraded", "message": "probe failed"}})
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    done = until(settled(sim_api, "w"), timeout=20, message="work failed")
    summary = {t: (c["status"], c["reason"], c.get("observedGeneration")) for t, c in conditions(done).items()}
    assert summary["Progressing"] == ("True", "Applying", 1)
    assert summary["Degraded"] == ("True", "ApplyFailed", 1)
    assert conditions(done)["Degraded"]["message"] == "probe failed"


def test_apply_failure_reports_applied_false(start_sim: Any, sim_api: Any) -> None:
    start_sim(profile={"defaults": {**FAST, "outcome": "ApplyFailed", "message": "denied"}})
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    done = until(settled(sim_api, "w"), timeout=20, message="work failed")
    manifest = done["status"]["resourceStatus"]["manifests"][0]
    applied = {c["type"]: c for c in manifest["conditions"]}["Applied"]
    assert (applied["status"], applied["message"]) == ("False", "Failed to apply manifest: denied")
    assert conditions(done)["Applied"]["reason"] == "AppliedManifestWorkFailed"


def test_profile_outcome_per_cluster(start_sim: Any, sim_api: Any) -> None:
    start_sim(clusters=2, profile={"defaults": FAST, "clusters": [{"name": "cluster2", "outcome": "Degraded"}]})
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    create_work(sim_api, "cluster2", "w", CONFIGMAP)
    one = until(settled(sim_api, "w", "cluster1"), timeout=20, message="cluster1 settled")
    two = until(settled(sim_api, "w", "cluster2"), timeout=20, message="cluster2 settled")
    assert "Degraded" not in conditions(one)
    assert conditions(two)["Degraded"]["status"] == "True"


def test_well_known_status_feedback(start_sim: Any, sim_api: Any) -> None:
    start_sim()
    config = {
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
        "feedbackRules": [
            {"type": "WellKnownStatus"},
            {"type": "JSONPaths", "jsonPaths": [{"name": "available", "path": '.status.conditions[?(@.type=="Available")].status'}]},
        ],
    }
    create_work(sim_api, "cluster1", "w", DEPLOYMENT, manifestConfigs=[config])
    done = until(settled(sim_api, "w"), timeout=20, message="work settled")
    manifest = done["status"]["resourceStatus"]["manifests"][0]
    values = {v["name"]: v["fieldValue"] for v in manifest["statusFeedback"]["values"]}
    assert values == {
        "ReadyReplicas": {"type": "Integer", "integer": 3},
        "Replicas": {"type": "Integer", "integer": 3},
        "AvailableReplicas": {"type": "Integer", "integer": 3},
        "available": {"type": "String", "string": "True"},
    }
    synced = {c["type"]: c for c in manifest["conditions"]}["StatusFeedbackSynced"]
    assert (synced["status"], synced["reason"]) == ("True", "StatusFeedbackSynced")


def test_faithful_mode_reports_no_progressing(start_sim: Any, sim_api: Any) -> None:
    start_sim(profile={"defaults": {**FAST, "mode": "faithful"}})
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    work = until(
        lambda: (w := get_work(sim_api, "cluster1", "w")) and "Available" in conditions(w) and w,
        timeout=20,
        message="status written",
    )
    assert set(conditions(work)) == {"Applied", "Available"}


def test_deleted_work_is_released(start_sim: Any, sim_api: Any) -> None:
    start_sim()
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    until(settled(sim_api, "w"), timeout=20, message="work settled")
    group, version, plural = WORK
    sim_api.delete_namespaced_custom_object(group, version, "cluster1", plural, "w")
    wait_until(lambda: get_work(sim_api, "cluster1", "w") is None, timeout=20, message="work gone")


def test_restarted_simulation_leaves_a_settled_work_alone(start_sim: Any, sim_api: Any, sim_hub: Any) -> None:
    first = start_sim()
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    done = until(settled(sim_api, "w"), timeout=20, message="work settled")
    first.stop()
    second = start_sim()
    assert second is not first
    create_work(sim_api, "cluster1", "probe", CONFIGMAP)
    until(settled(sim_api, "probe"), timeout=20, message="the new simulation is working")
    after = get_work(sim_api, "cluster1", "w")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]


def test_work_outside_simulated_clusters_is_ignored(start_sim: Any, sim_api: Any, sim_hub: Any, client_for: Any) -> None:
    namespace = kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name="elsewhere"))
    kubernetes.client.CoreV1Api(client_for(sim_hub)).create_namespace(namespace)
    sim = start_sim(clusters=1)
    create_work(sim_api, "elsewhere", "w", CONFIGMAP)
    create_work(sim_api, "cluster1", "w", CONFIGMAP)
    until(settled(sim_api, "w"), timeout=20, message="cluster1 work settled")
    foreign = get_work(sim_api, "elsewhere", "w")
    assert foreign is not None and not foreign.get("status") and not foreign["metadata"].get("finalizers")
    assert isinstance(sim, SimThread)


def applied_message(api: Any, name: str, status: str) -> Callable[[], str | None]:
    """The first manifest's Applied message once the work's Applied condition has ``status``."""

    def check() -> str | None:
        work = get_work(api, "cluster1", name)
        if work is None or (conditions(work).get("Applied") or {}).get("status") != status:
            return None
        entry = work["status"]["resourceStatus"]["manifests"][0]
        return str({c["type"]: c for c in entry["conditions"]}["Applied"]["message"])

    return check


def configmap_in(namespace: str, name: str = "cm") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def test_the_cluster_refuses_an_unknown_kind_and_a_missing_namespace(start_sim: Any, sim_api: Any) -> None:
    start_sim(clusters=1)
    ghost = {"apiVersion": "nothing.example.com/v9", "kind": "Ghost", "metadata": {"name": "boo", "namespace": "default"}}
    create_work(sim_api, "cluster1", "ghost", ghost)
    create_work(sim_api, "cluster1", "bad-namespace", configmap_in("Not_Valid!"))
    assert wait_until(applied_message(sim_api, "ghost", "False"), timeout=20, message="ghost refused") == (
        'Failed to apply manifest: the server doesn\'t have a resource type "Ghost"'
    )
    assert wait_until(applied_message(sim_api, "bad-namespace", "False"), timeout=20, message="refused") == (
        'Failed to apply manifest: namespaces "Not_Valid!" not found'
    )


def test_a_namespace_lives_as_long_as_the_work_that_made_it(start_sim: Any, sim_api: Any) -> None:
    start_sim(clusters=1)
    create_work(sim_api, "cluster1", "early", configmap_in("team"))
    wait_until(applied_message(sim_api, "early", "False"), timeout=20, message="no namespace yet")
    create_work(sim_api, "cluster1", "creator", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    wait_until(applied_message(sim_api, "early", "True"), timeout=20, message="applied once the namespace exists")
    group, version, plural = WORK
    sim_api.delete_namespaced_custom_object(group, version, "cluster1", plural, "creator")
    wait_until(lambda: get_work(sim_api, "cluster1", "creator") is None, timeout=20, message="creator gone")
    create_work(sim_api, "cluster1", "late", configmap_in("team", "other"))
    assert wait_until(applied_message(sim_api, "late", "False"), timeout=20, message="late refused") == (
        'Failed to apply manifest: namespaces "team" not found'
    )
    wait_until(applied_message(sim_api, "early", "False"), timeout=20, message="early lost its namespace too")


def test_a_restarted_simulation_rebuilds_the_clusters_objects_from_the_works(start_sim: Any, sim_api: Any) -> None:
    first = start_sim(clusters=1)
    create_work(sim_api, "cluster1", "creator", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    until(settled(sim_api, "creator"), timeout=20, message="namespace applied")
    first.stop()
    start_sim(clusters=1)
    create_work(sim_api, "cluster1", "user", configmap_in("team"))
    wait_until(applied_message(sim_api, "user", "True"), timeout=20, message="the namespace is still there")
