"""The compiled yes/no schema check the local hub asks before jsonschema
(ocm_rollout.sandbox.schema_check): it must say "valid" exactly when jsonschema's Draft 4
validator finds no error, keyword by keyword and on random objects of every CRD we ship."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ocm_rollout.sandbox.schema import _FORMAT_CHECKER, CompiledSchema, _to_jsonschema
from ocm_rollout.sandbox.schema_check import compile_check

REPO = Path(__file__).resolve().parents[2]


def agrees(schema: dict[str, Any], instance: Any) -> tuple[bool, bool]:
    check = compile_check(schema, _FORMAT_CHECKER.conforms)
    assert check is not None, schema
    valid = not list(jsonschema.Draft4Validator(schema, format_checker=_FORMAT_CHECKER).iter_errors(instance))
    return check(instance), valid


EDGES: list[tuple[dict[str, Any], Any]] = [
    ({"type": "integer"}, 1),
    ({"type": "integer"}, True),
    ({"type": "integer"}, 1.0),
    ({"type": "number"}, 1.5),
    ({"type": "number"}, False),
    ({"type": "boolean"}, 0),
    ({"type": ["integer", "string"]}, "10%"),
    ({"type": ["integer", "string"]}, 1.5),
    ({"type": ["string", "null"]}, None),
    ({"type": "object"}, []),
    ({"type": "array"}, {}),
    ({"enum": ["a", "b"]}, "a"),
    ({"enum": ["a", "b"]}, "c"),
    ({"enum": ["a", None]}, None),
    ({"enum": ["a"]}, None),
    ({"enum": ["a"]}, 0),
    ({"minimum": 0}, -1),
    ({"minimum": 0}, 0),
    ({"minimum": 0, "exclusiveMinimum": True}, 0),
    ({"maximum": 5, "exclusiveMaximum": True}, 5),
    ({"maximum": 5}, 5.0),
    ({"minimum": 0}, "-1"),
    ({"minimum": 1}, True),
    ({"exclusiveMinimum": True}, -100),
    ({"minLength": 2}, "a"),
    ({"minLength": 2}, 1),
    ({"maxLength": 2}, "abc"),
    ({"maxLength": 1}, "é"),
    ({"pattern": "^[a-z]+$"}, "abc"),
    ({"pattern": "^[a-z]+$"}, "aBc"),
    ({"pattern": "b"}, "abc"),
    ({"pattern": "^[a-z]+$"}, 7),
    ({"format": "date-time"}, "2026-01-01T00:00:00Z"),
    ({"format": "date-time"}, "yesterday"),
    ({"format": "date-time"}, 5),
    ({"format": "byte"}, "aGVsbG8="),
    ({"format": "byte"}, "not base64!"),
    ({"format": "int32"}, "anything"),
    ({"minItems": 1}, []),
    ({"maxItems": 1}, [1, 2]),
    ({"maxItems": 1}, "ab"),
    ({"items": {"type": "string"}}, ["a", 1]),
    ({"items": {"type": "string"}}, ["a", "b"]),
    ({"required": ["a"]}, {}),
    ({"required": ["a"]}, "not an object"),
    ({"properties": {"a": {"type": "string"}}}, {"a": 1}),
    ({"properties": {"a": {"type": "string"}}}, {"b": 1}),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}),
    ({"additionalProperties": {"type": "string"}}, {"x": "y"}),
    ({"additionalProperties": {"type": "string"}}, {"x": 1}),
    ({"minProperties": 1}, {}),
    ({"maxProperties": 1}, {"a": 1, "b": 2}),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5),
    ({"oneOf": [{"minimum": 0}, {"maximum": 10}]}, 5),
    ({"oneOf": [{"minimum": 0}, {"maximum": 10}]}, 50),
    ({"allOf": [{"minimum": 0}, {"maximum": 10}]}, 50),
    ({"not": {"type": "string"}}, "a"),
    ({"not": {"type": "string"}}, 1),
    ({"description": "only words", "title": "t"}, {"anything": [1]}),
]


@pytest.mark.parametrize(("schema", "instance"), EDGES)
def test_each_keyword_judges_as_jsonschemas_draft_4_does(schema: dict[str, Any], instance: Any) -> None:
    compiled, expected = agrees(schema, instance)
    assert compiled == expected


def test_the_edges_include_both_answers() -> None:
    answers = [agrees(schema, instance)[1] for schema, instance in EDGES]
    assert answers.count(True) >= 20 and answers.count(False) >= 20


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/definitions/x"},
        {"uniqueItems": True},
        {"multipleOf": 2},
        {"enum": [1, 2]},
        {"items": [{"type": "string"}]},
        {"patternProperties": {"^a": {}}},
        {"properties": {"a": {"dependencies": {}}}},
        {"type": "any"},
        {"pattern": "("},
        {"minLength": "2"},
        {"maxItems": True},
        {"minProperties": 1.5},
    ],
)
def test_a_schema_beyond_the_subset_gets_no_check(schema: dict[str, Any]) -> None:
    assert compile_check(schema, _FORMAT_CHECKER.conforms) is None


# -- random objects of every CRD ------------------------------------------------------------------

STRINGS = [
    "", "a", "abc", "abc-def", "a.b.c", "ABC", "1", "cluster1", "2026-01-01T00:00:00Z", "True", "False",
    "Unknown", "Exists", "In", "NotIn", "10%", "30s", "1h", "v1", "apps/v1", "app.kubernetes.io/name",
    "foo_bar", "x" * 70, "y" * 300, "aGVsbG8=", "not base64!", "-leading", "trailing-", "Always",
    "Progressive", "All", "ProgressivePerGroup", "Additive", "Exact", "ServerSideApply", "Update",
]


class Generator:
    """Random instances shaped like a Draft 4 schema, valid or not: usually the declared type,
    now and then another one, required fields usually there, unknown fields sometimes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, schema: dict[str, Any], depth: int = 0) -> Any:
        rng = self.rng
        if rng.random() < 0.04:
            return rng.choice([None, True, 0, -3, 2.5, "x", [], {}])
        if "anyOf" in schema and rng.random() < 0.7:
            return self.value(rng.choice(schema["anyOf"]), depth)
        if "enum" in schema and rng.random() < 0.85:
            return rng.choice(schema["enum"])
        declared = schema.get("type")
        kind = rng.choice(declared) if isinstance(declared, list) else declared
        if kind is None:
            kind = "object" if "properties" in schema else rng.choice(["string", "integer", "object"])
        if kind == "object":
            return self.obj(schema, depth)
        if kind == "array":
            if depth > 6:
                return []
            raw = schema.get("items")
            items: dict[str, Any] = raw if isinstance(raw, dict) else {}
            return [self.value(items, depth + 1) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        if kind == "string":
            return self.string(schema)
        if kind in ("integer", "number"):
            low = schema.get("minimum", -5)
            return rng.choice([low, low - 1, low + 1, 0, 7, 100, 2**40]) if kind == "integer" else rng.choice([0.5, low, 3])
        if kind == "boolean":
            return rng.choice([True, False])
        return None

    def string(self, schema: dict[str, Any]) -> str:
        pattern = schema.get("pattern")
        if pattern is not None and self.rng.random() < 0.8:
            fitting = [s for s in STRINGS if re.search(pattern, s)]
            if fitting:
                return self.rng.choice(fitting)
        return self.rng.choice(STRINGS)

    def obj(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        rng = self.rng
        out: dict[str, Any] = {}
        if depth > 6:
            return out
        required = set(schema.get("required") or ())
        for key, sub in (schema.get("properties") or {}).items():
            if rng.random() < (0.95 if key in required else 0.5):
                out[key] = self.value(sub, depth + 1)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for i in range(rng.choice([0, 1, 2])):
                out[f"key{i}"] = self.value(additional, depth + 1)
        elif rng.random() < 0.05:
            out["unknownField"] = "x"
        return out


def crd_schemas() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((REPO / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            for version in doc["spec"]["versions"]:
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    found.append((f"{doc['spec']['names']['kind']}/{version['name']}", schema))
    return found


@pytest.mark.parametrize(("name", "schema"), crd_schemas(), ids=[n for n, _ in crd_schemas()])
def test_random_objects_of_every_crd_get_jsonschemas_answer(name: str, schema: dict[str, Any]) -> None:
    compiled = CompiledSchema(schema)
    assert compiled.whole.check is not None, f"{name}: every CRD we ship is within the compiled subset"
    draft = _to_jsonschema(schema, root=True)
    generator = Generator(random.Random(name))
    answers = {True: 0, False: 0}
    for _ in range(400):
        body = generator.obj(draft, 0)
        valid = not list(compiled.whole.validator.iter_errors(body))
        assert compiled.whole.check(body) == valid, (name, body)
        answers[valid] += 1
        for key, section in body.items():
            judge = compiled.sections.get(key)
            if judge is not None and judge.check is not None:
                assert judge.check(section) == (not list(judge.validator.iter_errors(section))), (name, key, section)
    assert answers[True] >= 10 and answers[False] >= 10, f"{name}: the objects tried must include both: {answers}"


def test_the_hub_still_answers_with_jsonschemas_detailed_errors() -> None:
    """The check only decides whether jsonschema is asked; a refusal is described as before."""
    compiled = CompiledSchema({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0}}}},
    })
    assert compiled.validate({"spec": {"replicas": 1}}) == []
    causes = compiled.validate({"spec": {"replicas": -1}})
    assert [c["field"] for c in causes] == ["spec.replicas"]
    assert "greater than or equal to 0" in causes[0]["message"]
    # an update that changes the section is judged too; one that leaves it is not judged again
    assert compiled.validate({"spec": {"replicas": -1}}, old={"spec": {"replicas": 2}})
    assert compiled.validate({"spec": {"replicas": -1}}, old={"spec": {"replicas": -1}}) == []
