"""List-and-watch caches for the simulated agents and the live view, over the official client.

An ``Informer`` lists a resource, keeps every object in a dict keyed by (namespace, name), then
watches from the list's resourceVersion (with bookmarks and a server-side timeout) and applies
each event; after a ``410 Gone`` or a broken stream it lists again. The watch stream is read by
a worker thread through ``controllers.runtime.kube.Kube``'s ApiClient (the same kubeconfig code
path as every other client of the hub); events are handed to the event loop, which alone touches
the cache and calls the change callback.

``apply_event`` (pure) is the cache update rule; ``Writer`` wraps the few writes the agents make.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

from controllers.runtime.kube import JSON, Conflict, Kube, KubeError, NotFound, Resource

log = logging.getLogger(__name__)

Key = tuple[str, str]
ChangeCallback = Callable[[str, JSON, JSON | None], None]
"""``(event type, object, previous object or None)``; DELETED passes the last known object."""

WATCH_TIMEOUT_SECONDS = 60
THREAD_JOIN_SECONDS = 5.0
RELIST_BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def resource_version(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def newer(candidate: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """Is ``candidate`` at least as new as ``current``? (resourceVersions compared as integers
    when both are, otherwise the candidate wins)."""
    if current is None:
        return True
    new, old = resource_version(candidate), resource_version(current)
    if new.isdigit() and old.isdigit():
        return int(new) >= int(old)
    return True


def apply_event(cache: dict[Key, JSON], event_type: str, obj: JSON) -> JSON | None:
    """Apply one watch event to ``cache``; returns the previous object (None if there was none).
    Stale events (an older resourceVersion than cached) leave the cache alone."""
    key = key_of(obj)
    previous = cache.get(key)
    if event_type == "DELETED":
        if previous is not None and newer(obj, previous):
            del cache[key]
        return previous
    if newer(obj, previous):
        cache[key] = obj
    return previous


class WatchGone(Exception):
    """The requested resourceVersion is too old (410): list again."""


class Informer:
    """A cache of one resource kept current by list + watch; see the module docstring."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        on_change: ChangeCallback | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.cache: dict[Key, JSON] = {}
        self.synced = asyncio.Event()
        self._callbacks: list[ChangeCallback] = [on_change] if on_change else []
        self._rv = ""
        self._response: Any = None
        self._lock = threading.Lock()
        self._closing = threading.Event()

    def add_callback(self, callback: ChangeCallback) -> None:
        self._callbacks.append(callback)

    def get(self, name: str, namespace: str = "") -> JSON | None:
        return self.cache.get((namespace, name))

    def items(self) -> list[JSON]:
        return list(self.cache.values())

    def remember(self, obj: JSON) -> None:
        """Put an object we just wrote into the cache (if it is not older than what is there), so
        the next reconcile does not act on a stale copy before the watch event arrives."""
        apply_event(self.cache, "MODIFIED", obj)

    def _notify(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        for callback in self._callbacks:
            try:
                callback(event_type, obj, previous)
            except Exception:
                log.exception("informer callback failed", extra={"resource": self.resource.plural})

    async def _relist(self) -> None:
        query: dict[str, str] = {"limit": "500"}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        items: list[JSON] = []
        rv = ""
        while True:
            page = await self.kube.request("GET", self.resource.path(self.namespace), query=query)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            token = meta.get("continue")
            if not token:
                break
            query["continue"] = str(token)
        fresh: dict[Key, JSON] = {}
        for item in items:
            fresh[key_of(item)] = item
        old = self.cache
        self.cache = fresh
        self._rv = rv
        for key, obj in fresh.items():
            previous = old.get(key)
            if previous is None:
                self._notify("ADDED", obj, None)
            elif resource_version(previous) != resource_version(obj):
                self._notify("MODIFIED", obj, previous)
        for key, obj in old.items():
            if key not in fresh:
                self._notify("DELETED", obj, obj)

    # -- the watch stream (worker thread) ---------------------------------------------------------
    def _stream(self, rv: str) -> Iterator[JSON]:
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_TIMEOUT_SECONDS),
        }
        if rv:
            query["resourceVersion"] = rv
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        client = self.kube.api_client
        serialized = client.param_serialize(
            method="GET",
            resource_path=self.resource.path(self.namespace) + "?" + urlencode(query),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = client.call_api(*serialized, _request_timeout=(10, WATCH_TIMEOUT_SECONDS + 30))
        raw = response.response
        if response.status == 410:
            raw.release_conn()
            raise WatchGone(rv)
        if not 200 <= response.status <= 299:
            body = raw.data
            raise KubeError(response.status, str(response.reason), body.decode(errors="replace") if body else "")
        with self._lock:
            if self._closing.is_set():
                raw.release_conn()
                return
            self._response = raw
        try:
            buffer = b""
            for chunk in raw.stream(amt=None, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            with self._lock:
                self._response = None
            raw.release_conn()

    def _watch_thread(self, rv: str, loop: asyncio.AbstractEventLoop, events: asyncio.Queue[Any]) -> None:
        def hand_over(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, item)
            except RuntimeError:  # the loop is gone: nobody is listening any more
                self._closing.set()

        try:
            for event in self._stream(rv):
                if self._closing.is_set():
                    break
                hand_over(event)
        except BaseException as exc:  # handed to the loop, which decides
            if not self._closing.is_set():
                hand_over(exc)
        hand_over(None)

    async def _watch_once(self) -> None:
        """One watch request, applied event by event until it ends."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()
        thread = threading.Thread(
            target=self._watch_thread,
            args=(self._rv, loop, events),
            name=f"watch-{self.resource.plural}",
            daemon=True,
        )
        thread.start()
        try:
            while True:
                item = await events.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                self._handle(item)
        finally:
            self._interrupt()
            # The stream is shut down; let the thread see it before the loop moves on.
            await asyncio.shield(asyncio.to_thread(thread.join, THREAD_JOIN_SECONDS))

    def _handle(self, event: JSON) -> None:
        event_type = str(event.get("type") or "")
        obj = event.get("object") or {}
        if event_type == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise WatchGone(self._rv)
            raise KubeError(int(code or 500), str(obj.get("reason") or "Error"), str(obj.get("message") or ""))
        rv = resource_version(obj)
        if rv:
            self._rv = rv
        if event_type == "BOOKMARK":
            return
        previous = apply_event(self.cache, event_type, obj)
        self._notify(event_type, obj, previous)

    def _interrupt(self) -> None:
        with self._lock:
            raw = self._response
        if raw is not None:
            try:
                raw.shutdown()
            except Exception:  # already closed
                log.debug("watch stream already closed")

    async def run(self, stop: asyncio.Event) -> None:
        """List, then watch until ``stop`` is set; relist after 410 or a failure (with back-off)."""
        failures = 0
        need_list = True
        while not stop.is_set():
            try:
                if need_list:
                    await self._relist()
                    self.synced.set()
                    need_list = False
                watching = asyncio.ensure_future(self._watch_once())
                stopping = asyncio.ensure_future(stop.wait())
                try:
                    await asyncio.wait({watching, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                if not watching.done():
                    self._closing.set()
                    self._interrupt()
                    watching.cancel()
                    await asyncio.gather(watching, return_exceptions=True)
                    return
                watching.result()
                failures = 0
            except WatchGone:
                need_list = True
            except asyncio.CancelledError:
                self._closing.set()
                self._interrupt()
                raise
            except Exception as exc:
                if stop.is_set():
                    return
                delay = RELIST_BACKOFF_SECONDS[min(failures, len(RELIST_BACKOFF_SECONDS) - 1)]
                failures += 1
                need_list = True
                log.warning(
                    "watch failed; listing again",
                    extra={"resource": self.resource.plural, "error": str(exc), "retry_in": delay},
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
        self._closing.set()
        self._interrupt()


class Writer:
    """The writes the agents make, each returning the stored object (for ``Informer.remember``)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    async def create_if_absent(self, resource: Resource, body: JSON, namespace: str | None = None) -> JSON | None:
        """Create ``body``; an existing object of that name is left as it is (returns None)."""
        try:
            return await self.kube.create(resource, body, namespace)
        except Conflict:
            return None

    async def replace_status(self, resource: Resource, obj: Mapping[str, Any], status: JSON) -> JSON:
        """PUT the status subresource with ``obj``'s resourceVersion (409 on a stale copy)."""
        meta = obj.get("metadata") or {}
        body = dict(obj)
        body["status"] = status
        path = resource.path(meta.get("namespace") or None, str(meta["name"]), "status")
        return await self.kube.request("PUT", path, body=body, query={"fieldManager": self.kube.field_manager})

    async def merge_patch(self, resource: Resource, obj: Mapping[str, Any], patch: JSON) -> JSON:
        """A merge patch of the main resource, guarded by ``obj``'s resourceVersion."""
        meta = obj.get("metadata") or {}
        guarded = json.loads(json.dumps(patch))
        guarded.setdefault("metadata", {})["resourceVersion"] = resource_version(obj)
        return await self.kube.patch(resource, str(meta["name"]), guarded, meta.get("namespace") or None)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> JSON | None:
        try:
            return await self.kube.get(resource, name, namespace)
        except NotFound:
            return None
