"""`ocm-rollout plan`: the JSON contract, errors and the table for people."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.cli.main import main
from tests.unit.test_rollout_planner import MIN, NOW, grp, ppg, prog, rep

CANARY_DOC: dict[str, Any] = {
    "now": NOW,
    "strategy": prog(
        mandatoryDecisionGroups=[{"groupName": "canary"}],
        maxConcurrency="50%",
        minSuccessTime="5m",
        progressDeadline="10m",
        maxFailures=1,
    ),
    "decisionGroups": [grp(0, "c1", "c2", name="canary"), grp(1, "p1", "p2", "p3", "p4", name="prod")],
    "existing": [
        rep("c1", "Succeeded", -60 * MIN),
        rep("c2", "Succeeded", -2 * MIN),
        rep("gone", "Progressing"),
    ],
}


def write(tmp_path: Path, doc: Any) -> str:
    path = tmp_path / "input.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_plan_prints_the_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "--input", write(tmp_path, CANARY_DOC))
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "strategy": {
            "type": "Progressive",
            "progressive": {
                "mandatoryDecisionGroups": [{"groupName": "canary"}],
                "maxConcurrency": "50%",
                "minSuccessTime": "5m",
                "progressDeadline": "10m",
                "maxFailures": 1,
            },
        },
        "clustersToRollout": [
            {
                "clusterName": "c2",
                "groupName": "canary",
                "groupIndex": 0,
                "status": "Succeeded",
                "lastTransitionTime": "2024-05-01T11:58:00Z",
                "recheckTime": "2024-05-01T12:03:00Z",
            }
        ],
        "clustersTimeOut": [],
        "clustersRemoved": [
            {
                "clusterName": "gone",
                "groupName": "",
                "groupIndex": 0,
                "status": "Progressing",
                "lastTransitionTime": None,
                "recheckTime": None,
            }
        ],
        "maxFailureBreach": False,
        "recheckAfterSeconds": 180.0,
    }


def test_plan_reads_stdin_with_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = dict(CANARY_DOC, existing=[rep("c1", "Succeeded", -60 * MIN), rep("c2", "Succeeded", -60 * MIN)])
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(doc)))
    code, out, _ = run_cli(capsys, "--input", "-")
    assert code == 0
    assert [item["clusterName"] for item in json.loads(out)["clustersToRollout"]] == ["p1", "p2"]


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"type": "Canary"}, "strategy.type"),
        ({"type": "All", "all": {"progressDeadline": "2d"}}, "strategy.all.progressDeadline"),
        ({"type": "Progressive", "progressive": {"maxFailures": "5"}}, "strategy.progressive.maxFailures"),
        (
            {"type": "Progressive", "progressive": {"maxConcurrency": "x%"}},
            "strategy.progressive.maxConcurrency",
        ),
    ],
)
def test_malformed_strategy_exits_2_with_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: dict[str, Any], field: str
) -> None:
    code, out, err = run_cli(capsys, "--input", write(tmp_path, dict(CANARY_DOC, strategy=strategy)))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert field in err
    assert "Traceback" not in err


def test_unknown_status_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = dict(CANARY_DOC, existing=[{"clusterName": "c1", "status": "Done"}])
    code, _, err = run_cli(capsys, "--input", write(tmp_path, doc))
    assert code == 2
    assert "existing[0].status" in err


@pytest.mark.parametrize("text", ["{", "[1, 2", '{"now": NaN}', ""])
def test_invalid_json_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, _, err = run_cli(capsys, "--input", write(tmp_path, text))
    assert code == 2
    assert err.startswith("ocm-rollout plan: error: input")
    assert err.count("\n") == 1


def test_missing_input_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--input", str(tmp_path / "nope.json"))
    assert code == 2
    assert "nope.json" in err


def test_table_shows_each_group_and_why_clusters_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--input", write(tmp_path, CANARY_DOC), "-o", "table")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Plan at 2024-05-01T12:00:00Z"
    assert 'Group 0 "canary" [mandatory]: 2 clusters' in lines
    assert 'Group 1 "prod": 4 clusters' in lines
    row = next(line for line in lines if line.strip().startswith("c2 "))
    assert "soaking" in row and "until 2024-05-01T12:03:00Z" in row
    row = next(line for line in lines if line.strip().startswith("p1 "))
    assert "mandatory groups not finished" in row
    row = next(line for line in lines if line.strip().startswith("gone "))
    assert "no longer in any decision group" in row
    assert lines[-1].startswith("Summary: 0 to apply now, 0 in flight, 1 soaking, 0 timed out, 1 removed")
    assert "recheck after 180s" in lines[-1]


def table_row(capsys: pytest.CaptureFixture[str], tmp_path: Path, doc: dict[str, Any], cluster: str) -> str:
    code, out, _ = run_cli(capsys, "--input", write(tmp_path, doc), "-o", "table")
    assert code == 0
    return next(line for line in out.splitlines() if line.strip().startswith(f"{cluster} "))


def test_table_explains_clusters_blocked_by_max_concurrency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {"now": NOW, "strategy": prog(maxConcurrency=1), "decisionGroups": [grp(0, "a", "b")]}
    assert "apply" in table_row(capsys, tmp_path, doc, "a")
    assert "maxConcurrency" in table_row(capsys, tmp_path, doc, "b")


def test_table_explains_clusters_blocked_by_a_breach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "now": NOW,
        "strategy": prog(),
        "decisionGroups": [grp(0, "a", "b")],
        "existing": [rep("a", "TimeOut")],
    }
    assert "maxFailures breached" in table_row(capsys, tmp_path, doc, "b")
    assert "counts as a failure" in table_row(capsys, tmp_path, doc, "a")


def test_table_explains_in_flight_timed_out_and_waiting_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "now": NOW,
        "strategy": ppg(progressDeadline="10m", maxFailures=1),
        "decisionGroups": [grp(0, "a", "b"), grp(1, "c", "d"), grp(2, "e")],
        "existing": [rep("a", "Progressing", -MIN), rep("b", "Progressing", -20 * MIN)],
    }
    assert "in flight (deadline 2024-05-01T12:09:00Z)" in table_row(capsys, tmp_path, doc, "a")
    assert "timed out at 2024-05-01T11:50:00Z" in table_row(capsys, tmp_path, doc, "b")
    assert "apply" in table_row(capsys, tmp_path, doc, "c")
    assert 'group 1 "g1" not finished' in table_row(capsys, tmp_path, doc, "e")


def test_table_marks_groups_with_an_index_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {"now": NOW, "strategy": {"type": "All"}, "decisionGroups": [grp(0, "a"), grp(4, "z")]}
    assert "never rolled out" in table_row(capsys, tmp_path, doc, "z")


def test_console_script_plans_from_stdin_and_rejects_bad_input() -> None:
    script = Path(sys.executable).with_name("ocm-rollout")
    done = subprocess.run(
        [str(script), "plan", "--input", "-"],
        input=json.dumps(CANARY_DOC),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["recheckAfterSeconds"] == 180.0
    bad = subprocess.run(
        [str(script), "plan", "--input", "-"],
        input=json.dumps(dict(CANARY_DOC, strategy={"type": "Sometimes"})),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()]
    assert "strategy.type" in bad.stderr
