"""Revision history, abort, retry and pause of ManifestWorkReplicaSet rollouts (OCM enhancement
229) on the local hub, driven by simulated work agents, with watch-driven monitors checking every
single ManifestWork change.

The simulated agents fail a template's second generation on chosen clusters (an update that goes
wrong) and apply any later generation (the revert, a retry) successfully; rules are keyed on the
works' names, which start with their ManifestWorkReplicaSet's name.
"""

from __future__ import annotations

import asyncio
import copy
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_RETRY,
    LABEL_CONTROLLER_HASH,
    LABEL_MANIFESTWORK_REPLICASET,
)
from ocm_rollout.client.kube import CONTROLLER_REVISIONS, JSON, MANIFEST_WORK_REPLICA_SETS
from ocm_rollout.controllers.workset.revisions import ANNOTATION_REVISION_HISTORY
from tests.integration.helpers import (
    STRESS_RUNS,
    Check,
    ControllerProcess,
    ControllerThread,
    SecondInstance,
    WatchMonitor,
    holds_for,
    simulating,
    wait_for,
)
from tests.integration.test_workset_agents import (
    done,
    in_flight_at_most,
    one_work_per_cluster,
    owned_by,
    start_monitor,
)
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition

pytestmark = pytest.mark.integration

FLEET = 24
BACK_OFF = "image pull back-off"


def bad_update(works: str, clusters: list[str], *, revert_duration: str | None = None) -> list[JSON]:
    """Rules: the second generation of ``works`` fails on ``clusters`` (sooner than another
    cluster of the same wave can succeed, so the wave never widens before the failure is seen);
    later ones succeed."""
    rules: list[JSON] = [
        {"name": clusters, "works": works, "minGeneration": 2, "outcome": "Degraded", "message": BACK_OFF,
         "progressDuration": "10ms"},
        {"name": clusters, "works": works, "minGeneration": 3, "outcome": "Succeeded", "progressDuration": "150ms"},
    ]
    if revert_duration is not None:
        rules.append({"works": works, "minGeneration": 3, "progressDuration": revert_duration})
    return rules


PROFILE: JSON = {
    "defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "150ms", "outcome": "Succeeded"},
    "clusters": [
        *bad_update("abortall*", ["cluster4"]),
        *bad_update("stopper*", ["cluster12"]),
        *bad_update("retry*", ["cluster8"]),
        *bad_update("restart*", ["cluster19"], revert_duration="1s"),
        *bad_update("killed*", ["cluster3"]),
        {"name": "cluster5", "works": "halt*", "outcome": "Degraded", "message": BACK_OFF},
    ],
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Env]:
    """A private hub with simulated clusters cluster1..cluster24 and the workset operator."""
    yield from simulating(Env(tmp_path_factory.mktemp("workset-rollback"), kind=hub_kind), FLEET, PROFILE)


# -- helpers -------------------------------------------------------------------------------------


def template(version: str) -> JSON:
    changed = copy.deepcopy(CONFIGMAP_TEMPLATE)
    changed["workload"]["manifests"][0]["data"]["version"] = version
    return changed


def version_of(work: JSON) -> str:
    return str(work["spec"]["workload"]["manifests"][0]["data"]["version"])


def at_version(version: str) -> Callable[[JSON], bool]:
    return lambda work: version_of(work) == version


def clusters(*numbers: int) -> list[str]:
    return [f"cluster{n}" for n in numbers]


def start(env: Env, name: str, members: list[str], strategy: JSON, **spec: Any) -> str:
    """A namespace with Placement "rollout" deciding ``members`` and MWRS ``name`` at version 1."""
    ns = env.namespace(env.unique("rb"))
    env.placement(ns, "rollout", [members])
    env.mwrs(ns, name, [{"name": "rollout", "rolloutStrategy": strategy}], template=template("1"))
    if spec:
        env.api.patch(MANIFEST_WORK_REPLICA_SETS, name, {"spec": spec}, ns)
    return ns


def change(env: Env, ns: str, name: str, spec: JSON) -> None:
    env.api.patch(MANIFEST_WORK_REPLICA_SETS, name, {"spec": spec}, ns)


