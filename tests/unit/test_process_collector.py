"""Every long-running process of ours sets the garbage collector's thresholds once at start-up
(client/collector.py): the local hub, the simulated agents, the dashboard and ``up`` (which runs
the hub), as ``ocm-rollout run`` does (tests/unit/test_leader_run_cli.py). A hub on CPython's
defaults stopped for a second at a time during a 10,000-cluster rollout."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ocm_rollout.cli.commands import up
from ocm_rollout.cli.main import main as cli_main
from ocm_rollout.client.collector import COLLECTOR_THRESHOLDS
from ocm_rollout.sandbox import server, sim_main


@pytest.fixture
def thresholds() -> Iterator[Callable[[], tuple[int, int, int]]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    yield gc.get_threshold
    gc.set_threshold(*before)


def test_the_local_hub_tunes_the_collector(thresholds: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def serve(_args: Any) -> None:
        seen.append(thresholds())

    monkeypatch.setattr(server, "_serve", serve)
    assert server.main([]) == 0
    assert seen == [COLLECTOR_THRESHOLDS]


def test_the_simulated_agents_tune_the_collector(thresholds: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def run(_args: Any) -> int:
        seen.append(thresholds())
        return 0

    monkeypatch.setattr(sim_main, "run", run)
    assert sim_main.main(["--kubeconfig", "unused"]) == 0
    assert seen == [COLLECTOR_THRESHOLDS]


def test_up_tunes_the_collector_of_the_process_that_runs_the_hub(
    thresholds: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    seen: list[Any] = []

    async def run_up(*_args: Any, **_kwargs: Any) -> int:
        seen.append(thresholds())
        return 0

    monkeypatch.setattr(up, "_up", run_up)
    assert cli_main(["up", "--no-view", "--clusters", "1", "--kubeconfig", str(tmp_path / "kubeconfig")]) == 0
    assert seen == [COLLECTOR_THRESHOLDS]


def test_the_dashboard_tunes_the_collector(thresholds: Callable[[], Any], tmp_path: Any) -> None:
    # A kubeconfig that does not exist ends the command right after the tuning.
    assert cli_main(["dashboard", "--kubeconfig", str(tmp_path / "missing")]) == 1
    assert thresholds() == COLLECTOR_THRESHOLDS
