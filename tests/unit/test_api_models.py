"""Behaviour of the kind models: OCM defaults, the rolloutType alias, helpers, the registry."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.api import addon_v1alpha1, addon_v1beta1
from ocm_rollout.api.addon_v1alpha1 import ClusterManagementAddOn, ManagedClusterAddOn
from ocm_rollout.api.cluster_v1 import ManagedCluster
from ocm_rollout.api.cluster_v1alpha1 import RolloutStrategy
from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.cluster_v1beta2 import ManagedClusterSet
from ocm_rollout.api.kinds import ALL_KINDS, ALL_MODELS, model_for, parse_object
from ocm_rollout.api.meta import InvalidObject
from ocm_rollout.api.work_v1 import ManifestWork
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet

META = {"name": "x", "namespace": "ns"}


def placement(spec: dict[str, Any]) -> Placement:
    return Placement.model_validate({"metadata": META, "spec": spec})


def test_rollout_type_is_read_as_type() -> None:
    strategy = RolloutStrategy.model_validate({"rolloutType": "ProgressivePerGroup"})
    assert strategy.type == "ProgressivePerGroup"
    assert strategy.rollout_type == "ProgressivePerGroup"
    # Written back, both keys agree (the CRD's CEL rule accepts that; the decoder reads it the same).
    assert strategy.to_wire() == {"type": "ProgressivePerGroup", "rolloutType": "ProgressivePerGroup"}
    assert RolloutStrategy.model_validate(strategy.to_wire()) == strategy


def test_rollout_type_by_its_python_name_is_read_as_type() -> None:
    assert RolloutStrategy(rollout_type="Progressive").type == "Progressive"


def test_rollout_type_agreeing_with_type_is_accepted() -> None:
    assert RolloutStrategy.model_validate({"rolloutType": "All", "type": "All"}).type == "All"


def test_rollout_type_contradicting_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="rolloutType 'All' and type 'Progressive' disagree"):
        RolloutStrategy.model_validate({"rolloutType": "All", "type": "Progressive"})


def test_rollout_type_contradicting_type_is_reported_on_rollout_type() -> None:
    body = {
        "metadata": META,
        "spec": {
            "placementRefs": [
                {"name": "a"},
                {"name": "b", "rolloutStrategy": {"type": "All", "rolloutType": "Progressive"}},
            ]
        },
    }
    with pytest.raises(InvalidObject) as info:
        ManifestWorkReplicaSet.parse(body)
    assert "spec.placementRefs[1].rolloutStrategy.rolloutType: " in str(info.value)
    assert "older spelling of type" in str(info.value)


def test_unknown_rollout_type_is_reported_on_rollout_type_alone() -> None:
    with pytest.raises(InvalidObject) as info:
        ManifestWorkReplicaSet.parse({"metadata": META, "spec": {"placementRefs": [{"name": "a", "rolloutStrategy": {"rolloutType": "Canary"}}]}})
    lines = str(info.value).splitlines()
    assert [line.split(":")[0] for line in lines if "placementRefs" in line] == [
        "spec.placementRefs[0].rolloutStrategy.rolloutType"
    ]


def test_rollout_type_is_read_in_clustermanagementaddon_placements_too() -> None:
    cma = ClusterManagementAddOn.model_validate(
        {
            "metadata": {"name": "helloworld"},
            "spec": {
                "installStrategy": {
                    "type": "Placements",
                    "placements": [{"namespace": "ns", "name": "p", "rolloutStrategy": {"rolloutType": "Progressive"}}],
                }
            },
        }
    )
    assert cma.spec.install_strategy.placements[0].rollout_strategy.type == "Progressive"


def test_rollout_strategy_defaults_to_all() -> None:
    assert RolloutStrategy.model_validate({}).type == "All"
    assert RolloutStrategy.model_validate({}).to_wire() == {"type": "All"}


def test_placement_defaults_match_ocm() -> None:
    p = placement(
        {
            "prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}]},
            "tolerations": [{"key": "gpu"}],
            "decisionStrategy": {"groupStrategy": {}},
        }
    )
    policy = p.spec.prioritizer_policy
    assert policy is not None
    assert policy.mode == "Additive"
    assert policy.configurations[0].weight == 1
    assert policy.configurations[0].score_coordinate.type == "BuiltIn"
    assert p.spec.tolerations[0].operator == "Equal"
    assert p.spec.effective_group_strategy().clusters_per_decision_group == "100%"


def test_placement_without_decision_strategy_groups_everything_in_one_group() -> None:
    strategy = placement({}).spec.effective_group_strategy()
    assert strategy.clusters_per_decision_group == "100%"
    assert strategy.decision_groups == []
    assert "decisionStrategy" not in placement({}).to_wire()["spec"]


def test_placement_keeps_an_explicit_group_size() -> None:
    p = placement({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 150}}})
    assert p.spec.effective_group_strategy().clusters_per_decision_group == 150


def test_managed_cluster_set_defaults_to_the_exclusive_label() -> None:
    mcs = ManagedClusterSet.model_validate({"metadata": {"name": "s"}})
    assert mcs.spec.cluster_selector.selector_type == "ExclusiveClusterSetLabel"
    assert mcs.spec.cluster_selector.label_selector is None


def test_managed_cluster_defaults() -> None:
    mc = ManagedCluster.model_validate({"metadata": {"name": "c1"}})
    assert mc.spec.lease_duration_seconds == 60
    assert mc.to_wire()["spec"] == {"hubAcceptsClient": False, "leaseDurationSeconds": 60}


def test_managed_cluster_claims_take_the_last_value_of_a_repeated_name() -> None:
    mc = ManagedCluster.model_validate(
        {
            "metadata": {"name": "c1"},
            "status": {"clusterClaims": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}]},
        }
    )
    assert mc.status.claims() == {"a": "2"}


def test_manifest_work_replica_set_defaults_match_ocm() -> None:
    mwrs = ManifestWorkReplicaSet.model_validate({"metadata": META, "spec": {"placementRefs": [{"name": "p"}]}})
    assert mwrs.spec.cascade_deletion_policy == "Background"
    strategy = mwrs.spec.placement_refs[0].rollout_strategy
    assert strategy.type == "All"
    assert strategy.all is not None and strategy.all.progress_deadline == "None"


def test_manifest_work_replica_set_summary_is_written_even_when_zero() -> None:
    mwrs = ManifestWorkReplicaSet.model_validate({"metadata": META, "spec": {"placementRefs": [{"name": "p"}]}})
    assert mwrs.to_wire()["status"]["summary"] == {
        "total": 0,
        "applied": 0,
        "available": 0,
        "degraded": 0,
        "progressing": 0,
        "desiredTotal": 0,
        "updated": 0,
    }


def test_manifest_work_delete_option_defaults_to_foreground() -> None:
    work = ManifestWork.model_validate({"metadata": META, "spec": {"deleteOption": {}}})
    assert work.spec.delete_option is not None
    assert work.spec.delete_option.propagation_policy == "Foreground"


def test_addon_defaults_match_ocm() -> None:
    cma = ClusterManagementAddOn.model_validate(
        {"metadata": {"name": "a"}, "spec": {"supportedConfigs": [{"resource": "r"}]}}
    )
    assert cma.spec.install_strategy.type == "Manual"
    assert cma.spec.supported_configs[0].group == ""
    mca = ManagedClusterAddOn.model_validate({"metadata": META, "spec": {}})
    assert mca.spec.install_namespace == "open-cluster-management-agent-addon"


def test_cma_default_config_references_use_ocms_lower_case_c() -> None:
    cma = ClusterManagementAddOn.model_validate(
        {
            "metadata": {"name": "a"},
            "spec": {},
            "status": {"defaultconfigReferences": [{"resource": "r", "desiredConfig": {"name": "n"}}]},
        }
    )
    assert cma.status.default_config_references[0].desired_config is not None
    assert "defaultconfigReferences" in cma.to_wire()["status"]


@pytest.mark.parametrize(
    ("annotations", "managed"),
    [
        ({}, True),
        ({"addon.open-cluster-management.io/lifecycle": "addon-manager"}, True),
        ({"addon.open-cluster-management.io/lifecycle": "self"}, False),
        ({"addon.open-cluster-management.io/lifecycle": ""}, False),
    ],
)
def test_cma_lifecycle_annotation(annotations: dict[str, str], managed: bool) -> None:
    cma = ClusterManagementAddOn.model_validate({"metadata": {"name": "a", "annotations": annotations}, "spec": {}})
    assert cma.is_lifecycle_managed() is managed


def test_registry_knows_every_kind_by_api_version_and_kind() -> None:
    assert len(ALL_KINDS) == 12
    assert len(ALL_MODELS) == 16
    for kind in ALL_MODELS:
        assert model_for(kind.KIND.api_version, kind.KIND.kind) is kind


def test_parse_object_reads_each_served_version_with_its_own_model() -> None:
    body = {"kind": "ManagedClusterAddOn", "metadata": {"name": "a", "namespace": "c1"}, "spec": {}}
    old = parse_object({**body, "apiVersion": "addon.open-cluster-management.io/v1alpha1"})
    new = parse_object({**body, "apiVersion": "addon.open-cluster-management.io/v1beta1"})
    assert isinstance(old, addon_v1alpha1.ManagedClusterAddOn)
    assert isinstance(new, addon_v1beta1.ManagedClusterAddOn)
    assert old.to_wire()["spec"] == {"installNamespace": "open-cluster-management-agent-addon"}
    assert new.to_wire()["spec"] == {}


def test_parse_object_picks_the_model_from_type_meta() -> None:
    obj = parse_object(
        {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "metadata": META, "spec": {}}
    )
    assert isinstance(obj, Placement)


def test_parse_object_rejects_kinds_it_does_not_model() -> None:
    with pytest.raises(InvalidObject, match="not an OCM kind"):
        parse_object({"apiVersion": "v1", "kind": "ConfigMap"})


def test_cel_condition_rule_needs_a_condition_name() -> None:
    work = {
        "metadata": META,
        "spec": {
            "manifestConfigs": [
                {
                    "resourceIdentifier": {"resource": "jobs", "name": "j"},
                    "conditionRules": [{"type": "CEL", "condition": "", "celExpressions": ["true"]}],
                }
            ]
        },
    }
    with pytest.raises(InvalidObject, match=r"spec\.manifestConfigs\[0\]\.conditionRules\[0\]: condition is required"):
        ManifestWork.parse(work)


def test_taint_time_added_may_be_null() -> None:
    mc = ManagedCluster.parse(
        {"metadata": {"name": "c1"}, "spec": {"taints": [{"key": "k", "effect": "NoSelect", "timeAdded": None}]}}
    )
    assert mc.spec.taints[0].time_added is None
