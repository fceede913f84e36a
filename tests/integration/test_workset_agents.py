"""Rollouts driven by the simulated work agents (ocm_rollout.sandbox.simulation), with a watch-driven monitor
that checks the rollout's bounds at every single ManifestWork change, and restart safety."""

from __future__ import annotations

import copy
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET as MWRS_LABEL
from ocm_rollout.api.constants import LABEL_PLACEMENT_NAME as PLACEMENT_NAME_LABEL
from ocm_rollout.client.kube import JSON, MANIFEST_WORK_REPLICA_SETS, MANIFEST_WORKS
from ocm_rollout.controllers.rollout.plugin.config import parse as parse_work_config
from ocm_rollout.controllers.rollout.verification import ANNOTATION_VALIDATION
from tests.integration.fake_prometheus import FakePrometheus
from tests.integration.helpers import (
    STRESS_RUNS,
    Check,
    ControllerProcess,
    SecondInstance,
    WatchMonitor,
    holds_for,
    simulating,
    wait_for,
)
from tests.integration.smoke_plugin import smoke_plugin
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition, summary

pytestmark = pytest.mark.integration

FLEET = 56
PROFILE: JSON = {
    "defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "150ms", "outcome": "Succeeded"},
    "clusters": [
        {"name": ["cluster51", "cluster52"], "outcome": "Degraded", "message": "image pull back-off"},
        {"name": ["cluster55", "cluster56"], "mode": "faithful"},
    ],
}
RELIABLE = [f"cluster{i}" for i in range(1, 51)]


# The example smoke plugin, slow and flaky, for the validating stress round: BeginRollout and
# ValidateRolloutCompletion take 0.2 s, and a third of the calls answer UNAVAILABLE.
SLOW_FLAKY_PLUGIN = ("--delay", "BeginRollout=0.2", "--delay", "ValidateRolloutCompletion=0.2", "--flaky", "0.3")


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Env]:
    """A private hub with simulated clusters cluster1..cluster56, the workset operator, the smoke
    plugin registered as "smoke" and a stand-in Prometheus API."""
    environment = Env(tmp_path_factory.mktemp("workset-agents"), kind=hub_kind)
    with smoke_plugin(*SLOW_FLAKY_PLUGIN) as port, FakePrometheus() as prometheus:
        environment.operator.plugins = parse_work_config(
            f"plugins:\n  - name: smoke\n    endpoint: http://127.0.0.1:{port}\n", "work-config.yaml"
        )
        environment.prometheus = prometheus  # type: ignore[attr-defined]
        yield from simulating(environment, FLEET, PROFILE)


def done(work: JSON) -> bool:
    """The simulated agent reported success for the work's current generation."""
    generation = work["metadata"].get("generation")
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond["type"] == "Progressing":
            return bool(cond["status"] == "False" and cond.get("observedGeneration") == generation)
    return False


def owned_by(owner: str) -> Callable[[JSON], bool]:
    return lambda w: (w["metadata"].get("labels") or {}).get(MWRS_LABEL) == owner


def one_work_per_cluster(owner: str) -> Check:
    mine = owned_by(owner)

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        pairs = Counter(
            (w["metadata"]["namespace"], w["metadata"]["labels"].get(PLACEMENT_NAME_LABEL))
            for w in works.values()
            if mine(w)
        )
        doubled = [pair for pair, count in pairs.items() if count > 1]
        return f"two works for {doubled}" if doubled else None

    return check


def _brief(work: JSON) -> str:
    conds = ",".join(f"{c['type']}={c['status']}@{c.get('observedGeneration')}"
                     for c in (work.get("status") or {}).get("conditions") or [])
    meta = work["metadata"]
    return f"{meta['namespace']}/{meta['name']} gen {meta.get('generation')} rv {meta.get('resourceVersion')} [{conds}]"


