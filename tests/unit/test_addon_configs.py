"""CMA status references and the configuration graph (docs/behaviour/addons.md 5.1-5.3, 6, 12)."""

from __future__ import annotations

from typing import Any

from ocm_rollout.api.constants import RESERVED_NO_DEFAULT_CONFIG_NAME
from ocm_rollout.controllers.addon.configs import (
    Config,
    DesiredConfigs,
    build_graph,
    cma_status_references,
    effective_strategy,
    indexed_placement_strategies,
    install_type,
    is_lifecycle_managed,
    placement_strategies,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from tests.unit.addon_fixtures import (
    ADC,
    NS,
    H,
    cfg,
    cma,
    decision,
    done,
    hashes,
    inputs,
    mca,
    placement,
    progressive,
    pstrategy,
    ref,
    supported,
)

ALL_KNOWN = hashes({(NS, "default-config"): H("test")})


def refs_of(status: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [
        (r["group"], r["resource"], r["desiredConfig"].get("namespace", ""), r["desiredConfig"]["name"],
         r["desiredConfig"]["specHash"])
        for r in status.get("defaultconfigReferences", [])
    ]


def progression_items(status: dict[str, Any], index: int = 0) -> list[tuple[str, str, str]]:
    entry = status["installProgressions"][index]
    return [(r["resource"], r["desiredConfig"]["name"], r["desiredConfig"]["specHash"]) for r in entry.get("configReferences", [])]


# --- 3: lifecycle ------------------------------------------------------------------------------


def test_lifecycle_is_managed_without_annotation_or_with_addon_manager() -> None:
    assert is_lifecycle_managed(cma())
    assert is_lifecycle_managed(cma(lifecycle="addon-manager"))


def test_lifecycle_is_self_managed_for_any_other_value_even_empty() -> None:
    assert not is_lifecycle_managed(cma(lifecycle="self"))
    assert not is_lifecycle_managed(cma(lifecycle=""))


# --- 5.1 defaultconfigReferences ---------------------------------------------------------------


def test_default_references_one_per_supported_config_with_a_default_in_spec_order() -> None:
    the_cma = cma(defaults=[supported("b"), supported(), supported("a", group="g", resource="r")])
    status = cma_status_references(the_cma, hashes({}))
    assert [(g, r, name) for g, r, _, name, _ in refs_of(status)] == [
        ("addon.open-cluster-management.io", "addondeploymentconfigs", "b"),
        ("g", "r", "a"),
    ]


def test_default_references_skip_empty_and_reserved_names() -> None:
    the_cma = cma(defaults=[supported(""), supported(RESERVED_NO_DEFAULT_CONFIG_NAME), supported("ok")])
    assert [name for *_, name, _ in refs_of(cma_status_references(the_cma, hashes({})))] == ["ok"]


def test_default_references_are_not_deduplicated() -> None:
    the_cma = cma(defaults=[supported("a"), supported("a")])
    assert len(refs_of(cma_status_references(the_cma, hashes({})))) == 2


def test_default_reference_hash_is_the_objects_hash_and_empty_when_it_does_not_exist() -> None:
    the_cma = cma(defaults=[supported("default-config"), supported("missing", group="addon.open-cluster-management.io", resource="addontemplates")])
    status = cma_status_references(the_cma, hashes({(NS, "default-config"): H("test")}, supported=[ADC, ("addon.open-cluster-management.io", "addontemplates")]))
    assert [h for *_, h in refs_of(status)] == [H("test"), ""]


def test_default_reference_of_an_unhashed_type_keeps_the_carried_hash() -> None:
    old = {"defaultconfigReferences": [{"group": "g", "resource": "r", "desiredConfig": {"namespace": NS, "name": "x", "specHash": "kept"}}]}
    the_cma = cma(defaults=[supported("x", group="g", resource="r"), supported("y", group="g", resource="r")], status=old)
    assert [h for *_, h in refs_of(cma_status_references(the_cma, hashes({})))] == ["kept", ""]


def test_status_uses_the_v1alpha1_key_and_keeps_other_keys() -> None:
    the_cma = cma(status={"defaultConfigReferences": "beta key, left alone", "other": 1})
    status = cma_status_references(the_cma, ALL_KNOWN)
    assert status["other"] == 1 and status["defaultConfigReferences"] == "beta key, left alone"
    assert refs_of(status) == [("addon.open-cluster-management.io", "addondeploymentconfigs", NS, "default-config", H("test"))]


def test_cluster_scoped_default_config_has_no_namespace_on_the_wire() -> None:
    the_cma = cma(defaults=[supported("global", namespace="")])
    item = cma_status_references(the_cma, hashes({("", "global"): "h"}))["defaultconfigReferences"][0]
    assert item == {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                    "desiredConfig": {"name": "global", "specHash": "h"}}


def test_removed_defaults_write_an_empty_list_to_clear_the_old_one() -> None:
    the_cma = cma(defaults=[], status={"defaultconfigReferences": [{"group": "", "resource": "r", "desiredConfig": {"name": "a", "specHash": ""}}]})
    assert cma_status_references(the_cma, hashes({}))["defaultconfigReferences"] == []
    assert "defaultconfigReferences" not in cma_status_references(cma(defaults=[]), hashes({}))


# --- 5.1 / 5.2: installProgressions by type and lifecycle -----------------------------------------


def test_manual_type_clears_install_progressions() -> None:
    old = {"installProgressions": [{"namespace": NS, "name": "p1"}]}
    for type_ in ("Manual", ""):
        status = cma_status_references(cma(type_=type_, status=old), ALL_KNOWN)
        assert status["installProgressions"] == []
    assert "installProgressions" not in cma_status_references(cma(), ALL_KNOWN)


def test_self_managed_manual_cma_also_clears_install_progressions() -> None:
    old = {"installProgressions": [{"namespace": NS, "name": "p1"}]}
    assert cma_status_references(cma(type_="Manual", lifecycle="self", status=old), ALL_KNOWN)["installProgressions"] == []


def test_self_managed_placements_cma_keeps_install_progressions_untouched_but_defaults_maintained() -> None:
    old = {"installProgressions": [{"namespace": NS, "name": "old", "conditions": [{"type": "X"}]}]}
    status = cma_status_references(cma(placements=[pstrategy("p1")], lifecycle="self", status=old), ALL_KNOWN)
    assert status["installProgressions"] == old["installProgressions"]
    assert refs_of(status)[0][-1] == H("test")


def test_install_progressions_one_per_placement_in_spec_order_whether_or_not_it_exists() -> None:
    the_cma = cma(placements=[pstrategy("p2"), pstrategy("p1")])
    status = cma_status_references(the_cma, ALL_KNOWN)
    assert [(e["namespace"], e["name"]) for e in status["installProgressions"]] == [(NS, "p2"), (NS, "p1")]
    assert progression_items(status) == [("addondeploymentconfigs", "default-config", H("test"))]


def test_placement_configs_replace_the_whole_group_of_their_type_others_inherit() -> None:
    the_cma = cma(
        defaults=[supported("d1"), supported("d2"), supported("t1", group="g", resource="templates")],
        placements=[pstrategy("p1", configs=[cfg("mine")])],
    )
    status = cma_status_references(the_cma, hashes({}))
    assert progression_items(status) == [("addondeploymentconfigs", "mine", ""), ("templates", "t1", "")]


def test_progression_items_sorted_by_group_then_resource_keeping_order_within_a_group() -> None:
    the_cma = cma(
        defaults=[supported("z", group="b", resource="a"), supported("y", group="a", resource="b"),
                  supported("x", group="a", resource="a")],
        placements=[pstrategy("p1", configs=[cfg("second", group="a", resource="a"), cfg("first", group="a", resource="a")])],
    )
    entry = cma_status_references(the_cma, hashes({}))["installProgressions"][0]
    assert [(r["group"], r["resource"], r["desiredConfig"]["name"]) for r in entry["configReferences"]] == [
        ("a", "a", "second"), ("a", "a", "first"), ("a", "b", "y"), ("b", "a", "z"),
    ]


def test_placement_configs_are_deduplicated_by_namespace_and_name() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("a"), cfg("a"), cfg("a", namespace="other")])])
    assert [n for _, n, _ in progression_items(cma_status_references(the_cma, hashes({})))] == ["a", "a"]


