"""controllers/addon/judge_memo.py: the MCA judgements a CMA pass keeps for the next one give the
same answers, and so the same plans, as judging every MCA afresh (``configrollout.judge_direct``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ocm_rollout.controllers.addon import judge_memo
from ocm_rollout.controllers.addon.configrollout import PROGRESSING, SUCCEEDED, TO_APPLY, Judged, judge_direct
from ocm_rollout.controllers.addon.configs import Config, DesiredConfigs
from ocm_rollout.controllers.addon.judge_memo import JudgeMemo
from tests.unit.addon_fixtures import (
    ADC,
    NS,
    H,
    Hub,
    cond,
    done,
    inputs,
    mca,
    progressive,
    ref,
    strategy_all,
)
from tests.unit.addon_fixtures import cfg as config_ref
from tests.unit.addon_fixtures import cma as make_cma
from tests.unit.addon_fixtures import pstrategy as placement_strategy


def desired(spec_hash: str, name: str = "c") -> DesiredConfigs:
    return DesiredConfigs({ADC: [Config(*ADC, NS, name, spec_hash)]})


class Counting:
    """``judge_direct`` that counts its calls (patched into ``judge_memo`` by the tests)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, cluster: str, obj: Any, wanted: DesiredConfigs) -> Judged:
        self.calls += 1
        return judge_direct(cluster, obj, wanted)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counter = Counting()
    monkeypatch.setattr(judge_memo, "judge_direct", counter)
    return counter


def test_the_same_status_object_against_equal_desired_configs_is_not_judged_again(counting: Counting) -> None:
    memo = JudgeMemo()
    obj = mca("c1", refs=[ref("c", H("a"), applied=H("a"))])
    assert memo("c1", obj, desired(H("a")))[0] is SUCCEEDED
    # Another MCA object (e.g. a metadata change) sharing the status, and an equal desired set.
    assert memo("c1", {**obj, "metadata": {"name": "test"}}, desired(H("a")))[0] is SUCCEEDED
    assert counting.calls == 1


def test_a_new_status_object_is_judged_afresh_even_with_the_same_content(counting: Counting) -> None:
    memo = JudgeMemo()
    obj = mca("c1", refs=[ref("c", H("a"))])
    assert memo("c1", obj, desired(H("a")))[0] is PROGRESSING
    applied = {**obj, "status": {**obj["status"], "configReferences": [ref("c", H("a"), applied=H("a"))]}}
    assert memo("c1", applied, desired(H("a")))[0] is SUCCEEDED
    assert memo("c1", {**applied, "status": dict(applied["status"])}, desired(H("a")))[0] is SUCCEEDED
    assert counting.calls == 3


def test_other_desired_configs_are_judged_afresh_and_replace_the_entry(counting: Counting) -> None:
    memo = JudgeMemo()
    obj = mca("c1", refs=[ref("c", H("a"), applied=H("a"))])
    assert memo("c1", obj, desired(H("a")))[0] is SUCCEEDED
    assert memo("c1", obj, desired(H("b")))[0] is TO_APPLY
    assert memo("c1", obj, desired(H("b")))[0] is TO_APPLY
    assert counting.calls == 2


def test_entries_are_per_cluster_and_forgotten() -> None:
    memo = JudgeMemo()
    status: dict[str, Any] = {"configReferences": [ref("c", H("a"), applied=H("a"))]}
    # Two clusters' MCAs sharing one status object still get one entry each.
    assert memo("c1", {"status": status}, desired(H("a")))[0] is SUCCEEDED
    assert memo("c2", {"status": status}, desired(H("b")))[0] is TO_APPLY
    assert memo("c1", {"status": status}, desired(H("a")))[0] is SUCCEEDED
    assert len(memo) == 2
    memo.forget("c1")
    memo.forget("gone")
    assert len(memo) == 1


# -- the reference: random event sequences, the memo's plans against judging afresh ----------------

