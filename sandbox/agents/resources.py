"""The simulated spoke: resource identity of each manifest and the live object it becomes.

A real work agent applies each manifest to the managed cluster's API server and later reads the
object back (for ``Available``, status feedback and condition rules). A simulated cluster has no
API server, so the live object is derived from the manifest:

- a manifest that carries its own ``status`` is taken as it is (this lets a user script exact
  feedback values);
- otherwise the status of well-known workload kinds (Deployment, StatefulSet, ReplicaSet,
  DaemonSet, Job, Pod) is synthesised for the object's health: ``progressing`` (just applied,
  nothing ready yet), ``ready`` (rolled out) or ``broken`` (the rollout failed);
- any other kind has no status.

Fields that Kubernetes omits when zero (``readyReplicas``, ``availableReplicas``...) are omitted
here as well, so feedback rules see what they would see on a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ocm_rollout.sandbox.agents.feedback import split_api_version
from ocm_rollout.sandbox.agents.kinds import BUILTIN, Discovery, unknown_kind_error

# Nodes of every simulated cluster (what a DaemonSet is scheduled on).
SIMULATED_NODES = 3


class Health(StrEnum):
    PROGRESSING = "progressing"
    READY = "ready"
    BROKEN = "broken"


@dataclass(frozen=True)
class ManifestIdentity:
    """``resourceMeta`` of one manifest, and why it cannot be applied (``error``) if so."""

    meta: dict[str, Any]
    error: str | None

    @property
    def complete(self) -> bool:
        """What the status controller needs to read the object back."""
        return bool(self.meta["resource"] and self.meta["version"] and self.meta["name"])

    @property
    def key(self) -> tuple[str, ...]:
        """Identity used to carry a manifest's conditions over when the spec changes."""
        if self.error is not None and not self.meta["kind"]:
            return ("#ordinal", str(self.meta["ordinal"]))
        m = self.meta
        return (m["group"], m["version"], m["kind"], m["resource"], m["namespace"], m["name"])


def identify(ordinal: int, manifest: Any, discovery: Discovery = BUILTIN) -> ManifestIdentity:
    """The resourceMeta written for ``manifest`` at index ``ordinal`` of the spec, mapped through
    ``discovery`` as OCM's agent does: a kind it does not serve has no resource (and cannot be
    applied); a cluster-scoped kind has no namespace."""
    meta: dict[str, Any] = {
        "ordinal": ordinal,
        "group": "",
        "version": "",
        "kind": "",
        "resource": "",
        "name": "",
        "namespace": "",
    }
    if not isinstance(manifest, Mapping):
        return ManifestIdentity(meta, "the manifest is not a JSON object")
    api_version = manifest.get("apiVersion")
    kind = manifest.get("kind")
    if not isinstance(api_version, str) or not api_version:
        return ManifestIdentity(meta, "Object 'apiVersion' is missing in the manifest")
    if not isinstance(kind, str) or not kind:
        return ManifestIdentity(meta, "Object 'Kind' is missing in the manifest")
    group, version = split_api_version(api_version)
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = metadata.get("name")
    namespace = metadata.get("namespace")
    meta.update(
        group=group,
        version=version,
        kind=kind,
        name=name if isinstance(name, str) else "",
        namespace=namespace if isinstance(namespace, str) else "",
    )
    resource = discovery.lookup(group, version, kind)
    if resource is None:
        return ManifestIdentity(meta, unknown_kind_error(kind))
    meta["resource"] = resource.resource
    if not resource.namespaced:
        meta["namespace"] = ""
    if not meta["name"]:
        return ManifestIdentity(meta, "resource name may not be empty")
    return ManifestIdentity(meta, None)


def _replicas(spec: Mapping[str, Any], default: int = 1) -> int:
    value = spec.get("replicas", default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _set_nonzero(status: dict[str, Any], key: str, value: int) -> None:
    if value:
        status[key] = value


def _replica_status(spec: Mapping[str, Any], health: Health, kind: str) -> dict[str, Any]:
    replicas = _replicas(spec)
    ready = replicas if health is Health.READY else 0
    status: dict[str, Any] = {"observedGeneration": 1}
    _set_nonzero(status, "replicas", replicas)
    if kind in ("Deployment", "StatefulSet"):
        _set_nonzero(status, "updatedReplicas", replicas)
    _set_nonzero(status, "readyReplicas", ready)
    _set_nonzero(status, "availableReplicas", ready)
    if kind == "StatefulSet":
        _set_nonzero(status, "currentReplicas", replicas)
    if kind == "Deployment":
        _set_nonzero(status, "unavailableReplicas", replicas - ready)
        available = "True" if ready == replicas else "False"
        progressing = {
            Health.READY: ("True", "NewReplicaSetAvailable"),
            Health.PROGRESSING: ("True", "ReplicaSetUpdated"),
            Health.BROKEN: ("False", "ProgressDeadlineExceeded"),
        }[health]
        status["conditions"] = [
            {"type": "Available", "status": available,
             "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable"},
            {"type": "Progressing", "status": progressing[0], "reason": progressing[1]},
        ]
    return status


def _daemonset_status(health: Health) -> dict[str, Any]:
    ready = SIMULATED_NODES if health is Health.READY else 0
    status: dict[str, Any] = {
        "observedGeneration": 1,
        "currentNumberScheduled": SIMULATED_NODES,
        "desiredNumberScheduled": SIMULATED_NODES,
        "numberMisscheduled": 0,
        "numberReady": ready,
        "updatedNumberScheduled": SIMULATED_NODES,
    }
    _set_nonzero(status, "numberAvailable", ready)
    _set_nonzero(status, "numberUnavailable", SIMULATED_NODES - ready)
    return status


def _job_status(spec: Mapping[str, Any], health: Health) -> dict[str, Any]:
    completions = spec.get("completions", 1)
    completions = completions if isinstance(completions, int) and completions > 0 else 1
    if health is Health.READY:
        return {"succeeded": completions, "conditions": [{"type": "Complete", "status": "True"}]}
    if health is Health.BROKEN:
        return {
            "failed": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
        }
    return {"active": 1}


def _pod_status(spec: Mapping[str, Any], health: Health) -> dict[str, Any]:
    runs_to_completion = spec.get("restartPolicy") in ("Never", "OnFailure")
    if health is Health.PROGRESSING:
        return {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
    if runs_to_completion:
        phase = "Succeeded" if health is Health.READY else "Failed"
        return {"phase": phase, "conditions": [{"type": "Ready", "status": "False"}]}
    ready = "True" if health is Health.READY else "False"
    return {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars): what ``copy.deepcopy`` makes of it, at a
    fifth of the cost (no memo, no dispatch by type)."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


def simulate_object(manifest: Mapping[str, Any], health: Health) -> dict[str, Any]:
    """The live object a simulated cluster holds for an applied manifest."""
    obj: dict[str, Any] = _copy_json(dict(manifest))
    metadata = dict(obj.get("metadata") or {})
    metadata.setdefault("generation", 1)
    obj["metadata"] = metadata
    if "status" in manifest:
        return obj
    group, _version = split_api_version(str(obj.get("apiVersion", "")))
    kind = obj.get("kind")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if group == "apps" and kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        obj["status"] = _replica_status(spec, health, str(kind))
    elif group == "apps" and kind == "DaemonSet":
        obj["status"] = _daemonset_status(health)
    elif group == "batch" and kind == "Job":
        obj["status"] = _job_status(spec, health)
    elif group == "" and kind == "Pod":
        obj["status"] = _pod_status(spec, health)
    return obj
