"""The kinds the differential sequences exercise: built-ins and every served version of our CRDs,
each with its paths and a valid object to create."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.crdgen import generate_crds

JSON = Any


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    status: bool  # has a status subresource
    spec: JSON  # a valid spec (None: the kind has no spec, e.g. a ConfigMap's data)
    extra: JSON = None  # other top-level fields of a valid object

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.version}" + (f".{self.group.split('.')[0]}" if self.group else "")

    def collection(self) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/namespaces/{{ns}}/{self.plural}" if self.namespaced else f"{base}/{self.plural}"

    def path(self, name: str) -> str:
        return f"{self.collection()}/{name}"

    def name(self, base: str) -> str:
        """An object name unique to the sequence (cluster-scoped names carry the namespace)."""
        return base if self.namespaced else f"{{ns}}-{base}"

    def body(self, name: str, **metadata: Any) -> JSON:
        obj: JSON = {"apiVersion": self.api_version, "kind": self.kind, "metadata": {"name": name, **metadata}}
        if self.spec is not None:
            obj["spec"] = copy.deepcopy(self.spec)
        if self.extra:
            obj.update(copy.deepcopy(self.extra))
        return obj

    def changed(self, obj: JSON) -> JSON:
        """``obj`` with a change to its main resource (a label, and data or spec where it can)."""
        out = copy.deepcopy(obj)
        out["metadata"].setdefault("labels", {})["changed"] = "yes"
        if "data" in out:
            out["data"]["extra"] = "eHRyYQ==" if self.plural == "secrets" else "extra"
        return out


# Valid specs of our kinds (a field each where the schema lets one be changed).
CRD_SPECS: dict[str, JSON] = {
    "addondeploymentconfigs": {"customizedVariables": [{"name": "V", "value": "1"}]},
    "addontemplates": {"addonName": "example", "agentSpec": {"workload": {"manifests": []}}},
    "clustermanagementaddons": {"addOnMeta": {"displayName": "example"}},
    "managedclusteraddons": {"installNamespace": "example"},
    "addonplacementscores": None,
    "managedclusters": {"hubAcceptsClient": True},
    "managedclustersetbindings": {"clusterSet": "default"},
    "managedclustersets": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}},
    "placementdecisions": None,
    "placements": {"numberOfClusters": 2},
    "manifestworkreplicasets": {
        "cascadeDeletionPolicy": "Background",
        "placementRefs": [{"name": "p", "rolloutStrategy": {"type": "All"}}],
        "manifestWorkTemplate": {"workload": {"manifests": []}},
    },
    "manifestworks": {"workload": {"manifests": []}},
}

# A change to each spec (a merge patch of ``spec``): the generation goes up.
SPEC_CHANGES: dict[str, JSON] = {
    "clustermanagementaddons": {"addOnMeta": {"displayName": "changed"}},
    "managedclusteraddons": {"installNamespace": "changed"},
    "managedclusters": {"hubAcceptsClient": False},
    "managedclustersetbindings": {"clusterSet": "other"},
    "managedclustersets": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}},
    "placements": {"numberOfClusters": 3},
    "manifestworkreplicasets": {"cascadeDeletionPolicy": "Orphan"},
    "manifestworks": {"deleteOption": {"propagationPolicy": "Orphan"}},
}


def crd_kinds() -> list[Kind]:
    kinds = []
    for crd in generate_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            kinds.append(Kind(
                spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"],
                spec["scope"] == "Namespaced", "status" in (version.get("subresources") or {}),
                CRD_SPECS.get(spec["names"]["plural"]),
            ))
    return kinds


BUILTINS = [
    Kind("", "v1", "configmaps", "ConfigMap", True, False, None, {"data": {"a": "1"}}),
    Kind("", "v1", "secrets", "Secret", True, False, None, {"data": {"a": "MQ=="}, "type": "Opaque"}),
    Kind("", "v1", "serviceaccounts", "ServiceAccount", True, False, None),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True, False, {"holderIdentity": "a", "leaseDurationSeconds": 15}),
    Kind("rbac.authorization.k8s.io", "v1", "roles", "Role", True, False, None,
         {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    Kind("apps", "v1", "controllerrevisions", "ControllerRevision", True, False, None, {"revision": 1, "data": {"x": 1}}),
]

CRDS = crd_kinds()
ALL = BUILTINS + CRDS


def by_plural(plural: str, version: str | None = None) -> Kind:
    for kind in ALL:
        if kind.plural == plural and (version is None or kind.version == version):
            return kind
    raise KeyError(plural)
