"""Every example under examples/ (taken from the OCM documentation) parses through the
models and validates against the generated CRD schema, as written and as the models write it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ocm_rollout.api.crdgen import apply_defaults, crd_errors, generate_crds
from ocm_rollout.api.kinds import parse_object
from ocm_rollout.api.work_v1alpha1 import ManifestWorkReplicaSet
from ocm_rollout.controllers.rollout.strategy import decode_strategy

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


SEED_SPELLING = EXAMPLES / "work" / "manifestworkreplicaset-seed-spelling.yaml"
CURRENT_SPELLING = EXAMPLES / "work" / "manifestworkreplicaset-cronjob.yaml"


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


def test_seed_spelling_rollout_type_means_the_same_as_the_example() -> None:
    seed = ManifestWorkReplicaSet.parse(_load(SEED_SPELLING))
    example = ManifestWorkReplicaSet.parse(_load(CURRENT_SPELLING))
    assert [r.rollout_strategy.type for r in seed.spec.placement_refs] == ["All", "Progressive", "ProgressivePerGroup"]
    assert [r.rollout_strategy.model_copy(update={"rollout_type": None}) for r in seed.spec.placement_refs] == [
        r.rollout_strategy for r in example.spec.placement_refs
    ]
    # The shared decoder (controllers and `ocm-rollout plan`) reads the stored JSON the same way.
    seed_refs, example_refs = _load(SEED_SPELLING)["spec"]["placementRefs"], _load(CURRENT_SPELLING)["spec"]["placementRefs"]
    assert [decode_strategy(r["rolloutStrategy"]).to_dict() for r in seed_refs] == [
        decode_strategy(r["rolloutStrategy"]).to_dict() for r in example_refs
    ]


def test_seed_spelling_rollout_type_is_kept_by_the_crd() -> None:
    # Nothing pruned (strict), and the CRD defaults leave type unset, so nothing contradicts rolloutType.
    doc = _load(SEED_SPELLING)
    assert crd_errors(doc, strict=True) == []
    schema = next(
        crd for crd in generate_crds() if crd["spec"]["names"]["kind"] == "ManifestWorkReplicaSet"
    )["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    stored = apply_defaults(schema, doc)
    strategies = [r["rolloutStrategy"] for r in stored["spec"]["placementRefs"]]
    assert [s.get("rolloutType") for s in strategies] == ["All", "Progressive", "ProgressivePerGroup"]
    assert [s.get("type") for s in strategies] == [None, None, None]


def test_crd_rule_rejects_rollout_type_contradicting_type() -> None:
    schema = next(
        crd for crd in generate_crds() if crd["spec"]["names"]["kind"] == "ManifestWorkReplicaSet"
    )["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    strategy = schema["properties"]["spec"]["properties"]["placementRefs"]["items"]["properties"]["rolloutStrategy"]
    (rule,) = strategy["x-kubernetes-validations"]
    assert rule["rule"] == "!has(self.rolloutType) || !has(self.type) || self.type == self.rolloutType"
    assert "rolloutType is the older spelling of type" in rule["message"]
    # The object's default sets type only, and type itself has no default of its own.
    assert strategy["default"] == {"type": "All", "all": {"progressDeadline": "None"}}
    assert "default" not in strategy["properties"]["type"]