def set_version(env: Env, ns: str, name: str, version: str, strategy: JSON | None = None) -> None:
    spec: JSON = {"manifestWorkTemplate": template(version)}
    if strategy is not None:
        spec["placementRefs"] = [{"name": "rollout", "rolloutStrategy": strategy}]
    change(env, ns, name, spec)


def annotate(env: Env, ns: str, name: str, key: str, value: str | None) -> None:
    env.api.patch(MANIFEST_WORK_REPLICA_SETS, name, {"metadata": {"annotations": {key: value}}}, ns)


def all_at(env: Env, ns: str, name: str, members: list[str], version: str) -> bool:
    works = env.works_of(ns, name)
    return sorted(w["metadata"]["namespace"] for w in works) == sorted(members) and all(
        version_of(w) == version and done(w) for w in works
    )


def rolled_out(env: Env, ns: str, name: str, members: list[str], version: str, timeout: float = 60) -> JSON:
    """Wait until every work is at ``version`` and done, and the MWRS says it is rolled out."""

    def finished() -> JSON | None:
        mwrs = env.get_mwrs(ns, name)
        status = (mwrs or {}).get("status") or {}
        if (
            mwrs is not None
            and status.get("currentRevision")
            and status.get("currentRevision") == status.get("updateRevision")
            and condition(mwrs, "Progressing") == ("True", "NewManifestWorkAvailable")
            and all_at(env, ns, name, members, version)
        ):
            return mwrs
        return None

    return wait_for(finished, timeout=timeout, what=f"version {version} rolled out")


def aborted(env: Env, ns: str, name: str, timeout: float = 30) -> JSON:
    return wait_for(
        lambda: (m := env.get_mwrs(ns, name)) and (m.get("status") or {}).get("abortedTime") and m,
        timeout=timeout,
        what="status.abortedTime",
    )


def revisions(env: Env, ns: str, name: str) -> dict[str, JSON]:
    """The MWRS's ControllerRevisions by hash."""
    found = env.api.list(CONTROLLER_REVISIONS, ns, labels=f"{LABEL_MANIFESTWORK_REPLICASET}={ns}.{name}")
    return {r["metadata"]["labels"][LABEL_CONTROLLER_HASH]: r for r in found}


def numbers(env: Env, ns: str, name: str) -> list[tuple[int, str]]:
    """(revision number, template version) of every revision, by number."""
    return sorted(
        (r["revision"], r["data"]["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"]["version"])
        for r in revisions(env, ns, name).values()
    )


class NeverAfterRevert:
    """A monitor check: once a work of ``owner`` went back from the update revision (``is_update``),
    no work of ``owner`` takes the update revision again; ``ever`` collects the clusters that had it."""

    def __init__(self, owner: str, is_update: Callable[[JSON], bool]) -> None:
        self.mine = owned_by(owner)
        self.is_update = is_update
        self.last: dict[tuple[str, str], bool] = {}
        self.reverted = False
        self.ever: set[str] = set()

    def __call__(self, works: dict[tuple[str, str], JSON]) -> str | None:
        problem = None
        for key, work in works.items():
            if not self.mine(work):
                continue
            now = self.is_update(work)
            before = self.last.get(key)
            if now:
                self.ever.add(key[0])
                if self.reverted and not before:
                    problem = f"{key[0]} took the update revision after the abort had reverted a cluster"
            elif before:
                self.reverted = True
            self.last[key] = now
        return problem


def progress_reasons(env: Env, ns: str, name: str) -> tuple[WatchMonitor, list[str]]:
    """A monitor of ManifestWorkReplicaSets recording every Progressing reason ``ns/name`` shows."""
    seen: list[str] = []

    def record(objects: dict[tuple[str, str], JSON]) -> str | None:
        found = condition(objects.get((ns, name)), "Progressing")
        if found is not None and (not seen or seen[-1] != found[1]):
            seen.append(str(found[1]))
        return None

    return WatchMonitor(env.kubeconfig, MANIFEST_WORK_REPLICA_SETS, [record]).start(), seen


