"""apps/v1 ControllerRevisions on the local hub, as kube-apiserver serves them: the typed client
creates, lists by label and patches them; ``data`` keeps any JSON; owner references collect them."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from tests.integration.conftest import api


def revision(name: str, number: int, template: dict[str, Any], labels: dict[str, str]) -> client.V1ControllerRevision:
    return client.V1ControllerRevision(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        data={"spec": {"manifestWorkTemplate": template}},
        revision=number,
    )


def test_controller_revisions_are_served_at_apps_v1(api_client: client.ApiClient, namespace: str) -> None:
    apps = api("AppsV1Api", api_client)
    template = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}}
    apps.create_namespaced_controller_revision(namespace, revision("web-abc", 1, template, {"owner": "web"}))
    apps.create_namespaced_controller_revision(namespace, revision("web-def", 2, {}, {"owner": "web"}))
    apps.create_namespaced_controller_revision(namespace, revision("other-1", 1, {}, {"owner": "other"}))
    listed = apps.list_namespaced_controller_revision(namespace, label_selector="owner=web")
    assert sorted((r.metadata.name, r.revision) for r in listed.items) == [("web-abc", 1), ("web-def", 2)]
    got = apps.read_namespaced_controller_revision("web-abc", namespace)
    assert got.data == {"spec": {"manifestWorkTemplate": template}}
    patched = apps.patch_namespaced_controller_revision("web-abc", namespace, {"revision": 3})
    assert patched.revision == 3
    apps.delete_namespaced_controller_revision("web-def", namespace)
    names = [r.metadata.name for r in apps.list_namespaced_controller_revision(namespace).items]
    assert sorted(names) == ["other-1", "web-abc"]


def test_discovery_lists_controller_revisions(api_client: client.ApiClient) -> None:
    resources = api("AppsV1Api", api_client).get_api_resources()
    (found,) = [r for r in resources.resources if r.name == "controllerrevisions"]
    assert (found.kind, found.namespaced) == ("ControllerRevision", True)


def test_data_is_immutable_and_an_update_that_keeps_it_renumbers(api_client: client.ApiClient, namespace: str) -> None:
    apps = api("AppsV1Api", api_client)
    apps.create_namespaced_controller_revision(namespace, revision("web-1", 1, {"a": "1"}, {}))
    current = apps.read_namespaced_controller_revision("web-1", namespace)
    current.revision = 4
    assert apps.replace_namespaced_controller_revision("web-1", namespace, current).revision == 4
    current = apps.read_namespaced_controller_revision("web-1", namespace)
    current.data = {"spec": {"manifestWorkTemplate": {"a": "2"}}}
    try:
        apps.replace_namespaced_controller_revision("web-1", namespace, current)
    except client.ApiException as exc:
        assert exc.status == 422
        message = json.loads(exc.body)["message"]
        assert message.startswith('ControllerRevision.apps "web-1" is invalid: data: Invalid value: {"spec":')
        assert message.endswith(": field is immutable")
    else:
        raise AssertionError("a change of data was accepted")
