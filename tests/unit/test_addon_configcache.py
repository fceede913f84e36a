"""The configuration caches' hash answers: "" for a missing object, None for an unserved type or an
object whose spec cannot be hashed as Go would (recorded with the reason)."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.client import ApiClient, Configuration

from ocm_rollout.api.addon_hashing import spec_hash
from ocm_rollout.client.kube import Kube
from ocm_rollout.controllers.addon.configcache import ConfigCaches

GR = ("addon.open-cluster-management.io", "addondeploymentconfigs")


class _Cache:
    def __init__(self, objects: dict[tuple[str, str], Any]) -> None:
        self.objects = objects
        self.synced = asyncio.Event()
        self.synced.set()

    def get(self, name: str, namespace: str | None = None) -> Any:
        return self.objects.get((namespace or "", name))


def _caches(objects: dict[tuple[str, str], Any]) -> ConfigCaches:
    caches = ConfigCaches(Kube(ApiClient(Configuration())), lambda *_: None, lambda: 0.0)
    caches.caches[GR] = _Cache(objects)  # type: ignore[assignment]
    return caches


def test_a_stored_config_is_hashed_and_a_missing_one_is_empty() -> None:
    adc = {"metadata": {"uid": "u", "resourceVersion": "3"}, "spec": {"customizedVariables": [{"name": "a", "value": "b"}]}}
    caches = _caches({("ns", "c"): adc})
    assert caches.spec_hash(*GR, "ns", "c") == spec_hash(adc)
    assert caches.spec_hash(*GR, "ns", "missing") == ""


def test_a_config_that_cannot_be_hashed_keeps_its_hash_and_says_why() -> None:
    bad = {"metadata": {"uid": "u", "resourceVersion": "4"}, "spec": {"size": 10**400}}
    caches = _caches({("ns", "c"): bad})
    assert caches.spec_hash(*GR, "ns", "c") is None
    assert "float64" in caches.unhashable[(*GR, "ns", "c")]


def test_an_unserved_type_has_no_hash() -> None:
    caches = _caches({})
    assert caches.spec_hash("example.io", "examples", "ns", "c") is None
