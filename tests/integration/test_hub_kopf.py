"""kopf runs against the hub end to end: watch, handlers, finalizers, annotations, status, events."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kopf.testing import KopfRunner
from kubernetes import client

from ocm_rollout.sandbox.server import HubThread
from tests.integration.conftest import WIDGET_GROUP, api

G, V = WIDGET_GROUP, "v1"

OPERATOR = textwrap.dedent(
    f"""
    import kopf

    @kopf.on.login()
    def login(**kwargs):
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.watching.server_timeout = 10
        settings.posting.level = 0

    @kopf.on.create("{G}", "{V}", "widgets")
    def created(spec, patch, **_):
        patch.status["phase"] = "created-" + str(spec["size"])

    @kopf.on.update("{G}", "{V}", "widgets", field="spec.size")
    def resized(new, patch, **_):
        patch.status["phase"] = "resized-" + str(new)

    @kopf.on.delete("{G}", "{V}", "widgets")
    def deleted(name, namespace, **_):
        kopf.info({{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": name, "namespace": namespace}}}},
                  reason="Farewell", message="widget " + name + " deleted")
    """
)


def test_kopf_operator_handles_create_update_and_delete(
    toy_hub: HubThread,
    toy_client: client.ApiClient,
    toy_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wait_for: Callable[..., Any],
) -> None:
    assert toy_hub.kubeconfig is not None
    monkeypatch.setenv("KUBECONFIG", str(toy_hub.kubeconfig))
    operator = tmp_path / "operator.py"
    operator.write_text(OPERATOR)
    crs = api("CustomObjectsApi", toy_client)
    core = api("CoreV1Api", toy_client)

    def get() -> dict[str, Any]:
        return dict(crs.get_namespaced_custom_object(G, V, toy_namespace, "widgets", "k"))

    args = ["run", "--standalone", "--namespace", toy_namespace, str(operator)]
    with KopfRunner(args, timeout=60) as runner:
        body = {"apiVersion": f"{G}/{V}", "kind": "Widget", "metadata": {"name": "k"}, "spec": {"size": 1}}
        crs.create_namespaced_custom_object(G, V, toy_namespace, "widgets", body)
        wait_for(lambda: get().get("status", {}).get("phase") == "created-1", timeout=30, message="kopf's create handler")
        obj = get()
        assert obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
        assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]

        crs.patch_namespaced_custom_object(G, V, toy_namespace, "widgets", "k", {"spec": {"size": 7}})
        wait_for(lambda: get().get("status", {}).get("phase") == "resized-7", timeout=30, message="kopf's update handler")

        crs.delete_namespaced_custom_object(G, V, toy_namespace, "widgets", "k")

        def gone() -> bool:
            try:
                get()
            except client.ApiException as exc:
                return exc.status == 404
            return False

        wait_for(gone, timeout=30, message="kopf to run its delete handler and release the finalizer")
        wait_for(
            lambda: any(e.reason == "Farewell" for e in core.list_namespaced_event(toy_namespace).items),
            timeout=30,
            message="kopf's event to be posted",
        )
    assert runner.exception is None
    assert runner.exit_code == 0
