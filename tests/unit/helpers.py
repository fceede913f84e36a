"""Helpers shared by unit test modules of different areas (no tests here)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "ocm-rollout"


def schema_nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of an OpenAPI v3 schema with its path: ``.field`` for properties, ``[]`` for
    array items, ``{}`` for map values."""
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from schema_nodes(child, f"{path}.{key}")
    if "items" in node:
        yield from schema_nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from schema_nodes(node["additionalProperties"], f"{path}{{}}")


def template_objects(manifests: Mapping[str, str]) -> list[dict[str, Any]]:
    """The objects of a Helm render's YAML templates (NOTES.txt and empty documents left out)."""
    return [doc for name, text in manifests.items() if name.endswith(".yaml") for doc in yaml.safe_load_all(text) if doc]


class FakeClock:
    """A clock the test moves by hand: call it for ``now`` (seconds)."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
