"""``kubernetes`` with its subpackages imported on first use (ocm_rollout.client.lazy_kubernetes),
as the command line installs it: each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

HEAVY = ["kubernetes.config", "kubernetes.dynamic", "kubernetes.stream", "kubernetes.watch", "websocket", "jsonschema"]


def probe(code: str) -> Any:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_client_alone_brings_no_other_subpackage() -> None:
    found = probe(f"""
import json, sys
from ocm_rollout.client import lazy_kubernetes
first = lazy_kubernetes.install()
again = lazy_kubernetes.install()
import kubernetes.client
kubernetes.client.ApiClient
print(json.dumps([first, again, [m for m in {HEAVY!r} if m in sys.modules]]))
""")
    assert found == [True, False, []]


def test_every_subpackage_still_resolves_when_first_used() -> None:
    found = probe("""
import importlib.metadata, json
from ocm_rollout.client import lazy_kubernetes
lazy_kubernetes.install()
import kubernetes
names = [kubernetes.watch.Watch.__name__, kubernetes.config.ConfigException.__name__,
         kubernetes.client.V1ObjectMeta.__name__, kubernetes.__version__ == importlib.metadata.version("kubernetes")]
try:
    kubernetes.no_such_subpackage
except AttributeError as exc:
    names.append(str(exc))
print(json.dumps(names))
""")
    assert found == ["Watch", "ConfigException", "V1ObjectMeta", True, "module 'kubernetes' has no attribute 'no_such_subpackage'"]


def test_an_imported_package_is_left_as_it_is() -> None:
    found = probe("""
import json, sys
import kubernetes
from ocm_rollout.client import lazy_kubernetes
print(json.dumps([lazy_kubernetes.install(), "kubernetes.dynamic" in sys.modules]))
""")
    assert found == [False, True]


def test_the_command_line_installs_it_before_a_command_imports_kubernetes() -> None:
    found = probe(f"""
import contextlib, io, json, sys
from ocm_rollout.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(["run", "--help"])
    except SystemExit:
        pass
print(json.dumps(["kubernetes.client" in sys.modules, [m for m in {HEAVY!r} if m in sys.modules]]))
""")
    assert found == [True, []]
