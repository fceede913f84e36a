"""The local hub: a Kubernetes-compatible API server on aiohttp.

Public interface::

    hub = LocalHub(port=0, data=None, crds=None, token=None)
    await hub.start(); hub.url; hub.token; hub.write_kubeconfig(path); await hub.stop()

    handle = run_in_thread(port=0, ...)   # for synchronous code and tests
    handle.url, handle.token, handle.kubeconfig (a written file), handle.stop()

Command line (for development; users run `ocm-rollout up`)::

    python -m ocm_rollout.sandbox.server [--port 0] [--data FILE] [--crds PATH ...] [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hmac
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import yaml
from aiohttp import web

from ocm_rollout.client.collector import tune_collector
from ocm_rollout.sandbox import cluster_trust, converting, errors, openapi, protobuf, token_review
from ocm_rollout.sandbox import tls as tls_module
from ocm_rollout.sandbox.crd import default_crds, load_crd_files, with_conversion_webhook
from ocm_rollout.sandbox.engine import CRD_BUCKET, Ctx, Engine
from ocm_rollout.sandbox.errors import ApiError
from ocm_rollout.sandbox.negotiation import (
    JSON,
    META,
    META_LIST,
    OBJECT,
    PROTOBUF,
    TABLE,
    YAML,
    Media,
    negotiate,
    prefers_protobuf,
)
from ocm_rollout.sandbox.resources import ResourceType, sort_versions
from ocm_rollout.sandbox.selectors import FieldSelector, LabelSelector
from ocm_rollout.sandbox.store import Event, Store, Watcher
from ocm_rollout.sandbox.table import partial_metadata, table
from ocm_rollout.sandbox.watch_window import MAX_CAPACITY

log = logging.getLogger("ocm_rollout.sandbox.server")

# kube-apiserver's MaxRequestBodyBytes (3 MiB): a larger body to create, update, patch or delete gets 413.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024

SERVER_VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0+ocm-rollout-localhub",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24 (python local hub)",
    "compiler": "gc",
    "platform": f"{sys.platform}/python",
}
DEFAULT_USER = "admin"
T = TypeVar("T")


@dataclass(frozen=True)
class RequestRecord:
    """One request, with the attributes an RBAC rule would be matched against."""

    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    path: str  # for non-resource requests (discovery, openapi, version)
    user: str
    user_agent: str
    code: int


@dataclass
class _Target:
    rt: ResourceType
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "yes")


class LocalHub:
    """A Kubernetes-compatible API server for the project's CRDs and the core kinds it uses.

    `crds`: None serves the project's CRDs (`ocm_rollout.api.crdgen.generate_crds()`); a sequence serves
    exactly the given CRDs (dicts, or YAML files/directories).
    `data`: a SQLite file; objects and the resourceVersion counter survive restarts.
    `history`: watch events kept per resource for resuming (older resourceVersions get 410).
    `request_log`: a JSON-lines file receiving one `RequestRecord` per request;
    `record_requests=True` keeps them in `hub.requests` as well.
    `tokens`: extra bearer tokens mapped to user names (recorded in the request log).
    """

    def __init__(
        self,
        port: int = 0,
        data: str | Path | None = None,
        crds: Sequence[str | Path | Mapping[str, Any]] | None = None,
        token: str | None = None,
        host: str = "127.0.0.1",
        *,
        history: int = MAX_CAPACITY,
        bookmark_interval: float = 30.0,
        request_log: str | Path | None = None,
        record_requests: bool = False,
        tokens: Mapping[str, str] | None = None,
        tls: bool = True,
        conversion_webhook: Mapping[str, Any] | None = None,
    ) -> None:
        self.host = host
        # The clientConfig (url, caBundle) that CRDs converted by a webhook are installed with.
        self.conversion_webhook = dict(conversion_webhook) if conversion_webhook is not None else None
        self.port = port
        self.data = data
        self.crds = crds
        self._explicit_token = token
        self.token = token or secrets.token_urlsafe(32)
        self.extra_tokens = dict(tokens or {})
        self.users: dict[str, str] = {self.token: DEFAULT_USER, **self.extra_tokens}
        self.tls = tls
        self.credentials: tls_module.Credentials | None = None
        self.history = history
        self.bookmark_interval = bookmark_interval
        self.request_log_path = Path(request_log) if request_log else None
        self.record_requests = record_requests
        self.requests: list[RequestRecord] = []
        self.store: Store | None = None
        self.engine: Engine | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._log_file: Any = None
        self._openapi_cache: dict[str, tuple[int, Any]] = {}

    # life cycle ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def _secrets(self) -> None:
        """Token and TLS material; with --data they persist so an old kubeconfig keeps working."""
        assert self.store is not None
        if self._explicit_token is None:
            saved = self.store.get_meta("token")
            if saved:
                self.token = saved
            self.store.set_meta("token", self.token)
        self.users = {self.token: DEFAULT_USER, **self.extra_tokens}
        if not self.tls:
            return
        saved_tls = self.store.get_meta("tls")
        if saved_tls:
            data = json.loads(saved_tls)
            creds = tls_module.Credentials(data["ca"].encode(), data["cert"].encode(), data["key"].encode())
            if tls_module.covers(creds, self.host):
                self.credentials = creds
        if self.credentials is None:
            self.credentials = _credentials_for(self.host)
            self.store.set_meta(
                "tls",
                json.dumps(
                    {
                        "ca": self.credentials.ca_pem.decode(),
                        "cert": self.credentials.cert_pem.decode(),
                        "key": self.credentials.key_pem.decode(),
                    }
                ),
            )

    async def start(self) -> None:
        self.store = Store(data=self.data, history=self.history)
        self._secrets()
        self.engine = Engine(self.store)
        self._install_crds()
        cluster_trust.publish(self.engine, self.ca_pem)
        if self.request_log_path is not None:
            self.request_log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self.request_log_path.open("a", encoding="utf-8")
        app = web.Application(client_max_size=MAX_REQUEST_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=2.0)
        await self._runner.setup()
        ssl_context = self.credentials.server_context() if self.credentials is not None else None
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True, ssl_context=ssl_context)
        await site.start()
        server: Any = site._server
        if server is not None and getattr(server, "sockets", None):
            self.port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self.engine.run_gc()))
        self._tasks.append(loop.create_task(self._bookmarks()))

    def _install_crds(self) -> None:
        assert self.engine is not None
        if self.crds is None:
            wanted = default_crds()
        else:
            wanted = []
            paths: list[str | Path] = []
            for item in self.crds:
                if isinstance(item, Mapping):
                    wanted.append(dict(item))
                else:
                    paths.append(item)
            wanted.extend(load_crd_files(paths))
        crd_rt = self.engine.types[("apiextensions.k8s.io", "customresourcedefinitions")]
        ctx = Ctx(internal=True)
        for crd in wanted:
            crd = self._with_webhook(crd)
            name = (crd.get("metadata") or {}).get("name", "")
            current = self.engine.store.get(CRD_BUCKET, "", name)
            body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": name}, "spec": crd.get("spec")}
            try:
                if current is None:
                    self.engine.create(crd_rt, "v1", "", body, ctx)
                elif current.get("spec") != crd.get("spec"):
                    body["metadata"] = {**current["metadata"]}
                    self.engine.update(crd_rt, "v1", "", name, body, ctx)
            except ApiError as exc:
                raise ValueError(f"CRD {name!r} cannot be served: {exc.message}") from exc

    def _with_webhook(self, crd: dict[str, Any]) -> dict[str, Any]:
        """``crd`` calling the hub's conversion webhook, when it is converted by one."""
        return with_conversion_webhook(crd, self.conversion_webhook)

    async def stop(self) -> None:
        if self.engine is not None:
            await self.engine.converter.close()
        if self.store is not None:
            for w in self.store.all_watchers():
                w.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.store is not None:
            self.store.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def __aenter__(self) -> LocalHub:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def ca_pem(self) -> bytes | None:
        """The CA certificate clients must trust (None when serving plain HTTP)."""
        return self.credentials.ca_pem if self.credentials is not None else None

    def kubeconfig(self, *, context: str = "ocm-rollout-local", namespace: str = "default") -> dict[str, Any]:
        cluster: dict[str, Any] = {"server": self.url}
        if self.credentials is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.credentials.ca_pem).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": cluster}],
            "users": [{"name": f"{context}-admin", "user": {"token": self.token}}],
            "contexts": [
                {"name": context, "context": {"cluster": context, "user": f"{context}-admin", "namespace": namespace}}
            ],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, *, context: str = "ocm-rollout-local") -> Path:
        """Write a kubeconfig (mode 0600: it holds the token) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(self.kubeconfig(context=context), sort_keys=False)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(target, 0o600)
        return target

    async def _bookmarks(self) -> None:
        while True:
            await asyncio.sleep(self.bookmark_interval)
            assert self.store is not None
            for w in self.store.all_watchers():
                if w.bookmarks and not w.closed:
                    w.queue.put_nowait(("BOOKMARK", self.store.rv))

    # dispatch -----------------------------------------------------------------------------------

    def _authenticate(self, request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise errors.unauthorized()
        token = token.strip()
        for known, user in self.users.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user
        raise errors.unauthorized()

    def _record(self, rec: RequestRecord) -> None:
        if self.record_requests:
            self.requests.append(rec)
        if self._log_file is not None:
            self._log_file.write(json.dumps(asdict(rec), separators=(",", ":")) + "\n")
            self._log_file.flush()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        user = ""
        target: _Target | None = None
        verb = request.method.lower()
        code = 500
        try:
            user = self._authenticate(request)
            path = request.path
            segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
            target = self._resolve(segments)
            response: web.StreamResponse
            if target is None:
                response = await self._non_resource(request, segments)
            else:
                verb = self._verb(request, target)
                response = await self._resource(request, target, user)
            code = response.status
            return response
        except ApiError as exc:
            code = exc.code
            return self._error(exc, request, target)
        except web.HTTPRequestEntityTooLarge:
            code = 413
            return self._error(errors.request_entity_too_large(MAX_REQUEST_BODY_BYTES), request, target)
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as exc:
            log.exception("request %s %s failed", request.method, request.path_qs)
            code = 500
            return self._error(errors.internal(str(exc)), request, target)
        finally:
            if self.record_requests or self._log_file is not None:
                # group, version, resource, subresource, namespace, name, path
                where = (
                    (t.rt.group, t.version, t.rt.plural, t.subresource or "", t.namespace or "", t.name or "", "")
                    if (t := target) is not None
                    else ("", "", "", "", "", "", request.path)
                )
                self._record(RequestRecord(verb, *where, user, request.headers.get("User-Agent", ""), code))

    @staticmethod
    def _verb(request: web.Request, target: _Target) -> str:
        method = request.method
        if method == "GET":
            if target.name is not None:
                return "get"
            return "watch" if _truthy(request.query.get("watch")) else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if target.name is not None else "deletecollection"
        return method.lower()

    def _error(self, exc: ApiError, request: web.Request | None = None, target: _Target | None = None) -> web.Response:
        """A Status, in protobuf when the request's resource has it and the client prefers it."""
        if (
            request is not None
            and target is not None
            and exc.code != 406
            and prefers_protobuf(request.headers.get("Accept"), protobuf=_has_protobuf(target))
        ):
            return web.Response(status=exc.code, body=protobuf.encode_status(exc.status()), content_type=protobuf.CONTENT_TYPE)
        return self._json(exc.status(), exc.code)

    def _resolve(self, segments: list[str]) -> _Target | None:
        """The resource addressed by the path, or None for non-resource paths."""
        assert self.engine is not None
        if len(segments) >= 3 and segments[0] == "api":
            group, version, rest = "", segments[1], segments[2:]
        elif len(segments) >= 4 and segments[0] == "apis":
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            return None
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = self.engine.resolve(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace = rest[1]
                rest = rest[2:]
        rt = self.engine.resolve(group, version, rest[0])
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) >= 3 else None
        if (
            rt is None
            or len(rest) > 3
            or name == ""
            or (rt.namespaced and namespace is None and name is not None)
            or (sub is not None and sub not in rt.subresources(version))
        ):
            raise errors.path_not_found()
        return _Target(rt, version, namespace, name, sub)

    # non-resource endpoints ---------------------------------------------------------------------

    async def _non_resource(self, request: web.Request, segments: list[str]) -> web.Response:
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        head = segments[0] if segments else ""
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if head == "version":
            return self._json(SERVER_VERSION)
        if not segments:
            return self._json({"paths": sorted(["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2",
                                                "/openapi/v3", "/readyz", "/version", *self._group_paths()])})
        if segments == ["api"]:
            return self._json(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}],
                }
            )
        if segments == ["api", "v1"]:
            return self._json(self._resource_list("", "v1"))
        if segments == ["apis"]:
            return self._json({"kind": "APIGroupList", "apiVersion": "v1", "groups": self._groups()})
        if len(segments) == 2 and segments[0] == "apis":
            for g in self._groups():
                if g["name"] == segments[1]:
                    return self._json({"kind": "APIGroup", "apiVersion": "v1", **g})
            raise errors.path_not_found()
        if len(segments) == 3 and segments[0] == "apis":
            listing = self._resource_list(segments[1], segments[2])
            if not listing["resources"]:
                raise errors.path_not_found()
            return self._json(listing)
        if head == "openapi":
            return self._openapi(request, segments[1:])
        raise errors.path_not_found()

    def _json(self, body: Any, status: int = 200, warnings: Iterable[str] = ()) -> web.Response:
        return _json_response(_dumps(body), status, warnings)

    def _group_versions(self) -> dict[str, dict[str, list[ResourceType]]]:
        assert self.engine is not None
        out: dict[str, dict[str, list[ResourceType]]] = {}
        for rt in self.engine.types.values():
            for v in rt.served_versions:
                out.setdefault(rt.group, {}).setdefault(v, []).append(rt)
        return out

    def _group_paths(self) -> list[str]:
        paths = []
        for group, versions in self._group_versions().items():
            if group:
                paths.append(f"/apis/{group}")
                paths.extend(f"/apis/{group}/{v}" for v in versions)
        return paths

    def _groups(self) -> list[dict[str, Any]]:
        groups = []
        gv = self._group_versions()
        for group in sorted(g for g in gv if g):
            versions = sort_versions(gv[group])
            groups.append(
                {
                    "name": group,
                    "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                    "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]},
                }
            )
        return groups

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        assert self.engine is not None
        resources: list[dict[str, Any]] = []
        for rt in sorted(self.engine.types.values(), key=lambda t: t.plural):
            if rt.group != group or version not in rt.served_versions:
                continue
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            for sub in rt.subresources(version):
                resources.append(
                    {
                        "name": f"{rt.plural}/{sub}",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["update"] if sub == "finalize" else ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def _openapi(self, request: web.Request, rest: list[str]) -> web.Response:
        assert self.engine is not None
        gen = self.engine.api_generation
        server_version = SERVER_VERSION["gitVersion"]
        docs = self._openapi_docs(gen, server_version)
        if rest == ["v2"]:
            answer = openapi.v2_media_type(request.headers.get("Accept"))
            if answer is None:
                return web.Response(status=406, headers={"Vary": "Accept"})
            if answer == openapi.V2_PROTOBUF:
                resp = web.Response(body=openapi.v2_protobuf(server_version), content_type=answer)
            else:
                resp = self._json(openapi.v2_json([d for d, _ in docs.values()], server_version))
            resp.headers["Vary"] = "Accept"
            return resp
        if rest == ["v3"]:
            return self._json(
                {"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={h}"} for key, (_, h) in sorted(docs.items())}}
            )
        if len(rest) >= 2 and rest[0] == "v3":
            key = "/".join(rest[1:])
            found = docs.get(key)
            if found is None:
                raise errors.path_not_found()
            resp = self._json(found[0])
            resp.headers["Cache-Control"] = "public, immutable" if request.query.get("hash") else "no-cache, private"
            resp.headers["Etag"] = f'"{found[1]}"'
            return resp
        raise errors.path_not_found()

    def _openapi_docs(self, gen: int, server_version: str) -> dict[str, tuple[dict[str, Any], str]]:
        cached = self._openapi_cache.get("docs")
        if cached is not None and cached[0] == gen:
            result: dict[str, tuple[dict[str, Any], str]] = cached[1]
            return result
        docs: dict[str, tuple[dict[str, Any], str]] = {}
        for group, versions in self._group_versions().items():
            for version, types in versions.items():
                key = f"apis/{group}/{version}" if group else f"api/{version}"
                doc = openapi.group_version_doc(group, version, types, server_version)
                docs[key] = (doc, openapi.doc_hash(doc))
        self._openapi_cache["docs"] = (gen, docs)
        return docs

    # resource endpoints -------------------------------------------------------------------------

    async def _body(self, request: web.Request, ctx: Ctx, target: _Target) -> Any:
        raw = await request.read()
        if not raw:
            raise errors.bad_request("the request body is empty")
        ctype = (request.content_type or "application/json").lower()
        if ctype == protobuf.CONTENT_TYPE:
            if not _has_protobuf(target):
                raise errors.unsupported_media_type(("application/json", "application/yaml"))
            return protobuf.decode(raw)
        try:
            if "yaml" in ctype and "apply-patch" not in ctype:
                return yaml.safe_load(raw)
            if ctx.field_validation == "Strict":
                return json.loads(raw, object_pairs_hook=_no_duplicates)
            return json.loads(raw)
        except _DuplicateField as exc:
            raise errors.bad_request(f"strict decoding error: duplicate field \"{exc.args[0]}\"") from exc
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the request body is not valid {('YAML' if 'yaml' in ctype else 'JSON')}: {exc}") from exc

    def _ctx(self, request: web.Request, user: str) -> Ctx:
        q = request.query
        dry = q.getall("dryRun", [])
        for d in dry:
            if d != "All":
                raise errors.bad_request(f'dryRun: Unsupported value: "{d}": supported values: "All"')
        fv = q.get("fieldValidation") or "Warn"
        if fv not in ("Ignore", "Warn", "Strict"):
            raise errors.bad_request(f'fieldValidation: Unsupported value: "{fv}": supported values: "Ignore", "Strict", "Warn"')
        return Ctx(user=user, dry_run=bool(dry), field_validation=fv)

    def _present(self, target: _Target, obj: dict[str, Any], fmt: Media, request: web.Request | None) -> Any:
        if fmt.shape == TABLE:
            include = request.query.get("includeObject", "Metadata") if request is not None else "Metadata"
            return table([obj], target.rt.versions[target.version].columns, include=include)
        if fmt.shape in (META, META_LIST):
            return {**partial_metadata(obj), "apiVersion": f"meta.k8s.io/{fmt.version}"}
        return obj

    def _respond(
        self,
        request: web.Request,
        target: _Target,
        obj: dict[str, Any],
        status: int,
        ctx: Ctx,
        fmt: Media,
        *,
        stored: dict[str, Any] | None = None,
    ) -> web.Response:
        assert self.store is not None
        content_type = "application/json"
        if fmt.encoding == YAML:
            resp = web.Response(status=status, text=yaml.safe_dump(obj, sort_keys=False), content_type="application/yaml")
            return resp
        if fmt.encoding == PROTOBUF:
            body = protobuf.encode(self._present(target, obj, fmt, request))
            content_type = protobuf.CONTENT_TYPE
        elif fmt.shape == OBJECT and (stored if stored is not None else self._stored(target, obj)) is obj:
            # The object as stored (a write's result included): its bytes were made once, when
            # it was written, for the watches, GET and LIST alike.
            body = self.store.encode_stored(target.rt.bucket, obj)
        else:
            body = _dumps(self._present(target, obj, fmt, request))
        served = target.rt.versions[target.version]
        warnings = list(ctx.warnings)
        if served.deprecated:
            warnings.append(
                served.deprecation_warning or f"{target.rt.api_version(target.version)} {target.rt.kind} is deprecated"
            )
        return _json_response(body, status, warnings, content_type)

    def _stored(self, target: _Target, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The stored object of ``obj``'s name (``obj`` itself when a write returns what it stored)."""
        assert self.store is not None
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return None
        namespace = meta.get("namespace") if target.rt.namespaced else ""
        return self.store.get(target.rt.bucket, namespace if isinstance(namespace, str) else "", meta["name"])

    async def _resource(self, request: web.Request, target: _Target, user: str) -> web.StreamResponse:
        assert self.engine is not None and self.store is not None
        engine = self.engine
        rt, version = target.rt, target.version
        method = request.method
        fmt = negotiate(request.headers.get("Accept"), protobuf=_has_protobuf(target))
        q = request.query
        if method not in [m for v in rt.verbs for m in _METHODS[v]] and not (method in ("GET", "PUT", "PATCH") and target.subresource):
            raise errors.method_not_allowed()
        if target.subresource == "finalize" and method != "PUT":
            raise errors.method_not_allowed()
        ns = target.namespace
        if method == "GET" and target.name is None:
            labels, fields = _selectors(request, rt)
            if _truthy(q.get("watch")):
                return await self._watch(request, target, labels, fields, fmt)
            limit = _int_param(q.get("limit"), "limit")
            rvm = q.get("resourceVersionMatch")
            if rvm and rvm not in ("NotOlderThan", "Exact"):
                raise errors.bad_request(f'resourceVersionMatch: Unsupported value: "{rvm}"')
            if rvm == "Exact" and q.get("resourceVersion") and q.get("resourceVersion") != str(self.store.rv):
                raise errors.expired(f"too old resource version: {q.get('resourceVersion')} ({self.store.rv})")
            result = await converting.list_objects(
                engine, rt, version,
                lambda v: engine.list_objects(rt, v, ns, labels=labels, fields=fields, limit=limit, cont=q.get("continue")),
            )
            return self._list_response(request, target, result, fmt)
        if method == "GET":
            assert target.name is not None
            name = target.name
            obj = await converting.run(engine, rt, version, lambda: engine.get(rt, version, ns or "", name))
            stored = self.store.get(rt.bucket, ns or "" if rt.namespaced else "", target.name)
            return self._respond(request, target, obj, 200, Ctx(), fmt, stored=stored)
        ctx = self._ctx(request, user)
        if method == "POST":
            if target.name is not None:
                raise errors.method_not_allowed()
            body = await self._body(request, ctx, target)
            if (rt.group, rt.kind) == ("authentication.k8s.io", "TokenReview"):
                obj = token_review.review(body, self.users)  # the engine does not know the tokens
            else:
                obj = await converting.run(engine, rt, version, lambda: engine.create(rt, version, ns or "", body, ctx))
            return self._respond(request, target, obj, 201, ctx, fmt)
        if method == "PUT":
            if target.name is None:
                raise errors.method_not_allowed()
            body = await self._body(request, ctx, target)
            name, sub = target.name, target.subresource
            obj, created = await converting.run(
                engine, rt, version, lambda: engine.update(rt, version, ns or "", name, body, ctx, subresource=sub)
            )
            return self._respond(request, target, obj, 201 if created else 200, ctx, fmt)
        if method == "PATCH":
            if target.name is None:
                raise errors.method_not_allowed()
            ctype = (request.content_type or "").lower()
            if ctype not in _PATCH_TYPES:
                raise errors.unsupported_media_type(_PATCH_TYPES)
            raw = await request.read()
            patch = _json_body(raw, "the patch") if raw else None
            if patch is None:
                raise errors.bad_request("the patch body is empty")
            name, sub = target.name, target.subresource
            obj = await converting.run(
                engine, rt, version, lambda: engine.patch(rt, version, ns or "", name, ctype, patch, ctx, subresource=sub)
            )
            return self._respond(request, target, obj, 200, ctx, fmt)
        if method == "DELETE":
            options = await self._delete_options(request)
            if target.name is None:
                chosen = _selectors(request, rt)
                items = await converting.run(
                    engine, rt, version, lambda: engine.delete_collection(rt, version, ns, *chosen, options, ctx)
                )
                listing = _listing(target, {"resourceVersion": str(self.store.rv)}, items)
                if fmt.shape in (META, META_LIST):
                    listing = {**listing, "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{fmt.version}",
                               "items": [partial_metadata(o) for o in items]}
                if fmt.encoding == PROTOBUF:
                    return _json_response(protobuf.encode(listing), 200, ctx.warnings, protobuf.CONTENT_TYPE)
                return self._json(listing, warnings=ctx.warnings)
            name = target.name
            obj, gone = await converting.run(engine, rt, version, lambda: engine.delete(rt, version, ns or "", name, options, ctx))
            if gone and not rt.returns_deleted_object:
                meta = obj.get("metadata", {})
                status = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": meta.get("name"), **({"group": rt.group} if rt.group else {}), "kind": rt.plural,
                                "uid": meta.get("uid")},
                }
                if fmt.encoding == PROTOBUF:
                    return _json_response(protobuf.encode_status(status), 200, ctx.warnings, protobuf.CONTENT_TYPE)
                return self._json(status, warnings=ctx.warnings)
            return self._respond(request, target, obj, 200, ctx, fmt)
        raise errors.method_not_allowed()

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        options: dict[str, Any] = {}
        raw = await request.read()
        if raw and (request.content_type or "").lower() == protobuf.CONTENT_TYPE:
            options.update(protobuf.decode_delete_options(raw))
        elif raw:
            body = _json_body(raw, "the DeleteOptions body")
            if isinstance(body, dict):
                options.update(body)
        q = request.query
        if q.get("propagationPolicy"):
            options["propagationPolicy"] = q["propagationPolicy"]
        if q.get("orphanDependents") is not None:
            options["orphanDependents"] = _truthy(q["orphanDependents"])
        if "dryRun" in q:
            options["dryRun"] = q.getall("dryRun")
        return options

    def _list_response(self, request: web.Request, target: _Target, result: Any, fmt: Media) -> web.Response:
        assert self.store is not None
        rt, version = target.rt, target.version
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.cont or not rt.builtin:
            meta["continue"] = result.cont or ""  # a custom resource list always has one, maybe empty
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        if fmt.shape == TABLE:
            include = request.query.get("includeObject", "Metadata")
            body = table(
                result.items,
                rt.versions[version].columns,
                include=include,
                resource_version=result.resource_version,
                cont=result.cont,
                remaining=result.remaining,
            )
            body["apiVersion"] = f"meta.k8s.io/{fmt.version}"
            return self._json(body)
        if fmt.encoding == YAML:
            listing = _listing(target, meta, result.items)
            return web.Response(text=yaml.safe_dump(listing, sort_keys=False), content_type="application/yaml")
        if fmt.shape in (META, META_LIST):
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{fmt.version}",
                "metadata": meta,
                "items": [partial_metadata(o) for o in result.items],
            }
            if fmt.encoding == PROTOBUF:
                return web.Response(body=protobuf.encode(body), content_type=protobuf.CONTENT_TYPE)
            return self._json(body)
        if fmt.encoding == PROTOBUF:
            listing = _listing(target, meta, result.items)
            return web.Response(body=protobuf.encode(listing), content_type=protobuf.CONTENT_TYPE)
        head: bytes = _dumps({"kind": rt.list_kind, "apiVersion": rt.api_version(version), "metadata": meta})
        if rt.builtin:
            # kube-apiserver leaves a built-in list's items without apiVersion and kind (a custom
            # resource list's items keep theirs).
            parts = [_dumps({k: v for k, v in o.items() if k not in ("apiVersion", "kind")}) for o in result.items]
        elif all(a is b for a, b in zip(result.items, result.raw, strict=True)):
            parts = [self.store.encode_stored(rt.bucket, o) for o in result.raw]
        else:
            parts = [_dumps(o) for o in result.items]
        payload = head[:-1] + b',"items":[' + b",".join(parts) + b"]}"
        return web.Response(body=payload, content_type="application/json")

    # watch --------------------------------------------------------------------------------------

    def _encode_event(
        self,
        target: _Target,
        kind: str,
        event: Event,
        fmt: Media,
        include: str,
        first: bool,
    ) -> bytes:
        assert self.engine is not None and self.store is not None
        rt, version = target.rt, target.version
        if fmt.encoding == PROTOBUF:
            cache_key = (kind, f"protobuf|{fmt.shape}|{rt.group}/{version}")
            found = event.encoded.get(cache_key)
            if found is None:
                obj = self.engine.to_version(rt, version, event.obj)
                pb_shown = obj if fmt.shape == OBJECT else self._present(target, obj, fmt, None)
                found = event.encoded[cache_key] = protobuf.watch_frame(kind, protobuf.encode(pb_shown))
            return found
        if fmt.encoding == JSON and fmt.shape == OBJECT:
            conv = "" if (rt.from_storage is None and version == rt.storage_version) else f"{rt.group}/{version}"
            cache_key = (kind, conv)
            found = event.encoded.get(cache_key)
            if found is not None:
                return found
            if conv:
                payload = _dumps(self.engine.to_version(rt, version, event.obj))
            else:
                payload = event.encoded.get(("", "")) or _dumps(event.obj)
                event.encoded[("", "")] = payload
            line = b'{"type":"' + kind.encode() + b'","object":' + payload + b"}\n"
            event.encoded[cache_key] = line
            return line
        obj = self.engine.to_version(rt, version, event.obj)
        if fmt.shape == TABLE:
            shown: Any = table([obj], rt.versions[version].columns, include=include, headers=first)
            shown["apiVersion"] = f"meta.k8s.io/{fmt.version}"
            shown["metadata"] = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        elif fmt.shape in (META, META_LIST):
            shown = self._present(target, obj, fmt, None)
        else:
            shown = obj
        return _dumps({"type": kind, "object": shown}) + b"\n"

    def _bookmark(self, target: _Target, rv: int, fmt: Media, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": target.rt.kind, "apiVersion": target.rt.api_version(target.version), "metadata": meta}
        if fmt.shape in (META, META_LIST):
            obj = {**partial_metadata(obj), "apiVersion": f"meta.k8s.io/{fmt.version}"}
        if fmt.encoding == PROTOBUF:
            return protobuf.watch_frame("BOOKMARK", protobuf.encode(obj))
        return _dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    @staticmethod
    def _watch_error(status: dict[str, Any], fmt: Media) -> bytes:
        if fmt.encoding == PROTOBUF:
            return protobuf.watch_frame("ERROR", protobuf.encode_status(status))
        return _dumps({"type": "ERROR", "object": status}) + b"\n"

    async def _watch(
        self,
        request: web.Request,
        target: _Target,
        labels: LabelSelector,
        fields: FieldSelector,
        fmt: Media,
    ) -> web.StreamResponse:
        assert self.engine is not None and self.store is not None
        q = request.query
        timeout = _int_param(q.get("timeoutSeconds"), "timeoutSeconds")
        bookmarks = _truthy(q.get("allowWatchBookmarks"))
        send_initial_param = q.get("sendInitialEvents")
        send_initial = None if send_initial_param is None else _truthy(send_initial_param)
        if send_initial and not bookmarks:
            raise errors.invalid(
                "meta.k8s.io", "ListOptions", "",
                [errors.cause("FieldValueForbidden", "allowWatchBookmarks", "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true")],
            )
        include = q.get("includeObject", "Metadata")
        content_type = protobuf.WATCH_CONTENT_TYPE if fmt.encoding == PROTOBUF else "application/json"
        response = web.StreamResponse(status=200, headers={"Content-Type": content_type, "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        try:
            watcher, first = self.engine.watch(
                target.rt,
                target.namespace,
                labels,
                fields,
                q.get("resourceVersion"),
                version=target.version,
                send_initial=send_initial,
            )
        except ApiError as exc:
            if exc.code != 410:
                raise
            with contextlib.suppress(ConnectionResetError):  # the client is gone: nothing to say
                await response.prepare(request)
                await response.write(self._watch_error(exc.status(), fmt))
                await response.write_eof()
            return response
        watcher.bookmarks = bookmarks
        start_rv = self.store.rv
        deadline = time.monotonic() + timeout if timeout else None
        headers_sent = False
        try:
            await converting.prefill_events(self.engine, target.rt, target.version, first)
            await response.prepare(request)
            chunk = bytearray()
            for kind, ev in first:
                assert isinstance(ev, Event)
                chunk += self._encode_event(target, kind, ev, fmt, include, not headers_sent)
                headers_sent = True
            if send_initial:
                chunk += self._bookmark(target, start_rv, fmt, initial_end=True)
            if chunk:
                await response.write(bytes(chunk))
            await self._pump(response, watcher, target, fmt, include, deadline, bookmarks, headers_sent)
        except ConnectionResetError:
            # The client went away while an event was on its way (a controller stopping, a
            # dropped connection): the watch is simply over, as kube-apiserver ends it.
            return response
        finally:
            self.store.remove_watcher(watcher)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
        return response

    async def _pump(
        self,
        response: web.StreamResponse,
        watcher: Watcher,
        target: _Target,
        fmt: Media,
        include: str,
        deadline: float | None,
        bookmarks: bool,
        headers_sent: bool,
    ) -> None:
        assert self.store is not None and self.engine is not None
        queue = watcher.queue
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                # Events are queued when they are committed, so once the queue is drained (no
                # await in between) every event up to store.rv is in `rest`: only then may the
                # closing bookmark name store.rv, which a client resumes from.
                items, closed = self._take_queued(queue)
                rv = self.store.rv
                await converting.prefill_events(self.engine, target.rt, target.version, items)
                rest = self._encode_items(target, items, fmt, include, headers_sent)
                if bookmarks and not closed:
                    rest += self._bookmark(target, rv, fmt)
                if rest:
                    await response.write(bytes(rest))
                return
            try:
                item = await asyncio.wait_for(queue.get(), wait) if wait is not None else await queue.get()
            except TimeoutError:
                continue
            items = [item]
            while not queue.empty() and len(items) < WATCH_BATCH:
                items.append(queue.get_nowait())
            closed = items[-1][0] == "CLOSE"
            try:
                await converting.prefill_events(self.engine, target.rt, target.version, items)
            except ApiError as exc:  # the conversion webhook failed: the watch ends with its error
                await response.write(self._watch_error(exc.status(), fmt))
                return
            chunk = self._encode_items(target, items, fmt, include, headers_sent)
            headers_sent = headers_sent or any(kind not in ("CLOSE", "BOOKMARK") for kind, _ in items)
            if chunk:
                await response.write(bytes(chunk))
            if closed:
                return

    @staticmethod
    def _take_queued(queue: asyncio.Queue[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], bool]:
        """Everything queued for a watch, up to a CLOSE; and whether there was one (an
        overflowed watcher, whose client must resume from its last event, not a bookmark)."""
        items: list[tuple[str, Any]] = []
        while not queue.empty():
            item = queue.get_nowait()
            if item[0] == "CLOSE":
                return items, True
            items.append(item)
        return items, False

    def _encode_items(
        self, target: _Target, items: list[tuple[str, Any]], fmt: Media, include: str, headers_sent: bool
    ) -> bytearray:
        chunk = bytearray()
        for kind, payload in items:
            if kind == "CLOSE":
                break
            if kind == "BOOKMARK":
                chunk += self._bookmark(target, int(payload), fmt)
            else:
                chunk += self._encode_event(target, kind, payload, fmt, include, not headers_sent)
                headers_sent = True
        return chunk


# Watch events encoded and written at once, at most.
WATCH_BATCH = 512

_CREDENTIALS: dict[str, tls_module.Credentials] = {}
_CREDENTIALS_LOCK = threading.Lock()


def _credentials_for(host: str) -> tls_module.Credentials:
    """Serving credentials for `host`, generated once per process (hubs in tests share them)."""
    with _CREDENTIALS_LOCK:
        found = _CREDENTIALS.get(host)
        if found is None:
            found = _CREDENTIALS[host] = tls_module.generate([host])
        return found


_METHODS: dict[str, tuple[str, ...]] = {
    "get": ("GET",),
    "list": ("GET",),
    "watch": ("GET",),
    "create": ("POST",),
    "update": ("PUT",),
    "patch": ("PATCH",),
    "delete": ("DELETE",),
    "deletecollection": ("DELETE",),
}
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


class _DuplicateField(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateField(k)
        out[k] = v
    return out


def _json_response(
    body: bytes, status: int = 200, warnings: Iterable[str] = (), content_type: str = "application/json"
) -> web.Response:
    """A response with `Warning` headers (a JSON body unless `content_type` says otherwise)."""
    resp = web.Response(status=status, body=body, content_type=content_type)
    for w in warnings:
        quoted = w.replace("\\", "\\\\").replace('"', '\\"')  # a quoted-string, as kube-apiserver writes it
        resp.headers.add("Warning", f'299 - "{quoted}"')
    return resp


def _has_protobuf(target: _Target) -> bool:
    """Built-in kinds have a protobuf form; custom resources are JSON (and YAML) only."""
    return protobuf.supports(target.rt.api_version(target.version), target.rt.kind)


def _selectors(request: web.Request, rt: ResourceType) -> tuple[LabelSelector, FieldSelector]:
    q = request.query
    return LabelSelector.parse(q.get("labelSelector")), FieldSelector.parse(q.get("fieldSelector"), rt.field_selectors)


def _listing(target: _Target, meta: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """A `<Kind>List` of the target's resource."""
    return {"kind": target.rt.list_kind, "apiVersion": target.rt.api_version(target.version), "metadata": meta, "items": items}


def _json_body(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.bad_request(f"{what} is not valid JSON: {exc}") from exc


def _int_param(value: str | None, name: str) -> int:
    if value in (None, ""):
        return 0
    try:
        n = int(value)
    except ValueError as exc:
        raise errors.bad_request(f"{name}: invalid integer {value!r}") from exc
    if n < 0:
        raise errors.bad_request(f"{name}: must be non-negative")
    return n


# running in a thread ------------------------------------------------------------------------------


class HubThread:
    """A LocalHub running on its own event loop in a daemon thread."""

    def __init__(self, hub: LocalHub, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.hub = hub
        self.loop = loop
        self.thread = thread
        self.kubeconfig: Path | None = None

    @property
    def url(self) -> str:
        return self.hub.url

    @property
    def token(self) -> str:
        return self.hub.token

    @property
    def port(self) -> int:
        return self.hub.port

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the hub's loop (e.g. to inspect `hub.store`) and return its result."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def run(self, coro: Awaitable[T]) -> T:
        async def wrap() -> T:
            return await coro

        return asyncio.run_coroutine_threadsafe(wrap(), self.loop).result(timeout=60)

    def write_kubeconfig(self, path: str | Path) -> Path:
        self.kubeconfig = self.hub.write_kubeconfig(path)
        return self.kubeconfig

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self.hub.stop(), self.loop)
        try:
            fut.result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)

    def __enter__(self) -> HubThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_in_thread(*, kubeconfig: str | Path | None = None, **kwargs: Any) -> HubThread:
    """Start a LocalHub (same arguments) in a background thread; returns once it serves."""
    hub = LocalHub(**kwargs)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(hub.start())
        except BaseException as exc:
            failure.append(exc)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    thread = threading.Thread(target=main, name=f"localhub-{id(hub):x}", daemon=True)
    thread.start()
    ready.wait()
    if failure:
        raise failure[0]
    handle = HubThread(hub, loop, thread)
    if kubeconfig is not None:
        handle.write_kubeconfig(kubeconfig)
    return handle


# command line -------------------------------------------------------------------------------------


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ocm_rollout.sandbox.server", description="Run the local hub API server alone.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: pick a free one)")
    parser.add_argument("--data", help="SQLite file to persist objects in (default: in memory)")
    parser.add_argument("--crds", action="append", help="CRD file or directory (repeatable; default: the project's CRDs)")
    parser.add_argument("--kubeconfig", default=".ocm-rollout/kubeconfig", help="where to write the kubeconfig")
    parser.add_argument("--token", help="bearer token to require (default: a random one)")
    parser.add_argument("--request-log", help="append every request as a JSON line to this file")
    parser.add_argument("--history", type=int, default=MAX_CAPACITY, help="at most this many watch events kept per resource")
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain HTTP (kubectl will not send the token then; for Python clients only)",
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    hub = LocalHub(
        port=args.port,
        data=args.data,
        crds=args.crds,
        token=args.token,
        host=args.host,
        history=args.history,
        request_log=args.request_log,
        tls=not args.insecure_http,
    )
    await hub.start()
    path = hub.write_kubeconfig(args.kubeconfig)
    print(f"local hub serving at {hub.url}")
    print(f"kubeconfig: {path}  (try: kubectl --kubeconfig {path} api-resources)", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await hub.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    tune_collector()
    try:
        asyncio.run(_serve(args))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
