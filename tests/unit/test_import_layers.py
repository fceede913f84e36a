"""One direction of dependency, checked on every import statement of the code (docs/architecture.md):

    api  <-  client  <-  controllers   (placement, workset, addon; shared: rollout, common, runtime)
                     <-  sandbox       (the local hub and the simulated fleet)
                     <-  cli           (the command and the live view: the only layer that knows both)

- ``api`` imports nothing of ours; ``client`` only ``api``;
- ``controllers`` and ``sandbox`` import ``api``, ``client`` and themselves, never each other;
- a controller (placement, workset, addon) never imports another controller's package, and the
  shared packages (rollout, common, runtime) import no controller;
- the pure rollout planner and the wire helpers import neither kopf nor kubernetes nor aiohttp;
- only the controller runtime (``controllers/runtime``) and ``client`` import kopf: a controller
  declares what it watches and the runtime runs it;
- every import of ours is spelled ``ocm_rollout.<layer>...``: the old top-level names (``api``,
  ``controllers``, ...) do not exist once the package is installed.

Imports inside functions and ``if TYPE_CHECKING`` blocks count as much as the others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "ocm_rollout"
LAYERS = ("api", "client", "controllers", "sandbox", "cli")
ALLOWED: dict[str, frozenset[str]] = {
    "api": frozenset({"api"}),
    "client": frozenset({"api", "client"}),
    "controllers": frozenset({"api", "client", "controllers"}),
    "sandbox": frozenset({"api", "client", "sandbox"}),
    "cli": frozenset(LAYERS),
}
CONTROLLERS = frozenset({"placement", "workset", "addon"})
SHARED = frozenset({"rollout", "common", "runtime"})
PURE = {"controllers.rollout", "controllers.common"}
IO_LIBRARIES = frozenset({"kopf", "kubernetes", "aiohttp"})
# Where kopf may be imported (the source's first two parts, or its first).
KOPF_ALLOWED = frozenset({"controllers.runtime", "client"})
# The old top-level names, and their sub-modules, must not be imported any more.
OLD_TOP_LEVEL = frozenset(LAYERS)


@dataclass(frozen=True)
class Edge:
    """``source`` (a module, dotted from the repository root) imports ``target`` (as written)."""

    source: str
    target: str
    line: int

    def where(self) -> str:
        return f"{self.source.replace('.', '/')}.py:{self.line} imports {self.target}"


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts)


def imports_of(source: str, text: str) -> Iterator[Edge]:
    """Every absolute import in ``text`` (relative ones are resolved against ``source``)."""
    tree = ast.parse(text)
    package = source.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(source, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([PACKAGE, *base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield Edge(source, module, node.lineno)
            for alias in node.names:
                yield Edge(source, f"{module}.{alias.name}", node.lineno)


def violations(edges: Iterable[Edge]) -> list[str]:
    """What is wrong with ``edges`` (empty when the layering holds)."""
    wrong: list[str] = []
    for edge in edges:
        target = edge.target.split(".")
        source = edge.source.split(".")
        if target[0] in OLD_TOP_LEVEL:
            wrong.append(f"{edge.where()}: spell it {PACKAGE}.{edge.target}")
            continue
        if ".".join(source[:2]) in PURE and target[0] in IO_LIBRARIES:
            wrong.append(f"{edge.where()}: a pure module does no I/O")
            continue
        if target[0] == "kopf" and ".".join(source[:2]) not in KOPF_ALLOWED and source[0] not in KOPF_ALLOWED:
            wrong.append(f"{edge.where()}: only controllers/runtime and client import kopf")
            continue
        if target[0] != PACKAGE or len(target) < 2:
            continue
        layer, into = source[0], target[1]
        if into not in ALLOWED.get(layer, frozenset(LAYERS)):
            wrong.append(f"{edge.where()}: {layer} may import only {', '.join(sorted(ALLOWED[layer]))}")
            continue
        if layer == "controllers" and into == "controllers" and len(source) > 1 and len(target) > 2:
            mine, theirs = source[1], target[2]
            if theirs in CONTROLLERS and theirs != mine:
                kind = "a shared package" if mine in SHARED else f"the {mine} controller"
                wrong.append(f"{edge.where()}: {kind} must not import the {theirs} controller")
    return wrong


def _code_edges() -> list[Edge]:
    edges: list[Edge] = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            edges.extend(imports_of(_module_of(path), path.read_text(encoding="utf-8")))
    return edges


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert violations(_code_edges()) == []


def test_tests_and_benchmarks_import_through_the_package_name() -> None:
    edges: list[Edge] = []
    for top in ("tests", "bench"):
        for path in sorted((REPO / top).rglob("*.py")):
            edges.extend(imports_of(_module_of(path), path.read_text(encoding="utf-8")))
    old = [e.where() for e in edges if e.target.split(".")[0] in OLD_TOP_LEVEL]
    assert old == []


def test_the_layers_exist_and_the_code_uses_them() -> None:
    edges = _code_edges()
    assert {e.source.split(".")[0] for e in edges} == set(LAYERS)
    assert any(e.source.startswith("cli.") and e.target.startswith("ocm_rollout.sandbox") for e in edges)
    assert any(e.source.startswith("sandbox.") and e.target.startswith("ocm_rollout.client") for e in edges)


@pytest.mark.parametrize(
    ("source", "text", "complaint"),
    [
        ("sandbox.simulation", "from ocm_rollout.controllers.workset import plan", "sandbox may import only"),
        ("controllers.workset.plan", "from ocm_rollout.sandbox.server import LocalHub", "controllers may import only"),
        ("controllers.workset.plan", "import ocm_rollout.cli.main", "controllers may import only"),
        ("client.kube", "from ocm_rollout.controllers.runtime import metrics", "client may import only"),
        ("api.meta", "from ocm_rollout.client.kube import Kube", "api may import only"),
        ("controllers.addon.configs", "from ocm_rollout.controllers.workset.report import Report", "the workset controller"),
        ("controllers.runtime.registry", "from ocm_rollout.controllers.placement import operator", "a shared package"),
        ("controllers.rollout.planner", "import kubernetes", "pure module"),
        ("controllers.common.wire", "from kopf import on", "pure module"),
        ("cli.commands.up", "from controllers.runtime import kube", "spell it ocm_rollout.controllers"),
        ("sandbox.engine", "def f():\n    from ocm_rollout.controllers import placement\n", "sandbox may import only"),
        ("controllers.placement.scheduler", "from ..workset import plan", "the workset controller"),
        ("controllers.addon.operator", "import kopf", "only controllers/runtime and client import kopf"),
        ("sandbox.simulation", "from kopf import on", "only controllers/runtime and client import kopf"),
        ("cli.commands.run", "import kopf", "only controllers/runtime and client import kopf"),
    ],
)
def test_a_forbidden_edge_is_reported(source: str, text: str, complaint: str) -> None:
    found = violations(imports_of(source, text))
    assert found and complaint in found[0]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("cli.commands.up", "from ocm_rollout.sandbox.server import LocalHub\nfrom ocm_rollout.controllers.workset import plan"),
        ("controllers.workset.plan", "from ocm_rollout.controllers.rollout import planner\nfrom ocm_rollout.client.kube import Kube"),
        ("sandbox.simulation", "from ocm_rollout.client.queue import WorkQueue\nfrom ocm_rollout.api import constants"),
        ("controllers.addon.operator", "from ocm_rollout.controllers.runtime.shell import Runtime"),
        ("controllers.runtime.shell", "import kopf"),
    ],
)
def test_an_allowed_edge_is_not_reported(source: str, text: str) -> None:
    assert violations(imports_of(source, text)) == []


def test_every_module_opens_with_a_docstring() -> None:
    """Each module says what flows through it, first thing (docs/architecture.md leans on them)."""
    silent = [
        str(path.relative_to(REPO))
        for layer in LAYERS
        for path in sorted((REPO / layer).rglob("*.py"))
        if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert silent == []
