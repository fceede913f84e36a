"""Entry point of the `ocm-rollout` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ocm_rollout.client import lazy_kubernetes

# One module per sub-command, in the order `--help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "ocm_rollout.cli.commands.up",
    "ocm_rollout.cli.commands.run",
    "ocm_rollout.cli.commands.status",
    "ocm_rollout.cli.commands.dashboard",
    "ocm_rollout.cli.commands.rollout",
    "ocm_rollout.cli.commands.schedule",
    "ocm_rollout.cli.commands.plan",
    "ocm_rollout.cli.commands.crds",
)


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names first, when it is one of ours (else None)."""
    for arg in argv:
        if arg.startswith("-"):
            return None  # a top-level option (e.g. --help): every command is needed
        module = f"ocm_rollout.cli.commands.{arg}"
        return arg if module in COMMAND_MODULES else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command, or of ``only`` (a command's own module is then the only
    one imported: each pulls in a large part of the project, and ``up`` starts one ``run`` per
    controller)."""
    parser = argparse.ArgumentParser(
        prog="ocm-rollout",
        description=(
            "Open Cluster Management hub controllers (placement, ManifestWorkReplicaSet, addons) "
            "and an embedded local hub."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        if only is not None and name != f"ocm_rollout.cli.commands.{only}":
            continue
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
    lazy_kubernetes.install()  # before any command module imports kubernetes
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(arguments))
    args = parser.parse_args(arguments)
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
