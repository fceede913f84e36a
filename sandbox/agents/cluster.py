"""The objects on one simulated managed cluster (a pure, in-memory data structure).

A simulated cluster has no API server of its own; what it holds is derived from the
ManifestWorks its agent applied. ``ClusterObjects`` records, per work, the objects that work's
last apply created (``record``), forgets them when the work is cleaned up (``release``), and keeps
those the work's ``deleteOption`` orphans. An object stays on the cluster while any work still
holds it (two works may apply the same Namespace), as OCM's agent only deletes an object once no
AppliedManifestWork owns it.

From the objects follow what the agent checks a manifest against (``ClusterView``): which
namespaces exist (the cluster's own, ``DEFAULT_NAMESPACES``, plus applied Namespaces) and which
kinds the cluster serves (``kinds.BUILTIN`` plus those of applied CustomResourceDefinitions).

Nothing here has to survive a restart: ``from_works`` rebuilds the store from the works' specs and
statuses (a manifest whose ``Applied`` condition is True is on the cluster). Only objects orphaned
by works deleted before the restart are forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.conditions import find_condition
from ocm_rollout.sandbox.agents.kinds import (
    BUILTIN,
    BUILTIN_RESOURCES,
    ApiResource,
    Discovery,
    crd_resources,
    is_crd,
)

# The namespaces of a managed cluster before any work lands: Kubernetes' own and the
# klusterlet's (its agent namespace, and the one it makes for add-on agents).
DEFAULT_NAMESPACES: frozenset[str] = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "open-cluster-management-agent",
        names.DEFAULT_ADDON_INSTALL_NAMESPACE,
    }
)

PROPAGATION_ORPHAN = "Orphan"
PROPAGATION_SELECTIVELY_ORPHAN = "SelectivelyOrphan"


@dataclass(frozen=True)
class ClusterObject:
    """One object on the cluster. ``serves``: for a CustomResourceDefinition, the kinds it adds."""

    group: str
    kind: str
    resource: str
    namespace: str  # "" for a cluster-scoped object
    name: str
    serves: tuple[ApiResource, ...] = ()

    @property
    def is_namespace(self) -> bool:
        return self.group == "" and self.kind == "Namespace"


@dataclass(frozen=True)
class ClusterView:
    """What an apply is checked against: the namespaces and the served kinds."""

    namespaces: frozenset[str]
    discovery: Discovery

    def with_objects(self, objects: Iterable[ClusterObject]) -> ClusterView:
        """The view once ``objects`` exist too (what a work creates for itself)."""
        added = list(objects)
        if not added:
            return self
        namespaces = self.namespaces | {o.name for o in added if o.is_namespace}
        served = [r for o in added for r in o.serves]
        discovery = Discovery([*self.discovery.resources(), *served]) if served else self.discovery
        return ClusterView(namespaces, discovery)


def view_of(objects: Iterable[ClusterObject]) -> ClusterView:
    """The view of a cluster holding ``objects`` besides its defaults."""
    namespaces = set(DEFAULT_NAMESPACES)
    served: list[ApiResource] = []
    for obj in objects:
        if obj.is_namespace:
            namespaces.add(obj.name)
        served.extend(obj.serves)
    # the built-in resources alone (nearly every cluster) share one Discovery
    return ClusterView(frozenset(namespaces), Discovery([*BUILTIN_RESOURCES, *served]) if served else BUILTIN)


EMPTY_VIEW = view_of(())


def orphaned(obj: ClusterObject, delete_option: Mapping[str, Any] | None) -> bool:
    """Whether a work's ``deleteOption`` leaves ``obj`` on the cluster (OCM's OwnedByTheWork, negated)."""
    option = delete_option or {}
    policy = option.get("propagationPolicy")
    if policy == PROPAGATION_ORPHAN:
        return True
    if policy != PROPAGATION_SELECTIVELY_ORPHAN:
        return False
    rules = (option.get("selectivelyOrphans") or {}).get("orphaningRules") or ()
    return any(
        isinstance(rule, Mapping)
        and rule.get("group", "") == obj.group
        and rule.get("resource", "") == obj.resource
        and rule.get("namespace", "") == obj.namespace
        and rule.get("name", "") == obj.name
        for rule in rules
    )


class ClusterObjects:
    """The objects on one cluster, by the work that applied them (see the module docstring)."""

    def __init__(self) -> None:
        self._by_work: dict[str, frozenset[ClusterObject]] = {}
        self._orphans: set[ClusterObject] = set()
        self._shape: tuple[frozenset[str], frozenset[ApiResource]] | None = None  # until the next change

    def objects(self, excluding: str | None = None) -> set[ClusterObject]:
        """Every object on the cluster (those only ``excluding`` holds left out)."""
        out = set(self._orphans)
        for work, held in self._by_work.items():
            if work != excluding:
                out.update(held)
        return out

    def held_by(self, work: str) -> frozenset[ClusterObject]:
        return self._by_work.get(work, frozenset())

    def view(self, excluding: str | None = None) -> ClusterView:
        """The view for applying work ``excluding`` (its own earlier objects are replaced)."""
        return view_of(self.objects(excluding))

    def shape(self) -> tuple[frozenset[str], frozenset[ApiResource]]:
        """What other works' applies depend on (namespaces, served kinds); a change re-checks them.
        Computed once per change of the objects."""
        if self._shape is None:
            view = self.view()
            self._shape = (view.namespaces, frozenset(view.discovery.resources()))
        return self._shape

    def record(
        self, work: str, objects: Iterable[ClusterObject], delete_option: Mapping[str, Any] | None = None
    ) -> None:
        """``work`` now holds ``objects``; those it held before and dropped go, unless orphaned."""
        new = frozenset(objects)
        if not self._orphans and new == self.held_by(work):
            return  # the same objects again (e.g. the status write after the apply): nothing changes
        self._shape = None
        for dropped in self.held_by(work) - new:
            if orphaned(dropped, delete_option):
                self._orphans.add(dropped)
        if new:
            self._by_work[work] = new
        else:
            self._by_work.pop(work, None)
        self._orphans -= new
        self._prune_orphans()

    def release(self, work: str, delete_option: Mapping[str, Any] | None = None) -> None:
        """``work`` was cleaned up: its objects go, except those its ``deleteOption`` orphans."""
        self.record(work, (), delete_option)

    def _prune_orphans(self) -> None:
        """An orphan in a namespace that no longer exists went with its namespace."""
        if not self._orphans:
            return
        namespaces = self.view().namespaces
        self._orphans = {o for o in self._orphans if not o.namespace or o.namespace in namespaces}

    @classmethod
    def from_works(cls, works: Iterable[Mapping[str, Any]]) -> ClusterObjects:
        """The store of a cluster whose works are ``works`` (after a restart)."""
        store = cls()
        for work in works:
            name = str((work.get("metadata") or {}).get("name") or "")
            held = applied_objects(work)
            if name and held:
                store._by_work[name] = frozenset(held)
        return store


def _crd_manifest(manifests: Sequence[Any], name: str) -> Mapping[str, Any] | None:
    for manifest in manifests:
        if (
            isinstance(manifest, Mapping)
            and str(manifest.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
            and manifest.get("kind") == "CustomResourceDefinition"
            and (manifest.get("metadata") or {}).get("name") == name
        ):
            return manifest
    return None


def applied_objects(work: Mapping[str, Any]) -> list[ClusterObject]:
    """The objects a work's status says are applied (its manifests with ``Applied`` True)."""
    manifests = ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []
    out = []
    for entry in ((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or []:
        meta = entry.get("resourceMeta") or {}
        applied = find_condition(entry.get("conditions"), names.MANIFEST_APPLIED)
        if applied is None or applied.get("status") != "True" or not meta.get("resource") or not meta.get("name"):
            continue
        group, kind, name = str(meta.get("group") or ""), str(meta.get("kind") or ""), str(meta["name"])
        serves: tuple[ApiResource, ...] = ()
        if is_crd(group, kind):
            crd = _crd_manifest(manifests, name)
            serves = crd_resources(crd) if crd is not None else ()
        out.append(
            ClusterObject(group, kind, str(meta["resource"]), str(meta.get("namespace") or ""), name, serves)
        )
    return out
