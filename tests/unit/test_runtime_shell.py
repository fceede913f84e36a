"""The controller shell (controllers/runtime): the read-your-writes overlay, the one retry policy,
the told-once memory, caches over list-and-watch sources, namespace scoping and the sync gate."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes.client import ApiClient

from ocm_rollout.client.kube import MANAGED_CLUSTERS, MANIFEST_WORKS, PLACEMENTS, Kube
from ocm_rollout.client.queue import WorkQueue
from ocm_rollout.controllers.common.wire import fenced
from ocm_rollout.controllers.runtime.cache import KopfSource, WatchSource
from ocm_rollout.controllers.runtime.events import Told, build_event, reference
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE, after, apply_outcome, back_off, sooner
from ocm_rollout.controllers.runtime.overlay import DELETE_REQUESTED, DeletePolicy, Overlay, strictly_newer
from ocm_rollout.controllers.runtime.shell import LIST_WATCH, ControllerContext, Runtime, Trigger


def obj(name: str, rv: str, uid: str = "u1", namespace: str = "ns", **extra: object) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "uid": uid, **extra}}


# -- the overlay ---------------------------------------------------------------------------------


def test_strictly_newer_compares_integer_versions_and_never_calls_the_same_one_newer() -> None:
    assert strictly_newer(obj("a", "10"), obj("a", "9"))
    assert not strictly_newer(obj("a", "9"), obj("a", "10"))
    assert not strictly_newer(obj("a", "10"), obj("a", "10"))
    assert strictly_newer(obj("a", "x"), obj("a", "y"))
    assert strictly_newer(obj("a", "1"), None)


def test_a_write_is_shown_until_the_cache_holds_that_version_or_a_newer_one() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    overlay.wrote(obj("a", "5"))
    assert overlay.view(obj("a", "4"), ("ns", "a")) == obj("a", "5")
    assert overlay.view(obj("a", "6"), ("ns", "a")) == obj("a", "6")
    assert len(overlay) == 0  # caught up: the entry is gone
    assert overlay.view(obj("a", "4"), ("ns", "a")) == obj("a", "4")


def test_two_writes_in_a_row_stay_shown_while_the_cache_is_two_versions_behind() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    overlay.wrote(obj("a", "5"))
    overlay.wrote(obj("a", "6"))
    assert overlay.view(obj("a", "4"), ("ns", "a")) == obj("a", "6")
    assert overlay.view(obj("a", "5"), ("ns", "a")) == obj("a", "6")


def test_a_create_is_shown_before_the_cache_has_it_and_a_patched_object_that_vanished_is_not() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    overlay.wrote(obj("new", "3"), created=True)
    overlay.wrote(obj("old", "3"))
    assert overlay.view(None, ("ns", "new")) == obj("new", "3")
    assert overlay.view(None, ("ns", "old")) is None
    assert [key for key, _ in overlay.pending()] == [("ns", "new")]


def test_another_incarnation_in_the_cache_wins_over_a_write() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    overlay.wrote(obj("a", "5", uid="old"))
    assert overlay.view(obj("a", "4", uid="new"), ("ns", "a")) == obj("a", "4", uid="new")


def test_a_hidden_delete_is_gone_for_readers_until_the_cache_drops_the_object() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    overlay.delete_requested(obj("a", "5"))
    assert overlay.view(obj("a", "5"), ("ns", "a")) is None
    assert overlay.view(obj("a", "6", deletionTimestamp="2026-01-01T00:00:00Z"), ("ns", "a")) is None
    assert overlay.view(None, ("ns", "a")) is None
    assert overlay.view(obj("a", "9", uid="u2"), ("ns", "a")) == obj("a", "9", uid="u2")


def test_a_marked_delete_is_shown_as_deleting_until_the_cache_shows_the_real_deletion() -> None:
    overlay = Overlay(DeletePolicy.MARK)
    overlay.delete_requested(obj("a", "5"))
    shown = overlay.view(obj("a", "5"), ("ns", "a"))
    assert shown is not None and shown["metadata"]["deletionTimestamp"] == DELETE_REQUESTED
    real = obj("a", "6", deletionTimestamp="2026-01-01T00:00:00Z")
    assert overlay.view(real, ("ns", "a")) == real
    assert len(overlay) == 0


def test_an_object_learnt_from_the_api_is_kept_only_when_newer_than_what_is_shown() -> None:
    overlay = Overlay(DeletePolicy.HIDE)
    assert not overlay.learnt(obj("a", "4"), obj("a", "5"))
    assert overlay.learnt(obj("a", "6"), obj("a", "5"))
    assert overlay.view(obj("a", "5"), ("ns", "a")) == obj("a", "6")
    assert overlay.learnt(obj("b", "1"), None)
    assert overlay.view(None, ("ns", "b")) == obj("b", "1")


# -- the retry policy ----------------------------------------------------------------------------


def test_back_off_grows_and_only_done_or_after_resets_it() -> None:
    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue("q", base_delay=1.0, max_delay=8.0, clock=lambda: 0.0)
        delays = [apply_outcome(queue, "k", back_off("write failed")) for _ in range(5)]
        assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
        assert apply_outcome(queue, "k", None) == 8.0  # an exception is a back-off too
        assert apply_outcome(queue, "k", CONFLICT) == 0.5
        assert queue.failures("k") == 6  # a conflict neither grows nor resets it
        assert apply_outcome(queue, "k", after(30)) == 30
        assert queue.failures("k") == 0
        apply_outcome(queue, "k", back_off())
        assert apply_outcome(queue, "k", DONE) is None
        assert queue.failures("k") == 0

    asyncio.run(scenario())


def test_an_event_cuts_an_exponential_back_off_short_but_not_a_retry_after() -> None:
    now = [0.0]
    queue: WorkQueue[str] = WorkQueue("q", base_delay=1.0, max_delay=300.0, clock=lambda: now[0])
    for _ in range(6):
        apply_outcome(queue, "k", back_off("write failed"))  # the next retry is 32 s away
    queue.add("k")  # a watch event: the user may have fixed the input
    assert len(queue) == 1
    queue._ready.clear()
    queue._ready_set.clear()
    apply_outcome(queue, "t", back_off("429", at_least=5.0))
    queue.add("t")
    assert len(queue) == 0  # the server asked for 5 s: the event waits


def test_the_sooner_outcome_wins() -> None:
    assert sooner(after(5), back_off("x")).kind == "back_off"
    assert sooner(after(5), after(2)) == after(2)
    assert sooner(DONE, after(9)) == after(9)
    assert after(None) == DONE


# -- events ------------------------------------------------------------------------------------


def test_told_once_tells_again_only_when_the_value_changes() -> None:
    told = Told()
    assert told.once("ns/a", "missing", "x")
    assert not told.once("ns/a", "missing", "x")
    assert told.once("ns/a", "missing", "y")
    told.clear("ns/a", "missing")
    assert told.once("ns/a", "missing", "y")
    told.put("ns/a", "warnings", frozenset({"w"}))
    told.forget("ns/a")
    assert told.get("ns/a", "warnings") is None


def test_an_event_carries_its_related_object_its_action_and_a_chosen_name() -> None:
    from datetime import UTC, datetime

    event = build_event(
        {"apiVersion": "v1", "kind": "X", "metadata": {"name": "p", "namespace": "ns"}},
        reason="DecisionCreate", message="m" * 2000, event_type="Normal", component="c",
        now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), related=reference(PLACEMENTS, "p-1", "ns"), action="Create",
        name="p.fixed",
    )
    assert event["metadata"]["name"] == "p.fixed"
    assert event["related"]["kind"] == "Placement" and event["action"] == "Create"
    assert len(event["message"]) == 1024 and event["firstTimestamp"] == "2026-01-02T03:04:05Z"


def test_a_fenced_patch_carries_the_resource_version_read() -> None:
    assert fenced({"metadata": {"labels": {"a": "b"}}, "spec": {}}, obj("a", "7")) == {
        "metadata": {"labels": {"a": "b"}, "resourceVersion": "7"}, "spec": {}
    }


# -- caches and the runtime ------------------------------------------------------------------------


def runtime(namespaces: list[str] | None = None) -> Runtime:
    return Runtime("t", ControllerContext(kube=Kube(ApiClient()), namespaces=namespaces))


def test_a_scoped_controller_lists_and_watches_only_its_namespaces() -> None:
    rt = runtime(["a", "b"])
    works = rt.watch(MANIFEST_WORKS, source=LIST_WATCH)
    clusters = rt.watch(MANAGED_CLUSTERS, source=LIST_WATCH)
    assert isinstance(works.source, WatchSource) and isinstance(clusters.source, WatchSource)
    assert sorted(c.namespace or "" for c in works.source.caches.values()) == ["a", "b"]
    assert [c.namespace for c in clusters.source.caches.values()] == [None]  # cluster-scoped


def test_a_cache_shows_own_writes_to_the_index_but_not_to_the_triggers() -> None:
    rt = runtime()
    queue: WorkQueue[str] = rt.queue("q", lambda key: asyncio.sleep(0, DONE))
    indexed: list[str] = []
    cache = rt.watch(
        MANAGED_CLUSTERS, source=LIST_WATCH, index=lambda e, o, p: indexed.append(e),
        triggers=[Trigger(queue, lambda e, o, p: [o["metadata"]["name"]])],
    )
    cache.wrote(obj("c1", "2", namespace=""), created=True)
    assert indexed == ["ADDED"] and len(queue) == 0
    assert cache.get("c1") == obj("c1", "2", namespace="")
    cache.on_source("ADDED", obj("c1", "2", namespace=""), None)
    assert indexed == ["ADDED", "ADDED"] and len(queue) == 1


def test_a_trigger_without_own_writes_skips_only_the_echo_of_the_version_written() -> None:
    rt = runtime()
    every: WorkQueue[str] = rt.queue("every", lambda key: asyncio.sleep(0, DONE))
    others: WorkQueue[str] = rt.queue("others", lambda key: asyncio.sleep(0, DONE))
    heard: list[str] = []
    cache = rt.watch(MANAGED_CLUSTERS, source=LIST_WATCH, triggers=[
        Trigger(every, lambda e, o, p: [o["metadata"]["name"]]),
        Trigger(others, lambda e, o, p: heard.append(o["metadata"]["resourceVersion"]) or [], own_writes=False),
    ])
    cache.on_source("ADDED", obj("c1", "1", namespace=""), None)
    cache.wrote(obj("c1", "2", namespace=""))
    cache.on_source("MODIFIED", obj("c1", "2", namespace=""), None)  # the echo
    cache.on_source("MODIFIED", obj("c1", "3", namespace=""), None)  # someone else's write
    assert heard == ["1", "3"]
    cache.wrote(obj("c1", "5", namespace=""))
    cache.on_source("MODIFIED", obj("c1", "4", namespace=""), None)  # older than the write: not its echo
    cache.on_source("MODIFIED", obj("c1", "6", namespace=""), None)  # later: the echo of 5 will not come
    cache.on_source("MODIFIED", obj("c1", "5", namespace=""), None)  # (a relist's old copy) is no echo now
    assert heard == ["1", "3", "4", "6", "5"]
    cache.wrote(obj("c1", "7", namespace=""))
    cache.on_source("MODIFIED", obj("c1", "7", uid="u2", namespace=""), None)  # another incarnation
    cache.wrote(obj("c1", "8", namespace=""))
    cache.on_source("DELETED", obj("c1", "8", namespace=""), None)  # a deletion always counts
    assert heard == ["1", "3", "4", "6", "5", "7", "8"]
    assert len(every) == 1  # the queue holds the key once; it heard every event


def test_no_pass_runs_before_every_cache_has_listed() -> None:
    async def scenario() -> None:
        rt = runtime()
        ran: list[str] = []

        async def reconcile(key: str) -> object:
            ran.append(key)
            return DONE

        queue = rt.queue("q", reconcile)  # type: ignore[arg-type]
        rt.watch(PLACEMENTS)
        cached = rt.watch(MANAGED_CLUSTERS, source=LIST_WATCH)
        queue.add("k")
        task = asyncio.create_task(rt._run_queues())
        await asyncio.sleep(0.05)
        assert ran == [] and not rt.synced.is_set()
        assert isinstance(cached.source, WatchSource)
        for watch_cache in cached.source.caches.values():
            watch_cache.synced.set()
        await asyncio.sleep(0.05)
        assert ran == []  # kopf has not delivered its listing yet
        kopf_source = rt.caches[0].source
        assert isinstance(kopf_source, KopfSource)
        kopf_source.bind({})
        rt._check_synced()
        await asyncio.sleep(0.05)
        assert ran == ["k"] and rt.passes("q", "k") == 1
        await rt.stop()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_a_back_off_waits_at_least_the_retry_after_an_api_server_asked_for() -> None:
    class Throttled(Exception):
        retry_after = 3.0

    async def scenario() -> None:
        from ocm_rollout.controllers.runtime.outcome import raised

        queue: WorkQueue[str] = WorkQueue("q", base_delay=0.005, clock=lambda: 0.0)
        assert apply_outcome(queue, "k", raised(Throttled())) == 3.0
        assert apply_outcome(queue, "k", back_off("429", at_least=2.0)) == 2.0
        assert apply_outcome(queue, "k", raised(ValueError())) == 0.02  # the third failure
        assert queue.failures("k") == 3

    asyncio.run(scenario())
