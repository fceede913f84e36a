"""The CRDs are generated from the models, structurally sound, and committed up to date."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ocm_rollout.api import crdgen
from ocm_rollout.api.kinds import ALL_KINDS
from ocm_rollout.cli import main as cli
from tests.unit.helpers import schema_nodes

REPO = Path(__file__).resolve().parents[2]
CRDS = crdgen.generate_crds()


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def crd_id(crd: dict[str, Any]) -> str:
    return str(crd["spec"]["names"]["kind"])


def test_committed_crds_are_byte_identical_to_a_fresh_generation() -> None:
    assert crdgen.check_dir(REPO / "crds") == [], "run `ocm-rollout crds generate` and commit crds/"


def test_generation_is_deterministic() -> None:
    assert crdgen.render_all() == crdgen.render_all()
    assert crdgen.print_all() == crdgen.print_all()


def test_one_crd_per_kind_in_group_then_plural_order() -> None:
    keys = [(c["spec"]["group"], c["spec"]["names"]["plural"]) for c in CRDS]
    assert keys == sorted(keys)
    assert len(CRDS) == len(ALL_KINDS) == 11


def test_file_names_follow_group_and_plural() -> None:
    assert "work.open-cluster-management.io_manifestworkreplicasets.yaml" in crdgen.render_all()


def test_generate_writes_files_that_check_accepts(tmp_path: Path) -> None:
    written = crdgen.write_all(tmp_path)
    assert len(written) == 11
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


@pytest.mark.parametrize("crd", CRDS, ids=crd_id)
def test_schema_is_structural(crd: dict[str, Any]) -> None:
    for path, node in schema_nodes(schema_of(crd)):
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


@pytest.mark.parametrize("crd", CRDS, ids=crd_id)
def test_top_level_metadata_is_only_typed(crd: dict[str, Any]) -> None:
    props = schema_of(crd)["properties"]
    assert props["metadata"] == {"type": "object"}
    assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"


@pytest.mark.parametrize("crd", CRDS, ids=crd_id)
def test_list_map_keys_are_required_or_defaulted(crd: dict[str, Any]) -> None:
    for path, node in schema_nodes(schema_of(crd)):
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], f"{path} {key}"


@pytest.mark.parametrize("crd", CRDS, ids=crd_id)
def test_defaults_satisfy_their_own_schema(crd: dict[str, Any]) -> None:
    for path, node in schema_nodes(schema_of(crd)):
        if "default" in node:
            schema = crdgen.to_json_schema({k: v for k, v in node.items() if k != "default"})
            jsonschema.validate(crdgen.apply_defaults(node, node["default"]), schema)
            assert path


@pytest.mark.parametrize("crd", CRDS, ids=crd_id)
def test_every_field_has_a_description(crd: dict[str, Any]) -> None:
    missing = [
        path
        for path, node in schema_nodes(schema_of(crd))
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


def test_status_subresource_everywhere_but_addon_deployment_config() -> None:
    without = [crd_id(c) for c in CRDS if "subresources" not in c["spec"]["versions"][0]]
    assert without == ["AddOnDeploymentConfig"]


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
