"""Helpers shared by the integration tests (no tests here; the fixtures are in conftest.py).

- `wait_until(condition, timeout=..., message=...)`: poll a condition instead of sleeping;
  `wait_for` (every 50 ms, 20 s) and `holds_for` (something does NOT happen) over it.
- `condition(obj, type_)`: a status condition of an object.
- `free_port()`: a free TCP port on 127.0.0.1.
- `Api`: synchronous CRUD through a kubeconfig, as a user would do it.
- `OperatorThread`: the real operator (kopf, ``run_operator``) for some controllers, in a
  thread of this process; stopped gracefully or killed mid-flight. `ControllerThread`: one
  controller's, ended like a killed process; `SecondInstance`: another one beside it.
- `WatchMonitor`: follows every change of a resource through a watch, checking invariants.
- `ControllerEnv`: a local hub, a client, one `ControllerThread` and simulated clusters.
- `decide(api, namespace, placement, clusters)`, `decide_groups(api, namespace, placement, groups)`:
  a Placement's status and its decision pages, written by hand (as OCM's own
  ManifestWorkReplicaSet tests do) for tests without a scheduler.
- `SimThread`: the simulated managed clusters (``ocm_rollout.sandbox.simulation``) in a thread.
- `Hub`, `local_hub`, `with_users`: a local hub that records requests, with one bearer token
  per process so that its request log tells the processes apart.
- `RunProcess`, `start_run`, `start_controller`: `ocm-rollout run` as a separate process with
  JSON logs; `RunOutcome` and the `assert_*` checks: what a module's run scenario leaves.
- `ControllerProcess`: `ocm-rollout run` as a child process to SIGKILL at random moments;
  `STRESS_RUNS`: how many rounds the stress tests run.
- `metric_sample(text, metric, **labels)`: one sample of a Prometheus text exposition.
- `chart_rbac_report(records, controller)`: the hub's request records against what the Helm
  chart grants that controller; `chart_dashboard_rbac_report(records, read_only=...)`: against
  what it grants the dashboard.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import kubernetes
import pytest
import yaml

from ocm_rollout.api.constants import LABEL_DECISION_GROUP_INDEX, LABEL_PLACEMENT
from ocm_rollout.client.kube import (
    JSON,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Kube,
    NotFound,
    Resource,
    load_api_client,
)
from ocm_rollout.client.kubeconfig import load_client
from ocm_rollout.controllers.rollout.plugin.config import PluginRegistry
from ocm_rollout.controllers.runtime.operator import run_operator
from ocm_rollout.controllers.runtime.registry import Handles
from ocm_rollout.sandbox.sim_profile import parse_profile
from ocm_rollout.sandbox.simulation import ROLES, SimEvent, Simulation

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "ocm-rollout"
T = TypeVar("T")

# Generous bounds: the suite must pass on a loaded 2-core machine.
STARTUP_TIMEOUT = 60.0



def wait_until(
    condition: Callable[[], T | Literal[False] | None],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "",
    state: Callable[[], object] | None = None,
) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``message`` after ``timeout``
    (and showing ``state()``, when given, so that a rare failure explains itself)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            shown = "" if state is None else f"\nstate: {state()!r}"
            pytest.fail(f"timed out after {timeout:g}s waiting for {message or condition!r} (last: {value!r}){shown}")
        time.sleep(interval)


def wait_for(
    predicate: Callable[[], T | Literal[False] | None],
    *,
    timeout: float = 20.0,
    what: str = "condition",
    state: Callable[[], object] | None = None,
) -> T:
    """Poll ``predicate`` every 50 ms (for 20 s unless told) until it returns something truthy;
    its value is returned."""
    return wait_until(predicate, timeout=timeout, interval=0.05, message=what, state=state)


def holds_for(
    predicate: Callable[[], bool], seconds: float, *, what: str = "invariant", state: Callable[[], object] | None = None
) -> None:
    """Check ``predicate`` repeatedly for ``seconds`` (to show that something does NOT happen);
    a failure shows ``state()``, when given."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            shown = "" if state is None else f"; state: {state()!r}"
            raise AssertionError(f"{what} broken{shown}")
        time.sleep(0.05)


