"""``runtime.confirm``: which newer objects a confirm reads, and how (one by one or one list)."""

from __future__ import annotations

import asyncio
from typing import Any

from ocm_rollout.controllers.runtime import confirm


def obj(namespace: str, rv: str, name: str = "x") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def test_few_is_at_least_eight_and_grows_with_the_fleet() -> None:
    assert confirm.few(0) == confirm.few(100) == 8
    assert confirm.few(1_000) == 31
    assert confirm.few(10_000) == 312


def test_newer_keys_are_the_listed_objects_newer_than_planned_or_unknown() -> None:
    planned = {("a", "x"): obj("a", "5"), ("b", "x"): obj("b", "5"), ("c", "x"): obj("c", "9")}
    listed = [obj("a", "5"), obj("b", "6"), obj("c", "8"), obj("d", "1")]
    assert confirm.newer_keys(listed, planned.get) == [("b", "x"), ("d", "x")]


def test_few_newer_objects_are_read_one_by_one_and_only_they_are_kept() -> None:
    asked: list[tuple[str, str]] = []

    async def read_one(namespace: str, name: str) -> list[dict[str, Any]]:
        asked.append((namespace, name))
        return [obj(namespace, "7", name), obj(namespace, "7", "other")]

    async def read_all() -> list[dict[str, Any]]:
        raise AssertionError("a full list for two newer objects")

    found = asyncio.run(confirm.read_newer([("b", "x"), ("d", "x")], 1_000, read_one, read_all))
    assert sorted(asked) == [("b", "x"), ("d", "x")]
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in found] == [("b", "x"), ("d", "x")]


def test_more_than_few_newer_objects_are_read_in_one_list() -> None:
    keys = [(f"c{i}", "x") for i in range(9)]

    async def read_one(namespace: str, name: str) -> list[dict[str, Any]]:
        raise AssertionError("read one by one past few()")

    async def read_all() -> list[dict[str, Any]]:
        return [obj(ns, "2") for ns, _ in keys]

    assert len(asyncio.run(confirm.read_newer(keys, 100, read_one, read_all))) == 9
    assert asyncio.run(confirm.read_newer([], 100, read_one, read_all)) == []


def test_one_by_one_reads_are_bounded_in_flight() -> None:
    running = peak = 0

    async def read_one(namespace: str, name: str) -> list[dict[str, Any]]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        return [obj(namespace, "2", name)]

    async def read_all() -> list[dict[str, Any]]:
        raise AssertionError

    keys = [(f"c{i}", "x") for i in range(100)]
    assert len(asyncio.run(confirm.read_newer(keys, 10_000, read_one, read_all))) == 100
    assert peak == confirm.CONCURRENCY


def test_merge_newer_takes_only_strictly_newer_accepted_objects() -> None:
    def obj(name: str, rv: str, owner: str = "o") -> dict:
        return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv, "labels": {"owner": owner}}}

    merged = {"a": obj("a", "5"), "b": obj("b", "5")}
    learnt: list[str] = []
    stored = [obj("a", "5"), obj("b", "7"), obj("c", "1"), obj("d", "9", owner="other")]
    changed = confirm.merge_newer(
        stored, merged, lambda o: o["metadata"]["name"], lambda o: learnt.append(o["metadata"]["name"]),
        lambda o: o["metadata"]["labels"]["owner"] == "o",
    )
    assert changed
    assert {k: v["metadata"]["resourceVersion"] for k, v in merged.items()} == {"a": "5", "b": "7", "c": "1"}
    assert learnt == ["b", "c"]
    assert not confirm.merge_newer([obj("a", "4")], merged, lambda o: o["metadata"]["name"], learnt.append)
