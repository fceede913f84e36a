"""``Kube.list_objects(metadata_only=True)`` asks the API server for a ``PartialObjectMetadataList``
(what the MWRS controller confirms its cache with): every object's metadata (name, namespace,
uid, resourceVersion, labels, annotations), none of its spec or status, through the real client."""

from __future__ import annotations

import asyncio

from kubernetes import client

from ocm_rollout.client.kube import MANIFEST_WORKS, Kube

WORK = {
    "metadata": {"name": "web", "labels": {"owner": "x"}, "annotations": {"note": "kept"}},
    "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}}]}},
}


def test_a_metadata_list_has_each_objects_metadata_and_nothing_else(api_client: client.ApiClient, namespace: str) -> None:
    kube = Kube(api_client)

    async def run() -> tuple[dict, list[dict], list[dict]]:
        created = await kube.create(MANIFEST_WORKS, {**WORK, "metadata": {**WORK["metadata"], "namespace": namespace}},
                                    namespace)
        listed = await kube.list_objects(MANIFEST_WORKS, namespace, label_selector="owner=x", metadata_only=True)
        other = await kube.list_objects(MANIFEST_WORKS, namespace, label_selector="owner=y", metadata_only=True)
        return created, listed, other

    created, listed, other = asyncio.run(run())
    assert other == []
    (item,) = listed
    assert item["kind"] == "PartialObjectMetadata" and "spec" not in item and "status" not in item
    for field in ("name", "namespace", "uid", "resourceVersion", "labels", "annotations"):
        assert item["metadata"][field] == created["metadata"][field]
