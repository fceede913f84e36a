"""Sub-commands of the `ocm-rollout` CLI, one module each.

Every module named in ``ocm_rollout.cli.main.COMMAND_MODULES`` exposes
``register(subparsers) -> None``; the parser it adds sets ``func`` to a callable
taking the parsed ``argparse.Namespace`` and returning the process exit code.
"""
