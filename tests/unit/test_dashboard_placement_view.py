"""The dashboard's placement page (ocm_rollout.cli.dashboard.placement_view): what is stored, what
the scheduler makes of it, and why each other cluster is not selected."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.meta import format_time
from ocm_rollout.cli.dashboard.placement_view import cluster_view, placement_page
from ocm_rollout.controllers.placement.snapshot import ClusterView

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NS = "ns"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"
GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"
JSON = dict[str, Any]


def cluster(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    claims: Mapping[str, str] | None = None,
    taints: Sequence[JSON] = (),
    cpu: str | None = None,
    deleting: bool = False,
) -> JSON:
    metadata: JSON = {"name": name, "labels": dict(labels or {})}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        metadata["finalizers"] = ["keep"]
    status: JSON = {}
    if claims:
        status["clusterClaims"] = [{"name": k, "value": v} for k, v in claims.items()]
    if cpu is not None:
        status["allocatable"] = {"cpu": cpu, "memory": "8Gi"}
        status["capacity"] = {"cpu": cpu, "memory": "8Gi"}
    return {"metadata": metadata, "spec": {"hubAcceptsClient": True, "taints": list(taints)}, "status": status}


def label_set(name: str, selector: Mapping[str, Any] | None = None) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": dict(selector or {})}},
    }


def exclusive_set(name: str) -> JSON:
    return {"metadata": {"name": name}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}}


def binding(name: str, namespace: str = NS) -> JSON:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterSet": name}}


def placement(name: str = "p", *, annotations: Mapping[str, str] | None = None, status: JSON | None = None, **spec: Any) -> JSON:
    metadata: JSON = {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"metadata": metadata, "spec": spec, "status": status or {}}


def decision_page(
    name: str,
    clusters: Sequence[str],
    *,
    placement_name: str = "p",
    namespace: str = NS,
    group_index: str = "0",
    group_name: str = "",
    labels: Mapping[str, str] | None = None,
) -> JSON:
    all_labels = {PLACEMENT_LABEL: placement_name, GROUP_INDEX: group_index, GROUP_NAME: group_name, **(labels or {})}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def score(cluster_name: str, name: str, items: Mapping[str, int]) -> JSON:
    return {
        "metadata": {"name": name, "namespace": cluster_name},
        "status": {"scores": [{"name": k, "value": v} for k, v in items.items()]},
    }


def taint(key: str, effect: str = "NoSelect", value: str = "", added: datetime | None = None) -> JSON:
    out: JSON = {"key": key, "effect": effect, "timeAdded": format_time(added or NOW - timedelta(hours=1))}
    if value:
        out["value"] = value
    return out


def page(
    p: JSON,
    clusters: Sequence[JSON],
    *,
    decisions: Sequence[JSON] = (),
    sets: Sequence[JSON] | None = None,
    bindings: Sequence[JSON] | None = None,
    scores: Sequence[JSON] = (),
) -> JSON:
    """The page, by default with one set of every cluster bound in the placement's namespace."""
    set_list = list(sets) if sets is not None else [label_set("global")]
    binding_list = list(bindings) if bindings is not None else [binding(s["metadata"]["name"]) for s in set_list]
    return placement_page(p, decisions, clusters, set_list, binding_list, scores, now=NOW)


def reasons(out: JSON) -> dict[str, str]:
    return {entry["name"]: entry["reason"] for entry in out["notSelected"]}


def stages(out: JSON) -> dict[str, str]:
    return {entry["name"]: entry["stage"] for entry in out["notSelected"]}


def cpu_placement(number: int, **spec: Any) -> JSON:
    policy = {"mode": "Exact", "configurations": [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1}]}
    return placement(numberOfClusters=number, prioritizerPolicy=policy, **spec)


# --------------------------------------------------------------------------------------------
# What is stored
# --------------------------------------------------------------------------------------------