def condition(obj: JSON | None, type_: str) -> JSON | None:
    """The condition ``type_`` of ``obj``'s status (a copy), or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def utc_now() -> datetime:
    return datetime.now(UTC)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Api:
    """Synchronous CRUD through a kubeconfig (the official client, like any user).

    ``pool`` widens the client's connection pool for callers that write from many threads."""

    def __init__(self, kubeconfig: str, pool: int | None = None) -> None:
        client = load_client(kubeconfig)
        if pool is not None:
            client.configuration.connection_pool_maxsize = pool
            client = kubernetes.client.ApiClient(client.configuration)
        self.kube = Kube(client)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> JSON:
        return self.kube.request_sync("GET", res.path(namespace, name))

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> JSON | None:
        try:
            return self.get(res, name, namespace)
        except NotFound:
            return None

    def list(self, res: Resource, namespace: str | None = None, labels: str | None = None) -> list[JSON]:
        query = {"labelSelector": labels} if labels else None
        return list(self.kube.request_sync("GET", res.path(namespace), query=query).get("items") or [])

    def create(self, res: Resource, body: JSON, namespace: str | None = None) -> JSON:
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        return self.kube.request_sync("POST", res.path(namespace), body=body)

    def patch(self, res: Resource, name: str, patch: JSON, namespace: str | None = None, sub: str | None = None) -> JSON:
        return self.kube.request_sync(
            "PATCH", res.path(namespace, name, sub), body=patch, content_type="application/merge-patch+json"
        )

    def patch_status(self, res: Resource, name: str, patch: JSON, namespace: str | None = None) -> JSON:
        return self.patch(res, name, patch, namespace, "status")

    def delete(self, res: Resource, name: str, namespace: str | None = None) -> None:
        try:
            self.kube.request_sync("DELETE", res.path(namespace, name))
        except NotFound:
            pass


