"""The `kube-system/extension-apiserver-authentication` ConfigMap the hub publishes at start.

kube-apiserver publishes it for extension API servers and for controllers built on the generic
API server library (OCM's among them), which read the client CA and the request-header
settings from it to authenticate calls to their own endpoints. The hub authenticates clients by
token, so the CA published is the hub's own (the one in its kubeconfig); the request-header
keys carry kube-apiserver's usual values (JSON lists, as the readers expect). A hub serving
plain HTTP has no CA, and publishes the request-header names only.
"""

from __future__ import annotations

import json
from typing import Any

from ocm_rollout.sandbox.engine import Ctx, Engine
from ocm_rollout.sandbox.errors import ApiError

NAMESPACE = "kube-system"
NAME = "extension-apiserver-authentication"


def authentication_data(ca_pem: bytes | None) -> dict[str, str]:
    data = {
        "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
        "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
        "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
        "requestheader-username-headers": json.dumps(["X-Remote-User"]),
    }
    if ca_pem:
        data["client-ca-file"] = ca_pem.decode()
        data["requestheader-client-ca-file"] = ca_pem.decode()
    return data


def publish(engine: Engine, ca_pem: bytes | None) -> None:
    """Create the ConfigMap, or bring its data up to date (a restarted hub may have a new CA)."""
    rt = engine.types[("", "configmaps")]
    data = authentication_data(ca_pem)
    ctx = Ctx(internal=True)
    try:
        current: dict[str, Any] = engine.get(rt, "v1", NAMESPACE, NAME)
    except ApiError as exc:
        if exc.code != 404:
            raise
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NAMESPACE}, "data": data}
        engine.create(rt, "v1", NAMESPACE, body, ctx)
        return
    if current.get("data") != data:
        engine.update(rt, "v1", NAMESPACE, NAME, {**current, "data": data}, ctx)
