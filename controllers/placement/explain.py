"""What a pass did, as JSON: the debug endpoint's answer (spec §10) and ``--explain``.

Both add ``spread`` (ours) when the Placement has spread terms: every term's topologies and
counts, and how many clusters each term held back; and ``warnings`` (ours) naming the parts of
the spec the scheduler ignored (``warnings.spec_warnings``).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementStatus
from ocm_rollout.api.meta import format_time
from ocm_rollout.controllers.placement.scheduler import ScheduleResult
from ocm_rollout.controllers.placement.spread import SpreadResult

JSON = dict[str, Any]


def debug_placement(placement: Placement) -> JSON:
    """A copy of the Placement keeping only name, namespace, labels and annotations in its
    metadata, with its status emptied."""
    wire = placement.to_wire()
    meta = placement.metadata
    metadata: JSON = {"name": meta.name or "", "namespace": meta.namespace or ""}
    if meta.labels:
        metadata["labels"] = dict(meta.labels)
    if meta.annotations:
        metadata["annotations"] = dict(meta.annotations)
    wire["metadata"] = metadata
    wire["status"] = PlacementStatus().to_wire()
    return wire


def aggregated_scores(scores: dict[str, int]) -> list[JSON]:
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [{"clusterName": name, "score": score} for name, score in ordered]


def spread_json(spread: SpreadResult) -> JSON:
    """Each spread term with its topologies (values of this term and the earlier ones), how many
    candidates each holds and how many were selected, and how many clusters the term held back."""
    terms = []
    for report in spread.terms:
        term = report.term
        terms.append(
            {
                "topologyKey": term.key,
                "topologyKeyType": term.key_type,
                "maxSkew": term.max_skew,
                "whenUnsatisfiable": "DoNotSchedule" if term.hard else "ScheduleAnyway",
                "topologies": [
                    {"values": list(t.values), "candidates": t.candidates, "selected": t.selected}
                    for t in report.topologies
                ],
                "withoutKey": report.without_key,
                "heldBack": report.held_back,
            }
        )
    return {"terms": terms, "heldBack": spread.held_back}


def debug_result(result: ScheduleResult) -> JSON:
    """The debug endpoint's JSON for a pass (empty lists are left out, as Go's omitempty does)."""
    out: JSON = {"placement": debug_placement(result.placement)}
    filters = [{"name": f.name, "filteredClusters": list(f.clusters)} for f in result.filter_results]
    if filters:
        out["filteredPipelineResults"] = filters
    prioritizers = [
        {"name": p.name, "weight": p.weight, "scores": dict(sorted(p.scores.items()))}
        for p in result.prioritizer_results
    ]
    if prioritizers:
        out["prioritizeResults"] = prioritizers
    aggregated = aggregated_scores(result.scores)
    if aggregated:
        out["aggregatedScores"] = aggregated
    if result.spread is not None:
        out["spread"] = spread_json(result.spread)
    if result.warnings:
        out["warnings"] = [w.message for w in result.warnings]
    if result.aborted is not None:
        out["error"] = result.aborted
    return out


def explanation(result: ScheduleResult) -> JSON:
    """The ``--explain`` item of ``ocm-rollout schedule``: the debug fields plus how the cluster
    sets resolved, what was selected and what ended the pass."""
    placement = result.placement
    out: JSON = {
        "apiVersion": "debug.ocm-rollout.io/v1",
        "kind": "PlacementExplanation",
        "metadata": {"name": placement.name, "namespace": placement.namespace},
    }
    if result.skipped is not None:
        out["skipped"] = result.skipped
        return out
    out["clusterSets"] = {
        "validBindings": list(result.valid_bindings),
        "eligibleSets": list(result.eligible_sets),
        "availableClusters": list(result.available),
    }
    out["filteredPipelineResults"] = [
        {"name": f.name, "filteredClusters": list(f.clusters)} for f in result.filter_results
    ]
    out["prioritizeResults"] = [
        {"name": p.name, "weight": p.weight, "scores": dict(sorted(p.scores.items()))}
        for p in result.prioritizer_results
    ]
    out["aggregatedScores"] = aggregated_scores(result.scores)
    if result.spread is not None:
        out["spread"] = spread_json(result.spread)
    out["selectedClusters"] = list(result.selected)
    out["unscheduled"] = result.unscheduled
    out["result"] = {"code": result.status.code, "plugin": result.status.plugin, "message": result.status.message}
    if result.warnings:
        out["warnings"] = [w.message for w in result.warnings]
    if result.aborted is not None:
        out["error"] = result.aborted
    requeue = result.requeue_at()
    if requeue is not None:
        out["requeueAt"] = format_time(requeue)
    return out
