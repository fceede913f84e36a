"""Validation ratcheting at the level of top-level sections (ocm_rollout.sandbox.schema.CompiledSchema): an
update validates what it changed; a section it leaves as stored is not judged again, as
kube-apiserver (1.30+) lets a status write through for an object whose unchanged spec a newer
CRD would refuse. It also keeps status writes of large objects cheap."""

from __future__ import annotations

from typing import Any

from ocm_rollout.sandbox.schema import CompiledSchema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}},
        "status": {"type": "object", "properties": {"ready": {"type": "integer", "minimum": 0}}},
    },
}


def test_an_update_that_keeps_an_invalid_spec_may_still_write_its_status() -> None:
    schema = CompiledSchema(SCHEMA)
    old = {"metadata": {"name": "a"}, "spec": {"replicas": 0}, "status": {"ready": 0}}
    new = {"metadata": {"name": "a"}, "spec": {"replicas": 0}, "status": {"ready": 3}}
    assert schema.validate(new, old) == []
    assert [c["field"] for c in schema.validate(new)] == ["spec.replicas"]


def test_a_changed_section_is_validated_with_its_full_path() -> None:
    schema = CompiledSchema(SCHEMA)
    old = {"metadata": {"name": "a"}, "spec": {"replicas": 2}, "status": {"ready": 0}}
    new = {"metadata": {"name": "a"}, "spec": {"replicas": 2}, "status": {"ready": -1}}
    causes = schema.validate(new, old)
    assert [c["field"] for c in causes] == ["status.ready"]
    assert causes[0]["reason"] == "FieldValueInvalid"
    added = {"metadata": {"name": "a"}, "spec": {"replicas": -5}}
    assert [c["field"] for c in schema.validate(added, {"metadata": {"name": "a"}})] == ["spec.replicas"]
