"""The generic readers of controllers/common/wire.py: a missing or oddly typed value reads as
empty, a well-typed one is returned as it is (not copied)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from ocm_rollout.controllers.common.wire import as_list, as_mapping, as_str, mapping_at, mappings_in, meta

ODD: list[Any] = [None, 0, 1.5, True, "text", b"bytes", ["x"], ("t",), {"s"}]


def test_as_mapping_returns_an_object_itself() -> None:
    obj = {"a": 1}
    assert as_mapping(obj) is obj
    proxy = MappingProxyType({"b": 2})
    assert as_mapping(proxy) is proxy


@pytest.mark.parametrize("value", ODD)
def test_as_mapping_of_anything_else_is_a_new_empty_dict(value: Any) -> None:
    first, second = as_mapping(value), as_mapping(value)
    assert first == {} and isinstance(first, dict)
    assert first is not second


def test_as_list_returns_a_list_itself() -> None:
    items = [1, None]
    assert as_list(items) is items


@pytest.mark.parametrize("value", [None, 0, "ab", ("t",), {"k": "v"}, {"s"}])
def test_as_list_of_anything_else_is_a_new_empty_list(value: Any) -> None:
    first, second = as_list(value), as_list(value)
    assert first == [] and first is not second


def test_as_str_returns_a_string_and_converts_nothing() -> None:
    assert as_str("x") == "x"
    assert as_str("") == ""
    for value in (None, 5, 0, True, ["x"], {"x": 1}, b"x"):
        assert as_str(value) == ""


def test_mapping_at_walks_objects() -> None:
    cma = {"spec": {"installStrategy": {"type": "Placements"}}}
    assert mapping_at(cma, "spec", "installStrategy") is cma["spec"]["installStrategy"]
    assert mapping_at(cma, "spec") is cma["spec"]
    assert mapping_at(cma) is cma


@pytest.mark.parametrize(
    "obj",
    [None, "x", {}, {"spec": None}, {"spec": []}, {"spec": {"installStrategy": "Manual"}}, {"spec": {"other": {}}}],
)
def test_mapping_at_is_empty_when_a_step_is_missing_or_not_an_object(obj: Any) -> None:
    assert mapping_at(obj, "spec", "installStrategy") == {}


def test_mappings_in_keeps_the_objects_in_order() -> None:
    first, second = {"name": "a"}, MappingProxyType({"name": "b"})
    found = mappings_in([first, None, "x", 3, second, ["y"]])
    assert found == [first, second] and found[0] is first and found[1] is second
    assert all(isinstance(item, Mapping) for item in found)


@pytest.mark.parametrize("value", [None, "abc", {"a": {}}, ({"a": 1},)])
def test_mappings_in_anything_but_a_list_is_empty(value: Any) -> None:
    assert mappings_in(value) == []


def test_meta_reads_through_as_mapping() -> None:
    metadata = {"name": "n"}
    assert meta({"metadata": metadata}) is metadata
    assert meta({"metadata": "x"}) == {} and meta({}) == {}
