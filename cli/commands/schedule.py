"""`ocm-rollout schedule`: schedule Placements offline, from files, as the controller would.

    ocm-rollout schedule -f PATH [-f PATH ...] [--now RFC3339] [-o json|yaml] [--explain]

Reads ManagedClusters, ManagedClusterSets, ManagedClusterSetBindings, Placements, existing
PlacementDecisions and AddOnPlacementScores (files or directories; multi-document YAML or JSON;
``kind: List`` expanded; ``-`` reads stdin). Every Placement is scheduled once against that
snapshot at ``--now`` (default: the current time). The output is one ``v1`` ``List``: per
Placement, sorted by namespace/name, the Placement with its new ``.status``, followed by the
PlacementDecisions it would own (name, namespace, labels, ``status.decisions``). ``--explain``
adds, after each Placement's decisions, a ``PlacementExplanation`` item with the cluster-set
resolution, every filter's output and every prioritizer's scores.

Objects are read as an API server may have stored them: a Placement created before a CRD rule
existed is scheduled as the controller would schedule it, not rejected. A ``configurations``
entry without ``scoreCoordinate``, or a ``clustersPerDecisionGroup`` outside the CRD's pattern
(``"25"``, ``"150%"``, ``"1e400%"``), is handled as docs/behaviour/scheduling.md §4 and §6 say: a group length,
or a ``PlacementMisconfigured`` condition with the scheduler's message.

Exit status: 0 on success (a misconfigured Placement is not an error: it shows in its
conditions); 1 when an input cannot be read or parsed (the message names the file and the
document); 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import AddOnPlacementScore
from ocm_rollout.api.cluster_v1beta1 import Placement, PlacementDecision
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet, ManagedClusterSetBinding
from ocm_rollout.api.meta import InvalidObject, OCMObject, format_time
from ocm_rollout.controllers.placement.decisions import desired_decisions
from ocm_rollout.controllers.placement.explain import explanation
from ocm_rollout.controllers.placement.scheduler import ScheduleResult, schedule
from ocm_rollout.controllers.placement.snapshot import ClusterView, Snapshot

EXIT_INPUT = 1
EXIT_USAGE = 2

KINDS: dict[str, type[OCMObject]] = {
    model.KIND.kind: model
    for model in (
        ManagedCluster,
        ManagedClusterSet,
        ManagedClusterSetBinding,
        Placement,
        PlacementDecision,
        AddOnPlacementScore,
    )
}
_SUFFIXES = (".yaml", ".yml", ".json")


class InputError(Exception):
    """An input that cannot be read; the message names the file and the document."""


@dataclass
class Inputs:
    objects: dict[str, dict[tuple[str, str], Any]] = field(default_factory=lambda: {k: {} for k in KINDS})
    warnings: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Any]:
        return [self.objects[kind][key] for key in sorted(self.objects[kind])]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "schedule",
        help="schedule Placements offline from YAML/JSON files, as the placement controller would",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="PATH",
        help="a file or directory of Kubernetes objects (repeatable; - reads stdin)",
    )
    parser.add_argument("--now", metavar="RFC3339", help="the scheduling clock (default: the current time)")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml", help="output format (default yaml)")
    parser.add_argument("--explain", action="store_true", help="add the filter and score breakdown per Placement")
    parser.set_defaults(func=run)


def parse_now(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"--now: {text!r} is not an RFC 3339 time (e.g. 2024-05-01T12:00:00Z)") from None
    if parsed.tzinfo is None:
        raise ValueError(f"--now: {text!r} has no time zone (add Z or an offset such as +02:00)")
    return parsed.astimezone(UTC)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _files(path: str) -> list[tuple[str, str]]:
    """(display name, text) of every file behind PATH."""
    if path == "-":
        return [("<stdin>", sys.stdin.read())]
    target = Path(path)
    if target.is_dir():
        files = sorted(p for p in target.iterdir() if p.is_file() and p.suffix in _SUFFIXES)
    elif target.exists():
        files = [target]
    else:
        raise InputError(f"{path}: no such file or directory")
    out = []
    for file in files:
        try:
            out.append((str(file), file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{file}: cannot be read: {exc}") from None
    return out


def _documents(name: str, text: str) -> Iterator[tuple[str, Any]]:
    """(where, document) for every document of a file, ``kind: List`` expanded."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InputError(f"{name}: not valid YAML or JSON{where}: {getattr(exc, 'problem', None) or exc}") from None
    for index, doc in enumerate(docs, start=1):
        where = f"{name}: document {index}"
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected an object, got {type(doc).__name__}")
        if isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise InputError(f"{where}: items must be a list")
            for item_index, item in enumerate(items):
                if not isinstance(item, dict):
                    raise InputError(f"{where}, items[{item_index}]: expected an object")
                yield f"{where}, items[{item_index}]", item
        else:
            yield where, doc


