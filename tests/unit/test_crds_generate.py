"""The CRDs are generated from the models, structurally sound, and committed up to date."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ocm_rollout.api import addon_v1alpha1, addon_v1beta1, crdgen
from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.kinds import ALL_KINDS, SERVED_KINDS, ServedKind
from ocm_rollout.cli import main as cli
from tests.unit.helpers import schema_nodes

REPO = Path(__file__).resolve().parents[2]
CRDS = crdgen.generate_crds()


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    """The schema of the CRD's storage version (listed first)."""
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def crd_id(crd: dict[str, Any]) -> str:
    return str(crd["spec"]["names"]["kind"])


# The schema of every served version of every CRD, by "<kind>/<version>".
SCHEMAS: dict[str, dict[str, Any]] = {
    f"{crd_id(crd)}/{v['name']}": v["schema"]["openAPIV3Schema"] for crd in CRDS for v in crd["spec"]["versions"]
}


def test_committed_crds_are_byte_identical_to_a_fresh_generation() -> None:
    assert crdgen.check_dir(REPO / "crds") == [], "run `ocm-rollout crds generate` and commit crds/"


def test_generation_is_deterministic() -> None:
    assert crdgen.render_all() == crdgen.render_all()
    assert crdgen.print_all() == crdgen.print_all()


def test_one_crd_per_kind_in_group_then_plural_order() -> None:
    keys = [(c["spec"]["group"], c["spec"]["names"]["plural"]) for c in CRDS]
    assert keys == sorted(keys)
    assert len(CRDS) == len(ALL_KINDS) == len(SERVED_KINDS) == 12


def test_file_names_follow_group_and_plural() -> None:
    assert "work.open-cluster-management.io_manifestworkreplicasets.yaml" in crdgen.render_all()


def test_generate_writes_files_that_check_accepts(tmp_path: Path) -> None:
    written = crdgen.write_all(tmp_path)
    assert len(written) == 12
    assert crdgen.check_dir(tmp_path) == []
    assert crdgen.write_all(tmp_path) == []


def test_check_reports_a_hand_edited_file(tmp_path: Path) -> None:
    crdgen.write_all(tmp_path)
    target = tmp_path / "cluster.open-cluster-management.io_placements.yaml"
    target.write_text(target.read_text() + "# edited\n")
    assert crdgen.check_dir(tmp_path) == [f"{target}: differs from the models"]


def test_generate_removes_stale_generated_files_only(tmp_path: Path) -> None:
    stale = tmp_path / "old_kind.yaml"
    stale.write_text(crdgen.HEADER + "kind: Old\n")
    foreign = tmp_path / "mine.yaml"
    foreign.write_text("kind: Mine\n")
    crdgen.write_all(tmp_path)
    assert not stale.exists()
    assert foreign.exists()


