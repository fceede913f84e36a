"""Least privilege measured on kube-apiserver: the scenarios of `test_run_placement.py`,
`test_run_workset.py` and `test_run_addon.py` (each makes its controller use every permission it
has) run once more, on a real control plane where kube-apiserver's RBAC authorizer decides every
request, as the ServiceAccount the Helm chart creates, bound to the roles it installs.

For each controller: a control plane of its own (``tests/chart_kube.ChartHub``, with an audit log
of what ServiceAccounts ask), `helm install` of the chart with only that controller (single mode,
in namespace ``default`` with the Lease name `ocm-rollout run` uses by default, so that the
scenario's `start_controller` runs as it does on the local hub), a token for the chart's
ServiceAccount from the TokenRequest API, then the scenario. The tests read the audit log: every
request allowed, a resource request by the release's own bindings, nothing the release grants left
unused (minus what an admission plugin checks on the side, ``measured: false``), and the local
measured check (the default render of the chart against the requests) agrees.

The add-on CRDs' conversion webhook is not served: these scenarios use the storage version only.
Skipped, naming the command to run, when kube-apiserver or helm is not built.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.chart_kube import (
    ChartHub,
    Grant,
    Measured,
    assert_granted_by_the_chart,
    service_account_user,
    skip_unless_ready,
)
from tests.integration import test_run_addon, test_run_placement, test_run_workset
from tests.integration.helpers import Hub, RunOutcome, chart_rbac_report

pytestmark = pytest.mark.integration

RELEASE = "ocm-rollout"
NAMESPACE = "default"
# `ocm-rollout run`'s default Lease name (start_controller leaves it so).
LEASE = "ocm-rollout-controllers"
SCENARIOS: dict[str, ModuleType] = {"placement": test_run_placement, "workset": test_run_workset, "addon": test_run_addon}


@dataclass
class ChartIdentityHub(Hub):
    """A `Hub` whose process user ``proc-c`` is the chart's ServiceAccount: its requests come from
    kube-apiserver's audit log."""

    chart: ChartHub | None = None

    def records(self, user: str) -> list[Any]:
        assert user == "proc-c" and self.chart is not None
        return list(self.chart.audit(service_account_user(NAMESPACE, RELEASE)))


@dataclass
class KubeOutcome:
    controller: str
    run: RunOutcome
    measured: Measured


def _install(hub: ChartHub, directory: Path, controller: str) -> None:
    values = {
        "controllers": {name: {"enabled": name == controller} for name in SCENARIOS},
        "leaderElection": {"leaseName": LEASE},
        # nothing here converts: the scenarios read and write the add-on kinds' storage version
        "conversionWebhook": {"url": "https://127.0.0.1:9/convert"},
    }
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    hub.helm("install", RELEASE, "charts/ocm-rollout", "-n", NAMESPACE, "-f", path)


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeOutcome]:
    skip_unless_ready()
    controller = str(request.param)
    directory = tmp_path_factory.mktemp(f"rbac-kube-{controller}")
    chart = ChartHub(directory / "hub").start()
    try:
        _install(chart, directory, controller)
        identity = chart.identity(NAMESPACE, RELEASE)
        hub = ChartIdentityHub(handle=None, directory=directory, users={"admin": chart.admin, "proc-c": identity}, chart=chart)
        grant = Grant.read(chart, RELEASE, NAMESPACE, RELEASE, [f"{RELEASE}-{controller}", f"{RELEASE}-leader-election"],
                           [controller])  # fmt: skip
        run: RunOutcome = SCENARIOS[controller]._scenario(hub)
        yield KubeOutcome(controller, run, grant.measure(chart))
    finally:
        chart.stop()


def test_the_controller_exits_zero_on_sigterm(outcome: KubeOutcome) -> None:
    assert outcome.run.exit_code == 0, outcome.run.log[-3000:]


def test_kube_apiserver_allows_every_request_through_the_chart_bindings(outcome: KubeOutcome) -> None:
    assert_granted_by_the_chart(outcome.measured)


def test_the_chart_grants_nothing_the_controller_did_not_use(outcome: KubeOutcome) -> None:
    report = outcome.measured.report()
    assert report.unused == [], report.describe()


def test_the_local_measured_check_agrees_on_kube_apiserver_requests(outcome: KubeOutcome) -> None:
    report = chart_rbac_report(outcome.run.records, outcome.controller)
    assert report.ok, report.describe()
