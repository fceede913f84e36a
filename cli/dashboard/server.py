"""The dashboard's HTTP server (aiohttp): the page, its JSON, its live stream and its actions.

Routes:

- ``GET /``: the page (``static/index.html``) with this session's anti-CSRF token; sets the
  session cookie. ``GET /static/<file>``: its script and style.
- ``GET /api/overview``: every rollout's row. ``GET /api/rollouts/mwrs/<ns>/<name>`` and
  ``GET /api/rollouts/addon/<name>`` (``?expand=<placement>:<group>`` shows every chip of an
  aggregated group): one rollout. ``GET /api/history/<ns>/<name>/diff?from=N&to=M``: two
  revisions' templates compared. ``GET /api/placements/<ns>/<name>``, ``GET /api/fleet?q=&page=``.
- ``GET /api/stream``: server-sent events, one ``change`` event after the hub's watches moved
  (coalesced: at most one per ``STREAM_INTERVAL``), a comment every ``STREAM_PING`` seconds.
- ``POST /api/actions``: run a verb (``actions.parse_request``) through the CLI's own path,
  behind ``security.Guard``; 403 in read-only mode.

The dashboard lists and watches the hub from the first request it serves (any route, ``/healthz``
included) until it stops: a dashboard nobody has opened costs the hub and this process nothing (at
10,000 clusters a rollout's ManifestWork events alone are 40,000 to decode). During the first
``FIRST_LIST_SECONDS`` the JSON routes wait for the first listing, so the first page opened shows
the fleet rather than "Waiting for the hub to list"; after that they answer at once.

The server acts with the kubeconfig's identity only: the hub's RBAC decides every action, and its
refusal is answered as the hub said it (``Error from server (Forbidden): ...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from ocm_rollout.cli.commands.rollout import TargetNotFound, change
from ocm_rollout.cli.commands.rollout_verbs import RolloutError
from ocm_rollout.cli.dashboard.actions import ActionRequestError, parse_request
from ocm_rollout.cli.dashboard.history_view import DiffError
from ocm_rollout.cli.dashboard.pages import Pages
from ocm_rollout.cli.dashboard.security import SECURITY_HEADERS, SESSION_COOKIE, Guard, Refused
from ocm_rollout.cli.dashboard.store import Store
from ocm_rollout.client.kube import Kube, KubeError

log = logging.getLogger("dashboard")

STATIC_FILES = {"app.js": "text/javascript", "app.css": "text/css"}
STREAM_INTERVAL = 0.5
STREAM_COALESCE = 0.15
STREAM_PING = 15.0
MAX_BODY = 64 * 1024
# How long after the first request the JSON routes wait for the first listing.
FIRST_LIST_SECONDS = 5.0
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _static(name: str) -> str:
    return resources.files("ocm_rollout.cli.dashboard").joinpath("static", name).read_text(encoding="utf-8")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers={"Cache-Control": "no-store"})


def _json(data: Any) -> web.Response:
    return web.json_response(data, headers={"Cache-Control": "no-store"}, dumps=lambda v: json.dumps(v, separators=(",", ":")))


def _expand(request: web.Request) -> tuple[tuple[str, int], ...]:
    out = []
    for value in request.query.getall("expand", []):
        placement, _, index = value.rpartition(":")
        if placement and index.isdigit():
            out.append((placement, int(index)))
    return tuple(out)


class Dashboard:
    """The application over a ``Store`` of the hub behind ``kube``."""

    def __init__(self, kube: Kube, *, read_only: bool = False, loopback_only: bool = True) -> None:
        self.kube = kube
        self.store = Store(kube)
        self.pages = Pages(self.store, read_only=read_only)
        self.read_only = read_only
        self.guard = Guard(loopback_only=loopback_only)
        self.stop = asyncio.Event()
        self._index = _static("index.html")
        self._watching: asyncio.Task[None] | None = None
        self._first_listing_until = 0.0  # loop time until which JSON routes wait for the first listing

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=MAX_BODY)
        app.add_routes(
            [
                web.get("/", self.index),
                web.get("/static/{file}", self.static),
                web.get("/healthz", self.healthz),
                web.get("/favicon.ico", self.no_icon),
                web.get("/api/overview", self.overview),
                web.get("/api/rollouts/mwrs/{namespace}/{name}", self.mwrs),
                web.get("/api/rollouts/addon/{name}", self.addon),
                web.get("/api/history/{namespace}/{name}/diff", self.diff),
                web.get("/api/placements/{namespace}/{name}", self.placement),
                web.get("/api/fleet", self.fleet),
                web.get("/api/stream", self.stream),
                web.post("/api/actions", self.action),
            ]
        )
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            self.guard.check_host(request.host)
            await self._watch(request)
            response = await handler(request)
        except Refused as exc:
            response = _error(exc.status, str(exc))
        except web.HTTPException as exc:
            response = _error(exc.status, exc.reason)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    async def _watch(self, request: web.Request) -> None:
        """Start listing and watching the hub at the first request; let a JSON request made
        during the first listing wait for it (at most until ``FIRST_LIST_SECONDS`` after the
        start)."""
        loop = asyncio.get_running_loop()
        if self._watching is None:
            self._watching = asyncio.create_task(self.store.run(self.stop), name="dashboard-store")
            self._first_listing_until = loop.time() + FIRST_LIST_SECONDS
        if request.path.startswith("/api/") and request.path != "/api/stream":
            remaining = self._first_listing_until - loop.time()
            if remaining > 0 and self.store.unsynced():
                await self.store.synced(remaining)

    # -- the page --------------------------------------------------------------------------------
    async def index(self, request: web.Request) -> web.Response:
        session = request.cookies.get(SESSION_COOKIE) or ""
        fresh = not session
        if fresh:
            session = self.guard.new_session()
        page = self._index.replace("{{csrf}}", html.escape(self.guard.token(session))).replace(
            "{{readonly}}", "true" if self.read_only else "false"
        )
        response = web.Response(text=page, content_type="text/html", headers={"Cache-Control": "no-store"})
        if fresh:
            response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="Strict", path="/")
        return response

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["file"]
        if name not in STATIC_FILES:
            return _error(404, f"no static file {name!r}")
        return web.Response(text=_static(name), content_type=STATIC_FILES[name], headers={"Cache-Control": "no-cache"})

    async def no_icon(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def healthz(self, request: web.Request) -> web.Response:
        unsynced = self.store.unsynced()
        if unsynced:
            return _error(503, "not listed yet: " + ", ".join(unsynced))
        return web.Response(text="ok")

    # -- the pages' JSON -------------------------------------------------------------------------
    async def overview(self, request: web.Request) -> web.Response:
        return _json(await self.pages.overview())

    async def mwrs(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = await self.pages.mwrs_page(namespace, name, _expand(request))
        if found is None:
            return _error(404, f'ManifestWorkReplicaSet "{name}" not found in namespace "{namespace}"')
        return _json(found)

    async def addon(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        found = await self.pages.addon_page(name, _expand(request))
        if found is None:
            return _error(404, f'ClusterManagementAddOn "{name}" not found')
        return _json(found)

    async def diff(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        try:
            old, new = int(request.query.get("from", "")), int(request.query.get("to", ""))
        except ValueError:
            return _error(400, "from and to must be revision numbers")
        try:
            found = self.pages.diff(namespace, name, old, new)
        except DiffError as exc:
            return _error(404, str(exc))
        if found is None:
            return _error(404, f'ManifestWorkReplicaSet "{name}" not found in namespace "{namespace}"')
        return _json(found)

    async def placement(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = await self.pages.placement_page(namespace, name)
        if found is None:
            return _error(404, f'Placement "{name}" not found in namespace "{namespace}"')
        return _json(found)

    async def fleet(self, request: web.Request) -> web.Response:
        try:
            page = max(int(request.query.get("page", "0") or 0), 0)
        except ValueError:
            return _error(400, "page must be a whole number")
        return _json(await self.pages.fleet_page(request.query.get("q", "")[:200], page))

    # -- live --------------------------------------------------------------------------------------
    async def stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        )
        for key, value in SECURITY_HEADERS.items():
            response.headers[key] = value
        await response.prepare(request)
        flag = self.store.subscribe()
        loop = asyncio.get_running_loop()
        try:
            await response.write(f"event: hello\ndata: {self.store.generations.total}\n\n".encode())
            last = 0.0
            while not self.stop.is_set():
                try:
                    await asyncio.wait_for(flag.wait(), STREAM_PING)
                except TimeoutError:
                    await response.write(b": ping\n\n")
                    continue
                # Let a burst of watch events land, and never send faster than STREAM_INTERVAL.
                await asyncio.sleep(max(STREAM_COALESCE, last + STREAM_INTERVAL - loop.time()))
                flag.clear()
                last = loop.time()
                await response.write(f"event: change\ndata: {self.store.generations.total}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unsubscribe(flag)
        return response

    # -- actions ---------------------------------------------------------------------------------
    async def action(self, request: web.Request) -> web.Response:
        if self.read_only:
            return _error(403, "the dashboard is read-only (--read-only): no action is allowed")
        self.guard.check_write(
            method=request.method, scheme=request.scheme, host=request.host,
            headers=request.headers, cookies=request.cookies,
        )
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(400, f"the body is not JSON: {exc}")
        try:
            asked = parse_request(body)
        except ActionRequestError as exc:
            return _error(400, str(exc))
        target = asked.target
        try:
            message = await change(self.kube, target, asked.verb)
        except TargetNotFound:
            return _error(404, target.not_found())
        except RolloutError as exc:
            return _error(409, str(exc))
        except KubeError as exc:
            return _error(exc.status if 400 <= exc.status < 600 else 502, f"Error from server ({exc.reason}): {exc.message}")
        except OSError as exc:
            return _error(502, f"cannot reach the hub: {exc}")
        log.info("action", extra={"verb": asked.verb.verb, "target": target.display, "result": message})
        return _json({"message": message})

    # -- running ---------------------------------------------------------------------------------
    async def serve(
        self, address: str, port: int, *, ready: Callable[[str], None] | None = None, sock: socket.socket | None = None
    ) -> None:
        """Serve until ``self.stop`` is set (on ``sock`` when given, a listening socket bound
        by the caller, else on ``address:port``); ``ready`` gets the URL once listening."""
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site: web.BaseSite = web.SockSite(runner, sock) if sock is not None else web.TCPSite(runner, address, port)
        try:
            await site.start()
            bound = port
            server = getattr(site, "_server", None)
            sockets = getattr(server, "sockets", None) or []
            if sockets:
                bound = int(sockets[0].getsockname()[1])
            host = f"[{address}]" if ":" in address else address
            if ready is not None:
                ready(f"http://{host}:{bound}/")
            await self.stop.wait()
        finally:
            self.stop.set()
            self.store.wake_all()  # open streams see the stop
            await runner.cleanup()
            if self._watching is not None:
                self._watching.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._watching
