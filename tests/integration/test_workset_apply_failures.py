"""Apply failures are never silent (improvement 9), as a new user meets them: an MWRS whose template
holds a kind the clusters do not serve and a ConfigMap in a namespace they do not have, rolled out
by the simulated work agents. The MWRS names the failing clusters and the agents' errors, tells
them in a Warning event, `ocm-rollout status` counts them as failing to apply, and a Progressive
rollout with a progressDeadline times them out instead of waiting on them for ever."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ocm_rollout.client.kube import JSON
from tests.integration.helpers import holds_for, simulating, wait_for
from tests.integration.test_workset_env import Env, condition, status_text

pytestmark = pytest.mark.integration

CLUSTERS = [f"cluster{i}" for i in range(1, 6)]
PROFILE: JSON = {"defaults": {"mode": "rollout", "applyDelay": "50ms", "progressDuration": "150ms"}}
BROKEN_TEMPLATE: JSON = {
    "workload": {
        "manifests": [
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "missing"},
             "data": {"a": "b"}},
        ]
    }
}
ERRORS = (
    'the server doesn\'t have a resource type "Widget" (manifest 0: example.com/v1 Widget default/w), '
    'namespaces "missing" not found (manifest 1: v1 ConfigMap missing/cm)'
)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, hub_kind: str) -> Iterator[Env]:
    """A private hub with simulated clusters cluster1..cluster5 and the workset operator."""
    yield from simulating(Env(tmp_path_factory.mktemp("workset-apply-failures"), kind=hub_kind), len(CLUSTERS), PROFILE)


def rollout(env: Env, strategy: JSON, clusters: list[str]) -> str:
    ns = env.namespace(env.unique("applyfail"))
    env.placement(ns, "rollout", [clusters])
    env.mwrs(ns, "web", [{"name": "rollout", "rolloutStrategy": strategy}], template=BROKEN_TEMPLATE)
    return ns


def applied_condition(env: Env, ns: str) -> tuple[str, str, str] | None:
    mwrs = env.get_mwrs(ns, "web")
    for cond in ((mwrs or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "ManifestworkApplied":
            return cond["status"], cond["reason"], cond.get("message", "")
    return None


def test_strategy_all_names_the_failing_clusters_and_errors(fleet: Env, capsys: pytest.CaptureFixture[str]) -> None:
    ns = rollout(fleet, {"type": "All"}, CLUSTERS)
    expected = "5 of 5 clusters failed to apply: " + "; ".join(f"{c}: {ERRORS}" for c in CLUSTERS)
    wait_for(lambda: applied_condition(fleet, ns) == ("False", "NotAsExpected", expected),
             what="ManifestworkApplied naming the clusters", state=lambda: applied_condition(fleet, ns))

    # The agents report one by one, so one event may name several clusters or a few events one
    # each; every (cluster, error) is told exactly once.
    def told() -> list[str]:
        clusters = []
        for event in fleet.events(ns, "ManifestWorkApplyFailed"):
            assert event["type"] == "Warning"
            head, _, error = event["message"].partition(": ")
            assert error == ERRORS and head.startswith("ManifestWork failed to apply in ")
            clusters.extend(head.split(" cluster(s) ", 1)[1].split(", "))
        return sorted(clusters)

    wait_for(lambda: told() == CLUSTERS, what="ManifestWorkApplyFailed for every cluster", state=told)
    count = len(fleet.events(ns, "ManifestWorkApplyFailed"))
    # Later passes (the agents' further status updates) tell nothing new.
    holds_for(lambda: told() == CLUSTERS and len(fleet.events(ns, "ManifestWorkApplyFailed")) == count, 1.0,
              what="told once per (cluster, error)")

    text = status_text(fleet, ns, capsys)
    assert f"ManifestworkApplied  False   NotAsExpected: {expected}" in text
    assert "0/5 succeeded, 0 applied, 0 failed, 5 apply failed, 0 progressing, 0 waiting" in text
    for cluster in CLUSTERS:
        assert (
            f"x {cluster} (apply failed, ToApply): the server doesn't have a resource type \"Widget\""
            " (manifest 0: example.com/v1 Widget default/w)"
        ) in text


def test_progressive_with_a_deadline_times_the_failures_out(fleet: Env, capsys: pytest.CaptureFixture[str]) -> None:
    """OCM leaves such clusters ToApply for ever; with a progressDeadline they become TimeOut, count
    toward maxFailures like any failure, and the rollout stops at the breach: never wider."""
    # One at a time: two in flight could time out a second apart (lastTransitionTime has second
    # precision), and the first time-out alone is within maxFailures and frees its slot.
    strategy = {"type": "Progressive",
                "progressive": {"maxConcurrency": 1, "maxFailures": 1, "progressDeadline": "2s"}}
    ns = rollout(fleet, strategy, CLUSTERS)
    wait_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1"], what="first wave")
    wait_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1", "cluster2"], timeout=30,
             what="the second cluster once the first timed out")
    events = wait_for(lambda: fleet.events(ns, "MaxFailuresBreached"), timeout=30, what="breach after the deadline")
    message = events[0]["message"]
    assert "cluster1 (TimeOut: Applied False (AppliedManifestWorkFailed)" in message
    assert "cluster2 (TimeOut:" in message
    assert condition(fleet.get_mwrs(ns, "web"), "PlacementRolledOut") == ("False", "RolloutDegraded")
    holds_for(lambda: fleet.clusters_with_works(ns, "web") == ["cluster1", "cluster2"], 1.0,
              what="no new works after the breach")
    text = status_text(fleet, ns, capsys)
    assert "! cluster1 (TimeOut): progressDeadline exceeded (failing to apply since" in text
    assert "maxFailures breached" in text


def test_progressive_with_room_for_failures_moves_past_them(fleet: Env) -> None:
    """Timed-out clusters leave their slot as OCM's TimeOut does: with maxFailures 4 the rollout
    goes on to the next clusters, two at a time, instead of waiting on the first two."""
    strategy = {"type": "Progressive",
                "progressive": {"maxConcurrency": 2, "maxFailures": 4, "progressDeadline": "1s"}}
    ns = rollout(fleet, strategy, CLUSTERS[:4])
    wait_for(lambda: fleet.clusters_with_works(ns, "web") == CLUSTERS[:4], timeout=30,
             what="second wave after the time-outs")
