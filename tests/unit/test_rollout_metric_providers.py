"""The metric providers of the work configuration file (``metricProviders``), the file read once
for every section (``work_config``), and `ocm-rollout run|up --work-config` with them."""

from __future__ import annotations

import base64
from datetime import timedelta
from pathlib import Path

import pytest

from ocm_rollout.cli.commands import run, up
from ocm_rollout.cli.main import build_parser, main
from ocm_rollout.controllers.rollout import work_config
from ocm_rollout.controllers.rollout.config_file import WorkConfigError
from ocm_rollout.controllers.rollout.metric_providers import MetricProvider, MetricProviders, parse
from ocm_rollout.sandbox import tls

# `run` sets log levels; put them back.
pytestmark = pytest.mark.usefixtures("restore_logging")

CREDS = tls.generate(["127.0.0.1"])
CA_B64 = base64.b64encode(CREDS.ca_pem).decode()

EXAMPLE = f"""\
plugins:
  - name: smoke
    endpoint: http://127.0.0.1:10843
metricProviders:
  - name: thanos
    address: https://thanos-query.monitoring.svc:9090/
    caCertificate: {{caBundle: "{CA_B64}"}}
    bearerTokenFile: /var/run/secrets/prom/token
    headers: {{X-Scope-OrgID: team-a}}
    timeout: 1m30s
  - name: local
    address: http://127.0.0.1:9090/prometheus
"""


def test_the_example_registers_two_providers() -> None:
    providers = parse(EXAMPLE, source="config.yaml")
    assert list(providers) == ["thanos", "local"] and len(providers) == 2
    assert providers["thanos"] == MetricProvider(
        name="thanos",
        address="https://thanos-query.monitoring.svc:9090",
        ca_pem=CREDS.ca_pem,
        bearer_token_file="/var/run/secrets/prom/token",
        headers={"X-Scope-OrgID": "team-a"},
        timeout=timedelta(seconds=90),
    )
    assert providers["local"] == MetricProvider("local", "http://127.0.0.1:9090/prometheus")
    assert providers.get("other") is None
    assert providers.not_registered("other") == "metric provider 'other' is not registered in config.yaml (metricProviders)"
    assert MetricProviders().not_registered("x") == "metric provider 'x' is not registered (metricProviders)"


def test_a_provider_is_frozen() -> None:
    provider = parse(EXAMPLE)["thanos"]
    with pytest.raises(AttributeError):
        provider.address = "http://elsewhere:1"  # type: ignore[misc]
    with pytest.raises(TypeError):
        provider.headers["X-Scope-OrgID"] = "team-b"  # type: ignore[index]


@pytest.mark.parametrize("text", ["", "other: 1\n", "metricProviders: null\n", "metricProviders: []\n", "plugins: []\n"])
def test_no_providers(text: str) -> None:
    assert len(parse(text)) == 0


def entry(fields: str) -> str:
    return f"metricProviders: [{{name: p, {fields}}}]"


BAD = [
    ("metricProviders: {a: 1}", "cfg: metricProviders: expected a list, got a mapping"),
    ("metricProviders: [a]", "cfg: metricProviders[0]: expected a mapping, got str 'a'"),
    ("metricProviders: [{address: 'http://a:1'}]", "cfg: metricProviders[0]: name: required (a non-empty string)"),
    (
        "metricProviders: [{name: Thanos, address: 'http://a:1'}]",
        "cfg: metricProviders[0] (Thanos): name: must be lower-case letters, digits, '-' and '.', starting and "
        "ending with a letter or digit (a DNS-1123 subdomain)",
    ),
    (
        "metricProviders: [{name: p, address: 'http://a:1'}, {name: p, address: 'http://b:2'}]",
        "cfg: metricProviders[1] (p): name: duplicate of metricProviders[0]",
    ),
    ("metricProviders: [{name: p}]", "cfg: metricProviders[0] (p): address: required (http(s)://HOST[:PORT][/PATH])"),
    (entry("address: 'a:9090'"), "cfg: metricProviders[0] (p): address: must start with http:// or https://, got 'a:9090'"),
    (entry("address: 'ftp://a'"), "cfg: metricProviders[0] (p): address: must start with http:// or https://, got 'ftp://a'"),
    (entry("address: 'http://'"), "cfg: metricProviders[0] (p): address: no host in 'http://'"),
    (entry("address: 'http://u:pw@a:1'"), "cfg: metricProviders[0] (p): address: no user info in the URL (use bearerTokenFile or headers)"),
    (
        entry("address: 'http://a:1/?x=1'"),
        "cfg: metricProviders[0] (p): address: no query or fragment in the URL (the query goes to <address>/api/v1/query)",
    ),
    (entry("address: 'http://a:0'"), "cfg: metricProviders[0] (p): address: the port must be 1-65535 in 'http://a:0'"),
    (entry("address: 'http://a:99999'"), "cfg: metricProviders[0] (p): address: the port must be 1-65535 in 'http://a:99999'"),
    (entry("address: 'http://a b:1'"), "cfg: metricProviders[0] (p): address: no white space in the URL, got 'http://a b:1'"),
    (
        entry("endpoint: 'http://a:1'"),
        "cfg: metricProviders[0] (p): unknown field 'endpoint' (a metric provider has an address: "
        "http(s)://HOST[:PORT][/PATH]); known: name, address, caCertificate, bearerTokenFile, headers, timeout",
    ),
    (
        entry(f"address: 'http://a:1', caCertificate: {{caBundle: '{CA_B64}'}}"),
        "cfg: metricProviders[0] (p): caCertificate: only for an https:// address",
    ),
    (entry("address: 'https://a:1', caCertificate: {caBundle: '%%%'}"), "cfg: metricProviders[0] (p): caCertificate.caBundle: not valid base64"),
    (
        entry("address: 'https://a:1', bearerTokenFile: token"),
        "cfg: metricProviders[0] (p): bearerTokenFile: expected an absolute path, got str 'token'",
    ),
    (entry("address: 'https://a:1', headers: [a]"), "cfg: metricProviders[0] (p): headers: expected a mapping of header names to values, got a list"),
    (
        entry("address: 'https://a:1', headers: {Authorization: 'Bearer x'}"),
        "cfg: metricProviders[0] (p): headers.Authorization: not allowed (use bearerTokenFile)",
    ),
    (entry("address: 'https://a:1', headers: {host: x}"), "cfg: metricProviders[0] (p): headers.host: not allowed"),
    (entry("address: 'https://a:1', headers: {'a b': x}"), "cfg: metricProviders[0] (p): headers: 'a b' is not an HTTP header name"),
    (entry("address: 'https://a:1', headers: {X-Org: 1}"), "cfg: metricProviders[0] (p): headers.X-Org: expected a string (quote it), got int 1"),
    (
        entry("address: 'https://a:1', headers: {X-Org: a, x-org: b}"),
        "cfg: metricProviders[0] (p): headers.x-org: duplicate of X-Org",
    ),
    (
        entry("address: 'https://a:1', headers: {X-Org: \"a\\r\\nX-Evil: 1\"}"),
        "cfg: metricProviders[0] (p): headers.X-Org: no line breaks or NUL in a header value",
    ),
    (entry("address: 'https://a:1', timeout: 30"), "cfg: metricProviders[0] (p): timeout: expected a Go duration such as 30s, got int 30"),
    (
        entry("address: 'https://a:1', timeout: 30 s"),
        "cfg: metricProviders[0] (p): timeout: '30 s' is not a Go duration such as 30s, 1m or 1m30s",
    ),
    (entry("address: 'https://a:1', timeout: 0s"), "cfg: metricProviders[0] (p): timeout: must be more than 0, got '0s'"),
]


