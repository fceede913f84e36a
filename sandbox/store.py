"""Object storage for the local hub, playing etcd and kube-apiserver's watch cache: one global
resourceVersion, a bounded per-resource watch history (ocm_rollout.sandbox.watch_window), etcd's limit on
the size of a stored object, and optional SQLite persistence.

Every write is serialised once here (compact JSON): the bytes are measured against etcd's
request limit, written to SQLite, and reused by GET, LIST and WATCH while the object is
unchanged.

Everything here runs on the hub's event loop; no method awaits, so each write is atomic with
respect to every other request.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocm_rollout.sandbox import errors
from ocm_rollout.sandbox.watch_window import FRESHNESS_SECONDS, MAX_CAPACITY, MIN_CAPACITY, WatchWindow

Key = tuple[str, str, str]  # (bucket, namespace, name)

# etcd refuses a request over --max-request-bytes (default 1.5 MiB); kube-apiserver passes its
# error through unchanged (a 500 with etcd's message). The request holds the object as stored
# and its key; the local hub measures both (etcd's few bytes of framing aside).
ETCD_MAX_REQUEST_BYTES = 1536 * 1024

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass
class Event:
    rv: int
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    # When it was recorded (the store's monotonic clock), for the watch history's freshness.
    time: float = 0.0
    # Serialised forms, keyed by (type as seen by a watcher, conversion key).
    encoded: dict[tuple[str, str], bytes] = field(default_factory=dict)


class Watcher:
    """A live watch on one bucket; the HTTP handler drains `queue`."""

    def __init__(
        self,
        bucket: str,
        namespace: str | None,
        matches: Callable[[dict[str, Any]], bool],
        *,
        max_pending: int,
    ) -> None:
        self.bucket = bucket
        self.namespace = namespace
        self.matches = matches
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.max_pending = max_pending
        self.closed = False
        self.bookmarks = False

    def _visible(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj.get("metadata", {}).get("namespace", "") != self.namespace:
            return False
        return self.matches(obj)

    def classify(self, event: Event) -> str | None:
        """The event type this watcher sees for `event`, or None.

        An object that starts matching the selectors arrives as ADDED, one that stops matching
        as DELETED, as kube-apiserver's watch cache does.
        """
        if event.type == ADDED:
            return ADDED if self._visible(event.obj) else None
        if event.type == DELETED:
            return DELETED if self._visible(event.old if event.old is not None else event.obj) else None
        new_ok = self._visible(event.obj)
        old_ok = self._visible(event.old)
        if new_ok and old_ok:
            return MODIFIED
        if new_ok:
            return ADDED
        if old_ok:
            return DELETED
        return None

    def offer(self, event: Event) -> None:
        """Queue what this watcher should see of `event`."""
        if self.closed:
            return
        kind = self.classify(event)
        if kind is None:
            return
        if self.queue.qsize() >= self.max_pending:
            # A consumer this far behind is cut off; it re-watches from its last resourceVersion.
            self.close()
            return
        self.queue.put_nowait((kind, event))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(("CLOSE", None))


class Persistence:
    """SQLite file: every object as JSON plus the resourceVersion counter."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS objects (bucket TEXT NOT NULL, namespace TEXT NOT NULL, "
            "name TEXT NOT NULL, rv INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (bucket, namespace, name))"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.pending: dict[Key, tuple[int, str] | None] = {}
        self.rv = 0

    def load(self) -> tuple[int, list[tuple[Key, dict[str, Any]]]]:
        row = self.db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()
        rv = int(row[0]) if row else 0
        out: list[tuple[Key, dict[str, Any]]] = []
        for bucket, ns, name, obj_rv, body in self.db.execute(
            "SELECT bucket, namespace, name, rv, body FROM objects ORDER BY bucket, namespace, name"
        ):
            out.append(((bucket, ns, name), json.loads(body)))
            rv = max(rv, int(obj_rv))
        return rv, out

    def record(self, key: Key, rv: int, body: str | None) -> None:
        """Queue the object at `key` (its JSON, or None when deleted) for the next flush."""
        self.pending[key] = None if body is None else (rv, body)
        self.rv = rv

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, {}
        db = self.db
        db.execute("BEGIN")
        try:
            for (bucket, ns, name), value in pending.items():
                if value is None:
                    db.execute("DELETE FROM objects WHERE bucket=? AND namespace=? AND name=?", (bucket, ns, name))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO objects (bucket, namespace, name, rv, body) VALUES (?, ?, ?, ?, ?)",
                        (bucket, ns, name, value[0], value[1]),
                    )
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", (str(self.rv),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        self.flush()
        self.db.close()


