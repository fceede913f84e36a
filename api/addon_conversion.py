"""Conversion of the add-on kinds between addon.open-cluster-management.io/v1alpha1 and v1beta1.

Pure functions on the JSON dicts a ConversionReview carries; no I/O.

* ``convert(obj, api_version)`` returns a new dict of ``obj`` in ``api_version``;
* ``review(request)`` answers an ``apiextensions.k8s.io/v1`` ConversionReview (v1beta1 if asked so);
* ``ConversionError`` (a ValueError with ``field``, a JSON path, and ``message``).

OCM's rules (``ocm_rollout.api.addon_conversion_rules``)
--------------------------------------------------------
ClusterManagementAddOn (OCM api ``addon/v1beta1/conversion.go``):
 1. v1alpha1 ``spec.supportedConfigs[]`` <-> v1beta1 ``spec.defaultConfigs[]``: group and resource
    kept, ``defaultConfig.{name,namespace}`` <-> ``{name,namespace}``; an entry without a default
    gets ``name: __reserved_no_default__`` and that name (or an empty one) reads back as none.
 2. v1alpha1 ``spec.addOnConfiguration`` has no v1beta1 field (conversion-gen: "does not exist in
    peer-type"); OCM drops it.
 3. ``status.defaultconfigReferences`` (v1alpha1 spelling) <-> ``status.defaultConfigReferences``.
 4. Everything else (addOnMeta, installStrategy, installProgressions) is copied field by field.
ManagedClusterAddOn (``conversion.go`` and OCM ``pkg/addon/webhook/v1beta1/
managedclusteraddon_conversion.go``):
 5. v1alpha1 ``spec.installNamespace`` <-> v1beta1 annotation
    ``addon.open-cluster-management.io/v1alpha1-install-namespace`` (set when non-empty; taken
    and removed on the way back, an emptied annotation map removed).
 6. ``status.registrations[]``: signer ``kubernetes.io/kube-apiserver-client`` <-> ``type:
    kubeClient`` with ``kubeClient.subject.{user,groups}`` (organization units dropped); any other
    signer <-> ``type: customSigner`` with ``customSigner.{signerName, subject}``, v1alpha1
    ``subject.organizationUnit`` <-> v1beta1 ``subject.organizationUnits``.
 7. v1alpha1 ``status.kubeClientDriver`` -> ``kubeClient.driver`` of every kubeClient
    registration; back: the driver of the first kubeClient registration that has a kubeClient.
 8. v1alpha1 ``status.configReferences[].{name,namespace}`` (deprecated) are dropped; back they
    are copied from ``desiredConfig`` (``name: ""`` without one, as Go writes it).
 9. v1alpha1 ``status.addOnConfiguration`` is dropped (no v1beta1 field).
AddOnDeploymentConfig and AddOnTemplate: both versions have one schema (the CRDs differ only in
descriptions; OCM has no hand-written rule, no v1beta1 Go type for AddOnTemplate, and serves both
kinds with conversion strategy None, its webhook only CMA and MCA): only ``apiVersion`` changes.

Refused (``ConversionError``): a v1alpha1 ``defaultConfig.name`` equal to the reserved name (OCM
converts it silently and v1beta1 reads it as "no default": a change of meaning, not a loss); an
unknown kind or version; a field of the wrong JSON type. Our annotations below are never a
reason to refuse: on the wrong version, or malformed, they are dropped and the object converts as
if they were absent (a client cannot make a stored object unreadable in the other version). The
API server refuses the reserved name before it is stored (a CEL rule of the v1alpha1 CRD).

Where we differ from OCM's webhook in shape, not meaning: a field absent on one side stays absent
on the other (Go writes zero values of required fields and of non-pointer structs, e.g.
``kubeClient.subject: {user: ""}``; we write only ``name: ""`` of rule 8 and ``signerName: ""`` of
a customSigner registration without ``customSigner``); an emptied or empty annotation map is
dropped, as Go's omitempty does; fields unknown to the schema are copied where OCM's rules leave
the object alone (the API server prunes them anyway).

Lossless round trips (beyond OCM)
---------------------------------
OCM loses information on rules 2, 6-9 and wherever a field is absent on one side but written
as a zero value on the other. OCM's only convention for keeping it is rule 5's annotation, named
after the version whose data it holds, so: after applying OCM's rules, we convert the result
back with OCM's rules, and when that differs from the input, the differences ride along in one
annotation on the converted object:

* ``addon.open-cluster-management.io/v1alpha1-fields`` on a v1beta1 object, v1alpha1 data:
  ``spec.addOnConfiguration`` (CMA) and ``status.addOnConfiguration`` (MCA), deprecated, no
  v1beta1 field; ``kubeClientDriver`` with no kubeClient registration to hold it; the
  ``organizationUnit`` of a kube-apiserver-client registration (v1beta1 ``kubeClient.subject`` has
  none); a configReference's deprecated name/namespace that is not its desiredConfig's; the
  v1alpha1-install-namespace annotation on a v1alpha1 object (rule 5 would turn it into
  installNamespace); an empty list or map Go omits
  (``supportedConfigs: []``, ``annotations: {}``).
* ``addon.open-cluster-management.io/v1beta1-fields`` on a v1alpha1 object, v1beta1 data:
  kubeClient drivers that are not all the same (v1alpha1 has one per add-on), a kubeClient
  registration without ``kubeClient`` or with one but no driver; a customSigner registration
  named ``kubernetes.io/kube-apiserver-client`` (would come back as kubeClient) or without
  ``customSigner``; a namespace beside the reserved name; ``defaultConfigs: []``.

Its value is JSON: a list of ``{"path": [...], "from": <what OCM's rules give>, "to": <what the
object had>}`` (``from``/``to`` left out for an absent field; paths only into spec, status,
labels and annotations, the metadata a conversion webhook may change). Converting back removes
the annotation and puts ``to`` at each path whose value is still ``from``: a field a client
changed since keeps the client's value. Hence v1alpha1 -> v1beta1 -> v1alpha1 and v1beta1 ->
v1alpha1 -> v1beta1 give back the input, for every object that carries neither annotation (and a
v1beta1 object as OCM writes it needs none; ``tests/unit/test_addon_conversion.py``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, Final

from ocm_rollout.api import addon_conversion_rules as rules
from ocm_rollout.api import constants
from ocm_rollout.api.addon_conversion_rules import V1ALPHA1, V1BETA1, ConversionError, Obj

__all__ = [
    "ANNOTATION_V1ALPHA1_FIELDS",
    "ANNOTATION_V1BETA1_FIELDS",
    "KINDS",
    "V1ALPHA1",
    "V1BETA1",
    "ConversionError",
    "convert",
    "review",
]

ANNOTATION_V1ALPHA1_FIELDS: Final = constants.ANNOTATION_V1ALPHA1_FIELDS
ANNOTATION_V1BETA1_FIELDS: Final = constants.ANNOTATION_V1BETA1_FIELDS
REVIEW_API_VERSION: Final = "apiextensions.k8s.io/v1"
REVIEW_API_VERSION_BETA: Final = "apiextensions.k8s.io/v1beta1"

Rule = Callable[[Obj], Obj]
# kind -> (v1alpha1 -> v1beta1, v1beta1 -> v1alpha1)
KINDS: Final[dict[str, tuple[Rule, Rule]]] = {
    "ClusterManagementAddOn": (rules.cma_to_v1beta1, rules.cma_to_v1alpha1),
    "ManagedClusterAddOn": (rules.mca_to_v1beta1, rules.mca_to_v1alpha1),
    "AddOnDeploymentConfig": (rules.same_schema_to_v1beta1, rules.same_schema_to_v1alpha1),
    "AddOnTemplate": (rules.same_schema_to_v1beta1, rules.same_schema_to_v1alpha1),
}
_VERSIONS: Final = (V1ALPHA1, V1BETA1)
_ABSENT: Final = object()


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """A new dict of ``obj`` in ``api_version``; ``obj`` is left untouched."""
    if not isinstance(obj, dict):
        raise ConversionError("", "expected an object")
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ConversionError("kind", f"cannot convert kind {kind!r}")
    source = obj.get("apiVersion")
    if source not in _VERSIONS:
        raise ConversionError("apiVersion", f"cannot convert from {source!r}")
    if api_version not in _VERSIONS:
        raise ConversionError("apiVersion", f"cannot convert to {api_version!r}")
    if source == api_version:
        return copy.deepcopy(obj)
    to_beta, to_alpha = KINDS[kind]
    if api_version == V1BETA1:
        return _cross(obj, to_beta, to_alpha, ANNOTATION_V1BETA1_FIELDS, ANNOTATION_V1ALPHA1_FIELDS)
    return _cross(obj, to_alpha, to_beta, ANNOTATION_V1ALPHA1_FIELDS, ANNOTATION_V1BETA1_FIELDS)


def _cross(obj: Obj, there: Rule, back: Rule, carried: str, carrying: str) -> Obj:
    """OCM's rule ``there``, the fields the source carried over from the target version put back,
    and what ``back`` would not restore carried along (``carried`` on the source's version,
    ``carrying`` on the target's)."""
    source = copy.deepcopy(obj)
    # An annotation of ours that only the other version carries is dropped (it is recomputed):
    # anything a client writes there cannot make a stored object unreadable in the other version.
    if _annotations(source).pop(carrying, None) is not None:
        _without_empty_metadata(source)
    entries = _take_entries(source, carried)
    out = _without_empty_metadata(there(copy.deepcopy(source)))
    _restore(out, entries)
    found: list[Obj] = []
    _diff(source, _without_empty_metadata(back(copy.deepcopy(out))), [], found)
    if found:
        metadata = out.setdefault("metadata", {})
        metadata.setdefault("annotations", {})[carrying] = json.dumps(
            found, separators=(",", ":"), sort_keys=True
        )
    return out


def _annotation_path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def _annotations(obj: Obj) -> Obj:
    metadata = rules.obj_at(obj, "metadata", "")
    if metadata is None:
        return {}
    return rules.obj_at(metadata, "annotations", "metadata") or {}


def _without_empty_metadata(obj: Obj) -> Obj:
    """``obj`` without an empty annotation map, then without empty metadata (as Go writes it:
    OCM's webhook never answers ``annotations: {}``), so that adding our annotation and taking it
    away again gives back the same object."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        if metadata.get("annotations") == {}:
            del metadata["annotations"]
        if not metadata:
            del obj["metadata"]
    return obj


def _take_entries(obj: Obj, key: str) -> list[Obj]:
    """Remove annotation ``key`` (and the metadata it leaves empty) and parse it."""
    annotations = _annotations(obj)
    if key not in annotations:
        return []
    text = annotations.pop(key)
    _without_empty_metadata(obj)
    try:
        entries = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        entries = None
    if not isinstance(entries, list) or not all(_valid_entry(entry) for entry in entries):
        return []  # not ours to read (a client wrote it): ignored, and gone from the result
    return entries


def _valid_entry(entry: Any) -> bool:
    """A path into spec, status, or the labels and annotations (the only metadata a conversion
    webhook may change); steps are keys and list indexes."""
    if not isinstance(entry, dict) or set(entry) - {"path", "from", "to"}:
        return False
    path = entry.get("path")
    if not isinstance(path, list) or not path:
        return False
    if not all(isinstance(step, str | int) and not isinstance(step, bool) for step in path):
        return False
    if path[0] == "metadata":
        return len(path) == 1 or path[1] in ("annotations", "labels")
    return path[0] in ("spec", "status")


def _same(left: Any, right: Any) -> bool:
    """JSON equality: ``1``, ``1.0`` and ``true`` are three different values."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return bool(left == right)


def _diff(original: Any, derived: Any, path: list[str | int], found: list[Obj]) -> None:
    """Append an entry for each top-most place where ``derived`` differs from ``original``."""
    if _same(original, derived):
        return
    if isinstance(original, dict) and isinstance(derived, dict):
        for key in sorted(original.keys() | derived.keys()):
            _diff(original.get(key, _ABSENT), derived.get(key, _ABSENT), [*path, key], found)
        return
    if isinstance(original, list) and isinstance(derived, list) and len(original) == len(derived):
        for index, (left, right) in enumerate(zip(original, derived, strict=True)):
            _diff(left, right, [*path, index], found)
        return
    entry: Obj = {"path": path}
    if derived is not _ABSENT:
        entry["from"] = derived
    if original is not _ABSENT:
        entry["to"] = original
    found.append(entry)


def _restore(obj: Obj, entries: list[Obj]) -> None:
    """Put each entry's ``to`` back where the value is still the entry's ``from``."""
    for entry in entries:
        *parents, last = entry["path"]
        parent: Any = obj
        for step in parents:
            parent = _step(parent, step)
        if not _same(_step(parent, last), entry.get("from", _ABSENT)):
            continue
        into_dict = isinstance(parent, dict) and isinstance(last, str)
        if "to" in entry and (into_dict or "from" in entry):
            parent[last] = copy.deepcopy(entry["to"])
        elif "to" not in entry and into_dict:
            del parent[last]


def _step(node: Any, key: str | int) -> Any:
    """``node[key]``, or _ABSENT when there is no such place (a list index only when in range)."""
    if isinstance(node, dict) and isinstance(key, str):
        return node.get(key, _ABSENT)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return _ABSENT


def review(request: dict[str, Any]) -> dict[str, Any]:
    """The ConversionReview answering ``request``: every object converted, in order, or a
    Failure naming the first object that cannot be (and then no convertedObjects)."""
    body = request.get("request") if isinstance(request, dict) else None
    body = body if isinstance(body, dict) else {}
    response: Obj = {"uid": body.get("uid", "")}
    desired = body.get("desiredAPIVersion")
    objects = body.get("objects")
    converted: list[Obj] = []
    failure = ""
    if not isinstance(objects, list):
        failure = "request.objects: expected a list"
    elif desired not in _VERSIONS:
        failure = f"request.desiredAPIVersion: cannot convert to {desired!r}"
    for index, item in enumerate(objects if isinstance(objects, list) and not failure else []):
        try:
            converted.append(convert(item, str(desired)))
        except ConversionError as err:
            failure = f"{_describe(item, index)}: {err}"
            break
    if failure:
        response["result"] = {"status": "Failure", "message": failure}
    else:
        response["convertedObjects"] = converted
        response["result"] = {"status": "Success"}
    # the API server reads the answer in the version it asked in; both have this shape
    asked = request.get("apiVersion") if isinstance(request, dict) else None
    api_version = asked if asked in (REVIEW_API_VERSION, REVIEW_API_VERSION_BETA) else REVIEW_API_VERSION
    return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


def _describe(item: Any, index: int) -> str:
    """``objects[2] (ManagedClusterAddOn cluster1/helloworld)`` for the failure message."""
    if not isinstance(item, dict):
        return f"objects[{index}]"
    metadata = item.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = str(metadata.get("name") or "")
    namespace = metadata.get("namespace")
    full = f"{namespace}/{name}" if namespace else name
    words = " ".join(str(word) for word in (item.get("kind"), full) if word)
    return f"objects[{index}] ({words})" if words else f"objects[{index}]"
