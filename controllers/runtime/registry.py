"""Which controllers exist and how their kopf handlers are wired.

Every controller is a module exposing ``setup(registry: kopf.OperatorRegistry) -> None``, which
registers its handlers (and any in-process queues or timers) on the given registry. Both
``ocm-rollout run`` (a real cluster) and ``ocm-rollout up`` (the local hub) build the operator
from the same registry, so a controller runs the same way everywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Protocol, cast

import kopf

# Name on the command line -> module path. The order is the start order.
CONTROLLER_MODULES: dict[str, str] = {
    "placement": "controllers.placement.operator",
    "workset": "controllers.workset.operator",
    "addon": "controllers.addon.operator",
}


class ControllerModule(Protocol):
    def setup(self, registry: kopf.OperatorRegistry) -> None: ...


class UnknownControllerError(ValueError):
    """A controller name that is not in CONTROLLER_MODULES."""


def _load(name: str) -> ControllerModule | None:
    path = CONTROLLER_MODULES[name]
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name is not None and path.startswith(exc.name):
            return None
        raise
    return cast(ControllerModule, module)


def available_controllers() -> list[str]:
    """Names of the controllers present in this build, in start order."""
    return [name for name in CONTROLLER_MODULES if _load(name) is not None]


def parse_controller_names(spec: str | None) -> list[str]:
    """Parse ``--controllers a,b``; ``None``, ``""`` and ``"all"`` mean every available one."""
    if spec is None or spec.strip() in ("", "all"):
        return available_controllers()
    names = [part.strip() for part in spec.split(",") if part.strip()]
    unknown = [n for n in names if n not in CONTROLLER_MODULES]
    if unknown:
        raise UnknownControllerError(
            f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(CONTROLLER_MODULES)}"
        )
    missing = [n for n in names if _load(n) is None]
    if missing:
        raise UnknownControllerError(f"controller(s) not available in this build: {', '.join(missing)}")
    return names


def build_registry(names: Iterable[str]) -> kopf.OperatorRegistry:
    """A fresh kopf registry with the handlers of the named controllers."""
    registry = kopf.OperatorRegistry()
    for name in names:
        module = _load(name)
        if module is None:
            raise UnknownControllerError(f"controller not available in this build: {name}")
        module.setup(registry)
    return registry
