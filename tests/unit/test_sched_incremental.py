"""What the placement controller keeps between passes against computing it afresh: the decision
index (controllers/placement/decision_index.py, world.py) against a full recount from every page
after random sequences of page changes, and the snapshot's memo of what a selector matches
against matching each cluster."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ocm_rollout.api.cluster_v1beta1 import PlacementDecision
from ocm_rollout.client.kube import PLACEMENT_DECISIONS
from ocm_rollout.controllers.placement.decision_index import DecisionIndex, PageEntry
from ocm_rollout.controllers.placement.world import World
from ocm_rollout.controllers.runtime.cache import Cache, KopfSource
from ocm_rollout.controllers.runtime.overlay import DeletePolicy, key_of

LABEL = "cluster.open-cluster-management.io/placement"
NAMESPACES = ("a", "b")
PLACEMENTS = ("p", "q", "r")
CLUSTERS = tuple(f"c{i}" for i in range(6))
PAGES = tuple(f"page{i}" for i in range(5))


def page_body(namespace: str, name: str, placement: str | None, decisions: list[tuple[str, int | None]], version: int) -> dict[str, Any]:
    labels = {} if placement is None else {LABEL: placement}
    entries: list[dict[str, Any]] = []
    for cluster, score in decisions:
        entry: dict[str, Any] = {"clusterName": cluster, "reason": ""}
        if score is not None:
            entry["score"] = score
        entries.append(entry)
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "uid": f"uid-{namespace}-{name}",
                     "resourceVersion": str(version)},
        "status": {"decisions": entries},
    }  # fmt: skip


class FullRecount:
    """What the snapshot computed before the index: everything from every page, each time."""

    def __init__(self, pages: Iterable[PlacementDecision]) -> None:
        self.pages = sorted(pages, key=lambda d: (d.namespace, d.name))
        self.by_placement: dict[tuple[str, str], list[PlacementDecision]] = defaultdict(list)
        for pd in self.pages:
            label = pd.metadata.labels.get(LABEL)
            if label is not None:
                self.by_placement[(pd.namespace, label)].append(pd)

    def current(self, namespace: str, placement: str) -> set[str]:
        return {d.cluster_name for pd in self.by_placement.get((namespace, placement), ()) for d in pd.status.decisions}

    def recorded(self, namespace: str, placement: str) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for pd in self.by_placement.get((namespace, placement), ()):
            for d in pd.status.decisions:
                out[d.cluster_name] = d.score
        return out

    def balance(self, namespace: str, placement: str) -> Counter[str]:
        total: Counter[str] = Counter(d.cluster_name for pd in self.pages for d in pd.status.decisions)
        own: Counter[str] = Counter(
            d.cluster_name for pd in self.by_placement.get((namespace, placement), ()) for d in pd.status.decisions
        )
        if not own:
            return total
        total.subtract(own)
        return +total


def assert_same(index: DecisionIndex, full: FullRecount) -> None:
    for namespace in NAMESPACES:
        for placement in PLACEMENTS:
            assert index.current_decisions(namespace, placement) == full.current(namespace, placement)
            assert index.recorded_scores(namespace, placement) == full.recorded(namespace, placement)
            assert list(index.recorded_scores(namespace, placement).items()) == list(full.recorded(namespace, placement).items())
            assert dict(index.balance_counts(namespace, placement)) == dict(full.balance(namespace, placement))
    assert all(count > 0 for count in index.balance_counts("none", "none").values())


decisions_st = st.lists(st.tuples(st.sampled_from(CLUSTERS), st.none() | st.integers(-100, 100)), max_size=6)
page_st = st.tuples(
    st.sampled_from(NAMESPACES), st.sampled_from(PAGES), st.none() | st.sampled_from(PLACEMENTS), decisions_st
)
change_st = st.one_of(
    st.tuples(st.just("put"), page_st),
    st.tuples(st.just("delete"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PAGES))),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(change_st, max_size=40))
def test_puts_in_any_order_equal_a_full_recount(changes: list[tuple[str, Any]]) -> None:
    index = DecisionIndex()
    pages: dict[tuple[str, str], PlacementDecision] = {}
    for version, (action, args) in enumerate(changes, start=1):
        if action == "put":
            namespace, name, placement, decisions = args
            page = PlacementDecision.parse(page_body(namespace, name, placement, decisions, version))
            pages[(namespace, name)] = page
            index.put((namespace, name), PageEntry.of(page))
        else:
            pages.pop(args, None)
            index.put(args, None)
        assert_same(index, FullRecount(pages.values()))
    assert_same(DecisionIndex.of(pages.values()), FullRecount(pages.values()))


# -- the world's index, fed by cache events, own writes and deletes --------------------------------

world_change_st = st.one_of(
    st.tuples(st.just("event"), page_st),  # the watch brings a new version
    st.tuples(st.just("wrote"), page_st),  # this controller wrote a version (the watch has not shown it)
    st.tuples(st.just("stale"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PAGES))),  # an older version arrives
    st.tuples(st.just("gone"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PAGES))),  # the watch's DELETED
    st.tuples(st.just("delete"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PAGES))),  # this controller deletes
    st.tuples(st.just("invalid"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PAGES))),  # a page the model rejects
    st.just(("snapshot", None)),
)


def shown_pages(cache: Cache) -> list[PlacementDecision]:
    out = []
    for body in cache:
        try:
            out.append(PlacementDecision.parse(body))
        except Exception:
            continue
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(world_change_st, max_size=40))
def test_the_worlds_index_equals_a_recount_of_what_the_cache_shows(changes: list[tuple[str, Any]]) -> None:
    source = KopfSource("decisions")
    stored: dict[tuple[str, str], list[dict[str, Any]]] = {}
    source.bind(stored)
    cache = Cache(PLACEMENT_DECISIONS, source, DeletePolicy.HIDE)
    empty = Cache(PLACEMENT_DECISIONS, KopfSource("empty"), DeletePolicy.HIDE)
    world = World(empty, empty, empty, empty, cache, empty)
    cache.index_listeners.append(lambda event, obj, previous: world.decision_changed(key_of(obj)))
    history: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)  # every version, oldest first
    for version, (action, args) in enumerate(changes, start=1):
        if action in ("event", "wrote"):
            namespace, name, placement, decisions = args
            body = page_body(namespace, name, placement, decisions, version)
            history[(namespace, name)].append(body)
            if action == "event":
                previous = stored.get((namespace, name))
                stored[(namespace, name)] = [body]
                cache.on_source("MODIFIED" if previous else "ADDED", body, None)
            else:
                cache.wrote(body, created=(namespace, name) not in stored)
        elif action == "stale":
            older = history.get(args, [])
            if len(older) >= 2:
                stored[args] = [older[-2]]
                cache.on_source("MODIFIED", older[-2], None)
        elif action == "gone":
            found = stored.pop(args, None)
            if found:
                cache.on_source("DELETED", found[0], None)
        elif action == "delete":
            shown = cache.get(args[1], args[0])
            if shown is not None:
                cache.delete_requested(shown)
                world.decision_changed(args)
        elif action == "invalid":
            body = page_body(args[0], args[1], "p", [], version)
            body["status"]["decisions"] = [{"reason": "no cluster name"}]
            stored[args] = [body]
            cache.on_source("MODIFIED", body, None)
        else:
            assert_world(world, cache)
    assert_world(world, cache)


def assert_world(world: World, cache: Cache) -> None:
    assert_same(world.snapshot().decision_index, FullRecount(shown_pages(cache)))
    for namespace in NAMESPACES:
        for placement in PLACEMENTS:
            assert world.pages_labelled(namespace, placement) == cache.select(namespace, labels={LABEL: placement})


# -- the snapshot's memo of what a selector matches ---------------------------------------------

label_values = st.sampled_from(["x", "y", "z"])
requirement_st = st.one_of(
    st.tuples(st.sampled_from(["env", "region"]), st.sampled_from(["In", "NotIn"]), st.lists(label_values, min_size=1, max_size=2)),
    st.tuples(st.sampled_from(["env", "region"]), st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
)
selector_st = st.fixed_dictionaries({
    "labelSelector": st.fixed_dictionaries({
        "matchExpressions": st.lists(requirement_st.map(lambda r: {"key": r[0], "operator": r[1], "values": r[2]}), max_size=2),
    }),
    "claimSelector": st.fixed_dictionaries({
        "matchExpressions": st.lists(requirement_st.map(lambda r: {"key": r[0], "operator": r[1], "values": r[2]}), max_size=1),
    }),
})  # fmt: skip
fleet_st = st.lists(
    st.tuples(st.dictionaries(st.sampled_from(["env", "region"]), label_values), st.dictionaries(st.sampled_from(["env", "region"]), label_values)),
    min_size=1, max_size=8,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(fleet_st, st.lists(st.lists(selector_st, min_size=1, max_size=2), min_size=1, max_size=3))
def test_predicates_through_the_memo_match_as_each_selector_does(fleet: list[Any], specs: list[list[Any]]) -> None:
    from ocm_rollout.controllers.placement.filters import build_matcher, predicate_filter
    from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot
    from tests.unit.test_sched_builders import cluster, placement

    views = [ClusterView.of(cluster(f"c{i}", labels, claims=claims)) for i, (labels, claims) in enumerate(fleet)]
    snapshot = Snapshot(views)
    outsider = ClusterView.of(cluster("c0", {"env": "x"}))  # not the snapshot's view of c0
    for selectors in specs:  # Placements in turn: later ones meet the memo of earlier ones
        p = placement(predicates=[{"requiredClusterSelector": s} for s in selectors])
        matchers = [build_matcher(pred.required_cluster_selector, snapshot) for pred in p.spec.predicates]
        for candidates in (views, views[::2], [outsider, *views[1:]]):
            found, _ = predicate_filter(p, candidates, snapshot)
            assert found == [c for c in candidates if any(m.matches(c) for m in matchers)]
