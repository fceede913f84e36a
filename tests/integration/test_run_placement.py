"""`ocm-rollout run --controllers placement` as a process on the local hub: scheduling figures
on /metrics, the debug endpoint on the debug address, and least privilege measured from the
hub's request log.

One scenario runs once for the module: three clusters in a set bound to a namespace, a
Placement cut into two decision groups (two pages), then one group renamed (a label patch) and
the groups merged (a surplus page deleted).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from ocm_rollout.controllers.runtime import registry
from tests.integration.helpers import (
    Api,
    Hub,
    RunOutcome,
    assert_chart_grants_every_request,
    assert_chart_grants_nothing_unused,
    assert_exited_zero,
    free_port,
    metric_sample,
    scenario_outcome,
    start_controller,
    wait_until,
)

pytestmark = pytest.mark.integration

NS = "scheduling"
SET = "fleet"
CLUSTERS = ["east-1", "east-2", "west-1"]
PLACEMENT = "spread"
GROUP = "cluster.open-cluster-management.io"
GROUP_NAME_LABEL = f"{GROUP}/decision-group-name"


@dataclass
class Outcome(RunOutcome):
    """`RunOutcome` and the debug endpoint's answer."""

    debug_status: int
    debug_body: dict[str, Any]


def _pages(api: Api) -> dict[str, tuple[str, list[str]]]:
    return {
        p["metadata"]["name"]: (
            (p["metadata"].get("labels") or {}).get(GROUP_NAME_LABEL, ""),
            sorted(d["clusterName"] for d in (p.get("status") or {}).get("decisions") or []),
        )
        for p in api.list(PLACEMENT_DECISIONS, NS, f"{LABEL_PLACEMENT}={PLACEMENT}")
    }


def _groups(name: str) -> dict[str, Any]:
    return {
        "decisionStrategy": {
            "groupStrategy": {
                "clustersPerDecisionGroup": "100%",
                "decisionGroups": [{"groupName": name, "groupClusterSelector": {"labelSelector": {"matchLabels": {"region": "east"}}}}],
            }
        }
    }


def _setup(api: Api) -> None:
    api.create(NAMESPACES, {"metadata": {"name": NS}})
    api.create(MANAGED_CLUSTER_SETS, {"metadata": {"name": SET}, "spec": {}})
    for name in CLUSTERS:
        labels = {f"{GROUP}/clusterset": SET, "region": name.split("-")[0]}
        api.create(MANAGED_CLUSTERS, {"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": True}})
    api.create(MANAGED_CLUSTER_SET_BINDINGS, {"metadata": {"name": SET}, "spec": {"clusterSet": SET}}, NS)
    api.create(PLACEMENTS, {"metadata": {"name": PLACEMENT}, "spec": _groups("canary")}, NS)


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read().decode(errors="replace")}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    if "placement" not in registry.available_controllers():
        pytest.skip("the placement controller is not in this build")
    yield from scenario_outcome(tmp_path_factory, "run-placement", _scenario)


def _scenario(hub: Hub) -> Outcome:
    api = hub.api()
    _setup(api)
    debug = f"127.0.0.1:{free_port()}"
    proc = start_controller(hub, "placement", "--debug-bind-address", debug)
    try:
        two_pages = {f"{PLACEMENT}-decision-1": ("canary", ["east-1", "east-2"]), f"{PLACEMENT}-decision-2": ("", ["west-1"])}
        wait_until(lambda: _pages(api) == two_pages, timeout=60, message="two decision pages")
        debug_status, debug_body = wait_until(
            lambda: (lambda got: got if got[0] == 200 else None)(_get(f"http://{debug}/debug/placements/{NS}/{PLACEMENT}")),
            timeout=30,
            message="the debug endpoint",
        )
        # Rename the group: the page's group-name label is patched.
        api.patch(PLACEMENTS, PLACEMENT, {"spec": _groups("first")}, NS)
        renamed = {**two_pages, f"{PLACEMENT}-decision-1": ("first", ["east-1", "east-2"])}
        wait_until(lambda: _pages(api) == renamed, timeout=60, message="the renamed group's label")
        # No groups any more: one page, the surplus page deleted.
        api.patch(PLACEMENTS, PLACEMENT, {"spec": {"decisionStrategy": None}}, NS)
        wait_until(lambda: _pages(api) == {f"{PLACEMENT}-decision-1": ("", CLUSTERS)}, timeout=60, message="a single page")
        return Outcome.of(hub, proc, proc.metrics(), debug_status=debug_status, debug_body=debug_body)
    finally:
        proc.kill()


def test_metrics_expose_scheduling_duration_and_placement_reconciles(outcome: Outcome) -> None:
    assert (metric_sample(outcome.metrics, "ocm_rollout_scheduling_duration_seconds_count") or 0) > 0
    assert (metric_sample(outcome.metrics, "ocm_rollout_reconcile_total", controller="placement") or 0) > 0


def test_debug_endpoint_is_served_on_the_debug_address(outcome: Outcome) -> None:
    assert outcome.debug_status == 200, outcome.debug_body
    assert {s["clusterName"] for s in outcome.debug_body["aggregatedScores"]} == set(CLUSTERS)


def test_sigterm_exits_zero(outcome: Outcome) -> None:
    assert_exited_zero(outcome)


def test_every_request_the_placement_controller_made_is_granted_by_the_chart(outcome: Outcome) -> None:
    assert_chart_grants_every_request(outcome, "placement")


def test_the_chart_grants_the_placement_controller_nothing_it_did_not_use(outcome: Outcome) -> None:
    assert_chart_grants_nothing_unused(outcome, "placement")
