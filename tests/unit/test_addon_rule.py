"""The addon core follows the project's rule for pure cores: it computes on the stored JSON read
through controllers/common/wire.py, keeps no private copy of those readers and imports no
pydantic model from api/ (the shell validates with the models)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from pydantic import BaseModel

import ocm_rollout.controllers.addon
from ocm_rollout.api.addon_v1alpha1 import ClusterManagementAddOn, ManagedClusterAddOn
from ocm_rollout.controllers.addon import install

ADDON_DIR = Path(ocm_rollout.controllers.addon.__file__).parent
CORE = sorted(p.stem for p in ADDON_DIR.glob("*.py") if p.stem not in ("__init__", "operator"))
PRIVATE_READERS = {"_map", "_mapping", "_list", "_text", "_str", "_status_of", "_annotations"}


@pytest.mark.parametrize("name", CORE)
def test_core_module_imports_no_pydantic_model(name: str) -> None:
    tree = ast.parse((ADDON_DIR / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ocm_rollout.api"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name)
                assert not (isinstance(value, type) and issubclass(value, BaseModel)), (
                    f"controllers/addon/{name}.py imports the model {node.module}.{alias.name}"
                )


@pytest.mark.parametrize("name", CORE)
def test_core_module_defines_no_private_json_reader(name: str) -> None:
    tree = ast.parse((ADDON_DIR / f"{name}.py").read_text())
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not defined & PRIVATE_READERS, "use the readers of controllers/common/wire.py"


def test_install_kind_names_are_the_models_kinds() -> None:
    assert install.CMA_KIND == ClusterManagementAddOn.KIND.kind
    assert install.MCA_KIND == ManagedClusterAddOn.KIND.kind
