"""A work cache that lags behind the API (as right after a restart) never widens a rollout:
the controller confirms the owner's works with the API before it creates new ones."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT_NAME
from ocm_rollout.client.kube import MANIFEST_WORKS
from ocm_rollout.client.watchcache import WatchCache
from tests.integration.helpers import holds_for, wait_for
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition


def test_a_work_the_cache_has_not_seen_still_holds_its_batch_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub_kind: str
) -> None:
    """The works watch lags: it delivers nothing after its first listing (as a watch far behind
    the API does for a while). A work an earlier instance created after that listing is in the
    API only. The controller must not take the cache's word for it: its cache never reaches the
    API's resourceVersion, so the pass lists the works from the API and finds it."""
    env = Env(tmp_path, kind=hub_kind)
    watch = WatchCache._watch
    listed = threading.Event()

    async def lagging(self: WatchCache) -> None:
        if self.resource.plural == MANIFEST_WORKS.plural:
            listed.set()  # a watch starts once its listing is cached
            await asyncio.Event().wait()  # nothing more is delivered
        await watch(self)

    monkeypatch.setattr(WatchCache, "_watch", lagging)
    try:
        ns = env.namespace("lag")
        clusters = env.clusters(3)
        env.placement(ns, "rollout", [clusters])
        hidden = clusters[1]
        env.operator.start()
        assert listed.wait(30), "the controller's works cache was not listed"
        # In flight since an earlier controller instance wrote it; no agent has reported yet.
        env.api.create(
            MANIFEST_WORKS,
            {
                "metadata": {
                    "generateName": "fleet",
                    "namespace": hidden,
                    "labels": {LABEL_MANIFESTWORK_REPLICASET: f"{ns}.fleet", LABEL_PLACEMENT_NAME: "rollout"},
                },
                "spec": CONFIGMAP_TEMPLATE,
            },
            hidden,
        )
        env.mwrs(ns, "fleet", [{"name": "rollout", "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}}}])
        wait_for(lambda: condition(env.get_mwrs(ns, "fleet"), "PlacementVerified"), what="a deploy pass")
        holds_for(
            lambda: env.clusters_with_works(ns, "fleet") == [hidden],
            2.0,
            what="no second work while the unseen one is in flight (maxConcurrency 1)",
        )
    finally:
        env.close()
