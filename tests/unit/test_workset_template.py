"""Template equality (docs/behaviour/mwrs.md 5.5)."""

from __future__ import annotations

import copy

from ocm_rollout.controllers.workset.template import TemplateComparer, spec_equals_template

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}


def spec(*manifests: dict, **rest: object) -> dict:
    return {"workload": {"manifests": list(manifests)}, **rest}


def test_identical_specs_are_equal() -> None:
    assert spec_equals_template(spec(CM), spec(copy.deepcopy(CM)))


def test_manifest_key_order_does_not_matter() -> None:
    reordered = {"data": {"a": "b"}, "metadata": {"name": "cm"}, "kind": "ConfigMap", "apiVersion": "v1"}
    assert spec_equals_template(spec(reordered), spec(CM))


def test_changed_manifest_value_differs() -> None:
    changed = copy.deepcopy(CM)
    changed["data"]["a"] = "c"
    assert not spec_equals_template(spec(changed), spec(CM))


def test_manifest_creation_timestamps_are_ignored() -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}
    stamped = copy.deepcopy(deploy)
    stamped["metadata"]["creationTimestamp"] = None
    stamped["spec"]["template"]["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    assert spec_equals_template(spec(stamped), spec(deploy))


def test_inside_a_manifest_missing_key_differs_from_empty_value() -> None:
    with_empty = copy.deepcopy(CM)
    with_empty["metadata"]["labels"] = {}
    assert not spec_equals_template(spec(with_empty), spec(CM))


def test_manifest_order_matters() -> None:
    other = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    assert not spec_equals_template(spec(CM, other), spec(other, CM))


def test_zero_valued_spec_fields_equal_absent_ones() -> None:
    zeroes = spec(CM, deleteOption=None, manifestConfigs=[], executor={})
    assert spec_equals_template(zeroes, spec(CM))


def test_nested_zero_values_equal_absent_ones() -> None:
    nested = spec(CM, deleteOption={"propagationPolicy": "", "selectivelyOrphans": {"orphaningRules": []}})
    assert spec_equals_template(nested, spec(CM))


def test_changed_delete_option_differs() -> None:
    assert not spec_equals_template(spec(CM, deleteOption={"propagationPolicy": "Orphan"}), spec(CM))


def test_zero_ttl_equals_absent_ttl() -> None:
    with_zero = spec(CM, deleteOption={"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": 0})
    assert spec_equals_template(with_zero, spec(CM, deleteOption={"propagationPolicy": "Foreground"}))


def test_missing_spec_equals_empty_template() -> None:
    assert spec_equals_template(None, {})


def test_comparer_reuses_the_template() -> None:
    comparer = TemplateComparer(spec(CM))
    assert comparer.matches(spec(copy.deepcopy(CM)))
    assert not comparer.matches(spec())
