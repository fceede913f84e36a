"""The dashboard's placement page: one Placement, its decisions, and why every other cluster is out.

``placement_page`` takes the hub's objects as the watch caches hold them (wire JSON) and returns
the page's JSON:

- what the Placement asks (``spec``, a short summary) and what its status says (``conditions``,
  ``selected``, ``decisionGroups``);
- its PlacementDecision pages as they are stored, grouped by decision group (``groups``);
- what the scheduler makes of it *now*: every prioritizer's scores and the totals (``scores``),
  the spread terms' topologies (``spread``), and for every known cluster it does not select, the
  reason in words (``notSelected``, the first ``NOT_SELECTED_LIMIT`` by name, and
  ``notSelectedTotal``).

The second part runs the placement controller's own pure scheduler (``schedule``) on a
``Snapshot`` built from the given lists, as the debug endpoint does (the scheduling-disable
annotation is ignored and only noted in ``warnings``). What the scheduler reports as a failure
(an invalid Placement, no bound cluster set, a misconfigured predicate or prioritizer) goes to
``error``; the rest of the page is still filled.

Pure: no I/O, the clock is ``now``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1beta1 import ClusterSelector, Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.meta import InvalidObject, LabelSelectorRequirement, OCMObject, SelectorError
from ocm_rollout.cli.dashboard.fast_wire import obj as _obj
from ocm_rollout.cli.dashboard.fast_wire import objs as _objs
from ocm_rollout.cli.view.sim_view import natural_key
from ocm_rollout.controllers.common.quantity import QuantityError, approximate_float
from ocm_rollout.controllers.common.wire import (
    as_list,
    as_str,
    format_time,
    labels_of,
    mapping_at,
    mappings_in,
    name_of,
    namespace_of,
    parse_time,
)
from ocm_rollout.controllers.placement.cel import CelCompileError, CelSelector, compile_all
from ocm_rollout.controllers.placement.explain import aggregated_scores, spread_json
from ocm_rollout.controllers.placement.filters import PREDICATE, TAINT_TOLERATION, WARNING, taint_tolerated
from ocm_rollout.controllers.placement.prioritizers import BALANCE, prioritizer_weights, uses_addon_scores
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, schedule, skip_reason
from ocm_rollout.controllers.placement.snapshot import (
    ZERO_TIME,
    ClusterView,
    ScoreView,
    SetResolutionError,
    Snapshot,
    TaintView,
)
from ocm_rollout.controllers.placement.spread import SpreadResult, SpreadTerm

JSON = dict[str, Any]
T = TypeVar("T", bound=OCMObject)

# The label with a page's position; OCM's pages carry none, so the ``-decision-<k>`` suffix of
# the page's name counts when the label is missing.
DECISION_INDEX_LABEL = "cluster.open-cluster-management.io/decision-index"
NOT_SELECTED_LIMIT = 200
_PAGE_NUMBER = re.compile(r"-decision-(\d+)$")
_GO_INT = re.compile(r"^[+-]?[0-9]+$")
# Satisfied reasons that mean the Placement can select nothing as configured.
_UNBOUND_REASONS = (constants.REASON_NO_MANAGED_CLUSTER_SET_BINDINGS, constants.REASON_NO_INTERSECTION)

# Machine-readable stage of a notSelected entry (the front end may group by it).
STAGE_CLUSTER_SET = "clusterSet"
STAGE_DELETING = "deleting"
STAGE_PREDICATE = "predicate"
STAGE_TAINT = "taint"
STAGE_SPREAD = "spread"
STAGE_SCORE = "score"
STAGE_COUNT = "numberOfClusters"
STAGE_ERROR = "error"


def placement_page(
    placement: Mapping[str, Any],
    decisions: Sequence[Mapping[str, Any]],
    clusters: Sequence[Mapping[str, Any]],
    cluster_sets: Sequence[Mapping[str, Any]],
    bindings: Sequence[Mapping[str, Any]],
    scores: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
) -> JSON:
    """The placement page's JSON (see the module's docstring).

    ``decisions`` may be every PlacementDecision of the hub (the Balance prioritizer counts the
    other placements' decisions, as the controller does) or only this Placement's; the page's
    ``groups`` keep those labelled with this Placement in its namespace. ``bindings`` may hold
    every namespace's ManagedClusterSetBindings; only the Placement's namespace counts.
    ``scores`` are AddOnPlacementScores. An object of the lists that does not validate is left
    out, as the controller leaves it out, and named in ``warnings``.
    """
    namespace, name = namespace_of(placement), name_of(placement)
    own = [d for d in decisions if _is_page_of(d, namespace, name)]
    status = mapping_at(placement, "status")
    selected = status.get("numberOfSelectedClusters")
    page: JSON = {
        "namespace": namespace,
        "name": name,
        "spec": spec_summary(placement),
        "conditions": conditions_of(placement),
        "selected": selected if _is_int(selected) else 0,
        "decisionGroups": status_groups(placement),
        "groups": page_groups(own),
        "scores": None,
        "spread": None,
        "notSelected": [],
        "notSelectedTotal": 0,
        "error": None,
        "warnings": [],
    }
    page.update(_scheduled(placement, own, decisions, clusters, cluster_sets, bindings, scores, now))
    return page


# --------------------------------------------------------------------------------------------
# What is stored: the spec, the status and the decision pages
# --------------------------------------------------------------------------------------------


def spec_summary(placement: Mapping[str, Any]) -> JSON:
    """The parts of the spec the page shows, read from the wire form (so an invalid Placement
    still has a summary): missing fields read as their defaults."""
    spec = mapping_at(placement, "spec")
    number = spec.get("numberOfClusters")
    group_strategy = mapping_at(spec, "decisionStrategy", "groupStrategy")
    per_group = group_strategy.get("clustersPerDecisionGroup")
    terms = mappings_in(mapping_at(spec, "spreadPolicy").get("spreadConstraints"))
    return {
        "numberOfClusters": number if _is_int(number) else None,
        "clusterSets": [as_str(s) for s in as_list(spec.get("clusterSets"))],
        "predicates": len(as_list(spec.get("predicates"))),
        "tolerations": len(as_list(spec.get("tolerations"))),
        "prioritizerMode": as_str(mapping_at(spec, "prioritizerPolicy").get("mode")) or constants.PRIORITIZER_MODE_ADDITIVE,
        "prioritizers": len(as_list(mapping_at(spec, "prioritizerPolicy").get("configurations"))),
        "spreadPolicy": bool(terms),
        "spreadTerms": len(terms),
        "decisionGroups": [as_str(g.get("groupName")) for g in mappings_in(group_strategy.get("decisionGroups"))],
        "clustersPerDecisionGroup": per_group if isinstance(per_group, str | int) and not isinstance(per_group, bool) else "100%",
        "sortBy": as_str(spec.get("sortBy")) or "ClusterName",
    }


def conditions_of(obj: Mapping[str, Any]) -> list[JSON]:
    """The status conditions as stored, in order, with the five fields the page shows."""
    return [
        {
            "type": as_str(c.get("type")),
            "status": as_str(c.get("status")),
            "reason": as_str(c.get("reason")),
            "message": as_str(c.get("message")),
            "lastTransitionTime": as_str(c.get("lastTransitionTime")) or None,
        }
        for c in mappings_in(mapping_at(obj, "status").get("conditions"))
    ]


def status_groups(placement: Mapping[str, Any]) -> list[JSON]:
    """``status.decisionGroups`` as the Placement reports them."""
    out = []
    for group in mappings_in(mapping_at(placement, "status").get("decisionGroups")):
        index, count = group.get("decisionGroupIndex"), group.get("clusterCount")
        out.append(
            {
                "groupIndex": index if _is_int(index) else 0,
                "groupName": as_str(group.get("decisionGroupName")),
                "decisions": [as_str(d) for d in as_list(group.get("decisions"))],
                "clustersCount": count if _is_int(count) else 0,
            }
        )
    return out


def page_groups(pages: Iterable[Mapping[str, Any]]) -> list[JSON]:
    """The pages grouped by their decision-group labels, groups by index then name (a page whose
    index label is not an integer goes to a group of index None, last), pages by their position
    (the decision-index label, else the ``-decision-<k>`` suffix of the name, else the name)."""
    buckets: dict[tuple[int | None, str], list[JSON]] = defaultdict(list)
    for page in pages:
        labels = labels_of(page)
        raw = labels.get(constants.LABEL_DECISION_GROUP_INDEX, "")
        group_index = int(raw) if _GO_INT.match(raw) else None
        clusters = [as_str(d.get("clusterName")) for d in mappings_in(mapping_at(page, "status").get("decisions"))]
        buckets[(group_index, labels.get(constants.LABEL_DECISION_GROUP_NAME, ""))].append(
            {"name": name_of(page), "index": _page_index(page), "clusters": clusters}
        )
    out = []
    for (index, group_name), members in sorted(buckets.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1])):
        members.sort(key=lambda p: (p["index"] is None, p["index"] or 0, natural_key(p["name"])))
        out.append({"index": index, "name": group_name, "pages": members, "count": sum(len(p["clusters"]) for p in members)})
    return out


def _page_index(page: Mapping[str, Any]) -> int | None:
    raw = labels_of(page).get(DECISION_INDEX_LABEL, "")
    if _GO_INT.match(raw):
        return int(raw)
    found = _PAGE_NUMBER.search(name_of(page))
    return int(found.group(1)) if found else None


def _is_page_of(decision: Mapping[str, Any], namespace: str, name: str) -> bool:
    return namespace_of(decision) == namespace and labels_of(decision).get(constants.LABEL_PLACEMENT) == name


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------
# The scheduler's answer
# --------------------------------------------------------------------------------------------


def cluster_view(obj: Mapping[str, Any]) -> ClusterView:
    """The scheduler's view of a stored ManagedCluster, read straight from its JSON.

    It holds what ``ClusterView.of(ManagedCluster.parse(obj), source=obj)`` holds (the
    controller's way), without validating the whole object: at 2,000 clusters validation alone
    would cost about 200 ms per page. A field that would not validate reads as missing (an
    unreadable quantity is no resource, an unreadable ``timeAdded`` is Go's zero time).
    """
    metadata, status = _obj(obj.get("metadata")), _obj(obj.get("status"))
    allocatable, capacity = _obj(status.get("allocatable")), _obj(status.get("capacity"))
    resources: dict[str, float] = {}
    for resource in ("cpu", "memory"):
        if resource in allocatable and resource in capacity:
            try:
                resources[resource] = approximate_float(str(allocatable[resource]))
            except QuantityError:
                continue
    claims: dict[str, str] = {}
    for claim in _objs(status.get("clusterClaims")):
        claim_name = claim.get("name")
        if isinstance(claim_name, str):
            claims[claim_name] = as_str(claim.get("value"))
    taints = tuple(
        TaintView(
            as_str(t.get("key")),
            as_str(t.get("value")),
            as_str(t.get("effect")),
            parse_time(t.get("timeAdded")) or ZERO_TIME,
        )
        for t in _objs(_obj(obj.get("spec")).get("taints"))
    )
    labels = _obj(metadata.get("labels"))
    return ClusterView(
        model=None,
        source=obj,
        name=as_str(metadata.get("name")),
        labels={str(k): str(v) for k, v in labels.items()},
        claims=claims,
        taints=taints,
        deleting=metadata.get("deletionTimestamp") is not None,
        resources=resources,
    )




def _parse_all(model: type[T], objects: Iterable[Mapping[str, Any]], warnings: list[str]) -> list[T]:
    out = []
    for obj in objects:
        try:
            out.append(model.parse(obj))
        except InvalidObject:
            where = "/".join(p for p in (namespace_of(obj), name_of(obj)) if p)
            warnings.append(f"ignored an invalid {model.KIND.kind} {where!r}")
    return out


def _needs_balance(placement: Placement) -> bool:
    weights, _ = prioritizer_weights(placement.spec.prioritizer_policy)
    return any(
        key.type == constants.SCORE_COORDINATE_BUILTIN and key.built_in == BALANCE and weight != 0
        for key, weight in weights
    )


def _uses_cel(placement: Placement) -> bool:
    return any(
        p.required_cluster_selector is not None
        and p.required_cluster_selector.cel_selector is not None
        and p.required_cluster_selector.cel_selector.cel_expressions
        for p in placement.spec.predicates
    )


def other_decisions(decisions: Iterable[Mapping[str, Any]], namespace: str, name: str) -> Counter[str]:
    """Decisions per cluster over every PlacementDecision except the Placement's own pages
    (what the Balance prioritizer weighs, ``Snapshot.balance_counts``), read from the JSON."""
    counts: Counter[str] = Counter()
    for page in decisions:
        if _is_page_of(page, namespace, name):
            continue
        for decision in _objs(_obj(page.get("status")).get("decisions")):
            cluster = decision.get("clusterName")
            if isinstance(cluster, str) and cluster:
                counts[cluster] += 1
    return counts


def score_views(placement: Placement, scores: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], ScoreView]:
    """The AddOnPlacementScores the pass can read, keyed (cluster namespace, name) as the
    ``Snapshot`` keys them: those an AddOn prioritizer names, or every one when a CEL predicate
    may read any (``managedCluster.scores(name)``). Read from the JSON: an item whose value is
    not an integer is left out."""
    every = _uses_cel(placement)
    names = set(uses_addon_scores(placement))
    out: dict[tuple[str, str], ScoreView] = {}
    if not every and not names:
        return out
    for score in scores:
        score_name = name_of(score)
        if not every and score_name not in names:
            continue
        status = mapping_at(score, "status")
        items = tuple(
            (as_str(item.get("name")), item["value"])
            for item in mappings_in(status.get("scores"))
            if _is_int(item.get("value"))
        )
        out[(namespace_of(score), score_name)] = ScoreView(parse_time(status.get("validUntil")), items)
    return out


class PageSnapshot(Snapshot):
    """The ``Snapshot`` of one Placement's pass, with its fleet-sized inputs read from JSON.

    Clusters are ``cluster_view``s, AddOnPlacementScores ``score_view``s, and of the other
    placements' decisions only their count per cluster is kept (``other_decisions``, what
    Balance reads): validating thousands of these objects, and the garbage they leave for the
    collector, would cost more than the whole pass. The Placement's own decision pages, the
    ManagedClusterSets and the bindings are validated models, as the controller has them.
    ``balance_counts`` answers for this Placement only.
    """

    def __init__(
        self,
        clusters: Iterable[ClusterView],
        cluster_sets: Iterable[ManagedClusterSet],
        bindings: Iterable[ManagedClusterSetBinding],
        own_decisions: Iterable[PlacementDecision],
        others: Counter[str],
        scores: Mapping[tuple[str, str], ScoreView],
    ) -> None:
        super().__init__(clusters, cluster_sets, bindings, own_decisions)
        self.scores.update(scores)
        self._others = +others

    def balance_counts(self, namespace: str, placement: str) -> Counter[str]:
        return self._others


def snapshot_for(
    placement: Placement,
    own: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    clusters: Sequence[Mapping[str, Any]],
    cluster_sets: Sequence[Mapping[str, Any]],
    bindings: Sequence[Mapping[str, Any]],
    scores: Sequence[Mapping[str, Any]],
    warnings: list[str],
) -> Snapshot:
    """The snapshot this Placement's pass reads, with only what the pass can look at: the
    bindings of its namespace, the other placements' decisions only when Balance counts, the
    scores only when an AddOn prioritizer or a CEL predicate reads them."""
    return PageSnapshot(
        [cluster_view(c) for c in clusters if name_of(c)],
        _parse_all(ManagedClusterSet, cluster_sets, warnings),
        _parse_all(ManagedClusterSetBinding, (b for b in bindings if namespace_of(b) == placement.namespace), warnings),
        _parse_all(PlacementDecision, own, warnings),
        other_decisions(decisions, placement.namespace, placement.name) if _needs_balance(placement) else Counter(),
        score_views(placement, scores),
    )


def _scheduled(
    placement: Mapping[str, Any],
    own: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    clusters: Sequence[Mapping[str, Any]],
    cluster_sets: Sequence[Mapping[str, Any]],
    bindings: Sequence[Mapping[str, Any]],
    scores: Sequence[Mapping[str, Any]],
    now: datetime,
) -> JSON:
    """The page's fields that come from running the scheduler."""
    warnings: list[str] = []
    try:
        model = Placement.parse(placement)
    except InvalidObject as exc:
        return {"error": str(exc)}
    snapshot = snapshot_for(model, own, decisions, clusters, cluster_sets, bindings, scores, warnings)
    skipped = skip_reason(model)
    if skipped is not None:
        warnings.append(f"{skipped}; the page shows what the scheduler would decide")
    try:
        result = schedule(model, snapshot, now, honour_skip=False)
    except InvalidObject as exc:  # a CEL predicate read a cluster that does not validate
        return {"error": str(exc), "warnings": warnings}
    warnings.extend(w.message for w in result.warnings)
    if result.status.code == WARNING and result.status.message:
        warnings.append(result.status.message)
    listed, total = not_selected(model, snapshot, result, now)
    return {
        "scores": scores_json(result),
        "spread": None if result.spread is None else spread_json(result.spread),
        "notSelected": listed,
        "notSelectedTotal": total,
        "error": schedule_error(result),
        "warnings": warnings,
    }


def scores_json(result: ScheduleResult) -> JSON:
    """Each prioritizer's name, weight and score per cluster, and the weighted totals (highest
    first) of the clusters that passed the filters."""
    return {
        "aggregated": aggregated_scores(result.scores),
        "prioritizers": [
            {"name": p.name, "weight": p.weight, "scores": dict(sorted(p.scores.items()))}
            for p in result.prioritizer_results
        ],
    }


def schedule_error(result: ScheduleResult) -> str | None:
    """What keeps the Placement from selecting as asked: an aborted pass, a misconfiguration, or
    no ManagedClusterSet bound to its namespace (or none of those it names)."""
    if result.aborted is not None:
        return result.aborted
    if result.status.is_error:
        plugin = result.status.plugin
        return f"{plugin}: {result.status.message}" if plugin else result.status.message
    for condition in result.conditions:
        if condition.type == constants.CONDITION_PLACEMENT_SATISFIED and condition.reason in _UNBOUND_REASONS:
            return condition.message
    return None


# --------------------------------------------------------------------------------------------
# Why a cluster is not selected
# --------------------------------------------------------------------------------------------


def not_selected(
    placement: Placement, snapshot: Snapshot, result: ScheduleResult, now: datetime, limit: int = NOT_SELECTED_LIMIT
) -> tuple[list[JSON], int]:
    """``({"name", "stage", "reason"}`` for the first ``limit`` known clusters the pass does not
    select, in natural name order; how many there are in all).

    The stage is where the cluster dropped out, in the scheduler's order: the cluster sets
    (``clusterSet``, or ``deleting``), the predicates, the taints, then selection (``spread``,
    ``score``, ``numberOfClusters``); ``error`` when the pass stopped before reaching the
    cluster's stage. Only the clusters listed are explained (a CEL predicate, for one, is
    evaluated again for each).
    """
    selected = set(result.selected)
    names = sorted((n for n in snapshot.clusters if n not in selected), key=natural_key)
    explain = _Explainer(placement, snapshot, result, now)
    return [{"name": n, **explain.cluster(snapshot.clusters[n])} for n in names[:limit]], len(names)


def _entry(stage: str, reason: str) -> JSON:
    return {"stage": stage, "reason": reason}


class _Explainer:
    """Explains the filter and selection stages for one pass; built once, asked per cluster."""

    def __init__(self, placement: Placement, snapshot: Snapshot, result: ScheduleResult, now: datetime) -> None:
        self.placement = placement
        self.snapshot = snapshot
        self.result = result
        self.now = now
        self.current = snapshot.current_decisions(placement.namespace, placement.name)
        self.error = schedule_error(result) if result.aborted or result.status.is_error else None
        self.available = set(result.available)
        self.passed = {f.name.rsplit(",", 1)[-1]: set(f.clusters) for f in result.filter_results}
        self._bound_sets: dict[str, list[str]] | None = None
        self._predicates: list[Callable[[ClusterView], str | None]] | None = None
        self._blocking: _SpreadBlocks | None = None

    def cluster(self, cluster: ClusterView) -> JSON:
        """Where and why ``cluster`` (not selected) dropped out. An aborted pass (a set whose
        members cannot be computed) reaches no cluster; a filter missing from the pass's filter
        results did not run: the pass stopped before it."""
        name, passed = cluster.name, self.passed
        if self.result.aborted is not None:
            return _entry(STAGE_ERROR, f"not scheduled: {self.error}")
        if name not in self.available:
            return self.cluster_set(cluster)
        if PREDICATE not in passed:
            return _entry(STAGE_ERROR, f"not scheduled: {self.error}")
        if name not in passed[PREDICATE]:
            return _entry(STAGE_PREDICATE, self.predicate(cluster))
        if TAINT_TOLERATION not in passed:
            return _entry(STAGE_ERROR, f"not scheduled: {self.error}")
        if name not in passed[TAINT_TOLERATION]:
            return _entry(STAGE_TAINT, self.taint(cluster))
        if self.error is not None:
            return _entry(STAGE_ERROR, f"not scheduled: {self.error}")
        return self.selection(cluster)

    # -- cluster sets -------------------------------------------------------------------------
    def cluster_set(self, cluster: ClusterView) -> JSON:
        """A cluster outside the available ones: being deleted (in an eligible set), in a bound
        set that spec.clusterSets leaves out, or in no set bound to the namespace."""
        namespace = self.placement.namespace
        sets = self._sets_of().get(cluster.name, [])
        if any(s in self.result.eligible_sets for s in sets):
            return _entry(STAGE_DELETING, "being deleted")
        if sets:
            named = ",".join(self.placement.spec.cluster_sets)
            return _entry(
                STAGE_CLUSTER_SET,
                f"in ManagedClusterSet {', '.join(sets)} bound to namespace {namespace}, "
                f"but not among spec.clusterSets [{named}]",
            )
        return _entry(STAGE_CLUSTER_SET, f"not in a ManagedClusterSet bound to namespace {namespace}")

    def _sets_of(self) -> dict[str, list[str]]:
        """The bound sets of each cluster (a set whose members cannot be computed counts none)."""
        if self._bound_sets is None:
            self._bound_sets = defaultdict(list)
            for set_name in self.result.valid_bindings:
                try:
                    members = self.snapshot.set_members(set_name)
                except SetResolutionError:
                    continue
                for member in members:
                    self._bound_sets[member].append(set_name)
        return self._bound_sets

    # -- predicates ---------------------------------------------------------------------------
    def predicate(self, cluster: ClusterView) -> str:
        """``filtered out by predicate: <the first requirement it fails>`` (with several
        predicates, what each one misses)."""
        if self._predicates is None:
            self._predicates = [
                _predicate_check(p.required_cluster_selector, self.snapshot) for p in self.placement.spec.predicates
            ]
        misses = [check(cluster) or "not matched" for check in self._predicates]
        if len(misses) == 1:
            return f"filtered out by predicate: {misses[0]}"
        return "filtered out by every predicate: " + "; ".join(f"{i + 1}: {m}" for i, m in enumerate(misses))

    # -- taints -------------------------------------------------------------------------------
    def taint(self, cluster: ClusterView) -> str:
        """``taint key=value:Effect not tolerated`` for the first taint not tolerated."""
        tolerations = self.placement.spec.tolerations
        in_decisions = cluster.name in self.current
        for taint in cluster.taints:
            tolerated, _ = taint_tolerated(taint, tolerations, in_decisions, self.now)
            if tolerated:
                continue
            text = f"taint {_taint_text(taint)} not tolerated"
            was, until = taint_tolerated(taint, tolerations, in_decisions, taint.time_added)
            if was and until is not None:
                return f"{text} (its tolerationSeconds ran out at {format_time(until)})"
            if taint.effect == constants.TAINT_EFFECT_NO_SELECT_IF_NEW:
                return f"{text} (the cluster is not among the current decisions)"
            return text
        return "filtered out by TaintToleration"

    # -- selection ----------------------------------------------------------------------------
    def selection(self, cluster: ClusterView) -> JSON:
        """Why a cluster that passed every filter is not selected: a spread term held it back,
        its score is below the selected ones, or numberOfClusters was reached on a tie."""
        result = self.result
        wanted = self.placement.spec.number_of_clusters
        score = result.scores.get(cluster.name, 0)
        reached = wanted is not None and len(result.selected) >= wanted
        if result.spread is not None and not reached:
            if self._blocking is None:
                self._blocking = _SpreadBlocks(result.spread)
            return _entry(STAGE_SPREAD, self._blocking.reason(cluster))
        if result.spread is not None:
            return _entry(
                STAGE_COUNT, f"numberOfClusters ({wanted}) reached; spreadPolicy chose from less used topologies (score {score})"
            )
        lowest = min((result.scores.get(n, 0) for n in result.selected), default=None)
        if lowest is not None and score < lowest:
            return _entry(STAGE_SCORE, f"not among the {wanted} highest scores (score {score}, lowest selected {lowest})")
        return _entry(STAGE_COUNT, f"numberOfClusters ({wanted}) reached (score {score}; equal scores go by name)")


def _predicate_check(
    selector: ClusterSelector | None, snapshot: Snapshot
) -> Callable[[ClusterView], str | None]:
    """A function naming the first part of ``selector`` a cluster fails (None: it matches)."""
    if selector is None:
        return lambda cluster: None
    labels = selector.label_selector.requirements() if selector.label_selector is not None else []
    claims = list(selector.claim_selector.match_expressions) if selector.claim_selector is not None else []
    expressions = selector.cel_selector.cel_expressions if selector.cel_selector is not None else []
    cel: list[tuple[str, CelSelector]] = []
    try:
        cel = [(e, CelSelector(compile_all([e]), snapshot.score_items)) for e in expressions]
    except CelCompileError:
        cel = []

    def check(cluster: ClusterView) -> str | None:
        try:
            for req in labels:
                if not req.matches(cluster.labels):
                    return f"label selector requires {_requirement_text(req)} ({_has(req.key, cluster.labels, 'label')})"
            for req in claims:
                if not req.matches(cluster.claims):
                    return f"claim selector requires {_requirement_text(req)} ({_has(req.key, cluster.claims, 'claim')})"
        except SelectorError:
            return None
        for source, selector_ in cel:
            if not selector_.matches(cluster.cel_value()):
                return f"CEL expression {source!r} is not true"
        if expressions and not cel:
            return "CEL selector does not compile"
        return None

    return check


def _requirement_text(req: LabelSelectorRequirement) -> str:
    if req.operator == "In" and len(req.values) == 1:
        return f"{req.key}={req.values[0]}"
    if req.operator == "In":
        return f"{req.key} in ({','.join(req.values)})"
    if req.operator == "NotIn":
        return f"{req.key} notin ({','.join(req.values)})"
    if req.operator == "Exists":
        return req.key
    return f"!{req.key}"


def _has(key: str, values: Mapping[str, str], what: str) -> str:
    return f"the cluster has {key}={values[key]}" if key in values else f"the cluster has no {what} {key}"


def _taint_text(taint: TaintView) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


class _SpreadBlocks:
    """Which DoNotSchedule term keeps a feasible cluster out once selection stopped.

    From the terms' final topology counts, the same test the selection applies: a cluster
    without the key of a DoNotSchedule term is no candidate; otherwise the first such term
    under which selecting it would make its topology's count exceed the smallest count among
    the topology and its siblings (once it gains one) by more than maxSkew.
    """

    def __init__(self, spread: SpreadResult) -> None:
        self.terms: list[SpreadTerm] = [report.term for report in spread.terms]
        self.count: dict[tuple[str | None, ...], int] = {}
        # per term: the counts of the topologies (with the key) under each parent topology
        self.siblings: list[dict[tuple[str | None, ...], Counter[int]]] = []
        for report in spread.terms:
            by_parent: dict[tuple[str | None, ...], Counter[int]] = defaultdict(Counter)
            for topology in report.topologies:
                self.count[topology.values] = topology.selected
                if topology.values[-1] is not None:
                    by_parent[topology.values[:-1]][topology.selected] += 1
            self.siblings.append(by_parent)

    def reason(self, cluster: ClusterView) -> str:
        values = tuple(term.value(cluster) for term in self.terms)
        for term, value in zip(self.terms, values, strict=True):
            if term.hard and value is None:
                return f"held back by {self._term_text(term)}: the cluster has no {term.key_type.lower()} {term.key}"
        for term in self.terms:
            if not term.hard:
                continue
            place = values[: term.index + 1]
            count = self.count.get(place, 0)
            low = self._min_after(self.siblings[term.index][place[:-1]], count)
            if count + 1 - low > term.max_skew:
                return (
                    f"held back by {self._term_text(term)}: topology {term.key}={place[-1]} has {count} selected, "
                    f"its least used sibling {low}"
                )
        return "held back by spreadPolicy"

    @staticmethod
    def _min_after(hist: Counter[int], count: int) -> int:
        low = min((c for c, n in hist.items() if n > 0), default=count)
        if count == low and hist[count] == 1:
            return count + 1
        return low

    @staticmethod
    def _term_text(term: SpreadTerm) -> str:
        return f"spread term {term.index + 1} (topologyKey {term.key}, DoNotSchedule, maxSkew {term.max_skew})"

