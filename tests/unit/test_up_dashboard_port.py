"""`up --dashboard-port`: 3100 by default, a free port when 3100 is taken, as given otherwise."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

from ocm_rollout.cli.commands.up import DASHBOARD_PORT, _dashboard_argv, _dashboard_port


def test_a_taken_default_port_gives_a_free_one() -> None:
    with contextlib.ExitStack() as held:
        probe = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        try:
            probe.bind(("127.0.0.1", DASHBOARD_PORT))
            probe.listen()
        except OSError:
            pass  # already taken by something else: the same case
        assert _dashboard_port(None) == 0


def test_a_given_port_is_kept() -> None:
    assert _dashboard_port(0) == 0 and _dashboard_port(4321) == 4321


def test_the_dashboard_child_listens_on_loopback() -> None:
    argv = _dashboard_argv(Path("/k/kubeconfig"), 4321, "info")
    assert argv[-9:] == ["dashboard", "--kubeconfig", "/k/kubeconfig", "--address", "127.0.0.1", "--port", "4321",
                         "--log-level", "info"]
