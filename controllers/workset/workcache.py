"""A list-and-watch cache of ManifestWorks, outside kopf.

A ManifestWorkReplicaSet over N clusters owns N works, and each of them changes several times
per rollout (created, finalizer added, status written). Handled as kopf events, every one of
those changes costs the controller about as much CPU as writing a work (kopf builds a body view,
loggers, a diff base and the handler's arguments per event, in the controller's own process),
which halved the controller's write rate. This cache does only what the controller needs: list
(paginated), then watch from the list's resourceVersion, keep the latest object per
(namespace, name), call ``on_event(event_type, obj)`` on the event loop, and list again after a
``410 Gone`` or a broken stream. Like the kopf informers, it is complete (``synced``) before the
controller's first pass, so a restart never plans from a half-listed world.

The watch stream is read in a thread through the official client (the same kubeconfig and code
path as every other request); objects are handed to the event loop, which alone touches the
cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

from controllers.runtime.kube import JSON, Kube, KubeError, Resource

log = logging.getLogger(__name__)

Key = tuple[str, str]
EventCallback = Callable[[str, JSON], None]
"""``(event type, object)``: "" for the first listing, then ADDED, MODIFIED or DELETED."""

LIST_PAGE = 500
WATCH_SECONDS = 300
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
_END = object()


class _Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


def _key(obj: JSON) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _version(obj: JSON | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _older(candidate: JSON, current: JSON | None) -> bool:
    """Whether ``candidate`` is an older version than ``current`` (integer resourceVersions; an
    opaque pair is never called older)."""
    new, old = _version(candidate), _version(current)
    return current is not None and new.isdigit() and old.isdigit() and int(new) < int(old)


class WatchedCache:
    """The latest version of every object of one resource kind (all namespaces)."""

    def __init__(self, kube: Kube, resource: Resource, on_event: EventCallback) -> None:
        self.kube = kube
        self.resource = resource
        self.on_event = on_event
        self.objects: dict[Key, JSON] = {}
        self.synced = asyncio.Event()
        self._version = ""
        self._listed_once = False
        self._response: Any = None
        self._response_lock = threading.Lock()

    def get(self, name: str, namespace: str | None = None) -> JSON | None:
        return self.objects.get((namespace or "", name))

    def __len__(self) -> int:
        return len(self.objects)

    def _emit(self, event_type: str, obj: JSON) -> None:
        try:
            self.on_event(event_type, obj)
        except Exception:
            log.exception("cache event callback failed", extra={"resource": self.resource.plural})

    # -- listing ------------------------------------------------------------------------------
    async def _list(self) -> None:
        query = {"limit": str(LIST_PAGE)}
        items: list[JSON] = []
        version = ""
        while True:
            page = await self.kube.request("GET", self.resource.path(), query=query)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue")
            if not token:
                break
            query["continue"] = str(token)
        fresh = {_key(item): item for item in items}
        old, self.objects, self._version = self.objects, fresh, version
        first = not self._listed_once
        self._listed_once = True
        for key, obj in fresh.items():
            before = old.get(key)
            if first:
                self._emit("", obj)
            elif before is None:
                self._emit("ADDED", obj)
            elif _version(before) != _version(obj):
                self._emit("MODIFIED", obj)
        for key, obj in old.items():
            if key not in fresh:
                self._emit("DELETED", obj)

    # -- watching -----------------------------------------------------------------------------
    def _open(self) -> Any:
        """Start one watch request; the raw (streaming) response."""
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
            "resourceVersion": self._version,
        }
        client = self.kube.api_client
        request = client.param_serialize(
            method="GET",
            resource_path=f"{self.resource.path()}?{urlencode(query)}",
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        answer = client.call_api(*request, _request_timeout=(30, WATCH_SECONDS + 30))
        raw = answer.response
        if answer.status == 410:
            raw.release_conn()
            raise _Gone()
        if not 200 <= answer.status <= 299:
            data = raw.data
            raw.release_conn()
            raise KubeError(answer.status, str(answer.reason), data.decode(errors="replace") if data else "")
        return raw

    def _lines(self, raw: Any) -> Iterator[JSON]:
        pending = b""
        for chunk in raw.stream(amt=None, decode_content=True):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)

    def _read(self, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Any], stopped: threading.Event) -> None:
        """Thread body: read one watch stream and hand each event to the loop."""

        def hand(item: Any) -> bool:
            if stopped.is_set():
                return False
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody listens any more
                stopped.set()
                return False
            return True

        try:
            raw = self._open()
            with self._response_lock:
                self._response = raw
            if stopped.is_set():
                raw.release_conn()
                return
            try:
                for event in self._lines(raw):
                    if not hand(event):
                        return
            finally:
                with self._response_lock:
                    self._response = None
                raw.release_conn()
        except BaseException as exc:
            hand(exc)
            return
        hand(_END)

    def _interrupt(self) -> None:
        with self._response_lock:
            raw = self._response
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.shutdown()

    def _apply(self, event: JSON) -> None:
        kind = str(event.get("type") or "")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone()
            raise KubeError(int(obj.get("code") or 500), str(obj.get("reason") or "Error"), str(obj.get("message") or ""))
        version = _version(obj)
        if version:
            self._version = version
        if kind == "BOOKMARK":
            return
        key = _key(obj)
        current = self.objects.get(key)
        if _older(obj, current):
            return
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self._emit(kind, obj)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        stopped = threading.Event()
        reader = threading.Thread(
            target=self._read, args=(loop, inbox, stopped), name=f"watch-{self.resource.plural}", daemon=True
        )
        reader.start()
        try:
            while True:
                item = await inbox.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                self._apply(item)
        finally:
            stopped.set()
            self._interrupt()

    async def run(self) -> None:
        """List and watch until cancelled; list again after 410 or a failure (with back-off)."""
        failures = 0
        must_list = True
        while True:
            try:
                if must_list:
                    await self._list()
                    self.synced.set()
                    must_list = False
                await self._watch()
                failures = 0
            except _Gone:
                must_list = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                must_list = True
                log.warning(
                    "watch failed; listing again",
                    extra={"resource": self.resource.plural, "error": str(exc), "retry_in": delay},
                )
                await asyncio.sleep(delay)
