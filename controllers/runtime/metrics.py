"""Prometheus metrics of the controllers, served on ``/metrics`` by ``ocm-rollout run``.

Every metric is prefixed ``ocm_rollout_`` and lives in this module's ``REGISTRY`` (not the
prometheus-client global one, so tests and embedded runs do not collide). The controllers call
the functions below; all of them are thread-safe and cheap.

| metric | type | labels | meaning |
|---|---|---|---|
| ``ocm_rollout_reconcile_total`` | counter | controller | reconciles finished (success or error) |
| ``ocm_rollout_reconcile_errors_total`` | counter | controller | reconciles that raised |
| ``ocm_rollout_reconcile_duration_seconds`` | histogram | controller | time per reconcile |
| ``ocm_rollout_queue_depth`` | gauge | controller | keys waiting in the controller's work queue |
| ``ocm_rollout_scheduling_duration_seconds`` | histogram | | one placement scheduling pass (pure core) |
| ``ocm_rollout_rollout_clusters`` | gauge | kind, namespace, name, placement, status | clusters per rollout status, per rolled-out object (ManifestWorkReplicaSet or ClusterManagementAddOn) and placement |
| ``ocm_rollout_validation_results_total`` | counter | kind, namespace, name, placement, check, result | a verified rollout's results recorded on the clusters: each metric measurement (``result`` its phase: Successful, Failed, Inconclusive, Error), each check's final phase when a cluster's verdict is reached, and the plugin's final answers (``check`` ``plugin:<name>``) |
| ``ocm_rollout_leader`` | gauge | lease | 1 while this process holds the Lease (or runs without election), else 0 |
| ``ocm_rollout_leader_transitions_total`` | counter | lease, change | times this process became (``acquired``) or stopped being (``lost``, ``released``) the leader |
| ``ocm_rollout_build_info`` | gauge | version | always 1 |

plus the standard ``process_*`` and ``python_*`` collectors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)

from ocm_rollout.api import constants

PREFIX: Final = "ocm_rollout_"

# The per-cluster rollout statuses of the rollout planner (docs/behaviour/rollout.md / docs/behaviour/mwrs.md section 7).
# The planner's statuses and a verified rollout's Validating.
ROLLOUT_STATUSES: Final = (*constants.ROLLOUT_STATUSES, constants.ROLLOUT_STATUS_VALIDATING)

REGISTRY: Final = CollectorRegistry(auto_describe=True)
process_collector.ProcessCollector(registry=REGISTRY)
platform_collector.PlatformCollector(registry=REGISTRY)
gc_collector.GCCollector(registry=REGISTRY)

_RECONCILE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

RECONCILE_TOTAL: Final = Counter(
    "ocm_rollout_reconcile_total", "Reconciles finished, by controller.", ["controller"], registry=REGISTRY
)
RECONCILE_ERRORS: Final = Counter(
    "ocm_rollout_reconcile_errors_total",
    "Reconciles that ended with an error, by controller.",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_DURATION: Final = Histogram(
    "ocm_rollout_reconcile_duration_seconds",
    "Time taken by one reconcile, by controller.",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
QUEUE_DEPTH: Final = Gauge(
    "ocm_rollout_queue_depth", "Keys waiting in a controller's work queue.", ["controller"], registry=REGISTRY
)
SCHEDULING_DURATION: Final = Histogram(
    "ocm_rollout_scheduling_duration_seconds",
    "Time taken by one placement scheduling pass.",
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
ROLLOUT_CLUSTERS: Final = Gauge(
    "ocm_rollout_rollout_clusters",
    "Clusters per rollout status, per rolled-out object and placement.",
    ["kind", "namespace", "name", "placement", "status"],
    registry=REGISTRY,
)
VALIDATION_RESULTS: Final = Counter(
    "ocm_rollout_validation_results",
    "Results of a verified rollout's checks recorded on clusters (measurements, final check phases, plugin answers).",
    ["kind", "namespace", "name", "placement", "check", "result"],
    registry=REGISTRY,
)
LEADER: Final = Gauge(
    "ocm_rollout_leader",
    "1 while this process is the leader (holds the Lease, or runs without leader election).",
    ["lease"],
    registry=REGISTRY,
)
LEADER_TRANSITIONS: Final = Counter(
    "ocm_rollout_leader_transitions_total",
    "Times this process became or stopped being the leader.",
    ["lease", "change"],
    registry=REGISTRY,
)
BUILD_INFO: Final = Gauge("ocm_rollout_build_info", "Build information; always 1.", ["version"], registry=REGISTRY)


def _version() -> str:
    try:
        return metadata.version("ocm-rollout")
    except metadata.PackageNotFoundError:
        return "unknown"


BUILD_INFO.labels(version=_version()).set(1)


# -- reconciles and queues ------------------------------------------------------------------


def on_reconcile(controller: str, seconds: float, error: BaseException | None) -> None:
    """Record one finished reconcile (the ``ControllerContext.on_reconcile`` hook)."""
    RECONCILE_TOTAL.labels(controller=controller).inc()
    RECONCILE_DURATION.labels(controller=controller).observe(max(seconds, 0.0))
    errors = RECONCILE_ERRORS.labels(controller=controller)  # exported at 0 from the first reconcile
    if error is not None:
        errors.inc()


@contextmanager
def reconcile_timer(controller: str) -> Iterator[None]:
    """Time the enclosed reconcile; an exception counts as an error and propagates."""
    started = time.monotonic()
    try:
        yield
    except BaseException as exc:
        on_reconcile(controller, time.monotonic() - started, exc)
        raise
    on_reconcile(controller, time.monotonic() - started, None)


def on_queue_depth(controller: str, depth: int) -> None:
    """Set a work queue's depth (the ``ControllerContext.on_queue_depth`` hook)."""
    QUEUE_DEPTH.labels(controller=controller).set(max(depth, 0))


