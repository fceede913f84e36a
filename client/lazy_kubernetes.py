"""The ``kubernetes`` package with its subpackages imported when first used.

``import kubernetes.client`` runs ``kubernetes/__init__.py`` first, and that imports every
subpackage: ``config``, ``dynamic`` (with ``jsonschema``), ``stream`` (with ``websocket-client``),
``watch``, ``informer``, ``leaderelection`` and ``utils``. A controller uses ``client`` and,
to read its kubeconfig, part of ``config``; the rest cost a settled placement controller about
3 MB of its resident memory (``bench/placement_compare.py``), and kopf imports
``kubernetes.client`` whenever the package is installed.

``install()`` registers ``kubernetes`` as a package whose subpackages are imported on first
use: ``import kubernetes.watch`` and ``kubernetes.watch.Watch`` after ``import kubernetes`` both
still work. The client's own ``kubernetes.client`` already loads its models on first use; this
does the same one level up. It changes nothing once ``kubernetes`` is imported, so the command
line calls it before it imports anything else of ours.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import types
from typing import Any

PACKAGE = "kubernetes"


def _lazy_package(spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
    package = importlib.util.module_from_spec(spec)

    def subpackage(name: str) -> Any:
        if name == "__version__":
            return importlib.metadata.version(PACKAGE)
        if name.startswith("__"):
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")
        try:
            return importlib.import_module(f"{PACKAGE}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{PACKAGE}.{name}":
                raise
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}") from None

    package.__getattr__ = subpackage  # type: ignore[method-assign]
    return package


def install() -> bool:
    """Register the lazy ``kubernetes`` package; False when it is imported already (or absent)."""
    if PACKAGE in sys.modules:
        return False
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return False
    sys.modules[PACKAGE] = _lazy_package(spec)
    return True
