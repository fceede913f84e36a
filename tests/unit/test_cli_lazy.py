"""`ocm-rollout COMMAND` imports that command's module only (each pulls in much of the project;
`up` starts one `run` per controller); `ocm-rollout --help` and an unknown command still see all."""

from __future__ import annotations

import ast
import subprocess
import sys

PROBE = """
import contextlib, io, sys
from ocm_rollout.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
print(sorted(m for m in sys.modules if m.startswith("ocm_rollout.cli.commands.")))
"""


def imported(argv: list[str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, timeout=60, check=True
    )
    return list(ast.literal_eval(result.stdout.strip().splitlines()[-1]))


def test_a_command_imports_its_own_module_only() -> None:
    assert imported(["plan", "--help"]) == ["ocm_rollout.cli.commands.plan"]
    assert "ocm_rollout.cli.commands.up" not in imported(["run", "--help"])


def test_top_level_help_and_unknown_commands_list_every_command() -> None:
    every = imported(["--help"])
    assert "ocm_rollout.cli.commands.up" in every and "ocm_rollout.cli.commands.crds" in every
    assert "ocm_rollout.cli.commands.up" in imported(["nosuch"])
