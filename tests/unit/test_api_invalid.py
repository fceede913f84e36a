"""Invalid objects are rejected both by the models and by the generated CRD schema, and both
errors name the offending field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ocm_rollout.api.crdgen import crd_errors
from ocm_rollout.api.kinds import parse_object
from ocm_rollout.api.meta import InvalidObject

Obj = dict[str, Any]

CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "AsExpected",
    "message": "",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
}


def placement() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": 2}]},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "decisionStrategy": {
                "groupStrategy": {
                    "clustersPerDecisionGroup": "25%",
                    "decisionGroups": [
                        {
                            "groupName": "canary",
                            "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}}},
                        }
                    ],
                }
            },
        },
        "status": {"conditions": [dict(CONDITION)]},
    }


def mwrs() -> Obj:
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {
            "placementRefs": [
                {
                    "name": "p",
                    "rolloutStrategy": {
                        "type": "Progressive",
                        "progressive": {
                            "progressDeadline": "10m",
                            "maxFailures": "5%",
                            "maxConcurrency": 2,
                            "mandatoryDecisionGroups": [{"groupName": "canary"}, {"groupIndex": 1}],
                        },
                    },
                }
            ],
            "manifestWorkTemplate": {
                "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]}
            },
        },
    }


def work() -> Obj:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "w", "namespace": "cluster1"},
        "spec": {
            "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]},
            "deleteOption": {"propagationPolicy": "Orphan"},
            "manifestConfigs": [
                {
                    "resourceIdentifier": {"resource": "configmaps", "name": "c", "namespace": "default"},
                    "feedbackRules": [{"type": "WellKnownStatus"}],
                    "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"fieldManager": "work-agent"}},
                }
            ],
            "executor": {"subject": {"type": "ServiceAccount", "serviceAccount": {"namespace": "d", "name": "e"}}},
        },
    }


def cluster() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "cluster1"},
        "spec": {"hubAcceptsClient": True, "taints": [{"key": "gpu", "effect": "NoSelect"}]},
        "status": {"allocatable": {"cpu": "11700m"}, "conditions": [dict(CONDITION)]},
    }


def cluster_set() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "s"},
        "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}},
    }


def binding() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"clusterSet": "s"},
    }


def decision() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": "p-decision-1", "namespace": "ns"},
        "status": {"decisions": [{"clusterName": "cluster1", "reason": ""}]},
    }


def score() -> Obj:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"name": "default", "namespace": "cluster1"},
        "status": {"scores": [{"name": "cpuratio", "value": 80}]},
    }


def cma() -> Obj:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "helloworld"},
        "spec": {
            "supportedConfigs": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}],
            "installStrategy": {
                "type": "Placements",
                "placements": [
                    {
                        "name": "p",
                        "namespace": "default",
                        "rolloutStrategy": {"type": "Progressive", "progressive": {"progressDeadline": "5m"}},
                    }
                ],
            },
        },
    }


def mca() -> Obj:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": "cluster1"},
        "spec": {"installNamespace": "helloworld", "configs": [{"resource": "addondeploymentconfigs", "name": "c"}]},
    }


def adc() -> Obj:
    return {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": "2"}]},
    }


def setter(path: str, value: Any) -> Callable[[Obj], None]:
    """Set (or, with value DELETE, remove) the element at a dotted path with [i] indexes."""

    def apply(obj: Obj) -> None:
        parts: list[str | int] = []
        for piece in path.replace("[", ".[").split("."):
            parts.append(int(piece[1:-1]) if piece.startswith("[") else piece)
        target: Any = obj
        for part in parts[:-1]:
            target = target[part]
        if value is DELETE:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value

    return apply


DELETE = object()


@dataclass(frozen=True)
class Case:
    id: str
    base: Callable[[], Obj]
    path: str
    value: Any

    def build(self) -> Obj:
        obj = copy.deepcopy(self.base())
        setter(self.path, self.value)(obj)
        return obj


P = "spec.prioritizerPolicy.configurations[0]"
G = "spec.decisionStrategy.groupStrategy"
R = "spec.placementRefs[0].rolloutStrategy"
CP = "spec.installStrategy.placements[0]"

CASES = [
    Case("placement-weight-11", placement, f"{P}.weight", 11),
    Case("placement-weight-minus-11", placement, f"{P}.weight", -11),
    Case("placement-weight-not-a-number", placement, f"{P}.weight", "2"),
    Case("placement-score-coordinate-type-unknown", placement, f"{P}.scoreCoordinate.type", "Plugin"),
    Case("placement-add-on-score-without-score-name", placement, f"{P}.scoreCoordinate.addOn", {"resourceName": "r"}),
    Case("placement-toleration-effect-unknown", placement, "spec.tolerations[0].effect", "NoSchedule"),
    Case("placement-toleration-key-not-qualified", placement, "spec.tolerations[0].key", "bad key!"),
    Case("placement-toleration-value-too-long", placement, "spec.tolerations[0].value", "v" * 1025),
    Case("placement-group-name-bad-start", placement, f"{G}.decisionGroups[0].groupName", "-canary"),
    Case("placement-group-without-selector", placement, f"{G}.decisionGroups[0].groupClusterSelector", DELETE),
    Case("placement-number-of-clusters-string", placement, "spec.numberOfClusters", "3"),
    Case("placement-cluster-sets-not-a-list", placement, "spec.clusterSets", "prod"),
    Case("placement-without-spec", placement, "spec", DELETE),
    Case("placement-condition-status-maybe", placement, "status.conditions[0].status", "Maybe"),
    Case("placement-condition-reason-with-spaces", placement, "status.conditions[0].reason", "not ok"),
    Case("placement-condition-without-transition-time", placement, "status.conditions[0].lastTransitionTime", DELETE),
    Case("mwrs-progress-deadline-in-words", mwrs, f"{R}.progressive.progressDeadline", "ten minutes"),
    Case("mwrs-progress-deadline-in-days", mwrs, f"{R}.progressive.progressDeadline", "2d"),
    Case("mwrs-max-failures-trailing-garbage", mwrs, f"{R}.progressive.maxFailures", "120%x"),
    Case("mwrs-max-failures-over-100-percent", mwrs, f"{R}.progressive.maxFailures", "150%"),
    Case("mwrs-max-failures-boolean", mwrs, f"{R}.progressive.maxFailures", True),
    Case("mwrs-max-concurrency-negative", mwrs, f"{R}.progressive.maxConcurrency", "-1"),
    Case("mwrs-rollout-type-unknown", mwrs, f"{R}.type", "Canary"),
    Case("mwrs-mandatory-group-index-string", mwrs, f"{R}.progressive.mandatoryDecisionGroups[1].groupIndex", "one"),
    Case("mwrs-missing-placement-refs", mwrs, "spec.placementRefs", DELETE),
    Case("mwrs-empty-placement-refs", mwrs, "spec.placementRefs", []),
    Case("mwrs-placement-ref-empty-name", mwrs, "spec.placementRefs[0].name", ""),
    Case("mwrs-cascade-deletion-policy-unknown", mwrs, "spec.cascadeDeletionPolicy", "Orphan"),
    Case("mwrs-template-manifest-without-kind", mwrs, "spec.manifestWorkTemplate.workload.manifests[0].kind", DELETE),
    Case("work-manifest-without-api-version", work, "spec.workload.manifests[0].apiVersion", DELETE),
    Case("work-manifest-not-an-object", work, "spec.workload.manifests[0]", "kind: ConfigMap"),
    Case("work-propagation-policy-unknown", work, "spec.deleteOption.propagationPolicy", "Background"),
    Case("work-feedback-rule-type-unknown", work, "spec.manifestConfigs[0].feedbackRules[0].type", "Custom"),
    Case("work-identifier-without-resource", work, "spec.manifestConfigs[0].resourceIdentifier.resource", DELETE),
    Case(
        "work-field-manager-not-work-agent",
        work,
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager",
        "kubectl",
    ),
    Case("work-update-strategy-unknown", work, "spec.manifestConfigs[0].updateStrategy.type", "Replace"),
    Case("work-executor-subject-type-user", work, "spec.executor.subject.type", "User"),
    Case("work-executor-service-account-bad-name", work, "spec.executor.subject.serviceAccount.name", "Executor_1"),
    Case("cluster-taint-effect-unknown", cluster, "spec.taints[0].effect", "NoExecute"),
    Case("cluster-taint-without-key", cluster, "spec.taints[0].key", DELETE),
    Case("cluster-lease-duration-string", cluster, "spec.leaseDurationSeconds", "60"),
    Case("cluster-allocatable-not-a-quantity", cluster, "status.allocatable.cpu", "12 cores"),
    Case("cluster-set-selector-type-unknown", cluster_set, "spec.clusterSelector.selectorType", "Exclusive"),
    Case("cluster-set-binding-empty-set-name", binding, "spec.clusterSet", ""),
    Case("placement-decision-without-reason", decision, "status.decisions[0].reason", DELETE),
    Case("placement-decision-without-decisions", decision, "status.decisions", DELETE),
    Case("score-value-101", score, "status.scores[0].value", 101),
    Case("cma-install-strategy-type-unknown", cma, "spec.installStrategy.type", "Auto"),
    Case("cma-placement-without-namespace", cma, f"{CP}.namespace", DELETE),
    Case("cma-placement-progress-deadline-in-days", cma, f"{CP}.rolloutStrategy.progressive.progressDeadline", "2d"),
    Case("cma-supported-config-empty-resource", cma, "spec.supportedConfigs[0].resource", ""),
    Case("mca-install-namespace-not-a-dns-label", mca, "spec.installNamespace", "Bad_NS"),
    Case("mca-config-without-name", mca, "spec.configs[0].name", DELETE),
    Case("adc-variable-name-starts-with-digit", adc, "spec.customizedVariables[0].name", "1LEVEL"),
    Case("adc-install-namespace-upper-case", adc, "spec.agentInstallNamespace", "UPPER"),
]

# Objects the CRD rejects but the models accept: a Placement stored before the CRD gained the
# rule can hold them, and docs/behaviour/scheduling.md says what the scheduler makes of them (§4
# "scoreCoordinate field is required", §6 group percentages), so the controller and
# `ocm-rollout schedule` report them in PlacementMisconfigured instead of failing to parse.
CRD_ONLY_CASES = [
    Case("placement-configuration-without-score-coordinate", placement, f"{P}.scoreCoordinate", DELETE),
    Case("placement-group-size-zero-percent", placement, f"{G}.clustersPerDecisionGroup", "0%"),
    Case("placement-group-size-not-a-percentage", placement, f"{G}.clustersPerDecisionGroup", "150x"),
    Case("placement-group-size-over-100-percent", placement, f"{G}.clustersPerDecisionGroup", "150%"),
    Case("placement-group-size-out-of-float-range", placement, f"{G}.clustersPerDecisionGroup", "1e400%"),
    Case("placement-group-size-fraction", placement, f"{G}.clustersPerDecisionGroup", "12.5%"),
]


def names_field(messages: str, path: str) -> bool:
    """The messages name the field: its full path, or its parent path and its own name."""
    if path in messages:
        return True
    parent, _, leaf = path.rpartition(".")
    if "[" in leaf and not parent:
        return False
    if leaf.endswith("]"):
        return False
    return any(parent in line and leaf in line for line in messages.splitlines())


def test_there_are_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [c.base for c in {c.base: c for c in CASES}.values()], ids=lambda f: f.__name__)
def test_base_objects_are_valid(case: Callable[[], Obj]) -> None:
    obj = case()
    parse_object(obj)
    assert crd_errors(obj, strict=True) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_model_rejects_and_names_the_field(case: Case) -> None:
    with pytest.raises(InvalidObject) as info:
        parse_object(case.build())
    assert names_field(str(info.value), case.path), str(info.value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_crd_schema_rejects_and_names_the_field(case: Case) -> None:
    errors = crd_errors(case.build())
    assert errors, "the CRD schema accepted it"
    assert names_field("\n".join(errors), case.path), errors


@pytest.mark.parametrize("case", CRD_ONLY_CASES, ids=lambda c: c.id)
def test_crd_rejects_what_the_model_accepts_from_storage(case: Case) -> None:
    errors = crd_errors(case.build())
    assert errors, "the CRD schema accepted it"
    assert names_field("\n".join(errors), case.path), errors
    parse_object(case.build())
