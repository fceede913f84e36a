"""The controller shell: a controller declares, the runtime runs.

A controller is a class whose constructor receives a ``Runtime`` and declares through it, in
the way OCM's sdk-go factory does (``WithInformersQueueKeysFunc(...).WithSync(...)``):

- what it watches: ``runtime.watch(resource, source=..., index=..., triggers=[...])`` returns the
  ``Cache`` it reads (``cache.py``); ``index`` keeps the controller's own lookup tables from every
  event (and from its own writes), each ``Trigger`` turns an event into the keys it affects;
- its queues: ``runtime.queue(name, reconcile, workers=..., resync=[...])`` returns the
  ``WorkQueue``; ``reconcile(key)`` returns an ``Outcome`` (``outcome.py``); a pass that raises is
  retried with back-off;
- what it serves (``routes``) and what to close when it stops (``on_stop``).

The runtime owns the rest, once for every controller: kopf (no controller module imports it),
the list-and-watch caches and their namespaces, waiting until every cache has listed before
the first pass, the workers, the one retry policy, the read-your-writes overlay (``Cache``),
fenced writes (``writes.py``), events (``events.py``) and metrics. ``install`` is where a
declaration meets kopf; nothing else here knows kopf's API.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

import kopf
from aiohttp import web

from ocm_rollout.client.kube import JSON, Kube, Resource
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.controllers.rollout.metric_providers import MetricProviders
from ocm_rollout.controllers.rollout.plugin.config import PluginRegistry
from ocm_rollout.controllers.runtime.cache import Cache, KopfSource, Listener, WatchSource
from ocm_rollout.controllers.runtime.events import EventRecorder
from ocm_rollout.controllers.runtime.outcome import Outcome, apply_outcome, raised
from ocm_rollout.controllers.runtime.overlay import DeletePolicy
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter
from ocm_rollout.controllers.runtime.writes import Writes

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
Source = Literal["kopf", "list-watch"]
KOPF: Source = "kopf"
LIST_WATCH: Source = "list-watch"

# How many passes of each queue the runtime remembers (``Runtime.recent_passes``).
PASS_HISTORY = 2000


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ControllerContext:
    """What every controller gets from whoever runs it (``run``, ``up`` or a test)."""

    kube: Kube
    # The clock the controllers pass to the pure cores.
    clock: Callable[[], datetime] = utc_now
    # Namespaces to watch for namespaced kinds; None means all.
    namespaces: list[str] | None = None
    workers: int = 2
    # Metrics hooks (no-ops unless the runner wires them to Prometheus).
    on_reconcile: Callable[[str, float, BaseException | None], None] | None = None
    on_queue_depth: Callable[[str, int], None] | None = None
    # The registered rollout plugins (``run --work-config``; OCM enhancement 231): configuration
    # only. A controller makes its ``PluginClient``s in its own event loop.
    plugins: PluginRegistry = field(default_factory=PluginRegistry)
    # The registered metric providers by name (``run --work-config``, ``metricProviders``), which
    # metric checks name with ``provider.name``; queried through ``runtime/prometheus.py``.
    metric_providers: MetricProviders = field(default_factory=MetricProviders)


@dataclass(frozen=True)
class Trigger(Generic[K]):
    """Turn an event of a watched kind into the keys of ``queue`` it affects (after ``delay``
    seconds: a burst of changes then shares one pass)."""

    queue: WorkQueue[K]
    keys: Callable[[str, JSON, JSON | None], Iterable[K]]
    delay: float = 0.0
    #: False: the watch's echo of this controller's own write (the very version the API returned
    #: to it) queues nothing. For an owner whose pass writes the owner itself (its status, a
    #: record) and plans from everything else already: its echo would only run the pass again.
    own_writes: bool = True


@dataclass(frozen=True)
class Resync(Generic[K]):
    """Queue ``keys()`` every ``every`` seconds (OCM's informer resync)."""

    every: float
    keys: Callable[[], Iterable[K]]


@dataclass(frozen=True)
class PassRecord:
    """One finished pass: when it started (monotonic), what it said, the delay queued after."""

    key: Hashable
    started: float
    seconds: float
    outcome: str
    requeued_after: float | None


@dataclass
class _QueueSpec(Generic[K]):
    queue: WorkQueue[K]
    reconcile: Callable[[K], Awaitable[Outcome]]
    workers: int
    resync: list[Resync[K]]
    passes: collections.Counter[Hashable] = field(default_factory=collections.Counter)
    started: dict[Hashable, float] = field(default_factory=dict)
    history: collections.deque[PassRecord] = field(default_factory=lambda: collections.deque(maxlen=PASS_HISTORY))


class Runtime:
    """What a controller declares through, and the services it uses while running."""

    def __init__(self, name: str, context: ControllerContext) -> None:
        self.name = name
        self.context = context
        self.kube = context.kube
        self.namespaces = context.namespaces
        self.caches: list[Cache] = []
        self.queues: dict[str, _QueueSpec[Any]] = {}
        self.http_routes: list[web.RouteDef] = []
        self.stop_callbacks: list[Callable[[], None]] = []
        self.start_callbacks: list[Callable[[], Awaitable[None]]] = []
        self.synced = asyncio.Event()
        self.writes = Writes(self.kube)
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._recorders: dict[str, EventRecorder] = {}

    # -- declaring -----------------------------------------------------------------------------
    def clock(self) -> datetime:
        return self.context.clock()

    def watch(
        self,
        resource: Resource,
        *,
        source: Source = KOPF,
        label_selector: str | None = None,
        delete_policy: DeletePolicy = DeletePolicy.HIDE,
        index: Listener | None = None,
        triggers: Iterable[Trigger[Any]] = (),
        transform: Callable[[JSON], JSON] | None = None,
    ) -> Cache:
        """Cache ``resource``; ``index`` hears every event and own write, ``triggers`` every event.
        ``transform`` rewrites each object the source caches into an equal one held in less memory
        (``client.watchcache``; list-watch sources only)."""
        if source == KOPF:
            if label_selector is not None:
                raise ValueError("kopf-fed caches take no label selector")
            if transform is not None:
                raise ValueError("kopf-fed caches take no transform")
            index_id = f"{self.name}_{resource.plural}_{resource.version}".replace("-", "_")
            cache = Cache(resource, KopfSource(index_id), delete_policy)
        else:
            watched = WatchSource(self.kube, resource, self.namespaces, label_selector, transform)
            cache = Cache(resource, watched, delete_policy)
            for watch_cache in cache.source.caches.values():  # type: ignore[union-attr]
                watch_cache.callbacks.append(cache.on_source)
        if index is not None:
            cache.index_listeners.append(index)
        for trigger in triggers:
            (cache.trigger_listeners if trigger.own_writes else cache.not_own_listeners).append(_enqueuer(trigger))
        self.caches.append(cache)
        return cache

    def queue(
        self,
        name: str,
        reconcile: Callable[[K], Awaitable[Outcome]],
        *,
        workers: int | None = None,
        retry_base: float = 0.005,
        retry_max: float = 300.0,
        resync: Iterable[Resync[K]] = (),
    ) -> WorkQueue[K]:
        """A keyed work queue drained by ``workers`` (default: the context's) running ``reconcile``;
        back-off from ``retry_base`` doubling up to ``retry_max`` seconds."""
        if name in self.queues:
            raise ValueError(f"queue {name!r} declared twice")
        queue: WorkQueue[K] = WorkQueue(
            name, base_delay=retry_base, max_delay=retry_max, on_depth=self.context.on_queue_depth
        )
        self.queues[name] = _QueueSpec(queue, reconcile, workers or self.context.workers, list(resync))
        return queue

    def routes(self, routes: Iterable[web.RouteDef]) -> None:
        """HTTP routes served on the debug address (``run --debug-bind-address``, ``up``)."""
        self.http_routes.extend(routes)

    def on_stop(self, callback: Callable[[], None]) -> None:
        self.stop_callbacks.append(callback)

    def on_start(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Awaited once the controller starts, before its caches count as synced (a cache of
        kinds found only at run time, listed before the first pass)."""
        self.start_callbacks.append(callback)

    def writer(self, concurrency: int) -> ConcurrentWriter:
        """A pool for one-write-per-cluster passes, closed when the controller stops."""
        pool = ConcurrentWriter(self.kube, concurrency, name=f"{self.name}-write")
        self.on_stop(pool.close)
        return pool

    def recorder(self, component: str) -> EventRecorder:
        """The event recorder of ``component`` (one per component, with its told-once memory)."""
        found = self._recorders.get(component)
        if found is None:
            found = self._recorders[component] = EventRecorder(self.kube, component)
        return found

    async def list_objects(
        self, resource: Resource, *, label_selector: str | None = None, field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> list[JSON]:
        """``resource`` from the API (not a cache), in the namespaces the controller watches
        (``metadata_only``: each object's metadata alone)."""
        scopes: list[str | None] = list(self.namespaces) if self.namespaces and resource.namespaced else [None]
        found: list[JSON] = []
        for namespace in scopes:
            found.extend(
                await self.kube.list_objects(
                    resource, namespace, label_selector=label_selector, field_selector=field_selector,
                    metadata_only=metadata_only,
                )
            )
        return found

    async def list_version(
        self, resource: Resource, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> str:
        """The resourceVersion of ``resource`` as the API holds it now (``Kube.list_version``), read
        in a namespace the controller watches when it is scoped to namespaces."""
        namespace = self.namespaces[0] if self.namespaces and resource.namespaced else None
        return await self.kube.list_version(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )

    # -- observing -----------------------------------------------------------------------------
    def passes(self, queue: str, key: Hashable) -> int:
        """How many passes of ``key`` the queue has run (troubleshooting and tests)."""
        return self.queues[queue].passes[key]

    def recent_passes(self, queue: str) -> list[PassRecord]:
        return list(self.queues[queue].history)

    # -- running -------------------------------------------------------------------------------
    def _check_synced(self) -> None:
        """Called when kopf first delivers an event: every kopf-fed cache has listed then."""
        if not self.synced.is_set() and all(cache.ready for cache in self.caches):
            self.synced.set()

    async def _wait_synced(self) -> None:
        """Until every cache has listed once: no pass ever sees a half-listed world."""
        for cache in self.caches:
            if isinstance(cache.source, WatchSource):
                for watch_cache in cache.source.caches.values():
                    await watch_cache.synced.wait()
        self._check_synced()
        await self.synced.wait()

    async def start(self) -> None:
        self._stop = asyncio.Event()
        for cache in self.caches:
            if isinstance(cache.source, WatchSource):
                self._tasks.append(asyncio.create_task(cache.source.run(self._stop), name=f"{self.name}-{cache.resource.plural}"))
        self._tasks.append(asyncio.create_task(self._run_queues(), name=f"{self.name}-workers"))

    async def _run_queues(self) -> None:
        try:
            for callback in self.start_callbacks:
                await callback()
            await self._wait_synced()
            runs = [self._workers(spec) for spec in self.queues.values()]
            runs.extend(self._resync(spec, resync) for spec in self.queues.values() for resync in spec.resync)
            await asyncio.gather(*runs)
        finally:
            self._close()

    async def _workers(self, spec: _QueueSpec[Any]) -> None:
        async def counted(key: Any) -> Outcome:
            spec.passes[key] += 1
            spec.started[key] = time.monotonic()
            return await spec.reconcile(key)

        def settle(queue: WorkQueue[Any], key: Any, outcome: Outcome | None, error: BaseException | None) -> None:
            if error is not None:
                outcome = raised(error)
            delay = apply_outcome(queue, key, outcome)
            started = spec.started.pop(key, time.monotonic())
            took = time.monotonic() - started
            spec.history.append(PassRecord(key, started, took, "error" if error else str(outcome), delay))
            if outcome is not None and outcome.kind == "back_off":
                log.info(
                    "backing off",
                    extra={"key": str(key), "queue": queue.name, "failures": queue.failures(key), "retry_in": delay,
                           "reason": outcome.reason},
                )

        await run_workers(spec.queue, counted, workers=spec.workers, on_result=self.context.on_reconcile, settle=settle)

    async def _resync(self, spec: _QueueSpec[Any], resync: Resync[Any]) -> None:
        while True:
            await asyncio.sleep(resync.every)
            for key in resync.keys():
                spec.queue.add(key)

    async def stop(self) -> None:
        self._stop.set()
        for spec in self.queues.values():
            spec.queue.shut_down()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._close()

    def _close(self) -> None:
        callbacks, self.stop_callbacks = self.stop_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # closing one thing must not keep the others open
                log.exception("stopping failed", extra={"controller": self.name})


def _enqueuer(trigger: Trigger[Any]) -> Listener:
    def enqueue(event_type: str, obj: JSON, previous: JSON | None) -> None:
        for key in trigger.keys(event_type, obj, previous):
            if trigger.delay > 0:
                trigger.queue.add_after(key, trigger.delay)
            else:
                trigger.queue.add(key)

    return enqueue


# -- kopf ----------------------------------------------------------------------------------------


def install(runtime: Runtime, registry: kopf.OperatorRegistry) -> None:
    """Register ``runtime``'s kopf-fed caches and its start and stop on ``registry``."""
    kopf_caches = [cache for cache in runtime.caches if isinstance(cache.source, KopfSource)]

    def bind(kwargs: dict[str, Any]) -> None:
        for cache in kopf_caches:
            source = cache.source
            assert isinstance(source, KopfSource)
            if not source.ready():
                source.bind(kwargs[source.index_id])
        runtime._check_synced()

    for cache in kopf_caches:
        _register_kopf_cache(registry, cache, bind)

    @kopf.on.startup(registry=registry, id=f"{runtime.name}_start")
    async def start(**_: Any) -> None:
        await runtime.start()

    @kopf.on.cleanup(registry=registry, id=f"{runtime.name}_stop")
    async def stop(**_: Any) -> None:
        await runtime.stop()


def _register_kopf_cache(registry: kopf.OperatorRegistry, cache: Cache, bind: Callable[[dict[str, Any]], None]) -> None:
    res = cache.resource
    source = cache.source
    assert isinstance(source, KopfSource)

    def index_fn(name: str, namespace: str | None, body: kopf.Body, **_: Any) -> dict[tuple[str, str], JSON]:
        return {(namespace or "", name): copy.deepcopy(dict(body))}

    def event_fn(event: kopf.RawEvent, **kwargs: Any) -> None:
        bind(kwargs)
        raw = event.get("object")
        if not isinstance(raw, dict):
            return
        cache.on_source(str(event.get("type") or ""), copy.deepcopy(dict(raw)), None)

    kopf.index(res.group, res.version, res.plural, id=source.index_id, registry=registry)(index_fn)
    kopf.on.event(res.group, res.version, res.plural, id=f"{source.index_id}_events", registry=registry)(event_fn)
