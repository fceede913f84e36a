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


@pytest.fixture(scope="module")
def hub_kind(request: pytest.FixtureRequest) -> str:
    kind = str(request.param)
    skip_unless_built(kind)
    return kind