CLUSTERS = [f"c{i}" for i in range(6)]
STRATEGIES = [strategy_all(), strategy_all("30s"), progressive(maxConcurrency=2), progressive(maxConcurrency=1, maxFailures=1, progressDeadline="20s")]

PASS = st.tuples(st.just("pass"), st.integers(1, 15))
event = st.one_of(
    PASS,
    PASS,
    PASS,
    st.tuples(st.just("ready"), st.sets(st.sampled_from(CLUSTERS), min_size=1)),
    st.tuples(st.just("unready"), st.sets(st.sampled_from(CLUSTERS), min_size=1)),
    st.tuples(st.just("fail"), st.sets(st.sampled_from(CLUSTERS), min_size=1)),
    st.tuples(st.just("config"), st.sampled_from(["v1", "v2", "v3"])),
    st.tuples(st.just("strategy"), st.integers(0, len(STRATEGIES) - 1)),
    # A new MCA object around the same status (a label or metadata change), or an equal copy of the status.
    st.tuples(st.just("touch"), st.sets(st.sampled_from(CLUSTERS), min_size=1)),
    st.tuples(st.just("copy"), st.sets(st.sampled_from(CLUSTERS), min_size=1)),
    st.tuples(st.just("restart"), st.just(0)),
)


def _hub(strategy: int, judge: Any) -> Hub:
    the_cma = make_cma(placements=[placement_strategy("p1", configs=[config_ref("cfg")], rollout=STRATEGIES[strategy])])
    mcas = {c: done(c, "cfg", H("v0")) for c in CLUSTERS}
    mcas["c5"] = mca("c5", conditions=[cond("Progressing", "True", "Progressing", -10)])
    return Hub(the_cma, mcas, inputs(("p1", [CLUSTERS[:3], CLUSTERS[3:]])), {(NS, "cfg"): H("v1")}, judge=judge)


def _apply(hub: Hub, kind: str, arg: Any, now: float) -> None:
    if kind == "ready":
        hub.agent(sorted(arg), now, ready=True)
    elif kind == "unready":
        hub.agent(sorted(arg), now, ready=False)
    elif kind == "fail":
        hub.fail(sorted(arg), now)
    elif kind == "config":
        hub.objects[(NS, "cfg")] = H(arg)
    elif kind == "strategy":
        hub.cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] = STRATEGIES[arg]
    elif kind == "touch":
        for c in sorted(arg):
            hub.mcas[c] = {**hub.mcas[c], "metadata": {**hub.mcas[c].get("metadata", {}), "labels": {"t": str(now)}}}
    elif kind == "copy":
        for c in sorted(arg):
            hub.mcas[c] = {**hub.mcas[c], "status": dict(hub.mcas[c].get("status") or {})}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategy=st.integers(0, len(STRATEGIES) - 1), events=st.lists(event, max_size=25))
# Settled on v1, then v2 desired while no MCA status changes: each must be judged against v2.
@example(strategy=2, events=[("pass", 1), ("ready", set(CLUSTERS)), ("pass", 1), ("pass", 1), ("config", "v2"), ("pass", 1)])
def test_plans_with_the_memo_equal_plans_judging_every_mca_afresh(strategy: int, events: list[tuple[str, Any]]) -> None:
    memo = JudgeMemo()
    with_memo, direct = _hub(strategy, memo), _hub(strategy, judge_direct)
    now = 0.0
    for kind, arg in events:
        if kind == "pass":
            now += arg
            planned, reference = with_memo.step(now), direct.step(now)
            assert planned == reference
            assert with_memo.mcas == direct.mcas and with_memo.cma == direct.cma
        elif kind == "restart":
            memo = JudgeMemo()
            with_memo.judge = memo
        else:
            now += 1
            _apply(with_memo, kind, arg, now)
            _apply(direct, kind, arg, now)
    assert with_memo.step(now + 1) == direct.step(now + 1)
