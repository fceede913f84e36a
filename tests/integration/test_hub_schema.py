"""Optimistic concurrency, the status subresource and schema handling (422, defaults, pruning)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.integration.conftest import WIDGET_GROUP, api

G, V = WIDGET_GROUP, "v1"


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1, **spec}}


def causes(exc: client.ApiException) -> list[dict[str, str]]:
    body = json.loads(exc.body or "{}")
    assert body["reason"] == "Invalid", body
    return list(body["details"]["causes"])


@pytest.fixture
def crs(toy_client: client.ApiClient) -> Any:
    return api("CustomObjectsApi", toy_client)


def make(crs: Any, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    return dict(crs.create_namespaced_custom_object(G, V, ns, "widgets", body))


# optimistic concurrency ---------------------------------------------------------------------------


def test_put_with_stale_resource_version_is_conflict(crs: Any, toy_namespace: str) -> None:
    old = make(crs, toy_namespace, widget("c1"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "c1", {"spec": {"size": 2}})
    old["spec"]["size"] = 3
    with pytest.raises(client.ApiException) as err:
        crs.replace_namespaced_custom_object(G, V, toy_namespace, "widgets", "c1", old)
    assert err.value.status == 409
    assert json.loads(err.value.body or "{}")["reason"] == "Conflict"


def test_patch_with_stale_resource_version_is_conflict(crs: Any, toy_namespace: str) -> None:
    old = make(crs, toy_namespace, widget("c2"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "c2", {"spec": {"size": 2}})
    stale = {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]}, "spec": {"size": 5}}
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "c2", stale)
    assert err.value.status == 409


def test_status_patch_with_stale_resource_version_is_conflict(crs: Any, toy_namespace: str) -> None:
    old = make(crs, toy_namespace, widget("c3"))
    crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "c3", {"spec": {"size": 2}})
    stale = {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]}, "status": {"phase": "X"}}
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object_status(G, V, toy_namespace, "widgets", "c3", stale)
    assert err.value.status == 409


def test_put_with_current_resource_version_succeeds(crs: Any, toy_namespace: str) -> None:
    obj = make(crs, toy_namespace, widget("c4"))
    obj["spec"]["size"] = 8
    out = crs.replace_namespaced_custom_object(G, V, toy_namespace, "widgets", "c4", obj)
    assert out["spec"]["size"] == 8


# status subresource -------------------------------------------------------------------------------


def test_status_is_dropped_on_create(crs: Any, toy_namespace: str) -> None:
    body = widget("s1")
    body["status"] = {"phase": "Fake"}
    assert "status" not in make(crs, toy_namespace, body)


def test_main_endpoint_ignores_status(crs: Any, toy_namespace: str) -> None:
    make(crs, toy_namespace, widget("s2"))
    crs.patch_namespaced_custom_object_status(G, V, toy_namespace, "widgets", "s2", {"status": {"phase": "Real"}})
    out = crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "s2", {"status": {"phase": "Fake"}, "spec": {"size": 4}})
    assert out["status"] == {"phase": "Real"} and out["spec"]["size"] == 4


def test_status_endpoint_ignores_everything_but_status(crs: Any, toy_namespace: str) -> None:
    make(crs, toy_namespace, widget("s3"))
    out = crs.patch_namespaced_custom_object_status(
        G, V, toy_namespace, "widgets", "s3",
        {"spec": {"size": 50}, "metadata": {"labels": {"a": "b"}}, "status": {"phase": "Up"}},
    )
    assert out["spec"]["size"] == 1
    assert "labels" not in out["metadata"]
    assert out["status"] == {"phase": "Up"}


def test_status_put_replaces_only_status(crs: Any, toy_namespace: str) -> None:
    obj = make(crs, toy_namespace, widget("s4"))
    obj["status"] = {"phase": "Done", "observedGeneration": 1}
    obj["spec"]["size"] = 99
    out = crs.replace_namespaced_custom_object_status(G, V, toy_namespace, "widgets", "s4", obj)
    assert out["status"]["phase"] == "Done" and out["spec"]["size"] == 1


def test_status_of_kind_without_subresource_is_not_found(toy_client: client.ApiClient) -> None:
    crs = api("CustomObjectsApi", toy_client)
    crs.create_cluster_custom_object(G, V, "gadgets", {"apiVersion": f"{G}/{V}", "kind": "Gadget", "metadata": {"name": "nostatus"}})
    with pytest.raises(client.ApiException) as err:
        crs.get_cluster_custom_object_status(G, V, "gadgets", "nostatus")
    assert err.value.status == 404


def test_status_is_part_of_the_object_without_subresource(toy_client: client.ApiClient) -> None:
    crs = api("CustomObjectsApi", toy_client)
    body = {"apiVersion": f"{G}/{V}", "kind": "Gadget", "metadata": {"name": "withstatus"}, "status": {"ok": True}}
    assert crs.create_cluster_custom_object(G, V, "gadgets", body)["status"] == {"ok": True}


# validation ---------------------------------------------------------------------------------------


def test_missing_required_field_is_invalid_with_a_cause(crs: Any, toy_namespace: str) -> None:
    body = widget("v1")
    del body["spec"]["size"]
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, body)
    assert err.value.status == 422
    assert causes(err.value) == [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}]


def test_wrong_type_is_invalid(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v2", size="big"))
    (c,) = causes(err.value)
    assert c["field"] == "spec.size" and c["reason"] == "FieldValueTypeInvalid"


def test_enum_violation_is_not_supported_value(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v3", mode="Huge"))
    (c,) = causes(err.value)
    assert c["reason"] == "FieldValueNotSupported" and c["field"] == "spec.mode"
    assert 'supported values: "Small", "Big"' in c["message"]


def test_every_violation_is_reported(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v4", size=-1, color="TOO-LONG-AND-UPPER"))
    fields = sorted(c["field"] for c in causes(err.value))
    assert fields == ["spec.color", "spec.color", "spec.size"]


def test_update_is_validated_too(crs: Any, toy_namespace: str) -> None:
    make(crs, toy_namespace, widget("v5"))
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "v5", {"spec": {"size": "x"}})
    assert err.value.status == 422


def test_cel_rule_is_enforced(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v6", size=500))
    (c,) = causes(err.value)
    assert c["field"] == "spec" and "sizes above 100 need mode Big" in c["message"]
    assert make(crs, toy_namespace, widget("v7", size=500, mode="Big"))["spec"]["size"] == 500


def test_duplicate_list_map_keys_are_invalid(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v8", items=[{"name": "a"}, {"name": "a"}]))
    (c,) = causes(err.value)
    assert c["reason"] == "FieldValueDuplicate" and c["field"] == "spec.items[1]"


def test_duplicate_set_items_are_invalid(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("v9", tags=["x", "x"]))
    assert causes(err.value)[0]["reason"] == "FieldValueDuplicate"


def test_int_or_string_accepts_both(crs: Any, toy_namespace: str) -> None:
    assert make(crs, toy_namespace, widget("io1", port=80))["spec"]["port"] == 80
    assert make(crs, toy_namespace, widget("io2", port="http"))["spec"]["port"] == "http"
    with pytest.raises(client.ApiException):
        make(crs, toy_namespace, widget("io3", port=[1]))


def test_embedded_resource_needs_kind_and_api_version(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("e1", manifest={"metadata": {"name": "x"}}))
    assert sorted(c["field"] for c in causes(err.value)) == ["spec.manifest.apiVersion", "spec.manifest.kind"]
    ok = make(crs, toy_namespace, widget("e2", manifest={"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}))
    assert ok["spec"]["manifest"]["data"] == {"k": "v"}


def test_invalid_object_name_is_rejected(crs: Any, toy_namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, widget("Not_Valid"))
    assert causes(err.value)[0]["field"] == "metadata.name"


def test_invalid_label_value_is_rejected(crs: Any, toy_namespace: str) -> None:
    body = widget("lbl")
    body["metadata"]["labels"] = {"ok": "not valid!"}
    with pytest.raises(client.ApiException) as err:
        make(crs, toy_namespace, body)
    assert causes(err.value)[0]["field"] == "metadata.labels"


# defaulting and pruning ---------------------------------------------------------------------------


def test_defaults_are_applied_recursively(crs: Any, toy_namespace: str) -> None:
    out = make(crs, toy_namespace, widget("d1", items=[{"name": "a"}]))
    assert out["spec"]["mode"] == "Small"
    assert out["spec"]["nested"] == {"depth": 3}
    assert out["spec"]["items"] == [{"name": "a", "weight": 1}]


def test_unknown_fields_are_pruned(crs: Any, toy_namespace: str) -> None:
    body = widget("p1", bogus=1)
    body["extra"] = {"x": 1}
    body["metadata"]["madeUp"] = "y"
    out = make(crs, toy_namespace, body)
    assert "bogus" not in out["spec"] and "extra" not in out and "madeUp" not in out["metadata"]


def test_preserve_unknown_fields_keeps_everything_below(crs: Any, toy_namespace: str) -> None:
    out = make(crs, toy_namespace, widget("p2", free={"any": {"deep": [1, {"x": None}]}}))
    assert out["spec"]["free"] == {"any": {"deep": [1, {"x": None}]}}


def test_null_is_pruned_unless_nullable(crs: Any, toy_namespace: str) -> None:
    out = make(crs, toy_namespace, widget("p3", color=None, note=None))
    assert "color" not in out["spec"] and out["spec"]["note"] is None


def test_null_with_default_gets_the_default(crs: Any, toy_namespace: str) -> None:
    assert make(crs, toy_namespace, widget("p4", mode=None))["spec"]["mode"] == "Small"


def test_strict_field_validation_rejects_unknown_fields(toy_client: client.ApiClient, toy_namespace: str) -> None:
    crs = api("CustomObjectsApi", toy_client)
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", widget("st", bogus=1), field_validation="Strict")
    assert err.value.status == 400
    assert 'unknown field "spec.bogus"' in json.loads(err.value.body or "{}")["message"]


def test_warn_field_validation_sends_a_warning_header(toy_client: client.ApiClient, toy_namespace: str) -> None:
    crs = api("CustomObjectsApi", toy_client)
    _, _, headers = crs.create_namespaced_custom_object_with_http_info(G, V, toy_namespace, "widgets", widget("wn", bogus=1))
    # kube-apiserver's form: the text a quoted-string, its own quotes escaped.
    assert headers.get("Warning", "") == '299 - "unknown field \\"spec.bogus\\""'


def test_project_crd_schema_is_enforced(api_client: client.ApiClient) -> None:
    crs = api("CustomObjectsApi", api_client)
    body = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "bad-cluster"},
        "spec": {"hubAcceptsClient": "yes"},
    }
    with pytest.raises(client.ApiException) as err:
        crs.create_cluster_custom_object("cluster.open-cluster-management.io", "v1", "managedclusters", body)
    assert causes(err.value)[0]["field"] == "spec.hubAcceptsClient"


# rolloutType, the older spelling of a rollout strategy's type -------------------------------------

WORK = ("work.open-cluster-management.io", "v1alpha1")
SEED_MWRS = Path(__file__).resolve().parents[2] / "examples" / "work" / "manifestworkreplicaset-seed-spelling.yaml"
RULE_MESSAGE = "rolloutType is the older spelling of type: set only type, or give both the same value"


def seed_mwrs(namespace: str, name: str = "mwrset-cronjob") -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SEED_MWRS.read_text(encoding="utf-8"))
    doc["metadata"] = {"name": name, "namespace": namespace}
    return doc


def test_seed_spelling_rollout_type_is_stored_as_written(api_client: client.ApiClient, namespace: str) -> None:
    crs = api("CustomObjectsApi", api_client)
    stored = crs.create_namespaced_custom_object(*WORK, namespace, "manifestworkreplicasets", seed_mwrs(namespace))
    strategies = [ref["rolloutStrategy"] for ref in stored["spec"]["placementRefs"]]
    # Not pruned, and no default type to contradict it.
    assert [s.get("rolloutType") for s in strategies] == ["All", "Progressive", "ProgressivePerGroup"]
    assert [s.get("type") for s in strategies] == [None, None, None]
    assert strategies[1]["progressive"]["mandatoryDecisionGroups"] == [
        {"groupName": "prod-canary-west"},
        {"groupName": "prod-canary-east"},
    ]
    # A placementRef without any strategy still gets OCM's default object.
    body = seed_mwrs(namespace, "no-strategy")
    body["spec"]["placementRefs"] = [{"name": "p"}]
    stored = crs.create_namespaced_custom_object(*WORK, namespace, "manifestworkreplicasets", body)
    default = stored["spec"]["placementRefs"][0]["rolloutStrategy"]
    assert (default["type"], default["all"]["progressDeadline"], "rolloutType" in default) == ("All", "None", False)


def test_rollout_type_contradicting_type_is_invalid_at_the_strategy(api_client: client.ApiClient, namespace: str) -> None:
    crs = api("CustomObjectsApi", api_client)
    body = seed_mwrs(namespace, "contradiction")
    body["spec"]["placementRefs"][1]["rolloutStrategy"]["type"] = "All"
    with pytest.raises(client.ApiException) as err:
        crs.create_namespaced_custom_object(*WORK, namespace, "manifestworkreplicasets", body)
    assert err.value.status == 422
    assert causes(err.value) == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "object": {RULE_MESSAGE}',
            "field": "spec.placementRefs[1].rolloutStrategy",
        }
    ]
    assert f'spec.placementRefs[1].rolloutStrategy: Invalid value: "object": {RULE_MESSAGE}' in (
        json.loads(err.value.body or "{}")["message"]
    )
    # Both spellings agreeing are accepted; an update that makes them disagree is refused.
    body["spec"]["placementRefs"][1]["rolloutStrategy"]["type"] = "Progressive"
    crs.create_namespaced_custom_object(*WORK, namespace, "manifestworkreplicasets", copy.deepcopy(body))
    patch = {"spec": {"placementRefs": [{"name": "placement-rollout-all", "rolloutStrategy": {"type": "Progressive", "rolloutType": "All"}}]}}
    with pytest.raises(client.ApiException) as err:
        crs.patch_namespaced_custom_object(*WORK, namespace, "manifestworkreplicasets", "contradiction", patch)
    assert err.value.status == 422
    assert [c["field"] for c in causes(err.value)] == ["spec.placementRefs[0].rolloutStrategy"]


def test_clustermanagementaddon_placements_accept_rollout_type_and_refuse_a_contradiction(
    api_client: client.ApiClient,
) -> None:
    crs = api("CustomObjectsApi", api_client)
    group = ("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons")

    def cma(name: str, strategy: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": name},
            "spec": {
                "installStrategy": {
                    "type": "Placements",
                    "placements": [{"namespace": "default", "name": "p", "rolloutStrategy": strategy}],
                }
            },
        }

    try:
        stored = crs.create_cluster_custom_object(*group, cma("rollout-type-spelling", {"rolloutType": "Progressive"}))
        assert stored["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] == {"rolloutType": "Progressive"}
        with pytest.raises(client.ApiException) as err:
            crs.create_cluster_custom_object(*group, cma("rollout-type-contradiction", {"type": "All", "rolloutType": "Progressive"}))
        assert err.value.status == 422
        assert causes(err.value) == [
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: "object": {RULE_MESSAGE}',
                "field": "spec.installStrategy.placements[0].rolloutStrategy",
            }
        ]
    finally:
        for name in ("rollout-type-spelling", "rollout-type-contradiction"):
            try:
                crs.delete_cluster_custom_object(*group, name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