def messages(env: Env, ns: str, reason: str) -> list[str]:
    return [str(e["message"]) for e in env.events(ns, reason)]


PROGRESSIVE_ABORT_2: JSON = {"type": "Progressive", "failureStrategy": "AbortAll", "progressive": {"maxConcurrency": 2}}
PROGRESSIVE_ABORT_1: JSON = {"type": "Progressive", "failureStrategy": "AbortAll", "progressive": {"maxConcurrency": 1}}


# -- (1) AbortAll -----------------------------------------------------------------------------------


def test_abort_all_returns_every_updated_cluster_to_the_current_revision(fleet: Env) -> None:
    members = clusters(1, 2, 3, 4, 5, 6)
    ns = start(fleet, "abortall", members, PROGRESSIVE_ABORT_2)
    first = rolled_out(fleet, ns, "abortall", members, "1")
    current = first["status"]["currentRevision"]
    owner = f"{ns}.abortall"
    after = NeverAfterRevert(owner, at_version("2"))
    monitor = start_monitor(fleet, one_work_per_cluster(owner), in_flight_at_most(owner, 2, at_version("2")), after)
    try:
        set_version(fleet, ns, "abortall", "2")
        aborted(fleet, ns, "abortall")
        wait_for(lambda: all_at(fleet, ns, "abortall", members, "1"), timeout=30, what="every cluster back at 1")
        holds_for(lambda: all_at(fleet, ns, "abortall", members, "1"), 2.0, what="no cluster at 2 again")
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert "cluster4" in after.ever and "cluster6" not in after.ever and after.reverted
    mwrs = fleet.get_mwrs(ns, "abortall")
    assert mwrs is not None
    status = mwrs["status"]
    assert status["currentRevision"] == current != status["updateRevision"]
    assert status["abortedTime"]
    assert condition(mwrs, "Progressing") == ("False", "RolloutAborted")
    assert condition(mwrs, "PlacementRolledOut") == ("False", "RolloutDegraded")
    for type_ in ("Progressing", "PlacementRolledOut"):
        message = next(c["message"] for c in status["conditions"] if c["type"] == type_)
        assert "cluster4" in message and BACK_OFF in message and "AbortAll" in message, message
    (event,) = fleet.events(ns, "RolloutAborted")
    assert event["type"] == "Warning" and "cluster4" in event["message"]
    for work in fleet.works_of(ns, "abortall"):
        assert work["metadata"]["labels"][LABEL_CONTROLLER_HASH] == current
    assert status["summary"]["updated"] == 0 and status["summary"]["desiredTotal"] == 6


# -- (2) no failureStrategy: the rollout stops as today ---------------------------------------------


def test_without_failure_strategy_the_rollout_stops_where_it_is(fleet: Env) -> None:
    members = clusters(11, 12, 13, 14)
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 2, "progressDeadline": "2s"}}
    ns = start(fleet, "stopper", members, strategy)
    rolled_out(fleet, ns, "stopper", members, "1")
    set_version(fleet, ns, "stopper", "2")
    mwrs = wait_for(
        lambda: (m := fleet.get_mwrs(ns, "stopper"))
        and condition(m, "Progressing") == ("False", "ProgressDeadlineExceeded") and m,
        timeout=30,
        what="ProgressDeadlineExceeded",
    )
    message = next(c["message"] for c in mwrs["status"]["conditions"] if c["type"] == "Progressing")
    assert "cluster12" in message
    assert condition(mwrs, "PlacementRolledOut") == ("False", "RolloutDegraded")
    assert "abortedTime" not in mwrs["status"]

    def stopped() -> bool:
        versions = {w["metadata"]["namespace"]: version_of(w) for w in fleet.works_of(ns, "stopper")}
        return versions == {"cluster11": "2", "cluster12": "2", "cluster13": "1", "cluster14": "1"}

    holds_for(stopped, 1.5, what="the rollout stopped, nothing reverted")
    assert fleet.events(ns, "MaxFailuresBreached") and not fleet.events(ns, "RolloutAborted")