def test_scenario_10_missing_placement_config_has_an_empty_hash() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("another-config")])])
    assert progression_items(cma_status_references(the_cma, ALL_KNOWN)) == [("addondeploymentconfigs", "another-config", "")]


def test_scenario_14_two_configs_of_one_type_keep_their_order_and_are_both_hashed() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("config-first"), cfg("config-second")])])
    objects = hashes({(NS, "config-first"): H("first"), (NS, "config-second"): H("second")})
    assert progression_items(cma_status_references(the_cma, objects)) == [
        ("addondeploymentconfigs", "config-first", H("first")),
        ("addondeploymentconfigs", "config-second", H("second")),
    ]


def _with_old_progression(items: list[dict[str, Any]], conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": NS, "name": "p1", "configReferences": items}
    if conditions is not None:
        entry["conditions"] = conditions
    return {"installProgressions": [entry]}


def _old_item(name: str, spec_hash: str, applied: str | None = None, good: str | None = None, group: str = "addon.open-cluster-management.io", resource: str = "addondeploymentconfigs") -> dict[str, Any]:
    item: dict[str, Any] = {"group": group, "resource": resource, "desiredConfig": {"namespace": NS, "name": name, "specHash": spec_hash}}
    if applied is not None:
        item["lastAppliedConfig"] = {"namespace": NS, "name": name, "specHash": applied}
    if good is not None:
        item["lastKnownGoodConfig"] = {"namespace": NS, "name": name, "specHash": good}
    return item


def test_same_placement_and_configs_carries_last_applied_last_known_good_and_conditions() -> None:
    conditions = [{"type": "Progressing", "status": "False", "reason": "Completed", "message": "m", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    the_cma = cma(placements=[pstrategy("p1")], status=_with_old_progression([_old_item("default-config", "old", "old", "older")], conditions))
    entry = cma_status_references(the_cma, ALL_KNOWN)["installProgressions"][0]
    assert entry["conditions"] == conditions
    item = entry["configReferences"][0]
    assert item["desiredConfig"]["specHash"] == H("test")  # 5.3 writes the current hash
    assert item["lastAppliedConfig"]["specHash"] == "old" and item["lastKnownGoodConfig"]["specHash"] == "older"


def test_carried_non_empty_hash_is_kept_for_an_unhashed_type() -> None:
    the_cma = cma(defaults=[supported("t", group="g", resource="r")], placements=[pstrategy("p1")],
                  status=_with_old_progression([_old_item("t", "carried", group="g", resource="r")]))
    assert progression_items(cma_status_references(the_cma, hashes({}))) == [("r", "t", "carried")]


def test_a_new_config_starts_the_entry_fresh_but_keeps_the_last_known_good_config() -> None:
    """OCM forgets lastKnownGoodConfig on a rename; here it is what AbortAll returns to."""
    conditions = [{"type": "Progressing", "status": "True", "reason": "Progressing", "message": "m", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("renamed")])],
                  status=_with_old_progression([_old_item("default-config", "h", "h", "h")], conditions))
    entry = cma_status_references(the_cma, ALL_KNOWN)["installProgressions"][0]
    assert "conditions" not in entry
    assert entry["configReferences"] == [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                                          "desiredConfig": {"namespace": NS, "name": "renamed", "specHash": ""},
                                          "lastKnownGoodConfig": {"namespace": NS, "name": "default-config", "specHash": "h"}}]


