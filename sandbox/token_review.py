"""TokenReview: a bearer token in, whether the hub accepts it and as whom out.

Controllers built on the generic API server library (OCM's among them) authenticate calls to
their own endpoints (metrics, health) by posting the caller's token to
`authentication.k8s.io/v1 tokenreviews`, as kube-apiserver serves it. A token the hub knows is
authenticated as its user, with the groups every hub user has; any other is not (no error).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from ocm_rollout.sandbox import errors

GROUPS = ("system:masters", "system:authenticated")


def review(body: Any, users: Mapping[str, str]) -> dict[str, Any]:
    """The TokenReview with its status; `users` maps the hub's tokens to user names."""
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a TokenReview object")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    audiences = spec.get("audiences")
    user = next((name for known, name in users.items() if hmac.compare_digest(known.encode(), token.encode())), None)
    status: dict[str, Any] = {"authenticated": user is not None, "user": {}}
    if user is not None:
        status["user"] = {"username": user, "groups": list(GROUPS)}
        if isinstance(audiences, list) and audiences:
            status["audiences"] = [str(a) for a in audiences]
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "metadata": {**{k: v for k, v in meta.items() if k in ("name", "labels", "annotations")}, "creationTimestamp": None},
        "spec": {k: v for k, v in spec.items() if k in ("token", "audiences")},
        "status": status,
    }