# -- (3) undo -----------------------------------------------------------------------------------------


def test_undo_rolls_the_earlier_revision_out_under_the_strategy(fleet: Env) -> None:
    members = clusters(15, 16, 17, 18)
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
    ns = start(fleet, "undo", members, strategy)
    first = rolled_out(fleet, ns, "undo", members, "1")["status"]["currentRevision"]
    set_version(fleet, ns, "undo", "2")
    second = rolled_out(fleet, ns, "undo", members, "2")["status"]["currentRevision"]
    assert numbers(fleet, ns, "undo") == [(1, "1"), (2, "2")]
    owner = f"{ns}.undo"
    works_monitor = start_monitor(fleet, one_work_per_cluster(owner), in_flight_at_most(owner, 1, at_version("1")))
    mwrs_monitor, reasons = progress_reasons(fleet, ns, "undo")
    try:
        set_version(fleet, ns, "undo", "1")
        final = rolled_out(fleet, ns, "undo", members, "1")
    finally:
        works_monitor.stop()
        mwrs_monitor.stop()
    assert works_monitor.violations == [], "\n".join(works_monitor.violations[:5])
    assert final["status"]["currentRevision"] == final["status"]["updateRevision"] == first != second
    assert numbers(fleet, ns, "undo") == [(2, "2"), (3, "1")]
    assert revisions(fleet, ns, "undo")[first]["metadata"]["annotations"][ANNOTATION_REVISION_HISTORY] == "1"
    assert "FoundNewRevision" in reasons and reasons[-1] == "NewManifestWorkAvailable", reasons
    assert any("came back" in m for m in messages(fleet, ns, "RevisionCreated"))


# -- (4) pause ----------------------------------------------------------------------------------------


def unchanged_since(owner: str, snapshot: dict[tuple[str, str], JSON]) -> Check:
    """No work of ``owner`` created, deleted, or given other metadata or spec than in ``snapshot``."""
    mine = owned_by(owner)

    def shape(work: JSON) -> JSON:
        meta = work["metadata"]
        return {"generation": meta.get("generation"), "labels": meta.get("labels"),
                "annotations": meta.get("annotations"), "spec": work["spec"]}

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        now = {key: shape(w) for key, w in works.items() if mine(w)}
        if set(now) != set(snapshot):
            return f"works {sorted(set(now) ^ set(snapshot))} created or deleted while paused"
        for key, value in now.items():
            if value != snapshot[key]:
                return f"work {key} written while paused"
        return None

    return check


def test_pause_holds_the_rollout_and_resume_finishes_it(fleet: Env) -> None:
    members = clusters(19, 20, 21, 22, 23, 24)
    ns = start(fleet, "pause", members, {"type": "All"})
    rolled_out(fleet, ns, "pause", members, "1")
    owner = f"{ns}.pause"
    slow = {"type": "Progressive", "progressive": {"maxConcurrency": 1, "minSuccessTime": "1s"}}
    bound = start_monitor(fleet, one_work_per_cluster(owner), in_flight_at_most(owner, 1, at_version("2")))
    try:
        set_version(fleet, ns, "pause", "2", slow)
        wait_for(lambda: sum(version_of(w) == "2" for w in fleet.works_of(ns, "pause")) >= 2, timeout=30,
                 what="two clusters at version 2")
        change(fleet, ns, "pause", {"paused": True})
        mwrs = wait_for(
            lambda: (m := fleet.get_mwrs(ns, "pause")) and condition(m, "Progressing") == ("Unknown", "RolloutPaused")
            and m,
            what="RolloutPaused",
        )
        message = next(c["message"] for c in mwrs["status"]["conditions"] if c["type"] == "Progressing")
        assert message.startswith("rollout paused (spec.paused): revision ") and "wait" in message
        snapshot = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in fleet.works_of(ns, "pause")}
        shapes = {k: {"generation": w["metadata"].get("generation"), "labels": w["metadata"].get("labels"),
                      "annotations": w["metadata"].get("annotations"), "spec": w["spec"]} for k, w in snapshot.items()}
        paused_monitor = start_monitor(fleet, unchanged_since(owner, shapes))
        try:
            holds_for(lambda: not paused_monitor.violations, 10.0, what="no work written while paused")
        finally:
            paused_monitor.stop()
        assert paused_monitor.violations == [], paused_monitor.violations[:3]
        held_at_2 = sum(version_of(w) == "2" for w in fleet.works_of(ns, "pause"))
        assert 2 <= held_at_2 < len(members)
        change(fleet, ns, "pause", {"paused": None})
        final = rolled_out(fleet, ns, "pause", members, "2")
    finally:
        bound.stop()
    assert bound.violations == [], "\n".join(bound.violations[:5])
    assert final["status"]["summary"]["updated"] == len(members)


