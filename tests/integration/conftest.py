"""Shared fixtures: a running local hub and clients configured for it.

- `controller_hub` (module scope, one run per hub kind: see tests/conftest.py): the hub a
  module's controllers run on, the shared `hub` or the shared kube-apiserver (`shared_kube_hub`,
  one per session worker, started on first use); `controller_kubeconfig`: its kubeconfig.
- `hub`: one hub for the whole session (the project's CRDs from `ocm_rollout.api.crdgen`), running in a
  background thread; `hub.url`, `hub.token`, `hub.kubeconfig` (a written kubeconfig path),
  `hub.hub` (the `LocalHub`), `hub.call(fn)` (run `fn` on the hub's loop).
- `kubeconfig`: path of that hub's kubeconfig (for kopf, kubectl, controllers).
- `api_client`: a `kubernetes.client.ApiClient` for it.
- `namespace`: a fresh namespace for one test, deleted afterwards.
- `make_hub(**kwargs)`: a fresh, isolated hub (same arguments as `LocalHub`), stopped after the
  test; use it when a test needs its own resourceVersions, history size or data file.
- `client_for(handle)`: an ApiClient for any hub handle.
- `wait_for(predicate, timeout=..., message=...)`: poll a condition instead of sleeping
  (`wait_until` from tests/integration/helpers.py, also importable from here).
- `run_hub`: a fresh hub that records requests, with users proc-a/b/c (helpers.Hub), for
  tests that run `ocm-rollout run` processes; `processes`: every process a test starts
  (helpers.RunProcess), killed at the end whatever happened.
- `sim_hub`: a fresh hub for simulated clusters; `start_sim(clusters=2, profile=None)`: a
  started helpers.SimThread on it (stopped after the test); `sim_api`: a CustomObjectsApi for it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from ocm_rollout.sandbox.server import HubThread
from tests.hub_kinds import LOCAL
from tests.hubs import hub_thread, kube_hub
from tests.integration.helpers import Hub, RunProcess, SimThread, user_tokens, wait_until, with_users

__all__ = ["WIDGET_GROUP", "api", "gadget_crd", "http", "wait_until", "widget_crd"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


def _client(handle: HubThread) -> client.ApiClient:
    assert handle.kubeconfig is not None
    return config.new_client_from_config(config_file=str(handle.kubeconfig))


def _running_hub(directory: Path, **kwargs: Any) -> Iterator[HubThread]:
    handle = hub_thread(kubeconfig=directory / "kubeconfig", **kwargs)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubThread]:
    yield from _running_hub(tmp_path_factory.mktemp("hub"))


@pytest.fixture(scope="session")
def shared_kube_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One kube-apiserver (with etcd and kube-controller-manager) for the session's worker, started
    when a module first asks for it: the ``kube-apiserver`` counterpart of ``hub``."""
    directory = tmp_path_factory.mktemp("kube-hub")
    handle = kube_hub(directory / "control-plane", kubeconfig=directory / "kubeconfig")
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def controller_hub(hub_kind: str, request: pytest.FixtureRequest) -> Any:
    """The hub a module's controllers run on: the session's shared ``hub`` for ``local``, the
    session's shared kube-apiserver (``shared_kube_hub``) for ``kube-apiserver``. Modules keep
    to their own namespaces, names and leases on either, as they always did on the local one."""
    return request.getfixturevalue("hub" if hub_kind == LOCAL else "shared_kube_hub")


@pytest.fixture(scope="module")
def controller_kubeconfig(controller_hub: Any) -> Path:
    """``controller_hub``'s kubeconfig."""
    path: Path = controller_hub.kubeconfig
    return path


@pytest.fixture(scope="session")
def kubeconfig(hub: HubThread) -> Path:
    assert hub.kubeconfig is not None
    return hub.kubeconfig


def _closing_client(handle: HubThread) -> Iterator[client.ApiClient]:
    api = _client(handle)
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def api_client(hub: HubThread) -> Iterator[client.ApiClient]:
    yield from _closing_client(hub)


@pytest.fixture
def client_for() -> Iterator[Callable[[HubThread], client.ApiClient]]:
    made: list[client.ApiClient] = []

    def make(handle: HubThread) -> client.ApiClient:
        api = _client(handle)
        made.append(api)
        return api

    yield make
    for api in made:
        api.close()


def _namespace_name(request: pytest.FixtureRequest) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")
    return f"{base[:50].rstrip('-')}-{uuid.uuid4().hex[:6]}"