class OperatorThread:
    """`run_operator` for ``controllers`` in a thread with its own event loop; ``handles`` are
    the running controllers (filled again at every start); ``stop`` is graceful, ``kill``
    cancels it mid-flight."""

    def __init__(
        self,
        controllers: list[str],
        kubeconfig: str,
        *,
        workers: int = 5,
        debug_address: tuple[str, int] | None = None,
        plugins: PluginRegistry | None = None,
    ) -> None:
        self.controllers = controllers
        self.kubeconfig = kubeconfig
        self.workers = workers
        self.debug_address = debug_address
        # The work configuration's registered rollout plugins (``run --work-config``).
        self.plugins = plugins
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self.stop_event: asyncio.Event | None = None
        self.handles = Handles()
        self.failure: BaseException | None = None

    def start(self) -> None:
        ready = threading.Event()
        self.handles = Handles()

        async def main() -> None:
            self.stop_event = asyncio.Event()
            started = asyncio.Event()
            self.task = asyncio.create_task(
                run_operator(
                    self.controllers,
                    kubeconfig=self.kubeconfig,
                    stop=self.stop_event,
                    ready=started,
                    workers=self.workers,
                    handles=self.handles,
                    debug_address=self.debug_address,
                    plugins=self.plugins,
                )
            )
            waiter = asyncio.create_task(started.wait())
            await asyncio.wait({self.task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            ready.set()
            waiter.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
            except BaseException as exc:
                self.failure = exc

        def thread_main() -> None:
            self.loop = asyncio.new_event_loop()
            try:
                self.loop.run_until_complete(main())
            finally:
                self.loop.close()

        name = "-".join(self.controllers)
        self.thread = threading.Thread(target=thread_main, name=f"{name}-operator-test", daemon=True)
        self.thread.start()
        if not ready.wait(STARTUP_TIMEOUT):
            raise AssertionError(f"the {name} operator did not start within {STARTUP_TIMEOUT:g}s")
        if self.failure is not None:
            raise self.failure

    def stop(self) -> None:
        self._end(lambda: self.stop_event.set() if self.stop_event else None)

    def kill(self) -> None:
        self._end(lambda: self.task.cancel() if self.task else None)

    def _end(self, how: Callable[[], object]) -> None:
        if self.thread is None or self.loop is None:
            return
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(how)
        self.thread.join(60)
        assert not self.thread.is_alive(), "the operator did not end within 60s"
        self.thread = None


class ControllerThread(OperatorThread):
    """One controller's operator in a thread; ``controller`` is the running controller
    (its typed handle). Ending it also ends the controller's writer pool and this
    instance's own kopf thread, like a killed process: requests already on the wire complete,
    nothing else is sent."""

    def __init__(self, controller_name: str, kubeconfig: str) -> None:
        super().__init__([controller_name], kubeconfig)
        self.controller_name = controller_name
        self.kopf_threads: set[threading.Thread] = set()

    @property
    def controller(self) -> Any:
        return self.handles.by_name(self.controller_name)

    def start(self) -> None:
        before = {t for t in threading.enumerate() if t.name == "kopf-operator"}
        super().start()
        # This instance's own kopf thread (others may run beside it: overlapping instances).
        self.kopf_threads = {t for t in threading.enumerate() if t.name == "kopf-operator"} - before

    def _end(self, how: Callable[[], object]) -> None:
        if self.thread is None or self.loop is None:
            return
        controller = self.controller
        super()._end(how)
        if controller is not None:
            controller.writer.executor.shutdown(wait=True, cancel_futures=True)
        for thread in self.kopf_threads:
            thread.join(60)


class SecondInstance:
    """Another `ControllerThread` of ``operator``'s controller, running beside it inside a
    ``with`` block (killed at its end); ``restart_one(rng)`` aborts one of the two, chosen with
    ``rng``, mid-flight and starts it again."""

    def __init__(self, operator: ControllerThread) -> None:
        second = ControllerThread(operator.controller_name, operator.kubeconfig)
        second.plugins = operator.plugins
        self.instances = [operator, second]

    def __enter__(self) -> Self:
        self.instances[1].start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.instances[1].kill()

    def restart_one(self, rng: random.Random) -> None:
        victim = rng.choice(self.instances)
        victim.kill()
        victim.start()


Check = Callable[[dict[tuple[str, str], JSON]], str | None]


@dataclass
class WatchMonitor:
    """Follows every change of ``resource`` (all namespaces) through a watch and runs ``checks``
    on the latest objects, ``(namespace, name) -> object``, at each one; the problems they
    return go to ``violations``; ``changes`` counts the changes seen."""

    kubeconfig: str
    resource: Resource
    checks: list[Check] = field(default_factory=list)
    objects: dict[tuple[str, str], JSON] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    changes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=f"{self.resource.plural}-monitor", daemon=True)
        self._thread.start()
        assert self._ready.wait(30), f"the {self.resource.plural} monitor could not start"
        return self

    def _run(self) -> None:
        api = kubernetes.client.CustomObjectsApi(load_client(self.kubeconfig))
        args = (self.resource.group, self.resource.version, self.resource.plural)
        listing: Any = api.list_cluster_custom_object(*args)
        for item in listing.get("items") or []:
            self.objects[(item["metadata"]["namespace"], item["metadata"]["name"])] = item
        rv = listing["metadata"]["resourceVersion"]
        self._ready.set()
        while not self._stop.is_set():
            watch = kubernetes.watch.Watch()
            try:
                for event in watch.stream(
                    api.list_cluster_custom_object, *args, resource_version=rv, timeout_seconds=2, allow_watch_bookmarks=True
                ):
                    obj = event["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                    if event["type"] == "DELETED":
                        self.objects.pop(key, None)
                    else:
                        self.objects[key] = obj
                    self.changes += 1
                    for check in self.checks:
                        problem = check(self.objects)
                        if problem is not None:
                            self.violations.append(problem)
                    if self._stop.is_set():
                        break
            except Exception as exc:
                if not self._stop.is_set():
                    self.violations.append(f"monitor watch broke: {exc!r}")
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def decide(api: Api, namespace: str, placement: str, clusters: list[str], *, per_page: int = 100) -> None:
    """Make ``clusters`` the decision of an existing Placement, as one decision group."""
    decide_groups(api, namespace, placement, [clusters], per_page=per_page)


def decide_groups(api: Api, namespace: str, placement: str, groups: list[list[str]], *, per_page: int = 100) -> None:
    """Make ``groups`` (decision groups 0, 1, ... in order, each a list of cluster names) the
    decision of an existing Placement: its status and its pages, named as OCM names them
    (``<placement>-decision-<k>``, k from 1 across all pages of all groups; created when
    missing), ``per_page`` clusters each, one empty page for an empty group."""
    pages: list[tuple[str, int, list[str]]] = []
    status_groups = []
    for index, clusters in enumerate(groups):
        chunks = [clusters[i : i + per_page] for i in range(0, len(clusters), per_page)] or [[]]
        names = [f"{placement}-decision-{len(pages) + k + 1}" for k in range(len(chunks))]
        pages += [(name, index, chunk) for name, chunk in zip(names, chunks, strict=True)]
        status_groups.append(
            {"decisionGroupIndex": index, "decisionGroupName": "", "decisions": names, "clusterCount": len(clusters)}
        )
    status = {"numberOfSelectedClusters": sum(len(g) for g in groups), "decisionGroups": status_groups}
    api.patch_status(PLACEMENTS, placement, {"status": status}, namespace)
    for name, index, page in pages:
        if api.get_or_none(PLACEMENT_DECISIONS, name, namespace) is None:
            labels = {LABEL_PLACEMENT: placement, LABEL_DECISION_GROUP_INDEX: str(index)}
            api.create(PLACEMENT_DECISIONS, {"metadata": {"name": name, "namespace": namespace, "labels": labels}}, namespace)
        decisions = [{"clusterName": c, "reason": ""} for c in page]
        api.patch_status(PLACEMENT_DECISIONS, name, {"status": {"decisions": decisions}}, namespace)


# -- simulated managed clusters ------------------------------------------------------------

# Agents that apply and finish quickly (the simulation profile's defaults when none is given).
FAST = {"applyDelay": "100ms", "progressDuration": "1200ms"}


class SimThread:
    """A ``ocm_rollout.sandbox.simulation.Simulation`` (clusters cluster1..N with their agents) against a hub,
    on its own event loop in a thread; ``events`` are the simulation's, ``stop()`` ends it and
    waits for a clean shutdown (raising what the simulation raised)."""

    def __init__(
        self, kubeconfig: Path | str, *, clusters: int, profile: dict[str, Any] | None = None,
        roles: frozenset[str] = ROLES,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.clusters = clusters
        self.roles = roles
        self.profile = parse_profile(profile or {"defaults": FAST})
        self.events: list[SimEvent] = []
        self.simulation: Simulation | None = None
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="sim-thread", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._run())
        except BaseException as exc:
            self.failure = exc
            self._ready.set()
        finally:
            self.loop.close()

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        ready = asyncio.Event()
        kube = Kube(load_client(str(self.kubeconfig)))
        simulation = Simulation(
            kube, clusters=self.clusters, profile=self.profile, on_event=self.events.append, roles=self.roles
        )
        self.simulation = simulation
        await simulation.register()
        task = asyncio.create_task(simulation.run(self._stop, ready=ready))
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        self._ready.set()
        await task

    def start(self) -> SimThread:
        self.thread.start()
        assert self._ready.wait(STARTUP_TIMEOUT), "the simulation did not start"
        if self.failure is not None:
            raise self.failure
        return self

    def cluster_names(self) -> list[str]:
        assert self.simulation is not None, "the simulation has not started"
        return self.simulation.cluster_names()

    def stop(self) -> None:
        if self._stop is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
        assert not self.thread.is_alive(), "the simulation did not stop"
        if self.failure is not None:
            raise self.failure


_names = itertools.count(1)
EnvT = TypeVar("EnvT", bound="ControllerEnv")


class ControllerEnv:
    """A hub (a private one of ``kind`` in ``tmp``, or the shared ``hub``), a client, one
    controller in a thread (``operator``, not started) and, once ``simulate`` is called,
    simulated clusters."""

    def __init__(self, tmp: Path, controller: str, hub: Any = None, *, kind: str = "local") -> None:
        from tests.hubs import start_hub

        self.own_hub = hub is None
        if hub is None:
            self.kubeconfig = str(tmp / "kubeconfig")
            self.hub = start_hub(kind, tmp, kubeconfig=self.kubeconfig)
        else:
            self.hub = hub
            self.kubeconfig = str(hub.kubeconfig)
        self.api = Api(self.kubeconfig)
        self.operator = ControllerThread(controller, self.kubeconfig)
        self.simulation: SimThread | None = None

    def simulate(self, clusters: int, profile: JSON) -> list[str]:
        """Start simulated clusters cluster1..clusterN with their agents."""
        self.simulation = SimThread(self.kubeconfig, clusters=clusters, profile=profile).start()
        return self.simulation.cluster_names()

    def close(self) -> None:
        # kopf's graceful stop waits for its watch streams; nothing is left to finish here.
        self.operator.kill()
        if self.simulation is not None:
            self.simulation.stop()
        if self.own_hub:
            self.hub.stop()

    def unique(self, prefix: str) -> str:
        return f"{prefix}{next(_names)}"

    def namespace(self, name: str) -> str:
        if self.api.get_or_none(NAMESPACES, name) is None:
            self.api.create(NAMESPACES, {"metadata": {"name": name}})
        return name


def operating(environment: EnvT) -> Iterator[EnvT]:
    """A module fixture's body: ``environment`` with its operator started, closed at the end."""
    environment.operator.start()
    try:
        yield environment
    finally:
        environment.close()


def simulating(environment: EnvT, clusters: int, profile: JSON) -> Iterator[EnvT]:
    """A module fixture's body: ``environment`` with simulated clusters cluster1..clusterN
    (``profile``) and its operator started, closed at the end."""
    try:
        environment.simulate(clusters, profile)
        environment.operator.start()
        yield environment
    finally:
        environment.close()


# -- `ocm-rollout run` as a process ----------------------------------------------------------


def kubeconfig_for(admin: Path, path: Path, token: str) -> Path:
    """A copy of the hub's kubeconfig (server, CA) that authenticates with ``token``."""
    config = yaml.safe_load(admin.read_text())
    for entry in config["users"]:
        entry["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@dataclass
class Hub:
    """A hub (local in a thread, or kube-apiserver); ``users`` maps a user name to its kubeconfig."""

    handle: Any
    directory: Path
    users: dict[str, Path] = field(default_factory=dict)

    @property
    def admin_kubeconfig(self) -> Path:
        return self.users["admin"]

    def kube(self) -> Kube:
        return Kube(load_api_client(str(self.admin_kubeconfig)))

    def api(self) -> Api:
        return Api(str(self.admin_kubeconfig))

    def records(self, user: str) -> list[Any]:
        """The hub's request records made with ``user``'s token (on kube-apiserver, its audit log's)."""
        if getattr(self.handle, "kind", "local") != "local":
            found: list[Any] = self.handle.records(user)
            return found
        hub = self.handle.hub
        everything: list[Any] = self.handle.call(lambda: list(hub.requests))
        return [r for r in everything if r.user == user]


USERS = ("proc-a", "proc-b", "proc-c")


def user_tokens() -> dict[str, str]:
    """One bearer token per process user (the hub's ``tokens`` argument)."""
    return {f"token-{name}-{os.getpid()}": name for name in USERS}


def with_users(handle: Any, directory: Path, tokens: dict[str, str]) -> Hub:
    found = Hub(handle=handle, directory=directory)
    admin = handle.kubeconfig or handle.write_kubeconfig(directory / "admin.kubeconfig")
    found.users["admin"] = Path(admin)
    for token, name in tokens.items():
        found.users[name] = kubeconfig_for(Path(admin), directory / f"{name}.kubeconfig", token)
    return found


@contextmanager
def local_hub(directory: Path) -> Iterator[Hub]:
    """A local hub of its own (for module-scoped scenarios), recording every request."""
    from tests.hubs import hub_thread

    tokens = user_tokens()
    handle = hub_thread(kubeconfig=directory / "admin.kubeconfig", record_requests=True, tokens=tokens)
    try:
        yield with_users(handle, directory, tokens)
    finally:
        handle.stop()


@dataclass
class RunProcess:
    """One `ocm-rollout run` process; its JSON log lines go to ``log_path``."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def logged(self, msg: str) -> list[dict[str, Any]]:
        """The log events with this message; fails the test if the process has died."""
        found = [e for e in self.events() if e.get("msg") == msg]
        if not found:
            self.check_alive()
        return found

    def address(self, purpose: str) -> str:
        def find() -> str | None:
            self.check_alive()
            for event in self.logged(f"serving {purpose} endpoints"):
                return str(event["address"])
            return None

        return wait_until(find, timeout=STARTUP_TIMEOUT, message=f"{self.name} to serve {purpose}")

    def metrics(self) -> str:
        """The text of the process's /metrics."""
        with urllib.request.urlopen(f"http://{self.address('metrics')}/metrics", timeout=10) as response:
            return str(response.read().decode())

    def metrics_matching(self, pattern: str, *, message: str, timeout: float = 60) -> str:
        """The text of the process's /metrics once it matches the regular expression ``pattern``."""

        def matching() -> str | None:
            text = self.metrics()
            return text if re.search(pattern, text) else None

        return wait_until(matching, timeout=timeout, message=message)

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"{self.name} exited with {self.process.returncode}:\n{self.log_path.read_text()[-4000:]}")

    def terminate(self, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def start_run(
    name: str,
    kubeconfig: Path,
    directory: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> RunProcess:
    log_path = directory / f"{name}.log"
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full_env.get("PYTHONPATH", "")]))
    command = [
        sys.executable, "-m", "ocm_rollout.cli", "run",
        "--kubeconfig", str(kubeconfig),
        "--health-bind-address", "127.0.0.1:0",
        "--metrics-bind-address", "127.0.0.1:0",
        "--log-format", "json",
        *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
    return RunProcess(name=name, process=process, log_path=log_path)


def start_controller(hub: Hub, controller: str, *args: str) -> RunProcess:
    """`ocm-rollout run --controllers <controller>` as user proc-c, once its operator has started."""
    proc = start_run(
        controller, hub.users["proc-c"], hub.directory,
        "--controllers", controller, "--lease-namespace", "default", "--identity", "proc-c",
        *args,
    )  # fmt: skip
    try:
        wait_until(lambda: proc.logged("operator started"), timeout=STARTUP_TIMEOUT, message=f"the {controller} operator")
    except BaseException:
        proc.kill()
        raise
    return proc


def metric_sample(text: str, metric: str, **labels: str) -> float | None:
    """The value of the first sample of ``metric`` carrying ``labels`` (None: no such sample)."""
    for line in text.splitlines():
        if line.startswith((metric + "{", metric + " ")) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def chart_rbac_report(records: list[Any], controller: str) -> Any:
    """The requests in ``records`` checked against the chart's default render for ``controller``
    (its ClusterRole and the Roles); discovery and other non-resource URLs need no rule."""
    import helm_python as helm

    from ocm_rollout.controllers.runtime.rbac import (
        Request,
        check,
        exempt_triples,
        load_catalog,
        rules_from_objects,
    )
    from tests.unit.helpers import template_objects

    with helm.Chart.load(CHART) as chart:
        objects = template_objects(chart.render(chart.merge_values({}), name="ocm", namespace="default"))
    label = "ocm-rollout.open-cluster-management.io/controller"
    roles = [
        o for o in objects
        if (o["kind"] == "ClusterRole" and o["metadata"]["labels"].get(label) == controller) or o["kind"] == "Role"
    ]  # fmt: skip
    requests = [Request(r.verb, r.group, r.resource, r.subresource or "") for r in records if r.resource]
    exempt = exempt_triples(load_catalog(CHART / "files" / "rbac.yaml"), [controller])
    return check(requests, rules_from_objects(roles), exempt=exempt)


def chart_dashboard_rbac_report(records: list[Any], *, read_only: bool) -> Any:
    """The requests in ``records`` checked against the dashboard's ClusterRole as the chart
    renders it with ``dashboard.readOnly=read_only``."""
    import helm_python as helm

    from ocm_rollout.controllers.runtime.rbac import (
        Request,
        check,
        exempt_triples,
        load_catalog,
        rules_from_objects,
    )
    from tests.unit.helpers import template_objects

    values = {"dashboard": {"enabled": True, "readOnly": read_only}}
    with helm.Chart.load(CHART) as chart:
        objects = template_objects(chart.render(chart.merge_values(values), name="ocm", namespace="default"))
    roles = [
        o for o in objects
        if o["kind"] == "ClusterRole" and o["metadata"]["labels"].get("app.kubernetes.io/component") == "dashboard"
    ]  # fmt: skip
    assert len(roles) == 1, [o["metadata"]["name"] for o in roles]
    requests = [Request(r.verb, r.group, r.resource, r.subresource or "") for r in records if r.resource]
    parts = ["dashboard"] if read_only else ["dashboard", "dashboardActions"]
    exempt = exempt_triples(load_catalog(CHART / "files" / "rbac.yaml"), parts)
    return check(requests, rules_from_objects(roles), exempt=exempt)


@dataclass
class RunOutcome:
    """What a module's `ocm-rollout run` scenario leaves for its tests: the text of /metrics
    scraped during it, the requests its process made, its exit code after SIGTERM, its log."""

    metrics: str
    records: list[Any]
    exit_code: int
    log: str

    @classmethod
    def of(cls, hub: Hub, proc: RunProcess, metrics: str, **more: Any) -> Self:
        """End the scenario: SIGTERM ``proc`` (started by `start_controller`) and collect what
        it left; ``more`` are a subclass's own fields."""
        exit_code = proc.terminate()
        return cls(metrics, hub.records("proc-c"), exit_code, proc.log_path.read_text(), **more)


def scenario_outcome(
    tmp_path_factory: pytest.TempPathFactory, name: str, scenario: Callable[[Hub], T]
) -> Iterator[T]:
    """A module fixture's body: ``scenario`` run once on a `local_hub` of its own (directory
    ``name``); its result is the fixture's value."""
    with local_hub(tmp_path_factory.mktemp(name)) as hub:
        yield scenario(hub)


def assert_exited_zero(outcome: RunOutcome) -> None:
    assert outcome.exit_code == 0, outcome.log[-3000:]


def assert_chart_grants_every_request(outcome: RunOutcome, controller: str) -> None:
    report = chart_rbac_report(outcome.records, controller)
    assert report.ungranted == [], report.describe()


def assert_chart_grants_nothing_unused(outcome: RunOutcome, controller: str) -> None:
    report = chart_rbac_report(outcome.records, controller)
    assert report.unused == [], report.describe()


# -- a controller process to SIGKILL ----------------------------------------------------------

# CI runs one round of each stress test; by hand, e.g. 50 rounds while two `yes > /dev/null` load
# the machine:  OCM_ROLLOUT_STRESS_RUNS=50 .venv/bin/python -m pytest -q <test file> -k overlapping
STRESS_RUNS = int(os.environ.get("OCM_ROLLOUT_STRESS_RUNS", "1"))


def readyz(port: int) -> bool:
    """Whether /readyz on 127.0.0.1:``port`` answers 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


class ControllerProcess:
    """`ocm-rollout run --controllers <controller>` as a child process without leader election,
    its output discarded: ``start`` returns once it is ready, ``sigkill`` kills it (if running)."""

    def __init__(self, controller: str, kubeconfig: str) -> None:
        self.controller = controller
        self.kubeconfig = kubeconfig
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        child = subprocess.Popen(
            [sys.executable, "-m", "ocm_rollout.cli", "run", "--controllers", self.controller, "--kubeconfig",
             self.kubeconfig, "--no-leader-elect", "--health-bind-address", f"127.0.0.1:{port}",
             "--metrics-bind-address", "0", "--log-level", "error"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.process = child
        wait_for(lambda: child.poll() is None and readyz(port), timeout=60, what="the controller process ready")

    def sigkill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def kill_at_random(self, rng: random.Random, finished: Callable[[], bool], times: int = 10) -> int:
        """Up to ``times`` times: a random moment (a pause on purpose), then, unless ``finished()``,
        SIGKILL the process and start it again. Returns how many times it was killed."""
        kills = 0
        while kills < times:
            time.sleep(rng.uniform(0.05, 0.5))
            if finished():
                break
            self.sigkill()
            kills += 1
            self.start()
        return kills
