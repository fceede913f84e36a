"""`ocm-rollout crds`: generate, print or check the CRDs built from the models in api/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ocm_rollout.api import crdgen

DEFAULT_DIR = Path("crds")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "crds",
        help="generate, print or check the CRDs (built from the pydantic models in api/)",
        description="The CustomResourceDefinitions of every OCM kind, generated from api/.",
    )
    actions = parser.add_subparsers(dest="crds_action", metavar="ACTION")

    generate = actions.add_parser(
        "generate", help="write one YAML file per kind (<group>_<plural>.yaml) into DIR"
    )
    generate.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_DIR,
        help="output directory (default: ./crds, relative to the current directory)",
    )
    generate.add_argument(
        "--chart",
        type=Path,
        default=None,
        metavar="CHART",
        help="write a Helm chart's CRDs instead: CHART/crds and CHART/files/crds (webhook-converted kinds)",
    )
    generate.set_defaults(func=_generate)

    show = actions.add_parser("print", help="write every CRD to stdout as one multi-document YAML")
    show.set_defaults(func=_print)

    check = actions.add_parser(
        "check", help="exit non-zero when the files in DIR differ from a fresh generation"
    )
    check.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="directory to check (default: ./crds)")
    check.add_argument("--chart", type=Path, default=None, metavar="CHART", help="check a Helm chart's CRDs instead")
    check.set_defaults(func=_check)

    parser.set_defaults(func=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _targets(args: argparse.Namespace) -> dict[Path, crdgen.CrdFilter | None]:
    if args.chart is not None:
        return dict(crdgen.chart_layout(args.chart))
    return {args.dir: None}


def _generate(args: argparse.Namespace) -> int:
    for directory, select in _targets(args).items():
        if directory.exists() and not directory.is_dir():
            print(f"ocm-rollout crds generate: {directory} is not a directory", file=sys.stderr)
            return 2
        changed = crdgen.write_all(directory, select)
        count = len(crdgen.render_all(select))
        print(f"{count} CRDs in {directory}: {len(changed)} file(s) written or removed")
    return 0


def _print(args: argparse.Namespace) -> int:
    sys.stdout.write(crdgen.print_all())
    return 0


def _check(args: argparse.Namespace) -> int:
    failed = False
    for directory, select in _targets(args).items():
        if not directory.is_dir():
            print(f"ocm-rollout crds check: {directory} is not a directory", file=sys.stderr)
            return 1
        problems = crdgen.check_dir(directory, select)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed = True
            continue
        print(f"{len(crdgen.render_all(select))} CRDs in {directory} are up to date")
    if failed:
        print("run `ocm-rollout crds generate` (with the same --dir or --chart) to refresh them", file=sys.stderr)
        return 1
    return 0
