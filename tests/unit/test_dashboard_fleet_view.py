"""The dashboard's fleet page (ocm_rollout.cli.dashboard.fleet_view): rows, query, paging, totals
and the rollouts touching each cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.cli.dashboard.fleet_view import fleet_page
from ocm_rollout.controllers.workset.workbuild import owner_for

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
JSON = dict[str, Any]


def cluster(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    available: str | None = "True",
    joined: str = "True",
    accepted: bool = True,
    claims: Mapping[str, str] | None = None,
    taints: Sequence[JSON] = (),
) -> JSON:
    conditions = [{"type": "ManagedClusterJoined", "status": joined, "reason": "Joined", "message": "",
                   "lastTransitionTime": "2026-01-01T10:00:00Z"}]
    if available is not None:
        conditions.append({"type": "ManagedClusterConditionAvailable", "status": available, "reason": "LeaseUpdated",
                           "message": "lease renewed", "lastTransitionTime": "2026-01-01T11:00:00Z"})
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"hubAcceptsClient": accepted, "taints": list(taints)},
        "status": {
            "conditions": conditions,
            "clusterClaims": [{"name": k, "value": v} for k, v in (claims or {}).items()],
        },
    }


def mwrs(namespace: str, name: str) -> JSON:
    return {"metadata": {"namespace": namespace, "name": name}, "spec": {}}


def work(cluster_name: str, name: str, owner: tuple[str, str] | None) -> JSON:
    labels = {} if owner is None else {MWRS_LABEL: owner_for(*owner).label_value}
    return {"metadata": {"namespace": cluster_name, "name": name, "labels": labels}}


def addon(cluster_name: str, name: str) -> JSON:
    return {"metadata": {"namespace": cluster_name, "name": name}}


def fleet(
    clusters: Sequence[JSON],
    works: Sequence[JSON] = (),
    replica_sets: Sequence[JSON] = (),
    addons: Sequence[JSON] = (),
    **options: Any,
) -> JSON:
    return fleet_page(clusters, works, replica_sets, addons, now=NOW, **options)


def names(out: JSON) -> list[str]:
    return [row["name"] for row in out["clusters"]]


# --------------------------------------------------------------------------------------------
# Order, query, paging
# --------------------------------------------------------------------------------------------


def test_clusters_are_in_natural_name_order() -> None:
    out = fleet([cluster("cluster10"), cluster("cluster2"), cluster("cluster1"), cluster("alpha")])
    assert names(out) == ["alpha", "cluster1", "cluster2", "cluster10"]


def test_a_query_word_matches_part_of_the_name_ignoring_case() -> None:
    out = fleet([cluster("East-1"), cluster("west-1"), cluster("east-2")], query="EAST")
    assert names(out) == ["East-1", "east-2"]
    assert out["matched"] == 2


def test_a_key_value_query_word_matches_a_label_exactly() -> None:
    clusters = [cluster("c1", {"env": "prod"}), cluster("c2", {"env": "production"}), cluster("c3")]
    assert names(fleet(clusters, query="env=prod")) == ["c1"]


def test_a_key_with_an_empty_value_matches_an_empty_label() -> None:
    clusters = [cluster("c1", {"gpu": ""}), cluster("c2", {"gpu": "a100"}), cluster("c3")]
    assert names(fleet(clusters, query="gpu=")) == ["c1"]


def test_every_query_word_must_hold() -> None:
    clusters = [cluster("east-1", {"env": "prod"}), cluster("east-2", {"env": "dev"}), cluster("west-1", {"env": "prod"})]
    assert names(fleet(clusters, query="east env=prod")) == ["east-1"]


def test_an_empty_query_matches_every_cluster() -> None:
    out = fleet([cluster("c1"), cluster("c2")], query="   ")
    assert out["matched"] == 2 and out["total"] == 2


def test_paging_cuts_the_matched_clusters_in_pages() -> None:
    clusters = [cluster(f"c{i}") for i in range(1, 26)]
    out = fleet(clusters, page=2, per_page=10)
    assert names(out) == [f"c{i}" for i in range(21, 26)]
    assert (out["page"], out["pages"], out["perPage"], out["matched"], out["total"]) == (2, 3, 10, 25, 25)


def test_a_page_past_the_last_shows_the_last() -> None:
    out = fleet([cluster(f"c{i}") for i in range(1, 6)], page=9, per_page=2)
    assert out["page"] == 2 and names(out) == ["c5"]


def test_a_negative_page_shows_the_first() -> None:
    assert fleet([cluster("c1"), cluster("c2")], page=-1, per_page=1)["page"] == 0


def test_no_match_is_one_empty_page() -> None:
    out = fleet([cluster("c1")], query="nothing")
    assert (out["clusters"], out["matched"], out["page"], out["pages"]) == ([], 0, 0, 1)


def test_per_page_is_kept_between_one_and_a_thousand() -> None:
    assert fleet([cluster("c1")], per_page=0)["perPage"] == 1
    assert fleet([cluster("c1")], per_page=5000)["perPage"] == 1000


# --------------------------------------------------------------------------------------------
# A cluster's row and the totals
# --------------------------------------------------------------------------------------------


def test_a_row_holds_labels_claims_taints_and_registration() -> None:
    c = cluster(
        "c1",
        {"env": "prod"},
        claims={"platform": "AWS"},
        taints=[{"key": "gpu", "value": "busy", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}],
        joined="True",
        accepted=False,
    )
    row = fleet([c])["clusters"][0]
    assert row["labels"] == {"env": "prod"}
    assert row["claims"] == [{"name": "platform", "value": "AWS"}]
    assert row["taints"] == [{"key": "gpu", "value": "busy", "effect": "NoSelect"}]
    assert (row["joined"], row["accepted"], row["deleting"]) == (True, False, False)


def test_availability_comes_with_its_reason_message_and_since() -> None:
    row = fleet([cluster("c1", available="False")])["clusters"][0]
    assert row["available"] == {
        "status": "False",
        "reason": "LeaseUpdated",
        "message": "lease renewed",
        "since": "2026-01-01T11:00:00Z",
        "forSeconds": 3600,
    }


def test_a_cluster_without_the_available_condition_is_unknown() -> None:
    row = fleet([cluster("c1", available=None)])["clusters"][0]
    assert row["available"]["status"] == "Unknown" and row["available"]["since"] is None


def test_available_counts_every_cluster_per_status_whatever_the_query() -> None:
    clusters = [cluster("c1"), cluster("c2", available="False"), cluster("c3", available="Unknown"), cluster("c4", available=None)]
    out = fleet(clusters, query="c1")
    assert out["available"] == {"True": 1, "False": 1, "Unknown": 2}
    assert out["total"] == 4 and out["matched"] == 1


def test_a_cluster_not_joined_is_not_joined() -> None:
    assert fleet([cluster("c1", joined="False")])["clusters"][0]["joined"] is False


# --------------------------------------------------------------------------------------------
# Rollouts
# --------------------------------------------------------------------------------------------


def test_rollouts_are_the_replica_sets_with_a_work_in_the_cluster_namespace_then_its_addons() -> None:
    works = [work("c1", "w1", ("apps", "web")), work("c1", "w2", ("apps", "web")), work("c1", "w3", ("db", "pg"))]
    out = fleet(
        [cluster("c1")],
        works,
        [mwrs("apps", "web"), mwrs("db", "pg")],
        [addon("c1", "observability"), addon("c1", "alpha")],
    )
    assert out["clusters"][0]["rollouts"] == [
        {"kind": "mwrs", "namespace": "apps", "name": "web"},
        {"kind": "mwrs", "namespace": "db", "name": "pg"},
        {"kind": "addon", "name": "alpha"},
        {"kind": "addon", "name": "observability"},
    ]


def test_a_replica_set_with_a_hashed_owner_label_is_mapped_back() -> None:
    long_name = "a-" + "x" * 70
    owner = owner_for("apps", long_name)
    assert owner.annotation is not None  # the label value is a hash
    out = fleet([cluster("c1")], [work("c1", "w", ("apps", long_name))], [mwrs("apps", long_name)])
    assert out["clusters"][0]["rollouts"] == [{"kind": "mwrs", "namespace": "apps", "name": long_name}]


def test_a_work_whose_replica_set_is_unknown_is_no_rollout() -> None:
    out = fleet([cluster("c1")], [work("c1", "w", ("apps", "gone")), work("c1", "plain", None)], [mwrs("apps", "web")])
    assert out["clusters"][0]["rollouts"] == []


def test_works_and_addons_count_only_for_the_cluster_of_their_namespace() -> None:
    out = fleet(
        [cluster("c1"), cluster("c2")],
        [work("c2", "w", ("apps", "web"))],
        [mwrs("apps", "web")],
        [addon("c2", "observability")],
    )
    rollouts = {row["name"]: row["rollouts"] for row in out["clusters"]}
    assert rollouts["c1"] == []
    assert rollouts["c2"] == [{"kind": "mwrs", "namespace": "apps", "name": "web"}, {"kind": "addon", "name": "observability"}]


def test_the_page_is_plain_json() -> None:
    out = fleet([cluster("c1", {"env": "prod"}, claims={"a": "b"})], [work("c1", "w", ("apps", "web"))], [mwrs("apps", "web")])
    assert json.loads(json.dumps(out)) == out