# -- (5) history ----------------------------------------------------------------------------------------


def test_history_is_pruned_to_the_limit_keeping_current_and_update(fleet: Env) -> None:
    members = clusters(1, 2)
    ns = start(fleet, "history", members, {"type": "All"}, revisionHistoryLimit=1)
    rolled_out(fleet, ns, "history", members, "1")
    for version in ("2", "3", "4"):
        set_version(fleet, ns, "history", version)
        rolled_out(fleet, ns, "history", members, version)
    wait_for(lambda: numbers(fleet, ns, "history") == [(3, "3"), (4, "4")], what="one old revision kept")
    # Paused mid-update: version 4 stays the current revision, 5 is the update revision.
    change(fleet, ns, "history", {"paused": True, "manifestWorkTemplate": template("5")})
    wait_for(lambda: numbers(fleet, ns, "history") == [(3, "3"), (4, "4"), (5, "5")], what="revision 5 recorded")
    change(fleet, ns, "history", {"revisionHistoryLimit": 0})
    wait_for(lambda: numbers(fleet, ns, "history") == [(4, "4"), (5, "5")], what="current and update kept at limit 0")
    holds_for(lambda: numbers(fleet, ns, "history") == [(4, "4"), (5, "5")], 1.0, what="the current revision kept")
    change(fleet, ns, "history", {"paused": None})
    rolled_out(fleet, ns, "history", members, "5")
    wait_for(lambda: numbers(fleet, ns, "history") == [(5, "5")], what="only the current revision left")


# -- (6) restarts during an abort ---------------------------------------------------------------------------


