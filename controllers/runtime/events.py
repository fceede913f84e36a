"""Recording Kubernetes Events (core/v1) about the objects the controllers manage: one recorder,
one way.

- ``EventRecorder.record`` writes one Event about ``obj`` (with its apiVersion and kind), with an
  optional related object (``related``: a decision page of a Placement), an optional action, and
  an optional deterministic name: an event that must be told once across passes, restarts and
  instances (a rollout's abort) is named after what it tells, so a second attempt meets
  AlreadyExists and is quietly dropped. A failure to record is logged, never raised into a pass.
- ``Told`` is the memory of what was already told, per (object key, topic): a warning is told
  again only when what it says changes. It lives in memory: a restart tells once more.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Hashable
from datetime import datetime
from typing import Any

from ocm_rollout.api.times import format_micro_time
from ocm_rollout.client.kube import EVENTS, JSON, Conflict, Kube, KubeError, Resource
from ocm_rollout.controllers.common.wire import format_time

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
MAX_MESSAGE = 1024


def build_event(
    obj: JSON,
    *,
    reason: str,
    message: str,
    event_type: str,
    component: str,
    now: datetime,
    related: JSON | None = None,
    action: str | None = None,
    name: str | None = None,
) -> JSON:
    """The core/v1 Event a recorder writes for ``obj``; pure."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    stamp = format_time(now)
    event: JSON = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name or f"{meta.get('name', 'object')}.{secrets.token_hex(8)}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "type": event_type,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": format_micro_time(now),
        "action": action or reason,
        "count": 1,
    }
    if related is not None:
        event["related"] = related
    return event


def reference(resource: Resource, name: str, namespace: str = "") -> JSON:
    """An object reference for an Event's ``related``."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": name, "namespace": namespace}


class EventRecorder:
    """Writes Events as one component; never raises into a pass."""

    def __init__(self, kube: Kube, component: str) -> None:
        self.kube = kube
        self.component = component

    async def record(
        self,
        obj: JSON,
        *,
        reason: str,
        message: str,
        now: datetime,
        event_type: str = NORMAL,
        kind: Resource | None = None,
        related: JSON | None = None,
        action: str | None = None,
        name: str | None = None,
    ) -> bool:
        """Record one Event about ``obj`` (``kind`` fills in its apiVersion and kind). True if
        it was written or, for a named one, already there."""
        if kind is not None:
            obj = {**obj, "apiVersion": kind.api_version, "kind": kind.kind}
        event = build_event(
            obj, reason=reason, message=message, event_type=event_type, component=self.component, now=now,
            related=related, action=action, name=name,
        )
        key = f"{event['involvedObject']['namespace']}/{event['involvedObject']['name']}".lstrip("/")
        try:
            await self.kube.create(EVENTS, event, event["metadata"]["namespace"])
        except Conflict:
            if name is None:
                log.warning("event not recorded", extra={"key": key, "reason": reason, "error": "name taken"})
                return False
            return True  # told already, by this or another instance
        except KubeError as exc:
            log.warning("event not recorded", extra={"key": key, "reason": reason, "error": str(exc)})
            return False
        log.info("event", extra={"key": key, "reason": reason, "type": event_type, "event_message": message})
        return True


class Told:
    """What was told, per ``(owner key, topic)``; see the module docstring."""

    def __init__(self) -> None:
        self._memory: dict[tuple[Hashable, str], Any] = {}

    def get(self, owner: Hashable, topic: str, default: Any = None) -> Any:
        return self._memory.get((owner, topic), default)

    def put(self, owner: Hashable, topic: str, value: Any) -> None:
        self._memory[(owner, topic)] = value

    def once(self, owner: Hashable, topic: str, value: Any) -> bool:
        """True (and remembered) if ``value`` is not what was told last about this topic."""
        if (owner, topic) in self._memory and self._memory[(owner, topic)] == value:
            return False
        self._memory[(owner, topic)] = value
        return True

    def clear(self, owner: Hashable, topic: str) -> None:
        self._memory.pop((owner, topic), None)

    def forget(self, owner: Hashable) -> None:
        """Everything told about ``owner`` (it is gone)."""
        for key in [key for key in self._memory if key[0] == owner]:
            del self._memory[key]