# -- scheduling -----------------------------------------------------------------------------


def observe_scheduling(seconds: float) -> None:
    SCHEDULING_DURATION.observe(max(seconds, 0.0))


@contextmanager
def scheduling_timer() -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        observe_scheduling(time.monotonic() - started)


# -- rollout progress -----------------------------------------------------------------------

_rollout_lock = threading.Lock()
# (kind, namespace, name) -> placements with series, so that stale series can be removed.
_rollout_series: dict[tuple[str, str, str], set[str]] = {}


def set_rollout_clusters(kind: str, namespace: str, name: str, placement: str, counts: Mapping[str, int]) -> None:
    """Publish how many clusters of ``placement`` are in each rollout status for one object.

    Every status of ``ROLLOUT_STATUSES`` gets a series (0 when absent from ``counts``), so a
    cluster moving from one status to another never leaves a stale value behind.
    """
    unknown = set(counts) - set(ROLLOUT_STATUSES)
    if unknown:
        raise ValueError(f"unknown rollout status(es): {', '.join(sorted(unknown))}")
    with _rollout_lock:
        _rollout_series.setdefault((kind, namespace, name), set()).add(placement)
        for status in ROLLOUT_STATUSES:
            ROLLOUT_CLUSTERS.labels(kind, namespace, name, placement, status).set(counts.get(status, 0))


def set_rollout_placements(kind: str, namespace: str, name: str, placements: set[str] | frozenset[str]) -> None:
    """Drop the series of placements the object no longer references."""
    with _rollout_lock:
        known = _rollout_series.get((kind, namespace, name), set())
        for placement in sorted(known - set(placements)):
            for status in ROLLOUT_STATUSES:
                ROLLOUT_CLUSTERS.remove(kind, namespace, name, placement, status)
            known.discard(placement)


def forget_rollout(kind: str, namespace: str, name: str) -> None:
    """Drop every series of a deleted object."""
    with _rollout_lock:
        for placement in sorted(_rollout_series.pop((kind, namespace, name), set())):
            for status in ROLLOUT_STATUSES:
                ROLLOUT_CLUSTERS.remove(kind, namespace, name, placement, status)


def count_validation_result(kind: str, namespace: str, name: str, placement: str, check: str, result: str) -> None:
    """One result of a verified rollout's check, recorded on a cluster (``ocm_rollout_validation_results_total``)."""
    VALIDATION_RESULTS.labels(kind, namespace, name, placement, check, result).inc()


# -- leadership -----------------------------------------------------------------------------


def set_leader(lease: str, leading: bool, *, change: str | None = None) -> None:
    """``lease`` is ``namespace/name`` (or ``none`` without leader election)."""
    LEADER.labels(lease=lease).set(1 if leading else 0)
    if change is not None:
        LEADER_TRANSITIONS.labels(lease=lease, change=change).inc()


# -- exposition -----------------------------------------------------------------------------


def render() -> tuple[bytes, str]:
    """The text exposition of every metric, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def sample(name: str, labels: Mapping[str, str] | None = None) -> float | None:
    """The current value of one sample (for tests and the CLI)."""
    return REGISTRY.get_sample_value(name, dict(labels or {}))