def test_a_rename_pairs_last_known_good_configs_by_type_and_position() -> None:
    old = [_old_item("a", "ha", good="ga"), _old_item("b", "hb", good="gb")]
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("a2"), cfg("b2")])], status=_with_old_progression(old))
    items = cma_status_references(the_cma, ALL_KNOWN)["installProgressions"][0]["configReferences"]
    assert [(i["desiredConfig"]["name"], i["lastKnownGoodConfig"]["name"], i["lastKnownGoodConfig"]["specHash"]) for i in items] == [
        ("a2", "a", "ga"), ("b2", "b", "gb"),
    ]


def test_a_rename_changing_the_number_of_configs_of_a_type_keeps_no_last_known_good() -> None:
    old = [_old_item("a", "ha", good="ga"), _old_item("b", "hb", good="gb")]
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("c")])], status=_with_old_progression(old))
    item = cma_status_references(the_cma, ALL_KNOWN)["installProgressions"][0]["configReferences"][0]
    assert "lastKnownGoodConfig" not in item and "lastAppliedConfig" not in item


def test_a_rename_keeps_no_last_known_good_when_an_old_item_had_none() -> None:
    old = [_old_item("a", "ha", good="ga"), _old_item("b", "hb")]
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("a2"), cfg("b2")])], status=_with_old_progression(old))
    items = cma_status_references(the_cma, ALL_KNOWN)["installProgressions"][0]["configReferences"]
    assert all("lastKnownGoodConfig" not in i for i in items)