def in_flight_at_most(owner: str, bound: int, current: Callable[[JSON], bool] = lambda w: True) -> Check:
    mine = owned_by(owner)

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        flying = sorted((w for w in works.values() if mine(w) and current(w) and not done(w)),
                        key=lambda w: w["metadata"]["namespace"])
        if len(flying) <= bound:
            return None
        return f"{len(flying)} works in flight (bound {bound}): " + "; ".join(_brief(w) for w in flying)

    return check


def start_monitor(env: Env, *checks: Check) -> WatchMonitor:
    return WatchMonitor(env.kubeconfig, MANIFEST_WORKS, list(checks)).start()


def rollout(env: Env, name: str, clusters: list[str], strategy: JSON,
            groups: list[list[str]] | None = None, template: JSON | None = None, ns: str | None = None) -> str:
    ns = env.namespace(ns or env.unique("agents"))
    env.placement(ns, "rollout", groups or [clusters])
    env.mwrs(ns, name, [{"name": "rollout", "rolloutStrategy": strategy}], template=template)
    return ns


def watched(env: Env, name: str, max_in_flight: int) -> tuple[str, WatchMonitor]:
    """A namespace name for a rollout of ``name`` and a started monitor of its bounds: at most
    ``max_in_flight`` works in flight, one work per cluster."""
    ns_name = env.unique("agents")
    owner = f"{ns_name}.{name}"
    return ns_name, start_monitor(env, in_flight_at_most(owner, max_in_flight), one_work_per_cluster(owner))


def complete(env: Env, ns: str, name: str, timeout: float = 60) -> JSON:
    return wait_for(
        lambda: (m := env.get_mwrs(ns, name)) and condition(m, "PlacementRolledOut") == ("True", "Complete") and m,
        timeout=timeout,
        what="PlacementRolledOut Complete",
    )


def test_progressive_never_exceeds_max_concurrency(agents: Env) -> None:
    clusters = RELIABLE[:20]
    ns_name, monitor = watched(agents, "web", 3)
    try:
        rollout(agents, "web", clusters, {"type": "Progressive", "progressive": {"maxConcurrency": 3}}, ns=ns_name)
        final = complete(agents, ns_name, "web")
    finally:
        monitor.stop()
    assert monitor.violations == []
    assert summary(final)["total"] == 20
    assert len(agents.events(ns_name, "RolloutWaveStarted")) >= 7


def test_progressive_per_group_never_starts_a_group_early(agents: Env) -> None:
    groups = [RELIABLE[20:23], RELIABLE[23:27], RELIABLE[27:30]]
    ns_name = agents.unique("agents")
    owner = f"{ns_name}.web"
    group_of = {c: i for i, g in enumerate(groups) for c in g}

    def ordered(works: dict[tuple[str, str], JSON]) -> str | None:
        mine = [w for w in works.values() if owned_by(owner)(w)]
        for work in mine:
            index = group_of[work["metadata"]["namespace"]]
            unfinished = [w["metadata"]["namespace"] for w in mine
                          if group_of[w["metadata"]["namespace"]] < index and not done(w)]
            earlier_missing = [c for g in groups[:index] for c in g
                               if c not in {w["metadata"]["namespace"] for w in mine}]
            if unfinished or earlier_missing:
                return f"group {index} started before {unfinished or earlier_missing} finished"
        return None

    monitor = start_monitor(agents, ordered)
    try:
        rollout(agents, "web", RELIABLE[20:30], {"type": "ProgressivePerGroup"}, groups=groups, ns=ns_name)
        complete(agents, ns_name, "web")
    finally:
        monitor.stop()
    assert monitor.violations == []


def test_failures_beyond_max_failures_stop_the_rollout(agents: Env) -> None:
    clusters = ["cluster51", "cluster52", "cluster53", "cluster54"]
    ns = rollout(agents, "web", clusters, {"type": "Progressive",
                                            "progressive": {"maxConcurrency": 2, "maxFailures": 1}})
    events = wait_for(lambda: agents.events(ns, "MaxFailuresBreached"), what="breach event")
    assert "cluster51" in events[0]["message"] and "image pull back-off" in events[0]["message"]
    holds_for(lambda: agents.clusters_with_works(ns, "web") == ["cluster51", "cluster52"], 1.0,
              what="no new works after the breach")
    assert condition(agents.get_mwrs(ns, "web"), "PlacementRolledOut") == ("False", "RolloutDegraded")


