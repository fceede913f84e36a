"""The filter stage: Predicate, then TaintToleration (spec §3), and the toleration requeue (§9).

Each filter receives the survivors of the one before. A filter that receives no cluster returns
at once and validates nothing.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1beta1 import ClusterSelector, Placement, Toleration
from ocm_rollout.controllers.placement.selectors import (
    CompiledSelector,
    SelectorError,
    compile_claim_selector,
    compile_label_selector,
)
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot, TaintView

PREDICATE = constants.PLUGIN_PREDICATE
TAINT_TOLERATION = constants.PLUGIN_TAINT_TOLERATION

SUCCESS = "Success"
WARNING = "Warning"
MISCONFIGURED = constants.REASON_MISCONFIGURED
ERROR = "Error"

FAR_FUTURE = datetime.max.replace(tzinfo=UTC)
FAR_PAST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Status:
    """The outcome of one plugin step (framework.Status): a code, the plugin and a message."""

    code: str = SUCCESS
    plugin: str = ""
    message: str = ""

    @property
    def is_error(self) -> bool:
        """Misconfigured and Error both end the pass."""
        return self.code in (MISCONFIGURED, ERROR)


OK = Status()


# --------------------------------------------------------------------------------------------
# Predicate
# --------------------------------------------------------------------------------------------


if TYPE_CHECKING:
    from ocm_rollout.controllers.placement.cel import CelSelector


class CelSelectorError(Exception):
    """A CEL expression of a selector does not compile (the text is cel-go's)."""


class ClusterMatcher:
    """One predicate's requiredClusterSelector: labels AND claims AND every CEL expression."""

    def __init__(self, labels: CompiledSelector, claims: CompiledSelector, cel: CelSelector | None) -> None:
        self.labels = labels
        self.claims = claims
        self.cel = cel

    @property
    def key(self) -> tuple[object, ...] | None:
        """Equal keys select the same clusters of one snapshot; None with CEL (not memoised)."""
        if self.cel is not None:
            return None
        return (self.labels.signature, self.claims.signature)

    def matches(self, cluster: ClusterView) -> bool:
        if not self.labels.matches(cluster.labels):
            return False
        if not self.claims.matches(cluster.claims):
            return False
        return self.cel is None or self.cel.matches(cluster.cel_value())


def build_matcher(selector: ClusterSelector | None, snapshot: Snapshot) -> ClusterMatcher:
    """Compile a cluster selector; raises SelectorError or CelSelectorError."""
    if selector is None:
        selector = ClusterSelector()
    labels = compile_label_selector(selector.label_selector)
    claims = compile_claim_selector(selector.claim_selector)
    expressions = selector.cel_selector.cel_expressions if selector.cel_selector is not None else []
    cel = None
    if expressions:
        cel = _compile_cel(expressions, snapshot)
    return ClusterMatcher(labels, claims, cel)


def _compile_cel(expressions: Sequence[str], snapshot: Snapshot) -> CelSelector:
    # Imported on first use: the CEL modules (celpy, lark, the checker) cost a controller about
    # 8 MB and a tenth of its start-up, and most Placements have no CEL selector.
    from ocm_rollout.controllers.placement.cel import CelCompileError, CelSelector, compile_all

    try:
        return CelSelector(compile_all(expressions), snapshot.score_items)
    except CelCompileError as exc:
        raise CelSelectorError(str(exc)) from None


def predicate_filter(
    placement: Placement, clusters: Sequence[ClusterView], snapshot: Snapshot
) -> tuple[list[ClusterView], Status]:
    """Keep the clusters that at least one predicate matches (all of them without predicates)."""
    predicates = placement.spec.predicates
    if not predicates or not clusters:
        return list(clusters), OK
    matchers = []
    for predicate in predicates:
        try:
            matchers.append(build_matcher(predicate.required_cluster_selector, snapshot))
        except (SelectorError, CelSelectorError) as exc:
            return [], Status(MISCONFIGURED, PREDICATE, str(exc))
    tests = [_test(m, snapshot) for m in matchers]
    return [c for c in clusters if any(test(c) for test in tests)], OK


def _test(matcher: ClusterMatcher, snapshot: Snapshot) -> Callable[[ClusterView], bool]:
    """``matcher.matches``; without CEL through the snapshot's memo of which of its clusters
    the same selector matches (every Placement with that selector, every pass, reads it once)."""
    key = matcher.key
    if key is None:
        return matcher.matches
    members = snapshot.matching(key, matcher.matches)
    known = snapshot.clusters

    def test(cluster: ClusterView) -> bool:
        if known.get(cluster.name) is cluster:
            return cluster.name in members
        return matcher.matches(cluster)

    return test


# --------------------------------------------------------------------------------------------
# TaintToleration
# --------------------------------------------------------------------------------------------


def validate_tolerations(tolerations: Sequence[Toleration]) -> Status:
    for toleration in tolerations:
        if not toleration.key and toleration.operator != "Exists":
            return Status(MISCONFIGURED, TAINT_TOLERATION, "If the key is empty, operator must be Exists.")
        if toleration.operator == "Exists" and toleration.value:
            return Status(
                MISCONFIGURED, TAINT_TOLERATION, "If the operator is Exists, the value should be empty."
            )
    return OK


def _wrap_int64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def toleration_expiry(time_added: datetime, seconds: int) -> datetime:
    """``timeAdded + tolerationSeconds`` with Go's arithmetic (the nanosecond Duration wraps
    around on overflow); beyond Python's datetime range it saturates."""
    nanos = _wrap_int64(seconds * 1_000_000_000)
    micros = nanos // 1000 if nanos >= 0 else -((-nanos) // 1000)
    try:
        return time_added + timedelta(microseconds=micros)
    except OverflowError:
        return FAR_FUTURE if nanos > 0 else FAR_PAST


def _tolerates(toleration: Toleration, taint: TaintView) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", constants.TOLERATION_OP_EQUAL):
        return (toleration.value or "") == taint.value
    return toleration.operator == constants.TOLERATION_OP_EXISTS


def taint_tolerated(
    taint: TaintView, tolerations: Sequence[Toleration], in_decisions: bool, now: datetime
) -> tuple[bool, datetime | None]:
    """Whether the taint is tolerated, and when the toleration that tolerates it runs out."""
    if taint.effect == constants.TAINT_EFFECT_PREFER_NO_SELECT:
        return True, None
    if taint.effect == constants.TAINT_EFFECT_NO_SELECT_IF_NEW and in_decisions:
        return True, None
    for toleration in tolerations:
        if not _tolerates(toleration, taint):
            continue
        if toleration.toleration_seconds is None:
            return True, None
        expiry = toleration_expiry(taint.time_added, toleration.toleration_seconds)
        if now < expiry:
            return True, expiry
    return False, None


def cluster_tolerated(
    cluster: ClusterView, tolerations: Sequence[Toleration], in_decisions: bool, now: datetime
) -> tuple[bool, datetime | None]:
    """Whether every taint of the cluster is tolerated, and the earliest expiry involved."""
    earliest: datetime | None = None
    for taint in cluster.taints:
        tolerated, expiry = taint_tolerated(taint, tolerations, in_decisions, now)
        if not tolerated:
            return False, None
        if expiry is not None and (earliest is None or expiry < earliest):
            earliest = expiry
    return True, earliest


def taint_toleration_filter(
    placement: Placement, clusters: Sequence[ClusterView], current: set[str], now: datetime
) -> tuple[list[ClusterView], Status]:
    if not clusters:
        return list(clusters), OK
    tolerations = placement.spec.tolerations
    status = validate_tolerations(tolerations)
    if status.is_error:
        return [], status
    kept = []
    for cluster in clusters:
        if not cluster.taints or cluster_tolerated(cluster, tolerations, cluster.name in current, now)[0]:
            kept.append(cluster)
    return kept, OK


def toleration_requeue_time(
    placement: Placement, snapshot: Snapshot, current: set[str], now: datetime
) -> datetime | None:
    """The earliest future expiry of a toleration that keeps a current decision tolerated."""
    earliest: datetime | None = None
    for name in current:
        cluster = snapshot.clusters.get(name)
        if cluster is None:
            continue
        tolerated, expiry = cluster_tolerated(cluster, placement.spec.tolerations, True, now)
        if tolerated and expiry is not None and (earliest is None or expiry < earliest):
            earliest = expiry
    return earliest
