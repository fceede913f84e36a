"""Which controllers exist, and the typed handles of the running ones.

A controller is a class, named in ``CONTROLLERS`` as ``"module.path:ClassName"``, whose
constructor takes a ``shell.Runtime`` and declares everything through it (``shell.py``); it may
define ``routes()`` for its debug endpoints. ``start`` builds the runtimes of the named
controllers and returns ``Handles``: the controller objects by name and by class, which is how
``run`` serves their routes and how tests reach a running controller (``handles.get(Class)``).
Both ``ocm-rollout run`` (a real cluster) and ``ocm-rollout up`` (the local hub) start the same
controllers from this table, so a controller runs the same way everywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar, cast

from aiohttp import web

from ocm_rollout.controllers.runtime.shell import ControllerContext, Runtime

# Name on the command line -> "module:Class". The order is the start order.
CONTROLLERS: dict[str, str] = {
    "placement": "ocm_rollout.controllers.placement.operator:PlacementController",
    "workset": "ocm_rollout.controllers.workset.operator:WorksetController",
    "addon": "ocm_rollout.controllers.addon.operator:AddonController",
}

C = TypeVar("C")


class Controller(Protocol):
    def __init__(self, runtime: Runtime) -> None: ...


class UnknownControllerError(ValueError):
    """A controller name that is not in CONTROLLERS."""


def _load(name: str) -> type[Controller] | None:
    module_path, _, class_name = CONTROLLERS[name].partition(":")
    try:
        module = importlib.import_module(module_path)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_path.startswith(exc.name):
            return None
        raise
    return cast(type[Controller], getattr(module, class_name))


def available_controllers() -> list[str]:
    """Names of the controllers present in this build, in start order."""
    return [name for name in CONTROLLERS if _load(name) is not None]


def parse_controller_names(spec: str | None) -> list[str]:
    """Parse ``--controllers a,b``; ``None``, ``""`` and ``"all"`` mean every available one."""
    if spec is None or spec.strip() in ("", "all"):
        return available_controllers()
    names = [part.strip() for part in spec.split(",") if part.strip()]
    unknown = [n for n in names if n not in CONTROLLERS]
    if unknown:
        raise UnknownControllerError(f"unknown controller(s) {', '.join(unknown)}; known: {', '.join(CONTROLLERS)}")
    missing = [n for n in names if _load(n) is None]
    if missing:
        raise UnknownControllerError(f"controller(s) not available in this build: {', '.join(missing)}")
    return names


class Handles:
    """The running controllers of one operator, by name and by class."""

    def __init__(self) -> None:
        self.controllers: dict[str, Any] = {}
        self.runtimes: dict[str, Runtime] = {}

    def get(self, kind: type[C]) -> C:
        """The running controller of class ``kind`` (KeyError when none runs)."""
        for controller in self.controllers.values():
            if isinstance(controller, kind):
                return controller
        raise KeyError(kind.__name__)

    def by_name(self, name: str) -> Any:
        return self.controllers.get(name)

    def runtime(self, name: str) -> Runtime:
        return self.runtimes[name]

    def routes(self) -> list[web.RouteDef]:
        found: list[web.RouteDef] = []
        for runtime in self.runtimes.values():
            found.extend(runtime.http_routes)
        return found

    def clear(self) -> None:
        self.controllers.clear()
        self.runtimes.clear()


def build(names: Iterable[str], context: ControllerContext, handles: Handles) -> list[Runtime]:
    """Construct the named controllers (each declares into its own runtime)."""
    runtimes = []
    for name in names:
        cls = _load(name)
        if cls is None:
            raise UnknownControllerError(f"controller not available in this build: {name}")
        runtime = Runtime(name, context)
        handles.controllers[name] = cls(runtime)
        handles.runtimes[name] = runtime
        runtimes.append(runtime)
    return runtimes
