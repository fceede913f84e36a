"""The placement debug endpoint (docs/behaviour/scheduling.md §10) as aiohttp routes.

``GET /debug/placements/<namespace>/<name>`` explains the last state of a stored Placement;
``POST /debug/placements`` explains a Placement given in the body. Both run the scheduler on the
controller's current snapshot with scheduling-disable ignored, and answer every filter's output
and every prioritizer's score (``explain.debug_result``); 503 until the caches have listed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.api.meta import InvalidObject
from ocm_rollout.client.kube import JSON

DEBUG_PATH = "/debug/placements"
MAX_DEBUG_BODY = 1024 * 1024

Explain = Callable[[Placement], tuple[int, JSON]]
Lookup = Callable[[str, str], "JSON | None"]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _too_large() -> web.Response:
    return _error(400, f"request body too large: exceeds maximum of {MAX_DEBUG_BODY} bytes")


def debug_routes(synced: Callable[[], bool], lookup: Lookup, explain: Explain) -> list[web.RouteDef]:
    """The routes, over the controller's ``synced`` state, Placement ``lookup`` and ``explain``."""

    def answer(data: Any) -> web.Response:
        try:
            placement = Placement.parse(data)
        except InvalidObject as exc:
            return _error(400, str(exc))
        status, out = explain(placement)
        return web.json_response(out, status=status)

    async def get(request: web.Request) -> web.Response:
        if not synced():
            return _error(503, "the placement controller has not synced its caches yet")
        name = request.match_info.get("name", "")
        body = lookup(request.match_info.get("namespace", ""), name)
        return _error(404, f"placement '{name}' not found") if body is None else answer(body)

    async def post(request: web.Request) -> web.Response:
        if not synced():
            return _error(503, "the placement controller has not synced its caches yet")
        if request.content_length is not None and request.content_length > MAX_DEBUG_BODY:
            return _too_large()
        raw = await request.content.read(MAX_DEBUG_BODY + 1)
        if len(raw) > MAX_DEBUG_BODY:
            return _too_large()
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return _error(400, f"failed to unmarshal placement JSON: {exc}")
        if not isinstance(data, dict):
            return _error(400, "failed to unmarshal placement JSON: not an object")
        return answer(data)

    async def bad_path(request: web.Request) -> web.Response:
        return _error(400, "invalid debug path: namespace and name required")

    return [
        web.get(DEBUG_PATH + "/{namespace}/{name}", get),
        web.post(DEBUG_PATH, post),
        web.post(DEBUG_PATH + "/", post),
        web.get(DEBUG_PATH + "/{tail:.*}", bad_path),
    ]