class Store:
    """The hub's objects by bucket, namespace and name, with their watch history.

    `history`: the most watch events kept per resource (kube-apiserver's watch cache upper
    bound); `history_min`: the fewest (its lower bound, 100); `history_freshness`: seconds of
    events a busy resource keeps before its history stops growing (75). See ocm_rollout.sandbox.watch_window.
    `max_object_bytes`: etcd's request limit for one stored object. `clock`: monotonic seconds.
    """

    def __init__(
        self,
        *,
        data: str | Path | None = None,
        history: int = MAX_CAPACITY,
        history_min: int = MIN_CAPACITY,
        history_freshness: float = FRESHNESS_SECONDS,
        max_pending: int = 100_000,
        max_object_bytes: int = ETCD_MAX_REQUEST_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rv = 0
        self.objects: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.history: dict[str, WatchWindow[Event]] = {}
        self.history_size = history
        self.history_min = history_min
        self.history_freshness = history_freshness
        self.max_object_bytes = max_object_bytes
        self.clock = clock
        # The resourceVersion when the store opened: a resource's history reaches back to it
        # until the resource's first event is dropped.
        self.base_floor = 0
        self.watchers: dict[str, set[Watcher]] = {}
        self.max_pending = max_pending
        self.by_uid: dict[str, Key] = {}
        self.dependents: dict[str, set[Key]] = {}
        self.listeners: list[Callable[[str, Event], None]] = []
        # Serialised JSON of stored objects, reused by GET, LIST and WATCH while unchanged.
        self.encoded: dict[Key, tuple[dict[str, Any], bytes]] = {}
        # Per bucket, a count of the writes that added or removed an object or changed its labels:
        # while it stays, the objects a label selector matches stay the same (see matching_keys).
        self.membership: dict[str, int] = {}
        self._matched: dict[tuple[str, str | None, Any], tuple[int, list[tuple[str, str]]]] = {}
        self.persistence = Persistence(data) if data is not None else None
        self._flush_scheduled = False
        if self.persistence is not None:
            rv, rows = self.persistence.load()
            for key, obj in rows:
                self._place(key, obj, None)
            self.rv = rv
        self.base_floor = self.rv

    # reads --------------------------------------------------------------------------------------

    def get(self, bucket: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(bucket, {}).get(namespace, {}).get(name)

    def iter(self, bucket: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        """Objects of a bucket in key order (namespace, then name), optionally in one namespace."""
        spaces = self.objects.get(bucket, {})
        if namespace is not None:
            names = spaces.get(namespace, {})
            for name in sorted(names):
                yield names[name]
            return
        for ns in sorted(spaces):
            names = spaces[ns]
            for name in sorted(names):
                yield names[name]

    def count(self, bucket: str, namespace: str | None = None) -> int:
        spaces = self.objects.get(bucket, {})
        if namespace is not None:
            return len(spaces.get(namespace, {}))
        return sum(len(v) for v in spaces.values())

    def namespaces_in(self, bucket: str) -> list[str]:
        return [ns for ns, names in self.objects.get(bucket, {}).items() if names]

    def lookup_uid(self, uid: str) -> dict[str, Any] | None:
        key = self.by_uid.get(uid)
        return None if key is None else self.get(*key)

    def key_of_uid(self, uid: str) -> Key | None:
        return self.by_uid.get(uid)

    def dependents_of(self, uid: str) -> list[Key]:
        return sorted(self.dependents.get(uid, ()))

    # writes -------------------------------------------------------------------------------------

    def encode_stored(self, bucket: str, obj: dict[str, Any]) -> bytes:
        meta = obj["metadata"]
        key = (bucket, meta.get("namespace", ""), meta["name"])
        hit = self.encoded.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = json.dumps(obj, separators=(",", ":")).encode()
        if self.get(bucket, key[1], key[2]) is obj:
            self.encoded[key] = (obj, data)
        return data

    def matching_keys(
        self, bucket: str, namespace: str | None, selector: Hashable, matches: Callable[[dict[str, Any]], bool]
    ) -> list[tuple[str, str]]:
        """The (namespace, name) of every object of ``bucket`` (in ``namespace``) whose labels
        ``matches`` accepts, in key order. ``selector`` names the predicate: the answer is kept
        until an object of the bucket is added, removed or relabelled, so that the pages of a
        paginated list, and lists repeated while only statuses change, do not look at every
        object again."""
        version = self.membership.get(bucket, 0)
        memo = (bucket, namespace, selector)
        hit = self._matched.get(memo)
        if hit is not None and hit[0] == version:
            return hit[1]
        keys = [
            (meta.get("namespace", ""), meta["name"])
            for obj in self.iter(bucket, namespace)
            if matches((meta := obj["metadata"]).get("labels") or {})
        ]
        self._matched.pop(memo, None)
        while len(self._matched) >= MATCHED_KEPT:
            del self._matched[next(iter(self._matched))]
        self._matched[memo] = (version, keys)
        return keys

    def _place(self, key: Key, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        bucket, ns, name = key
        self.encoded.pop(key, None)
        before = self.get(bucket, ns, name)
        if (
            obj is None
            or before is None
            or (before.get("metadata") or {}).get("labels") != (obj.get("metadata") or {}).get("labels")
        ):
            self.membership[bucket] = self.membership.get(bucket, 0) + 1
        if old is not None:
            uid = old.get("metadata", {}).get("uid")
            if uid and self.by_uid.get(uid) == key:
                del self.by_uid[uid]
            for ref in old.get("metadata", {}).get("ownerReferences") or ():
                deps = self.dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self.dependents[ref.get("uid", "")]
        if obj is None:
            spaces = self.objects.get(bucket)
            if spaces is not None and ns in spaces:
                spaces[ns].pop(name, None)
                if not spaces[ns]:
                    del spaces[ns]
            return
        self.objects.setdefault(bucket, {}).setdefault(ns, {})[name] = obj
        meta = obj.get("metadata", {})
        uid = meta.get("uid")
        if uid:
            self.by_uid[uid] = key
        for ref in meta.get("ownerReferences") or ():
            if ref.get("uid"):
                self.dependents.setdefault(ref["uid"], set()).add(key)

    def write(self, bucket: str, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Store `obj` (ADDED/MODIFIED) or remove it (DELETED, `obj` is its final state).

        Stamps a fresh resourceVersion into `obj`'s metadata (which must be a dict owned by the
        caller), records history, notifies watchers and persists.

        Raises ApiError (etcd's "request is too large") when the stored form of `obj` is over
        `max_object_bytes`; nothing is changed then.
        """
        meta = obj["metadata"]
        key = (bucket, meta.get("namespace", ""), meta["name"])
        rv = self.rv + 1
        previous = meta.get("resourceVersion")
        meta["resourceVersion"] = str(rv)
        data: bytes | None = None
        if kind != DELETED:
            data = json.dumps(obj, separators=(",", ":")).encode()
            if len(data) + len(etcd_key(key)) > self.max_object_bytes:
                if previous is None:
                    del meta["resourceVersion"]
                else:
                    meta["resourceVersion"] = previous
                raise errors.etcd_request_too_large()
        self.rv = rv
        self._place(key, None if data is None else obj, old)
        event = Event(rv, kind, obj, old, self.clock())
        if data is not None:
            self.encoded[key] = (obj, data)
            event.encoded[("", "")] = data
        window = self.history.get(bucket)
        if window is None:
            window = self.history[bucket] = WatchWindow(
                self.base_floor,
                max_capacity=self.history_size,
                min_capacity=self.history_min,
                freshness=self.history_freshness,
            )
        window.add(event, event.time)
        for watcher in tuple(self.watchers.get(bucket, ())):
            watcher.offer(event)
        for listener in self.listeners:
            listener(bucket, event)
        if self.persistence is not None:
            self.persistence.record(key, rv, None if data is None else data.decode())
            self._schedule_flush()
        return obj

    def _schedule_flush(self) -> None:
        if self._flush_scheduled:
            return
        self._flush_scheduled = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        if self.persistence is not None:
            self.persistence.flush()

    def get_meta(self, key: str) -> str | None:
        return None if self.persistence is None else self.persistence.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        if self.persistence is not None:
            self.persistence.set_meta(key, value)

    def close(self) -> None:
        for watchers in self.watchers.values():
            for w in tuple(watchers):
                w.close()
        if self.persistence is not None:
            self.persistence.close()
            self.persistence = None

    # watches ------------------------------------------------------------------------------------

    def oldest_resumable(self, bucket: str) -> int:
        """The oldest resourceVersion a watch on `bucket` can resume from."""
        window = self.history.get(bucket)
        return self.base_floor if window is None else window.oldest_resumable()

    def events_since(self, bucket: str, rv: int) -> list[Event] | None:
        """Events of `bucket` after `rv`, or None when history no longer reaches back that far."""
        window = self.history.get(bucket)
        if window is None:
            return None if rv < self.base_floor else []
        return window.since(rv)

    def add_watcher(self, watcher: Watcher) -> None:
        self.watchers.setdefault(watcher.bucket, set()).add(watcher)

    def remove_watcher(self, watcher: Watcher) -> None:
        watcher.closed = True
        found = self.watchers.get(watcher.bucket)
        if found is not None:
            found.discard(watcher)

    def all_watchers(self) -> list[Watcher]:
        return [w for ws in self.watchers.values() for w in ws]


# Label-selector answers kept (matching_keys), the oldest dropped first.
MATCHED_KEPT = 16


def etcd_key(key: Key) -> str:
    """The etcd key kube-apiserver would store `key` under (its length counts against etcd's limit)."""
    bucket, namespace, name = key
    path = bucket.lstrip("/")
    return f"/registry/{path}/{namespace}/{name}" if namespace else f"/registry/{path}/{name}"