def test_real_agent_without_condition_rules_completes(agents: Env) -> None:
    """docs/behaviour/mwrs.md scenario 22 with improvement 1: OCM's agent writes no Progressing, yet the rollout
    completes (OCM would stay at PlacementRolledOut False forever)."""
    ns = rollout(agents, "web", ["cluster55", "cluster56"], {"type": "Progressive",
                                                              "progressive": {"maxConcurrency": 1}})
    final = complete(agents, ns, "web")
    assert summary(final) == {"total": 2, "applied": 2, "available": 2, "progressing": 0, "degraded": 0,
                              "desiredTotal": 2, "updated": 2}
    assert condition(final, "ManifestworkApplied") == ("True", "AsExpected")
    for work in agents.works_of(ns, "web"):
        assert not any(c["type"] == "Progressing" for c in work["status"]["conditions"])


def test_template_change_rolls_out_in_batches_under_the_same_names(agents: Env) -> None:
    clusters = RELIABLE[30:40]
    ns = rollout(agents, "web", clusters, {"type": "Progressive", "progressive": {"maxConcurrency": 3}})
    complete(agents, ns, "web")
    names = {w["metadata"]["namespace"]: w["metadata"]["name"] for w in agents.works_of(ns, "web")}
    new_template = copy.deepcopy(CONFIGMAP_TEMPLATE)
    new_template["workload"]["manifests"][0]["data"]["version"] = "2"

    def is_new(work: JSON) -> bool:
        return bool(work["spec"]["workload"]["manifests"][0]["data"]["version"] == "2")

    monitor = start_monitor(agents, in_flight_at_most(f"{ns}.web", 3, is_new), one_work_per_cluster(f"{ns}.web"))
    try:
        agents.api.patch(MANIFEST_WORK_REPLICA_SETS, "web", {"spec": {"manifestWorkTemplate": new_template}}, ns)
        wait_for(lambda: all(is_new(w) and done(w) for w in agents.works_of(ns, "web")), timeout=60,
                 what="every work updated and done")
        complete(agents, ns, "web")
    finally:
        monitor.stop()
    assert monitor.violations == []
    assert {w["metadata"]["namespace"]: w["metadata"]["name"] for w in agents.works_of(ns, "web")} == names


# --- restart safety ------------------------------------------------------------------------------------


def _shape(env: Env, ns: str, name: str) -> dict[str, Any]:
    """What must be identical between an uninterrupted and an interrupted rollout."""
    mwrs = env.get_mwrs(ns, name)
    assert mwrs is not None
    status = mwrs["status"]
    works = env.works_of(ns, name)
    return {
        "summary": status["summary"],
        "conditions": sorted((c["type"], c["status"], c["reason"]) for c in status["conditions"]),
        "placementSummary": status["placementSummary"],
        "works": sorted(
            (w["metadata"]["namespace"], w["metadata"]["labels"][PLACEMENT_NAME_LABEL], done(w),
             w["spec"] == CONFIGMAP_TEMPLATE)
            for w in works
        ),
    }


STEADY: dict[str, Any] = {}


def steady_shape(env: Env, strategy: JSON) -> dict[str, Any]:
    """The final state of an uninterrupted rollout over the 50 reliable clusters (once per module)."""
    if "shape" not in STEADY:
        ns = rollout(env, "fleet", RELIABLE, strategy)
        complete(env, ns, "fleet", timeout=90)
        STEADY["shape"] = _shape(env, ns, "fleet")
    return dict(STEADY["shape"])


PROGRESSIVE_2 = {"type": "Progressive", "progressive": {"maxConcurrency": 2}}


def fleet_finished(env: Env, ns: str, clusters: list[str] = RELIABLE) -> bool:
    works = env.works_of(ns, "fleet")
    return len(works) == len(clusters) and all(done(w) for w in works)