@pytest.mark.parametrize(("text", "error"), BAD)
def test_bad_input_is_named_by_entry_and_field(text: str, error: str) -> None:
    with pytest.raises(WorkConfigError) as info:
        parse(text, source="cfg")
    assert str(info.value) == error


# -- the whole file -----------------------------------------------------------------------------


def test_the_file_is_read_once_for_both_sections(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(EXAMPLE)
    loaded = work_config.load(path)
    assert [p.name for p in loaded.plugins] == ["smoke"]
    assert list(loaded.metric_providers) == ["thanos", "local"]
    assert loaded.plugins.source == loaded.metric_providers.source == str(path)
    empty = work_config.parse("")
    assert (len(empty.plugins), len(empty.metric_providers)) == (0, 0)


def test_a_bad_section_fails_the_whole_file() -> None:
    with pytest.raises(WorkConfigError, match=r"^cfg: plugins\[0\] \(p\): endpoint: required"):
        work_config.parse("plugins: [{name: p}]\nmetricProviders: []\n", source="cfg")
    with pytest.raises(WorkConfigError, match=r"^cfg: metricProviders\[0\] \(p\): address: required"):
        work_config.parse("plugins: []\nmetricProviders: [{name: p}]\n", source="cfg")


# -- ocm-rollout run / up ------------------------------------------------------------------------

def test_run_reads_the_metric_providers(kubeconfig: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(EXAMPLE)
    args = build_parser().parse_args(["run", "--kubeconfig", kubeconfig, "--work-config", str(path)])
    config = run.build_config(args)
    assert list(config.metric_providers) == ["thanos", "local"]
    assert [p.name for p in config.plugins] == ["smoke"]
    without = run.build_config(build_parser().parse_args(["run", "--kubeconfig", kubeconfig]))
    assert without.metric_providers == MetricProviders()


def test_run_with_a_bad_provider_says_one_line_and_exits_2(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("metricProviders:\n  - name: thanos\n    address: thanos:9090\n")
    code = main(["run", "--kubeconfig", kubeconfig, "--work-config", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"ocm-rollout run: error: --work-config: {path}: metricProviders[0] (thanos): address: "
        "must start with http:// or https://, got 'thanos:9090'\n"
    )


def test_up_checks_the_providers_and_gives_the_file_to_the_controllers_that_roll_out(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("metricProviders: [{name: p, address: 'http://a:1', timeout: soon}]\n")
    with pytest.raises(up.UsageError) as info:
        up._check(build_parser().parse_args(["up", "--work-config", str(path)]))
    assert str(info.value) == (
        f"--work-config: {path}: metricProviders[0] (p): timeout: 'soon' is not a Go duration such as 30s, 1m or 1m30s"
    )
    for name in ("workset", "addon"):
        assert up._controller_argv(name, tmp_path / "kc", "info", None, str(path))[-2:] == ["--work-config", str(path)]
    assert "--work-config" not in up._controller_argv("placement", tmp_path / "kc", "info", None, str(path))
