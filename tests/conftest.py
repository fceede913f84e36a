"""What every test directory shares: the hub kinds a test that exercises a controller runs on.

- `hub_kind` (module scope, parametrised): ``"local"`` (the embedded hub) and ``"kube-apiserver"``
  (etcd, kube-apiserver and kube-controller-manager built by ``make kube-hub``). A module whose
  fixtures take it runs once on each. Where the binaries are not built, the ``kube-apiserver``
  runs skip with the command that builds them; CI builds them first, so it never skips there.
- ``--hubs local,kube-apiserver`` (the default: both) narrows the kinds, e.g. ``make test
  PYTEST_ARGS="--hubs local"`` on a machine without Go.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.hub_kinds import HUB_KINDS, skip_unless_built


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--hubs", default=",".join(HUB_KINDS),
        help=f"the hub kinds to run the two-hub tests on (comma-separated of {', '.join(HUB_KINDS)}; default: all)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hub_kind" in metafunc.fixturenames:
        wanted = [h.strip() for h in str(metafunc.config.getoption("--hubs")).split(",") if h.strip()]
        unknown = sorted(set(wanted) - set(HUB_KINDS))
        if unknown:
            raise pytest.UsageError(f"--hubs: unknown hub kind(s) {', '.join(unknown)}; known: {', '.join(HUB_KINDS)}")
        metafunc.parametrize("hub_kind", wanted, scope="module", indirect=True)


# The order workers take the directories' groups in: the longest scenarios first (a fault run
# lasts minutes), the many short unit tests last, where they fill the workers' tails.
LONGEST_FIRST = ("faults", "compat", "e2e", "browser", "differential", "integration", "unit")


def _rank(item: pytest.Item) -> int:
    parts = item.nodeid.split("/")
    top = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return LONGEST_FIRST.index(top) if top in LONGEST_FIRST else len(LONGEST_FIRST)


def xdist_scope(nodeid: str) -> str:
    """The pytest-xdist work unit of a test: its module and, when it runs on a hub kind, that kind
    (the kind is in the test id's parameters: ``test_x[kube-apiserver]``, ``test_y[local-0]``)."""
    module = nodeid.split("::", 1)[0]
    params = nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") else ""
    for kind in sorted(HUB_KINDS, key=len, reverse=True):
        if params == kind or params.startswith(kind + "-") or params.endswith("-" + kind) or f"-{kind}-" in params:
            return f"{module}::{kind}"
    return module


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` (``make test``) with ``xdist_scope`` as the unit: a module's tests on
    one hub kind share a worker, so its module fixtures start once, while its run on the local hub
    and its run on kube-apiserver may go to two workers at once. (pytest-xdist's own ``loadgroup``
    marks do not reach pytest 9's test ids.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleAndKind(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return ModuleAndKind(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The work units are queued in ``LONGEST_FIRST`` order (``--no-loadscope-reorder``; a stable
    sort: a module's own order is kept)."""
    items.sort(key=_rank)


@pytest.fixture(scope="module")
def hub_kind(request: pytest.FixtureRequest) -> str:
    kind = str(request.param)
    skip_unless_built(kind)
    return kind
