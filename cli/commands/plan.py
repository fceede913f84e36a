"""`ocm-rollout plan`: run the rollout planner on a JSON document (see ocm_rollout.controllers.rollout.wire)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from ocm_rollout.controllers.rollout.explain import (
    ClusterExplanation,
    PlanExplanation,
    explain_plan,
    group_label,
)
from ocm_rollout.controllers.rollout.model import RolloutInputError, RolloutPlan
from ocm_rollout.controllers.rollout.planner import plan
from ocm_rollout.controllers.rollout.timefmt import format_rfc3339
from ocm_rollout.controllers.rollout.wire import PlanInput, decode_plan_input, encode_plan

EXIT_INPUT_ERROR = 2

_DESCRIPTION = """\
Plan the next step of a rollout exactly as OCM's rollout handler does.

Input (JSON): {"now": RFC3339, "strategy": {"type": "All|Progressive|ProgressivePerGroup",
"all"|"progressive"|"progressivePerGroup": {...}}, "decisionGroups": [{"groupName", "groupIndex",
"clusters": [...]}], "existing": [{"clusterName", "status", "lastTransitionTime"}]}
(strategy.rolloutType, the older spelling of type, is read as type.)

Output (JSON): {"strategy", "clustersToRollout", "clustersTimeOut", "clustersRemoved",
"maxFailureBreach", "recheckAfterSeconds"}. With -o table: per group, which clusters go now,
which wait and why. Malformed input exits with status 2 and names the field.
"""


class _InputError(Exception):
    pass


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = sub.add_parser(
        "plan",
        help="plan the next step of a rollout from a JSON description (strategy, groups, statuses)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--input", "-i", required=True, metavar="FILE", help="input JSON file, or - for stdin"
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("json", "table"),
        default="json",
        help="json (default; the stable contract) or table (for people)",
    )
    parser.set_defaults(func=run)


def _reject_constant(name: str) -> NoReturn:
    raise _InputError(f"input: {name} is not valid JSON")


def _read(source: str) -> Any:
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise _InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _InputError(f"cannot read {source}: not UTF-8 text") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _InputError(f"input: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _fail(message: str) -> int:
    one_line = " ".join(message.split())
    print(f"ocm-rollout plan: error: {one_line}", file=sys.stderr)
    return EXIT_INPUT_ERROR


def run(args: argparse.Namespace) -> int:
    try:
        decoded = decode_plan_input(_read(args.input))
        result = plan(decoded.strategy, decoded.decision_groups, decoded.existing, decoded.now_ns)
    except (_InputError, RolloutInputError) as exc:
        return _fail(str(exc))
    if args.output == "table":
        sys.stdout.write(render_table(decoded, result))
    else:
        sys.stdout.write(json.dumps(encode_plan(result), indent=2) + "\n")
    return 0


def _strategy_line(result: RolloutPlan) -> str:
    effective = result.strategy.to_dict()
    body: dict[str, Any] = next(value for key, value in effective.items() if key != "type")
    parts = []
    for name, value in body.items():
        if name == "mandatoryDecisionGroups" and isinstance(value, list):
            refs = []
            for ref in value:
                ref = ref or {}
                refs.append(str(ref.get("groupName") or f"#{ref.get('groupIndex') or 0}"))
            parts.append(f"{name}=[{', '.join(refs)}]")
        else:
            parts.append(f"{name}={value if value is not None else 'null'}")
    details = " ".join(parts) if parts else "(defaults)"
    return f"Strategy: {effective['type']} {details}"


def _rows(rows: list[ClusterExplanation], indent: str = "  ") -> list[str]:
    if not rows:
        return [f"{indent}(no clusters)"]
    headers = ("CLUSTER", "ACTION", "STATUS", "WHY")
    table = [headers] + [(row.cluster_name, row.verdict, row.status, row.reason) for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(3)]
    lines = []
    for line in table:
        cells = [line[column].ljust(widths[column]) for column in range(3)]
        lines.append(f"{indent}{'  '.join(cells)}  {line[3]}".rstrip())
    return lines


def render_table(decoded: PlanInput, result: RolloutPlan) -> str:
    """The human-readable form of a plan: per group, which clusters go now, which wait and why."""
    explanation: PlanExplanation = explain_plan(
        result, decoded.decision_groups, decoded.existing, decoded.now_ns
    )
    lines = [f"Plan at {format_rfc3339(decoded.now_ns)}", _strategy_line(result), ""]
    for group in explanation.groups:
        tags = []
        if group.mandatory:
            tags.append("mandatory")
        if not group.visible:
            tags.append("index out of range")
        tag_text = f" [{', '.join(tags)}]" if tags else ""
        count = len(group.clusters)
        lines.append(f"Group {group_label(group.key)}{tag_text}: {count} cluster{'s' if count != 1 else ''}")
        lines.extend(_rows(list(group.clusters)))
        lines.append("")
    if not explanation.groups:
        lines.extend(["No decision groups.", ""])
    if explanation.removed:
        lines.append("Removed (reported, no longer in any decision group):")
        lines.extend(_rows(list(explanation.removed)))
        lines.append("")
    lines.append(f"Summary: {explanation.summary}")
    return "\n".join(lines) + "\n"
