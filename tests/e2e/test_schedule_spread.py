"""`ocm-rollout schedule` with the whole Placement API: the spread example, scores, sortBy and
the score rate limit, from files, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "examples" / "schedule" / "spread-fleet.yaml"
SPREAD = ROOT / "examples" / "placement" / "placement-spread.yaml"
NOW = "2026-03-01T12:00:00Z"


def schedule(*args: str, stdin: str | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "ocm_rollout.cli", "schedule", "--now", NOW, "-o", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    output: dict[str, Any] = json.loads(done.stdout)
    return output


def of_kind(output: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in output["items"] if item["kind"] == kind]


def decisions(output: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for page in of_kind(output, "PlacementDecision") for d in page["status"]["decisions"]]


def region(name: str) -> str:
    return name.rsplit("-", 2)[0]


def test_the_spread_example_keeps_every_region_within_the_skew_and_says_why_it_selects_five() -> None:
    output = schedule("-f", str(FLEET), "-f", str(SPREAD), "--explain")
    chosen = [d["clusterName"] for d in decisions(output)]
    assert Counter(region(n) for n in chosen) == {"ap-south": 1, "eu-west": 2, "us-east": 2}
    assert {n for n in chosen if n.startswith("us-east")} == {"us-east-1a-1", "us-east-1b-1"}
    (placement,) = of_kind(output, "Placement")
    satisfied = next(c for c in placement["status"]["conditions"] if c["type"] == "PlacementSatisfied")
    assert (satisfied["status"], satisfied["reason"]) == ("False", "NotAllDecisionsScheduled")
    assert "spread term 1 (Label region, DoNotSchedule, maxSkew 1) held back 6 clusters" in satisfied["message"]
    (explained,) = of_kind(output, "PlacementExplanation")
    regions = explained["spread"]["terms"][0]["topologies"]
    assert [(t["values"], t["candidates"], t["selected"]) for t in regions] == [
        (["ap-south"], 1, 1),
        (["eu-west"], 4, 2),
        (["us-east"], 6, 2),
    ]


def test_every_decision_carries_a_score() -> None:
    output = schedule("-f", str(FLEET), "-f", str(SPREAD))
    assert all(isinstance(d.get("score"), int) for d in decisions(output))
    (placement,) = of_kind(output, "Placement")
    assert placement["status"]["lastScoreUpdateTime"] == NOW


def test_score_changes_within_the_rate_limit_keep_the_recorded_scores() -> None:
    """Feed the command's own output back with other scores recorded: within scoreRateLimit
    (5m since lastScoreUpdateTime) the recorded scores stay; after it, the new ones land."""
    first = schedule("-f", str(FLEET), "-f", str(SPREAD))
    placement = of_kind(first, "Placement")[0]
    pages = of_kind(first, "PlacementDecision")
    for page in pages:
        for d in page["status"]["decisions"]:
            d["score"] = 7
    for when, expected in (("2026-03-01T11:58:00Z", {7}), ("2026-03-01T11:50:00Z", {200})):
        placement["status"]["lastScoreUpdateTime"] = when
        again = schedule("-f", str(FLEET), "-f", "-", stdin=yaml.safe_dump_all([placement, *pages]))
        assert {d["score"] for d in decisions(again)} == expected, when
