"""Revision history and template differences on the dashboard: secrets never shown."""

from __future__ import annotations

import pytest

from ocm_rollout.cli.dashboard.history_view import REDACTED, DiffError, diff, redacted


def revision(number: int, manifests: list[dict]) -> dict:
    return {
        "metadata": {"name": f"web-{number}", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "revision": number,
        "data": {"spec": {"manifestWorkTemplate": {"workload": {"manifests": manifests}}}},
    }


def config(image: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"image": image}}


def secret(value: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"password": value},
            "stringData": {"token": value}}


def test_the_diff_shows_what_changed_between_two_revisions() -> None:
    found = diff([revision(1, [config("web:1.0")]), revision(2, [config("web:2.0")])], 1, 2)
    assert "-      image: web:1.0" in found["lines"] and "+      image: web:2.0" in found["lines"]
    assert found["lines"][0] == "--- revision 1" and not found["same"]


def test_a_secrets_values_are_never_shown() -> None:
    found = diff([revision(1, [secret("hunter2")]), revision(2, [secret("s3cret"), config("x")])], 1, 2)
    text = "\n".join(found["lines"])
    assert "hunter2" not in text and "s3cret" not in text
    kept = redacted({"workload": {"manifests": [secret("x")]}})
    assert kept["workload"]["manifests"][0]["data"] == {"password": REDACTED}


def test_the_same_template_is_said_to_be_the_same() -> None:
    assert diff([revision(1, [config("a")]), revision(2, [config("a")])], 1, 2)["same"]


def test_an_unknown_revision_names_the_known_ones() -> None:
    with pytest.raises(DiffError, match=r"revision 7 not found \(revisions: 1, 2\)"):
        diff([revision(1, [config("a")]), revision(2, [config("b")])], 1, 7)
