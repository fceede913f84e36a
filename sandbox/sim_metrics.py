"""The simulated fleet's workload metrics, and their Prometheus text exposition.

A profile's ``metrics`` (``ocm_rollout.sandbox.sim_profile``) give each simulated cluster gauges
and counters, some of them only while a ManifestWork matching a rule is applied there.
``FleetMetrics`` follows what the work agents apply (``applied``/``released``, called by
``ocm_rollout.sandbox.simulation``) and gives one series per cluster and metric, labelled
``cluster``; ``render`` writes them in the text format, version 0.0.4, that Prometheus scrapes
(``ocm_rollout.sandbox.sim_metrics_server`` serves it on ``/metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ocm_rollout.sandbox.agents.workload_metrics import ClusterMetrics, MetricType, Sample
from ocm_rollout.sandbox.sim_profile import ClusterPlan

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CLUSTER_LABEL = "cluster"
HELP = "A workload metric of the simulated managed clusters, from the ocm-rollout up profile."


class FleetMetrics:
    """The metrics of the clusters of ``plans``. ``clock`` gives the seconds since the start of the
    simulation (counters start there); ``shown(cluster)`` says whether a cluster's series are
    exposed now (registered and reachable)."""

    def __init__(
        self,
        plans: Mapping[str, ClusterPlan],
        clock: Callable[[], float],
        shown: Callable[[str], bool] = lambda _cluster: True,
    ) -> None:
        self.plans = plans
        self.clock = clock
        self.shown = shown
        self._clusters: dict[str, ClusterMetrics] = {}

    @property
    def follows_works(self) -> bool:
        """Whether some cluster's metrics depend on the works applied on it."""
        return any(plan.work_metrics for plan in self.plans.values())

    def _cluster(self, name: str, plan: ClusterPlan) -> ClusterMetrics:
        state = self._clusters.get(name)
        if state is None:
            state = self._clusters[name] = ClusterMetrics(plan.metrics)
        return state

    def applied(self, cluster: str, work: str, generation: int, spec: Any) -> None:
        """The agent of ``cluster`` applied ``generation`` of ``work`` (whose spec is ``spec``), and
        at least one of its manifests is on the cluster."""
        plan = self.plans.get(cluster)
        if plan is None or not plan.work_metrics:
            return
        state = self._cluster(cluster, plan)
        if not state.knows(work, generation):
            state.applied(work, generation, plan.metric_rules_matching(work, generation, spec), self.clock())

    def released(self, cluster: str, work: str) -> None:
        """Nothing of ``work`` is on ``cluster`` any more (deleted, or its last apply failed)."""
        state = self._clusters.get(cluster)
        if state is not None:
            state.released(work, self.clock())

    def samples(self) -> list[Sample]:
        """Every series of the clusters shown now, cluster by cluster."""
        elapsed = self.clock()
        out: list[Sample] = []
        for name, plan in self.plans.items():
            if self.shown(name):
                out.extend(self._cluster(name, plan).samples(name, elapsed))
        return out

    def render(self) -> bytes:
        return render(self.samples())


class _Samples:
    """A prometheus_client collector of fixed samples: one family per name, in first-seen order."""

    def __init__(self, samples: Iterable[Sample]) -> None:
        self.families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
        for sample in samples:
            family = self.families.get(sample.name)
            if family is None:
                family_type = GaugeMetricFamily if sample.type is MetricType.GAUGE else CounterMetricFamily
                family = self.families[sample.name] = family_type(sample.name, HELP, labels=[CLUSTER_LABEL])
            family.add_metric([sample.cluster], sample.value)

    def collect(self) -> Iterator[Metric]:
        yield from self.families.values()


def render(samples: Iterable[Sample]) -> bytes:
    """``samples`` in the Prometheus text format 0.0.4 (``# HELP``/``# TYPE`` per metric, label
    values escaped, NaN and infinities as ``NaN``, ``+Inf``, ``-Inf``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Samples(samples))
    return generate_latest(registry)
