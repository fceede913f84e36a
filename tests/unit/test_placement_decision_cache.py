"""The placement controller's decision cache shares equal entries between pages
(ocm_rollout.controllers.placement.decision_cache), and the controller declares it so."""

from __future__ import annotations

import copy
import gc
import json
import pickle
from typing import Any, cast

import pytest

from ocm_rollout.client.kube import MANAGED_CLUSTERS, PLACEMENT_DECISIONS, Kube
from ocm_rollout.client.watchcache import WatchCache
from ocm_rollout.controllers.placement.decision_cache import SharedDecisions, SharedEntry
from ocm_rollout.controllers.placement.operator import PlacementController
from ocm_rollout.controllers.runtime.cache import WatchSource
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.shell import KOPF, Runtime


def decoded(body: Any) -> Any:
    """``body`` as decoded from the API: every string and dict an object of its own."""
    return json.loads(json.dumps(body))


def page(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return cast(dict[str, Any], decoded({
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "status": {"decisions": list(entries)},
    }))  # fmt: skip


def entry(cluster: str, score: int | None = 7, reason: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"clusterName": cluster, "reason": reason}
    if score is not None:
        out["score"] = score
    return out


def entries(body: dict[str, Any]) -> list[Any]:
    return list(body["status"]["decisions"])


def test_equal_entries_of_different_pages_are_one_object_and_the_pages_read_the_same() -> None:
    shared = SharedDecisions()
    first = page("a", entry("c1"), entry("c2", 3), entry("c3", None), entry("c4", 7, "why"))
    second = page("b", entry("c2", 3), entry("c1"), entry("c3", None), entry("c4", 7, "why"))
    before = json.dumps([first, second])
    one, two = shared(first), shared(second)
    assert json.dumps([one, two]) == before  # the same JSON, key order included
    assert json.dumps([first, second]) == before  # the pages given are left alone
    assert entries(one)[0] is entries(two)[1] and entries(one)[1] is entries(two)[0]
    assert entries(one)[2] is entries(two)[2] and entries(one)[3] is entries(two)[3]
    assert len(shared) == 4


def test_entries_that_differ_in_any_field_or_in_key_order_are_not_merged() -> None:
    shared = SharedDecisions()
    variants = [entry("c1", 1), entry("c1", 2), entry("c1", 1, "r"), entry("c1", None), {"reason": "", "clusterName": "c1", "score": 1}]
    pages = [shared(page(f"p{i}", variant)) for i, variant in enumerate(variants)]
    assert len({id(entries(p)[0]) for p in pages}) == len(variants)
    assert [json.dumps(entries(p)[0]) for p in pages] == [json.dumps(v) for v in variants]


@pytest.mark.parametrize(
    "odd",
    [
        {"clusterName": "c1", "reason": "", "score": True},  # True == 1: must not meet score 1
        {"clusterName": "c1", "reason": "", "score": 1.0},
        {"clusterName": "c1", "reason": "", "extra": {"nested": 1}},
        {"reason": "", "clusterName": "c1"},  # the name not first
    ],
)
def test_an_entry_that_is_not_flat_json_of_strings_and_integers_keeps_its_own_dict(odd: dict[str, Any]) -> None:
    shared = SharedDecisions()
    common = entries(shared(page("a", entry("c1", 1))))[0]
    kept = entries(shared(page("b", odd)))[0]
    assert kept is not common and type(kept) is dict and json.dumps(kept) == json.dumps(odd)


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p"}, "status": None},
        {"metadata": {"name": "p"}, "status": {"decisions": None}},
        {"metadata": {"name": "p"}, "status": {"decisions": ["not an entry", {"clusterName": 3}, {}]}},
        {"metadata": {"name": "p"}, "status": "not a status"},
    ],
)
def test_pages_of_any_shape_come_back_the_same(body: dict[str, Any]) -> None:
    assert json.dumps(SharedDecisions()(body)) == json.dumps(body)


def test_a_shared_entry_refuses_changes_and_its_copies_are_plain_dicts() -> None:
    one = entries(SharedDecisions()(page("a", entry("c1"))))[0]
    assert isinstance(one, SharedEntry)
    for change in (
        lambda: one.__setitem__("reason", "x"), lambda: one.__delitem__("reason"), lambda: one.update(reason="x"),
        lambda: one.setdefault("new", 1), lambda: one.pop("reason"), one.popitem, one.clear,
    ):  # fmt: skip
        with pytest.raises(TypeError, match="shared between pages"):
            change()
    assert one == entry("c1")
    for duplicate in (copy.copy(one), copy.deepcopy(one), pickle.loads(pickle.dumps(one)), dict(one)):
        assert type(duplicate) is dict and duplicate == one
        duplicate["reason"] = "changed"
    assert one["reason"] == ""


def test_a_sweep_keeps_entries_pages_hold_and_drops_the_rest() -> None:
    shared = SharedDecisions(sweep_after=1_000_000)
    kept = shared(page("kept", entry("c1"), entry("c2")))
    dropped = shared(page("dropped", entry("c3"), entry("c2")))
    assert len(shared) == 3
    del dropped
    gc.collect()
    shared.sweep()
    assert len(shared) == 2
    assert entries(shared(page("again", entry("c1"))))[0] is entries(kept)[0]


def test_the_table_stays_bounded_by_what_pages_hold() -> None:
    shared = SharedDecisions(sweep_after=100)
    held = None
    for version in range(200):  # one page re-scored 200 times: each version's entries are new
        held = shared(page("p", *(entry(f"c{i}", version) for i in range(10))))
    assert held is not None and len(shared) <= 2 * 100 + 10


def test_the_controller_caches_decisions_shared_and_clusters_as_they_come() -> None:
    runtime = Runtime("placement", ControllerContext(kube=cast(Kube, None)))
    PlacementController(runtime)
    caches = {cache.resource.plural: cache for cache in runtime.caches}

    def watch_caches(plural: str) -> list[WatchCache]:
        source = caches[plural].source
        assert isinstance(source, WatchSource)
        return list(source.caches.values())

    [decisions] = watch_caches(PLACEMENT_DECISIONS.plural)
    assert isinstance(decisions.transform, SharedDecisions)
    assert [c.transform for c in watch_caches(MANAGED_CLUSTERS.plural)] == [None]


def test_a_kopf_fed_cache_refuses_a_transform() -> None:
    runtime = Runtime("placement", ControllerContext(kube=cast(Kube, None)))
    with pytest.raises(ValueError, match="no transform"):
        runtime.watch(PLACEMENT_DECISIONS, source=KOPF, transform=SharedDecisions())
