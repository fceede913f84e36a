"""The dashboard's server against the local hub, through the real client: its JSON follows the
hub's watches, its stream tells the page within a second, its actions change the same state as
the CLI verbs, and every refusal (cross-origin, no token, read-only, the hub's own errors) is
answered with what went wrong."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import client

from ocm_rollout.cli.dashboard.server import Dashboard
from ocm_rollout.cli.dashboard.store import KINDS
from ocm_rollout.client.kube import Kube
from ocm_rollout.client.kubeconfig import load_client

pytestmark = pytest.mark.integration
GROUP, VERSION, PLURAL = "work.open-cluster-management.io", "v1alpha1", "manifestworkreplicasets"
TEMPLATE = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}, "data": {"v": "1"}}]}}


def replica_set(name: str, namespace: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"placementRefs": [{"name": "all", "rolloutStrategy": {"type": "All"}}], "manifestWorkTemplate": TEMPLATE},
    }


class Page:
    """A browser-like session: the page's cookie and token, then JSON requests."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url = url
        self.session = session
        self.token = ""

    async def open(self) -> str:
        async with self.session.get(self.url) as response:
            assert response.status == 200
            text = await response.text()
        found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', text)
        assert found is not None
        self.token = found.group(1)
        return text

    async def get(self, path: str) -> tuple[int, Any]:
        async with self.session.get(self.url + path.lstrip("/")) as response:
            return response.status, await response.json()

    async def act(self, body: dict[str, Any], *, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        sent = {"Content-Type": "application/json", "X-CSRF-Token": self.token, "Origin": self.url.rstrip("/")}
        sent.update(headers or {})
        async with self.session.post(self.url + "api/actions", json=body, headers=sent) as response:
            return response.status, await response.json()


@contextlib.asynccontextmanager
async def dashboard(kubeconfig: Path, *, read_only: bool = False) -> AsyncIterator[Page]:
    server = Dashboard(Kube(load_client(str(kubeconfig)), field_manager="dashboard-test"), read_only=read_only)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(server.serve("127.0.0.1", 0, ready=ready.set_result))
    try:
        url = await asyncio.wait_for(ready, 10)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            page = Page(url, session)
            await page.open()  # the first request: the dashboard lists and watches the hub from now on
            assert await server.store.synced(10), server.store.unsynced()
            yield page
    finally:
        server.stop.set()
        await asyncio.wait_for(serving, 10)


async def until(check: Any, timeout: float = 5.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def test_a_new_rollout_reaches_the_open_page_within_a_second(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    async with dashboard(kubeconfig) as page, page.session.get(page.url + "api/stream") as stream:
        assert (await stream.content.readline()).startswith(b"event: hello")
        await stream.content.readline()
        await stream.content.readline()
        started = asyncio.get_running_loop().time()
        await asyncio.to_thread(api.create_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
        line = await asyncio.wait_for(stream.content.readline(), 1.0)
        told = asyncio.get_running_loop().time() - started
        assert line.startswith(b"event: change"), line
        _, overview = await page.get("api/overview")
        keys = [r["key"] for r in overview["rollouts"]]
        assert f"mwrs/{namespace}/web" in keys and told < 1.0


async def test_pause_from_the_page_sets_spec_paused_and_resume_removes_it(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    api.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
    async with dashboard(kubeconfig) as page:
        body = {"verb": "pause", "kind": "mwrs", "namespace": namespace, "name": "web"}
        status, answer = await page.act(body)
        assert (status, answer["message"]) == (200, "manifestworkreplicaset.work.open-cluster-management.io/web paused")
        assert api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "web")["spec"]["paused"] is True

        async def shown_paused() -> Any:
            _, found = await page.get(f"api/rollouts/mwrs/{namespace}/web")
            return found if found["state"] == "Paused" else None

        found = await until(shown_paused)
        assert not found["actions"]["pause"]["enabled"] and found["actions"]["resume"]["enabled"]
        status, answer = await page.act({**body, "verb": "resume"})
        assert status == 200 and answer["message"].endswith("resumed")
        assert "paused" not in api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "web")["spec"]


async def test_a_verb_that_does_not_apply_is_refused_with_the_verbs_words(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
    async with dashboard(kubeconfig) as page:
        status, answer = await page.act({"verb": "retry", "kind": "mwrs", "namespace": namespace, "name": "web"})
        assert status == 409 and "is not aborted (status.abortedTime is not set)" in answer["error"]


async def test_the_hubs_refusals_are_answered_as_the_hub_said_them(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    created = api.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
    # A revision whose template the hub's schema refuses: undoing to it is the hub's 422.
    client.AppsV1Api(api_client).create_namespaced_controller_revision(namespace, {
        "metadata": {
            "name": "web-1", "labels": {"work.open-cluster-management.io/manifestworkreplicaset": f"{namespace}.web"},
            "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "ManifestWorkReplicaSet", "name": "web",
                                 "uid": created["metadata"]["uid"], "controller": True}],
        },
        "revision": 1,
        "data": {"spec": {"manifestWorkTemplate": {"workload": {"manifests": "not a list"}}}},
    })
    async with dashboard(kubeconfig) as page:
        status, answer = await page.act({"verb": "undo", "kind": "mwrs", "namespace": namespace, "name": "web", "toRevision": 1})
        assert status == 422 and answer["error"].startswith("Error from server (Invalid):"), answer
        status, answer = await page.act({"verb": "pause", "kind": "mwrs", "namespace": namespace, "name": "gone"})
        assert status == 404
        assert answer["error"] == 'Error from server (NotFound): manifestworkreplicasets.work.open-cluster-management.io "gone" not found'


async def test_cross_origin_and_tokenless_writes_are_refused(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    api.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
    async with dashboard(kubeconfig) as page:
        body = {"verb": "pause", "kind": "mwrs", "namespace": namespace, "name": "web"}
        status, answer = await page.act(body, headers={"Origin": "http://evil.example"})
        assert status == 403 and "cross-origin" in answer["error"]
        status, answer = await page.act(body, headers={"X-CSRF-Token": ""})
        assert status == 403 and "anti-CSRF" in answer["error"]
        assert "paused" not in api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "web")["spec"]


async def test_a_read_only_dashboard_offers_and_allows_no_action(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    api.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, replica_set("web", namespace))
    async with dashboard(kubeconfig, read_only=True) as page:
        assert 'name="read-only" content="true"' in await page.open()
        _, found = await page.get(f"api/rollouts/mwrs/{namespace}/web")
        assert found["actions"] is None and found["readOnly"] is True
        status, answer = await page.act({"verb": "pause", "kind": "mwrs", "namespace": namespace, "name": "web"})
        assert status == 403 and "read-only" in answer["error"]
        assert "paused" not in api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "web")["spec"]


async def test_pages_carry_a_content_security_policy_and_unknown_objects_are_404(kubeconfig: Path) -> None:
    async with dashboard(kubeconfig) as page:
        async with page.session.get(page.url) as response:
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
            assert response.headers["X-Frame-Options"] == "DENY"
        status, answer = await page.get("api/rollouts/mwrs/nowhere/nothing")
        assert status == 404 and answer["error"] == 'ManifestWorkReplicaSet "nothing" not found in namespace "nowhere"'


async def test_an_addon_rollout_is_listed_shown_and_paused_from_the_page(kubeconfig: Path, api_client: client.ApiClient, namespace: str) -> None:
    api = client.CustomObjectsApi(api_client)
    name = f"addon-{namespace}"
    api.create_cluster_custom_object("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons", {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn", "metadata": {"name": name},
        "spec": {"installStrategy": {"type": "Placements", "placements": [
            {"name": "canary", "namespace": namespace, "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}}},
        ]}},
    })
    try:
        async with dashboard(kubeconfig) as page:
            _, overview = await page.get("api/overview")
            assert f"addon/{name}" in [r["key"] for r in overview["rollouts"]]
            status, found = await page.get(f"api/rollouts/addon/{name}")
            assert status == 200 and [(p["name"], p["error"]) for p in found["placements"]] == [
                (f"{namespace}/canary", "Placement not found")
            ]
            assert found["actions"]["pause"]["enabled"] and not found["actions"]["resume"]["enabled"]
            status, answer = await page.act({"verb": "pause", "kind": "addon", "name": name})
            assert (status, answer["message"]) == (200, f"clustermanagementaddon.addon.open-cluster-management.io/{name} paused")
            stored = api.get_cluster_custom_object("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons", name)
            assert stored["metadata"]["annotations"]["rollout.ocm-rollout.io/paused"] == "true"

            async def shown_paused() -> Any:
                _, found = await page.get(f"api/rollouts/addon/{name}")
                return found["state"] == "Paused"

            await until(shown_paused)
    finally:
        api.delete_cluster_custom_object("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons", name)


async def test_kinds_the_hub_refuses_to_list_are_named_on_every_page(kubeconfig: Path, tmp_path: Path) -> None:
    refused = tmp_path / "refused.kubeconfig"
    text = kubeconfig.read_text()
    refused.write_text(re.sub(r"token: \S+", "token: not-a-token", text))
    server = Dashboard(Kube(load_client(str(refused))))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(server.serve("127.0.0.1", 0, ready=ready.set_result))
    try:
        url = await asyncio.wait_for(ready, 10)
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "api/overview") as response:
                overview = await response.json()
            async with session.get(url + "healthz") as response:
                health = (response.status, await response.text())
        assert "manifestworkreplicasets" in overview["unsynced"] and overview["rollouts"] == []
        assert health[0] == 503 and "not listed yet: " in health[1]
    finally:
        server.stop.set()
        await asyncio.wait_for(serving, 10)


async def test_the_dashboard_lists_the_hub_from_its_first_request_and_answers_it_listed(
    kubeconfig: Path, api_client: client.ApiClient, namespace: str
) -> None:
    """Nobody has opened it: it neither lists nor watches. The first JSON request waits for the
    first listing and shows the fleet, not "Waiting for the hub to list"."""
    api = client.CustomObjectsApi(api_client)
    await asyncio.to_thread(api.create_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, replica_set("idle", namespace))
    server = Dashboard(Kube(load_client(str(kubeconfig))))
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(server.serve("127.0.0.1", 0, ready=ready.set_result))
    try:
        url = await asyncio.wait_for(ready, 10)
        await asyncio.sleep(1.0)  # listing this hub takes a fraction of that
        assert sorted(server.store.unsynced()) == sorted(r.plural for r in KINDS.values())
        assert all(cache.version == "" for cache in server.store.caches.values())
        async with aiohttp.ClientSession() as session, session.get(url + "api/overview") as response:
            overview = await response.json()
        assert overview["unsynced"] == []
        assert f"mwrs/{namespace}/idle" in [r["key"] for r in overview["rollouts"]]
    finally:
        server.stop.set()
        await asyncio.wait_for(serving, 10)
