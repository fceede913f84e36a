"""Events of a configuration-rollout pass (improvement 3)."""

from __future__ import annotations

from ocm_rollout.controllers.addon.events import rollout_events, spelling_events
from tests.unit.addon_fixtures import (
    NS,
    H,
    Hub,
    cma,
    cond,
    done,
    mca,
    one_placement,
    progressive,
    pstrategy,
    ref,
    strategy_all,
)


def test_wave_started_per_decision_group_names_the_written_clusters() -> None:
    hub = one_placement(["a", "b", "c"], strategy_all(), groups=[["a", "b"], ["c"]])
    plan = hub.plan(0)
    events, _ = rollout_events(plan=plan, old_cma_status=None, written={"a", "b", "c"}, breaches={})
    waves = [e for e in events if e.reason == "RolloutWaveStarted"]
    assert [e.message for e in waves] == [
        'placement "default/p1", decision group 0: configuring 2 add-on(s): a, b',
        'placement "default/p1", decision group 1: configuring 1 add-on(s): c',
    ]
    assert all(e.type == "Normal" for e in waves)


def test_wave_names_only_clusters_whose_write_was_sent() -> None:
    hub = one_placement(["a", "b"], strategy_all())
    events, _ = rollout_events(plan=hub.plan(0), old_cma_status=None, written={"b"}, breaches={})
    assert [e.message for e in events if e.reason == "RolloutWaveStarted"] == [
        'placement "default/p1", decision group 0: configuring 1 add-on(s): b'
    ]


def test_no_wave_without_widening_writes() -> None:
    hub = one_placement(["a"], strategy_all())
    hub.mcas["a"] = mca("a", refs=[ref("new-config", H("new"), applied=H("old"))], conditions=[cond("Progressing", "True", "Progressing", 0)])
    plan = hub.plan(1)
    assert "a" in plan.mca_status  # Configured True only
    events, _ = rollout_events(plan=plan, old_cma_status=None, written={"a"}, breaches={})
    assert not [e for e in events if e.reason == "RolloutWaveStarted"]


def test_wave_lists_at_most_twenty_clusters() -> None:
    clusters = [f"c{i:02d}" for i in range(25)]
    hub = one_placement(clusters, strategy_all())
    events, _ = rollout_events(plan=hub.plan(0), old_cma_status=None, written=set(clusters), breaches={})
    assert events[0].message.endswith("c19 and 5 more")


def test_wave_of_the_defaults() -> None:
    hub = Hub(cma(), {"a": done("a", "default-config", H("old"))}, {}, {(NS, "default-config"): H("new")})
    events, _ = rollout_events(plan=hub.plan(0), old_cma_status=None, written={"a"}, breaches={})
    assert [e.message for e in events] == ["default configurations (no rollout strategy): configuring 1 add-on(s): a"]


def _breached() -> Hub:
    bad = {"a": "agent crashed", "b": ""}
    hub = one_placement(["a", "b", "c"], progressive(maxConcurrency=2, progressDeadline="10s", maxFailures=0))
    for cluster, message in bad.items():
        hub.mcas[cluster] = mca(cluster, refs=[ref("new-config", H("new"), applied=H("old"))],
                                conditions=[cond("Progressing", "True", "Progressing", 0, message)])
    hub.fail(["a"], 0, "agent crashed")
    return hub


def test_breach_is_reported_once_per_distinct_set_of_failed_clusters() -> None:
    hub = _breached()
    plan = hub.plan(20)
    assert plan.nodes[0].breach
    events, memory = rollout_events(plan=plan, old_cma_status=None, written=set(), breaches={})
    [breach] = [e for e in events if e.reason == "MaxFailuresBreached"]
    assert breach.type == "Warning"
    assert breach.message == (
        'placement "default/p1": maxFailures breached by 2 failed or timed-out add-on(s), no new clusters are '
        "configured: a (TimeOut: agent crashed), b (TimeOut: Progressing)"
    )
    assert memory == {"default/p1": frozenset({"a", "b"})}
    again, memory = rollout_events(plan=plan, old_cma_status=None, written=set(), breaches=memory)
    assert not [e for e in again if e.reason == "MaxFailuresBreached"]
    other, _ = rollout_events(plan=plan, old_cma_status=None, written=set(), breaches={"default/p1": frozenset({"a"})})
    assert [e for e in other if e.reason == "MaxFailuresBreached"]


def test_no_breach_forgets_the_memory() -> None:
    hub = one_placement(["a"], strategy_all())
    _, memory = rollout_events(plan=hub.plan(0), old_cma_status=None, written=set(), breaches={"default/p1": frozenset({"x"})})
    assert memory == {}


def test_rollout_complete_when_the_progression_turns_completed() -> None:
    hub = one_placement(["a"], strategy_all())
    hub.step(0)
    before = hub.cma["status"]
    hub.agent(["a"], 5, ready=True)
    plan = hub.plan(10)
    events, _ = rollout_events(plan=plan, old_cma_status=before, written=set(), breaches={})
    assert [(e.reason, e.message) for e in events] == [(
        "RolloutComplete",
        'placement "default/p1": configuration rollout complete: selected clusters 1. configured addons 1/1 '
        "completed with no errors, 0 failed 0 timeout.",
    )]
    later, _ = rollout_events(plan=plan, old_cma_status=plan.cma_status, written=set(), breaches={})
    assert later == []


def test_rollout_type_gets_a_warning_once_per_situation_suggesting_type() -> None:
    obj = cma(placements=[pstrategy("p1"), pstrategy("p2", rollout={"rolloutType": "Progressive"})])
    events, told = spelling_events(obj, frozenset())
    assert [(e.reason, e.type, e.message) for e in events] == [
        (
            "DeprecatedRolloutType",
            "Warning",
            f"installStrategy.placements[1] ({NS}/p2): rolloutStrategy.rolloutType is the older spelling of "
            "type; it is read as type: Progressive. Write type instead.",
        )
    ]
    assert spelling_events(obj, told) == ([], told)


def test_no_rollout_type_warning_for_manual_install_or_a_contradiction() -> None:
    legacy = pstrategy("p1", rollout={"rolloutType": "Progressive"})
    assert spelling_events(cma(placements=[legacy], type_="Manual"), frozenset())[0] == []
    bad = pstrategy("p1", rollout={"type": "All", "rolloutType": "Progressive"})
    assert spelling_events(cma(placements=[bad]), frozenset())[0] == []
