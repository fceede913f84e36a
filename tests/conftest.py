"""What every test directory shares: the hub kinds a test that exercises a controller runs on.

- `hub_kind` (module scope, parametrised): ``"local"`` (the embedded hub) and ``"kube-apiserver"``
  (etcd, kube-apiserver and kube-controller-manager built by ``make kube-hub``). A module whose
  fixtures take it runs once on each. Where the binaries are not built, the ``kube-apiserver``
  runs skip with the command that builds them; CI builds them first, so it never skips there.
- ``--hubs local,kube-apiserver`` (the default: both) narrows the kinds, e.g. ``make test
  PYTEST_ARGS="--hubs local"`` on a machine without Go.
"""

from __future__ import annotations

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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One pytest-xdist group per module and hub kind (``make test`` runs ``--dist loadgroup``): a
    module's tests share a worker, so its module fixtures start once, but its run on the local hub
    and its run on kube-apiserver may go to two workers at once. The groups are queued in
    ``LONGEST_FIRST`` order (a stable sort: a module's own order is kept)."""
    items.sort(key=_rank)
    for item in items:
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("hub_kind") if callspec is not None else None
        group = item.nodeid.split("::", 1)[0] + (f"::{kind}" if kind else "")
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="module")
def hub_kind(request: pytest.FixtureRequest) -> str:
    kind = str(request.param)
    skip_unless_built(kind)
    return kind
