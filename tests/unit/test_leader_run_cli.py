"""`ocm-rollout run` flag validation, kopf credentials and the structured log formats."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from kubernetes.client import Configuration

from ocm_rollout.cli.commands import run
from ocm_rollout.cli.main import main
from ocm_rollout.client import logging as runtime_logging
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.runtime import registry
from ocm_rollout.controllers.runtime.operator import connection_info

# `run` and `configure` set logger levels and a root handler; put them back.
pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.fixture
def extra_controller() -> str:
    # A real controller's name: flags are checked before any controller is built.
    return "placement"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["run", *argv])
    return code, capsys.readouterr().err


def test_unknown_controller_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], kubeconfig: str) -> None:
    code, err = run_cli(capsys, "--controllers", "nope", "--kubeconfig", kubeconfig)
    assert code == 2
    assert err.count("\n") == 1 and "nope" in err


def test_no_environment_variable_adds_a_controller(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controllers that exist are the registry's: the old test hook (a module named in
    OCM_ROLLOUT_EXTRA_CONTROLLERS) loads nothing into a production process."""
    from ocm_rollout.cli.main import build_parser

    monkeypatch.setenv("OCM_ROLLOUT_EXTRA_CONTROLLERS", "probe=json")
    args = build_parser().parse_args(["run", "--controllers", "probe", "--kubeconfig", kubeconfig])
    with pytest.raises(run.UsageError, match=r"unknown controller\(s\) probe"):
        run.build_config(args)
    assert "probe" not in registry.CONTROLLERS


def test_unreadable_kubeconfig_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra_controller: str
) -> None:
    missing = tmp_path / "missing"
    code, err = run_cli(capsys, "--controllers", extra_controller, "--kubeconfig", str(missing))
    assert code == 2
    assert err.count("\n") == 1 and str(missing) in err


def test_kubeconfig_that_is_not_yaml_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra_controller: str
) -> None:
    bad = tmp_path / "bad"
    bad.write_text("clusters: [\n")
    code, err = run_cli(capsys, "--controllers", extra_controller, "--kubeconfig", str(bad))
    assert code == 2
    assert err.count("\n") == 1 and "not valid YAML" in err


def test_impossible_lease_timings_are_rejected(
    capsys: pytest.CaptureFixture[str], kubeconfig: str, extra_controller: str
) -> None:
    code, err = run_cli(
        capsys, "--controllers", extra_controller, "--kubeconfig", kubeconfig, "--lease-duration", "5", "--renew-deadline", "10"
    )
    assert code == 2 and "--lease-duration" in err


def test_bad_bind_address_is_rejected(capsys: pytest.CaptureFixture[str], kubeconfig: str, extra_controller: str) -> None:
    code, err = run_cli(
        capsys, "--controllers", extra_controller, "--kubeconfig", kubeconfig, "--health-bind-address", "nowhere"
    )
    assert code == 2 and "--health-bind-address" in err


def test_namespace_and_all_namespaces_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--namespace", "a", "--all-namespaces"])
    assert exit_info.value.code == 2


def test_flags_become_a_run_config(kubeconfig: str, extra_controller: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ocm_rollout.cli.main import build_parser

    monkeypatch.setenv("POD_NAMESPACE", "ocm")
    args = build_parser().parse_args(
        ["run", "--controllers", extra_controller, "--kubeconfig", kubeconfig, "-n", "b", "-n", "a",
         "--lease-duration", "20s", "--renew-deadline", "12", "--retry-period", "3", "--no-leader-elect",
         "--metrics-bind-address", "0"]
    )
    config = run.build_config(args)
    assert config.controllers == [extra_controller]
    assert config.namespaces == ["a", "b"]
    assert (config.timings.lease_duration, config.timings.renew_deadline, config.timings.retry_period) == (20, 12, 3)
    assert config.leader_elect is False
    assert config.lease_namespace == "ocm"
    assert config.metrics_address is None
    assert config.health_address == ("0.0.0.0", 8081)


def test_kopf_credentials_come_from_the_kubeconfig(kubeconfig: str) -> None:
    info = connection_info(load_client(kubeconfig).configuration)
    assert info.server == "http://127.0.0.1:6443"
    assert info.token == "sekret"
    assert info.scheme == "Bearer"


def test_kopf_credentials_carry_client_certificates_and_ca() -> None:
    configuration = Configuration()
    configuration.host = "https://hub:6443"
    configuration.ssl_ca_cert = "/ca.crt"
    configuration.cert_file = "/tls.crt"
    configuration.key_file = "/tls.key"
    info = connection_info(configuration)
    assert (info.ca_path, info.certificate_path, info.private_key_path) == ("/ca.crt", "/tls.crt", "/tls.key")
    assert info.token is None and info.insecure is False


def _emit(fmt: str, **extra: object) -> str:
    stream = io.StringIO()
    handler = runtime_logging.configure(fmt, "info", stream=stream)
    try:
        logging.getLogger("test.logs").info("reconciled", extra=extra)
    finally:
        logging.getLogger().removeHandler(handler)
    return stream.getvalue()


def test_json_logs_are_one_object_per_line_with_the_object_key_first() -> None:
    line = _emit("json", key="ns/p1", decisions=3)
    event = json.loads(line)
    assert list(event)[:5] == ["time", "level", "logger", "object", "msg"]
    assert event["object"] == "ns/p1" and event["msg"] == "reconciled" and event["decisions"] == 3


def test_json_logs_render_kopf_object_references() -> None:
    line = _emit("json", k8s_ref={"namespace": "ns", "name": "w1", "kind": "ManifestWorkReplicaSet"})
    assert json.loads(line)["object"] == "ns/w1"
    assert "k8s_ref" not in json.loads(line)


def test_text_logs_show_the_key_in_brackets() -> None:
    assert "[ns/p1] reconciled decisions=3" in _emit("text", key="ns/p1", decisions=3)


def test_unknown_log_format_is_rejected() -> None:
    with pytest.raises(runtime_logging.LogConfigError, match="--log-format"):
        runtime_logging.configure("xml", "info")


def test_kopf_per_object_success_lines_are_quiet_unless_debugging() -> None:
    handler = runtime_logging.configure("json", "info", stream=io.StringIO())
    try:
        assert not logging.getLogger("kopf.objects").isEnabledFor(logging.INFO)
        assert logging.getLogger("kopf.objects").isEnabledFor(logging.WARNING)
    finally:
        logging.getLogger().removeHandler(handler)


def test_run_tunes_the_collector_once_before_serving(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process owner sets the collector's thresholds once (client/collector.py);
    no library code turns the collector off during a pass."""
    import gc

    from ocm_rollout.client.collector import COLLECTOR_THRESHOLDS

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    async def serve(config: object) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(run, "serve", serve)
    try:
        assert main(["run", "--controllers", "placement", "--kubeconfig", kubeconfig]) == 0
    finally:
        gc.set_threshold(*before)
    assert seen == [COLLECTOR_THRESHOLDS]
    assert gc.isenabled()
