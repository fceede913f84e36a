"""Spec hashes and the config-spec-hash map (docs/behaviour/addons.md 5.4 and 1).

The expected ``go_json`` texts below were produced by Go's ``encoding/json`` (decoding as
Kubernetes does: whole numbers that fit an int64 stay integers, other numbers are float64);
``\\b`` and ``\\f`` follow Go >= 1.22, which OCM builds with.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocm_rollout.api.addon_hashing import (
    config_key,
    config_spec_hash_annotation,
    config_spec_hash_map,
    go_json,
    go_text,
    spec_hash,
)

ADDON_GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"


def adc(variable: str, **extra: Any) -> dict[str, Any]:
    """An AddOnDeploymentConfig as stored after a Go client created it (docs/behaviour/addons.md 5.4)."""
    return {
        "apiVersion": f"{ADDON_GROUP}/v1alpha1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "test", "namespace": "default", "generation": 1, "uid": "u1"},
        "spec": {
            "agentInstallNamespace": "open-cluster-management-agent-addon",
            "customizedVariables": [{"name": variable, "value": variable}],
            "proxyConfig": {},
        },
        "status": {},
        **extra,
    }


# --- the verified vectors of docs/behaviour/addons.md 5.4 -------------------------------------------------------


def test_verified_vector_hashes_the_stored_adc() -> None:
    assert spec_hash(adc("test")) == "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7"


def test_verified_vector_serialization_is_the_spec_only() -> None:
    spec_only = {key: value for key, value in adc("test").items() if key == "spec"}
    assert go_json(spec_only) == (
        '{"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon",'
        '"customizedVariables":[{"name":"test","value":"test"}],"proxyConfig":{}}}'
    )


@pytest.mark.parametrize(
    ("variable", "prefix", "suffix"),
    [("test1", "b746cc98", "2690"), ("test2", "3e6348b0", "3b32"), ("test3", "9b3c6d09", "d27e")],
)
def test_verified_prefixes_of_test1_test2_test3(variable: str, prefix: str, suffix: str) -> None:
    digest = spec_hash(adc(variable))
    assert digest.startswith(prefix)
    assert digest.endswith(suffix)
    assert len(digest) == 64


# --- spec_hash --------------------------------------------------------------------------------


def test_spec_hash_ignores_metadata_status_apiversion_and_kind() -> None:
    changed = adc("test")
    changed["metadata"] = {"name": "other", "generation": 7, "resourceVersion": "99"}
    changed["status"] = {"anything": True}
    changed["apiVersion"] = f"{ADDON_GROUP}/v1beta1"
    changed["kind"] = "Other"
    assert spec_hash(changed) == spec_hash(adc("test"))


def test_spec_hash_includes_other_top_level_fields_with_their_key() -> None:
    as_spec = {"spec": {"a": "1"}}
    as_data = {"data": {"a": "1"}}
    assert spec_hash(as_spec) != spec_hash(as_data)
    assert spec_hash({**adc("test"), "data": {"x": "y"}}) != spec_hash(adc("test"))


def test_spec_hash_is_sha256_of_go_json() -> None:
    obj = {"metadata": {"name": "n"}, "spec": {"b": [1, 2.5], "a": "<&>"}}
    expected = hashlib.sha256(go_json({"spec": obj["spec"]}).encode()).hexdigest()
    assert spec_hash(obj) == expected


def test_spec_hash_does_not_depend_on_key_order() -> None:
    one = {"spec": {"a": 1, "b": {"c": 2, "d": 3}}}
    two = {"spec": {"b": {"d": 3, "c": 2}, "a": 1}}
    assert spec_hash(one) == spec_hash(two)


def test_spec_hash_of_an_object_with_only_metadata_is_the_empty_object() -> None:
    assert spec_hash({"metadata": {"name": "x"}}) == hashlib.sha256(b"{}").hexdigest()


def test_spec_hash_is_lowercase_hex() -> None:
    digest = spec_hash(adc("test"))
    assert digest == digest.lower()
    int(digest, 16)


# --- go_json: structure ---------------------------------------------------------------------


def test_go_json_sorts_keys_at_every_level_and_is_compact() -> None:
    value = {"z": 1, "a": {"y": [3, 2, 1], "b": None}, "m": True, "k": False}
    assert go_json(value) == '{"a":{"b":null,"y":[3,2,1]},"k":false,"m":true,"z":1}'


def test_go_json_sorts_keys_by_code_point() -> None:
    value = {"<": "<", "é": 1, "e": 2, "E": 3, "": 4, "a\x00": 5, "a": 6}
    assert go_json(value) == '{"":4,"\\u003c":"\\u003c","E":3,"a":6,"a\\u0000":5,"e":2,"é":1}'


def test_go_json_writes_empty_containers() -> None:
    assert go_json({}) == "{}"
    assert go_json([]) == "[]"
    assert go_json([[], {}, [{}], ""]) == '[[],{},[{}],""]'


def test_go_json_writes_tuples_as_arrays() -> None:
    assert go_json((1, "a")) == '[1,"a"]'


def test_go_json_writes_bools_as_bools_not_numbers() -> None:
    assert go_json([True, False, None]) == "[true,false,null]"


def test_go_json_writes_integer_keys_as_strings() -> None:
    assert go_json({2: "b", 10: "a"}) == '{"10":"a","2":"b"}'


def test_go_json_rejects_values_that_are_not_json() -> None:
    with pytest.raises(TypeError):
        go_json({"a": {1, 2}})
    with pytest.raises(TypeError):
        go_json({(1, 2): "tuple key"})


# --- go_json: numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (100.0, "100"),
        (-0.0, "-0"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (123456.789, "123456.789"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-9, "1.5e-9"),
        (1e-10, "1e-10"),
        (123e-300, "1.23e-298"),
        (5e-324, "5e-324"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (999999999999999999999.0, "1e+21"),
        (1.2345e22, "1.2345e+22"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_go_json_formats_floats_as_go_float64(number: float, text: str) -> None:
    assert go_json(number) == text


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0, "0"),
        (-7, "-7"),
        (9223372036854775807, "9223372036854775807"),
        (-9223372036854775808, "-9223372036854775808"),
        # Beyond int64 Kubernetes decodes a float64.
        (9223372036854775808, "9223372036854776000"),
        (12345678901234567890, "12345678901234567000"),
        (2**70, "1.1805916207174113e+21"),
        (-(2**70), "-1.1805916207174113e+21"),
    ],
)
def test_go_json_formats_integers_as_int64_then_float64(number: int, text: str) -> None:
    assert go_json(number) == text


def test_go_json_integral_float_from_json_text_has_no_decimal_point() -> None:
    assert go_json(json.loads('{"replicas": 3.0, "ratio": 0.5}')) == '{"ratio":0.5,"replicas":3}'


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_go_json_rejects_numbers_json_cannot_carry(number: float) -> None:
    with pytest.raises(ValueError):
        go_json({"x": number})


def test_go_json_rejects_integers_beyond_float64() -> None:
    with pytest.raises(ValueError):
        go_json(10**400)


# --- go_json: strings ----------------------------------------------------------------------------


def test_go_json_escapes_html_characters() -> None:
    assert go_json('<a href="x">&amp;</a>') == '"\\u003ca href=\\"x\\"\\u003e\\u0026amp;\\u003c/a\\u003e"'


def test_go_json_escapes_line_and_paragraph_separators() -> None:
    assert go_json("\u2028\u2029") == '"\\u2028\\u2029"'


def test_go_json_short_escapes() -> None:
    assert go_json('\n\r\t"\\/') == '"\\n\\r\\t\\"\\\\/"'


def test_go_json_backspace_and_form_feed_as_go_1_22_writes_them() -> None:
    assert go_json("\b\f") == '"\\b\\f"'


def test_go_json_other_control_characters_as_lowercase_unicode_escapes() -> None:
    assert go_json("\x00\x01\x1f\x0b\x1b") == '"\\u0000\\u0001\\u001f\\u000b\\u001b"'


def test_go_json_writes_delete_character_raw() -> None:
    assert go_json("\x7f") == '"\x7f"'


def test_go_json_writes_non_ascii_raw() -> None:
    assert go_json("é€😀") == '"é€😀"'


def test_go_json_replaces_lone_surrogates_with_replacement_character() -> None:
    assert go_json("\ud800x") == '"\ufffdx"'
    assert go_json("\udc00") == '"\ufffd"'
    assert go_json("\ud800\ud800\udc00") == '"\ufffd\U00010000"'


def test_go_json_joins_surrogate_pairs() -> None:
    assert go_json("\ud83d\ude00") == '"😀"'


def test_go_json_keys_equal_once_decoded_keep_the_later_value() -> None:
    assert go_json(dict([("\ud800", 1), ("\udc00", 2)])) == '{"\ufffd":2}'


def test_go_text_leaves_valid_text_alone() -> None:
    text = "plain é 😀"
    assert go_text(text) is text


# --- go_json: properties ---------------------------------------------------------------------------

_text = st.text(max_size=10)
_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
_json_values = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4), max_leaves=25
)


def _same(read: Any, value: Any) -> bool:
    """Equal as JSON values; a float may read back as an int of the same float64 value (Go writes
    integral float64s without a decimal point)."""
    if isinstance(value, float):
        return isinstance(read, int | float) and not isinstance(read, bool) and float(read) == value
    if isinstance(value, dict):
        return isinstance(read, dict) and read.keys() == value.keys() and all(_same(read[k], v) for k, v in value.items())
    if isinstance(value, list):
        return isinstance(read, list) and len(read) == len(value) and all(map(_same, read, value))
    return type(read) is type(value) and read == value


@given(_json_values)
def test_go_json_reads_back_as_the_same_value(value: Any) -> None:
    assert _same(json.loads(go_json(value)), value)


@given(_json_values)
def test_go_json_never_writes_html_or_control_characters_raw(value: Any) -> None:
    text = go_json(value)
    assert not any(char in text for char in "<>&\u2028\u2029")
    assert not any(ord(char) < 0x20 for char in text)


@given(st.dictionaries(_text, _leaf, max_size=6))
def test_go_json_does_not_depend_on_insertion_order(value: dict[str, Any]) -> None:
    assert go_json(dict(reversed(list(value.items())))) == go_json(value)


# --- config keys and the config-spec-hash annotation ---------------------------------------------


def test_config_key_with_group() -> None:
    assert config_key(ADDON_GROUP, ADC, "ns", "cfg") == f"{ADC}.{ADDON_GROUP}/ns/cfg"


def test_config_key_without_group_has_no_dot() -> None:
    assert config_key("", "configmaps", "ns", "cfg") == "configmaps/ns/cfg"


def test_config_key_of_cluster_scoped_config_has_empty_namespace() -> None:
    assert config_key(ADDON_GROUP, "addonhubconfigs", "", "default") == (
        "addonhubconfigs.addon.open-cluster-management.io//default"
    )


def ref(group: str, resource: str, namespace: str, name: str, spec_hash_: str | None) -> dict[str, Any]:
    desired: dict[str, Any] | None = None
    if spec_hash_ is not None:
        desired = {"name": name, "specHash": spec_hash_}
        if namespace:
            desired["namespace"] = namespace
    return {"group": group, "resource": resource, "name": name, "lastObservedGeneration": 0, "desiredConfig": desired}


def mca_with(refs: Any) -> dict[str, Any]:
    return {"metadata": {"name": "addon", "namespace": "c1"}, "status": {"configReferences": refs}}


def test_annotation_is_absent_without_config_references() -> None:
    assert config_spec_hash_annotation(mca_with([])) is None
    assert config_spec_hash_annotation({"metadata": {"name": "addon"}}) is None
    assert config_spec_hash_annotation({"status": None}) is None


def test_annotation_is_absent_when_config_references_is_not_a_list() -> None:
    assert config_spec_hash_annotation(mca_with("oops")) is None


def test_annotation_is_a_sorted_compact_json_map_of_desired_hashes() -> None:
    mca = mca_with(
        [
            ref(ADDON_GROUP, "addonhubconfigs", "", "default", "613d"),
            ref(ADDON_GROUP, ADC, "open-cluster-management", "default", "cca7"),
        ]
    )
    assert config_spec_hash_annotation(mca) == (
        '{"addondeploymentconfigs.addon.open-cluster-management.io/open-cluster-management/default":"cca7",'
        '"addonhubconfigs.addon.open-cluster-management.io//default":"613d"}'
    )


def test_annotation_keeps_empty_hashes() -> None:
    mca = mca_with([ref(ADDON_GROUP, ADC, "ns", "missing", "")])
    assert config_spec_hash_annotation(mca) == f'{{"{ADC}.{ADDON_GROUP}/ns/missing":""}}'


def test_annotation_skips_items_without_desired_config() -> None:
    mca = mca_with([ref(ADDON_GROUP, ADC, "ns", "a", None), ref("", "configmaps", "ns", "b", "h")])
    assert config_spec_hash_annotation(mca) == '{"configmaps/ns/b":"h"}'


def test_annotation_is_an_empty_object_when_no_item_has_a_desired_config() -> None:
    assert config_spec_hash_annotation(mca_with([ref(ADDON_GROUP, ADC, "ns", "a", None)])) == "{}"


def test_annotation_later_item_of_same_key_wins() -> None:
    mca = mca_with([ref("", "configmaps", "ns", "a", "first"), ref("", "configmaps", "ns", "a", "second")])
    assert config_spec_hash_map(mca) == {"configmaps/ns/a": "second"}


def test_hash_map_reads_oddly_typed_items_defensively() -> None:
    mca = mca_with(["text", None, {"group": 5, "resource": "r", "desiredConfig": {"name": "n", "specHash": 7}}])
    assert config_spec_hash_map(mca) == {"r//n": ""}


def test_annotation_uses_desired_config_not_top_level_referent() -> None:
    item = ref(ADDON_GROUP, ADC, "ns", "desired", "h")
    item["name"] = "stale"
    item["namespace"] = "elsewhere"
    assert config_spec_hash_map(mca_with([item])) == {f"{ADC}.{ADDON_GROUP}/ns/desired": "h"}
