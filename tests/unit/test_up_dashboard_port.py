"""`up --dashboard-port`: 3100 by default, a free port when 3100 is taken, as given otherwise; the
socket is bound by `up` and inherited by the dashboard's process, so no one takes it in between."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest

from ocm_rollout.cli.commands.up import DASHBOARD_PORT, PortError, _dashboard_argv, dashboard_socket


def test_a_taken_default_port_gives_a_free_one() -> None:
    with contextlib.ExitStack() as held:
        probe = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        with contextlib.suppress(OSError):  # already taken by something else: the same case
            probe.bind(("127.0.0.1", DASHBOARD_PORT))
            probe.listen()
        found = held.enter_context(dashboard_socket(None))
        assert found.getsockname()[1] not in (DASHBOARD_PORT, 0) and found.get_inheritable()


def test_a_given_port_is_bound_and_a_taken_one_is_an_error_naming_the_flag() -> None:
    with dashboard_socket(0) as free:
        port = free.getsockname()[1]
        with pytest.raises(PortError, match=rf"--dashboard-port: cannot listen on 127\.0\.0\.1:{port}"):
            dashboard_socket(port)


def test_the_dashboard_child_serves_the_inherited_socket() -> None:
    argv = _dashboard_argv(Path("/k/kubeconfig"), 7, "info")
    assert argv[-7:] == ["dashboard", "--kubeconfig", "/k/kubeconfig", "--listen-fd", "7", "--log-level", "info"]