def _restarted_abort(
    fleet: Env, name: str, restart: Callable[[random.Random], None], seed: str, *, ordered: bool = True
) -> None:
    """Roll version 2 out over eight clusters (AbortAll; cluster19 fails it) while ``restart``
    kills the controller and starts it again, ten times at random moments from the template change
    on (the rollout, the abort, the revert, the aborted MWRS); every work change is checked.
    ``ordered``: no cluster takes version 2 once a revert was seen (one instance at a time; two
    overlapping instances may still land a write decided before the abort, which the next pass
    reverts)."""
    members = clusters(13, 14, 15, 16, 17, 18, 19, 20)
    ns = start(fleet, name, members, PROGRESSIVE_ABORT_2)
    current = rolled_out(fleet, ns, name, members, "1")["status"]["currentRevision"]
    owner = f"{ns}.{name}"
    after = NeverAfterRevert(owner, at_version("2"))
    checks = [one_work_per_cluster(owner), in_flight_at_most(owner, 2, at_version("2"))]
    monitor = start_monitor(fleet, *checks, after if ordered else lambda works: after(works) and None)
    rng = random.Random(seed)
    try:
        set_version(fleet, ns, name, "2")
        for _ in range(10):
            restart(rng)
        aborted(fleet, ns, name, timeout=60)
        wait_for(lambda: all_at(fleet, ns, name, members, "1"), timeout=60, what="every cluster back at 1")
        holds_for(lambda: all_at(fleet, ns, name, members, "1"), 1.0, what="no cluster at 2 again")
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert "cluster19" in after.ever
    mwrs = fleet.get_mwrs(ns, name)
    assert mwrs is not None and mwrs["status"]["currentRevision"] == current
    assert condition(mwrs, "Progressing") == ("False", "RolloutAborted")
    works = fleet.works_of(ns, name)
    assert sorted(w["metadata"]["namespace"] for w in works) == sorted(members)
    (event,) = fleet.events(ns, "RolloutAborted")  # once, whatever the kills interrupted
    assert "cluster19" in event["message"], event["message"]


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
def test_restarts_at_random_points_of_an_abort_converge(fleet: Env, round_: int) -> None:
    def restart(rng: random.Random) -> None:
        # A random moment (a pause on purpose), then a kill mid-flight and a fresh start.
        threading.Event().wait(rng.uniform(0.02, 0.4))
        fleet.operator.kill()
        fleet.operator.start()

    _restarted_abort(fleet, f"restart{round_}", restart, f"abort-{round_}")


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
def test_overlapping_instances_restarted_during_an_abort_converge(fleet: Env, round_: int) -> None:
    """Two controllers at once; at random moments one of them is aborted and started again."""
    with SecondInstance(fleet.operator) as overlap:

        def restart(rng: random.Random) -> None:
            threading.Event().wait(rng.uniform(0.02, 0.3))
            overlap.restart_one(rng)

        _restarted_abort(fleet, f"restartpair{round_}", restart, f"overlap-{round_}", ordered=False)


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
def test_sigkilled_controller_process_during_an_abort_converges(fleet: Env, round_: int) -> None:
    """`ocm-rollout run --controllers workset` killed with SIGKILL (kill -9) at random moments."""
    fleet.operator.kill()
    process = ControllerProcess("workset", fleet.kubeconfig)

    def restart(rng: random.Random) -> None:
        process.kill_at_random(rng, lambda: False, times=1)

    try:
        process.start()
        _restarted_abort(fleet, f"restartproc{round_}", restart, f"sigkill-{round_}")
    finally:
        process.sigkill()
        fleet.operator.start()


def test_a_controller_killed_after_recording_the_abort_is_reverted_by_the_next(fleet: Env) -> None:
    """The pass that aborts stores abortedTime before it writes any revert: held right before its
    writes and killed there, it leaves abortedTime in the API and every work untouched; the next
    controller reverts them all."""
    members = clusters(1, 2, 3, 4)
    ns = start(fleet, "killed", members, PROGRESSIVE_ABORT_2)
    rolled_out(fleet, ns, "killed", members, "1")
    owner = f"{ns}.killed"
    fleet.operator.kill()
    reached = threading.Event()
    operator = ControllerThread("workset", fleet.kubeconfig)
    operator.start()
    controller = operator.controller
    original = controller._execute

    async def held(plan: Any, owner_: Any) -> Any:
        reverting = any(
            version_of(w.desired) == "1" and w.existing is not None and version_of(w.existing) == "2"
            for ref in plan.refs for w in ref.writes
        )
        if owner_.name == "killed" and reverting:
            reached.set()
            await asyncio.Event().wait()  # until the kill cancels it
        return await original(plan, owner_)

    controller._execute = held
    after = NeverAfterRevert(owner, at_version("2"))
    monitor = start_monitor(fleet, one_work_per_cluster(owner), after)
    try:
        set_version(fleet, ns, "killed", "2")
        assert reached.wait(30), "the aborting pass never reached its writes"
        operator.kill()
        mwrs = fleet.get_mwrs(ns, "killed")
        assert mwrs is not None and mwrs["status"].get("abortedTime")
        assert after.reverted is False and "cluster3" in after.ever
        at_2 = sorted(w["metadata"]["namespace"] for w in fleet.works_of(ns, "killed") if version_of(w) == "2")
        assert "cluster3" in at_2
        fleet.operator.start()
        wait_for(lambda: all_at(fleet, ns, "killed", members, "1"), timeout=30, what="every cluster back at 1")
    finally:
        monitor.stop()
        operator.kill()
        if fleet.operator.thread is None:
            fleet.operator.start()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert len(fleet.events(ns, "RolloutAborted")) == 1


# -- (7) retry --------------------------------------------------------------------------------------------


