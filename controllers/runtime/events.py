"""Recording Kubernetes Events (core/v1) about the objects the controllers manage."""

from __future__ import annotations

import logging
import secrets
from datetime import datetime

from ocm_rollout.client.kube import EVENTS, JSON, Kube, KubeError

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


def build_event(
    obj: JSON,
    *,
    reason: str,
    message: str,
    event_type: str,
    component: str,
    now: datetime,
) -> JSON:
    """The core/v1 Event a recorder writes for ``obj``; pure, for tests."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    micro = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name', 'object')}.{secrets.token_hex(8)}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message[:1024],
        "type": event_type,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": micro,
        "action": reason,
        "count": 1,
    }


class EventRecorder:
    """Writes Events; a failure to record is logged, never raised into a reconcile."""

    def __init__(self, kube: Kube, component: str) -> None:
        self.kube = kube
        self.component = component

    async def record(
        self, obj: JSON, *, reason: str, message: str, now: datetime, event_type: str = NORMAL
    ) -> None:
        event = build_event(
            obj, reason=reason, message=message, event_type=event_type, component=self.component, now=now
        )
        try:
            await self.kube.create(EVENTS, event, event["metadata"]["namespace"])
        except KubeError as exc:
            log.warning("event not recorded", extra={"reason": reason, "error": str(exc)})
