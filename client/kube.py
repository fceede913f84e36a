"""A small async facade over the official ``kubernetes`` client for the controllers.

Objects travel as plain JSON dicts (the wire form); the controllers parse them through the
pydantic models in ``api/``. Every call goes through the same code path against a real cluster
and against the local hub: a kubeconfig (or the in-cluster config) and HTTP. Every request has
a timeout (``DEFAULT_REQUEST_TIMEOUT`` unless the ``Kube`` is given another, or the write fence
a shorter one).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode

import kubernetes
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from ocm_rollout.api import constants
from ocm_rollout.client import static_kubeconfig
from ocm_rollout.client.authrefresh import throttle_refresh
from ocm_rollout.client.fencing import UNFENCED, WriteFence

JSON = dict[str, Any]


class RequestTimeout(NamedTuple):
    """The longest a request may take: ``connect`` seconds to open a connection, then ``read``
    seconds for each wait on the answer (a tuple, as the kubernetes client takes it)."""

    connect: float
    read: float


DEFAULT_REQUEST_TIMEOUT = RequestTimeout(connect=10.0, read=30.0)
# The Accept header of a list of metadata only (as client-go's metadata client sends it).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
"""Every request of a ``Kube`` without a timeout of its own: an API server that accepts a
connection and never answers costs a worker at most this long, never forever."""


@dataclass(frozen=True)
class Resource:
    """One REST resource: ``group`` is "" for the core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


CLUSTER_GROUP = constants.CLUSTER_GROUP
WORK_GROUP = constants.WORK_GROUP
ADDON_GROUP = constants.ADDON_GROUP

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
MANAGED_CLUSTERS = Resource(CLUSTER_GROUP, "v1", "managedclusters", "ManagedCluster", namespaced=False)
MANAGED_CLUSTER_SETS = Resource(CLUSTER_GROUP, "v1beta2", "managedclustersets", "ManagedClusterSet", namespaced=False)
MANAGED_CLUSTER_SET_BINDINGS = Resource(CLUSTER_GROUP, "v1beta2", "managedclustersetbindings", "ManagedClusterSetBinding")
PLACEMENTS = Resource(CLUSTER_GROUP, "v1beta1", "placements", "Placement")
PLACEMENT_DECISIONS = Resource(CLUSTER_GROUP, "v1beta1", "placementdecisions", "PlacementDecision")
ADDON_PLACEMENT_SCORES = Resource(CLUSTER_GROUP, "v1alpha1", "addonplacementscores", "AddOnPlacementScore")
MANIFEST_WORKS = Resource(WORK_GROUP, "v1", "manifestworks", "ManifestWork")
MANIFEST_WORK_REPLICA_SETS = Resource(WORK_GROUP, "v1alpha1", "manifestworkreplicasets", "ManifestWorkReplicaSet")
CLUSTER_MANAGEMENT_ADDONS = Resource(
    ADDON_GROUP, "v1alpha1", "clustermanagementaddons", "ClusterManagementAddOn", namespaced=False
)
MANAGED_CLUSTER_ADDONS = Resource(ADDON_GROUP, "v1alpha1", "managedclusteraddons", "ManagedClusterAddOn")
ADDON_DEPLOYMENT_CONFIGS = Resource(ADDON_GROUP, "v1alpha1", "addondeploymentconfigs", "AddOnDeploymentConfig")
# Template revisions of ManifestWorkReplicaSets (ocm_rollout.controllers.workset.revisions).
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")


class KubeError(Exception):
    """A non-2xx answer from the API server, with its Status reason and message."""

    def __init__(
        self, status: int, reason: str, message: str, body: JSON | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        # Seconds the server asked us to wait before trying again (429 and 503 answers).
        self.retry_after = retry_after


class NotFound(KubeError):
    pass


class Conflict(KubeError):
    """409: a stale resourceVersion (reason Conflict) or an existing name (AlreadyExists)."""


class Invalid(KubeError):
    pass


class Forbidden(KubeError):
    pass


_ERRORS: dict[int, type[KubeError]] = {404: NotFound, 409: Conflict, 422: Invalid, 403: Forbidden}


def _retry_after(headers: Any, body: JSON) -> float | None:
    """``Retry-After`` (seconds) from the answer's headers, else the Status's retryAfterSeconds."""
    found = headers.get("Retry-After") if headers is not None and hasattr(headers, "get") else None
    if found is None:
        details = body.get("details")
        found = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    try:
        seconds = float(found) if found is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def error_from(status: int, reason: str, data: bytes | str | None, headers: Any = None) -> KubeError:
    """The ``KubeError`` (by status: ``NotFound``, ``Conflict``, ...) of an answer other than 2xx."""
    body: JSON = {}
    if data:
        try:
            parsed = json.loads(data)
            if isinstance(parsed, dict):
                body = parsed
        except ValueError:
            body = {"message": data.decode() if isinstance(data, bytes) else data}
    cls = _ERRORS.get(status, KubeError)
    message = str(body.get("message") or reason)
    return cls(status, str(body.get("reason") or reason), message, body, _retry_after(headers, body))


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    """An ApiClient from a kubeconfig file, or the in-cluster config when none is given and
    the process runs in a pod, or the default kubeconfig otherwise. Read without
    ``kubernetes.config`` where it is not needed (``static_kubeconfig``)."""
    configuration = kubernetes.client.Configuration()
    _configure(configuration, kubeconfig, context)
    throttle_refresh(configuration)
    return ApiClient(configuration)


def _configure(configuration: Any, kubeconfig: str | None, context: str | None) -> None:
    if kubeconfig is None:
        if static_kubeconfig.in_cluster(configuration):
            return
        if static_kubeconfig.in_pod():  # but something is amiss: the library says what, or falls back
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)
                return
            except kubernetes.config.ConfigException:
                pass
    if not static_kubeconfig.from_kubeconfig(configuration, kubeconfig, context):
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)


