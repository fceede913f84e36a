"""Entry point of the `ocm-rollout` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# One module per sub-command, in the order `--help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "controllers.commands.up",
    "controllers.commands.run",
    "controllers.commands.status",
    "controllers.commands.rollout",
    "controllers.commands.schedule",
    "controllers.commands.plan",
    "controllers.commands.crds",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocm-rollout",
        description=(
            "Open Cluster Management hub controllers (placement, ManifestWorkReplicaSet, addons) "
            "and an embedded local hub."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # A sub-command still being built in this tree; every released module exists.
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
