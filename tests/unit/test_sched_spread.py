"""Spread constraints (spec.spreadPolicy): the greedy selection, its skew bound and its reports."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ocm_rollout.api.cluster_v1beta1 import SpreadConstraintsTerm
from ocm_rollout.controllers.placement.explain import explanation
from ocm_rollout.controllers.placement.snapshot import ClusterView
from ocm_rollout.controllers.placement.spread import SpreadTerm, select, spread_terms
from tests.unit.test_sched_builders import cluster, placement, run, satisfied, world


def term(key: str, hard: bool = True, skew: int = 1, key_type: str = "Label") -> dict[str, Any]:
    return {
        "topologyKey": key,
        "topologyKeyType": key_type,
        "maxSkew": skew,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
    }


def terms_of(*raw: dict[str, Any]) -> list[SpreadTerm]:
    return spread_terms([SpreadConstraintsTerm.model_validate(t) for t in raw])


def views(labels: Mapping[str, Mapping[str, str]]) -> list[ClusterView]:
    return [ClusterView.of(cluster(name, dict(lab))) for name, lab in labels.items()]


def fleet(layout: Mapping[str, int], key: str = "region") -> dict[str, dict[str, str]]:
    """``{"a": 2, "b": 3}`` -> clusters a-0, a-1, b-0, b-1, b-2 labelled ``key=<topology>``."""
    return {f"{topo}-{i}": {key: topo} for topo, n in layout.items() for i in range(n)}


def per(selected: Sequence[str], labels: Mapping[str, Mapping[str, str]], key: str) -> dict[str | None, int]:
    return dict(Counter(labels[name].get(key) for name in selected))


# --------------------------------------------------------------------------------------------
# The selection
# --------------------------------------------------------------------------------------------


def test_without_terms_the_first_clusters_by_score_then_name_are_selected() -> None:
    labels = fleet({"a": 3})
    scores = {"a-0": 1, "a-1": 5, "a-2": 5}
    assert select(views(labels), scores, [], 2).selected == ["a-1", "a-2"]
    assert select(views(labels), scores, [], None).selected == ["a-1", "a-2", "a-0"]


def test_do_not_schedule_spreads_evenly_over_the_topologies() -> None:
    labels = fleet({"a": 3, "b": 3, "c": 10})
    result = select(views(labels), {}, terms_of(term("region")), 6)
    assert per(result.selected, labels, "region") == {"a": 2, "b": 2, "c": 2}
    assert result.held_back == 0


def test_within_a_topology_the_higher_score_wins_then_the_name() -> None:
    labels = fleet({"a": 3, "b": 3})
    scores = {"a-2": 50, "b-1": 10, "b-2": 10}
    result = select(views(labels), scores, terms_of(term("region")), 2)
    assert result.selected == ["a-2", "b-1"]


def test_a_small_topology_caps_the_others_at_max_skew() -> None:
    labels = fleet({"a": 1, "b": 10})
    result = select(views(labels), {}, terms_of(term("region")), 5)
    assert per(result.selected, labels, "region") == {"a": 1, "b": 2}
    assert [r.held_back for r in result.terms] == [8]
    assert result.held_back_text() == "spread term 1 (Label region, DoNotSchedule, maxSkew 1) held back 8 clusters"


def test_a_larger_max_skew_allows_more() -> None:
    labels = fleet({"a": 1, "b": 10})
    result = select(views(labels), {}, terms_of(term("region", skew=3)), 10)
    assert per(result.selected, labels, "region") == {"a": 1, "b": 4}


def test_schedule_anyway_prefers_the_emptiest_topology_but_selects_as_many_as_asked() -> None:
    labels = fleet({"a": 1, "b": 10})
    scores = {name: 100 if name.startswith("b") else 0 for name in labels}
    result = select(views(labels), scores, terms_of(term("region", hard=False)), 5)
    assert len(result.selected) == 5
    assert "a-0" in result.selected[:2]
    assert result.held_back == 0


def test_terms_nest_zone_within_region() -> None:
    labels = {
        **{f"us-a-{i}": {"region": "us", "zone": "us-a"} for i in range(5)},
        **{f"us-b-{i}": {"region": "us", "zone": "us-b"} for i in range(5)},
        **{f"eu-c-{i}": {"region": "eu", "zone": "eu-c"} for i in range(5)},
    }
    result = select(views(labels), {}, terms_of(term("region"), term("zone")), 6)
    assert per(result.selected, labels, "region") == {"us": 3, "eu": 3}
    # zones are spread within each region, not against the zones of the other region
    assert per(result.selected, labels, "zone") == {"us-a": 2, "us-b": 1, "eu-c": 3}
    topologies = {t.values: (t.candidates, t.selected) for t in result.terms[1].topologies}
    assert topologies == {("eu", "eu-c"): (5, 3), ("us", "us-a"): (5, 2), ("us", "us-b"): (5, 1)}


def test_earlier_terms_matter_more() -> None:
    # Region first: two regions, one with 2 zones and one with 1; the 4 picks go 2 and 2.
    labels = {
        "r1-z1": {"region": "r1", "zone": "z1"},
        "r1-z2": {"region": "r1", "zone": "z2"},
        "r2-z3-a": {"region": "r2", "zone": "z3"},
        "r2-z3-b": {"region": "r2", "zone": "z3"},
    }
    result = select(views(labels), {}, terms_of(term("region", hard=False), term("zone", hard=False)), 4)
    assert sorted(result.selected[:2]) == ["r1-z1", "r2-z3-a"]


def test_a_cluster_without_a_do_not_schedule_key_is_never_selected() -> None:
    labels = {**fleet({"a": 2, "b": 2}), "bare": {}}
    result = select(views(labels), {"bare": 100}, terms_of(term("region")), 5)
    assert "bare" not in result.selected
    assert len(result.selected) == 4
    assert result.terms[0].without_key == 1
    assert result.terms[0].held_back == 1


def test_a_cluster_without_a_schedule_anyway_key_comes_after_those_with_it() -> None:
    labels = {**fleet({"a": 2, "b": 2}), "bare": {}}
    result = select(views(labels), {"bare": 100}, terms_of(term("region", hard=False)), 5)
    assert result.selected[-1] == "bare"
    assert select(views(labels), {"bare": 100}, terms_of(term("region", hard=False)), 4).selected.count("bare") == 0


def test_claims_are_topology_keys_too() -> None:
    clusters = [ClusterView.of(cluster(f"c{i}", claims={"region.open-cluster-management.io": "r" + str(i % 2)})) for i in range(6)]
    result = select(clusters, {}, terms_of(term("region.open-cluster-management.io", key_type="Claim")), 4)
    assert len(result.selected) == 4
    assert Counter(c.claims["region.open-cluster-management.io"] for c in clusters if c.name in result.selected) == {
        "r0": 2,
        "r1": 2,
    }


def test_with_number_unset_do_not_schedule_selects_as_many_as_the_skew_allows() -> None:
    labels = fleet({"a": 2, "b": 7})
    result = select(views(labels), {}, terms_of(term("region")), None)
    assert per(result.selected, labels, "region") == {"a": 2, "b": 3}
    assert result.held_back == 4


def test_with_number_unset_and_only_schedule_anyway_every_cluster_is_selected() -> None:
    labels = fleet({"a": 2, "b": 7})
    result = select(views(labels), {}, terms_of(term("region", hard=False)), None)
    assert sorted(result.selected) == sorted(labels)


def test_zero_wanted_selects_nothing() -> None:
    assert select(views(fleet({"a": 2})), {}, terms_of(term("region")), 0).selected == []


# --------------------------------------------------------------------------------------------
# Through the scheduler: conditions, decisions, explanations
# --------------------------------------------------------------------------------------------


def spread_world(layout: Mapping[str, int]) -> Any:
    return world(cluster(name, lab) for name, lab in fleet(layout).items())


def test_a_placement_held_back_by_spread_is_not_satisfied_and_says_why() -> None:
    p = placement(numberOfClusters=5, spreadPolicy={"spreadConstraints": [term("region")]})
    result = run(p, spread_world({"a": 1, "b": 10}))
    assert len(result.selected) == 3
    assert satisfied(result) == (
        "False",
        "NotAllDecisionsScheduled",
        "2 cluster decisions unscheduled: spread term 1 (Label region, DoNotSchedule, maxSkew 1) held back 8 clusters",
    )


def test_a_satisfied_placement_says_when_spread_kept_clusters_out() -> None:
    p = placement(spreadPolicy={"spreadConstraints": [term("region")]})
    result = run(p, spread_world({"a": 1, "b": 3}))
    status, reason, message = satisfied(result)
    assert (status, reason) == ("True", "AllDecisionsScheduled")
    assert message.endswith("held back 1 cluster")


def test_spread_works_with_decision_groups() -> None:
    p = placement(
        numberOfClusters=4,
        spreadPolicy={"spreadConstraints": [term("region")]},
        decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": 2}},
    )
    result = run(p, spread_world({"a": 3, "b": 3}))
    assert [g.clusters for g in result.groups] == [("a-0", "a-1"), ("b-0", "b-1")]


def test_the_explanation_lists_every_terms_topologies_and_counts() -> None:
    p = placement(numberOfClusters=4, spreadPolicy={"spreadConstraints": [term("region")]})
    out = explanation(run(p, spread_world({"a": 1, "b": 4})))
    assert out["spread"] == {
        "terms": [
            {
                "topologyKey": "region",
                "topologyKeyType": "Label",
                "maxSkew": 1,
                "whenUnsatisfiable": "DoNotSchedule",
                "topologies": [
                    {"values": ["a"], "candidates": 1, "selected": 1},
                    {"values": ["b"], "candidates": 4, "selected": 2},
                ],
                "withoutKey": 0,
                "heldBack": 2,
            }
        ],
        "heldBack": 2,
    }


def test_without_spread_policy_the_explanation_has_no_spread() -> None:
    out = explanation(run(placement(), spread_world({"a": 1})))
    assert "spread" not in out


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

KEYS = ["region", "zone", "rack"]


@st.composite
def spread_inputs(draw: st.DrawFn) -> tuple[dict[str, dict[str, str]], dict[str, int], list[dict[str, Any]], int | None]:
    count = draw(st.integers(min_value=0, max_value=30))
    labels: dict[str, dict[str, str]] = {}
    for i in range(count):
        lab = {}
        for key in KEYS:
            if draw(st.integers(min_value=0, max_value=9)):  # mostly present
                lab[key] = draw(st.sampled_from([f"{key}{v}" for v in range(3)]))
        labels[f"c{i:02d}"] = lab
    scores = {name: draw(st.integers(min_value=-5, max_value=5)) for name in labels}
    raw = [
        term(draw(st.sampled_from(KEYS)), hard=draw(st.booleans()), skew=draw(st.integers(min_value=1, max_value=3)))
        for _ in range(draw(st.integers(min_value=1, max_value=3)))
    ]
    wanted = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=35)))
    return labels, scores, raw, wanted


def skew_violations(selected: Sequence[str], labels: Mapping[str, Mapping[str, str]], raw: Sequence[dict[str, Any]]) -> list[str]:
    """Every DoNotSchedule term whose skew bound does not hold, computed from scratch."""
    keys = [t["topologyKey"] for t in raw]
    hard_keys = [t["topologyKey"] for t in raw if t["whenUnsatisfiable"] == "DoNotSchedule"]
    candidates = [n for n, lab in labels.items() if all(k in lab for k in hard_keys)]
    chosen = set(selected)
    out = []
    for index, t in enumerate(raw):
        if t["whenUnsatisfiable"] != "DoNotSchedule":
            continue
        counts: dict[tuple[str | None, ...], dict[str | None, int]] = defaultdict(dict)
        for name in candidates:
            prefix = tuple(labels[name].get(k) for k in keys[:index])
            value = labels[name].get(keys[index])
            siblings = counts[prefix]
            siblings[value] = siblings.get(value, 0) + (1 if name in chosen else 0)
        for prefix, siblings in counts.items():
            if max(siblings.values()) - min(siblings.values()) > t["maxSkew"]:
                out.append(f"term {index + 1} under {prefix}: {siblings}")
    return out


def as_views(labels: Mapping[str, Mapping[str, str]]) -> list[ClusterView]:
    return views(labels)


@settings(max_examples=300, deadline=None)
@given(spread_inputs())
def test_property_every_do_not_schedule_term_keeps_its_skew_bound(data: Any) -> None:
    labels, scores, raw, wanted = data
    result = select(as_views(labels), scores, terms_of(*raw), wanted)
    assert skew_violations(result.selected, labels, raw) == []
    assert len(result.selected) == len(set(result.selected))
    if wanted is not None:
        assert len(result.selected) <= wanted


@settings(max_examples=200, deadline=None)
@given(spread_inputs())
def test_property_schedule_anyway_never_selects_fewer_than_asked(data: Any) -> None:
    labels, scores, raw, wanted = data
    soft = [{**t, "whenUnsatisfiable": "ScheduleAnyway"} for t in raw]
    result = select(as_views(labels), scores, terms_of(*soft), wanted)
    expected = len(labels) if wanted is None else min(wanted, len(labels))
    assert len(result.selected) == expected


@settings(max_examples=200, deadline=None)
@given(spread_inputs())
def test_property_schedule_anyway_terms_change_nothing_with_number_unset(data: Any) -> None:
    labels, scores, raw, _ = data
    soft = [{**t, "whenUnsatisfiable": "ScheduleAnyway"} for t in raw]
    before = set(select(as_views(labels), scores, terms_of(*soft[:-1]), None).selected)
    after = set(select(as_views(labels), scores, terms_of(*soft), None).selected)
    assert before == after == set(labels)


@settings(max_examples=200, deadline=None)
@given(spread_inputs(), st.randoms(use_true_random=False))
def test_property_the_result_does_not_depend_on_input_order(data: Any, rng: random.Random) -> None:
    labels, scores, raw, wanted = data
    clusters = as_views(labels)
    first = select(clusters, scores, terms_of(*raw), wanted)
    shuffled = list(clusters)
    rng.shuffle(shuffled)
    second = select(shuffled, dict(reversed(list(scores.items()))), terms_of(*raw), wanted)
    assert first.selected == second.selected
    assert first.terms == second.terms
