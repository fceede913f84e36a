"""OCM's ManifestWork webhook as the local hub plays it (ocm_rollout.sandbox.work_webhook): how the size of
the manifests is counted and the answer over the limit."""

from __future__ import annotations

from typing import Any

import pytest

from ocm_rollout.sandbox.errors import ApiError
from ocm_rollout.sandbox.work_webhook import (
    MANIFEST_LIMIT,
    check,
    go_json,
    manifests_size,
    raw_extension_size,
    varint_size,
)


def test_varint_sizes_follow_protobuf() -> None:
    assert [varint_size(n) for n in (0, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152)] == [1, 1, 2, 2, 3, 3, 4]


def test_a_raw_extension_counts_its_tag_its_length_and_its_bytes() -> None:
    assert raw_extension_size(19) == 21
    assert raw_extension_size(200) == 203
    assert raw_extension_size(512_000) == 512_004


def test_manifests_are_measured_as_go_writes_them_compact_and_with_sorted_keys() -> None:
    manifest = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a", "namespace": "b"}}
    assert go_json(manifest) == b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b"}}'
    assert manifests_size([manifest]) == len(go_json(manifest)) + 2
    assert manifests_size([manifest, manifest]) == 2 * (len(go_json(manifest)) + 2)


def test_go_escapes_html_characters_and_line_separators_and_keeps_other_text_as_utf8() -> None:
    assert go_json({"s": "a<b>&c\u2028\u2029"}) == b'{"s":"a\\u003cb\\u003e\\u0026c\\u2028\\u2029"}'
    assert go_json({"s": "é\n\t\"\\"}) == '{"s":"é\\n\\t\\"\\\\"}'.encode()


@pytest.mark.parametrize(
    ("number", "written"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (1e16, "10000000000000000"),
        (1.5e-7, "1.5e-7"),
        (1e21, "1e+21"),
        (12, "12"),
        (2**64, "18446744073709552000"),
        (True, "true"),
        (None, "null"),
    ],
)
def test_numbers_are_written_as_go_writes_int64_and_float64(number: Any, written: str) -> None:
    assert go_json([number]) == f"[{written}]".encode()


def work(manifests: list[Any]) -> dict[str, Any]:
    return {"spec": {"workload": {"manifests": manifests}}}


def config_map(data_bytes: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "a" * data_bytes}}


def test_manifests_at_the_limit_pass_and_one_byte_more_is_denied_with_ocms_message() -> None:
    base = len(go_json(config_map(0)))
    # A manifest this size counts its bytes, a tag byte and a 3-byte length varint.
    at_limit = config_map(MANIFEST_LIMIT - 4 - base)
    assert manifests_size([at_limit]) == MANIFEST_LIMIT
    check(work([at_limit]))
    over = config_map(MANIFEST_LIMIT - 3 - base)
    with pytest.raises(ApiError) as denied:
        check(work([over]))
    assert denied.value.code == 400 and denied.value.reason == "BadRequest"
    assert denied.value.message == (
        'admission webhook "manifestworkvalidators.admission.work.open-cluster-management.io" denied the request: '
        f"the size of manifests is {MANIFEST_LIMIT + 1} bytes which exceeds the 512000 limit"
    )


def test_the_limit_is_on_the_total_of_all_manifests() -> None:
    half = config_map(MANIFEST_LIMIT // 2)
    check(work([half]))
    with pytest.raises(ApiError):
        check(work([half, {**half, "metadata": {"name": "d"}}]))


def test_a_work_without_manifests_is_left_to_other_checks() -> None:
    check({"spec": {}})
    check(work([]))
