"""`ocm-rollout schedule` on Placements that predate a CRD rule: scheduled, not rejected.

A Placement created before the CRD required ``scoreCoordinate`` or restricted
``clustersPerDecisionGroup`` to a pattern can be exported from a hub as it is stored. The command
schedules it as the controller would (docs/behaviour/scheduling.md §4, §6, §11): exit 0, and the problem is in
its PlacementMisconfigured condition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.e2e.test_schedule_cli import MEMORY, NOW, cli, items_of

PLACEMENT = "cluster.open-cluster-management.io/v1beta1"


def placement(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": PLACEMENT, "kind": "Placement", "metadata": {"name": name, "namespace": "ns1"}, "spec": spec}


def conditions(item: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in item["status"]["conditions"]}


def test_stored_objects_the_crd_would_now_reject_are_scheduled(tmp_path: Path) -> None:
    docs = [
        placement("no-coordinate", {"prioritizerPolicy": {"configurations": [{"weight": 2}]}}),
        placement("huge-percent", {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "1e400%"}}}),
        placement("no-percent", {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25"}}}),
        placement("over-100", {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "150%"}}}),
    ]
    (tmp_path / "placements.yaml").write_text(yaml.safe_dump_all(docs))
    result = cli("-f", MEMORY[0], "-f", str(tmp_path / "placements.yaml"), "--now", NOW)
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    placements = {p["metadata"]["name"]: p for p in items_of(output, "Placement")}
    assert list(placements) == ["huge-percent", "no-coordinate", "no-percent", "over-100"]

    no_coordinate = placements["no-coordinate"]
    assert conditions(no_coordinate)["PlacementMisconfigured"] == ("True", "Misconfigured", ":scoreCoordinate field is required")
    assert conditions(no_coordinate)["PlacementSatisfied"][:2] == ("False", "NoManagedClusterMatched")
    assert no_coordinate["status"]["numberOfSelectedClusters"] == 0
    assert no_coordinate["spec"]["prioritizerPolicy"]["configurations"] == [{"weight": 2}]

    for name, value in (("huge-percent", "1e400%"), ("no-percent", "25")):
        status = placements[name]["status"]
        assert conditions(placements[name])["PlacementMisconfigured"] == (
            "True",
            "Misconfigured",
            f":{value} invalid type: string is not a percentage",
        )
        assert conditions(placements[name])["PlacementSatisfied"][:2] == ("True", "AllDecisionsScheduled")
        assert status["numberOfSelectedClusters"] == 3
        assert status.get("decisionGroups", []) == []

    over = placements["over-100"]
    assert conditions(over)["PlacementMisconfigured"][:2] == ("False", "Succeedconfigured")
    assert [(g["clusterCount"], g["decisions"]) for g in over["status"]["decisionGroups"]] == [(3, ["over-100-decision-1"])]

    pages = {p["metadata"]["name"] for p in items_of(output, "PlacementDecision")}
    assert pages == {"no-coordinate-decision-1", "over-100-decision-1"}


def test_ignored_spec_parts_are_warned_on_stderr_and_in_the_explanation(tmp_path: Path) -> None:
    tolerating = placement("tolerating", {"tolerations": [{"key": "gpu", "operator": "In", "value": "a"}]})
    (tmp_path / "placement.yaml").write_text(yaml.safe_dump(tolerating))
    result = cli("-f", MEMORY[0], "-f", str(tmp_path / "placement.yaml"), "--now", NOW, "--explain")
    assert result.returncode == 0, result.stderr
    message = 'spec.tolerations[0] (key "gpu") has operator "In", which is neither Equal nor Exists: it tolerates no taint'
    assert result.stderr.splitlines() == [f"warning: Placement ns1/tolerating: {message}"]
    (explained,) = items_of(yaml.safe_load(result.stdout), "PlacementExplanation")
    assert explained["warnings"] == [message]


def test_an_unresolvable_cluster_set_is_misconfigured_offline_too(tmp_path: Path) -> None:
    bad_set = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "bad"},
        "spec": {"clusterSelector": {"selectorType": "LabelSelector",
                                     "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Foo"}]}}},
    }  # fmt: skip
    bound = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "bad", "namespace": "ns1"},
        "spec": {"clusterSet": "bad"},
    }
    (tmp_path / "inputs.yaml").write_text(yaml.safe_dump_all([bad_set, bound, placement("p", {})]))
    result = cli("-f", MEMORY[0], "-f", str(tmp_path / "inputs.yaml"), "--now", NOW)
    assert result.returncode == 0, result.stderr
    assert "warning: Placement ns1/p: not scheduled: invalid label selector of ManagedClusterSet bad" in result.stderr
    (item,) = items_of(yaml.safe_load(result.stdout), "Placement")
    status, reason, message = conditions(item)["PlacementMisconfigured"]
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith(":invalid label selector of ManagedClusterSet bad: ")
