"""Per group of a two-level index (owner -> key -> object), the group's keys in sorted order, kept
until a key comes or goes in that group. A controller's pass reads every child of an owner in key
order; during a rollout the children change version, not keys, so the sort is not paid again."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

G = TypeVar("G", bound=Hashable)
K = TypeVar("K", bound=Any)
V = TypeVar("V")


class KeptOrder(Generic[G, K]):
    """See the module docstring. The index calls ``forget(group)`` whenever a key enters or leaves
    that group (not when an object is replaced under the same key)."""

    __slots__ = ("_order",)

    def __init__(self) -> None:
        self._order: dict[G, list[K]] = {}

    def forget(self, group: G) -> None:
        self._order.pop(group, None)

    def kept(self, group: G) -> list[K] | None:
        """The order kept for ``group``, if any (for tests and troubleshooting)."""
        return self._order.get(group)

    def items(self, group: G, bucket: Mapping[K, V] | None) -> list[tuple[K, V]]:
        """``bucket``'s (key, object) pairs in key order; ``bucket`` is ``group``'s."""
        if not bucket:
            return []
        order = self._order.get(group)
        if order is None:
            order = self._order[group] = sorted(bucket)
        return [(key, bucket[key]) for key in order]