def test_spec_summary_reads_the_spec_with_defaults() -> None:
    p = placement(
        numberOfClusters=3,
        clusterSets=["global"],
        predicates=[{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
        spreadPolicy={"spreadConstraints": [{"topologyKey": "region", "topologyKeyType": "Label"}]},
        decisionStrategy={"groupStrategy": {"clustersPerDecisionGroup": 2, "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}}}}
        ]}},
    )
    spec = page(p, [])["spec"]
    assert spec == {
        "numberOfClusters": 3,
        "clusterSets": ["global"],
        "predicates": 1,
        "tolerations": 0,
        "prioritizerMode": "Additive",
        "prioritizers": 0,
        "spreadPolicy": True,
        "spreadTerms": 1,
        "decisionGroups": ["canary"],
        "clustersPerDecisionGroup": 2,
        "sortBy": "ClusterName",
    }


def test_conditions_selected_and_status_groups_come_from_the_status() -> None:
    status = {
        "numberOfSelectedClusters": 2,
        "decisionGroups": [{"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["p-decision-1"], "clusterCount": 2}],
        "conditions": [
            {"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "message": "ok",
             "lastTransitionTime": "2026-01-01T11:00:00Z", "observedGeneration": 1}
        ],
    }
    out = page(placement(status=status), [cluster("c1"), cluster("c2")])
    assert out["namespace"] == NS and out["name"] == "p"
    assert out["selected"] == 2
    assert out["decisionGroups"] == [{"groupIndex": 0, "groupName": "", "decisions": ["p-decision-1"], "clustersCount": 2}]
    assert out["conditions"] == [
        {"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "message": "ok",
         "lastTransitionTime": "2026-01-01T11:00:00Z"}
    ]


def test_pages_are_grouped_by_decision_group_in_index_order() -> None:
    pages = [
        decision_page("p-decision-3", ["c3"], group_index="1"),
        decision_page("p-decision-1", ["c1"], group_index="0", group_name="canary"),
        decision_page("p-decision-2", ["c2"], group_index="0", group_name="canary"),
    ]
    groups = page(placement(), [], decisions=pages)["groups"]
    assert groups == [
        {"index": 0, "name": "canary", "count": 2, "pages": [
            {"name": "p-decision-1", "index": 1, "clusters": ["c1"]},
            {"name": "p-decision-2", "index": 2, "clusters": ["c2"]},
        ]},
        {"index": 1, "name": "", "count": 1, "pages": [{"name": "p-decision-3", "index": 3, "clusters": ["c3"]}]},
    ]


def test_pages_of_a_group_are_ordered_by_their_number_not_their_name() -> None:
    pages = [decision_page(f"p-decision-{k}", [f"c{k}"]) for k in (10, 2, 1)]
    group = page(placement(), [], decisions=pages)["groups"][0]
    assert [p["name"] for p in group["pages"]] == ["p-decision-1", "p-decision-2", "p-decision-10"]


def test_the_decision_index_label_orders_pages_before_their_name() -> None:
    index = "cluster.open-cluster-management.io/decision-index"
    pages = [
        decision_page("p-decision-1", ["a"], labels={index: "2"}),
        decision_page("p-decision-2", ["b"], labels={index: "1"}),
    ]
    group = page(placement(), [], decisions=pages)["groups"][0]
    assert [(p["name"], p["index"]) for p in group["pages"]] == [("p-decision-2", 1), ("p-decision-1", 2)]


def test_a_page_without_an_integer_group_index_goes_to_a_last_group_of_index_none() -> None:
    pages = [decision_page("p-decision-2", ["b"], group_index="x"), decision_page("p-decision-1", ["a"], group_index="0")]
    groups = page(placement(), [], decisions=pages)["groups"]
    assert [g["index"] for g in groups] == [0, None]


def test_groups_keep_only_the_placements_own_pages() -> None:
    pages = [
        decision_page("p-decision-1", ["a"]),
        decision_page("q-decision-1", ["b"], placement_name="q"),
        decision_page("p-decision-1", ["c"], namespace="other"),
    ]
    groups = page(placement(), [], decisions=pages)["groups"]
    assert [p["clusters"] for g in groups for p in g["pages"]] == [["a"]]


# --------------------------------------------------------------------------------------------
# Why a cluster is not selected
# --------------------------------------------------------------------------------------------


def test_a_cluster_in_no_bound_set_is_not_in_a_bound_set() -> None:
    out = page(
        placement(),
        [cluster("c1", {"cluster.open-cluster-management.io/clusterset": "a"}), cluster("c2")],
        sets=[exclusive_set("a")],
    )
    assert reasons(out) == {"c2": "not in a ManagedClusterSet bound to namespace ns"}
    assert stages(out) == {"c2": "clusterSet"}


def test_a_cluster_of_a_bound_set_the_spec_does_not_name_is_left_out_by_cluster_sets() -> None:
    sets = [label_set("a", {"matchLabels": {"team": "a"}}), label_set("b", {"matchLabels": {"team": "b"}})]
    out = page(placement(clusterSets=["a"]), [cluster("c1", {"team": "a"}), cluster("c2", {"team": "b"})], sets=sets)
    assert reasons(out) == {"c2": "in ManagedClusterSet b bound to namespace ns, but not among spec.clusterSets [a]"}


def test_a_deleting_cluster_is_being_deleted() -> None:
    out = page(placement(), [cluster("c1"), cluster("c2", deleting=True)])
    assert reasons(out) == {"c2": "being deleted"}
    assert stages(out) == {"c2": "deleting"}


def test_a_cluster_failing_a_label_selector_names_the_requirement_and_its_label() -> None:
    p = placement(predicates=[{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}])
    out = page(p, [cluster("c1", {"env": "prod"}), cluster("c2", {"env": "dev"}), cluster("c3")])
    assert reasons(out) == {
        "c2": "filtered out by predicate: label selector requires env=prod (the cluster has env=dev)",
        "c3": "filtered out by predicate: label selector requires env=prod (the cluster has no label env)",
    }
    assert set(stages(out).values()) == {"predicate"}


def test_a_cluster_failing_a_match_expression_names_its_operator() -> None:
    selector = {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev", "test"]}]}
    out = page(placement(predicates=[{"requiredClusterSelector": {"labelSelector": selector}}]), [cluster("c1", {"env": "dev"})])
    assert reasons(out) == {"c1": "filtered out by predicate: label selector requires env notin (dev,test) (the cluster has env=dev)"}


def test_a_cluster_failing_a_claim_selector_names_the_claim() -> None:
    selector = {"claimSelector": {"matchExpressions": [{"key": "platform", "operator": "In", "values": ["AWS"]}]}}
    out = page(placement(predicates=[{"requiredClusterSelector": selector}]), [cluster("c1", claims={"platform": "GCP"})])
    assert reasons(out) == {"c1": "filtered out by predicate: claim selector requires platform=AWS (the cluster has platform=GCP)"}


def test_a_cluster_failing_a_cel_expression_names_the_expression() -> None:
    expression = "managedCluster.metadata.labels['env'] == 'prod'"
    selector = {"celSelector": {"celExpressions": [expression]}}
    out = page(placement(predicates=[{"requiredClusterSelector": selector}]), [cluster("c1", {"env": "prod"}), cluster("c2", {"env": "dev"})])
    assert reasons(out) == {"c2": f"filtered out by predicate: CEL expression {expression!r} is not true"}


def test_a_cluster_failing_every_predicate_lists_what_each_misses() -> None:
    predicates = [
        {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}},
        {"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}},
    ]
    out = page(placement(predicates=predicates), [cluster("c1", {"env": "dev"})])
    assert reasons(out) == {
        "c1": "filtered out by every predicate: 1: label selector requires env=prod (the cluster has env=dev); "
        "2: label selector requires gpu (the cluster has no label gpu)"
    }


def test_an_untolerated_taint_is_named_with_its_value_and_effect() -> None:
    out = page(placement(), [cluster("c1"), cluster("c2", taints=[taint("gpu", value="busy")])])
    assert reasons(out) == {"c2": "taint gpu=busy:NoSelect not tolerated"}
    assert stages(out) == {"c2": "taint"}


def test_a_taint_whose_toleration_ran_out_says_when() -> None:
    tolerations = [{"key": "maint", "operator": "Exists", "tolerationSeconds": 3600}]
    out = page(placement(tolerations=tolerations), [cluster("c1", taints=[taint("maint", added=NOW - timedelta(hours=2))])])
    assert reasons(out) == {"c1": "taint maint:NoSelect not tolerated (its tolerationSeconds ran out at 2026-01-01T11:00:00Z)"}


def test_a_no_select_if_new_taint_keeps_out_a_cluster_not_yet_decided() -> None:
    clusters = [cluster("c1", taints=[taint("new", "NoSelectIfNew")]), cluster("c2", taints=[taint("new", "NoSelectIfNew")])]
    out = page(placement(), clusters, decisions=[decision_page("p-decision-1", ["c1"])])
    assert reasons(out) == {"c2": "taint new:NoSelectIfNew not tolerated (the cluster is not among the current decisions)"}


def test_a_cluster_scored_below_the_selected_is_not_among_the_highest_scores() -> None:
    out = page(cpu_placement(1), [cluster("c1", cpu="8"), cluster("c2", cpu="4")])
    assert reasons(out) == {"c2": "not among the 1 highest scores (score -100, lowest selected 100)"}
    assert stages(out) == {"c2": "score"}


def test_a_cluster_tied_with_the_lowest_selected_is_cut_by_number_of_clusters() -> None:
    out = page(placement(numberOfClusters=1), [cluster("c1"), cluster("c2")])
    assert reasons(out) == {"c2": "numberOfClusters (1) reached (score 100; equal scores go by name)"}
    assert stages(out) == {"c2": "numberOfClusters"}


def spread_placement(**spec: Any) -> JSON:
    term = {"topologyKey": "region", "topologyKeyType": "Label", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
    return placement(spreadPolicy={"spreadConstraints": [term]}, **spec)


def test_a_spread_term_holds_back_a_cluster_that_would_exceed_max_skew() -> None:
    clusters = [cluster(n, {"region": r}) for n, r in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"))]
    out = page(spread_placement(), clusters)
    assert reasons(out) == {
        "a3": "held back by spread term 1 (topologyKey region, DoNotSchedule, maxSkew 1): "
        "topology region=a has 2 selected, its least used sibling 1"
    }
    assert stages(out) == {"a3": "spread"}


def test_a_spread_term_holds_back_a_cluster_without_its_key() -> None:
    out = page(spread_placement(), [cluster("a1", {"region": "a"}), cluster("x")])
    assert reasons(out) == {"x": "held back by spread term 1 (topologyKey region, DoNotSchedule, maxSkew 1): the cluster has no label region"}


def test_spread_reports_topologies_counts_and_held_back() -> None:
    clusters = [cluster(n, {"region": r}) for n, r in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"))]
    spread = page(spread_placement(), clusters)["spread"]
    assert spread["heldBack"] == 1
    (term,) = spread["terms"]
    assert term["topologyKey"] == "region" and term["heldBack"] == 1
    assert term["topologies"] == [
        {"values": ["a"], "candidates": 3, "selected": 2},
        {"values": ["b"], "candidates": 1, "selected": 1},
    ]


def test_with_spread_a_full_selection_is_number_of_clusters_reached() -> None:
    clusters = [cluster(n, {"region": r}) for n, r in (("a1", "a"), ("a2", "a"), ("b1", "b"))]
    out = page(spread_placement(numberOfClusters=2), clusters)
    assert stages(out) == {"a2": "numberOfClusters"}
    assert reasons(out)["a2"].startswith("numberOfClusters (2) reached")


def test_not_selected_is_capped_in_natural_order_with_the_total() -> None:
    clusters = [cluster(f"c{i}") for i in range(1, 251)]
    out = page(placement(numberOfClusters=0), clusters)
    assert out["notSelectedTotal"] == 250
    names = [e["name"] for e in out["notSelected"]]
    assert names == [f"c{i}" for i in range(1, 201)]


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


def test_scores_list_each_prioritizer_with_its_weight_and_the_totals() -> None:
    out = page(placement(), [cluster("c1"), cluster("c2")], decisions=[decision_page("p-decision-1", ["c1"])])
    scores = out["scores"]
    assert scores["prioritizers"] == [
        {"name": "Balance", "weight": 1, "scores": {"c1": 100, "c2": 100}},
        {"name": "Steady", "weight": 1, "scores": {"c1": 100, "c2": 0}},
    ]
    assert scores["aggregated"] == [{"clusterName": "c1", "score": 200}, {"clusterName": "c2", "score": 100}]


def test_balance_counts_the_decisions_of_other_placements() -> None:
    others = [decision_page("q-decision-1", ["c1"], placement_name="q")]
    balance = page(placement(), [cluster("c1"), cluster("c2")], decisions=others)["scores"]["prioritizers"][0]
    assert balance == {"name": "Balance", "weight": 1, "scores": {"c1": -100, "c2": 100}}


def test_addon_scores_come_from_the_addon_placement_scores() -> None:
    policy = {"mode": "Exact", "configurations": [
        {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "load", "scoreName": "cpu"}}, "weight": 2}
    ]}
    scores = [score("c1", "load", {"cpu": 30}), score("c2", "load", {"cpu": 70}), score("c1", "other", {"cpu": 99})]
    out = page(placement(numberOfClusters=1, prioritizerPolicy=policy), [cluster("c1"), cluster("c2")], scores=scores)
    assert out["scores"]["prioritizers"] == [{"name": "AddOn/load/cpu", "weight": 2, "scores": {"c1": 30, "c2": 70}}]
    assert reasons(out) == {"c1": "not among the 1 highest scores (score 60, lowest selected 140)"}


# --------------------------------------------------------------------------------------------
# Errors and warnings
# --------------------------------------------------------------------------------------------


def test_an_invalid_placement_reports_the_error_and_keeps_what_is_stored() -> None:
    p = placement(numberOfClusters="three")
    out = page(p, [cluster("c1")], decisions=[decision_page("p-decision-1", ["c1"])])
    assert out["error"] is not None and "numberOfClusters" in out["error"]
    assert out["groups"][0]["pages"][0]["clusters"] == ["c1"]
    assert out["spec"]["numberOfClusters"] is None
    assert out["scores"] is None and out["notSelected"] == []


def test_no_bound_set_is_an_error_and_every_cluster_is_outside_the_bound_sets() -> None:
    out = page(placement(), [cluster("c1"), cluster("c2")], bindings=[])
    assert out["error"] == "No valid ManagedClusterSetBindings found in placement namespace"
    assert set(reasons(out).values()) == {"not in a ManagedClusterSet bound to namespace ns"}


def test_a_binding_of_another_namespace_does_not_count() -> None:
    out = page(placement(), [cluster("c1")], bindings=[binding("global", "elsewhere")])
    assert out["error"] == "No valid ManagedClusterSetBindings found in placement namespace"


def test_cluster_sets_bound_but_not_named_is_an_error() -> None:
    out = page(placement(clusterSets=["missing"]), [cluster("c1")])
    assert out["error"] == "None of ManagedClusterSets [missing] is bound to placement namespace"


def test_a_misconfigured_predicate_is_an_error_and_stops_every_cluster_before_it() -> None:
    bad = [{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}}]
    out = page(placement(predicates=bad), [cluster("c1"), cluster("c2")])
    assert out["error"] is not None and out["error"].startswith("Predicate: ")
    assert set(stages(out).values()) == {"error"}
    assert reasons(out)["c1"] == f"not scheduled: {out['error']}"


def test_a_bound_set_whose_members_cannot_be_computed_aborts_the_pass() -> None:
    broken = label_set("global", {"matchExpressions": [{"key": "a", "operator": "Bad"}]})
    out = page(placement(), [cluster("c1")], sets=[broken])
    assert out["error"] is not None and "ManagedClusterSet global" in out["error"]
    assert stages(out) == {"c1": "error"}


def test_the_scheduling_disable_annotation_is_ignored_and_noted() -> None:
    p = placement(annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"}, numberOfClusters=1)
    out = page(p, [cluster("c1"), cluster("c2")])
    assert reasons(out) == {"c2": "numberOfClusters (1) reached (score 100; equal scores go by name)"}
    assert any("scheduling is disabled" in w for w in out["warnings"])


def test_an_invalid_cluster_set_is_left_out_with_a_warning() -> None:
    broken = {"metadata": {"name": "broken"}, "spec": {"clusterSelector": {"selectorType": 5}}}
    out = page(placement(), [cluster("c1")], sets=[label_set("global"), broken])
    assert "ignored an invalid ManagedClusterSet 'broken'" in out["warnings"]
    assert out["error"] is None and out["notSelectedTotal"] == 0


def test_the_page_is_plain_json() -> None:
    clusters = [cluster(n, {"region": r}) for n, r in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"))]
    out = page(spread_placement(), clusters, decisions=[decision_page("p-decision-1", ["a1"])])
    assert json.loads(json.dumps(out)) == out


# --------------------------------------------------------------------------------------------
# The cluster view read from JSON
# --------------------------------------------------------------------------------------------


def test_cluster_view_holds_what_the_controllers_view_holds() -> None:
    obj = cluster(
        "c1",
        {"env": "prod"},
        claims={"platform": "AWS", "region": "eu"},
        taints=[taint("gpu", value="x"), {"key": "bare", "effect": "PreferNoSelect"}],
        cpu="500m",
        deleting=True,
    )
    mine = cluster_view(obj)
    theirs = ClusterView.of(ManagedCluster.parse(obj), source=obj)
    fields = ("name", "labels", "claims", "taints", "deleting", "resources")
    assert {f: getattr(mine, f) for f in fields} == {f: getattr(theirs, f) for f in fields}
    assert mine.cel_value() == theirs.cel_value()
