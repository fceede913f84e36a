"""`ocm-rollout schedule` on files, as a user runs it (the output format is a contract)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCHEDULE = EXAMPLES / "schedule"
NOW = "2024-05-01T12:00:00Z"
GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"
GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ocm_rollout.cli", "schedule", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        timeout=120,
        check=False,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(["schedule", *args])
    captured = capsys.readouterr()
    output = json.loads(captured.out) if captured.out.strip() and "-o" in args else yaml.safe_load(captured.out or "null")
    return code, output, captured.err


def items_of(output: Any, kind: str) -> list[dict[str, Any]]:
    return [i for i in output["items"] if i["kind"] == kind]


def decided(output: Any) -> list[str]:
    return [d["clusterName"] for pd in items_of(output, "PlacementDecision") for d in pd["status"]["decisions"]]


def test_seed_decision_strategy_over_310_clusters() -> None:
    result = cli("-f", str(SCHEDULE / "canary-fleet-310.yaml"), "-f", str(EXAMPLES / "placement" / "placement-decision-groups.yaml"), "--now", NOW)
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    assert (output["apiVersion"], output["kind"]) == ("v1", "List")
    placement = output["items"][0]
    assert placement["kind"] == "Placement"
    assert placement["status"]["numberOfSelectedClusters"] == 310
    assert [(g["decisionGroupName"], g["clusterCount"], g["decisions"]) for g in placement["status"]["decisionGroups"]] == [
        ("prod-canary-west", 10, ["placement1-decision-1"]),
        ("prod-canary-east", 10, ["placement1-decision-2"]),
        ("", 150, ["placement1-decision-3", "placement1-decision-4"]),
        ("", 140, ["placement1-decision-5", "placement1-decision-6"]),
    ]
    pages = items_of(output, "PlacementDecision")
    assert [p["metadata"]["name"] for p in pages] == [f"placement1-decision-{i}" for i in range(1, 7)]
    assert pages[0]["metadata"] == {
        "name": "placement1-decision-1",
        "namespace": "default",
        "labels": {"cluster.open-cluster-management.io/placement": "placement1", GROUP_NAME: "prod-canary-west", GROUP_INDEX: "0"},
    }
    assert [len(p["status"]["decisions"]) for p in pages] == [10, 10, 100, 50, 100, 40]
    assert all(d["reason"] == "" for p in pages for d in p["status"]["decisions"])


MEMORY = [str(SCHEDULE / "memory-three-clusters.yaml")]


def memory_args(case: int, *extra: str) -> list[str]:
    args = ["-f", MEMORY[0], "-f", str(SCHEDULE / f"memory-case{case}-placement.yaml")]
    for name in extra:
        args += ["-f", str(SCHEDULE / name)]
    return [*args, "--now", NOW, "--explain", "-o", "json"]


def scores(output: Any) -> dict[str, int]:
    explanation = items_of(output, "PlacementExplanation")[0]
    return {s["clusterName"]: s["score"] for s in explanation["aggregatedScores"]}


def test_memory_case1_scores_0_100_200(capsys: pytest.CaptureFixture[str]) -> None:
    code, output, _ = run_main(capsys, *memory_args(1))
    assert code == 0
    assert scores(output) == {"cluster1": 0, "cluster2": 100, "cluster3": 200}
    assert decided(output) == ["cluster2", "cluster3"]


def test_memory_case1_small_newcomer_keeps_decision(capsys: pytest.CaptureFixture[str]) -> None:
    code, output, _ = run_main(capsys, *memory_args(1, "memory-cluster4-100mi.yaml", "memory-current-decision.yaml"))
    assert code == 0
    assert decided(output) == ["cluster2", "cluster3"]


def test_memory_case1_large_newcomer_moves_decision(capsys: pytest.CaptureFixture[str]) -> None:
    _, output, _ = run_main(capsys, *memory_args(1, "memory-cluster4-150mi.yaml", "memory-current-decision.yaml"))
    assert decided(output) == ["cluster3", "cluster4"]


def test_memory_case2_weight_3_moves_decision(capsys: pytest.CaptureFixture[str]) -> None:
    _, output, _ = run_main(capsys, *memory_args(2, "memory-cluster4-100mi.yaml", "memory-current-decision.yaml"))
    assert scores(output) == {"cluster1": -200, "cluster2": 200, "cluster3": 500, "cluster4": 400}
    assert decided(output) == ["cluster3", "cluster4"]


def test_memory_case3_steady_weight_3_pins_decision(capsys: pytest.CaptureFixture[str]) -> None:
    _, output, _ = run_main(capsys, *memory_args(3, "memory-cluster4-150mi.yaml", "memory-current-decision.yaml"))
    assert decided(output) == ["cluster2", "cluster3"]


def test_explanation_lists_filters_and_prioritizers(capsys: pytest.CaptureFixture[str]) -> None:
    _, output, _ = run_main(capsys, *memory_args(1))
    explanation = items_of(output, "PlacementExplanation")[0]
    assert explanation["metadata"] == {"name": "demo", "namespace": "ns1"}
    assert explanation["clusterSets"]["eligibleSets"] == ["global"]
    assert [f["name"] for f in explanation["filteredPipelineResults"]] == ["Predicate", "Predicate,TaintToleration"]
    assert [p["name"] for p in explanation["prioritizeResults"]] == ["Balance", "Steady", "ResourceAllocatableMemory"]
    assert output["items"][-1]["kind"] == "PlacementExplanation"


def test_same_input_same_output() -> None:
    args = ["-f", str(SCHEDULE), "--now", NOW, "-o", "json"]
    first, second = cli(*args), cli(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout


def test_directory_and_stdin_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    placement = (SCHEDULE / "memory-case1-placement.yaml").read_text()
    result = cli("-f", str(tmp_path), "-f", MEMORY[0], "-f", "-", "--now", NOW, stdin=placement)
    assert result.returncode == 0, result.stderr
    assert [i["kind"] for i in yaml.safe_load(result.stdout)["items"]] == ["Placement", "PlacementDecision"]


def test_placements_sorted_by_namespace_and_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = [{"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
             "metadata": {"name": name, "namespace": ns}, "spec": {}} for ns, name in [("b", "a"), ("a", "z"), ("a", "b")]]  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump_all(docs))
    code, output, _ = run_main(capsys, "-f", str(tmp_path / "p.yaml"), "--now", NOW)
    assert code == 0
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items_of(output, "Placement")] == [("a", "b"), ("a", "z"), ("b", "a")]


def test_misconfigured_placement_is_not_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
           "metadata": {"name": "bad", "namespace": "ns1"}, "spec": {"prioritizerPolicy": {"mode": "Sometimes"}}}  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    code, output, _ = run_main(capsys, "-f", MEMORY[0], "-f", str(tmp_path / "p.yaml"), "--now", NOW)
    assert code == 0
    conditions = {c["type"]: c for c in output["items"][0]["status"]["conditions"]}
    assert conditions["PlacementMisconfigured"]["status"] == "True"
    assert conditions["PlacementSatisfied"]["reason"] == "NoManagedClusterMatched"


def test_disabled_placement_printed_unchanged_with_its_decisions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = yaml.safe_load((SCHEDULE / "memory-case1-placement.yaml").read_text())
    doc["metadata"]["annotations"] = {"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    code, output, _ = run_main(capsys, "-f", MEMORY[0], "-f", str(tmp_path / "p.yaml"), "-f", str(SCHEDULE / "memory-current-decision.yaml"))
    assert code == 0
    assert "status" not in output["items"][0] or not output["items"][0]["status"].get("conditions")
    assert decided(output) == ["cluster2", "cluster3"]


def test_other_kinds_are_ignored_with_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    code, _, err = run_main(capsys, "-f", str(tmp_path / "cm.yaml"), "--now", NOW)
    assert code == 0
    assert "ignoring ConfigMap x" in err and "cm.yaml: document 1" in err


def test_invalid_yaml_names_file_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Placement\nmetadata: [unclosed\n")
    result = cli("-f", str(bad))
    assert result.returncode == 1
    assert str(bad) in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_object_names_file_document_and_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}},
            {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "metadata": {"name": "p"},
             "spec": {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": 11}]}}}]  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump_all(docs))
    code, _, err = run_main(capsys, "-f", str(tmp_path / "p.yaml"))
    assert code == 1
    assert "p.yaml: document 2 (Placement p)" in err
    assert "spec.prioritizerPolicy.configurations[0].weight" in err


def test_missing_file_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_main(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert code == 1 and "no such file or directory" in err


def test_bad_now_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "-f", MEMORY[0], "--now", "yesterday")
    assert code == 2 and "--now" in err


def test_list_kind_is_expanded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    items = yaml.safe_load_all((SCHEDULE / "memory-three-clusters.yaml").read_text())
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    code, output, _ = run_main(capsys, "-f", str(tmp_path / "list.json"), "-f", str(SCHEDULE / "memory-case1-placement.yaml"), "--now", NOW)
    assert code == 0
    assert decided(output) == ["cluster2", "cluster3"]
