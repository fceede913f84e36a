"""The workset controller's lookup tables, kept from its caches' events and its own writes.

In: every event (and every write of the controller's own) of ManifestWorks, ControllerRevisions and
ManifestWorkReplicaSets, through the runtime's ``index`` callbacks. Out: the works and the revisions
of an owner label value (no full scans of the caches), the MWRS keys of an owner label value
(several only for colliding hashed values), and the canonical form of a work's spec or a revision's
template, computed once per uid and version (``template.normal_spec``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.common.kept_order import KeptOrder
from ocm_rollout.controllers.common.wire import generation_of, meta
from ocm_rollout.controllers.runtime.overlay import strictly_newer, uid_of
from ocm_rollout.controllers.workset.mutation_record import record_of as mutation_record
from ocm_rollout.controllers.workset.revisions import template_of
from ocm_rollout.controllers.workset.template import form_hash, normal_spec

Key = tuple[str, str]


class ByOwner:
    """Objects by the value of their owner label, each kept as its last event or write showed it."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[Key, JSON]] = {}
        self.owner_of: dict[Key, str] = {}
        # value -> its keys in order, kept until a key comes or goes under that value (a new
        # version of an object changes no key: the common event during a rollout).
        self.order: KeptOrder[str, Key] = KeptOrder()

    def remove(self, ref: Key) -> None:
        previous = self.owner_of.pop(ref, None)
        if previous is None:
            return
        bucket = self.objects.get(previous)
        if bucket is not None:
            bucket.pop(ref, None)
            self.order.forget(previous)
            if not bucket:
                del self.objects[previous]

    def put(self, ref: Key, value: str, obj: JSON) -> None:
        self.owner_of[ref] = value
        bucket = self.objects.setdefault(value, {})
        if ref not in bucket:
            self.order.forget(value)
        bucket[ref] = obj

    def update(self, ref: Key, value: str | None, obj: JSON, *, deleted: bool) -> None:
        """Keep ``obj`` under ``value`` (None or ``deleted``: drop it). Never rolls an entry back
        to an older version of the same object: the index hears the controller's own writes at
        once, and a watch event that lags behind such a write must not replace it."""
        previous = self.owner_of.get(ref)
        known = None if previous is None else self.objects.get(previous, {}).get(ref)
        if not deleted and known is not None and uid_of(known) == uid_of(obj) and strictly_newer(known, obj):
            return
        if not deleted and value is not None and value == previous:
            self.objects[value][ref] = obj  # the same key under the same value: the order holds
            return
        self.remove(ref)
        if not deleted and value is not None:
            self.put(ref, value, obj)

    def of(self, value: str) -> list[JSON]:
        return list(self.objects.get(value, {}).values())

    def items(self, value: str) -> list[tuple[Key, JSON]]:
        """The objects under ``value`` with their (namespace, name)."""
        return list(self.objects.get(value, {}).items())

    def sorted_items(self, value: str) -> list[tuple[Key, JSON]]:
        """``items(value)`` in (namespace, name) order."""
        return self.order.items(value, self.objects.get(value))


class OwnerKeys:
    """Owner label value -> the MWRS keys ("namespace/name") that own works under it."""

    def __init__(self) -> None:
        self.keys: dict[str, set[str]] = {}
        self.value_of: dict[str, str] = {}

    def put(self, key: str, value: str) -> None:
        self.value_of[key] = value
        self.keys.setdefault(value, set()).add(key)

    def remove(self, key: str) -> None:
        value = self.value_of.pop(key, None)
        if value is not None:
            self.keys.get(value, set()).discard(key)

    def of(self, value: str) -> set[str]:
        return set(self.keys.get(value, set()))


class Forms:
    """Canonical forms of works' specs (by uid and generation) and revisions' templates (by uid
    and resourceVersion), so a pass over thousands of works compares each only when it changed."""

    def __init__(self) -> None:
        self.works: dict[str, tuple[int, str]] = {}
        self.revisions: dict[str, tuple[str, str | None]] = {}

    def spec_matcher(self, template: JSON) -> Callable[[JSON], bool]:
        """Does a work hold ``template``: its spec equals it, or is a rollout plugin's mutation of
        it that nobody changed since (``mutation.py``)?"""
        wanted = normal_spec(template)
        wanted_hash = form_hash(wanted)

        def matches(work: JSON) -> bool:
            uid = str(meta(work).get("uid") or "")
            generation = generation_of(work)
            known = self.works.get(uid) if uid else None
            if known is not None and known[0] == generation:
                form = known[1]
            else:
                form = normal_spec(work.get("spec"))
                if uid:
                    self.works[uid] = (generation, form)
            if form == wanted:
                return True
            record = mutation_record(work)
            return record is not None and record["template"] == wanted_hash and record["spec"] == form_hash(form)

        return matches

    def revision_matcher(self, template: JSON) -> Callable[[Mapping[str, Any]], bool]:
        """Does a revision hold ``template``? (history.holds_template, cached)."""
        wanted = normal_spec(template)

        def holds(revision: Mapping[str, Any]) -> bool:
            uid = str(meta(revision).get("uid") or "")
            version = str(meta(revision).get("resourceVersion") or "")
            known = self.revisions.get(uid) if uid else None
            if known is None or known[0] != version:
                held = template_of(revision)
                known = (version, None if held is None else normal_spec(held))
                if uid:
                    self.revisions[uid] = known
            return known[1] == wanted

        return holds
