"""The rollout plugins' configuration file (work-controller-config, OCM enhancement 231) and
`ocm-rollout run --work-config`."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from ocm_rollout.cli.commands import run
from ocm_rollout.cli.main import build_parser
from ocm_rollout.controllers.rollout.plugin.config import PluginConfigError, PluginRegistry, load, parse
from ocm_rollout.sandbox import tls

# `run` sets log levels; put them back.
pytestmark = pytest.mark.usefixtures("restore_logging")

CREDS = tls.generate(["127.0.0.1"])
CA_B64 = base64.b64encode(CREDS.ca_pem).decode()

ENHANCEMENT_EXAMPLE = f"""\
plugins:
  - name: my-rollout-1
    endpoint: my-rollout1.my-namespace:10843
    caCertificate:
      caBundle: "{CA_B64}"
  - name: my-rollout-2
    endpoint: my-rollout2.my-namespace:10843
    caCertificate:
      caBundle: "{CA_B64}"
"""


def test_the_enhancement_example_registers_two_tls_plugins() -> None:
    registry = parse(ENHANCEMENT_EXAMPLE, source="config.yaml")
    assert [p.name for p in registry] == ["my-rollout-1", "my-rollout-2"]
    first = registry.get("my-rollout-1")
    assert first is not None
    assert (first.target, first.tls, first.ca_pem) == ("my-rollout1.my-namespace:10843", True, CREDS.ca_pem)
    assert "my-rollout-2" in registry and len(registry) == 2
    assert registry.get("other") is None


@pytest.mark.parametrize(
    ("endpoint", "target", "tls"),
    [
        ("localhost:10843", "localhost:10843", True),
        ("https://plugin.ns.svc:443", "plugin.ns.svc:443", True),
        ("http://127.0.0.1:9000", "127.0.0.1:9000", False),
        ("[::1]:9000", "[::1]:9000", True),
    ],
)
def test_endpoints(endpoint: str, target: str, tls: bool) -> None:
    plugin = parse(f"plugins: [{{name: p, endpoint: '{endpoint}'}}]").get("p")
    assert plugin is not None
    assert (plugin.target, plugin.tls, plugin.ca_pem) == (target, tls, None)


@pytest.mark.parametrize("text", ["", "# nothing\n", "other: 1\n", "plugins: null\n", "plugins: []\n"])
def test_no_plugins(text: str) -> None:
    assert len(parse(text)) == 0


BAD = [
    ("plugins: {a: 1}", "cfg: plugins: expected a list, got a mapping"),
    ("- a", "cfg: expected a mapping at the top, got a list"),
    ("plugins: [a]", "cfg: plugins[0]: expected a mapping, got str 'a'"),
    ("plugins: [{endpoint: 'a:1'}]", "cfg: plugins[0]: name: required (a non-empty string)"),
    (
        "plugins: [{name: My_Plugin, endpoint: 'a:1'}]",
        "cfg: plugins[0] (My_Plugin): name: must be lower-case letters, digits, '-' and '.', starting and "
        "ending with a letter or digit (a DNS-1123 subdomain)",
    ),
    ("plugins: [{name: p}]", "cfg: plugins[0] (p): endpoint: required (HOST:PORT)"),
    ("plugins: [{name: p, endpoint: 'a:1'}, {name: p, endpoint: 'b:2'}]", "cfg: plugins[1] (p): name: duplicate of plugins[0]"),
    ("plugins: [{name: p, endpoint: plugin}]", "cfg: plugins[0] (p): endpoint: expected HOST:PORT, got 'plugin'"),
    ("plugins: [{name: p, endpoint: 'a:0'}]", "cfg: plugins[0] (p): endpoint: port must be 1-65535, got '0' in 'a:0'"),
    ("plugins: [{name: p, endpoint: 'a:http'}]", "cfg: plugins[0] (p): endpoint: port must be 1-65535, got 'http' in 'a:http'"),
    ("plugins: [{name: p, endpoint: 'unix://a:1'}]", "cfg: plugins[0] (p): endpoint: unknown scheme 'unix' in 'unix://a:1' (use HOST:PORT)"),
    ("plugins: [{name: p, endpoint: 'a b:1'}]", "cfg: plugins[0] (p): endpoint: 'a b' is not a host name or IP address (HOST:PORT; IPv6 as [ADDR]:PORT)"),
    ("plugins: [{name: p, endpoint: '[zz]:1'}]", "cfg: plugins[0] (p): endpoint: [zz] is not an IPv6 address"),
    (
        "plugins: [{name: p, endpoint: 'a:1', caBundle: x}]",
        "cfg: plugins[0] (p): unknown field 'caBundle' (the CA goes under caCertificate.caBundle); "
        "known: name, endpoint, caCertificate",
    ),
    ("plugins: [{name: p, endpoint: 'a:1', caCertificate: x}]", "cfg: plugins[0] (p): caCertificate: expected a mapping with caBundle, got str 'x'"),
    ("plugins: [{name: p, endpoint: 'a:1', caCertificate: {}}]", "cfg: plugins[0] (p): caCertificate.caBundle: required (base64 of PEM CA certificates)"),
    ("plugins: [{name: p, endpoint: 'a:1', caCertificate: {caBundle: x, ca: y}}]", "cfg: plugins[0] (p): caCertificate: unknown field 'ca'; known: caBundle"),
    ("plugins: [{name: p, endpoint: 'a:1', caCertificate: {caBundle: '%%%'}}]", "cfg: plugins[0] (p): caCertificate.caBundle: not valid base64"),
    (
        f"plugins: [{{name: p, endpoint: 'a:1', caCertificate: {{caBundle: '{base64.b64encode(b'not a cert').decode()}'}}}}]",
        "cfg: plugins[0] (p): caCertificate.caBundle: holds no PEM certificate (expected base64 of PEM text)",
    ),
    (
        f"plugins: [{{name: p, endpoint: 'http://a:1', caCertificate: {{caBundle: '{CA_B64}'}}}}]",
        "cfg: plugins[0] (p): caCertificate: not allowed with a plaintext (http://) endpoint",
    ),
]


@pytest.mark.parametrize(("text", "error"), BAD)
def test_bad_input_is_named_by_entry_and_field(text: str, error: str) -> None:
    with pytest.raises(PluginConfigError) as info:
        parse(text, source="cfg")
    assert str(info.value) == error


def test_the_pem_itself_is_not_base64() -> None:
    text = f"plugins: [{{name: p, endpoint: 'a:1', caCertificate: {{caBundle: {CREDS.ca_pem.decode()!r}}}}}]"
    with pytest.raises(PluginConfigError, match=r"caCertificate.caBundle: not valid base64"):
        parse(text, source="cfg")


def test_a_base64_bundle_may_be_wrapped_over_lines() -> None:
    wrapped = "\n".join(CA_B64[i : i + 64] for i in range(0, len(CA_B64), 64))
    text = "plugins:\n- name: p\n  endpoint: a:1\n  caCertificate:\n    caBundle: |\n" + "".join(
        f"      {line}\n" for line in wrapped.splitlines()
    )
    plugin = parse(text).get("p")
    assert plugin is not None and plugin.ca_pem == CREDS.ca_pem


def test_yaml_errors_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(PluginConfigError, match=r"^cfg: not valid YAML: "):
        parse("plugins: [", source="cfg")
    with pytest.raises(PluginConfigError, match=rf"^{tmp_path}/missing.yaml: No such file or directory$"):
        load(tmp_path / "missing.yaml")


# -- ocm-rollout run --work-config --------------------------------------------------------------

def _config(kubeconfig: str, *extra: str) -> run.RunConfig:
    args = build_parser().parse_args(["run", "--controllers", "workset", "--kubeconfig", kubeconfig, *extra])
    return run.build_config(args)


def test_run_without_work_config_has_no_plugins(kubeconfig: str) -> None:
    assert _config(kubeconfig).plugins == PluginRegistry()


def test_run_reads_the_work_config(kubeconfig: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(ENHANCEMENT_EXAMPLE)
    plugins = _config(kubeconfig, "--work-config", str(path)).plugins
    assert [p.name for p in plugins] == ["my-rollout-1", "my-rollout-2"]
    assert plugins.source == str(path)


def test_a_bad_work_config_is_a_usage_error(kubeconfig: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("plugins: [{name: p}]\n")
    with pytest.raises(run.UsageError) as info:
        _config(kubeconfig, "--work-config", str(path))
    assert str(info.value) == f"--work-config: {path}: plugins[0] (p): endpoint: required (HOST:PORT)"


def test_up_checks_the_work_config_and_gives_it_to_the_workset_controller(tmp_path: Path) -> None:
    from ocm_rollout.cli.commands import up

    path = tmp_path / "config.yaml"
    path.write_text("plugins: [{name: p, endpoint: 'a:b'}]\n")
    args = build_parser().parse_args(["up", "--work-config", str(path)])
    with pytest.raises(up.UsageError) as info:
        up._check(args)
    assert str(info.value) == f"--work-config: {path}: plugins[0] (p): endpoint: port must be 1-65535, got 'b' in 'a:b'"
    workset = up._controller_argv("workset", tmp_path / "kc", "info", None, str(path))
    assert workset[-2:] == ["--work-config", str(path)]
    assert "--work-config" not in up._controller_argv("placement", tmp_path / "kc", "info", None, str(path))
    assert "--work-config" not in up._controller_argv("workset", tmp_path / "kc", "info", None)
