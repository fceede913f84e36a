"""`ocm-rollout up`'s listening ports and the endpoints it records (cli.commands.up), without
starting it (tests/e2e/test_up_fleet_metrics.py starts it)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from ocm_rollout.cli.commands import up
from ocm_rollout.cli.main import build_parser


def test_an_out_of_range_fleet_metrics_port_is_a_usage_error() -> None:
    args = build_parser().parse_args(["up", "--fleet-metrics-port", "70000"])
    with pytest.raises(up.UsageError, match=r"^--fleet-metrics-port: must be between 0 and 65535, got 70000$"):
        up._check(args)


def test_ports_zero_are_free_and_different() -> None:
    ports = up._listen_ports([("--debug-port", 0), ("--fleet-metrics-port", 0)])
    assert set(ports) == {"--debug-port", "--fleet-metrics-port"}
    assert ports["--debug-port"] != ports["--fleet-metrics-port"]
    assert all(port > 0 for port in ports.values())


def test_one_port_asked_twice_names_the_second_flag() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(up.PortError, match=rf"^--fleet-metrics-port: cannot listen on 127\.0\.0\.1:{port}: "):
        up._listen_ports([("--debug-port", port), ("--fleet-metrics-port", port)])


def test_the_work_agents_serve_the_fleet_metrics_on_the_port_chosen(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up", "--controllers", "none"])
    registration, work = up._children(args, [], tmp_path / "kc", None, 4321)
    assert registration.argv[registration.argv.index("--agents") + 1] == "registration"
    assert work.argv[work.argv.index("--agents") + 1] == "work"
    assert work.argv[work.argv.index("--metrics-address") + 1] == "127.0.0.1:4321"
    assert "--metrics-address" not in registration.argv


def test_the_banner_names_the_fleet_metrics_url(tmp_path: Path) -> None:
    lines = up.usage_lines("https://h", tmp_path / "kc", 2, [], None, "http://127.0.0.1:9/metrics")
    assert "fleet metrics: http://127.0.0.1:9/metrics" in lines


def test_endpoints_are_written_as_json_next_to_the_kubeconfig(tmp_path: Path) -> None:
    first = up.write_endpoints(tmp_path, {"hub": "https://a", "fleetMetrics": "http://b/metrics"})
    up.write_endpoints(tmp_path, {"hub": "https://c"})
    assert first == tmp_path / "endpoints.json"
    assert json.loads(first.read_text()) == {"hub": "https://c"}
    assert [p.name for p in tmp_path.iterdir()] == ["endpoints.json"]
