"""The whole Placement API on the local hub: OCM's spreadPolicy, sortBy and scoreRateLimit are
stored with their defaults, out-of-range values get 422 at the field's path, and decision
scores and status.lastScoreUpdateTime are kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from tests.integration.conftest import api

GROUP, VERSION = "cluster.open-cluster-management.io", "v1beta1"


def placement(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Placement", "metadata": {"name": name}, "spec": spec}


def create(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    crs = api("CustomObjectsApi", api_client)
    return dict(crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "placements", body))


def refused(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(client.ApiException) as err:
        create(api_client, namespace, body)
    assert err.value.status == 422
    details = json.loads(err.value.body or "{}")
    assert details["reason"] == "Invalid"
    return list(details["details"]["causes"])


def test_ocm_spread_example_is_stored_with_the_api_defaults(api_client: client.ApiClient, namespace: str) -> None:
    stored = create(
        api_client,
        namespace,
        placement(
            "spread",
            numberOfClusters=3,
            spreadPolicy={
                "spreadConstraints": [
                    {"topologyKey": "topology.kubernetes.io/zone", "topologyKeyType": "Label"},
                    {"topologyKey": "region.open-cluster-management.io", "topologyKeyType": "Claim", "maxSkew": 2,
                     "whenUnsatisfiable": "DoNotSchedule"},
                ]
            },
        ),
    )  # fmt: skip
    spec = stored["spec"]
    assert spec["spreadPolicy"]["spreadConstraints"] == [
        {"topologyKey": "topology.kubernetes.io/zone", "topologyKeyType": "Label", "maxSkew": 1,
         "whenUnsatisfiable": "ScheduleAnyway"},
        {"topologyKey": "region.open-cluster-management.io", "topologyKeyType": "Claim", "maxSkew": 2,
         "whenUnsatisfiable": "DoNotSchedule"},
    ]  # fmt: skip
    assert (spec["sortBy"], spec["scoreRateLimit"]) == ("ClusterName", "1m")


def test_sort_by_score_and_a_rate_limit_are_kept(api_client: client.ApiClient, namespace: str) -> None:
    stored = create(api_client, namespace, placement("sorted", sortBy="Score", scoreRateLimit="30s"))
    assert (stored["spec"]["sortBy"], stored["spec"]["scoreRateLimit"]) == ("Score", "30s")


@pytest.mark.parametrize(
    ("term", "field", "reason"),
    [
        ({"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": 0}, "maxSkew", "FieldValueInvalid"),
        ({"topologyKey": "zone", "topologyKeyType": "Zone"}, "topologyKeyType", "FieldValueNotSupported"),
        ({"topologyKey": "zone", "topologyKeyType": "Label", "whenUnsatisfiable": "Never"}, "whenUnsatisfiable",
         "FieldValueNotSupported"),
        ({"topologyKey": "-zone", "topologyKeyType": "Label"}, "topologyKey", "FieldValueInvalid"),
        ({"topologyKey": "zone"}, "topologyKeyType", "FieldValueRequired"),
    ],
)  # fmt: skip
def test_an_out_of_range_spread_term_is_refused_at_its_path(
    api_client: client.ApiClient, namespace: str, term: dict[str, Any], field: str, reason: str
) -> None:
    body = placement("bad-term", spreadPolicy={"spreadConstraints": [{"topologyKey": "ok", "topologyKeyType": "Label"}, term]})
    found = refused(api_client, namespace, body)
    assert [(c["field"], c["reason"]) for c in found] == [(f"spec.spreadPolicy.spreadConstraints[1].{field}", reason)]


def test_more_than_eight_spread_terms_are_refused(api_client: client.ApiClient, namespace: str) -> None:
    terms = [{"topologyKey": f"key{i}", "topologyKeyType": "Label"} for i in range(9)]
    found = refused(api_client, namespace, placement("nine", spreadPolicy={"spreadConstraints": terms}))
    assert [(c["field"], c["reason"]) for c in found] == [("spec.spreadPolicy.spreadConstraints", "FieldValueTooMany")]


@pytest.mark.parametrize(("field", "value"), [("sortBy", "Random"), ("scoreRateLimit", "1d"), ("scoreRateLimit", "90")])
def test_an_unknown_sort_order_or_rate_limit_is_refused(
    api_client: client.ApiClient, namespace: str, field: str, value: str
) -> None:
    found = refused(api_client, namespace, placement("bad-field", **{field: value}))
    assert [c["field"] for c in found] == [f"spec.{field}"]


def test_decision_scores_and_the_last_score_update_time_are_kept(api_client: client.ApiClient, namespace: str) -> None:
    crs = api("CustomObjectsApi", api_client)
    create(api_client, namespace, placement("scored"))
    crs.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "placements", "scored", {"status": {"lastScoreUpdateTime": "2026-01-01T00:00:00Z"}}
    )
    status = crs.get_namespaced_custom_object_status(GROUP, VERSION, namespace, "placements", "scored")["status"]
    assert status["lastScoreUpdateTime"] == "2026-01-01T00:00:00Z"
    decision = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PlacementDecision",
        "metadata": {"name": "scored-decision-1"},
    }
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "placementdecisions", decision)
    crs.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "placementdecisions", "scored-decision-1",
        {"status": {"decisions": [{"clusterName": "c1", "reason": "", "score": -180}]}},
    )  # fmt: skip
    stored = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "placementdecisions", "scored-decision-1")
    assert stored["status"]["decisions"] == [{"clusterName": "c1", "reason": "", "score": -180}]