def test_killing_the_controller_mid_rollout_changes_nothing(agents: Env) -> None:
    expected = steady_shape(agents, PROGRESSIVE_2)
    ns_name, monitor = watched(agents, "fleet", 2)
    rng = random.Random(20260101)
    kills_mid_rollout = 0
    try:
        rollout(agents, "fleet", RELIABLE, PROGRESSIVE_2, ns=ns_name)
        while kills_mid_rollout < 12:
            # Let it run for a random moment (mid-write, mid-wave, idle), then kill it: a pause on
            # purpose, not a wait for a condition.
            time.sleep(rng.uniform(0.02, 0.4))
            finished = fleet_finished(agents, ns_name)
            agents.operator.kill()
            agents.operator.start()
            if finished:
                break
            kills_mid_rollout += 1
        complete(agents, ns_name, "fleet", timeout=90)
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills_mid_rollout >= 10
    assert _shape(agents, ns_name, "fleet") == expected


def test_sigkilled_controller_process_resumes_without_duplicates_or_widening(agents: Env) -> None:
    """`ocm-rollout run --controllers workset` killed with SIGKILL at random moments after it is
    ready, ten times during one rollout."""
    expected = steady_shape(agents, PROGRESSIVE_2)
    agents.operator.kill()
    ns_name, monitor = watched(agents, "fleet", 2)
    kills = 0
    process = ControllerProcess("workset", agents.kubeconfig)
    try:
        process.start()
        rollout(agents, "fleet", RELIABLE, PROGRESSIVE_2, ns=ns_name)
        kills = process.kill_at_random(random.Random(7), lambda: fleet_finished(agents, ns_name))
        complete(agents, ns_name, "fleet", timeout=90)
    finally:
        monitor.stop()
        process.sigkill()
        agents.operator.start()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills == 10
    assert _shape(agents, ns_name, "fleet") == expected


# --- overlapping instances under random kills (the rollout fence) ------------------------------------

STRESS_GROUPS = [RELIABLE[i:i + 10] for i in range(0, 50, 10)]
PER_GROUP_SOAKING = {"type": "ProgressivePerGroup", "progressivePerGroup": {"minSuccessTime": "2s"}}


def groups_in_order(owner: str, groups: list[list[str]]) -> Check:
    """ProgressivePerGroup's bound: no work of a group before every earlier group's work succeeded."""
    group_of = {c: i for i, g in enumerate(groups) for c in g}
    mine = owned_by(owner)

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        present = [w for w in works.values() if mine(w)]
        started = {w["metadata"]["namespace"] for w in present}
        unfinished = {w["metadata"]["namespace"] for w in present if not done(w)}
        for work in present:
            index = group_of[work["metadata"]["namespace"]]
            behind = [c for g in groups[:index] for c in g if c not in started or c in unfinished]
            if behind:
                return f"group {index} ({work['metadata']['namespace']}) started before {sorted(behind)[:3]} succeeded"
        return None

    return check


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
@pytest.mark.parametrize("strategy", ["Progressive", "ProgressivePerGroup"])
def test_overlapping_instances_killed_at_random_never_widen(agents: Env, strategy: str, round_: int) -> None:
    """Two workset controllers run at once for the whole rollout; at random moments one of them
    is aborted mid-flight and started again. Every work change is checked against the bound."""
    ns_name = agents.unique("stress")
    owner = f"{ns_name}.fleet"
    bound = in_flight_at_most(owner, 2) if strategy == "Progressive" else groups_in_order(owner, STRESS_GROUPS)
    monitor = start_monitor(agents, bound, one_work_per_cluster(owner))
    rng = random.Random(f"{strategy}-{round_}")
    kills = 0
    try:
        with SecondInstance(agents.operator) as overlap:
            if strategy == "Progressive":
                rollout(agents, "fleet", RELIABLE, PROGRESSIVE_2, ns=ns_name)
            else:
                # Each group soaks 2 s, so the rollout outlasts the kills even when a restart takes
                # a second on a saturated machine (5 groups of 200 ms works end in about 2 s).
                rollout(agents, "fleet", RELIABLE, PER_GROUP_SOAKING, groups=STRESS_GROUPS, ns=ns_name)
            while kills < 40 and not fleet_finished(agents, ns_name):
                time.sleep(rng.uniform(0.02, 0.3))
                overlap.restart_one(rng)
                kills += 1
            complete(agents, ns_name, "fleet", timeout=120)
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills >= 5
    works = agents.works_of(ns_name, "fleet")
    assert len(works) == len(RELIABLE) and all(done(w) for w in works)


