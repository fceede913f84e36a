"""`ocm-rollout up` runs the simulated agents and each controller in processes of their own, stops
them when it stops (also when it is killed), and computes no view with --no-view."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.helpers import Up, eventually
from tests.e2e.test_up import available_clusters, clusters_api, start_up
from tests.hub_kinds import LOCAL

pytestmark = pytest.mark.e2e
__all__ = ["start_up"]  # the fixture, shared with test_up


def children(pid: int) -> dict[int, str]:
    """The child processes of ``pid``: their command lines."""
    out: dict[int, str] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found = (task / "children").read_text().split()
        except OSError:
            continue
        for child in found:
            try:
                out[int(child)] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from /proc")
def test_agents_and_each_controller_run_in_their_own_process_and_stop_with_up(
    start_up: Callable[..., Up],
) -> None:
    up = start_up("--clusters", "2", "--no-view")
    api = clusters_api(up.wait_kubeconfig())
    eventually(lambda: len(available_clusters(api)) == 2, message="2 available")
    procs = children(up.process.pid)
    commands = sorted(procs.values())
    # the registration agents and the work agents in a process each, the work agents serving the metrics
    agents = [c for c in commands if "-m ocm_rollout.sandbox.sim_main" in c and "--clusters 2" in c]
    assert len(agents) == 2, commands
    registration = [c for c in agents if "--agents registration" in c]
    work = [c for c in agents if "--agents work" in c]
    assert len(registration) == len(work) == 1, agents
    assert "--metrics-address" in work[0] and "--metrics-address" not in registration[0], agents
    for name in ("placement", "workset", "addon"):
        assert any(f"run --controllers {name} " in c and "--no-leader-elect" in c for c in commands), commands
    assert any("run --controllers none " in c and "--webhook-bind-address 127.0.0.1:" in c for c in commands), commands
    assert any(" dashboard --kubeconfig " in c and "--listen-fd " in c for c in commands), commands
    assert up.interrupt() == 0, up.output()
    assert not [pid for pid in procs if alive(pid)]
    assert "Traceback" not in up.output()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from /proc")
def test_a_killed_up_leaves_no_agent_or_controller_behind(start_up: Callable[..., Up], hub_kind: str) -> None:
    up = start_up("--clusters", "1", "--no-view")
    api = clusters_api(up.wait_kubeconfig())
    eventually(lambda: available_clusters(api) == ["cluster1"], message="cluster1 available")
    procs = children(up.process.pid)
    # the registration and the work agents, three controllers, the conversion webhook and the
    # dashboard; on kube-apiserver, also etcd, kube-apiserver and kube-controller-manager
    assert len(procs) == (7 if hub_kind == LOCAL else 10), procs
    os.kill(up.process.pid, signal.SIGKILL)
    up.process.wait(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(pid) for pid in procs):
        time.sleep(0.1)
    assert not [cmd for pid, cmd in procs.items() if alive(pid)]


def test_no_view_computes_no_view(start_up: Callable[..., Up]) -> None:
    quiet = start_up("--clusters", "2", "--no-view", "--controllers", "none")
    api = clusters_api(quiet.wait_kubeconfig())
    eventually(lambda: len(available_clusters(api)) == 2, message="2 available")
    assert quiet.interrupt() == 0, quiet.output()
    assert "cluster cluster1: registered" not in quiet.output()
    assert "export KUBECONFIG=" in quiet.output()
