"""The semantics of the Kubernetes API, independent of HTTP: every verb, admission (pruning,
defaulting, validation), generation, finalizers, the status subresource, namespaces, CRDs and
the garbage collector.

All methods run on the hub's event loop and never await, so each call is atomic.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import contextvars
import copy
import json
import logging
import random
import re
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.sandbox import builtin, errors, work_webhook
from ocm_rollout.sandbox.conversion import Converter
from ocm_rollout.sandbox.crd import DNS_LABEL, crd_status, resource_type_for, validate_crd
from ocm_rollout.sandbox.errors import ApiError, cause
from ocm_rollout.sandbox.expiry import EVENT_TTL_SECONDS, Expiry
from ocm_rollout.sandbox.patch import json_patch, merge_patch, strategic_merge_patch
from ocm_rollout.sandbox.resources import ResourceType
from ocm_rollout.sandbox.selectors import FieldSelector, LabelSelector, label_key_error, label_value_error
from ocm_rollout.sandbox.store import ADDED, DELETED, MODIFIED, Event, Key, Store, Watcher

log = logging.getLogger("ocm_rollout.sandbox.engine")

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACE_FINALIZER = "kubernetes"
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
CRD_BUCKET = "apiextensions.k8s.io/customresourcedefinitions"
NAMESPACE_BUCKET = "/namespaces"
CONFIGMAP_BUCKET = "/configmaps"
SECRET_BUCKET = "/secrets"
EVENT_BUCKET = "/events"
MANIFEST_WORK_BUCKET = "work.open-cluster-management.io/manifestworks"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# kube-apiserver's limit on the bytes of all of an object's annotation keys and values together.
ANNOTATIONS_MAX_BYTES = 256 * 1024
# Set while the server converts an operation's result through a conversion webhook itself: the
# operation then returns the object as stored.
STORED_RESULTS: contextvars.ContextVar[bool] = contextvars.ContextVar("stored_results", default=False)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ctx:
    """Per-request options."""

    user: str = "admin"
    groups: tuple[str, ...] = ("system:masters", "system:authenticated")
    dry_run: bool = False
    field_validation: str = "Ignore"  # Strict | Warn | Ignore
    warnings: list[str] = field(default_factory=list)
    internal: bool = False  # garbage collector / namespace controller


@dataclass
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    cont: str | None
    remaining: int | None
    # Keys of the items in storage form (lets the HTTP layer reuse cached encodings).
    raw: list[dict[str, Any]]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


class Engine:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.types: dict[tuple[str, str], ResourceType] = {}
        self.by_kind: dict[tuple[str, str], ResourceType] = {}
        self.bucket_types: dict[str, ResourceType] = {}
        # Bumped whenever the set of served resources changes (discovery/openapi caches).
        self.api_generation = 0
        self.gc_items: deque[tuple[str, Any]] = deque()
        self.gc_wakeup: asyncio.Event | None = None
        # Events live `event_ttl` seconds after their last write (kube-apiserver's --event-ttl).
        self.event_ttl = EVENT_TTL_SECONDS
        self.clock: Callable[[], float] = time.monotonic
        self.event_expiry: Expiry[Key] = Expiry()
        # What conversion webhooks answered (CRDs with spec.conversion.strategy Webhook).
        self.converter = Converter()
        for rt in builtin.builtin_types():
            self._register(rt)
        store.listeners.append(self._observe)
        # Types defined by CRDs already in storage (a restart with --data).
        for crd in list(store.iter(CRD_BUCKET, None)):
            self._register(resource_type_for(crd))
        if store.count(NAMESPACE_BUCKET) == 0:
            for ns in INITIAL_NAMESPACES:
                self.create(self.bucket_types[NAMESPACE_BUCKET], "v1", "", {"metadata": {"name": ns}}, Ctx(internal=True))

    # registry -----------------------------------------------------------------------------------

    def _register(self, rt: ResourceType) -> None:
        self.types[(rt.group, rt.plural)] = rt
        self.by_kind[(rt.group, rt.kind)] = rt
        if rt.bucket not in self.bucket_types or rt.to_storage is None:
            self.bucket_types[rt.bucket] = rt
        self.api_generation += 1

    def _unregister(self, group: str, plural: str) -> None:
        rt = self.types.pop((group, plural), None)
        if rt is None:
            return
        self.by_kind.pop((rt.group, rt.kind), None)
        self.bucket_types.pop(rt.bucket, None)
        for w in tuple(self.store.watchers.get(rt.bucket, ())):
            w.close()
        self.api_generation += 1

    def resolve(self, group: str, version: str, plural: str) -> ResourceType | None:
        rt = self.types.get((group, plural))
        if rt is None or version not in rt.versions or not rt.versions[version].served:
            return None
        return rt

    def kind_for(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        return self.by_kind.get((group, kind))

    # conversion ---------------------------------------------------------------------------------

    def to_version(self, rt: ResourceType, version: str, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.webhook is not None and obj.get("apiVersion") != rt.api_version(version):
            return self.converter.lookup(obj, rt.api_version(version))
        if rt.from_storage is not None:
            out = rt.from_storage(obj)
            out["kind"] = rt.kind
            return out
        api_version = rt.api_version(version)
        if obj.get("apiVersion") == api_version:
            return obj
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.webhook is not None and obj.get("apiVersion") != rt.api_version(rt.storage_version):
            return self.converter.lookup(obj, rt.api_version(rt.storage_version))
        if rt.to_storage is not None:
            out = rt.to_storage(obj)
            out["kind"] = self.bucket_types[rt.bucket].kind
            return out
        out = dict(obj)
        out["apiVersion"] = rt.api_version(rt.storage_version)
        return out

    def _result(self, rt: ResourceType, version: str, obj: dict[str, Any]) -> dict[str, Any]:
        """What an operation returns: ``obj`` in ``version``, or as stored while the server
        converts results itself (``STORED_RESULTS``, for a conversion webhook)."""
        if STORED_RESULTS.get():
            return obj
        return self.to_version(rt, version, obj)

    # reads --------------------------------------------------------------------------------------

    def _current(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.bucket, namespace if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return obj

    def get(self, rt: ResourceType, version: str, namespace: str, name: str) -> dict[str, Any]:
        return self._result(rt, version, self._current(rt, namespace, name))

    def list_objects(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        cont: str | None = None,
    ) -> ListResult:
        start_after: tuple[str, str] | None = None
        list_rv = self.store.rv
        if cont:
            list_rv, start_after = _decode_continue(cont)
        ns_filter = namespace if rt.namespaced else None
        pinned_ns = fields.exact("metadata.namespace") if rt.namespaced else None
        if ns_filter is None and pinned_ns is not None:
            ns_filter = pinned_ns
        pinned_name = fields.exact("metadata.name")
        if pinned_name is None and fields.empty:
            return self._list_matching(rt, version, ns_filter, labels, limit, list_rv, start_after)
        if pinned_name is not None:
            spaces = [ns_filter] if ns_filter is not None else sorted(self.store.namespaces_in(rt.bucket))
            if not rt.namespaced:
                spaces = [""]
            candidates = [o for ns in spaces if (o := self.store.get(rt.bucket, ns, pinned_name)) is not None]
            source: Any = iter(candidates)
        else:
            source = self.store.iter(rt.bucket, ns_filter)
        convert = rt.from_storage is not None or version != rt.storage_version
        plain_fields = all(r.field.startswith("metadata.") for r in fields.requirements)
        items: list[dict[str, Any]] = []
        raw: list[dict[str, Any]] = []
        more = False
        remaining = 0
        for obj in source:
            meta = obj["metadata"]
            if start_after is not None and (meta.get("namespace", ""), meta["name"]) <= start_after:
                continue
            if not labels.empty and not labels.matches(meta.get("labels")):
                continue
            shown = self.to_version(rt, version, obj) if convert else obj
            if not fields.empty and not fields.matches(shown if not plain_fields else obj):
                continue
            if limit and len(items) >= limit:
                more = True
                remaining += 1
                continue
            items.append(shown)
            raw.append(obj)
        token = None
        if more:
            last = raw[-1]["metadata"]
            token = _encode_continue(list_rv, (last.get("namespace", ""), last["name"]))
        return ListResult(items, str(list_rv), token, remaining if more else None, raw)

    def _list_matching(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        labels: LabelSelector,
        limit: int,
        list_rv: int,
        start_after: tuple[str, str] | None,
    ) -> ListResult:
        """A list with no field selector: the page after ``start_after`` among the keys the label
        selector matches (kept by the store between pages and lists while no object of the
        bucket is added, removed or relabelled)."""
        keys = self.store.matching_keys(rt.bucket, namespace, tuple(labels.requirements), labels.matches)
        begin = 0 if start_after is None else bisect.bisect_right(keys, start_after)
        end = len(keys) if not limit else min(begin + limit, len(keys))
        raw = [obj for key in keys[begin:end] if (obj := self.store.get(rt.bucket, *key)) is not None]
        convert = rt.from_storage is not None or version != rt.storage_version
        items = [self.to_version(rt, version, obj) for obj in raw] if convert else list(raw)
        more = end < len(keys)
        token = None
        if more and raw:
            last = raw[-1]["metadata"]
            token = _encode_continue(list_rv, (last.get("namespace", ""), last["name"]))
        return ListResult(items, str(list_rv), token, len(keys) - end if more else None, raw)

    # admission ----------------------------------------------------------------------------------

    def _check_kind(self, rt: ResourceType, version: str, body: dict[str, Any]) -> None:
        api_version = rt.api_version(version)
        got_version = body.get("apiVersion")
        got_kind = body.get("kind")
        if got_kind not in (None, "", rt.kind):
            raise errors.bad_request(f'the kind in the data ({got_kind}) does not match the expected kind ({rt.kind})')
        if got_version not in (None, "", api_version):
            raise errors.bad_request(
                f"the API version in the data ({got_version}) does not match the expected API version ({api_version})"
            )
        body["apiVersion"] = api_version
        body["kind"] = rt.kind

    def _validate_meta(self, rt: ResourceType, meta: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, str]]:
        causes: list[dict[str, str]] = []
        name = meta.get("name")
        if not name:
            causes.append(cause("FieldValueRequired", "metadata.name", "Required value: name or generateName is required"))
        elif not isinstance(name, str):
            causes.append(cause("FieldValueInvalid", "metadata.name", "Invalid value: must be a string"))
        elif rt.strategy is not None and (problems := rt.strategy.name_errors(name)) is not None:
            causes.extend(
                cause("FieldValueInvalid", "metadata.name", f"Invalid value: {json.dumps(name)}: {p}") for p in problems
            )
        elif rt.bucket == NAMESPACE_BUCKET:
            if len(name) > 63 or not DNS_LABEL.match(name):
                causes.append(
                    cause(
                        "FieldValueInvalid",
                        "metadata.name",
                        f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                        "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                        "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                    )
                )
        elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            causes.append(
                cause(
                    "FieldValueInvalid",
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
                    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'example.com', regex used for validation is "
                    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                )
            )
        causes.extend(_string_map_causes(meta, "labels", label_value_error))
        causes.extend(_string_map_causes(meta, "annotations", None))
        causes.extend(_annotations_size_causes(meta))
        finalizers = meta.get("finalizers")
        if finalizers is not None and not isinstance(finalizers, list):
            causes.append(cause("FieldValueTypeInvalid", "metadata.finalizers", "Invalid value: must be a list of strings"))
        for i, fin in enumerate(finalizers or ()):
            if not isinstance(fin, str) or label_key_error(fin):
                causes.append(
                    cause("FieldValueInvalid", f"metadata.finalizers[{i}]", f"Invalid value: {json.dumps(fin)}: must be a qualified name")
                )
        if old is not None and _meta(old).get("deletionTimestamp"):
            before = set(_meta(old).get("finalizers") or ())
            added = [f for f in finalizers or () if f not in before]
            if added:
                # kube-apiserver's wording (the new ones as Go prints a []string), and its two
                # identical causes: the generic and the kind's own update validation both check it.
                listed = ", ".join(json.dumps(f) for f in added)
                forbidden = cause("FieldValueForbidden", "metadata.finalizers",
                                  "Forbidden: no new finalizers can be added if the object is being deleted, "
                                  f"found new finalizers []string{{{listed}}}")
                causes += [forbidden, dict(forbidden)]
        refs = meta.get("ownerReferences")
        if refs is not None and not isinstance(refs, list):
            causes.append(cause("FieldValueTypeInvalid", "metadata.ownerReferences", "Invalid value: must be a list"))
        controllers = 0
        for i, ref in enumerate(refs or ()):
            where = f"metadata.ownerReferences[{i}]"
            if not isinstance(ref, dict):
                causes.append(cause("FieldValueTypeInvalid", where, "Invalid value: must be an object"))
                continue
            for req in ("apiVersion", "kind", "name", "uid"):
                if not ref.get(req):
                    causes.append(cause("FieldValueRequired", f"{where}.{req}", "Required value"))
            if ref.get("controller"):
                controllers += 1
        if controllers > 1:
            causes.append(
                cause("FieldValueInvalid", "metadata.ownerReferences", "Invalid value: Only one reference can have Controller set to true")
            )
        return causes

    def _admit(
        self,
        rt: ResourceType,
        version: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        ctx: Ctx,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Prune, default and validate `obj` against the schema of `version` (and the kind's
        strategy, for the endpoint `subresource`)."""
        schema = rt.versions[version].schema()
        outcome = schema.normalize(obj)
        if outcome.unknown and not ctx.internal:
            if ctx.field_validation == "Strict":
                listed = ", ".join(f'unknown field "{p}"' for p in outcome.unknown)
                raise errors.bad_request(
                    f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: strict decoding error: {listed}'
                )
            if ctx.field_validation == "Warn":
                ctx.warnings.extend(f'unknown field "{p}"' for p in outcome.unknown)
        new = outcome.obj
        new.setdefault("metadata", {})
        causes = self._validate_meta(rt, new["metadata"], old)
        # Like validation ratcheting: an update that leaves everything but metadata as it was
        # does not re-validate what was accepted before.
        if old is None or _without(new, "metadata", "apiVersion", "kind") != _without(old, "metadata", "apiVersion", "kind"):
            causes.extend(schema.validate(new, old))
        causes.extend(self._kind_checks(rt, new, old))
        if rt.strategy is not None:
            causes.extend(rt.strategy.validate(new, old, subresource))
        if causes:
            raise errors.invalid(rt.group, rt.kind, _meta(new).get("name") or "", causes)
        return new

    def _kind_checks(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, str]]:
        causes: list[dict[str, str]] = []
        if rt.bucket in (CONFIGMAP_BUCKET, SECRET_BUCKET) and old is not None and old.get("immutable"):
            if any(new.get(k) != old.get(k) for k in ("data", "binaryData")):
                causes.append(cause("FieldValueForbidden", "data", "Forbidden: field is immutable when `immutable` is set"))
            if not new.get("immutable"):
                causes.append(cause("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"))
        if rt.group == "apps" and rt.kind == "ControllerRevision" and old is not None and new.get("data") != old.get("data"):
            # kube-apiserver compares the bytes of data as re-encoded; this hub compares the JSON
            # (docs/behaviour/limits.md)
            shown = json.dumps(new.get("data"), separators=(",", ":"), sort_keys=True)
            causes.append(cause("FieldValueInvalid", "data", f"Invalid value: {shown}: field is immutable"))
        if rt.bucket == CRD_BUCKET:
            causes.extend(validate_crd(new))
            if old is not None and not causes:
                for path in (("group",), ("names", "plural"), ("scope",)):
                    a: Any = new["spec"]
                    b: Any = old["spec"]
                    for p in path:
                        a = a.get(p) if isinstance(a, dict) else None
                        b = b.get(p) if isinstance(b, dict) else None
                    if a != b:
                        causes.append(cause("FieldValueInvalid", "spec." + ".".join(path), "Invalid value: field is immutable"))
            if old is None and not causes:
                spec = new["spec"]
                existing = self.types.get((spec["group"], spec["names"]["plural"]))
                if existing is not None and existing.builtin:
                    causes.append(cause("FieldValueInvalid", "spec.names.plural", "Invalid value: conflicts with a built-in resource"))
        return causes

    def _validating_webhooks(self, rt: ResourceType, obj: dict[str, Any], subresource: str | None) -> None:
        """The validating admission webhooks of the hub the local one stands for: they see an
        object after schema validation, before it is stored (and on dry runs too)."""
        if rt.bucket == MANIFEST_WORK_BUCKET and subresource is None:
            work_webhook.check(obj)

    def _prepare_kind(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, subresource: str | None = None
    ) -> None:
        """Server-side fields of built-in kinds (after validation, before storage)."""
        if rt.bucket == SECRET_BUCKET:
            string_data = obj.pop("stringData", None)
            if string_data:
                data = dict(obj.get("data") or {})
                for k, v in string_data.items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
                obj["data"] = data
            obj.setdefault("type", "Opaque")
        elif rt.bucket == NAMESPACE_BUCKET:
            if old is None:
                spec = dict(obj.get("spec") or {})
                spec["finalizers"] = [NAMESPACE_FINALIZER]
                obj["spec"] = spec
                obj["status"] = {"phase": "Active"}
            else:
                obj["spec"] = old.get("spec", {})
                if subresource != "status":
                    obj["status"] = old.get("status", {})
        elif rt.bucket == CRD_BUCKET:
            obj["status"] = crd_status(obj, now_rfc3339(), old)
            if old is None:
                meta = obj["metadata"]
                fins = list(meta.get("finalizers") or ())
                if CRD_FINALIZER not in fins:
                    fins.append(CRD_FINALIZER)
                meta["finalizers"] = fins

    # create -------------------------------------------------------------------------------------

    def _namespace_ok(self, rt: ResourceType, namespace: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACE_BUCKET, "", namespace)
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if _meta(ns).get("deletionTimestamp"):
            raise errors.forbidden(
                rt.group,
                rt.plural,
                "",
                f"unable to create new content in namespace {namespace} because it is being terminated",
                [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being terminated", "field": "metadata.namespace"}],
            )

    def create(
        self,
        rt: ResourceType,
        version: str,
        namespace: str,
        body: Any,
        ctx: Ctx,
    ) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        body = dict(body)
        self._check_kind(rt, version, body)
        meta = dict(body.get("metadata") or {}) if isinstance(body.get("metadata"), dict) else {}
        if rt.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            namespace = namespace or meta.get("namespace") or ""
            if not namespace:
                raise errors.bad_request("the server could not find the requested resource: a namespace is required")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        generate = meta.get("generateName")
        if not meta.get("name") and generate:
            meta["name"] = _generated(generate)
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        body["metadata"] = meta
        if rt.virtual:
            return self._review(rt, version, body, ctx)
        if rt.versions[version].status and not rt.builtin:
            body.pop("status", None)
        self._namespace_ok(rt, namespace)
        if rt.strategy is not None:
            body = copy.deepcopy(body)
            rt.strategy.default(body)
            rt.strategy.prepare_create(body, ctx.user, ctx.groups)
        obj = self._admit(rt, version, body, None, ctx)
        self._validating_webhooks(rt, obj, None)
        self._prepare_kind(rt, obj, None)
        obj = self.to_storage(rt, obj)
        meta = dict(obj["metadata"])
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        obj["metadata"] = meta
        ns_key = namespace if rt.namespaced else ""
        if self.store.get(rt.bucket, ns_key, meta["name"]) is not None:
            if not generate or meta.get("name", "").startswith(generate) is False:
                raise errors.already_exists(rt.group, rt.plural, meta["name"])
            for _ in range(8):
                meta["name"] = _generated(generate)
                if self.store.get(rt.bucket, ns_key, meta["name"]) is None:
                    break
            else:
                raise errors.already_exists(rt.group, rt.plural, meta["name"])
        if ctx.dry_run:
            return self._result(rt, version, obj)
        self.store.write(rt.bucket, ADDED, obj, None)
        if rt.bucket == CRD_BUCKET:
            self._register(resource_type_for(obj))
        return self._result(rt, version, obj)

    def _review(self, rt: ResourceType, version: str, body: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
        body.pop("status", None)
        schema = rt.versions[version].schema()
        obj = schema.normalize(body).obj
        problems = schema.validate(obj)
        if problems:
            raise errors.invalid(rt.group, rt.kind, "", problems)
        if rt.kind == "SelfSubjectReview":
            obj["status"] = {"userInfo": {"username": ctx.user, "groups": list(ctx.groups)}}
        else:
            obj["status"] = {"allowed": True, "reason": "the local hub allows every request of an authenticated user"}
            if rt.kind == "SelfSubjectAccessReview":
                obj.setdefault("spec", {})
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
        obj["metadata"]["creationTimestamp"] = None
        return obj

    # update / patch -----------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        version: str,
        namespace: str,
        name: str,
        body: Any,
        ctx: Ctx,
        *,
        subresource: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """PUT. Returns (object, created)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        body = dict(body)
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        current = self.store.get(rt.bucket, namespace if rt.namespaced else "", name)
        if current is None:
            if rt.allow_create_on_update and subresource is None:
                body["metadata"] = {**meta, "name": name}
                return self.create(rt, version, namespace, body, ctx), True
            raise errors.not_found(rt.group, rt.plural, name)
        _require_fresh(rt, name, current, meta.get("resourceVersion"))
        return self._apply_update(rt, version, current, body, ctx, subresource), False

    def patch(
        self,
        rt: ResourceType,
        version: str,
        namespace: str,
        name: str,
        content_type: str,
        patch_body: Any,
        ctx: Ctx,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        current = self._current(rt, namespace, name)
        shown = self.to_version(rt, version, current)
        if content_type == "application/merge-patch+json":
            if not isinstance(patch_body, dict):
                raise errors.bad_request("merge patch: the body must be a JSON object")
            patched = merge_patch(shown, patch_body)
        elif content_type == "application/json-patch+json":
            patched = json_patch(shown, patch_body)
        elif content_type == "application/strategic-merge-patch+json":
            if not rt.builtin:
                raise errors.unsupported_media_type(
                    ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
                )
            patched = strategic_merge_patch(shown, patch_body)
        elif content_type in ("application/apply-patch+yaml", "application/apply-patch+cbor"):
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                "server-side apply is not supported by the local hub; use a merge or JSON patch, or client-side "
                "`kubectl apply`",
            )
        else:
            raise errors.unsupported_media_type(("application/json", "application/yaml"), content_type)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object must be a JSON object")
        pmeta = _meta(patched)
        if pmeta.get("name", name) != name:
            raise errors.bad_request("metadata.name cannot be changed by a patch")
        _require_fresh(rt, name, current, pmeta.get("resourceVersion"))
        _require_uid(rt, name, current, pmeta.get("uid"))
        return self._apply_update(rt, version, current, patched, ctx, subresource)

    def _apply_update(
        self,
        rt: ResourceType,
        version: str,
        current: dict[str, Any],
        body: dict[str, Any],
        ctx: Ctx,
        subresource: str | None,
    ) -> dict[str, Any]:
        self._check_kind(rt, version, body)
        old = self.to_version(rt, version, current)
        old_meta = _meta(old)
        if subresource == "status" and rt.strategy is None:
            new = copy.copy(old)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
            new["metadata"] = dict(old_meta)
        elif subresource == "finalize":
            new = copy.copy(old)
            spec = dict(old.get("spec") or {})
            fins = (body.get("spec") or {}).get("finalizers") if isinstance(body.get("spec"), dict) else None
            spec["finalizers"] = list(fins or [])
            new["spec"] = spec
            new["metadata"] = dict(old_meta)
        else:
            new = dict(body)
            if rt.versions[version].status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            meta = dict(new.get("metadata") or {}) if isinstance(new.get("metadata"), dict) else {}
            if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
                raise errors.invalid(
                    rt.group, rt.kind, old_meta["name"], [cause("FieldValueInvalid", "metadata.uid", "Invalid value: field is immutable")]
                )
            for k in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            meta.pop("selfLink", None)
            new["metadata"] = meta
            if rt.strategy is not None:
                new = copy.deepcopy(new)
                rt.strategy.default(new)
                rt.strategy.prepare_update(new, old, subresource)
        new = self._admit(rt, version, new, old, ctx, subresource)
        self._validating_webhooks(rt, new, subresource)
        if subresource != "finalize":
            self._prepare_kind(rt, new, old, subresource)
        stored = self.to_storage(rt, new)
        meta = dict(stored["metadata"])
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        stored["metadata"] = meta
        if rt.has_generation:
            ignored = ("metadata", "status") if rt.versions[version].status else ("metadata",)
            if _without(stored, *ignored) != _without(current, *ignored):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if stored == current:
            return self._result(rt, version, current)  # no-op: no new resourceVersion, no event
        if ctx.dry_run:
            return self._result(rt, version, stored)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._held(rt, stored):
            self._finish_delete(rt, stored, current)
            return self._result(rt, version, stored)
        self.store.write(rt.bucket, MODIFIED, stored, current)
        if rt.bucket == CRD_BUCKET:
            self._register(resource_type_for(stored))
        return self._result(rt, version, stored)

    def _held(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """Whether something besides metadata.finalizers keeps the object (a namespace's spec.finalizers)."""
        if rt.bucket == NAMESPACE_BUCKET:
            return bool((obj.get("spec") or {}).get("finalizers"))
        return False

    # delete -------------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        version: str,
        namespace: str,
        name: str,
        options: dict[str, Any],
        ctx: Ctx,
    ) -> tuple[dict[str, Any], bool]:
        """DELETE. Returns (object as it is now, whether it is gone)."""
        current = self._current(rt, namespace, name)
        meta = _meta(current)
        pre = options.get("preconditions") or {}
        _require_uid(rt, name, current, pre.get("uid"))
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        policy = options.get("propagationPolicy")
        orphan = options.get("orphanDependents")
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        if policy is None:
            policy = "Background"
        if policy not in ("Foreground", "Background", "Orphan"):
            raise errors.invalid(
                rt.group,
                rt.kind,
                name,
                [cause("FieldValueNotSupported", "propagationPolicy", f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"')],
            )
        finalizers = list(meta.get("finalizers") or ())
        wanted = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)]
        if policy == "Foreground":
            wanted.append(FOREGROUND)
        elif policy == "Orphan":
            wanted.append(ORPHAN)
        deleting = bool(meta.get("deletionTimestamp"))
        if deleting:
            if set(wanted) != set(finalizers) and policy != "Background" and not ctx.dry_run:
                new = copy.copy(current)
                new["metadata"] = {**meta, "finalizers": wanted}
                self.store.write(rt.bucket, MODIFIED, new, current)
                return self._result(rt, version, new), False
            return self._result(rt, version, current), False
        if wanted or self._held(rt, current):
            new = copy.copy(current)
            nmeta = dict(meta)
            nmeta["deletionTimestamp"] = now_rfc3339()
            nmeta["deletionGracePeriodSeconds"] = 0
            if wanted:
                nmeta["finalizers"] = wanted
            else:
                nmeta.pop("finalizers", None)
            if rt.has_generation and nmeta.get("generation"):
                nmeta["generation"] = int(nmeta["generation"]) + 1
            new["metadata"] = nmeta
            if rt.bucket == NAMESPACE_BUCKET:
                new["status"] = {**(current.get("status") or {}), "phase": "Terminating"}
            if ctx.dry_run:
                return self._result(rt, version, new), False
            self.store.write(rt.bucket, MODIFIED, new, current)
            return self._result(rt, version, new), False
        final = copy.copy(current)
        final["metadata"] = dict(meta)
        if ctx.dry_run:
            return self._result(rt, version, final), True
        self._finish_delete(rt, final, current)
        return self._result(rt, version, final), True

    def _finish_delete(self, rt: ResourceType, final: dict[str, Any], current: dict[str, Any]) -> None:
        final["metadata"] = dict(final["metadata"])
        self.store.write(rt.bucket, DELETED, final, current)
        if rt.bucket == CRD_BUCKET:
            spec = final.get("spec") or {}
            self._unregister(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))

    def delete_collection(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        options: dict[str, Any],
        ctx: Ctx,
    ) -> list[dict[str, Any]]:
        listed = rt.storage_version if rt.webhook is not None else version  # only the stored objects are used
        result = self.list_objects(rt, listed, namespace, labels=labels, fields=fields)
        out = []
        for obj in result.raw:
            m = obj["metadata"]
            try:
                shown, _ = self.delete(rt, version, m.get("namespace", ""), m["name"], options, ctx)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            out.append(shown)
        return out

    # watch --------------------------------------------------------------------------------------

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str | None,
        *,
        version: str,
        send_initial: bool | None = None,
    ) -> tuple[Watcher, list[tuple[str, Event | dict[str, Any]]]]:
        """Register a watch; returns it with the events to send first.

        Raises ApiError 410 when `resource_version` is older than the retained history.
        """
        plain_fields = all(r.field.startswith("metadata.") for r in fields.requirements)
        convert = rt.from_storage is not None

        def matches(obj: dict[str, Any]) -> bool:
            if not labels.empty and not labels.matches(_meta(obj).get("labels")):
                return False
            if fields.empty:
                return True
            return fields.matches(obj if plain_fields or not convert else self.to_version(rt, version, obj))

        ns = namespace if rt.namespaced else None
        watcher = Watcher(rt.bucket, ns, matches, max_pending=self.store.max_pending)
        first: list[tuple[str, Event | dict[str, Any]]] = []
        rv_text = resource_version or ""
        initial = send_initial if send_initial is not None else rv_text in ("", "0")
        if initial:
            for obj in self.store.iter(rt.bucket, ns):
                if matches(obj):
                    event = Event(int(obj["metadata"]["resourceVersion"]), ADDED, obj, None)
                    event.encoded[("", "")] = self.store.encode_stored(rt.bucket, obj)
                    first.append((ADDED, event))
        if rv_text not in ("", "0"):
            try:
                since = int(rv_text)
            except ValueError as exc:
                raise errors.bad_request(f"invalid resource version {rv_text!r}") from exc
            if not initial:
                events = self.store.events_since(rt.bucket, since)
                if events is None:
                    oldest = self.store.oldest_resumable(rt.bucket)
                    raise errors.expired(f"too old resource version: {since} ({oldest})")
                for ev in events:
                    kind = watcher.classify(ev)
                    if kind is not None:
                        first.append((kind, ev))
        self.store.add_watcher(watcher)
        return watcher, first

    # garbage collection, namespace and CRD clean-up ---------------------------------------------

    def _observe(self, bucket: str, event: Event) -> None:
        meta = _meta(event.obj)
        if bucket == EVENT_BUCKET:
            self._track_event_ttl(meta, event.type)
        old_meta = _meta(event.old) if event.old is not None else {}
        items = self.gc_items
        before = len(items)
        if event.type == DELETED:
            uid = meta.get("uid", "")
            if uid in self.store.dependents:
                items.append(("owner-gone", uid))
            for ref in meta.get("ownerReferences") or ():
                owner_key = self.store.key_of_uid(ref.get("uid", ""))
                if owner_key is not None:
                    items.append(("foreground", owner_key))
            ns = meta.get("namespace")
            if ns:
                ns_obj = self.store.get(NAMESPACE_BUCKET, "", ns)
                if ns_obj is not None and _meta(ns_obj).get("deletionTimestamp"):
                    items.append(("namespace", ns))
            crd_name = _crd_name_of_bucket(bucket)
            if crd_name:
                crd = self.store.get(CRD_BUCKET, "", crd_name)
                if crd is not None and _meta(crd).get("deletionTimestamp"):
                    items.append(("crd", crd_name))
        else:
            refs = meta.get("ownerReferences")
            if refs and (event.type == ADDED or refs != old_meta.get("ownerReferences")):
                items.append(("dependent", (bucket, meta.get("namespace", ""), meta["name"])))
            if meta.get("deletionTimestamp"):
                key = (bucket, meta.get("namespace", ""), meta["name"])
                fins = meta.get("finalizers") or ()
                if FOREGROUND in fins:
                    items.append(("foreground", key))
                if ORPHAN in fins:
                    items.append(("orphan", key))
                if bucket == NAMESPACE_BUCKET:
                    items.append(("namespace", meta["name"]))
                if bucket == CRD_BUCKET:
                    items.append(("crd", meta["name"]))
        if len(items) != before and self.gc_wakeup is not None:
            self.gc_wakeup.set()

    def _track_event_ttl(self, meta: dict[str, Any], kind: str) -> None:
        key = (EVENT_BUCKET, meta.get("namespace", ""), meta.get("name", ""))
        if kind == DELETED:
            self.event_expiry.forget(key)
        elif self.event_expiry.touch(key, self.clock() + self.event_ttl) and self.gc_wakeup is not None:
            self.gc_wakeup.set()

    def expire_events(self) -> int:
        """Delete the Events whose time to live has run out (finalizers do not hold them, as
        etcd deletes a key whose lease expired); returns how many."""
        expired = 0
        for key in self.event_expiry.due(self.clock()):
            current = self.store.get(*key)
            if current is None:
                continue
            final = copy.copy(current)
            final["metadata"] = dict(_meta(current))
            self.store.write(EVENT_BUCKET, DELETED, final, current)
            expired += 1
        return expired

    async def _sleep_until_work(self, wakeup: asyncio.Event) -> None:
        """Wait for garbage-collector work or the next Event's expiry."""
        deadline = self.event_expiry.next_deadline()
        if deadline is None:
            await wakeup.wait()
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), max(0.0, deadline - self.clock()))
        wakeup.clear()

    async def run_gc(self) -> None:
        """Background worker: garbage collector, namespace controller, CRD clean-up, Event
        expiry."""
        self.gc_wakeup = asyncio.Event()
        if self.gc_items:
            self.gc_wakeup.set()
        # Objects stored before a restart may be waiting on the collector; their Events live
        # a full time to live from now.
        self._resume_pending()
        while True:
            if not self.gc_items:
                await self._sleep_until_work(self.gc_wakeup)
            try:
                self.expire_events()
            except Exception:
                log.exception("event expiry failed")
            processed = 0
            while self.gc_items:
                item = self.gc_items.popleft()
                try:
                    self._gc_step(*item)
                except ApiError as exc:
                    if exc.code not in (404, 409):
                        log.warning("garbage collector: %s on %s", exc.message, item)
                except Exception:
                    log.exception("garbage collector failed on %s", item)
                processed += 1
                if processed % 50 == 0:
                    await asyncio.sleep(0)
            await asyncio.sleep(0)

    def _resume_pending(self) -> None:
        for bucket, spaces in self.store.objects.items():
            for names in spaces.values():
                for obj in names.values():
                    self._observe(bucket, Event(0, MODIFIED, obj, None))

    def _gc_step(self, kind: str, arg: Any) -> None:
        if kind == "owner-gone":
            for key in self.store.dependents_of(arg):
                self._gc_dependent(key)
        elif kind == "dependent":
            self._gc_dependent(arg)
        elif kind == "foreground":
            self._gc_foreground(arg)
        elif kind == "orphan":
            self._gc_orphan(arg)
        elif kind == "namespace":
            self._gc_namespace(arg)
        elif kind == "crd":
            self._gc_crd(arg)

    def _internal_update(self, key: Key, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        rt = self.bucket_types.get(key[0])
        obj = self.store.get(*key)
        if rt is None or obj is None:
            return
        self._apply_update(rt, rt.storage_version, obj, change(copy.deepcopy(obj)), Ctx(internal=True), None)

    def _internal_delete(self, key: Key, policy: str) -> None:
        bucket, ns, name = key
        rt = self.bucket_types.get(bucket)
        obj = self.store.get(bucket, ns, name)
        if rt is None or obj is None or _meta(obj).get("deletionTimestamp"):
            return
        self.delete(rt, rt.storage_version, ns, name, {"propagationPolicy": policy}, Ctx(internal=True))

    def _owner_state(self, ref: dict[str, Any]) -> str:
        """'live', 'waiting' (owner in foreground deletion), 'absent' or 'unknown' (kind not served)."""
        owner = self.store.lookup_uid(ref.get("uid", ""))
        if owner is None:
            return "absent" if self.kind_for(ref.get("apiVersion", ""), ref.get("kind", "")) is not None else "unknown"
        om = _meta(owner)
        if om.get("deletionTimestamp") and FOREGROUND in (om.get("finalizers") or ()):
            return "waiting"
        return "live"

    def _gc_dependent(self, key: Key) -> None:
        obj = self.store.get(*key)
        if obj is None:
            return
        meta = _meta(obj)
        refs = meta.get("ownerReferences") or []
        if not refs or meta.get("deletionTimestamp"):
            return
        states = [self._owner_state(r) for r in refs]
        if "live" in states:
            if "absent" in states or "waiting" in states:
                keep_uids = {r.get("uid") for r, s in zip(refs, states, strict=True) if s in ("live", "unknown")}

                def drop(o: dict[str, Any]) -> dict[str, Any]:
                    o["metadata"]["ownerReferences"] = [r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") in keep_uids]
                    return o

                self._internal_update(key, drop)
            return
        if "unknown" in states:
            return
        self._internal_delete(key, "Foreground" if "waiting" in states else "Background")

    def _deleting_with(self, key: Key, finalizer: str) -> str | None:
        """The uid of the object at `key` if it is being deleted and still has `finalizer`."""
        obj = self.store.get(*key)
        if obj is None:
            return None
        meta = _meta(obj)
        if not meta.get("deletionTimestamp") or finalizer not in (meta.get("finalizers") or ()):
            return None
        uid: str = meta.get("uid", "")
        return uid

    def _gc_foreground(self, key: Key) -> None:
        uid = self._deleting_with(key, FOREGROUND)
        if uid is None:
            return
        blocking = False
        for dep_key in self.store.dependents_of(uid):
            self._gc_dependent(dep_key)
            dep = self.store.get(*dep_key)
            if dep is None:
                continue
            for ref in _meta(dep).get("ownerReferences") or ():
                if ref.get("uid") == uid and ref.get("blockOwnerDeletion"):
                    blocking = True
        if not blocking:
            self._internal_update(key, lambda o: _drop_finalizer(o, FOREGROUND))

    def _gc_orphan(self, key: Key) -> None:
        uid = self._deleting_with(key, ORPHAN)
        if uid is None:
            return

        def unlink(o: dict[str, Any]) -> dict[str, Any]:
            refs = [r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if refs:
                o["metadata"]["ownerReferences"] = refs
            else:
                o["metadata"].pop("ownerReferences", None)
            return o

        for dep_key in self.store.dependents_of(uid):
            self._internal_update(dep_key, unlink)
        self._internal_update(key, lambda o: _drop_finalizer(o, ORPHAN))

    def _namespaced_buckets(self) -> list[str]:
        return sorted(b for b, rt in self.bucket_types.items() if rt.namespaced and not rt.virtual)

    def _gc_namespace(self, name: str) -> None:
        ns_obj = self.store.get(NAMESPACE_BUCKET, "", name)
        if ns_obj is None or not _meta(ns_obj).get("deletionTimestamp"):
            return
        for bucket in self._namespaced_buckets():
            for obj in list(self.store.iter(bucket, name)):
                if not _meta(obj).get("deletionTimestamp"):
                    self._internal_delete((bucket, name, obj["metadata"]["name"]), "Background")
        if any(self.store.count(b, name) for b in self._namespaced_buckets()):
            return

        def finalize(o: dict[str, Any]) -> dict[str, Any]:
            spec = dict(o.get("spec") or {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER]
            o["spec"] = spec
            return o

        rt = self.bucket_types[NAMESPACE_BUCKET]
        current = self.store.get(NAMESPACE_BUCKET, "", name)
        if current is None:
            return
        self._apply_update(rt, "v1", current, finalize(copy.deepcopy(current)), Ctx(internal=True), "finalize")

    def _gc_crd(self, name: str) -> None:
        crd = self.store.get(CRD_BUCKET, "", name)
        if crd is None or not _meta(crd).get("deletionTimestamp"):
            return
        spec = crd.get("spec") or {}
        rt = self.types.get((spec.get("group", ""), (spec.get("names") or {}).get("plural", "")))
        if rt is not None:
            for obj in list(self.store.iter(rt.bucket, None)):
                m = obj["metadata"]
                if not m.get("deletionTimestamp"):
                    self._internal_delete((rt.bucket, m.get("namespace", ""), m["name"]), "Background")
            if self.store.count(rt.bucket):
                return
        self._internal_update((CRD_BUCKET, "", name), lambda o: _drop_finalizer(o, CRD_FINALIZER))


def _string_map_causes(
    meta: dict[str, Any], field: str, value_error: Callable[[str], str | None] | None
) -> list[dict[str, str]]:
    """Causes for `metadata.<field>` (labels, annotations): qualified-name keys, string values."""
    causes: list[dict[str, str]] = []
    where = f"metadata.{field}"
    values = meta.get(field)
    if values is not None and not isinstance(values, dict):
        return [cause("FieldValueTypeInvalid", where, "Invalid value: must be a map of strings")]
    for key, value in (values or {}).items():
        why = label_key_error(key)
        if why:
            causes.append(cause("FieldValueInvalid", where, f'Invalid value: "{key}": {why}'))
        if not isinstance(value, str):
            causes.append(cause("FieldValueTypeInvalid", f"{where}.{key}", "Invalid value: must be a string"))
        elif value_error is not None:
            why = value_error(value)
            if why:
                causes.append(cause("FieldValueInvalid", where, f'Invalid value: "{value}": {why}'))
    return causes


def _annotations_size_causes(meta: dict[str, Any]) -> list[dict[str, str]]:
    """kube-apiserver's bound on all annotations together: their keys' and values' bytes."""
    values = meta.get("annotations")
    if not isinstance(values, dict):
        return []
    size = sum(len(key.encode()) + len(value.encode()) for key, value in values.items() if isinstance(value, str))
    if size <= ANNOTATIONS_MAX_BYTES:
        return []
    return [cause("FieldValueTooLong", "metadata.annotations", f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes")]


def _require_uid(rt: ResourceType, name: str, current: dict[str, Any], uid: Any) -> None:
    """A UID precondition (DeleteOptions, or metadata.uid in a patch)."""
    have = _meta(current).get("uid")
    if uid and uid != have:
        raise errors.conflict(
            rt.group, rt.plural, name, f"Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
        )


def _require_fresh(rt: ResourceType, name: str, current: dict[str, Any], resource_version: Any) -> None:
    """Optimistic concurrency: a write naming a resourceVersion applies only to that version."""
    if resource_version and resource_version != _meta(current).get("resourceVersion"):
        raise errors.conflict(rt.group, rt.plural, name, errors.STALE)


def _drop_finalizer(obj: dict[str, Any], name: str) -> dict[str, Any]:
    fins = [f for f in obj["metadata"].get("finalizers") or [] if f != name]
    if fins:
        obj["metadata"]["finalizers"] = fins
    else:
        obj["metadata"].pop("finalizers", None)
    return obj


def _crd_name_of_bucket(bucket: str) -> str | None:
    group, _, plural = bucket.partition("/")
    if "." not in group:
        return None
    return f"{plural}.{group}"


def _generated(prefix: str) -> str:
    return prefix[:58] + "".join(random.choice(_GENERATE_ALPHABET) for _ in range(5))


def _encode_continue(rv: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(after)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        start = data["start"]
        return int(data["rv"]), (str(start[0]), str(start[1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion") from exc
