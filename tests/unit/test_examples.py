"""Every example under examples/ (taken from the OCM documentation seeds) parses through the
models and validates against the generated CRD schema, as written and as the models write it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from api.crdgen import crd_errors
from api.kinds import parse_object
from api.work_v1alpha1 import ManifestWorkReplicaSet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FOLDERS = ("clusters", "placement", "work", "addons")


def documents() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for folder in FOLDERS:
        for path in sorted((EXAMPLES / folder).glob("*.yaml")):
            for index, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
                if doc is not None:
                    out.append((f"{folder}/{path.name}#{index}", doc))
    return out


DOCS = documents()


def test_examples_cover_every_kind_of_the_seed_pages() -> None:
    kinds = {doc["kind"] for _, doc in DOCS}
    assert kinds >= {
        "Placement",
        "PlacementDecision",
        "ManagedCluster",
        "ManagedClusterSet",
        "ManagedClusterSetBinding",
        "ManifestWork",
        "ManifestWorkReplicaSet",
        "ClusterManagementAddOn",
        "ManagedClusterAddOn",
    }
    assert len(DOCS) >= 50


def test_every_example_file_starts_with_where_it_comes_from() -> None:
    for folder in FOLDERS:
        for path in (EXAMPLES / folder).glob("*.yaml"):
            assert path.read_text(encoding="utf-8").startswith("# Source: "), path


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_example_parses_through_the_models(name: str, doc: dict[str, Any]) -> None:
    parse_object(doc)


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_example_validates_against_the_crd_with_no_field_pruned(name: str, doc: dict[str, Any]) -> None:
    assert crd_errors(doc, strict=True) == []


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_example_written_back_by_the_models_still_validates_and_reads_the_same(
    name: str, doc: dict[str, Any]
) -> None:
    model = parse_object(doc)
    wire = model.to_wire()
    assert crd_errors(wire, strict=True) == []
    assert type(model).model_validate(wire) == model


SEED_MWRS = """
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata:
  name: mwrset-cronjob
  namespace: ocm-ns
spec:
  placementRefs:
    - name: placement-rollout-all
      rolloutStrategy:
        rolloutType: All
    - name: placement-rollout-progressive
      rolloutStrategy:
        rolloutType: Progressive
        progressive:
          minSuccessTime: 5m
          progressDeadline: 10m
          maxFailures: 5%
          mandatoryDecisionGroups:
          - groupName: "prod-canary-west"
          - groupName: "prod-canary-east"
    - name: placement-rollout-progressive-per-group
      rolloutStrategy:
        rolloutType: ProgressivePerGroup
        progressivePerGroup:
          progressDeadline: 10m
          maxFailures: 2
"""


def test_seed_spelling_rollout_type_means_the_same_as_the_example() -> None:
    seed = ManifestWorkReplicaSet.parse(yaml.safe_load(SEED_MWRS))
    example = ManifestWorkReplicaSet.parse(
        yaml.safe_load((EXAMPLES / "work" / "manifestworkreplicaset-cronjob.yaml").read_text(encoding="utf-8"))
    )
    assert [r.rollout_strategy for r in seed.spec.placement_refs] == [
        r.rollout_strategy for r in example.spec.placement_refs
    ]
    assert [r.rollout_strategy.type for r in seed.spec.placement_refs] == ["All", "Progressive", "ProgressivePerGroup"]


def test_seed_spelling_rollout_type_would_be_pruned_by_the_crd() -> None:
    errors = crd_errors(yaml.safe_load(SEED_MWRS), strict=True)
    assert any("rolloutType" in e for e in errors)