def send(
    api_client: ApiClient,
    method: str,
    path: str,
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    timeout: RequestTimeout | float | tuple[float, float],
    accept: str = "application/json",
) -> Any:
    """Send one request with ``api_client``'s credentials; the client's raw response (read it,
    or stream it with ``.response``). Every request of ours goes through here: ``Kube``, the
    watch caches' streams and the Lease client; but the simulated agents' heartbeats
    (``sandbox/lease_renewer.py``). ``timeout`` is required: no request waits for
    ever. Raises the client's ``ApiException`` on an answer it refuses."""
    url_path = path + ("?" + urlencode(query) if query else "")
    headers = {"Accept": accept, "Content-Type": content_type}
    serialized = api_client.param_serialize(
        method=method, resource_path=url_path, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    return api_client.call_api(*serialized, _request_timeout=timeout)


def _list_query(limit: int, label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    """The query of a list page of at most ``limit`` objects with these selectors."""
    query = {"limit": str(limit)}
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    return query


class Kube:
    """Async CRUD over JSON dicts. Calls run the sync client in worker threads."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        field_manager: str = "ocm-rollout",
        fence: WriteFence = UNFENCED,
        request_timeout: RequestTimeout = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        self.api_client = api_client
        self.field_manager = field_manager
        # Every request but a read is admitted by the lease fence right before it is sent.
        self.fence = fence
        if min(request_timeout) <= 0:
            # The kubernetes client reads a zero timeout as none at all.
            raise ValueError(f"request timeouts must be positive: {request_timeout}")
        self.request_timeout = request_timeout

    def _timeout(self, method: str) -> RequestTimeout | float:
        """The timeout of one request: ``request_timeout``; for a write the fence admits with a
        time of its own, that time (at most ``request_timeout.read``) as the limit of the whole
        request, connection included: the fence's promise is that the write is answered or
        abandoned by then."""
        admitted = None if method == "GET" else self.fence.admit()
        if admitted is None:
            return self.request_timeout
        return min(admitted, self.request_timeout.read)

    # -- the one primitive ------------------------------------------------------------------
    def request_sync(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> JSON:
        try:
            response = send(
                self.api_client, method, path, query=query, body=body, content_type=content_type,
                timeout=self._timeout(method), accept=accept,
            )
            data = response.read()
        except ApiException as exc:
            raise error_from(int(exc.status or 0), str(exc.reason), exc.body, exc.headers) from None
        if not 200 <= response.status <= 299:
            raise error_from(response.status, str(response.reason), data, getattr(response, "headers", None))
        if not data:
            return {}
        parsed = json.loads(data)
        return parsed if isinstance(parsed, dict) else {"items": parsed}

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> JSON:
        return await asyncio.to_thread(
            self.request_sync, method, path, query=query, body=body, content_type=content_type, accept=accept
        )

    # -- verbs ------------------------------------------------------------------------------
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> JSON:
        return await self.request("GET", res.path(namespace, name))

    async def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> JSON | None:
        try:
            return await self.get(res, name, namespace)
        except NotFound:
            return None

    async def list_objects(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> list[JSON]:
        """Every object, following ``continue`` tokens; ``namespace=None`` lists all namespaces.
        ``metadata_only``: each object's metadata alone (a ``PartialObjectMetadataList``, as
        client-go's metadata client asks; a fraction of the bytes of a list of full objects)."""
        accept = METADATA_LIST if metadata_only else "application/json"
        items: list[JSON] = []
        query = _list_query(500, label_selector, field_selector)
        while True:
            page = await self.request("GET", res.path(namespace), query=query, accept=accept)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = token

    async def list_version(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> str:
        """The resourceVersion of a list read now (a page of at most one object's metadata): the
        API's state of ``res`` as of this request, every change before it included."""
        query = _list_query(1, label_selector, field_selector)
        page = await self.request("GET", res.path(namespace), query=query, accept=METADATA_LIST)
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    async def create(self, res: Resource, body: JSON, namespace: str | None = None) -> JSON:
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        return await self.request(
            "POST", res.path(namespace), body=body, query={"fieldManager": self.field_manager}
        )

    async def replace(self, res: Resource, body: JSON, namespace: str | None = None) -> JSON:
        name = body["metadata"]["name"]
        return await self.request(
            "PUT", res.path(namespace, name), body=body, query={"fieldManager": self.field_manager}
        )

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: JSON | list[JSON],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> JSON:
        """A merge patch (dict) or a JSON patch (list of operations)."""
        content_type = "application/json-patch+json" if isinstance(patch, list) else "application/merge-patch+json"
        return await self.request(
            "PATCH",
            res.path(namespace, name, subresource),
            body=patch,
            content_type=content_type,
            query={"fieldManager": self.field_manager},
        )

    async def patch_status(self, res: Resource, name: str, patch: JSON | list[JSON], namespace: str | None = None) -> JSON:
        return await self.patch(res, name, patch, namespace, subresource="status")

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        ignore_missing: bool = True,
        preconditions: JSON | None = None,
    ) -> JSON | None:
        """Delete an object; ``preconditions`` (``uid``, ``resourceVersion``) make the API server
        refuse it (409 Conflict) when the object is not that one any more."""
        body: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        try:
            return await self.request("DELETE", res.path(namespace, name), body=body)
        except NotFound:
            if ignore_missing:
                return None
            raise
