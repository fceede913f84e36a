"""The workload metrics of one simulated cluster (pure: no I/O, time is an argument).

A profile gives clusters metric values (``ocm_rollout.sandbox.sim_profile``: ``metrics``), some of
them only while a ManifestWork that matches a rule is applied on the cluster. This module holds
what those values are (``MetricSetting``: a gauge's value, or a counter's rate per second) and
what one cluster reports over time (``ClusterMetrics``): which rules its applied works satisfy, the
settings that follow, and the counters, which grow at the rate in force while it is in force.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

# Prometheus's metric name syntax (the classic one: what every scraper and query accepts).
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
COUNTER_SUFFIX = "_total"


class MetricType(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"


@dataclass(frozen=True)
class MetricSetting:
    """A gauge's value (any float, NaN and infinities too), or a counter's increase per second
    (finite, not negative)."""

    type: MetricType
    value: float


def exposed_name(name: str, type_: MetricType) -> str:
    """The name a series is exposed under: a counter's ends in ``_total`` (added when missing)."""
    if type_ is MetricType.COUNTER and not name.endswith(COUNTER_SUFFIX):
        return name + COUNTER_SUFFIX
    return name


def valid_metric_name(name: str) -> bool:
    return METRIC_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class Sample:
    """One series: ``name`` as exposed, on ``cluster``."""

    name: str
    type: MetricType
    cluster: str
    value: float


class ClusterMetrics:
    """What one cluster reports. ``resolve(satisfied)`` gives the settings in force when the work
    rules of index ``satisfied`` hold; the cluster records, per applied work, the rules it
    satisfies, and re-resolves when that changes. Counters start at 0 at elapsed time 0."""

    def __init__(self, resolve: Callable[[frozenset[int]], Mapping[str, MetricSetting]]) -> None:
        self._resolve = resolve
        self._by_work: dict[str, tuple[int, frozenset[int]]] = {}  # work -> (generation, rules)
        self._settings: Mapping[str, MetricSetting] = resolve(frozenset())
        self._totals: dict[str, float] = {}
        self._since = 0.0

    def knows(self, work: str, generation: int) -> bool:
        """Whether ``work`` is recorded as applied at ``generation`` (nothing to match again)."""
        known = self._by_work.get(work)
        return known is not None and known[0] == generation

    def applied(self, work: str, generation: int, satisfied: frozenset[int], elapsed: float) -> None:
        """``work``'s ``generation`` is applied on the cluster; it satisfies the rules ``satisfied``."""
        self._by_work[work] = (generation, satisfied)
        self._settle(elapsed)

    def released(self, work: str, elapsed: float) -> None:
        """``work`` no longer has anything applied on the cluster."""
        if self._by_work.pop(work, None) is not None:
            self._settle(elapsed)

    def _settle(self, elapsed: float) -> None:
        satisfied = frozenset().union(*(rules for _, rules in self._by_work.values()))
        settings = self._resolve(satisfied)
        if settings == self._settings:
            return
        self._totals = self._counted(elapsed)
        self._since = max(elapsed, self._since)
        self._settings = settings

    def _counted(self, elapsed: float) -> dict[str, float]:
        """Every counter's value at ``elapsed``: what it had, plus its rate since the last change."""
        totals = dict(self._totals)
        span = max(elapsed - self._since, 0.0)
        for name, setting in self._settings.items():
            if setting.type is MetricType.COUNTER:
                totals[name] = totals.get(name, 0.0) + setting.value * span
        return totals

    def samples(self, cluster: str, elapsed: float) -> list[Sample]:
        """The cluster's series at ``elapsed``: the settings in force, and every counter it ever had
        (a counter that no rule sets any more keeps its value)."""
        totals = self._counted(elapsed)
        out = [
            Sample(name, setting.type, cluster, setting.value)
            for name, setting in self._settings.items()
            if setting.type is MetricType.GAUGE
        ]
        out.extend(Sample(name, MetricType.COUNTER, cluster, value) for name, value in totals.items())
        return out
