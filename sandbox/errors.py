"""Kubernetes `Status` errors raised by the local hub and rendered as API responses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class ApiError(Exception):
    """An error that becomes a `kind: Status` response with the given HTTP code and reason."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # StatusReasonUnknown is "", which kube-apiserver leaves out
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(name: str | None, group: str, kind: str, causes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if causes:
        details["causes"] = causes
    return details


def qualified(resource: str, group: str) -> str:
    """`manifestworks.work.open-cluster-management.io`, or just `configmaps` for the core group."""
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', details=_details(name, group, resource)
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        details=_details(name, group, resource),
    )


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(name, group, resource),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(group: str, kind: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid; each cause is {"reason", "message", "field"} as kube-apiserver writes them."""
    # An aggregate's message as Kubernetes writes it: each distinct message once, in order.
    parts = list(dict.fromkeys(f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes))
    if len(parts) == 1:
        summary = parts[0]
    else:
        summary = "[" + ", ".join(parts) + "]"
    gk = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{gk} "{name}" is invalid: {summary}',
        details=_details(name, group, kind, causes),
    )


def cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def path_not_found() -> ApiError:
    """A path that names no resource (or no endpoint) the server has."""
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(accepted: Iterable[str], got: str | None = None) -> ApiError:
    message = f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}"
    return ApiError(415, "UnsupportedMediaType", message if got is None else f"{message}; got {got!r}")


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(group: str, resource: str, name: str, message: str, causes: list[dict[str, str]] | None = None) -> ApiError:
    what = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
    return ApiError(403, "Forbidden", f"{what} is forbidden: {message}", details=_details(name, group, resource, causes))


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


def request_entity_too_large(limit: int) -> ApiError:
    """413: a request body over kube-apiserver's MaxRequestBodyBytes (endpoints/handlers limitedReadBody)."""
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def etcd_request_too_large() -> ApiError:
    """etcd's ErrRequestTooLarge as kube-apiserver passes it on: not a Status error, so a 500
    with reason Unknown (empty) and etcd's message (responsewriters.ErrorToAPIStatus)."""
    return ApiError(500, "", "etcdserver: request is too large")


def webhook_denied(webhook: str, code: int, reason: str, message: str) -> ApiError:
    """A validating admission webhook's denial as kube-apiserver relays it (webhook
    errors.ToStatusErr): the webhook's code and reason, its message after who denied it."""
    return ApiError(code, reason, f"admission webhook \"{webhook}\" denied the request: {message}")
