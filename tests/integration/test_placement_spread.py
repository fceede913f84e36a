"""spreadPolicy, decision scores, ``sortBy: Score`` and ``scoreRateLimit`` on the local hub.

The placement operator (kopf, one worker: its queue is FIFO) runs against the session's hub,
as in test_placement_controller.py. Each test builds its own cluster set, namespace, clusters
(and their namespaces and AddOnPlacementScores), removed again afterwards. The tests assert on
what is stored: PlacementDecision pages, the Placement's status, Events and the debug endpoint.
"""

from __future__ import annotations

import json
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX, LABEL_DECISION_GROUP_NAME, LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    JSON,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from tests.integration.helpers import WatchMonitor, free_port
from tests.integration.test_placement_env import Api, PlacementOperator

WaitFor = Callable[..., Any]
TIMEOUT = 20.0
SCORE = "usage"  # the AddOnPlacementScore's name
SCORE_ITEM = "value"  # the score inside it
CLAIM_ZONE = "zone.spread.example.io"
# Exact mode without configurations: no prioritizer, every cluster scores 0 (order by name).
NO_PRIORITIZERS = {"mode": "Exact"}
ADDON_ONLY = {
    "mode": "Exact",
    "configurations": [
        {
            "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": SCORE, "scoreName": SCORE_ITEM}},
            "weight": 1,
        }
    ],
}


# --------------------------------------------------------------------------------------------
# The operator, the client and one test's objects
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def debug_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def operator(controller_kubeconfig: Path, debug_port: int) -> Iterator[PlacementOperator]:
    runner = PlacementOperator(str(controller_kubeconfig), debug_port=debug_port)
    runner.start()
    try:
        yield runner
    finally:
        runner.stop()


@pytest.fixture(scope="module")
def api(controller_kubeconfig: Path) -> Api:
    return Api(str(controller_kubeconfig))


