"""Least privilege for the dashboard, measured: the requests `ocm-rollout dashboard` makes on the
local hub, against the ClusterRole the Helm chart gives it (``dashboard.readOnly`` true and false).

One scenario runs once for the module, each dashboard with its own user so that the hub's request
log tells them apart: a writable one (proc-c) opens every page and runs each verb that reads
before it writes (pause and resume on a ManifestWorkReplicaSet and on an add-on; abort, undo and
promote, which the hub's state refuses after their fresh read), and a read-only one (proc-b) opens
every page and is refused an action. The tests then compare what each asked with what the chart
grants: nothing it asked is missing, nothing granted went unused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ocm_rollout.cli.dashboard.store import KINDS
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    MANIFEST_WORK_REPLICA_SETS,
    NAMESPACES,
    PLACEMENTS,
)
from tests.integration.helpers import Api, Hub, chart_dashboard_rbac_report, scenario_outcome
from tests.integration.test_dashboard_server import TEMPLATE, Page, dashboard, until

pytestmark = pytest.mark.integration

NS = "rollouts"
CLUSTERS = ["cluster-1", "cluster-2"]
MWRS = "web"
ADDON = "observability"


@dataclass
class Outcome:
    """Each dashboard's requests as the hub recorded them, and the status of each page and action."""

    writable: list[Any]
    read_only: list[Any]
    answers: dict[str, int]


def _setup(api: Api) -> None:
    api.create(NAMESPACES, {"metadata": {"name": NS}})
    for cluster in CLUSTERS:
        api.create(NAMESPACES, {"metadata": {"name": cluster}})
        api.create(MANAGED_CLUSTERS, {"metadata": {"name": cluster, "labels": {"env": "prod"}}, "spec": {"hubAcceptsClient": True}})
    api.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": "fleet"}, "spec": {}})
    api.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": "fleet"}, "spec": {"clusterSet": "fleet"}}, NS)
    api.create(PLACEMENTS, {"metadata": {"name": "all"}, "spec": {"clusterSets": ["fleet"]}}, NS)
    api.create(
        MANIFEST_WORK_REPLICA_SETS,
        {"metadata": {"name": MWRS}, "spec": {"placementRefs": [{"name": "all", "rolloutStrategy": {"type": "All"}}], "manifestWorkTemplate": TEMPLATE}},
        NS,
    )
    api.create(CLUSTER_MANAGEMENT_ADDONS, {"metadata": {"name": ADDON}, "spec": {"installStrategy": {
        "type": "Placements",
        "placements": [{"name": "all", "namespace": NS, "rolloutStrategy": {"type": "All"}}],
    }}})  # fmt: skip


async def _open_every_page(page: Page, answers: dict[str, int], prefix: str) -> None:
    for path in (
        "api/overview",
        f"api/rollouts/mwrs/{NS}/{MWRS}",
        f"api/rollouts/addon/{ADDON}",
        f"api/placements/{NS}/all",
        "api/fleet?q=env%3Dprod",
        "healthz",
    ):
        async with page.session.get(page.url + path) as response:
            answers[f"{prefix} GET {path}"] = response.status


def _open_watches(hub: Hub) -> int:
    """How many watches the hub serves (the scenario runs one dashboard at a time, nothing else)."""
    store = hub.handle.hub.store
    return int(hub.handle.call(lambda: sum(1 for w in store.all_watchers() if not w.closed)))


async def _watching(hub: Hub, count: int) -> None:
    """Wait until the hub serves ``count`` watches: a dashboard is listed before it watches, and
    a watch is recorded when it ends, so the measure waits for both ends of them."""
    await until(lambda: asyncio.to_thread(lambda: _open_watches(hub) == count), timeout=20)


async def _browse(hub: Hub) -> dict[str, int]:
    answers: dict[str, int] = {}
    async with dashboard(hub.users["proc-c"]) as page:
        await _watching(hub, len(KINDS))
        await _open_every_page(page, answers, "writable")
        mwrs = {"kind": "mwrs", "namespace": NS, "name": MWRS}
        addon = {"kind": "addon", "name": ADDON}
        for body in (
            {**mwrs, "verb": "pause"},
            {**mwrs, "verb": "resume"},
            {**mwrs, "verb": "abort"},
            {**mwrs, "verb": "undo", "toRevision": 1},
            {**mwrs, "verb": "promote"},
            {**addon, "verb": "pause"},
            {**addon, "verb": "resume"},
        ):
            status, _ = await page.act(body)
            answers[f"writable {body['verb']} {body['kind']}"] = status
    await _watching(hub, 0)
    async with dashboard(hub.users["proc-b"], read_only=True) as page:
        await _watching(hub, len(KINDS))
        await _open_every_page(page, answers, "read-only")
        status, _ = await page.act({**mwrs, "verb": "pause"})
        answers["read-only pause mwrs"] = status
    await _watching(hub, 0)
    return answers


def _scenario(hub: Hub) -> Outcome:
    _setup(hub.api())
    answers = asyncio.run(_browse(hub))
    return Outcome(hub.records("proc-c"), hub.records("proc-b"), answers)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    yield from scenario_outcome(tmp_path_factory, "dashboard-rbac", _scenario)


def test_the_scenario_opened_every_page_and_ran_the_writes(outcome: Outcome) -> None:
    pages = {k: v for k, v in outcome.answers.items() if " GET " in k}
    assert set(pages.values()) == {200}, pages
    for verb in ("pause", "resume"):
        assert outcome.answers[f"writable {verb} mwrs"] == 200
        assert outcome.answers[f"writable {verb} addon"] == 200
    # Decided on the fresh read, and refused by the hub's state (no rollout, no revision, no gate).
    assert {outcome.answers[f"writable {verb} mwrs"] for verb in ("abort", "undo", "promote")} <= {409}
    assert outcome.answers["read-only pause mwrs"] == 403


def test_the_writable_dashboard_gets_every_request_granted_and_nothing_more(outcome: Outcome) -> None:
    report = chart_dashboard_rbac_report(outcome.writable, read_only=False)
    assert report.ok, report.describe()


def test_the_read_only_dashboard_gets_every_request_granted_and_nothing_more(outcome: Outcome) -> None:
    report = chart_dashboard_rbac_report(outcome.read_only, read_only=True)
    assert report.ok, report.describe()
    assert not [r for r in outcome.read_only if r.resource and r.verb not in ("list", "watch")]
