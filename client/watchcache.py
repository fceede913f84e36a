"""A list-and-watch cache of one resource kind, outside kopf.

For kinds with many objects that change often (ManifestWorks: N per ManifestWorkReplicaSet, each
written several times per rollout). Handled as kopf events, every such change costs the
controller about as much CPU as writing a work (kopf builds a body view, loggers, a diff base and
the handler's arguments per event, in the controller's own process), which halved the
ManifestWorkReplicaSet controller's write rate. ``WatchCache`` does only what its users need:

- list (paginated), then watch from the list's resourceVersion (with bookmarks and a server-side
  timeout), optionally in one namespace and with a label selector;
- keep the latest object per (namespace, name); an event older than the cached object (integer
  resourceVersions) is dropped and not passed on;
- call each callback ``(event type, object, previous object or None)`` on the event loop, after
  the cache has been updated: "" for the first listing, then ADDED, MODIFIED or DELETED (a
  listing after a lost watch reports what changed meanwhile with these types too);
- list again after ``410 Gone`` or a broken stream (with back-off);
- ``synced`` is set once the first listing is cached, so a (re)started controller never acts on
  a half-listed world, as with the kopf informers (informer.py);
- ``version`` is the resourceVersion the cache has caught up with (its last listing's, or the
  last event's or bookmark's of its watch); ``reached(version, timeout)`` waits until it is at
  least a given one. A watch delivers its events in resourceVersion order, so a cache that
  reached the resourceVersion of a list read from the API holds every change that list showed
  (or a later one);
- ``remember(obj)`` puts an object the caller just wrote into the cache ("read your writes");
  callbacks still hear of that version: from its watch event or, if a 410 lost the event, from
  the next listing (which compares with the last version told, not with the cache);
- with ``by_namespace=True``, ``keys_in(namespace)`` gives the keys cached in one namespace
  without a scan of every object (a fleet's agents look up one cluster's ManifestWorks among
  ten thousand);
- ``transform`` (as client-go's informer transform) rewrites each object before it is cached:
  listed, watched or remembered. It must return an equal object (callbacks and readers see the
  result); it exists to hold objects in less memory, e.g. with equal parts shared.

The watch stream is read and decoded in a worker thread through the official client
(``Kube.api_client``: the same kubeconfig and code path as every other request); the events of
each chunk read are handed to the event loop in one call, and the loop alone touches the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ocm_rollout.client.kube import JSON, Kube, KubeError, Resource, send

log = logging.getLogger(__name__)

Key = tuple[str, str]
"""(namespace or "", name)."""
ChangeCallback = Callable[[str, JSON, JSON | None], None]
"""``(event type, object, previous object or None)``; see the module docstring for the types.
A DELETED found by a listing passes the last known object as both object and previous."""

LIST_PAGE = 500
WATCH_SECONDS = 300
CONNECT_SECONDS = 30
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
# How long the loop waits for a stopped watch's thread to end.
THREAD_JOIN_SECONDS = 5.0
_END = object()


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def resource_version(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def newer(candidate: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """Is ``candidate`` at least as new as ``current``? (resourceVersions compared as integers
    when both are; an opaque one never makes the candidate older)."""
    if current is None:
        return True
    new, old = resource_version(candidate), resource_version(current)
    if new.isdigit() and old.isdigit():
        return int(new) >= int(old)
    return True


def _integer(version: str) -> int | None:
    try:
        return int(version)
    except ValueError:
        return None


def apply_event(cache: dict[Key, JSON], event_type: str, obj: JSON) -> JSON | None:
    """Apply one event to ``cache``; returns the previous object (None if there was none).
    An event older than the cached object leaves the cache alone."""
    key = key_of(obj)
    previous = cache.get(key)
    if not newer(obj, previous):
        return previous
    if event_type == "DELETED":
        cache.pop(key, None)
    else:
        cache[key] = obj
    return previous


class WatchGone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class WatchCache:
    """The latest version of every object of one resource kind; see the module docstring."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        on_change: ChangeCallback | None = None,
        by_namespace: bool = False,
        transform: Callable[[JSON], JSON] | None = None,
    ) -> None:
        self.kube = kube
        self.transform = transform
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.objects: dict[Key, JSON] = {}
        # namespace -> names cached there (in the order they came), kept with ``objects`` when asked for.
        self._names: dict[str, dict[str, None]] | None = {} if by_namespace else None
        # The resourceVersion of the last version of each object the callbacks were told about.
        # A listing compares with it, not with ``objects``: a version the caller ``remember``ed
        # (no callback) whose watch event was lost to a 410 must still reach the callbacks.
        self._told: dict[Key, str] = {}
        self.synced = asyncio.Event()
        self.callbacks: list[ChangeCallback] = [on_change] if on_change is not None else []
        self._version = ""  # resourceVersion to watch from
        # (resourceVersion, future) of each ``reached`` waiting for the cache to catch up.
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._listed_once = False
        self._response: Any = None
        self._response_lock = threading.Lock()

    # -- reading ------------------------------------------------------------------------------
    def get(self, name: str, namespace: str | None = None) -> JSON | None:
        return self.objects.get((namespace or "", name))

    def items(self) -> list[JSON]:
        """Every cached object."""
        return list(self.objects.values())

    def __len__(self) -> int:
        return len(self.objects)

    def keys_in(self, namespace: str) -> list[Key]:
        """The keys cached in ``namespace`` (a scan unless the cache indexes namespaces)."""
        if self._names is None:
            return [key for key in self.objects if key[0] == namespace]
        return [(namespace, name) for name in self._names.get(namespace, ())]

    # -- progress -----------------------------------------------------------------------------
    @property
    def version(self) -> str:
        """The resourceVersion the cache has caught up with ("" before its first listing)."""
        return self._version

    async def reached(self, version: str, timeout: float) -> bool:
        """Whether the cache catches up with ``version`` (a resourceVersion of this kind, e.g. a
        list's) within ``timeout`` seconds. False at once when either resourceVersion is not an
        integer (opaque: no order is known)."""
        target, now = _integer(version), _integer(self._version)
        if target is None or now is None:
            return False
        if now >= target:
            return True
        waiter = asyncio.get_running_loop().create_future()
        entry = (target, waiter)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)
        return True

    def _progressed(self) -> None:
        """Wake every ``reached`` whose resourceVersion the cache has caught up with."""
        if not self._waiters:
            return
        now = _integer(self._version)
        if now is None:
            return
        for target, waiter in self._waiters:
            if target <= now and not waiter.done():
                waiter.set_result(None)

    def _index(self, key: Key) -> None:
        """Bring the namespace index in line with ``objects`` for ``key``."""
        if self._names is None:
            return
        namespace, name = key
        if key in self.objects:
            self._names.setdefault(namespace, {})[name] = None
            return
        names = self._names.get(namespace)
        if names is not None:
            names.pop(name, None)
            if not names:
                del self._names[namespace]

    def _reindex(self) -> None:
        if self._names is None:
            return
        self._names = {}
        for namespace, name in self.objects:
            self._names.setdefault(namespace, {})[name] = None

    def remember(self, obj: JSON) -> None:
        """Cache an object the caller just wrote (unless the cache holds a newer one), so its next
        pass does not act on the copy it replaced before the watch event arrives. No callback."""
        if self.transform is not None:
            obj = self.transform(obj)
        apply_event(self.objects, "MODIFIED", obj)
        self._index(key_of(obj))

    def _notify(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        if event_type == "DELETED":
            self._told.pop(key_of(obj), None)
        else:
            self._told[key_of(obj)] = resource_version(obj)
        for callback in self.callbacks:
            try:
                callback(event_type, obj, previous)
            except Exception:
                log.exception("watch cache callback failed", extra={"resource": self.resource.plural})

    # -- listing ------------------------------------------------------------------------------
    async def _list(self) -> None:
        query = {"limit": str(LIST_PAGE)}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        items: list[JSON] = []
        version = ""
        while True:
            page = await self.kube.request("GET", self.resource.path(self.namespace), query=query)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue")
            if not token:
                break
            query["continue"] = str(token)
        if self.transform is not None:
            items = [self.transform(item) for item in items]
        fresh = {key_of(item): item for item in items}
        old, self.objects, self._version = self.objects, fresh, version
        self._reindex()
        first = not self._listed_once
        self._listed_once = True
        for key, obj in fresh.items():
            previous = old.get(key)
            told = self._told.get(key)
            if first:
                self._notify("", obj, previous)
            elif told is None:
                self._notify("ADDED", obj, None)
            elif told != resource_version(obj):
                self._notify("MODIFIED", obj, previous)
        for key, obj in old.items():
            if key not in fresh:
                self._notify("DELETED", obj, obj)
        self._progressed()

    # -- the watch stream (worker thread) -----------------------------------------------------
    def _open(self) -> Any:
        """Start one watch request; the raw (streaming) response."""
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        if self._version:
            query["resourceVersion"] = self._version
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        answer = send(
            self.kube.api_client, "GET", self.resource.path(self.namespace), query=query,
            timeout=(CONNECT_SECONDS, WATCH_SECONDS + 30),
        )
        raw = answer.response
        if answer.status == 410:
            raw.release_conn()
            raise WatchGone()
        if not 200 <= answer.status <= 299:
            data = raw.data
            raw.release_conn()
            raise KubeError(answer.status, str(answer.reason), data.decode(errors="replace") if data else "")
        return raw

    @staticmethod
    def _batches(raw: Any) -> Iterator[list[JSON]]:
        """The events of each chunk read (newline-delimited JSON), decoded."""
        pending = b""
        for chunk in raw.stream(amt=None, decode_content=True):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            batch = [json.loads(line) for line in lines if line.strip()]
            if batch:
                yield batch

    def _read(self, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Any], stopped: threading.Event) -> None:
        """Thread body: read one watch stream and hand its events to the loop."""

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
            if stopped.is_set():  # stopped while the request was being made
                raw.release_conn()
                return
            try:
                for batch in self._batches(raw):
                    if not hand(batch):
                        return
            finally:
                with self._response_lock:
                    self._response = None
                raw.release_conn()
        except BaseException as exc:  # handed to the loop, which decides
            hand(exc)
            return
        hand(_END)

    def _interrupt(self) -> None:
        with self._response_lock:
            raw = self._response
        if raw is not None:
            with contextlib.suppress(Exception):  # already closed
                raw.shutdown()

    # -- applying events (event loop) ---------------------------------------------------------
    def _apply(self, event: JSON) -> None:
        event_type = str(event.get("type") or "")
        obj = event.get("object") or {}
        if event_type == "ERROR":
            if obj.get("code") == 410:
                raise WatchGone()
            raise KubeError(int(obj.get("code") or 500), str(obj.get("reason") or "Error"), str(obj.get("message") or ""))
        version = resource_version(obj)
        if version:
            self._version = version
        if event_type == "BOOKMARK":
            return
        previous = self.objects.get(key_of(obj))
        if not newer(obj, previous):
            return  # older than what is cached (a write remembered before its event came)
        if self.transform is not None:
            obj = self.transform(obj)
        apply_event(self.objects, event_type, obj)
        self._index(key_of(obj))
        self._notify(event_type, obj, previous)

    async def _watch(self) -> None:
        """One watch request, applied event by event until it ends."""
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
                for event in item:
                    self._apply(event)
                self._progressed()
        finally:
            stopped.set()
            self._interrupt()
            # The stream is shut down; let the thread see it before moving on (no thread
            # outlives its cache).
            await asyncio.shield(asyncio.to_thread(reader.join, THREAD_JOIN_SECONDS))

    # -- running ------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event | None = None) -> None:
        """List and watch until ``stop`` is set or the task is cancelled."""
        if stop is None:
            await self._run()
            return
        running = asyncio.ensure_future(self._run())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            running.cancel()
            await asyncio.gather(running, stopping, return_exceptions=True)

    async def _run(self) -> None:
        """List, then watch; list again after 410 or a failure (with back-off)."""
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
            except WatchGone:
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