def test_retry_after_an_abort_rolls_the_update_revision_out_again(fleet: Env) -> None:
    members = clusters(7, 8, 9)
    ns = start(fleet, "retry", members, PROGRESSIVE_ABORT_1)
    rolled_out(fleet, ns, "retry", members, "1")
    set_version(fleet, ns, "retry", "2")
    stopped_at = aborted(fleet, ns, "retry")["status"]["abortedTime"]
    wait_for(lambda: all_at(fleet, ns, "retry", members, "1"), timeout=30, what="every cluster back at 1")
    owner = f"{ns}.retry"
    monitor = start_monitor(fleet, one_work_per_cluster(owner), in_flight_at_most(owner, 1, at_version("2")))
    try:
        # The agents apply the second version now (a fixed image): the retry completes.
        annotate(fleet, ns, "retry", ANNOTATION_ROLLOUT_RETRY, stopped_at)
        final = rolled_out(fleet, ns, "retry", members, "2")
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert "abortedTime" not in final["status"]
    assert condition(final, "PlacementRolledOut") == ("True", "Complete")
    (event,) = fleet.events(ns, "RolloutRetried")
    assert stopped_at in event["message"] or "retried" in event["message"]
    assert len(fleet.events(ns, "RolloutAborted")) == 1


# -- (8) abort on request ------------------------------------------------------------------------------------


def test_the_abort_annotation_aborts_the_rollout_in_progress(fleet: Env) -> None:
    members = clusters(20, 21, 22, 23)
    ns = start(fleet, "manual", members, {"type": "All"})
    current = rolled_out(fleet, ns, "manual", members, "1")["status"]["currentRevision"]
    owner = f"{ns}.manual"
    after = NeverAfterRevert(owner, at_version("2"))
    monitor = start_monitor(fleet, one_work_per_cluster(owner), after)
    slow = {"type": "Progressive", "progressive": {"maxConcurrency": 1, "minSuccessTime": "2s"}}
    try:
        set_version(fleet, ns, "manual", "2", slow)
        wait_for(lambda: any(version_of(w) == "2" and done(w) for w in fleet.works_of(ns, "manual")),
                 what="one cluster at version 2")
        update = fleet.get_mwrs(ns, "manual")["status"]["updateRevision"]  # type: ignore[index]
        annotate(fleet, ns, "manual", ANNOTATION_ROLLOUT_ABORT, update)
        aborted(fleet, ns, "manual")
        wait_for(lambda: all_at(fleet, ns, "manual", members, "1"), timeout=30, what="every cluster back at 1")
        holds_for(lambda: all_at(fleet, ns, "manual", members, "1"), 3.0, what="no cluster at 2 again")
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert after.ever == {"cluster20"}
    mwrs = fleet.get_mwrs(ns, "manual")
    assert mwrs is not None and mwrs["status"]["currentRevision"] == current
    assert condition(mwrs, "Progressing") == ("False", "RolloutAborted")
    assert ANNOTATION_ROLLOUT_ABORT in next(c["message"] for c in mwrs["status"]["conditions"]
                                            if c["type"] == "Progressing")
    (event,) = fleet.events(ns, "RolloutAborted")
    assert event["type"] == "Warning"


# -- an abort with nothing to return to ------------------------------------------------------------------------


def test_an_abort_of_the_first_template_halts_without_deleting(fleet: Env) -> None:
    members = clusters(5, 6)
    ns = start(fleet, "halt", members, PROGRESSIVE_ABORT_1)
    aborted(fleet, ns, "halt")
    wait_for(lambda: condition(fleet.get_mwrs(ns, "halt"), "Progressing") == ("False", "RolloutAborted"),
             what="RolloutAborted")
    mwrs = fleet.get_mwrs(ns, "halt")
    assert mwrs is not None
    message = next(c["message"] for c in mwrs["status"]["conditions"] if c["type"] == "Progressing")
    assert "cannot revert" in message and "currentRevision is unset" in message
    assert "currentRevision" not in mwrs["status"]
    holds_for(lambda: fleet.clusters_with_works(ns, "halt") == ["cluster5"], 2.0,
              what="the failed work kept, no new work")
