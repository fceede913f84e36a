"""Which controllers exist and how their kopf handlers are wired.

Every controller is a module exposing
``setup(registry: kopf.OperatorRegistry, context: ControllerContext) -> None``, which registers
its handlers on the given registry: informers (``ocm_rollout.controllers.runtime.informer``) that feed an
in-process ``WorkQueue`` (``ocm_rollout.client.queue``), plus ``kopf.on.startup`` /
``kopf.on.cleanup`` handlers that start and stop its workers (``run_workers``). Workers read the
informers' caches (complete before any kopf event handler runs) and write through
``context.kube``. Both
``ocm-rollout run`` (a real cluster) and ``ocm-rollout up`` (the local hub) build the operator
from the same registry, so a controller runs the same way everywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, cast

import kopf

from ocm_rollout.client.kube import Kube

# Name on the command line -> module path. The order is the start order.
CONTROLLER_MODULES: dict[str, str] = {
    "placement": "ocm_rollout.controllers.placement.operator",
    "workset": "ocm_rollout.controllers.workset.operator",
    "addon": "ocm_rollout.controllers.addon.operator",
}


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ControllerContext:
    """What every controller gets from whoever runs it (``run`` or ``up``)."""

    kube: Kube
    # The clock the controllers pass to the pure cores; tests may replace it.
    clock: Callable[[], datetime] = utc_now
    # Namespaces to watch; None means all.
    namespaces: list[str] | None = None
    workers: int = 2
    # Metrics hooks (no-ops unless the runner wires them to Prometheus).
    on_reconcile: Callable[[str, float, BaseException | None], None] | None = None
    on_queue_depth: Callable[[str, int], None] | None = None
    # Free-form extras a controller may publish for others in the same process
    # (for example the placement debug endpoint's data).
    extras: dict[str, object] = field(default_factory=dict)


class ControllerModule(Protocol):
    def setup(self, registry: kopf.OperatorRegistry, context: ControllerContext) -> None: ...


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


def build_registry(names: Iterable[str], context: ControllerContext) -> kopf.OperatorRegistry:
    """A fresh kopf registry with the handlers of the named controllers."""
    registry = kopf.OperatorRegistry()
    for name in names:
        module = _load(name)
        if module is None:
            raise UnknownControllerError(f"controller not available in this build: {name}")
        module.setup(registry, context)
    return registry