def _normalize_json(value: Any) -> Any:
    """YAML timestamps and dates back to text, as they would arrive from the API in JSON."""
    if isinstance(value, dict):
        return {str(k): _normalize_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_json(v) for v in value]
    if isinstance(value, datetime):
        return format_time(value)
    if hasattr(value, "isoformat") and not isinstance(value, str | int | float | bool):
        return value.isoformat()
    return value


def read_inputs(paths: list[str]) -> Inputs:
    inputs = Inputs()
    for path in paths:
        for name, text in _files(path):
            for where, doc in _documents(name, text):
                _add(inputs, where, _normalize_json(doc))
    return inputs


def _add(inputs: Inputs, where: str, doc: dict[str, Any]) -> None:
    kind = doc.get("kind")
    api_version = doc.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{where}: the object has no kind")
    model = KINDS.get(kind)
    raw_meta = doc.get("metadata")
    metadata: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    label = f"{kind} {metadata.get('name', '')!s}".strip()
    if model is None:
        inputs.warnings.append(f"{where}: ignoring {label} (not a kind the scheduler reads)")
        return
    if api_version not in (None, "", model.KIND.api_version):
        raise InputError(f"{where} ({label}): apiVersion {api_version} is not served; use {model.KIND.api_version}")
    try:
        obj = model.parse(doc)
    except InvalidObject as exc:
        raise InputError(f"{where} ({label}): {exc}") from None
    if not obj.name:
        raise InputError(f"{where} ({label}): metadata.name is required")
    namespaced = model.KIND.namespaced
    namespace = obj.namespace
    if namespaced and not namespace:
        namespace = "default"
        obj.metadata.namespace = namespace
    if not namespaced and namespace:
        obj.metadata.namespace = None
        namespace = ""
    key = (namespace, obj.name)
    if key in inputs.objects[kind]:
        inputs.warnings.append(f"{where}: {label} appears more than once; the last one wins")
    inputs.objects[kind][key] = obj


# --------------------------------------------------------------------------------------------
# Scheduling and output
# --------------------------------------------------------------------------------------------


def build_snapshot(inputs: Inputs) -> Snapshot:
    return Snapshot(
        [ClusterView.of(c) for c in inputs.of("ManagedCluster")],
        inputs.of("ManagedClusterSet"),
        inputs.of("ManagedClusterSetBinding"),
        inputs.of("PlacementDecision"),
        inputs.of("AddOnPlacementScore"),
    )


def _decision_item(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", PlacementDecision.KIND.api_version),
        "kind": "PlacementDecision",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "labels": meta.get("labels") or {}},
        "status": {"decisions": (obj.get("status") or {}).get("decisions") or []},
    }


def render(inputs: Inputs, now: datetime, *, explain: bool) -> tuple[dict[str, Any], list[str]]:
    """The output List and the warnings to print on stderr."""
    snapshot = build_snapshot(inputs)
    warnings = list(inputs.warnings)
    items: list[dict[str, Any]] = []
    for placement in inputs.of("Placement"):
        result: ScheduleResult = schedule(placement, snapshot, now)
        wire = placement.to_wire()
        warnings.extend(f"Placement {placement.key}: {w.message}" for w in result.warnings)
        if result.new_status is not None:
            wire["status"] = result.new_status.to_wire()
        if result.acts and result.new_status is not None:
            pages = desired_decisions(placement, result.pages, result.decision_scores, owner=False)
        else:
            if result.aborted is not None:
                warnings.append(f"Placement {placement.key}: not scheduled: {result.aborted}")
            pages = [d.to_wire() for d in snapshot.decisions_of(placement.namespace, placement.name)]
        items.append(wire)
        items.extend(_decision_item(page) for page in pages)
        if explain:
            items.append(explanation(result))
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}, warnings


def run(args: argparse.Namespace) -> int:
    try:
        now = parse_now(args.now)
    except ValueError as exc:
        print(f"ocm-rollout schedule: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        inputs = read_inputs(list(args.filename))
    except InputError as exc:
        print(f"ocm-rollout schedule: {exc}", file=sys.stderr)
        return EXIT_INPUT
    output, warnings = render(inputs, now, explain=bool(args.explain))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.output == "json":
        sys.stdout.write(json.dumps(output, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(output, sort_keys=False, default_flow_style=False, allow_unicode=True))
    return 0