def test_cli_generate_and_check(tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["crds", "generate", "--dir", str(tmp_path)]) == 0
        assert cli.main(["crds", "check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "cluster.open-cluster-management.io_placements.yaml").unlink()
    with redirect_stdout(out):
        assert cli.main(["crds", "check", "--dir", str(tmp_path)]) == 1


def test_cli_print_writes_every_crd_as_one_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["crds", "print"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d for d in docs if d] == CRDS


@pytest.mark.parametrize("version", sorted(SCHEMAS))
def test_schema_is_structural(version: str) -> None:
    for path, node in schema_nodes(SCHEMAS[version]):
        assert "$ref" not in node, path
        assert "oneOf" not in node and "allOf" not in node and "not" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, path
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        else:
            assert "anyOf" not in node, path
            assert node.get("type") in ("object", "array", "string", "integer", "number", "boolean"), path
        if node.get("type") == "array":
            assert "items" in node, path


@pytest.mark.parametrize("version", sorted(SCHEMAS))
def test_top_level_metadata_is_only_typed(version: str) -> None:
    props = SCHEMAS[version]["properties"]
    assert props["metadata"] == {"type": "object"}
    assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"


@pytest.mark.parametrize("version", sorted(SCHEMAS))
def test_list_map_keys_are_required_or_defaulted(version: str) -> None:
    for path, node in schema_nodes(SCHEMAS[version]):
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], f"{path} {key}"


@pytest.mark.parametrize("version", sorted(SCHEMAS))
def test_defaults_satisfy_their_own_schema(version: str) -> None:
    for path, node in schema_nodes(SCHEMAS[version]):
        if "default" in node:
            schema = crdgen.to_json_schema({k: v for k, v in node.items() if k != "default"})
            jsonschema.validate(crdgen.apply_defaults(node, node["default"]), schema)
            assert path


@pytest.mark.parametrize("version", sorted(SCHEMAS))
def test_every_field_has_a_description(version: str) -> None:
    missing = [
        path
        for path, node in schema_nodes(SCHEMAS[version])
        if path not in ("", ".metadata") and not path.endswith(("[]", "{}")) and "description" not in node
    ]
    assert missing == []


def test_manifests_are_embedded_resources_kept_as_given() -> None:
    work = next(c for c in CRDS if crd_id(c) == "ManifestWork")
    manifest = schema_of(work)["properties"]["spec"]["properties"]["workload"]["properties"]["manifests"]["items"]
    assert manifest == {
        "description": manifest["description"],
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_status_subresource_everywhere_but_addon_deployment_config_and_template() -> None:
    without = sorted({crd_id(c) for c in CRDS for v in c["spec"]["versions"] if "subresources" not in v})
    assert without == ["AddOnDeploymentConfig", "AddOnTemplate"]


def test_every_version_is_served_and_the_first_is_the_only_one_stored() -> None:
    for crd in CRDS:
        versions = crd["spec"]["versions"]
        assert all(v["served"] for v in versions), crd_id(crd)
        assert [v["storage"] for v in versions] == [True] + [False] * (len(versions) - 1), crd_id(crd)
        converted = crd_id(crd) in ("ClusterManagementAddOn", "ManagedClusterAddOn")
        assert ("conversion" in crd["spec"]) == converted, crd_id(crd)


def test_add_on_kinds_are_served_in_v1alpha1_then_v1beta1() -> None:
    multi = {crd_id(c): [v["name"] for v in c["spec"]["versions"]] for c in CRDS if len(c["spec"]["versions"]) > 1}
    assert multi == {
        kind: ["v1alpha1", "v1beta1"]
        for kind in ("AddOnDeploymentConfig", "AddOnTemplate", "ClusterManagementAddOn", "ManagedClusterAddOn")
    }


def test_each_version_has_its_own_printer_columns() -> None:
    cma = next(c for c in CRDS if crd_id(c) == "ClusterManagementAddOn")
    names = [[col["name"] for col in v["additionalPrinterColumns"]] for v in cma["spec"]["versions"]]
    assert names == [["DISPLAY NAME", "CRD NAME"], ["DISPLAY NAME"]]


def test_crd_for_a_model_of_any_version_gives_the_whole_kind() -> None:
    assert crdgen.crd_for(addon_v1beta1.ManagedClusterAddOn) == crdgen.crd_for(addon_v1alpha1.ManagedClusterAddOn)
    assert crdgen.crd_for(Placement) == next(c for c in CRDS if crd_id(c) == "Placement")


def test_a_served_kind_rejects_versions_of_another_kind_or_twice_the_same() -> None:
    with pytest.raises(ValueError, match="is not a version of"):
        ServedKind(addon_v1alpha1.ManagedClusterAddOn, (addon_v1beta1.ClusterManagementAddOn,))
    with pytest.raises(ValueError, match="given twice"):
        ServedKind(addon_v1alpha1.ManagedClusterAddOn, (addon_v1alpha1.ManagedClusterAddOn,))


def test_objects_validate_against_the_schema_of_their_own_version() -> None:
    mca = {"kind": "ManagedClusterAddOn", "metadata": {"name": "a", "namespace": "c1"}, "spec": {"installNamespace": "x"}}
    assert crdgen.crd_errors({**mca, "apiVersion": "addon.open-cluster-management.io/v1alpha1"}, strict=True) == []
    errors = crdgen.crd_errors({**mca, "apiVersion": "addon.open-cluster-management.io/v1beta1"}, strict=True)
    assert any("installNamespace" in e for e in errors)
    template = {
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "AddOnTemplate",
        "metadata": {"name": "t"},
        "spec": {"addonName": "a", "agentSpec": {}},
    }
    assert crdgen.crd_errors(template, strict=True) == []
    assert crdgen.crd_errors({**template, "apiVersion": "addon.open-cluster-management.io/v2"}) == [
        "<object>: no CRD for addon.open-cluster-management.io/v2/AddOnTemplate"
    ]


def test_progress_deadline_and_thresholds_use_ocms_rules() -> None:
    mwrs = next(c for c in CRDS if crd_id(c) == "ManifestWorkReplicaSet")
    strategy = schema_of(mwrs)["properties"]["spec"]["properties"]["placementRefs"]["items"]["properties"][
        "rolloutStrategy"
    ]
    progressive = strategy["properties"]["progressive"]["properties"]
    assert progressive["progressDeadline"]["pattern"] == "^(([0-9])+[h|m|s])|None$"
    assert progressive["progressDeadline"]["default"] == "None"
    assert progressive["minSuccessTime"]["default"] == "0"
    assert progressive["maxFailures"]["x-kubernetes-int-or-string"] is True
    assert progressive["maxFailures"]["pattern"] == "^((100|[0-9]{1,2})%|[0-9]+)$"
    assert strategy["default"] == {"type": "All", "all": {"progressDeadline": "None"}}


def test_embedded_manifests_require_type_meta_in_json_schema() -> None:
    node = {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    with pytest.raises(jsonschema.ValidationError, match="'kind' is a required property"):
        jsonschema.validate({"apiVersion": "v1"}, crdgen.to_json_schema(node))


def test_nullable_fields_accept_null() -> None:
    node = {"type": "string", "format": "date-time", "nullable": True}
    jsonschema.validate(None, crdgen.to_json_schema(node))


def test_strict_json_schema_rejects_undeclared_fields() -> None:
    obj = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "p"},
        "spec": {"sortBy": "Score", "spreadBy": "zone"},
    }
    assert crdgen.crd_errors(obj) == []
    errors = crdgen.crd_errors(obj, strict=True)
    assert any("spreadBy" in e for e in errors)
    assert not any("sortBy" in e for e in errors)


def test_defaults_are_applied_top_down_including_inside_defaults() -> None:
    mwrs = next(c for c in CRDS if crd_id(c) == "ManifestWorkReplicaSet")
    obj = {"spec": {"placementRefs": [{"name": "p"}]}}
    ref = crdgen.apply_defaults(schema_of(mwrs), obj)["spec"]["placementRefs"][0]
    assert ref["rolloutStrategy"] == {
        "type": "All",
        "all": {"progressDeadline": "None", "minSuccessTime": "0", "maxFailures": 0},
    }