def test_an_old_entry_of_another_placement_is_not_carried() -> None:
    conditions = [{"type": "Progressing", "status": "True", "reason": "Progressing", "message": "m", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    old = {"installProgressions": [{"namespace": NS, "name": "other", "configReferences": [_old_item("default-config", "h", "h")], "conditions": conditions}]}
    entry = cma_status_references(cma(placements=[pstrategy("p1")], status=old), ALL_KNOWN)["installProgressions"][0]
    assert "conditions" not in entry and "lastAppliedConfig" not in entry["configReferences"][0]


def test_status_references_are_stable_when_nothing_changed() -> None:
    the_cma = cma(placements=[pstrategy("p1", configs=[cfg("a")]), pstrategy("p2")])
    objects = hashes({(NS, "a"): "ha", (NS, "default-config"): "hd"})
    first = cma_status_references(the_cma, objects)
    assert cma_status_references({**the_cma, "status": first}, objects) == first


def test_unset_config_fields_are_left_out_not_null() -> None:
    status = cma_status_references(cma(placements=[pstrategy("p1")]), ALL_KNOWN)
    item = status["installProgressions"][0]["configReferences"][0]
    assert set(item) == {"group", "resource", "desiredConfig"}


def test_odd_shapes_do_not_crash_status_references() -> None:
    odd: dict[str, Any] = {"metadata": None, "spec": {"supportedConfigs": {"not": "a list"}, "installStrategy": {"type": "Placements", "placements": ["x", {"name": 3}]}},
                           "status": {"installProgressions": "nope", "defaultconfigReferences": [None, {"desiredConfig": 5}]}}
    status = cma_status_references(odd, ALL_KNOWN)
    assert status["installProgressions"] == [{"namespace": "", "name": ""}]


def test_install_strategy_readers_skip_what_is_not_an_object_and_keep_spec_indices() -> None:
    first, second = {"namespace": NS, "name": "p1"}, {"name": "p2"}
    the_cma: dict[str, Any] = {"spec": {"installStrategy": {"type": "Placements", "placements": ["x", first, None, second]}}}
    assert install_type(the_cma) == "Placements"
    assert placement_strategies(the_cma) == [first, second]
    assert indexed_placement_strategies(the_cma) == [(1, first), (3, second)]
    for odd in ({}, {"spec": None}, {"spec": {"installStrategy": []}}, {"spec": {"installStrategy": {"type": 3, "placements": {}}}}):
        assert (install_type(odd), placement_strategies(odd), indexed_placement_strategies(odd)) == ("", [], [])


# --- 6: the configuration graph -------------------------------------------------------------------


def _graph(the_cma: dict[str, Any], mcas: dict[str, Any], placements: dict[tuple[str, str], PlacementInput], objects: Any = ALL_KNOWN) -> Any:
    return build_graph({**the_cma, "status": cma_status_references(the_cma, objects)}, mcas, placements)


def test_graph_defaults_are_deduplicated_and_hashed_from_the_status() -> None:
    the_cma = cma(defaults=[supported("default-config"), supported("default-config")])
    graph = _graph(the_cma, {}, {})
    assert graph.defaults.desired.configs == (Config(*ADC, NS, "default-config", H("test")),)


def test_manual_cma_has_only_the_defaults_node() -> None:
    the_cma = cma(type_="Manual", placements=[pstrategy("p1")])
    graph = _graph(the_cma, {"c1": mca("c1")}, inputs(("p1", [["c1"]])))
    assert graph.nodes == [] and list(graph.defaults.children) == ["c1"]


def test_placement_node_desired_is_the_progressions_configs_with_their_hashes() -> None:
    the_cma = cma(defaults=[supported("default-config"), supported("t", group="g", resource="r")],
                  placements=[pstrategy("p1", configs=[cfg("mine")])])
    graph = _graph(the_cma, {}, inputs(("p1", [["c1"]])), hashes({(NS, "mine"): "hm"}))
    assert [(c.resource, c.name, c.spec_hash) for c in graph.nodes[0].desired] == [("addondeploymentconfigs", "mine", "hm"), ("r", "t", "")]


def test_nodes_follow_the_status_order_and_need_a_spec_placement() -> None:
    the_cma = cma(placements=[pstrategy("p1"), pstrategy("p2")])
    status = cma_status_references(the_cma, ALL_KNOWN)
    status["installProgressions"] = [status["installProgressions"][1], {"namespace": NS, "name": "gone"}, status["installProgressions"][0]]
    graph = build_graph({**the_cma, "status": status}, {}, inputs(("p1", [["a"]]), ("p2", [["b"]])))
    assert [n.name for n in graph.nodes] == ["p2", "p1"]


def test_last_placement_wins_and_takes_the_mca_from_configured_clusters_of_earlier_ones() -> None:
    the_cma = cma(placements=[pstrategy("p1"), pstrategy("p2")])
    mcas = {c: mca(c) for c in ("c1", "c2", "c3")}
    graph = _graph(the_cma, mcas, inputs(("p1", [["c1", "c2"]]), ("p2", [["c2", "c3"]])))
    p1, p2 = graph.nodes
    assert set(p1.children) == {"c1"} and set(p2.children) == {"c2", "c3"}
    assert p1.configured == {"c1"} and p2.configured == {"c2", "c3"}
    assert p1.clusters == {"c1", "c2"}


def test_a_cluster_without_mca_stays_configured_by_every_placement_selecting_it() -> None:
    the_cma = cma(placements=[pstrategy("p1"), pstrategy("p2")])
    graph = _graph(the_cma, {"c1": mca("c1")}, inputs(("p1", [["c1", "c2"]]), ("p2", [["c2"]])))
    assert graph.nodes[0].configured == {"c1", "c2"}


def test_mcas_no_placement_selects_are_configured_by_the_defaults() -> None:
    graph = _graph(cma(placements=[pstrategy("p1")]), {"c1": mca("c1"), "lonely": mca("lonely")}, inputs(("p1", [["c1"]])))
    assert list(graph.defaults.children) == ["lonely"] and not graph.defaults.held


def test_mca_spec_configs_replace_their_group_with_hashes_from_the_mcas_own_status() -> None:
    the_cma = cma(defaults=[supported("default-config"), supported("t", group="g", resource="r")])
    own = mca("c1", configs=[cfg("mine"), cfg("mine"), cfg("second")], refs=[ref("mine", "own-hash"), ref("default-config", "x")])
    graph = _graph(the_cma, {"c1": own}, {})
    entry = graph.defaults.children["c1"]
    assert [(c.name, c.spec_hash) for c in entry.desired] == [("mine", "own-hash"), ("second", ""), ("t", "")]
    assert entry.overrides == {ADC: 3}


def test_mca_spec_configs_of_unsupported_types_are_not_filtered() -> None:
    own = mca("c1", configs=[cfg("x", group="other.io", resource="things")])
    graph = _graph(cma(), {"c1": own}, {})
    assert [(c.group, c.name) for c in graph.defaults.children["c1"].desired] == [("addon.open-cluster-management.io", "default-config"), ("other.io", "x")]


def test_mcas_without_overrides_share_their_nodes_desired_configs() -> None:
    graph = _graph(cma(placements=[pstrategy("p1")]), {"c1": mca("c1"), "c2": done("c2", "x", "y")}, inputs(("p1", [["c1", "c2"]])))
    node = graph.nodes[0]
    assert all(entry.desired is node.desired for entry in node.children.values())


# --- 6.2 strategy ----------------------------------------------------------------------------------


def test_progressive_without_max_concurrency_takes_clusters_per_decision_group() -> None:
    p = placement("p1", per_group="25%")
    for body in ({}, {"maxConcurrency": 0}, {"maxConcurrency": ""}):
        assert effective_strategy(progressive(**body), p)["progressive"]["maxConcurrency"] == "25%"
    assert effective_strategy({"type": "Progressive"}, p)["progressive"] == {"maxConcurrency": "25%"}


def test_progressive_with_max_concurrency_keeps_it() -> None:
    assert effective_strategy(progressive(maxConcurrency=2), placement("p1", per_group=5))["progressive"]["maxConcurrency"] == 2


def test_progressive_without_placement_value_stays_unset() -> None:
    assert "maxConcurrency" not in effective_strategy(progressive(), placement("p1"))["progressive"]


def test_other_strategy_types_are_not_changed() -> None:
    raw = {"type": "ProgressivePerGroup", "progressivePerGroup": {}}
    assert effective_strategy(raw, placement("p1", per_group=3)) == raw


def test_missing_strategy_or_type_means_all() -> None:
    assert effective_strategy(None, None) == {"type": "All"}
    assert effective_strategy({"all": {"progressDeadline": "5s"}}, None)["type"] == "All"


def test_rollout_type_is_the_type_and_is_left_for_the_planner() -> None:
    p = placement("p1", per_group="25%")
    strategy = effective_strategy({"rolloutType": "Progressive"}, p)
    assert strategy == {"rolloutType": "Progressive", "progressive": {"maxConcurrency": "25%"}}
    # A contradiction is not hidden: the planner reports it on rolloutType.
    assert effective_strategy({"type": "All", "rolloutType": "Progressive"}, p) == {
        "type": "All", "rolloutType": "Progressive"}


def test_graph_node_of_a_rollout_type_strategy_shows_and_plans_its_type() -> None:
    p = placement("p1", per_group=2)
    graph = _graph(
        cma(placements=[pstrategy("p1", rollout={"rolloutType": "Progressive"})]), {}, inputs(("p1", [["a"]], p))
    )
    assert graph.nodes[0].strategy_type == "Progressive"
    assert graph.nodes[0].strategy["progressive"]["maxConcurrency"] == 2


def test_graph_node_plans_with_the_filled_in_strategy() -> None:
    p = placement("p1", per_group=2)
    graph = _graph(cma(placements=[pstrategy("p1", rollout=progressive())]), {}, inputs(("p1", [["a"]], p)))
    assert graph.nodes[0].strategy["progressive"]["maxConcurrency"] == 2


# --- improvement 1 and incomplete decisions ------------------------------------------------------------


def test_missing_placement_gives_its_node_an_error_and_holds_the_defaults() -> None:
    graph = _graph(cma(placements=[pstrategy("p1"), pstrategy("p2")]), {"c1": mca("c1"), "c9": mca("c9")}, inputs(("p2", [["c1"]])))
    p1 = graph.nodes[0]
    assert p1.error_reason == "PlacementNotFound" and "default/p1" in (p1.error or "")
    assert "keep their current configuration" in (p1.error or "")
    assert graph.nodes[1].error is None
    assert graph.defaults.held and list(graph.defaults.children) == ["c9"]


def test_missing_placement_with_leftover_decisions_still_claims_their_clusters() -> None:
    placements = {(NS, "p1"): PlacementInput(None, [decision("p1", ["c1"])])}
    graph = _graph(cma(placements=[pstrategy("p1")]), {"c1": mca("c1")}, placements)
    assert set(graph.nodes[0].children) == {"c1"}


def test_unreadable_decisions_give_an_error_and_hold_the_defaults() -> None:
    placements = {(NS, "p1"): PlacementInput(placement("p1"), [decision("p1", ["c1"], index="x")])}
    graph = _graph(cma(placements=[pstrategy("p1")]), {"c1": mca("c1"), "c2": mca("c2")}, placements)
    node = graph.nodes[0]
    assert node.error_reason == "InvalidPlacementDecisions" and set(node.children) == {"c1"}
    assert graph.defaults.held


def test_incomplete_decisions_mark_the_node_unready() -> None:
    placements = inputs(("p1", [["c1"]], placement("p1", selected=3)))
    node = _graph(cma(placements=[pstrategy("p1")]), {}, placements).nodes[0]
    assert node.error is None and "1 of its 3" in (node.unready or "")


def test_a_placement_selecting_nothing_is_not_unready() -> None:
    node = _graph(cma(placements=[pstrategy("p1")]), {}, inputs(("p1", [], placement("p1", selected=0)))).nodes[0]
    assert node.unready is None and node.clusters == frozenset()


def test_desired_configs_compare_by_content_and_order() -> None:
    a = Config("g", "r", "ns", "a", "h")
    b = Config("g", "r", "ns", "b", "h")
    assert DesiredConfigs({("g", "r"): [a, b]}) == DesiredConfigs({("g", "r"): [a, b]})
    assert DesiredConfigs({("g", "r"): [a, b]}) != DesiredConfigs({("g", "r"): [b, a]})


def test_odd_mca_shapes_do_not_crash_the_graph() -> None:
    odd: dict[str, Any] = {"c1": {"spec": None, "status": []}, "c2": {"spec": {"configs": [None, "x", {"name": 4}]}}, "c3": "not an object"}
    graph = _graph(cma(), odd, {})
    assert set(graph.defaults.children) == {"c1", "c2"}
