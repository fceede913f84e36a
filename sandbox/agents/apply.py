"""Applying a ManifestWork's manifests to a simulated cluster (pure: the cluster is an argument).

For each manifest, in the order and with the words a real cluster and OCM's work agent use:

1. the manifest must be an object with ``apiVersion`` and ``kind``;
2. discovery must serve the kind in that version (``kinds.BUILTIN`` or an applied CRD), else
   ``the server doesn't have a resource type "Ghost"`` and an empty ``resourceMeta.resource``;
   a cluster-scoped kind's ``metadata.namespace`` is dropped (as the agent does);
3. the name must be set and usable in a URL (client-go's checks);
4. a namespaced object needs a namespace (without one the request goes to the cluster-wide
   collection: ``the server does not allow this method on the requested resource``) that exists
   on the cluster (``namespaces "foo" not found``; a Namespace created by the same work counts);
5. kube-apiserver validates the name for the kind (``objectnames``) and a
   CustomResourceDefinition as a whole (``ocm_rollout.sandbox.crd.validate_crd``): 422 Invalid messages.

A work's Namespaces and CustomResourceDefinitions are applied first (OCM's agent orders them so),
so its other manifests may rely on them whatever the order in the spec. What applied becomes a
``ClusterObject`` for the cluster's store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ocm_rollout.sandbox import crd as crd_validation
from ocm_rollout.sandbox import errors as api_errors
from ocm_rollout.sandbox.agents.cluster import ClusterObject, ClusterView
from ocm_rollout.sandbox.agents.kinds import CRD_GROUP, CRD_KIND, crd_resources, is_crd
from ocm_rollout.sandbox.agents.objectnames import client_refusal, go_quote, invalid_name, name_errors
from ocm_rollout.sandbox.agents.resources import ManifestIdentity, identify

METHOD_NOT_ALLOWED = "the server does not allow this method on the requested resource"


def namespace_not_found(namespace: str) -> str:
    return f"namespaces {go_quote(namespace)} not found"


@dataclass(frozen=True)
class ManifestResult:
    """One manifest after the apply: its identity (``error`` None: applied) and the object it is."""

    identity: ManifestIdentity
    obj: ClusterObject | None

    @property
    def error(self) -> str | None:
        return self.identity.error


@lru_cache(maxsize=128)
def _crd_error(text: str) -> str | None:
    crd = json.loads(text)
    causes = crd_validation.validate_crd(crd)
    if not causes:
        return None
    name = str((crd.get("metadata") or {}).get("name") or "")
    return api_errors.invalid(CRD_GROUP, CRD_KIND, name, causes).message


def crd_error(manifest: Mapping[str, Any]) -> str | None:
    """kube-apiserver's 422 message for an invalid CustomResourceDefinition manifest, if it is."""
    return _crd_error(json.dumps(manifest, sort_keys=True, default=str))


def _refusal(identity: ManifestIdentity, manifest: Mapping[str, Any], view: ClusterView) -> str | None:
    meta = identity.meta
    group, kind, name, namespace = meta["group"], meta["kind"], meta["name"], meta["namespace"]
    resource = view.discovery.lookup(group, meta["version"], kind)
    assert resource is not None  # identify found it
    refusal = client_refusal(name, namespace)
    if refusal is not None:
        return refusal
    if resource.namespaced:
        if not namespace:
            return METHOD_NOT_ALLOWED
        if namespace not in view.namespaces:
            return namespace_not_found(namespace)
    if is_crd(group, kind):
        return crd_error(manifest)
    problems = name_errors(group, kind, name)
    return invalid_name(resource.group_kind, name, problems) if problems else None


def _object(identity: ManifestIdentity, manifest: Mapping[str, Any]) -> ClusterObject:
    meta = identity.meta
    serves = crd_resources(manifest) if is_crd(meta["group"], meta["kind"]) else ()
    return ClusterObject(meta["group"], meta["kind"], meta["resource"], meta["namespace"], meta["name"], serves)


def _apply_one(ordinal: int, manifest: Any, view: ClusterView) -> ManifestResult:
    identity = identify(ordinal, manifest, view.discovery)
    if identity.error is not None:
        return ManifestResult(identity, None)
    assert isinstance(manifest, Mapping)
    error = _refusal(identity, manifest, view)
    if error is not None:
        return ManifestResult(replace(identity, error=error), None)
    return ManifestResult(identity, _object(identity, manifest))


def _foundation(manifest: Any) -> bool:
    """Applied before the rest of its work: Namespaces and CustomResourceDefinitions."""
    if not isinstance(manifest, Mapping):
        return False
    return (manifest.get("apiVersion"), manifest.get("kind")) == ("v1", "Namespace") or (
        str(manifest.get("apiVersion", "")).startswith(CRD_GROUP + "/") and manifest.get("kind") == CRD_KIND
    )


def apply_manifests(manifests: Sequence[Any], view: ClusterView) -> list[ManifestResult]:
    """The result of applying ``manifests`` (one work) to a cluster seen as ``view``."""
    created = [
        result.obj
        for ordinal, manifest in enumerate(manifests)
        if _foundation(manifest) and (result := _apply_one(ordinal, manifest, view)).obj is not None
    ]
    view = view.with_objects(created)
    return [_apply_one(ordinal, manifest, view) for ordinal, manifest in enumerate(manifests)]
