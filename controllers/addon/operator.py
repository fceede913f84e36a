"""The add-on manager: the kopf shell around the pure add-on core (docs/behaviour/addons.md).

Three queues, each a level-triggered reconcile over what the caches hold:

- per ClusterManagementAddOn (CMA) name: the CMA's status references and spec hashes
  (``configs``), the install strategy (``install``: ManagedClusterAddOns created and deleted),
  then the configuration rollout (``configrollout``: the desired configurations written into the
  MCAs' status through the shared rollout planner, placement by placement), the CMA's
  ``installProgressions`` conditions, events and metrics;
- per ManagedClusterAddOn (MCA) ``namespace/name``: its owner reference (4.4), the hashes of its
  own ``spec.configs`` (5.3) and its ``Progressing`` condition from the add-on's ManifestWorks (9);
- per ManagedCluster name: the ``addon.open-cluster-management.io*`` annotations copied onto its
  MCAs (4.5).

Inputs: kopf informers for CMAs, Placements, PlacementDecisions and ManagedClusters (few objects);
list-and-watch caches (``ocm_rollout.client.watchcache``) for the many MCAs, the add-on
ManifestWorks and the configuration objects (``configcache``). Every change re-queues exactly the
keys that depend on it.

Never wider than the strategy: before a pass gives MCAs a new desired configuration (which puts
them in flight), it records them on the CMA (``ocm_rollout.controllers.rollout.reservations``) with the CMA's
resourceVersion as read, after confirming the MCAs from the API; every MCA status write carries
the MCA's resourceVersion. Of two overlapping instances one gets 409 and plans again.

Aborts (``abort``) go the same way: the pass that aborts a placement's rollout confirms the MCAs
from the API, then writes the abort record in the same fenced CMA write as the reservations (the
aborted placement's are cleared), and only then reverts MCAs and sends its events. A pass plans
from the newest CMA it knows (its own last write when the informer has not delivered it yet), so
it never carries out a reservation its own abort cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import kopf
from pydantic import ValidationError

from ocm_rollout.api.addon_v1alpha1 import ClusterManagementAddOn
from ocm_rollout.api.constants import (
    ADDON_ANNOTATION_PREFIX,
    ANNOTATION_HOSTING_CLUSTER_NAME,
    LABEL_ADDON_NAME,
    LABEL_ADDON_NAMESPACE,
    LABEL_PLACEMENT,
)
from ocm_rollout.api.meta import format_validation_error
from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Conflict,
    KubeError,
    NotFound,
)
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.client.watchcache import WatchCache, newer
from ocm_rollout.controllers.addon import abort, configrollout, configs, events, install, progressing
from ocm_rollout.controllers.addon.configcache import ConfigCaches
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.requeue import next_look
from ocm_rollout.controllers.common.wire import (
    annotations_of,
    fenced,
    is_deleting,
    labels_of,
    meta,
    name_of,
    namespace_of,
)
from ocm_rollout.controllers.rollout import reservations
from ocm_rollout.controllers.rollout.reservations import ReservationRecordError, Reservations
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.events import NORMAL, WARNING, EventRecorder
from ocm_rollout.controllers.runtime.informer import Informer, InformerSet
from ocm_rollout.controllers.runtime.registry import ControllerContext
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter

log = logging.getLogger(__name__)

COMPONENT = "addon-manager-controller"
KIND = "ClusterManagementAddOn"
MCA_KIND = "ManagedClusterAddOn"
# OCM's informer resync for add-on objects: a recheck further away is looked at after this long
# instead (docs/behaviour/addons.md 11; controllers.common.requeue).
RESYNC_SECONDS = 10 * 60
WRITE_CONCURRENCY = 16
CONFLICT_RETRY_SECONDS = 0.5
# MCA changes re-queue their CMA this much later, so that a burst of them shares one pass.
MCA_EVENT_COALESCE_SECONDS = 0.2
RETRY_BASE_SECONDS = 1.0
RETRY_MAX_SECONDS = 300.0

# Events of the install strategy (improvement 3 of the add-on manager).
EVENT_MCA_CREATED = "ManagedClusterAddOnCreated"
EVENT_MCA_DELETED = "ManagedClusterAddOnDeleted"
EVENT_CLUSTER_NOT_FOUND = "ManagedClusterNotFound"
EVENT_INVALID = "InvalidClusterManagementAddOn"
EVENT_DELETES_HELD = "ManagedClusterAddOnDeletionHeld"
EVENT_CONFIG_NOT_HASHABLE = "ConfigurationNotHashable"

T = TypeVar("T")


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, KubeError):
        return exc.message
    return " ".join(str(exc).split()) or type(exc).__name__


def _work_key(work: JSON) -> str | None:
    """The MCA key (``namespace/name``) an add-on ManifestWork reports on (docs/behaviour/addons.md 2)."""
    labels = labels_of(work)
    addon = labels.get(LABEL_ADDON_NAME)
    if not addon:
        return None
    return f"{labels.get(LABEL_ADDON_NAMESPACE) or namespace_of(work)}/{addon}"


def _config_keys(items: Iterable[Any]) -> set[tuple[str, str, str, str]]:
    found = set()
    for item in items:
        if isinstance(item, dict) and item.get("resource") and item.get("name"):
            found.add((str(item.get("group") or ""), str(item["resource"]), str(item.get("namespace") or ""), str(item["name"])))
    return found


def _cma_config_keys(cma: JSON) -> set[tuple[str, str, str, str]]:
    spec = cma.get("spec") or {}
    keys = set()
    for item in spec.get("supportedConfigs") or []:
        if isinstance(item, dict) and isinstance(item.get("defaultConfig"), dict):
            default = item["defaultConfig"]
            if default.get("name"):
                keys.add((str(item.get("group") or ""), str(item.get("resource") or ""), str(default.get("namespace") or ""), str(default["name"])))
    for placement in (spec.get("installStrategy") or {}).get("placements") or []:
        if isinstance(placement, dict):
            keys |= _config_keys(placement.get("configs") or [])
    return keys


def _known_good_keys(cma: JSON) -> set[tuple[str, str, str, str]]:
    """The last known good configurations the CMA's installProgressions name (what an aborted
    placement returns to: a change of them concerns the CMA)."""
    keys = set()
    for entry in (cma.get("status") or {}).get("installProgressions") or []:
        for item in (entry.get("configReferences") or []) if isinstance(entry, dict) else ():
            good = item.get("lastKnownGoodConfig") if isinstance(item, dict) else None
            if isinstance(good, dict) and good.get("name") and item.get("resource"):
                keys.add((str(item.get("group") or ""), str(item["resource"]), str(good.get("namespace") or ""), str(good["name"])))
    return keys


def _cma_placements(cma: JSON) -> set[tuple[str, str]]:
    found = set()
    for placement in ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or []:
        if isinstance(placement, dict) and placement.get("name"):
            found.add((str(placement.get("namespace") or ""), str(placement["name"])))
    return found


class _ByName(Mapping[str, JSON]):
    """The cluster-scoped objects of an informer as a read-only mapping by name (no copy of the
    cache on the CMA pass's path)."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer

    def __getitem__(self, name: str) -> JSON:
        found = self.informer.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return (name_of(obj) for obj in self.informer)

    def __len__(self) -> int:
        return len(self.informer)


class AddonController:
    """State and handlers of one running add-on manager."""

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self.kube = context.kube
        self.writer = ConcurrentWriter(context.kube, WRITE_CONCURRENCY, name="addon-write")
        self.recorder = EventRecorder(context.kube, COMPONENT)
        self.cma_queue: WorkQueue[str] = WorkQueue("addon", on_depth=context.on_queue_depth)
        self.mca_queue: WorkQueue[str] = WorkQueue("addon-mca", on_depth=context.on_queue_depth)
        self.cluster_queue: WorkQueue[str] = WorkQueue("addon-cluster", on_depth=context.on_queue_depth)
        self.informers: InformerSet | None = None
        self.cma_cache: Informer | None = None
        self.placement_cache: Informer | None = None
        self.decision_cache: Informer | None = None
        self.cluster_cache: Informer | None = None
        self.mca_cache = WatchCache(context.kube, MANAGED_CLUSTER_ADDONS, on_change=self.on_mca)
        self.work_cache = WatchCache(context.kube, MANIFEST_WORKS, label_selector=LABEL_ADDON_NAME, on_change=self.on_work)
        self.configs = ConfigCaches(context.kube, self.on_config, time.monotonic)
        # Indexes kept from the caches' events (no full scans on a change).
        self.mcas_by_name: dict[str, dict[str, JSON]] = {}  # addon name -> cluster -> MCA
        self.works_by_key: dict[str, dict[tuple[str, str], JSON]] = {}  # MCA key -> works
        self.work_owner: dict[tuple[str, str], str] = {}
        self.cmas_by_placement: dict[tuple[str, str], set[str]] = {}
        self.placements_of_cma: dict[str, set[tuple[str, str]]] = {}
        self.cmas_by_config: dict[tuple[str, str, str, str], set[str]] = {}
        # CMA name -> the CMA as this instance last wrote it (newer than the informer's, for a moment).
        self.written_cmas: dict[str, JSON] = {}
        self.configs_of_cma: dict[str, set[tuple[str, str, str, str]]] = {}
        self.mcas_by_config: dict[tuple[str, str, str, str], set[str]] = {}
        self.configs_of_mca: dict[str, set[tuple[str, str, str, str]]] = {}
        self.breaches: dict[str, dict[str, frozenset[str]]] = {}
        # CMA name -> the DeprecatedRolloutType warnings already recorded (events.spelling_events).
        self.spellings: dict[str, frozenset[str]] = {}
        self.retries: dict[str, int] = {}
        self.reported: dict[str, str] = {}  # once-only warnings: key -> last message
        self.cluster_annotations: dict[str, dict[str, str]] = {}  # cluster -> its add-on annotations
        # uids of MCAs someone made by hand that this run adopted (gave the owner reference), so
        # that their deletion is still told as the deletion of a hand-made add-on.
        self.adopted: set[str] = set()
        self.tasks: list[asyncio.Task[Any]] = []

    # -- wiring ------------------------------------------------------------------------------------
    def setup(self, registry: kopf.OperatorRegistry) -> None:
        informers = InformerSet(registry, prefix="addon")
        self.informers = informers
        self.cma_cache = informers.watch(CLUSTER_MANAGEMENT_ADDONS, self.on_cma)
        self.placement_cache = informers.watch(PLACEMENTS, self.on_placement)
        self.decision_cache = informers.watch(PLACEMENT_DECISIONS, self.on_decision)
        self.cluster_cache = informers.watch(MANAGED_CLUSTERS, self.on_cluster, kube=self.context.kube)

        @kopf.on.startup(registry=registry, id="addon_start_workers")
        async def start_workers(**_: Any) -> None:
            self.configs.start()
            self.tasks = [
                asyncio.create_task(self.mca_cache.run(), name="addon-mca-cache"),
                asyncio.create_task(self.work_cache.run(), name="addon-work-cache"),
                asyncio.create_task(self._run(), name="addon-workers"),
            ]

        @kopf.on.cleanup(registry=registry, id="addon_stop_workers")
        async def stop_workers(**_: Any) -> None:
            for queue in (self.cma_queue, self.mca_queue, self.cluster_queue):
                queue.shut_down()
            for task in self.tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.configs.stop()

    async def _run(self) -> None:
        assert self.informers is not None
        try:
            await self.informers.wait_synced()
            await self.mca_cache.synced.wait()
            await self.work_cache.synced.wait()
            await self.configs.wait_synced()
            on_result = self.context.on_reconcile
            workers = self.context.workers
            await asyncio.gather(
                run_workers(self.cma_queue, self.reconcile_cma, workers=workers, on_result=on_result),
                run_workers(self.mca_queue, self.reconcile_mca, workers=workers, on_result=on_result),
                run_workers(self.cluster_queue, self.reconcile_cluster, workers=1, on_result=on_result),
            )
        finally:
            self.writer.close()

    # -- event mapping (docs/behaviour/addons.md 2) -------------------------------------------------------------------
    def _reindex(
        self,
        forward: dict[Any, set[Any]],
        backward: dict[Any, set[Any]],
        owner: Any,
        keys: set[Any],
    ) -> None:
        for old in backward.pop(owner, set()):
            bucket = forward.get(old)
            if bucket is not None:
                bucket.discard(owner)
                if not bucket:
                    del forward[old]
        if keys:
            backward[owner] = keys
            for key in keys:
                forward.setdefault(key, set()).add(owner)

    def on_cma(self, event_type: str, obj: JSON) -> None:
        name = name_of(obj)
        deleted = event_type == "DELETED"
        self._reindex(self.cmas_by_placement, self.placements_of_cma, name, set() if deleted else _cma_placements(obj))
        self._reindex(
            self.cmas_by_config, self.configs_of_cma, name, set() if deleted else _cma_config_keys(obj) | _known_good_keys(obj)
        )
        self.cma_queue.add(name)
        for cluster in self.mcas_by_name.get(name, {}):
            self.mca_queue.add(f"{cluster}/{name}")

    def on_mca(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        name, cluster = name_of(obj), namespace_of(obj)
        key = f"{cluster}/{name}"
        if event_type == "DELETED":
            bucket = self.mcas_by_name.get(name)
            if bucket is not None:
                bucket.pop(cluster, None)
                if not bucket:
                    del self.mcas_by_name[name]
            self._reindex(self.mcas_by_config, self.configs_of_mca, key, set())
        else:
            self.mcas_by_name.setdefault(name, {})[cluster] = obj
            self._reindex(self.mcas_by_config, self.configs_of_mca, key, _config_keys((obj.get("spec") or {}).get("configs") or []))
        # A CMA pass costs O(its MCAs): the changes of many MCAs within a moment share one pass.
        self.cma_queue.add_after(name, MCA_EVENT_COALESCE_SECONDS)
        self.mca_queue.add(key)

    def on_work(self, event_type: str, obj: JSON, _previous: JSON | None) -> None:
        ref = (namespace_of(obj), name_of(obj))
        previous = self.work_owner.pop(ref, None)
        if previous is not None:
            bucket = self.works_by_key.get(previous)
            if bucket is not None:
                bucket.pop(ref, None)
                if not bucket:
                    del self.works_by_key[previous]
            self.mca_queue.add(previous)
        key = _work_key(obj)
        if key is None:
            return
        if event_type != "DELETED":
            self.work_owner[ref] = key
            self.works_by_key.setdefault(key, {})[ref] = obj
        self.mca_queue.add(key)

    def _placement_changed(self, namespace: str, name: str) -> None:
        for cma in self.cmas_by_placement.get((namespace, name), ()):
            self.cma_queue.add(cma)

    def on_placement(self, event_type: str, obj: JSON) -> None:
        self._placement_changed(namespace_of(obj), name_of(obj))

    def on_decision(self, event_type: str, obj: JSON) -> None:
        placement = labels_of(obj).get(LABEL_PLACEMENT)
        if placement:
            self._placement_changed(namespace_of(obj), placement)

    def on_cluster(self, event_type: str, obj: JSON) -> None:
        name = name_of(obj)
        prefixed = {k: v for k, v in annotations_of(obj).items() if k.startswith(ADDON_ANNOTATION_PREFIX)}
        if event_type == "DELETED":
            self.cluster_annotations.pop(name, None)
        elif self.cluster_annotations.get(name) != prefixed:
            # Only a change of the add-on annotations concerns the cluster's MCAs (docs/behaviour/addons.md 4.5).
            self.cluster_annotations[name] = prefixed
            self.cluster_queue.add(name)
        if event_type in ("", "ADDED", "DELETED"):
            # A cluster that appears or goes changes which MCAs can be created (docs/behaviour/addons.md 4.2).
            for cma in self.placements_of_cma:
                self.cma_queue.add(cma)

    def on_config(self, group: str, resource: str, obj: JSON) -> None:
        key = (group, resource, namespace_of(obj), name_of(obj))
        for cma in self.cmas_by_config.get(key, ()):
            self.cma_queue.add(cma)
        for mca in self.mcas_by_config.get(key, ()):
            self.mca_queue.add(mca)

    # -- reading ---------------------------------------------------------------------------------------
    def _cma(self, name: str) -> JSON | None:
        """The CMA from the informer, or this instance's own last write of it while the informer
        has not caught up."""
        assert self.cma_cache is not None
        cached = self.cma_cache.get(name)
        written = self.written_cmas.get(name)
        if written is None:
            return cached
        if cached is not None and meta(written).get("uid") == meta(cached).get("uid") and newer(written, cached) and (
            meta(written).get("resourceVersion") != meta(cached).get("resourceVersion")
        ):
            return written
        del self.written_cmas[name]
        return cached

    def _placement_inputs(self, cma: JSON) -> dict[tuple[str, str], PlacementInput]:
        assert self.placement_cache is not None and self.decision_cache is not None
        found: dict[tuple[str, str], PlacementInput] = {}
        for namespace, name in sorted(_cma_placements(cma)):
            found[(namespace, name)] = PlacementInput(
                placement=self.placement_cache.get(name, namespace),
                decisions=self.decision_cache.select(namespace, labels={LABEL_PLACEMENT: name}),
            )
        return found

    def _mcas(self, name: str) -> dict[str, JSON]:
        return dict(sorted(self.mcas_by_name.get(name, {}).items()))

    async def _confirm_mcas(self, name: str, planned_from: dict[str, JSON]) -> dict[str, JSON] | None:
        """The MCAs of ``name`` as the API holds them, merged over the cache's (which may lag, e.g.
        right after a restart); None when the cache was up to date."""
        stored = await self.kube.list_objects(MANAGED_CLUSTER_ADDONS, None, field_selector=f"metadata.name={name}")
        merged = dict(planned_from)
        changed = False
        for mca in stored:
            cluster = namespace_of(mca)
            known = merged.get(cluster)
            if known is None or (newer(mca, known) and meta(mca).get("resourceVersion") != meta(known).get("resourceVersion")):
                merged[cluster] = mca
                changed = True
                # The index takes it only if the cache has nothing newer: the watch may have
                # delivered a later version while this list was read (an older one put back would
                # stay until the MCA changes again).
                cached = self.mca_cache.get(name, cluster)
                if cached is None or (
                    newer(mca, cached) and meta(mca).get("resourceVersion") != meta(cached).get("resourceVersion")
                ):
                    self.mca_cache.remember(mca)
                    self.mcas_by_name.setdefault(name, {})[cluster] = mca
        if not changed:
            return None
        log.info("MCA cache lagged behind the API; planned again", extra={"key": name})
        return dict(sorted(merged.items()))

    # -- writing ---------------------------------------------------------------------------------------
    async def _patch_cma(self, body: JSON, patch: JSON, *, subresource: str | None) -> JSON | None:
        """Patch the CMA with its resourceVersion as precondition; None on a conflict."""
        patch = fenced(patch, body)
        try:
            updated = await self.kube.patch(CLUSTER_MANAGEMENT_ADDONS, name_of(body), patch, subresource=subresource)
        except (Conflict, NotFound):
            return None
        self.written_cmas[name_of(updated)] = updated
        return updated

    async def _patch_mca(self, mca: JSON, patch: JSON, *, subresource: str | None) -> JSON | None:
        """Patch one MCA with its resourceVersion as precondition; None on a conflict (the cache
        brings the newer object, which re-queues the pass)."""
        patch = fenced(patch, mca)
        try:
            updated = await self.writer.patch(
                MANAGED_CLUSTER_ADDONS, name_of(mca), patch, namespace_of(mca), subresource=subresource
            )
        except (Conflict, NotFound):
            return None
        self.mca_cache.remember(updated)
        self.mcas_by_name.setdefault(name_of(updated), {})[namespace_of(updated)] = updated
        return updated

    def _reservations(self, key: str, body: JSON) -> Reservations:
        try:
            return reservations.of_owner(body)
        except ReservationRecordError as exc:
            log.warning("ignoring a damaged reservation record", extra={"key": key, "error": str(exc)})
            return reservations.EMPTY

    async def _event(self, obj: JSON, api_version: str, kind: str, reason: str, message: str, *, warning: bool = False) -> None:
        body = {**obj, "apiVersion": api_version, "kind": kind}
        log.info("addon event", extra={"key": name_of(obj), "reason": reason, "event_message": message})
        await self.recorder.record(
            body, reason=reason, message=message, now=self.context.clock(), event_type=WARNING if warning else NORMAL
        )

    async def _once(self, key: str, obj: JSON, api_version: str, kind: str, reason: str, message: str) -> None:
        """A Warning event, recorded again only when its message changes."""
        if self.reported.get(key) == message:
            return
        self.reported[key] = message
        await self._event(obj, api_version, kind, reason, message, warning=True)

    # -- the CMA pass ----------------------------------------------------------------------------------
    async def reconcile_cma(self, name: str) -> float | None:
        body = self._cma(name)
        if body is None:
            self.written_cmas.pop(name, None)
            self.breaches.pop(name, None)
            self.spellings.pop(name, None)
            self.retries.pop(name, None)
            metrics.forget_rollout(KIND, "", name)
            return None
        if is_deleting(body):
            return None  # its MCAs go by garbage collection of the owner reference (docs/behaviour/addons.md 4.2)
        try:
            ClusterManagementAddOn.model_validate(body)
        except ValidationError as exc:
            await self._once(
                f"cma/{name}", body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_INVALID,
                f"invalid ClusterManagementAddOn: {format_validation_error(exc)}",
            )
            return None
        self.reported.pop(f"cma/{name}", None)
        now = self.context.clock()
        status = configs.cma_status_references(body, self.configs.spec_hash)
        await self._report_unhashable(name, body)
        managed = install.is_lifecycle_managed(body)
        placements = self._placement_inputs(body)
        retry = False
        if managed:
            retry = await self._install(body, placements)
        if not managed:
            if status != (body.get("status") or {}):
                await self._patch_cma(body, {"status": status}, subresource="status")
            return None
        planned = {**body, "status": status}
        mcas = self._mcas(name)
        record = self._reservations(name, body)
        hash_of = self.configs.spec_hash
        plan = configrollout.plan_config_rollout(
            cma=planned, mcas=mcas, placements=placements, reserved=record, now=now, hash_of=hash_of
        )
        if plan.reservations.adds_to(record) or plan.new_aborts:
            # New MCAs go in flight, or a rollout is aborted: decide from the API itself, not
            # only from the cache.
            confirmed = await self._confirm_mcas(name, mcas)
            if confirmed is not None:
                mcas = confirmed
                plan = configrollout.plan_config_rollout(
                    cma=planned, mcas=mcas, placements=placements, reserved=record, now=now, hash_of=hash_of
                )
        await self._report_abort_record(name, body, plan.abort_record_error)
        annotations: dict[str, str | None] = {}
        if plan.reservations != record:
            annotations.update(reservations.annotation_patch(plan.reservations))
        if plan.aborts_changed:
            annotations.update(abort.annotation_patch(plan.aborts))
        if annotations:
            fenced = await self._patch_cma(body, {"metadata": {"annotations": annotations}}, subresource=None)
            if fenced is None:
                log.info("reservation conflict: planning again", extra={"key": name})
                return CONFLICT_RETRY_SECONDS
            body = fenced
        written, failed = await self._write_mca_statuses(mcas, plan.mca_status)
        new_status = plan.cma_status
        persisted = True
        if new_status != (body.get("status") or {}):
            persisted = await self._patch_cma(body, {"status": new_status}, subresource="status") is not None
        await self._rollout_events(name, body, plan, written if persisted else set())
        self._publish_metrics(name, plan)
        if failed or retry:
            attempt = self.retries.get(name, 0)
            self.retries[name] = attempt + 1
            return min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * (2**attempt))
        self.retries.pop(name, None)
        if not persisted:
            return CONFLICT_RETRY_SECONDS
        if plan.deferred:
            return 0.0
        return next_look(plan.recheck_after, RESYNC_SECONDS)

    async def _report_abort_record(self, name: str, body: JSON, error: str | None) -> None:
        """A damaged abort record is ignored (and replaced by the next abort): say so once."""
        if error is None:
            self.reported.pop(f"aborts/{name}", None)
            return
        await self._once(
            f"aborts/{name}", body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_INVALID,
            f"ignoring the abort record: {error}",
        )

    async def _report_unhashable(self, name: str, body: JSON) -> None:
        """A configuration the CMA names whose spec cannot be hashed keeps its recorded hash (so
        nothing rolls out for it); say so once, naming the object and the problem."""
        bad = sorted(
            f"{resource}.{group}/{namespace}/{config}: {why}" if group else f"{resource}/{namespace}/{config}: {why}"
            for (group, resource, namespace, config), why in self.configs.unhashable.items()
            if (group, resource, namespace, config) in _cma_config_keys(body)
        )
        if bad:
            await self._once(
                f"unhashable/{name}", body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_CONFIG_NOT_HASHABLE,
                "cannot compute the spec hash of " + "; ".join(bad) + " (its last recorded hash is kept)",
            )
        else:
            self.reported.pop(f"unhashable/{name}", None)

    async def _write_mca_statuses(self, mcas: dict[str, JSON], statuses: dict[str, JSON]) -> tuple[set[str], bool]:
        """Write the planned MCA statuses at once; the clusters written and whether any write
        failed for another reason than a conflict (a conflict re-queues through the cache)."""
        semaphore = asyncio.Semaphore(WRITE_CONCURRENCY)

        async def one(cluster: str, status: JSON) -> tuple[str, bool | None]:
            mca = mcas[cluster]
            try:
                async with semaphore:
                    updated = await self._patch_mca(mca, {"status": status}, subresource="status")
            except Exception as exc:
                log.warning("cannot write MCA status", extra={"key": f"{cluster}/{name_of(mca)}", "error": _error_text(exc)})
                return cluster, None
            return cluster, updated is not None

        results = await asyncio.gather(*(one(c, s) for c, s in sorted(statuses.items()) if c in mcas))
        written = {cluster for cluster, ok in results if ok}
        failed = any(ok is None for _, ok in results)
        return written, failed

    async def _install(self, body: JSON, placements: dict[tuple[str, str], PlacementInput]) -> bool:
        """Create and delete MCAs per the install strategy (docs/behaviour/addons.md 4.2); True to retry later."""
        assert self.cluster_cache is not None
        name = name_of(body)
        clusters = _ByName(self.cluster_cache)
        mcas = list(self._mcas(name).values())
        plan = install.plan_install(body, placements, mcas, clusters)
        retry = False
        for create in plan.creates:
            try:
                created = await self.writer.create(MANAGED_CLUSTER_ADDONS, create.body, create.cluster)
            except Conflict:
                continue  # AlreadyExists: the cache brings it
            except KubeError as exc:
                retry = True
                log.warning("cannot create MCA", extra={"key": f"{create.cluster}/{name}", "error": exc.message})
                continue
            self.mca_cache.remember(created)
            self.mcas_by_name.setdefault(name, {})[create.cluster] = created
        for delete in plan.deletes:
            try:
                await self.writer.delete(MANAGED_CLUSTER_ADDONS, name, delete.cluster, uid=delete.uid or None)
            except Conflict:
                continue
            except KubeError as exc:
                retry = True
                log.warning("cannot delete MCA", extra={"key": f"{delete.cluster}/{name}", "error": exc.message})
                continue
            if delete.user_created or delete.uid in self.adopted:
                self.adopted.discard(delete.uid)
                await self._event(
                    body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_MCA_DELETED,
                    f"deleted ManagedClusterAddOn {delete.cluster}/{name}: {delete.reason}",
                    warning=True,
                )
        if plan.missing_clusters:
            retry = True
            await self._once(
                f"missing/{name}", body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_CLUSTER_NOT_FOUND,
                "no ManagedCluster for decided cluster(s) " + ", ".join(plan.missing_clusters[:20])
                + ": their ManagedClusterAddOns are not created",
            )
        else:
            self.reported.pop(f"missing/{name}", None)
        if plan.held_deletes and plan.hold_reason:
            await self._once(
                f"held/{name}", body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, EVENT_DELETES_HELD,
                f"not deleting ManagedClusterAddOns of {', '.join(plan.held_deletes[:20])} yet: {plan.hold_reason}",
            )
        else:
            self.reported.pop(f"held/{name}", None)
        return retry

    async def _rollout_events(self, name: str, body: JSON, plan: Any, written: set[str]) -> None:
        spelling, told = events.spelling_events(body, self.spellings.get(name, frozenset()))
        self.spellings[name] = told
        found, memory = events.rollout_events(
            plan=plan, old_cma_status=body.get("status"), written=written, breaches=self.breaches.get(name, {})
        )
        self.breaches[name] = memory
        found = spelling + found
        for event in found:
            await self._event(
                body, CLUSTER_MANAGEMENT_ADDONS.api_version, KIND, event.reason, event.message,
                warning=event.type == WARNING,
            )

    def _publish_metrics(self, name: str, plan: Any) -> None:
        names = set()
        for node in plan.nodes:
            placement = f"{node.namespace}/{node.name}"
            names.add(placement)
            metrics.set_rollout_clusters(KIND, "", name, placement, node.status_counts())
        metrics.set_rollout_placements(KIND, "", name, names)

    # -- the MCA pass ----------------------------------------------------------------------------------
    async def reconcile_mca(self, key: str) -> float | None:
        cluster, _, name = key.partition("/")
        mca = self.mcas_by_name.get(name, {}).get(cluster)
        if mca is None or is_deleting(mca):
            self.reported.pop(f"mca/{key}", None)
            return None
        cma = self._cma(name)
        if cma is None:
            return None
        managed = install.is_lifecycle_managed(cma)
        if managed:
            owners = install.owner_references_update(mca, cma)
            if owners is not None:
                updated = await self._patch_mca(mca, {"metadata": {"ownerReferences": owners}}, subresource=None)
                if updated is None:
                    return CONFLICT_RETRY_SECONDS
                if not any(ref.get("controller") for ref in meta(mca).get("ownerReferences") or []):
                    self.adopted.add(str(meta(mca).get("uid") or ""))
                mca = updated
        assert self.cluster_cache is not None
        if self.cluster_cache.get(cluster) is None:
            await self._once(
                f"mca/{key}", mca, MANAGED_CLUSTER_ADDONS.api_version, MCA_KIND, EVENT_CLUSTER_NOT_FOUND,
                f"namespace {cluster!r} belongs to no ManagedCluster: this add-on has no cluster to run on",
            )
        refs = progressing.mca_config_hash_update(mca, self._config_object, self.configs.served)
        status = dict(mca.get("status") or {})
        if refs is not None:
            status["configReferences"] = refs
        current = {**mca, "status": status}
        if managed:
            works, hosted = self._works_of(key, mca)
            update = progressing.progressing_update(current, works, self.context.clock(), hosted_works=hosted)
            if update is not None:
                status = update
        if status != (mca.get("status") or {}):
            if await self._patch_mca(mca, {"status": status}, subresource="status") is None:
                return CONFLICT_RETRY_SECONDS
        return None

    def _config_object(self, group: str, resource: str, namespace: str, name: str) -> JSON | None:
        return self.configs.get(group, resource, namespace, name)

    def _works_of(self, key: str, mca: JSON) -> tuple[list[JSON], list[JSON]]:
        """The add-on's works in the MCA's namespace, and (hosted mode) in its hosting cluster's."""
        hosting = annotations_of(mca).get(ANNOTATION_HOSTING_CLUSTER_NAME) or ""
        own: list[JSON] = []
        hosted: list[JSON] = []
        for (namespace, _name), work in sorted(self.works_by_key.get(key, {}).items()):
            if namespace == namespace_of(mca):
                own.append(work)
            elif hosting and namespace == hosting:
                hosted.append(work)
        return own, hosted

    # -- the cluster pass (annotation sync, docs/behaviour/addons.md 4.5) -------------------------------------------------
    async def reconcile_cluster(self, cluster: str) -> float | None:
        assert self.cluster_cache is not None
        obj = self.cluster_cache.get(cluster)
        if obj is None:
            return None
        retry = False
        for name, by_cluster in list(self.mcas_by_name.items()):
            mca = by_cluster.get(cluster)
            cma = self._cma(name)
            if mca is None or cma is None or is_deleting(mca):
                continue
            if ((cma.get("spec") or {}).get("installStrategy") or {}).get("type") != "Placements":
                continue
            wanted = install.annotation_sync(mca, obj)
            if wanted is None:
                continue
            old = annotations_of(mca)
            patch: dict[str, str | None] = {k: v for k, v in wanted.items() if old.get(k) != v}
            patch.update({k: None for k in old if k not in wanted})
            if await self._patch_mca(mca, {"metadata": {"annotations": patch}}, subresource=None) is None:
                retry = True
        return CONFLICT_RETRY_SECONDS if retry else None


def setup(registry: kopf.OperatorRegistry, context: ControllerContext) -> None:
    """Register the add-on manager's handlers on ``registry``."""
    controller = AddonController(context)
    controller.setup(registry)
    context.extras.setdefault("addon", controller)
