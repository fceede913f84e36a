"""A work cache that lags behind the API (as right after a restart) never widens a rollout:
the controller confirms the owner's works with the API before it creates new ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT_NAME
from ocm_rollout.client.kube import JSON, MANIFEST_WORKS
from ocm_rollout.controllers.workset.operator import WorksetController
from tests.integration.helpers import holds_for, wait_for
from tests.integration.test_workset_env import CONFIGMAP_TEMPLATE, Env, condition


def test_a_work_the_cache_has_not_seen_still_holds_its_batch_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path)
    try:
        ns = env.namespace("lag")
        clusters = env.clusters(3)
        env.placement(ns, "rollout", [clusters])
        hidden = clusters[1]
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
        seen = WorksetController.on_work

        def lagging(self: WorksetController, event_type: str, obj: JSON, previous: Any) -> None:
            if obj["metadata"]["namespace"] != hidden:
                seen(self, event_type, obj, previous)

        monkeypatch.setattr(WorksetController, "on_work", lagging)
        env.operator.start()
        env.mwrs(ns, "fleet", [{"name": "rollout", "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}}}])
        wait_for(lambda: condition(env.get_mwrs(ns, "fleet"), "PlacementVerified"), what="a deploy pass")
        holds_for(
            lambda: env.clusters_with_works(ns, "fleet") == [hidden],
            2.0,
            what="no second work while the unseen one is in flight (maxConcurrency 1)",
        )
    finally:
        env.close()
