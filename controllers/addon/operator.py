"""The add-on manager: what it watches, its three queues, and the steps of their passes
(docs/behaviour/addons.md).

- per ClusterManagementAddOn (CMA) name, the steps of ``cma_steps.CMA_PASS``: the CMA's status
  references and spec hashes (``configs``), the install strategy (``install``: MCAs created and
  deleted), the configuration rollout (``configrollout``: desired configurations written into the
  MCAs' status through the shared rollout planner, placement by placement), the CMA's
  ``installProgressions`` conditions, events and metrics;
- per ManagedClusterAddOn (MCA) ``namespace/name``, the steps of ``mca_steps.MCA_PASS``: its owner
  reference (4.4), the hashes of its own ``spec.configs`` (5.3), its ``Progressing`` condition from
  the add-on's ManifestWorks (9);
- per ManagedCluster name: its add-on annotations copied onto its MCAs (4.5).

Inputs: kopf-fed caches for CMAs, Placements and PlacementDecisions (few objects); list-and-watch
caches for the ManagedClusters, the many MCAs and the add-on ManifestWorks, and ``configcache``
for the configuration objects. Every change re-queues exactly the keys that depend on it
(``indexes``); the caches show this controller's own writes until the watch catches up.

Never wider than the strategy: before a pass gives MCAs a new desired configuration (which puts
them in flight), it records them on the CMA (``controllers.rollout.reservations``) with the CMA's
resourceVersion as read, after confirming the MCAs from the API; every MCA status write carries
the MCA's resourceVersion. Of two overlapping instances one gets 409 and plans again. An abort
goes the same way: the abort record is written in the same fenced CMA write as the reservations,
before any MCA is reverted or any event is told.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from pydantic import ValidationError

from ocm_rollout.api.addon_v1alpha1 import ClusterManagementAddOn
from ocm_rollout.api.constants import LABEL_ADDON_NAME, LABEL_PLACEMENT
from ocm_rollout.api.meta import format_validation_error
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
)
from ocm_rollout.controllers.addon import cma_steps, mca_io, mca_steps
from ocm_rollout.controllers.addon import verify as verifying
from ocm_rollout.controllers.addon.cma_steps import RESYNC_SECONDS, CmaPass
from ocm_rollout.controllers.addon.configcache import ConfigCaches
from ocm_rollout.controllers.addon.indexes import (
    AddonIndexes,
    addon_annotations,
    cma_placements,
    mca_pass_keys,
    work_keys,
)
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.addon.install import is_lifecycle_managed
from ocm_rollout.controllers.addon.judge_memo import JudgeMemo
from ocm_rollout.controllers.addon.mca_steps import McaPass
from ocm_rollout.controllers.common.wire import is_deleting, labels_of, name_of, namespace_of
from ocm_rollout.controllers.rollout.plugin.loader import PluginClients
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.cache import Cache
from ocm_rollout.controllers.runtime.chain import run_chain
from ocm_rollout.controllers.runtime.coalesce import Coalescer
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING, Told
from ocm_rollout.controllers.runtime.metric_queries import MetricQueries
from ocm_rollout.controllers.runtime.outcome import DONE, Outcome
from ocm_rollout.controllers.runtime.shell import KOPF, LIST_WATCH, Runtime, Trigger
from ocm_rollout.controllers.runtime.verifier import Verifier

__all__ = ["RESYNC_SECONDS", "AddonController"]

COMPONENT = "addon-manager-controller"
WRITE_CONCURRENCY = 16
# MCA changes re-queue their CMA at least this much later, so that a burst of them shares one
# pass (longer when the CMA's passes cost more: ``coalesce``), and at most the maximum: ten times
# a pass of 0.5 s (about 10,000 MCAs; with 2 s, the passes of a 10,000-cluster update were twice
# as many, bench/addon_scale.py).
MCA_EVENT_COALESCE_SECONDS = 0.2
MCA_EVENT_COALESCE_MAX_SECONDS = 5.0
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 300.0


class _ByName(Mapping[str, JSON]):
    """The ManagedClusters as a read-only mapping by name (no copy on the CMA pass's path)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def __getitem__(self, name: str) -> JSON:
        found = self.cache.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return (name_of(obj) for obj in self.cache)

    def __len__(self) -> int:
        return len(self.cache)


class AddonController:
    """The add-on manager's declarations, and the passes its queues run."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.write_concurrency = WRITE_CONCURRENCY
        self.writer = runtime.writer(WRITE_CONCURRENCY)
        self.recorder = runtime.recorder(COMPONENT)
        self.told = Told()
        self.indexes = ix = AddonIndexes()
        self.mcas_by_name = ix.mcas_by_name
        # uids of hand-made MCAs this run adopted, so that their deletion is still told as such.
        self.adopted: set[str] = set()
        # CMA name -> its MCAs' rollout statuses as the last passes judged them (``judge_memo``).
        self.judge_memos: dict[str, JudgeMemo] = {}
        self.cma_queue = runtime.queue("addon", self.reconcile_cma, retry_base=RETRY_BASE_SECONDS, retry_max=RETRY_MAX_SECONDS)
        self.mca_queue = runtime.queue("addon-mca", self.reconcile_mca)
        self.cluster_queue = runtime.queue("addon-cluster", self.reconcile_cluster, workers=1)
        cmas, mcas, clusters = self.cma_queue, self.mca_queue, self.cluster_queue
        self.coalescer: Coalescer[str] = Coalescer(cmas, floor=MCA_EVENT_COALESCE_SECONDS, ceiling=MCA_EVENT_COALESCE_MAX_SECONDS)
        self.cma_cache = runtime.watch(CLUSTER_MANAGEMENT_ADDONS, source=KOPF, index=ix.on_cma, triggers=[
            # A CMA pass writes the CMA (its reservations, its status) and looks again by itself
            # when it must (a deferral, a conflict, a recheck): its echo queues nothing.
            Trigger(cmas, lambda _t, obj, _p: [name_of(obj)], own_writes=False),
            Trigger(mcas, lambda t, obj, _p: ix.mca_keys_of_cma_event(t, obj)),
        ])
        self.placement_cache = runtime.watch(PLACEMENTS, source=KOPF, triggers=[
            Trigger(cmas, lambda _t, obj, _p: ix.cmas_of_placement(namespace_of(obj), name_of(obj))),
        ])
        self.decision_cache = runtime.watch(PLACEMENT_DECISIONS, source=KOPF, triggers=[
            Trigger(cmas, lambda _t, obj, _p: ix.cmas_of_placement(namespace_of(obj), labels_of(obj).get(LABEL_PLACEMENT) or "")),
        ])
        self.cluster_cache = runtime.watch(MANAGED_CLUSTERS, source=LIST_WATCH, triggers=[
            Trigger(clusters, self._cluster_keys),
            # A cluster that appears or goes changes which MCAs can be created (4.2).
            Trigger(cmas, lambda t, _o, _p: ix.placed_cmas() if t in ("", "ADDED", "DELETED") else []),
        ])
        self.mca_cache = runtime.watch(MANAGED_CLUSTER_ADDONS, source=LIST_WATCH, index=self._on_mca, triggers=[
            # A CMA pass costs O(its MCAs): the changes of many MCAs within a moment share one pass.
            Trigger(cmas, lambda _t, obj, _p: self.coalescer.add([name_of(obj)])),
            Trigger(mcas, mca_pass_keys),
        ])
        self.work_cache = runtime.watch(MANIFEST_WORKS, source=LIST_WATCH, label_selector=LABEL_ADDON_NAME, index=ix.on_work, triggers=[
            Trigger(mcas, lambda _t, obj, previous: work_keys(obj, previous)),
            # A verified rollout's feedback checks read the agent's works (docs/behaviour/validation.md).
            Trigger(cmas, self._verifying_cma_of_work),
        ])
        self.configs = ConfigCaches(runtime.kube, self.on_config, time.monotonic)
        runtime.on_start(self._start_configs)
        runtime.on_stop(self.configs.close)
        # Verified rollouts (docs/behaviour/validation.md): metric queries and plugin calls run in
        # the background; one that ends queues its CMA again.
        self.metrics_source = MetricQueries(runtime.context.metric_providers, runtime.clock)
        runtime.on_stop(self.metrics_source.stop)
        self.verifier = Verifier(PluginClients(runtime.context.plugins), self.metrics_source.measure, cmas.add)
        runtime.on_stop(self.verifier.stop)

    # -- keys ------------------------------------------------------------------------------------
    @staticmethod
    def _cluster_keys(event_type: str, obj: JSON, previous: JSON | None) -> list[str]:
        """Only a change of its add-on annotations concerns a cluster's MCAs (4.5)."""
        if event_type == "DELETED" or addon_annotations(obj) == addon_annotations(previous):
            return []
        return [name_of(obj)]

    def _verifying_cma_of_work(self, _event_type: str, obj: JSON, _previous: JSON | None) -> list[str]:
        """The CMA of an add-on work, when one of its placements verifies its rollout."""
        name = labels_of(obj).get(LABEL_ADDON_NAME) or ""
        cma = self.cma_cache.get(name) if name else None
        return self.coalescer.add([name]) if cma is not None and verifying.verifies(cma) else []

    def _on_mca(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self.indexes.on_mca(event_type, obj, previous)
        if event_type == "DELETED":
            memo = self.judge_memos.get(name_of(obj))
            if memo is not None:
                memo.forget(namespace_of(obj))

    def judge_memo(self, name: str) -> JudgeMemo:
        """The memo of CMA ``name``'s MCA judgements (made on first use)."""
        memo = self.judge_memos.get(name)
        if memo is None:
            memo = self.judge_memos[name] = JudgeMemo()
        return memo

    def on_config(self, group: str, resource: str, obj: JSON) -> None:
        key = (group, resource, namespace_of(obj), name_of(obj))
        for cma in self.indexes.cma_configs.owners(key):
            self.cma_queue.add(cma)
        for mca in self.indexes.mca_configs.owners(key):
            self.mca_queue.add(mca)

    # -- reading ---------------------------------------------------------------------------------
    def mcas(self, name: str) -> dict[str, JSON]:
        """The MCAs of add-on ``name`` by cluster, as the cache shows them (own writes included)."""
        found = {}
        for cluster, obj in self.indexes.sorted_mcas(name):
            shown = self.mca_cache.shown_at(obj, (cluster, name))
            if shown is not None:
                found[cluster] = shown
        return found

    async def _confirm_mcas(self, name: str, planned_from: dict[str, JSON]) -> dict[str, JSON] | None:
        return await mca_io.confirm_mcas(self, name, planned_from)

    def clusters_by_name(self) -> Mapping[str, JSON]:
        return _ByName(self.cluster_cache)

    def placement_inputs(self, cma: JSON) -> dict[tuple[str, str], PlacementInput]:
        found: dict[tuple[str, str], PlacementInput] = {}
        for namespace, name in sorted(cma_placements(cma)):
            found[(namespace, name)] = PlacementInput(
                placement=self.placement_cache.get(name, namespace),
                decisions=self.decision_cache.select(namespace, labels={LABEL_PLACEMENT: name}),
            )
        return found

    @staticmethod
    def validation_error(body: JSON) -> str | None:
        """Why the CMA is not a valid ClusterManagementAddOn (the shell validates with the model)."""
        try:
            ClusterManagementAddOn.model_validate(body)
        except ValidationError as exc:
            return format_validation_error(exc)
        return None

    # -- telling ---------------------------------------------------------------------------------
    async def tell_cma(self, body: JSON, reason: str, message: str, event_type: str = NORMAL) -> None:
        await self.recorder.record(
            body, reason=reason, message=message, now=self.runtime.clock(),
            event_type=WARNING if event_type == WARNING else NORMAL, kind=CLUSTER_MANAGEMENT_ADDONS,
        )

    async def tell_cma_once(self, p: CmaPass, topic: str, reason: str, message: str) -> None:
        """A Warning about the CMA, told again only when its message changes."""
        if self.told.once(p.name, topic, message):
            await self.tell_cma(p.body, reason, message, WARNING)

    # -- the passes ------------------------------------------------------------------------------
    async def _start_configs(self) -> None:
        """The configuration caches list before the first pass reads them."""
        self.configs.start()
        await self.configs.wait_synced()

    async def reconcile_cma(self, name: str) -> Outcome:
        body = self.cma_cache.get(name)
        if body is None:
            for topic in ("spellings", "breaches", "promotions"):
                self.told.clear(name, topic)
            self.verifier.forget(name)
            self.coalescer.forget(name)
            self.judge_memos.pop(name, None)
            metrics.forget_rollout(cma_steps.KIND, "", name)
            return DONE
        if is_deleting(body):
            return DONE  # its MCAs go by garbage collection of the owner reference (4.2)
        state = CmaPass(name, body, self.runtime.clock())
        with self.coalescer.passing(name, state.computing):
            return await run_chain(cma_steps.CMA_PASS, self, state) or DONE

    async def reconcile_mca(self, key: str) -> Outcome:
        cluster, _, name = key.partition("/")
        mca = self.mca_cache.get(name, cluster)
        if mca is None or is_deleting(mca):
            self.told.clear(key, "cluster")
            return DONE
        cma = self.cma_cache.get(name)
        if cma is None:
            return DONE  # the CMA's arrival re-queues this key (its trigger reads the MCA index)
        state = McaPass(key, cluster, mca, cma, managed=is_lifecycle_managed(cma))
        return await run_chain(mca_steps.MCA_PASS, self, state) or DONE

    async def reconcile_cluster(self, cluster: str) -> Outcome:
        return await mca_steps.sync_cluster_annotations(self, cluster)