class Fleet:
    """A cluster set bound to a fresh namespace, and its clusters (``add``)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.tag = uuid.uuid4().hex[:6]
        self.set = f"spread-{self.tag}"
        api.cluster_set(self.set)
        self.namespace = api.namespace(f"spread-{self.tag}")
        api.binding(self.set, self.namespace)
        self.clusters: list[str] = []
        self.cluster_namespaces: list[str] = []

    def name(self, base: str) -> str:
        return f"{base}-{self.tag}"

    def add(self, base: str, labels: dict[str, str] | None = None, score: int | None = None) -> str:
        """Cluster ``<base>-<tag>``; with ``score``, first its namespace and its AddOnPlacementScore."""
        name = self.name(base)
        if score is not None:
            self.api.create(NAMESPACES, {"metadata": {"name": name}})
            self.cluster_namespaces.append(name)
            self.set_score(name, score)
        self.api.cluster(name, self.set, labels)
        self.clusters.append(name)
        return name

    def set_score(self, cluster: str, value: int) -> None:
        self.api.score(cluster, SCORE, {SCORE_ITEM: value})

    def remove(self) -> None:
        # The Placements' namespace first, so that no Placement is rescheduled as clusters go.
        self.api.delete(NAMESPACES, self.namespace)
        for name in self.clusters:
            self.api.delete(MANAGED_CLUSTERS, name)
        self.api.delete(MANAGED_CLUSTER_SETS, self.set)
        for namespace in self.cluster_namespaces:
            self.api.delete(NAMESPACES, namespace)


@pytest.fixture
def fleet(api: Api) -> Iterator[Fleet]:
    made = Fleet(api)
    try:
        yield made
    finally:
        made.remove()


# --------------------------------------------------------------------------------------------
# Reading what is stored
# --------------------------------------------------------------------------------------------


def scored(api: Api, placement: str, namespace: str) -> list[tuple[str, int | None]]:
    """(cluster, score) of every decision, over every page in page order."""
    return [
        (d["clusterName"], d.get("score"))
        for page in api.decisions(placement, namespace)
        for d in (page.get("status") or {}).get("decisions") or []
    ]


def pages_of(api: Api, placement: str, namespace: str) -> list[tuple[str, str, str, list[str]]]:
    """(page name, group index label, group name label, clusters) of every page."""
    out = []
    for page in api.decisions(placement, namespace):
        labels = page["metadata"].get("labels") or {}
        clusters = [d["clusterName"] for d in (page.get("status") or {}).get("decisions") or []]
        out.append(
            (
                page["metadata"]["name"],
                labels.get(LABEL_DECISION_GROUP_INDEX, ""),
                labels.get(LABEL_DECISION_GROUP_NAME, ""),
                clusters,
            )
        )
    return out


def satisfied(api: Api, placement: str, namespace: str) -> tuple[str, str, str] | None:
    cond = api.condition(placement, namespace, "PlacementSatisfied")
    return None if cond is None else (cond["status"], cond["reason"], cond["message"])


def placement_status(api: Api, placement: str, namespace: str) -> JSON:
    status: JSON = (api.get_or_none(PLACEMENTS, placement, namespace) or {}).get("status") or {}
    return status


def last_score_update(api: Api, placement: str, namespace: str) -> datetime | None:
    stamp = placement_status(api, placement, namespace).get("lastScoreUpdateTime")
    return None if stamp is None else datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def debug(port: int, namespace: str, placement: str) -> JSON:
    url = f"http://127.0.0.1:{port}/debug/placements/{namespace}/{placement}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body: JSON = json.loads(response.read())
    return body


def debug_scores(port: int, namespace: str, placement: str) -> dict[str, int]:
    return {
        s["clusterName"]: s["score"] for s in debug(port, namespace, placement).get("aggregatedScores") or []
    }


def cached_scores(port: int, namespace: str, spec: JSON) -> dict[str, int]:
    """The scores a Placement with ``spec`` in ``namespace`` would get from what the controller
    has cached now (the debug endpoint's POST schedules a Placement it is given)."""
    placement = {
        "apiVersion": PLACEMENTS.api_version,
        "kind": PLACEMENTS.kind,
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": spec,
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/debug/placements",
        data=json.dumps(placement).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body: JSON = json.loads(response.read())
    return {s["clusterName"]: s["score"] for s in body.get("aggregatedScores") or []}


def wait_cached(port: int, namespace: str, spec: JSON, scores: dict[str, int], wait_for: WaitFor) -> None:
    """Wait until the controller has cached every cluster and score in ``scores``.

    Creating a Placement only then keeps its first pass from scoring a cluster 0 because the
    cluster's AddOnPlacementScore had not reached the cache yet: the real score would then be
    a score-only change, held back for scoreRateLimit (a minute by default)."""
    wait_for(
        lambda: cached_scores(port, namespace, spec) == scores, timeout=TIMEOUT, message="the scores cached"
    )


# --------------------------------------------------------------------------------------------
# Knowing that the controller has looked
# --------------------------------------------------------------------------------------------


def barrier(operator: PlacementOperator, api: Api, namespace: str, wait_for: WaitFor) -> None:
    """Touch a marker Placement and wait for its pass: with one worker the queue is FIFO, so
    every pass queued before the touch has run."""
    if api.get_or_none(PLACEMENTS, "marker", namespace) is None:
        api.placement("marker", namespace, {"clusterSets": ["none"]})
        wait_for(
            lambda: operator.passes(namespace, "marker") > 0,
            timeout=TIMEOUT,
            message="the marker's first pass",
        )
    before = operator.passes(namespace, "marker")
    api.patch(PLACEMENTS, "marker", {"metadata": {"annotations": {"touch": uuid.uuid4().hex}}}, namespace)
    wait_for(
        lambda: operator.passes(namespace, "marker") > before, timeout=TIMEOUT, message="the marker's pass"
    )


def settled(
    operator: PlacementOperator, api: Api, namespace: str, names: list[str], wait_for: WaitFor
) -> dict[str, int]:
    """The pass counts of ``names`` once their own writes have stopped re-queuing them."""

    def stable() -> dict[str, int] | None:
        counts = {name: operator.passes(namespace, name) for name in names}
        barrier(operator, api, namespace, wait_for)
        return counts if all(operator.passes(namespace, n) == c for n, c in counts.items()) else None

    result: dict[str, int] = wait_for(stable, timeout=TIMEOUT, message=f"{names} settled")
    return result


def looked_again(
    operator: PlacementOperator, api: Api, namespace: str, before: dict[str, int], wait_for: WaitFor
) -> None:
    """Wait until every Placement in ``before`` has had a pass since, then until it has ended."""
    wait_for(
        lambda: all(operator.passes(namespace, n) > c for n, c in before.items()),
        timeout=TIMEOUT,
        message=f"passes of {sorted(before)}",
    )
    barrier(operator, api, namespace, wait_for)


# --------------------------------------------------------------------------------------------
# 1. Spread over nested topologies, with decision groups
# --------------------------------------------------------------------------------------------

# zone -> (region, clusters): regions of 2, 4 and 6 clusters; r2 and r3 each have a big zone
# and a one-cluster zone.
ZONES = {
    "r1-a": ("r1", 1),
    "r1-b": ("r1", 1),
    "r2-a": ("r2", 3),
    "r2-b": ("r2", 1),
    "r3-a": ("r3", 5),
    "r3-b": ("r3", 1),
}


def spread_term(key: str, *, skew: int = 1, key_type: str = "Label") -> JSON:
    return {
        "topologyKey": key,
        "topologyKeyType": key_type,
        "maxSkew": skew,
        "whenUnsatisfiable": "DoNotSchedule",
    }


def test_spread_over_regions_and_zones_with_decision_groups(
    operator: PlacementOperator, api: Api, fleet: Fleet, wait_for: WaitFor, debug_port: int
) -> None:
    for zone, (region, count) in ZONES.items():
        for i in range(count):
            name = fleet.add(f"{zone}-{i}", {"region": region, "zone": zone})
            claims = [{"name": CLAIM_ZONE, "value": zone}]
            api.patch(MANAGED_CLUSTERS, name, {"status": {"clusterClaims": claims}}, sub="status")
    c = fleet.name
    first_region = {
        "groupName": "first",
        "groupClusterSelector": {"labelSelector": {"matchLabels": {"region": "r1"}}},
    }
    spec: JSON = {
        "numberOfClusters": 6,
        "prioritizerPolicy": NO_PRIORITIZERS,
        "spreadPolicy": {"spreadConstraints": [spread_term("region"), spread_term("zone")]},
        "decisionStrategy": {
            "groupStrategy": {"clustersPerDecisionGroup": 3, "decisionGroups": [first_region]}
        },
    }
    api.placement("spread", fleet.namespace, spec)

    # Six clusters: two per region; within r2 and r3 one per zone (by name alone it would be two
    # of the big zone). The named group takes r1, the rest is cut into groups of three by name.
    six = [
        ("spread-decision-1", "0", "first", [c("r1-a-0"), c("r1-b-0")]),
        ("spread-decision-2", "1", "", [c("r2-a-0"), c("r2-b-0"), c("r3-a-0")]),
        ("spread-decision-3", "2", "", [c("r3-b-0")]),
    ]
    wait_for(
        lambda: pages_of(api, "spread", fleet.namespace) == six,
        timeout=TIMEOUT,
        message="six clusters spread",
    )
    assert wait_for(lambda: satisfied(api, "spread", fleet.namespace), timeout=TIMEOUT) == (
        "True",
        "AllDecisionsScheduled",
        "All cluster decisions scheduled",
    )
    assert {score for _, score in scored(api, "spread", fleet.namespace)} == {0}

    # Ten wanted: region skew 1 allows at most 2 + 1 in r2 and r3 (r1 has only 2), so 8 are
    # selected; within r2 and r3 the zone term keeps the big zone at 2.
    api.patch(PLACEMENTS, "spread", {"spec": {"numberOfClusters": 10}}, fleet.namespace)
    eight = [
        ("spread-decision-1", "0", "first", [c("r1-a-0"), c("r1-b-0")]),
        ("spread-decision-2", "1", "", [c("r2-a-0"), c("r2-a-1"), c("r2-b-0")]),
        ("spread-decision-3", "2", "", [c("r3-a-0"), c("r3-a-1"), c("r3-b-0")]),
    ]
    wait_for(
        lambda: pages_of(api, "spread", fleet.namespace) == eight,
        timeout=TIMEOUT,
        message="eight clusters spread",
    )
    held = "spread term 1 (Label region, DoNotSchedule, maxSkew 1) held back 4 clusters"
    assert wait_for(
        lambda: (s := satisfied(api, "spread", fleet.namespace)) and s[1] == "NotAllDecisionsScheduled" and s,
        timeout=TIMEOUT,
        message="NotAllDecisionsScheduled",
    ) == ("False", "NotAllDecisionsScheduled", f"2 cluster decisions unscheduled: {held}")
    status = placement_status(api, "spread", fleet.namespace)
    assert status["numberOfSelectedClusters"] == 8
    assert status["decisionGroups"] == [
        {
            "decisionGroupIndex": 0,
            "decisionGroupName": "first",
            "decisions": ["spread-decision-1"],
            "clusterCount": 2,
        },
        {
            "decisionGroupIndex": 1,
            "decisionGroupName": "",
            "decisions": ["spread-decision-2"],
            "clusterCount": 3,
        },
        {
            "decisionGroupIndex": 2,
            "decisionGroupName": "",
            "decisions": ["spread-decision-3"],
            "clusterCount": 3,
        },
    ]

    note = (
        "spread term 1 (Label region, DoNotSchedule, maxSkew 1): r1=2/2 r2=3/4 r3=3/6; "
        "spread term 2 (Label zone, DoNotSchedule, maxSkew 1): "
        "r1/r1-a=1/1 r1/r1-b=1/1 r2/r2-a=2/3 r2/r2-b=1/1 r3/r3-a=2/5 r3/r3-b=1/1; " + held
    )
    event = wait_for(
        lambda: next(
            (
                e
                for e in api.events(fleet.namespace, "spread")
                if e["reason"] == "SpreadUpdate" and e["message"] == note
            ),
            None,
        ),
        timeout=TIMEOUT,
        message="a SpreadUpdate event with the eight-cluster note",
    )
    assert (event["type"], event["involvedObject"]["kind"]) == ("Normal", "Placement")

    body = debug(debug_port, fleet.namespace, "spread")
    region, zone = body["spread"]["terms"]
    assert body["spread"]["heldBack"] == 4
    assert (
        region["topologyKey"],
        region["topologyKeyType"],
        region["maxSkew"],
        region["whenUnsatisfiable"],
    ) == (
        "region",
        "Label",
        1,
        "DoNotSchedule",
    )
    assert [(t["values"], t["candidates"], t["selected"]) for t in region["topologies"]] == [
        (["r1"], 2, 2),
        (["r2"], 4, 3),
        (["r3"], 6, 3),
    ]
    assert (region["withoutKey"], region["heldBack"]) == (0, 4)
    assert [(t["values"], t["candidates"], t["selected"]) for t in zone["topologies"]] == [
        (["r1", "r1-a"], 1, 1),
        (["r1", "r1-b"], 1, 1),
        (["r2", "r2-a"], 3, 2),
        (["r2", "r2-b"], 1, 1),
        (["r3", "r3-a"], 5, 2),
        (["r3", "r3-b"], 1, 1),
    ]
    assert (zone["withoutKey"], zone["heldBack"]) == (0, 0)

    # Region skew 2 and zones from a claim, every allowed cluster wanted: the zone term is now the
    # one holding clusters back, and the Placement is satisfied but says so.
    zoned: JSON = {
        "prioritizerPolicy": NO_PRIORITIZERS,
        "spreadPolicy": {
            "spreadConstraints": [spread_term("region", skew=2), spread_term(CLAIM_ZONE, key_type="Claim")]
        },
    }
    api.placement("zoned", fleet.namespace, zoned)
    expected = sorted(
        c(n) for n in ["r1-a-0", "r1-b-0", "r2-a-0", "r2-a-1", "r2-b-0", "r3-a-0", "r3-a-1", "r3-b-0"]
    )
    wait_for(
        lambda: sorted(api.decided("zoned", fleet.namespace)) == expected,
        timeout=TIMEOUT,
        message="zoned decisions",
    )
    assert wait_for(lambda: satisfied(api, "zoned", fleet.namespace), timeout=TIMEOUT) == (
        "True",
        "AllDecisionsScheduled",
        "All cluster decisions scheduled; spreadPolicy kept other matching clusters out: "
        f"spread term 2 (Claim {CLAIM_ZONE}, DoNotSchedule, maxSkew 1) held back 4 clusters",
    )


# --------------------------------------------------------------------------------------------
# 2. sortBy: Score across 100-cluster pages
# --------------------------------------------------------------------------------------------


def test_sort_by_score_orders_decisions_across_pages(
    operator: PlacementOperator, api: Api, fleet: Fleet, wait_for: WaitFor, debug_port: int
) -> None:
    # 150 clusters whose score order differs from their name order: s000 .. s149, cluster i
    # scored (53 * i mod 150) - 75 (distinct), then ties on purpose: the clusters ranked 100th
    # and 101st share a score (a tie across the page boundary), and so do the top two.
    values = {f"s{i:03d}": (53 * i) % 150 - 75 for i in range(150)}
    by_value = {v: name for name, v in values.items()}
    values[by_value[-26]] = -25
    values[by_value[73]] = 74
    scores = {fleet.add(base, score=v): v for base, v in values.items()}
    spec = {"prioritizerPolicy": ADDON_ONLY, "sortBy": "Score"}
    wait_cached(debug_port, fleet.namespace, spec, scores, wait_for)
    api.placement("top", fleet.namespace, spec)

    ranked = sorted(scores, key=lambda name: (-scores[name], name))
    assert scores[ranked[99]] == scores[ranked[100]] and scores[ranked[0]] == scores[ranked[1]]
    assert ranked != sorted(scores)
    expected = [(name, scores[name]) for name in ranked]
    wait_for(
        lambda: scored(api, "top", fleet.namespace) == expected,
        timeout=TIMEOUT,
        message="150 decisions by score",
    )
    pages = api.decisions("top", fleet.namespace)
    assert [p["metadata"]["name"] for p in pages] == ["top-decision-1", "top-decision-2"]
    first, second = ([(d["clusterName"], d["score"]) for d in p["status"]["decisions"]] for p in pages)
    assert first == expected[:100]
    assert second == expected[100:]
    assert [p["metadata"]["labels"][LABEL_DECISION_GROUP_INDEX] for p in pages] == ["0", "0"]
    groups = [
        {
            "decisionGroupIndex": 0,
            "decisionGroupName": "",
            "decisions": ["top-decision-1", "top-decision-2"],
            "clusterCount": 150,
        }
    ]
    wait_for(
        lambda: placement_status(api, "top", fleet.namespace).get("decisionGroups") == groups,
        timeout=TIMEOUT,
        message="the Placement's decision groups",
    )


# --------------------------------------------------------------------------------------------
# 3. scoreRateLimit
# --------------------------------------------------------------------------------------------


@dataclass
class DecisionVersions:
    """Every version of one Placement's decisions seen through a watch: (when it was seen,
    {cluster: score} over its pages)."""

    namespace: str
    placement: str
    seen: list[tuple[datetime, dict[str, int | None]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, objects: dict[tuple[str, str], JSON]) -> str | None:
        decisions: dict[str, int | None] = {}
        for (namespace, _), obj in sorted(objects.items()):
            labels = obj["metadata"].get("labels") or {}
            if namespace == self.namespace and labels.get(LABEL_PLACEMENT) == self.placement:
                for d in (obj.get("status") or {}).get("decisions") or []:
                    decisions[d["clusterName"]] = d.get("score")
        with self._lock:
            if not self.seen or self.seen[-1][1] != decisions:
                self.seen.append((datetime.now(UTC), decisions))
        return None

    def versions(self) -> list[tuple[datetime, dict[str, int | None]]]:
        with self._lock:
            return list(self.seen)


LIMIT_SECONDS = 5


def test_a_score_only_change_is_written_once_the_rate_limit_allows(
    operator: PlacementOperator, api: Api, fleet: Fleet, wait_for: WaitFor, debug_port: int, controller_kubeconfig: Path
) -> None:
    a = fleet.add("a", score=10)
    b = fleet.add("b", score=20)
    versions = DecisionVersions(fleet.namespace, "limited")
    monitor = WatchMonitor(str(controller_kubeconfig), PLACEMENT_DECISIONS, [versions.check]).start()
    try:
        spec = {"prioritizerPolicy": ADDON_ONLY, "scoreRateLimit": f"{LIMIT_SECONDS}s"}
        wait_cached(debug_port, fleet.namespace, spec, {a: 10, b: 20}, wait_for)
        api.placement("limited", fleet.namespace, spec)
        old = {a: 10, b: 20}
        wait_for(
            lambda: dict(scored(api, "limited", fleet.namespace)) == old,
            timeout=TIMEOUT,
            message="first scores",
        )
        before = wait_for(lambda: last_score_update(api, "limited", fleet.namespace), timeout=TIMEOUT)
        window_end = before + timedelta(seconds=LIMIT_SECONDS)
        passes = settled(operator, api, fleet.namespace, ["limited"], wait_for)

        # Only a's score changes: the selected set stays.
        fleet.set_score(a, 30)
        looked_again(operator, api, fleet.namespace, passes, wait_for)
        looked_at = datetime.now(UTC)
        assert looked_at < window_end, (
            f"the pass after the change ended at {looked_at}, after the window ({window_end})"
        )
        assert debug_scores(debug_port, fleet.namespace, "limited") == {a: 30, b: 20}
        assert dict(scored(api, "limited", fleet.namespace)) == old, (
            "the new score was written within scoreRateLimit"
        )
        assert last_score_update(api, "limited", fleet.namespace) == before

        # Without any other change the controller comes back when the window ends.
        new = {a: 30, b: 20}
        wait_for(
            lambda: dict(scored(api, "limited", fleet.namespace)) == new,
            timeout=LIMIT_SECONDS + TIMEOUT,
            message="the new score once the window ended",
        )
        after = wait_for(
            lambda: (t := last_score_update(api, "limited", fleet.namespace)) != before and t,
            timeout=TIMEOUT,
            message="lastScoreUpdateTime advanced",
        )
        # lastScoreUpdateTime is the time of the pass that wrote the new score (whole seconds),
        # which began before its write: so that write came at or after the window's end.
        assert after >= window_end, f"new scores written at {after}, within the window ending {window_end}"
        wait_for(
            lambda: versions.versions() and versions.versions()[-1][1] == new,
            timeout=TIMEOUT,
            message="watched",
        )
    finally:
        monitor.stop()
    assert monitor.violations == []
    seen = versions.versions()
    assert all(set(v) == {a, b} for _, v in seen if v), seen
    first_new = next(at for at, v in seen if v == new)
    assert first_new >= after, (first_new, after)
    assert all(v == old for at, v in seen if v and at < window_end), seen


def test_a_change_of_the_selected_set_is_written_at_once(
    operator: PlacementOperator, api: Api, fleet: Fleet, wait_for: WaitFor, debug_port: int
) -> None:
    a = fleet.add("a", score=10)
    b = fleet.add("b", score=20)
    # An hour's limit: within this test every score-only change is held.
    limited = {"prioritizerPolicy": ADDON_ONLY, "scoreRateLimit": "1h"}
    wait_cached(debug_port, fleet.namespace, limited, {a: 10, b: 20}, wait_for)
    api.placement("all", fleet.namespace, limited)
    wait_for(
        lambda: dict(scored(api, "all", fleet.namespace)) == {a: 10, b: 20},
        timeout=TIMEOUT,
        message="first scores",
    )
    first_update = wait_for(lambda: last_score_update(api, "all", fleet.namespace), timeout=TIMEOUT)
    passes = settled(operator, api, fleet.namespace, ["all"], wait_for)

    # A score-only change is held...
    fleet.set_score(a, 50)
    looked_again(operator, api, fleet.namespace, passes, wait_for)
    assert debug_scores(debug_port, fleet.namespace, "all") == {a: 50, b: 20}
    assert dict(scored(api, "all", fleet.namespace)) == {a: 10, b: 20}
    assert last_score_update(api, "all", fleet.namespace) == first_update

    # ...until the set changes: a new cluster joins (without an AddOnPlacementScore: it scores
    # 0), and every new score is written with it.
    c = fleet.add("c")
    wait_for(
        lambda: dict(scored(api, "all", fleet.namespace)) == {a: 50, b: 20, c: 0},
        timeout=TIMEOUT,
        message="the new cluster with every new score",
    )
    # The Placement's status follows its decisions (lastScoreUpdateTime has whole seconds, so it
    # may show the same second as before).
    wait_for(
        lambda: placement_status(api, "all", fleet.namespace).get("numberOfSelectedClusters") == 3,
        timeout=TIMEOUT,
        message="three clusters in the Placement's status",
    )
    second_update = last_score_update(api, "all", fleet.namespace)
    assert second_update is not None and first_update <= second_update < first_update + timedelta(hours=1)

    # numberOfClusters 1: a score change that swaps the selected cluster is written at once,
    # while the same change is only a score change for "all", and held there.
    api.placement("best", fleet.namespace, {**limited, "numberOfClusters": 1})
    wait_for(lambda: scored(api, "best", fleet.namespace) == [(a, 50)], timeout=TIMEOUT, message="best is a")
    best_first = wait_for(lambda: last_score_update(api, "best", fleet.namespace), timeout=TIMEOUT)
    passes = settled(operator, api, fleet.namespace, ["all", "best"], wait_for)
    fleet.set_score(b, 90)
    wait_for(
        lambda: scored(api, "best", fleet.namespace) == [(b, 90)], timeout=TIMEOUT, message="best moved to b"
    )
    looked_again(operator, api, fleet.namespace, passes, wait_for)
    assert dict(scored(api, "all", fleet.namespace)) == {a: 50, b: 20, c: 0}
    assert last_score_update(api, "all", fleet.namespace) == second_update
    best_update = last_score_update(api, "best", fleet.namespace)
    assert best_update is not None and best_first <= best_update < best_first + timedelta(hours=1)