# --- the same with validation: a Validating cluster is in flight --------------------------------------

VERIFIED = RELIABLE[:20]


def validated(work: JSON) -> bool:
    """The controller recorded that the work's cluster passed its validation."""
    record = (work["metadata"].get("annotations") or {}).get(ANNOTATION_VALIDATION)
    return bool(record) and '"verdict":{' in record and '"status":"Succeeded"' in record


def in_flight_until_validated(owner: str, bound: int) -> Check:
    mine = owned_by(owner)

    def check(works: dict[tuple[str, str], JSON]) -> str | None:
        flying = sorted(w["metadata"]["namespace"] for w in works.values() if mine(w) and not validated(w))
        return None if len(flying) <= bound else f"{len(flying)} clusters in flight (bound {bound}): {flying}"

    return check


@pytest.mark.parametrize("round_", range(STRESS_RUNS))
def test_overlapping_instances_killed_at_random_never_widen_while_validating(agents: Env, round_: int) -> None:
    """Progressive, 2 at a time, every cluster validated by a feedback check, a metric check and
    the slow, flaky smoke plugin; two controllers at once, one killed at random: a cluster counts
    as in flight until its validation passed, and never more than two are."""
    prometheus: FakePrometheus = agents.prometheus  # type: ignore[attr-defined]
    ns_name = agents.unique("vstress")
    owner = f"{ns_name}.fleet"
    monitor = start_monitor(agents, in_flight_until_validated(owner, 2), one_work_per_cluster(owner))
    strategy = {
        "type": "Progressive", "progressive": {"maxConcurrency": 2}, "plugin": "smoke",
        "validation": {"checks": [
            {"name": "available", "feedback": {"successCondition": 'conditions["Available"].status == "True"'}},
            {"name": "errors", "metric": {
                "provider": {"address": prometheus.address}, "query": "error_ratio{cluster={{cluster}}}",
                "successCondition": "result[0] < 0.05", "count": 2, "interval": "200ms"}},
        ]},
    }
    rng = random.Random(f"validating-{round_}")
    kills = 0
    try:
        with SecondInstance(agents.operator) as overlap:
            rollout(agents, "fleet", VERIFIED, strategy, ns=ns_name)
            while kills < 40 and not fleet_finished(agents, ns_name, VERIFIED):
                time.sleep(rng.uniform(0.05, 0.5))
                overlap.restart_one(rng)
                kills += 1
            wait_for(
                lambda: condition(agents.get_mwrs(ns_name, "fleet"), "PlacementRolledOut") == ("True", "Complete"),
                timeout=180, what="PlacementRolledOut Complete", state=lambda: validation_state(agents, ns_name),
            )
    finally:
        monitor.stop()
    assert monitor.violations == [], "\n".join(monitor.violations[:5])
    assert kills >= 5
    works = agents.works_of(ns_name, "fleet")
    assert len(works) == len(VERIFIED) and all(validated(w) for w in works)


def validation_state(env: Env, ns: str) -> str:
    """What a stalled validating round looks like: the MWRS's Progressing message and each work's record."""
    mwrs = env.get_mwrs(ns, "fleet") or {}
    progressing = [c.get("message") for c in (mwrs.get("status") or {}).get("conditions") or []
                   if c.get("type") == "Progressing"]
    records = {w["metadata"]["namespace"]: (w["metadata"].get("annotations") or {}).get(ANNOTATION_VALIDATION)
               for w in env.works_of(ns, "fleet")}
    return f"Progressing: {progressing}; records: {records}"