def _fresh_namespace(request: pytest.FixtureRequest, api_client: client.ApiClient) -> Iterator[str]:
    core = api("CoreV1Api", api_client)
    name = _namespace_name(request)
    core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        try:
            core.delete_namespace(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def namespace(request: pytest.FixtureRequest, api_client: client.ApiClient) -> Iterator[str]:
    yield from _fresh_namespace(request, api_client)


@pytest.fixture
def make_hub(tmp_path: Path) -> Iterator[Callable[..., HubThread]]:
    started: list[HubThread] = []

    def make(**kwargs: Any) -> HubThread:
        kubeconfig_path = kwargs.pop("kubeconfig", None) or tmp_path / f"kubeconfig-{len(started)}"
        handle = hub_thread(kubeconfig=kubeconfig_path, **kwargs)
        started.append(handle)
        return handle

    yield make
    for handle in reversed(started):
        handle.stop()


@pytest.fixture
def wait_for() -> Callable[..., Any]:
    return wait_until


@pytest.fixture
def run_hub(make_hub: Callable[..., HubThread], tmp_path: Path) -> Hub:
    tokens = user_tokens()
    return with_users(make_hub(record_requests=True, tokens=tokens), tmp_path, tokens)


@pytest.fixture
def run_any_hub(hub_kind: str, make_hub: Callable[..., HubThread], tmp_path: Path) -> Iterator[Hub]:
    """``run_hub`` on either hub kind: on kube-apiserver, the users are static-token users in
    ``system:masters`` and their requests are read back from its audit log."""
    if hub_kind == LOCAL:
        tokens = user_tokens()
        yield with_users(make_hub(record_requests=True, tokens=tokens), tmp_path, tokens)
        return
    names = sorted(set(user_tokens().values()))
    handle = kube_hub(tmp_path / "kube-hub", kubeconfig=tmp_path / "admin.kubeconfig", audited_users=names,
                      users={name: ("system:masters",) for name in names})
    try:
        yield with_users(handle, tmp_path, {handle.hub.user_token(name): name for name in names})
    finally:
        handle.stop()


@pytest.fixture
def processes() -> Iterator[list[RunProcess]]:
    started: list[RunProcess] = []
    yield started
    for proc in started:
        proc.kill()



@pytest.fixture
def sim_hub(make_hub: Callable[..., HubThread]) -> HubThread:
    """A fresh hub per test: the simulated clusters are cluster-scoped and always cluster1..N."""
    return make_hub()


@pytest.fixture
def start_sim(sim_hub: HubThread) -> Iterator[Callable[..., SimThread]]:
    running: list[SimThread] = []

    def start(*, clusters: int = 2, profile: dict[str, Any] | None = None) -> SimThread:
        assert sim_hub.kubeconfig is not None
        sim = SimThread(sim_hub.kubeconfig, clusters=clusters, profile=profile).start()
        running.append(sim)
        return sim

    yield start
    for sim in running:
        sim.stop()


@pytest.fixture
def sim_api(sim_hub: HubThread, client_for: Callable[[HubThread], client.ApiClient]) -> Any:
    """A CustomObjectsApi (official client) for ``sim_hub``."""
    return client.CustomObjectsApi(client_for(sim_hub))

WIDGET_GROUP = "test.ocm-rollout.io"


def widget_crd(*, with_status: bool = True) -> dict[str, Any]:
    """A small CRD exercising every schema feature the hub implements."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["size"],
                "x-kubernetes-validations": [
                    {"rule": "self.size <= 100 || self.mode == 'Big'", "message": "sizes above 100 need mode Big"}
                ],
                "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "mode": {"type": "string", "enum": ["Small", "Big"], "default": "Small"},
                    "color": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
                    "port": {"x-kubernetes-int-or-string": True},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "nested": {
                        "type": "object",
                        "default": {},
                        "properties": {"depth": {"type": "integer", "default": 3}},
                    },
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "default": 1}},
                        },
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "note": {"type": "string", "nullable": True},
                    "manifest": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string"},
                    "observedGeneration": {"type": "integer"},
                },
            },
        },
    }
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    if with_status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{WIDGET_GROUP}"},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wd"],
                "categories": ["toys"],
            },
            "versions": [version],
        },
    }


def gadget_crd() -> dict[str, Any]:
    """A cluster-scoped CRD without a status subresource."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{WIDGET_GROUP}"},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": "Cluster",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


@pytest.fixture(scope="session")
def toy_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubThread]:
    """A session hub serving only the Widget (namespaced, status) and Gadget (cluster) test CRDs."""
    yield from _running_hub(tmp_path_factory.mktemp("toyhub"), crds=[widget_crd(), gadget_crd()], bookmark_interval=0.2)


@pytest.fixture(scope="session")
def toy_client(toy_hub: HubThread) -> Iterator[client.ApiClient]:
    yield from _closing_client(toy_hub)


@pytest.fixture
def toy_namespace(request: pytest.FixtureRequest, toy_client: client.ApiClient) -> Iterator[str]:
    yield from _fresh_namespace(request, toy_client)


def http(
    handle: HubThread,
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    token: str | None = None,
    timeout: float = 30.0,
    stream: bool = False,
) -> Any:
    """A raw authenticated request (urllib3 response) for what the typed clients cannot express."""
    import json as _json

    import urllib3

    ca = handle.hub.ca_pem
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_cert_data=ca.decode()) if ca else urllib3.PoolManager()
    all_headers = {"Authorization": f"Bearer {token or handle.token}", **(headers or {})}
    data = None
    if body is not None:
        data = body if isinstance(body, (bytes, str)) else _json.dumps(body)
        all_headers.setdefault("Content-Type", "application/json")
    return pool.request(
        method, handle.url + path, body=data, headers=all_headers, timeout=timeout, preload_content=not stream
    )


def api(kind: str, api_client: client.ApiClient) -> Any:
    """`client.<kind>(api_client)`, untyped: tests pass plain dicts where the typed models expect objects."""
    return getattr(client, kind)(api_client)
