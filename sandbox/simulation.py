"""Simulated managed clusters driven against a hub API server, only through its API.

``Simulation`` registers the fleet (cluster1..clusterN: namespaces, ManagedClusters, the
``default`` and ``global`` ManagedClusterSets and their bindings in namespace ``default``) and
then runs, until stopped:

- per cluster, the registration agent: heartbeat Lease (every lease duration plus up to a quarter
  of it, at random, as OCM's agent; the first wait after the simulation starts is anywhere from
  half a period on, so the fleet's heartbeats are spread over time as a running fleet's are) and
  ManagedCluster status (joined, available or API server down, claims, resources), silent while
  the profile says the cluster is unreachable;
- per cluster, the work agent: every ManifestWork in the cluster namespace is planned by the pure
  ``ocm_rollout.sandbox.agents.work.plan_work`` and the plan carried out (finalizer, status subresource,
  finalizer removal);
- the hub side of registration that OCM runs on the hub: acceptance, lease expiry -> Available
  Unknown, the built-in taints, ManagedClusterSet and binding status;
- per ManagedClusterAddOn of a registered add-on (a ClusterManagementAddOn of the same name) in a
  cluster namespace, the add-on's own framework: ``status.supportedConfigs`` (the declared config
  types the hub serves, learnt through discovery and learnt again when a CRD changes), the deploy
  work ``addon-<addon>-deploy-0`` rendering the agent, ``ManifestApplied`` and ``Available``,
  planned by the pure ``ocm_rollout.sandbox.agents.addon.plan_addon``; a template add-on's work is
  rendered from its AddOnTemplate (``ocm_rollout.sandbox.agents.addon_template``; templates are
  watched while the hub serves them, ``ocm_rollout.sandbox.sim_templates``). An add-on is looked at
  again when it, its ClusterManagementAddOn, its AddOnDeploymentConfigs, its AddOnTemplate, its
  deploy work or its cluster changes;
- for the same add-ons, the framework's hub-side config controllers (``cmaconfig``,
  ``addonconfig``): the desired spec hashes of the ClusterManagementAddOn's status and the
  ``lastObservedGeneration`` and own-config hashes of each MCA's ``status.configReferences``,
  planned by the pure ``ocm_rollout.sandbox.agents.addon_config_hash``. Config objects come from
  list-and-watch caches (AddOnDeploymentConfigs, AddOnTemplates, and any other kind a CMA names
  that the hub serves: ``ocm_rollout.sandbox.sim_configs``) and are read again from the API
  before a hash is written, so a cache behind the API never writes an old hash back. A status is
  written only when a hash or generation differs from what is stored (when the hub's add-on
  manager computes the same hashes, as ours does, nothing is written); a conflict is retried
  after the object is read again.

The agents come in two roles, as OCM's klusterlet runs them: ``REGISTRATION`` (the registration
agents and the hub side of registration, cluster sets, the add-on frameworks) and ``WORK`` (the
work agents). One ``Simulation`` runs both by default; ``ocm-rollout up`` runs each role in a
process of its own (``sim_main --agents``), so a large fleet's agents use two cores. The two only
share what is stored in the API: the registration role watches only the add-ons' deploy works
(label-selected), and the work role watches every work and the ManagedClusters (for the workload
metrics, which it serves) and follows each cluster's reachability on its own.

Every decision is made by the pure core from what is stored in the API; in memory there is only
the time each work generation was first seen (a restarted simulation treats a generation the
status already reports as applied), the simulation's start time (the profile's windows), what the
hub serves (discovery) and an index of the add-ons to look at again when something changes.
Each cluster's objects (``ocm_rollout.sandbox.agents.cluster``, what its works applied) are rebuilt from the
works' statuses after a restart.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.api import constants
from ocm_rollout.client.kube import (
    ADDON_DEPLOYMENT_CONFIGS,
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    LEASES,
    MANAGED_CLUSTER_ADDONS,
    MANAGED_CLUSTER_SET_BINDINGS,
    MANAGED_CLUSTER_SETS,
    MANAGED_CLUSTERS,
    MANIFEST_WORKS,
    NAMESPACES,
    Conflict,
    Kube,
    KubeError,
    NotFound,
    Resource,
)
from ocm_rollout.client.queue import WorkQueue, run_workers
from ocm_rollout.client.watchcache import Key, WatchCache, resource_version
from ocm_rollout.sandbox.agents import names
from ocm_rollout.sandbox.agents.addon import (
    ConfigKey,
    GroupResource,
    addon_status,
    apply_failure,
    declared_config_types,
    deploy_work_name,
    deployment_config_ref,
    needs_render,
    plan_addon,
    rendered_config_types,
)
from ocm_rollout.sandbox.agents.addon_config_hash import (
    cma_config_keys,
    cma_status_hashes,
    mca_config_keys,
    mca_status_hashes,
)
from ocm_rollout.sandbox.agents.addon_index import AddonIndex
from ocm_rollout.sandbox.agents.addon_template import (
    TEMPLATE_GROUP_RESOURCE,
    is_template_addon,
    template_reference,
)
from ocm_rollout.sandbox.agents.cluster import ClusterObject, ClusterObjects
from ocm_rollout.sandbox.agents.registration import (
    agent_status,
    binding_status,
    cluster_lease,
    cluster_namespace,
    cluster_set_binding,
    cluster_set_status,
    default_cluster_set,
    desired_taints,
    first_lease_wait,
    fleet_member,
    format_micro_time,
    global_cluster_set,
    hub_accepted_status,
    lease_expired,
    lease_expires_at,
    lease_renew_time,
    lease_stopped_status,
    lease_update_wait,
    managed_cluster,
)
from ocm_rollout.sandbox.agents.work import Sighting, generation_of, plan_work, sighting_for
from ocm_rollout.sandbox.lease_renewer import LeaseRenewer
from ocm_rollout.sandbox.sim_client import Writer
from ocm_rollout.sandbox.sim_configs import ConfigSource
from ocm_rollout.sandbox.sim_discovery import served_resource_map
from ocm_rollout.sandbox.sim_metrics import FleetMetrics
from ocm_rollout.sandbox.sim_profile import ClusterPlan, Profile
from ocm_rollout.sandbox.sim_templates import TemplateSource

log = logging.getLogger(__name__)

BINDING_NAMESPACE = "default"
CONFLICT_RETRY_SECONDS = 0.05
MAX_STEPS_PER_RECONCILE = 6
# Clusters registered at once (each: namespace, ManagedCluster, Lease).
REGISTER_CONCURRENCY = 32
# Passes of one kind of agent (or hub controller) run at once. A real fleet's agents all run at
# the same time; with 4, a 10,000-cluster rollout waited on the work agents' round trips to the
# hub (46 s instead of 39 s), so the simulation was slower than the fleet it stands for.
AGENT_WORKERS = 16
# The hub side leaves a new cluster to its reachable agent's first report for this long.
AGENT_FIRST_SECONDS = 10.0
# A deploy work that could not be written is tried again after this long.
ADDON_RETRY_SECONDS = 5.0
DISCOVERY_KEY = "discovery"
# The roles (see the module docstring).
REGISTRATION = "registration"
WORK = "work"
ROLES: frozenset[str] = frozenset({REGISTRATION, WORK})
ADC_GROUP_RESOURCE: GroupResource = (names.ADDON_GROUP, names.ADDON_DEPLOYMENT_CONFIGS)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SimEvent:
    """Something the simulation did, for the live view's log."""

    kind: str
    subject: str
    detail: str


class Simulation:
    """See the module docstring. ``run`` returns once ``stop`` is set and every loop ended."""

    def __init__(
        self,
        kube: Kube,
        *,
        clusters: int,
        profile: Profile | None = None,
        clock: Callable[[], datetime] = utc_now,
        binding_namespace: str = BINDING_NAMESPACE,
        workers: int = AGENT_WORKERS,
        on_event: Callable[[SimEvent], None] | None = None,
        roles: frozenset[str] = ROLES,
        seed: int | None = None,
    ) -> None:
        if clusters < 0:
            raise ValueError("clusters must be >= 0")
        if not roles or not roles <= ROLES:
            raise ValueError(f"roles must be a non-empty subset of {sorted(ROLES)}, got {sorted(roles)}")
        self.roles = roles
        self.registration = REGISTRATION in roles
        self.working = WORK in roles
        self.kube = kube
        self.renewer = LeaseRenewer(kube)  # the heartbeats (the only request not sent through ``kube``)
        self.writer = Writer(kube)
        self.profile = profile or Profile()
        self.clock = clock
        self.binding_namespace = binding_namespace
        self.workers = workers
        self.on_event = on_event
        self.plans: dict[str, ClusterPlan] = {}
        for index in range(1, clusters + 1):
            plan = self.profile.plan(fleet_member(index))
            self.plans[plan.member.name] = plan
        self.started_at = clock()
        self._random = random.Random(seed)  # the heartbeats' jitter
        self._beating: set[str] = set()  # clusters whose registration agent has had its first pass
        self._sightings: dict[str, tuple[int, bool, Sighting]] = {}  # work uid -> (gen, deleting, when)
        # work -> resourceVersion of the work agent's last write of it, until its watch event comes:
        # the pass that wrote it already acted on that version (see _on_work).
        self._agent_wrote: dict[Key, str] = {}
        self._reachable: dict[str, bool] = {}  # cluster -> reachable, as its registration agent last saw
        self._work_reachable: dict[str, bool] = {}  # the same, as its work agent last saw
        self._cluster_objects: dict[str, ClusterObjects] = {}  # cluster -> its objects (from the works)
        self.metrics = FleetMetrics(self.plans, clock=lambda: self.elapsed(self.clock()), shown=self._shows_metrics)

        self.clusters = WatchCache(kube, MANAGED_CLUSTERS, on_change=self._on_cluster)
        # The add-on frameworks read only their deploy works, which carry the add-on label.
        works_selector = None if self.working else names.ADDON_NAME_LABEL
        self.works = WatchCache(
            kube, MANIFEST_WORKS, label_selector=works_selector, on_change=self._on_work, by_namespace=True
        )
        self.leases = WatchCache(
            kube, LEASES, label_selector=names.CLUSTER_NAME_LABEL, on_change=self._on_lease
        )
        self.cluster_sets = WatchCache(kube, MANAGED_CLUSTER_SETS, on_change=self._on_set_or_binding)
        self.bindings = WatchCache(kube, MANAGED_CLUSTER_SET_BINDINGS, on_change=self._on_set_or_binding)
        self.addon_managers = WatchCache(kube, CLUSTER_MANAGEMENT_ADDONS, on_change=self._on_addon_manager)
        self.addons = WatchCache(kube, MANAGED_CLUSTER_ADDONS, on_change=self._on_addon)
        self.deployment_configs = WatchCache(kube, ADDON_DEPLOYMENT_CONFIGS, on_change=self._on_deployment_config)
        self.crds = WatchCache(kube, CRDS, on_change=self._on_crd)
        self.informers: list[WatchCache] = [self.clusters, self.works]
        if self.registration:
            self.informers += [
                self.leases, self.cluster_sets, self.bindings, self.addon_managers, self.addons,
                self.deployment_configs, self.crds,
            ]  # fmt: skip
        self.templates = TemplateSource(kube, self._on_template)
        self.configs = ConfigSource(kube, self._on_config)
        self._stop: asyncio.Event | None = None
        self.served: set[GroupResource] = set()
        self.served_map: dict[GroupResource, Resource] = {}
        self.addon_index = AddonIndex()

        self.work_queue: WorkQueue[Key] = WorkQueue("sim-work-agent")
        self.agent_queue: WorkQueue[str] = WorkQueue("sim-registration-agent")
        self.hub_queue: WorkQueue[str] = WorkQueue("sim-registration-hub")
        self.set_queue: WorkQueue[Key] = WorkQueue("sim-clusterset-hub")
        self.addon_queue: WorkQueue[Key] = WorkQueue("sim-addon-framework")
        self.discovery_queue: WorkQueue[str] = WorkQueue("sim-addon-discovery")
        self.cma_config_queue: WorkQueue[str] = WorkQueue("sim-addon-cma-config")
        self.reach_queue: WorkQueue[str] = WorkQueue("sim-work-agent-reachability")

    # -- helpers ----------------------------------------------------------------------------------
    def elapsed(self, now: datetime) -> float:
        return (now - self.started_at).total_seconds()

    def _emit(self, kind: str, subject: str, detail: str) -> None:
        if self.on_event is not None:
            self.on_event(SimEvent(kind, subject, detail))

    def cluster_names(self) -> list[str]:
        return list(self.plans)

    def _shows_metrics(self, name: str) -> bool:
        """A cluster's workload metrics are exposed while it is registered and its agent reachable."""
        return self.clusters.get(name) is not None and self.plans[name].reachable(self.elapsed(self.clock()))

    # -- registration -------------------------------------------------------------------------------
    async def register(self) -> None:
        """Create what is missing: the binding namespace, the sets and bindings, and per cluster its
        namespace, ManagedCluster and heartbeat Lease. Existing objects are left as they are (a
        restart with ``--data`` registers nothing twice); what exists is listed first, so a restart
        of a large fleet sends no create at all for it. Clusters register concurrently
        (``REGISTER_CONCURRENCY`` at a time). Without the ``REGISTRATION`` role: nothing."""
        if not self.registration:
            return
        await self.writer.create_if_absent(
            NAMESPACES, {"metadata": {"name": self.binding_namespace}}
        )
        for cluster_set in (default_cluster_set(), global_cluster_set()):
            await self.writer.create_if_absent(MANAGED_CLUSTER_SETS, _body(cluster_set))
            set_name = cluster_set["metadata"]["name"]
            await self.writer.create_if_absent(
                MANAGED_CLUSTER_SET_BINDINGS,
                _body(cluster_set_binding(self.binding_namespace, set_name)),
                self.binding_namespace,
            )
        namespaces = await self._names(NAMESPACES)
        clusters = await self._names(MANAGED_CLUSTERS)
        leases = await self._names(LEASES, label_selector=names.CLUSTER_NAME_LABEL)
        gate = asyncio.Semaphore(REGISTER_CONCURRENCY)

        async def one(name: str, plan: ClusterPlan) -> None:
            async with gate:
                if name not in namespaces:
                    await self.writer.create_if_absent(NAMESPACES, _body(cluster_namespace(name)))
                if name not in clusters:
                    created = await self.writer.create_if_absent(
                        MANAGED_CLUSTERS, _body(managed_cluster(plan.member, plan.lease_duration_seconds))
                    )
                    if created is not None:
                        self._emit("registered", name, "ManagedCluster created")
                if (name, names.CLUSTER_LEASE_NAME) not in leases:
                    await self.writer.create_if_absent(LEASES, _body(cluster_lease(name, self.clock())), name)

        await asyncio.gather(*(one(name, plan) for name, plan in self.plans.items()))

    async def _names(self, resource: Resource, *, label_selector: str | None = None) -> set[Any]:
        """The names (namespaced: (namespace, name)) of every stored object of ``resource``."""
        found = await self.kube.list_objects(resource, label_selector=label_selector)
        out: set[Any] = set()
        for obj in found:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name") or "")
            out.add((str(meta.get("namespace") or ""), name) if resource.namespaced else name)
        return out

    # -- event wiring -------------------------------------------------------------------------------
    def _on_cluster(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        if not self.registration:
            return  # the work agents read the cluster (registered or not) when metrics are scraped
        name = str(obj["metadata"]["name"])
        self.hub_queue.add(name)
        labels_changed = previous is None or event_type == "DELETED" or (
            (previous.get("metadata") or {}).get("labels") != (obj.get("metadata") or {}).get("labels")
        )
        if labels_changed:
            self._queue_sets()
        if previous is None or event_type == "DELETED" or _availability(obj) != _availability(previous):
            self._queue_addons(self.addon_index.in_namespace(name))
        if previous is not None:
            self._report_cluster_change(name, obj, previous)

    def _on_lease(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        # A renewal changes nothing for a cluster the hub sees as Available: its hub pass is
        # already scheduled for the lease's expiry. Heartbeats of a healthy fleet cost no pass.
        name = str(obj["metadata"]["namespace"])
        cluster = self.clusters.get(name)
        if cluster is None or _availability(cluster)[0] != "True" or event_type != "MODIFIED":
            self.hub_queue.add(name)

    def _on_work(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        key = (str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"]))
        addon = str((obj["metadata"].get("labels") or {}).get(names.ADDON_NAME_LABEL) or "")
        if addon and key[1] == deploy_work_name(addon) and self.registration:
            self._queue_addons([(key[0], addon)])
        if not self.working:
            return
        wrote = self._agent_wrote.pop(key, None)
        if event_type == "DELETED":
            self._sightings.pop(str(obj["metadata"].get("uid", "")), None)
            if key[0] in self.plans:  # its agent lets go of the work's objects
                self.work_queue.add(key)
            return
        if wrote is not None and wrote == resource_version(obj):
            return  # the event of the work agent's own write: the pass that made it went on from it
        if key[0] in self.plans:
            self.work_queue.add(key)

    def _on_set_or_binding(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self._queue_sets()

    def _on_addon(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        if event_type == "DELETED":
            self.addon_index.remove(obj)
        else:
            self.addon_index.update(obj)
        self._queue_addons([(str(obj["metadata"].get("namespace") or ""), str(obj["metadata"]["name"]))])

    def _on_addon_manager(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self.cma_config_queue.add(str(obj["metadata"]["name"]))
        if previous is None or event_type == "DELETED" or obj.get("spec") != previous.get("spec"):
            self._follow_configs()
        if previous is not None and event_type != "DELETED":
            unchanged = obj.get("spec") == previous.get("spec") and (
                (obj.get("metadata") or {}).get("annotations") == (previous.get("metadata") or {}).get("annotations")
            )
            if unchanged:  # a status write of the hub's add-on manager
                return
        self._queue_addons(self.addon_index.of_addon(str(obj["metadata"]["name"])))

    def _on_deployment_config(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        meta = obj.get("metadata") or {}
        self._queue_addons(self.addon_index.using_config(str(meta.get("namespace") or ""), str(meta.get("name"))))
        self._queue_cma_configs(ADC_GROUP_RESOURCE, obj)

    def _on_template(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self._queue_addons(self.addon_index.using_template(str(obj["metadata"]["name"])))
        self._queue_cma_configs(TEMPLATE_GROUP_RESOURCE, obj)

    def _on_config(self, pair: GroupResource, event_type: str, obj: JSON, previous: JSON | None) -> None:
        """A config object of another kind changed: the CMAs and MCAs naming it."""
        meta = obj.get("metadata") or {}
        self._queue_addons(self.addon_index.naming(*pair, str(meta.get("namespace") or ""), str(meta.get("name"))))
        self._queue_cma_configs(pair, obj)

    def _queue_cma_configs(self, pair: GroupResource, obj: JSON) -> None:
        """The CMAs whose status names ``obj`` (a few CMAs: a scan)."""
        meta = obj.get("metadata") or {}
        key = (*pair, str(meta.get("namespace") or ""), str(meta.get("name")))
        for manager in self.addon_managers.items():
            if key in cma_config_keys(manager, {pair}):
                self.cma_config_queue.add(str(manager["metadata"]["name"]))

    def _follow_configs(self) -> None:
        """Watch the config kinds (other than ADCs and templates) some CMA's framework supports."""
        if self._stop is None:
            return
        wanted: set[GroupResource] = set()
        for manager in self.addon_managers.items():
            wanted |= rendered_config_types(manager, self.served)
        wanted -= {ADC_GROUP_RESOURCE, TEMPLATE_GROUP_RESOURCE}
        for pair, obj in self.configs.follow(wanted, self.served_map, self._stop):
            self._on_config(pair, "DELETED", obj, None)

    def _on_crd(self, event_type: str, obj: JSON, previous: JSON | None) -> None:
        self.discovery_queue.add(DISCOVERY_KEY)

    def _queue_addons(self, keys: list[Key]) -> None:
        for key in keys:
            if key[0] in self.plans:
                self.addon_queue.add(key)

    def _queue_sets(self) -> None:
        for obj in self.cluster_sets.items():
            self.set_queue.add(("", str(obj["metadata"]["name"])))
        for obj in self.bindings.items():
            self.set_queue.add((str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])))

    def _report_cluster_change(self, name: str, obj: JSON, previous: JSON) -> None:
        def available(o: JSON) -> str:
            for cond in (o.get("status") or {}).get("conditions") or []:
                if cond.get("type") == constants.CONDITION_MANAGED_CLUSTER_AVAILABLE:
                    return str(cond.get("status"))
            return "-"

        def taints(o: JSON) -> list[str]:
            return sorted(str(t.get("key")) for t in (o.get("spec") or {}).get("taints") or [])

        if available(obj) != available(previous):
            self._emit("cluster", name, f"Available {available(previous)} -> {available(obj)}")
        if taints(obj) != taints(previous):
            self._emit("cluster", name, "taints " + (", ".join(taints(obj)) or "none"))

    # -- the registration agent (one key per cluster) ------------------------------------------------
    async def reconcile_agent(self, name: str) -> float | None:
        plan = self.plans[name]
        now = self.clock()
        elapsed = self.elapsed(now)
        next_change = plan.next_change(elapsed)
        until_change = None if next_change is None else max(next_change - elapsed, 0.01)
        reachable = plan.reachable(elapsed)
        was_reachable = self._reachable.get(name)
        self._reachable[name] = reachable
        if was_reachable is not None and was_reachable != reachable:
            self._emit("agent", name, "reachable again" if reachable else "unreachable (agent silent)")
        if not reachable:
            return until_change

        await self._renew_lease(name, now, plan.lease_duration_seconds)
        cluster = self.clusters.get(name)
        if cluster is not None:
            # The simulation plays the hub's registration controller too: a cluster its agent
            # reports for the first time is accepted in the same status write, so a healthy fleet
            # registers with one status write per cluster (and no unreachable taint to add and
            # remove again).
            accepted = hub_accepted_status(cluster, now)
            seen = cluster if accepted is None else {**cluster, "status": accepted}
            status = agent_status(seen, plan.member, plan.api_server_healthy(elapsed), now)
            if status is None:
                status = accepted
            if status is not None:
                try:
                    self.clusters.remember(await self.writer.replace_status(MANAGED_CLUSTERS, cluster, status))
                except Conflict:
                    return CONFLICT_RETRY_SECONDS
        period, fraction = float(plan.lease_duration_seconds), self._random.random()
        if name in self._beating:
            wait = lease_update_wait(period, fraction)
        else:
            self._beating.add(name)
            wait = first_lease_wait(period, fraction)
        return wait if until_change is None else min(wait, until_change)

    async def _renew_lease(self, name: str, now: datetime, period: float) -> None:
        """Renew the cluster's heartbeat Lease, unless it was renewed less than half a period ago
        (a cluster registered a moment ago, or an agent pass that a status change brought
        forward): one write per cluster per lease period, as OCM's agent."""
        lease = self.leases.get(names.CLUSTER_LEASE_NAME, name)
        if lease is None:
            created = await self.writer.create_if_absent(LEASES, _body(cluster_lease(name, now)), name)
            if created is not None:
                self.leases.remember(created)
                return
        renewed = lease_renew_time(lease)
        if renewed is not None and (now - renewed).total_seconds() < period / 2:
            return
        try:
            updated = await self.renewer.renew(name, names.CLUSTER_LEASE_NAME, format_micro_time(now))
        except NotFound:
            return
        self.leases.remember(updated)

    # -- the hub side of registration (one key per cluster) ------------------------------------------
    async def reconcile_hub(self, name: str) -> float | None:
        cluster = self.clusters.get(name)
        if cluster is None:
            return None
        now = self.clock()
        plan = self.plans.get(name)
        if plan is not None and not _availability(cluster)[0] and plan.reachable(self.elapsed(now)):
            # Our own agent is about to report this cluster, accepting it in the same write
            # (reconcile_agent); its status change brings this pass back.
            return AGENT_FIRST_SECONDS
        try:
            status = hub_accepted_status(cluster, now)
            if status is not None:
                cluster = await self.writer.replace_status(MANAGED_CLUSTERS, cluster, status)
                self.clusters.remember(cluster)
            lease = self.leases.get(names.CLUSTER_LEASE_NAME, name)
            if lease is None:
                # As OCM's hub does for an accepted cluster: start the clock with a fresh lease,
                # so a cluster whose agent never reports still turns Unknown.
                try:
                    lease = await self.writer.create_if_absent(LEASES, _body(cluster_lease(name, now)), name)
                except NotFound:  # no cluster namespace (a ManagedCluster made by hand): no lease
                    lease = None
                if lease is not None:
                    self.leases.remember(lease)
            if lease is not None and lease_expired(cluster, lease, now):
                status = lease_stopped_status(cluster, now)
                if status is not None:
                    cluster = await self.writer.replace_status(MANAGED_CLUSTERS, cluster, status)
                    self.clusters.remember(cluster)
            taints = desired_taints(cluster, now)
            if taints is not None:
                cluster = await self.writer.merge_patch(MANAGED_CLUSTERS, cluster, {"spec": {"taints": taints}})
                self.clusters.remember(cluster)
        except Conflict:
            return CONFLICT_RETRY_SECONDS
        expires = lease_expires_at(cluster, lease)
        if expires is not None and expires > now:
            return (expires - now).total_seconds()
        return None

    # -- cluster sets and bindings --------------------------------------------------------------------
    async def reconcile_set(self, key: Key) -> float | None:
        namespace, name = key
        now = self.clock()
        try:
            if not namespace:
                cluster_set = self.cluster_sets.get(name)
                if cluster_set is None or (cluster_set.get("metadata") or {}).get("deletionTimestamp"):
                    return None
                status = cluster_set_status(cluster_set, self.clusters.items(), now)
                if status is not None:
                    self.cluster_sets.remember(
                        await self.writer.replace_status(MANAGED_CLUSTER_SETS, cluster_set, status)
                    )
                return None
            binding = self.bindings.get(name, namespace)
            if binding is None:
                return None
            set_name = str((binding.get("spec") or {}).get("clusterSet") or "")
            status = binding_status(binding, self.cluster_sets.get(set_name) is not None, now)
            if status is not None:
                self.bindings.remember(await self.writer.replace_status(MANAGED_CLUSTER_SET_BINDINGS, binding, status))
        except (Conflict, NotFound):
            return CONFLICT_RETRY_SECONDS
        return None

    # -- the work agent's reachability (one key per cluster) ------------------------------------------
    async def reconcile_reach(self, name: str) -> float | None:
        """Follow the profile's windows for one cluster's work agent: when the cluster is reachable
        again, its works are looked at again (``reconcile_work`` leaves them alone meanwhile).
        Comes back at the cluster's next change; a cluster that never changes costs one pass."""
        plan = self.plans[name]
        elapsed = self.elapsed(self.clock())
        reachable = plan.reachable(elapsed) and plan.api_server_healthy(elapsed)
        was_reachable = self._work_reachable.get(name)
        self._work_reachable[name] = reachable
        if reachable and was_reachable is False:
            for key in self.works.keys_in(name):
                self.work_queue.add(key)
        next_change = plan.next_change(elapsed)
        return None if next_change is None else max(next_change - elapsed, 0.01)

    # -- the work agent (one key per ManifestWork) -----------------------------------------------------
    def _sighting(self, work: JSON, now: datetime) -> Sighting:
        meta = work.get("metadata") or {}
        uid = str(meta.get("uid") or meta.get("name"))
        generation = generation_of(work)
        deleting = bool(meta.get("deletionTimestamp"))
        known = self._sightings.get(uid)
        if known is not None and known[0] == generation and known[1] == deleting:
            return known[2]
        sighting = sighting_for(work, now)
        self._sightings[uid] = (generation, deleting, sighting)
        return sighting

    def _objects_of(self, cluster: str) -> ClusterObjects:
        """The objects on ``cluster``; after a (re)start, rebuilt from its works' statuses."""
        store = self._cluster_objects.get(cluster)
        if store is None:
            store = ClusterObjects.from_works(self.works.objects[k] for k in self.works.keys_in(cluster))
            self._cluster_objects[cluster] = store
        return store

    def _update_objects(self, key: Key, applied: frozenset[ClusterObject] | None, work: JSON | None) -> None:
        """Record what work ``key`` holds now (None: released); a change of the cluster's namespaces
        or kinds makes its agent try its other works again (as a real agent retries a failed apply)."""
        cluster, name = key
        store = self._objects_of(cluster)
        before = store.shape()
        delete_option = ((work or {}).get("spec") or {}).get("deleteOption")
        if applied is None:
            store.release(name, delete_option)
        else:
            store.record(name, applied, delete_option)
        if applied and work is not None:
            self.metrics.applied(cluster, name, generation_of(work), work.get("spec"))
        else:
            self.metrics.released(cluster, name)
        if store.shape() != before:
            for other in self.works.keys_in(cluster):
                if other != key:
                    self.work_queue.add(other)

    async def reconcile_work(self, key: Key) -> float | None:
        namespace, name = key
        plan = self.plans.get(namespace)
        if plan is None:
            return None
        for _ in range(MAX_STEPS_PER_RECONCILE):
            work = self.works.get(name, namespace)
            if work is None:
                if self._objects_of(namespace).held_by(name):  # gone without the agent's clean-up
                    self._update_objects(key, None, None)
                return None
            now = self.clock()
            elapsed = self.elapsed(now)
            if not plan.reachable(elapsed) or not plan.api_server_healthy(elapsed):
                return None  # the agent's cluster tick re-queues its works once it is back
            behaviour = plan.work_behaviour(name, generation_of(work), work.get("spec"))
            view = self._objects_of(namespace).view(excluding=name)
            step = plan_work(work, behaviour, self._sighting(work, now), now, view)
            if step.applied is not None:
                # applied on the cluster first, then reported: whoever reads the status can
                # already see the objects (and the workload metrics they bring)
                self._update_objects(key, step.applied, work)
            try:
                if step.add_finalizer:
                    finalizers = [*((work.get("metadata") or {}).get("finalizers") or []), names.MANIFEST_WORK_FINALIZER]
                    self._remember_own(
                        key, await self.writer.merge_patch(MANIFEST_WORKS, work, {"metadata": {"finalizers": finalizers}})
                    )
                    continue
                if step.status is not None:
                    written = await self.writer.replace_status(MANIFEST_WORKS, work, step.status)
                    self._remember_own(key, written)
                    self._report_work(namespace, name, work, written)
                    work = written
                if step.remove_finalizer:
                    remaining = [
                        f for f in (work.get("metadata") or {}).get("finalizers") or []
                        if f != names.MANIFEST_WORK_FINALIZER
                    ]
                    await self.writer.merge_patch(MANIFEST_WORKS, work, {"metadata": {"finalizers": remaining}})
                    self._update_objects(key, None, work)
                    self._emit("work", f"{namespace}/{name}", "cleaned up")
                    return None
            except Conflict:
                return CONFLICT_RETRY_SECONDS
            except NotFound:
                if self._objects_of(namespace).held_by(name):  # gone while it was being applied
                    self._update_objects(key, None, None)
                return None
            if step.status is None:
                if step.wake_at is None:
                    return None
                return max((step.wake_at - now).total_seconds(), 0.01)
        return CONFLICT_RETRY_SECONDS

    def _remember_own(self, key: Key, written: JSON) -> None:
        """Cache a version the work agent wrote; its watch event then queues no pass of its own."""
        self.works.remember(written)
        self._agent_wrote[key] = resource_version(written)

    def _report_work(self, namespace: str, name: str, before: JSON, after: JSON) -> None:
        def summary(obj: JSON) -> str:
            conds = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
            parts = []
            for type_ in ("Applied", "Available", "Progressing", "Degraded", "Deleting"):
                cond = conds.get(type_)
                if cond is not None:
                    parts.append(f"{type_}={cond.get('status')}")
            return " ".join(parts)

        new, old = summary(after), summary(before)
        if new != old:
            self._emit("work", f"{namespace}/{name}", f"generation {generation_of(after)}: {new}")

    # -- the add-on frameworks (one key per ManagedClusterAddOn) --------------------------------------
    async def reconcile_discovery(self, _key: str) -> float | None:
        """Learn again what the hub serves; look again at the add-ons whose supported configs change."""
        self.served_map = await served_resource_map(self.kube)
        served = set(self.served_map)
        changed = served ^ self.served
        self.served = served
        self._follow_configs()
        if self._stop is not None:
            for gone in self.templates.follow(served, self._stop):
                self._queue_addons(self.addon_index.using_template(gone))
        if changed:
            for manager in self.addon_managers.items():
                if changed.intersection(declared_config_types(manager)):
                    self._queue_addons(self.addon_index.of_addon(str(manager["metadata"]["name"])))
                    self.cma_config_queue.add(str(manager["metadata"]["name"]))
        return None

    # -- the framework's hub-side config controllers (cmaconfig, addonconfig) -----------------------
    def _cached_config(self, key: ConfigKey) -> JSON | None:
        group, resource, namespace, name = key
        if (group, resource) == ADC_GROUP_RESOURCE:
            return self.deployment_configs.get(name, namespace or None)
        if (group, resource) == TEMPLATE_GROUP_RESOURCE:
            return self.templates.get(name)
        return self.configs.get((group, resource), namespace, name)

    def _cached_configs(self, keys: list[ConfigKey]) -> dict[ConfigKey, JSON]:
        found = {key: self._cached_config(key) for key in keys}
        return {key: obj for key, obj in found.items() if obj is not None}

    async def _read_configs(self, keys: list[ConfigKey]) -> dict[ConfigKey, JSON]:
        """The config objects as stored now (the ones that exist)."""
        out: dict[ConfigKey, JSON] = {}
        for key in keys:
            group, resource, namespace, name = key
            obj: JSON | None
            if (group, resource) == ADC_GROUP_RESOURCE:
                obj = await self.kube.get_or_none(ADDON_DEPLOYMENT_CONFIGS, name, namespace or None)
                if obj is not None:
                    self.deployment_configs.remember(obj)
            elif (group, resource) == TEMPLATE_GROUP_RESOURCE:
                obj = await self.templates.read(name)
            else:
                rest = self.served_map.get((group, resource))
                obj = None if rest is None else await self.configs.read(rest, (group, resource), namespace, name)
            if obj is not None:
                out[key] = obj
        return out

    async def reconcile_cma_configs(self, name: str) -> float | None:
        """The cmaconfig controller for one CMA: the desired spec hashes of its status."""
        manager = self.addon_managers.get(name)
        if manager is None:
            return None
        supported = rendered_config_types(manager, self.served)
        keys = cma_config_keys(manager, supported)
        if cma_status_hashes(manager, supported, self._cached_configs(keys)) is None:
            return None
        try:
            status = cma_status_hashes(manager, supported, await self._read_configs(keys))
            if status is None:
                return None
            updated = await self.writer.replace_status(CLUSTER_MANAGEMENT_ADDONS, manager, status)
        except Conflict:
            fresh = await self.kube.get_or_none(CLUSTER_MANAGEMENT_ADDONS, name)
            if fresh is not None:
                self.addon_managers.remember(fresh)
            return CONFLICT_RETRY_SECONDS
        except NotFound:
            return None
        except KubeError as exc:
            log.warning("config spec hashes not written", extra={"addon": name, "error": exc.message})
            return ADDON_RETRY_SECONDS
        self.addon_managers.remember(updated)
        self._emit("addon", name, "spec hashes of the desired configs updated")
        return None

    async def _mca_config_hashes(self, addon: JSON, manager: JSON) -> tuple[JSON | None, float | None]:
        """The addonconfig controller for one MCA: ``lastObservedGeneration`` and the spec hashes
        of its own configs. Returns the MCA to go on with (None: stop, retrying after the delay)."""
        supported = rendered_config_types(manager, self.served)
        keys = mca_config_keys(addon, supported)
        if mca_status_hashes(addon, supported, self._cached_configs(keys)) is None:
            return addon, None
        meta = addon.get("metadata") or {}
        try:
            status = mca_status_hashes(addon, supported, await self._read_configs(keys))
            if status is None:
                return addon, None
            updated = await self.writer.replace_status(MANAGED_CLUSTER_ADDONS, addon, status)
        except Conflict:
            fresh = await self.kube.get_or_none(MANAGED_CLUSTER_ADDONS, str(meta.get("name")), str(meta.get("namespace")))
            if fresh is not None:
                self.addons.remember(fresh)
            return None, CONFLICT_RETRY_SECONDS
        except NotFound:
            return None, None
        except KubeError as exc:
            log.warning("config spec hashes not written", extra={"addon": meta.get("name"), "error": exc.message})
            return None, ADDON_RETRY_SECONDS
        self.addons.remember(updated)
        self._emit("addon", f"{meta.get('namespace')}/{meta.get('name')}", "config spec hashes updated")
        return updated, None

    async def _deployment_configs(self, addon: JSON, fresh: bool) -> dict[ConfigKey, JSON]:
        """The AddOnDeploymentConfig ``addon`` names, from the cache, or read from the API when the
        agent is about to be rendered with it (the cache may not have the version that was hashed)."""
        ref = deployment_config_ref(addon)
        if ref is None:
            return {}
        _group, _resource, namespace, name = ref
        obj = self.deployment_configs.get(name, namespace)
        if fresh:
            obj = await self.kube.get_or_none(ADDON_DEPLOYMENT_CONFIGS, name, namespace or None)
            if obj is not None:
                self.deployment_configs.remember(obj)
        return {} if obj is None else {ref: obj}

    async def _templates_of(self, addon: JSON, manager: JSON, fresh: bool) -> dict[str, JSON]:
        """The AddOnTemplate a template add-on names, from the cache, or read from the API when
        the agent is about to be rendered from it."""
        ref = template_reference(addon) if is_template_addon(manager) else None
        if ref is None or not ref.name:
            return {}
        obj = await self.templates.read(ref.name) if fresh else self.templates.get(ref.name)
        return {} if obj is None else {ref.name: obj}

    async def reconcile_addon(self, key: Key) -> float | None:
        namespace, name = key
        if namespace not in self.plans:
            return None
        addon = self.addons.get(name, namespace)
        manager = self.addon_managers.get(name)
        if addon is None or manager is None:
            return None
        hashed, retry_after = await self._mca_config_hashes(addon, manager)
        if hashed is None:
            return retry_after
        addon = hashed
        if (addon.get("metadata") or {}).get("deletionTimestamp"):
            return None
        work = self.works.get(deploy_work_name(name), namespace)
        fresh = needs_render(addon, work)
        configs = await self._deployment_configs(addon, fresh=fresh)
        templates = await self._templates_of(addon, manager, fresh)
        cluster = self.clusters.get(namespace)
        now = self.clock()
        plan = plan_addon(addon, manager, self.served, configs, work, cluster, now, templates=templates)
        failure = plan.work.failure
        retry: float | None = None
        status = plan.status
        try:
            written: JSON | None = None
            if plan.work.create is not None:
                written = await self.kube.create(MANIFEST_WORKS, plan.work.create, namespace)
            elif plan.work.patch is not None and work is not None:
                written = await self.writer.merge_patch(MANIFEST_WORKS, work, plan.work.patch)
            if written is not None:
                self.works.remember(written)
                self._report_deploy_work(key, work, written)
                work = written
                status = addon_status(
                    addon, manager, self.served, work, cluster, now, templates=templates, configs=configs
                )
        except Conflict:  # a stale copy, or a work the cache has not seen yet
            # ... or never will: without the work role, the cache holds the labelled works only.
            stored = await self.kube.get_or_none(MANIFEST_WORKS, deploy_work_name(name), namespace)
            if stored is not None:
                self.works.remember(stored)
            return CONFLICT_RETRY_SECONDS
        except KubeError as exc:
            if isinstance(exc, NotFound) and work is not None:
                return CONFLICT_RETRY_SECONDS  # the work went away meanwhile
            failure = apply_failure(exc.message)
            status = addon_status(
                addon, manager, self.served, work, cluster, now, failure=failure, templates=templates, configs=configs
            )
            retry = ADDON_RETRY_SECONDS
        if failure is not None and retry is None:
            retry = ADDON_RETRY_SECONDS
        if status is not None:
            try:
                updated = await self.writer.replace_status(MANAGED_CLUSTER_ADDONS, addon, status)
            except Conflict:
                return CONFLICT_RETRY_SECONDS
            except NotFound:
                return None
            self.addons.remember(updated)
            self._report_addon(key, addon, updated)
        return retry

    def _report_deploy_work(self, key: Key, before: JSON | None, after: JSON) -> None:
        subject = f"{key[0]}/{key[1]}"
        generation = generation_of(after)
        if before is None:
            self._emit("addon", subject, f"deploy work {deploy_work_name(key[1])} created")
        elif generation != generation_of(before):
            self._emit("addon", subject, f"deploy work {deploy_work_name(key[1])} generation {generation}")

    def _report_addon(self, key: Key, before: JSON, after: JSON) -> None:
        def summary(obj: JSON) -> str:
            conds = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
            parts = []
            for type_ in (names.ADDON_MANIFEST_APPLIED, names.ADDON_AVAILABLE):
                cond = conds.get(type_)
                if cond is not None:
                    parts.append(f"{type_}={cond.get('status')} {cond.get('reason')}")
            return ", ".join(parts)

        new, old = summary(after), summary(before)
        if new != old:
            self._emit("addon", f"{key[0]}/{key[1]}", new)

    # -- running -----------------------------------------------------------------------------------------
    async def wait_synced(self) -> None:
        await asyncio.gather(*(informer.synced.wait() for informer in self.informers))

    async def _start_registration(self) -> None:
        """Queue what the registration role looks at first: every cluster (agent and hub side),
        the sets and bindings, what the hub serves, every add-on and ClusterManagementAddOn."""
        for name in self.plans:
            self.agent_queue.add(name)
            self.hub_queue.add(name)
        self._queue_sets()
        try:
            await self.reconcile_discovery(DISCOVERY_KEY)
        except KubeError as exc:  # the discovery worker tries again
            log.warning("discovery failed", extra={"error": str(exc)})
            self.discovery_queue.add(DISCOVERY_KEY)
        self._queue_addons(list(self.addons.objects))
        for manager in self.addon_managers.items():
            self.cma_config_queue.add(str(manager["metadata"]["name"]))

    async def run(self, stop: asyncio.Event, *, ready: asyncio.Event | None = None) -> None:
        """Run every loop until ``stop`` is set."""
        watchers = [asyncio.create_task(i.run(stop), name=f"sim-informer-{i.resource.plural}") for i in self.informers]
        loops: list[asyncio.Task[Any]] = []
        self._stop = stop
        try:
            synced = asyncio.ensure_future(self.wait_synced())
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({synced, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not synced.done():
                synced.cancel()
                return
            if self.working:
                for name in self.plans:
                    self.reach_queue.add(name)
                for key in self.works.objects:
                    if key[0] in self.plans:
                        self.work_queue.add(key)
                loops += [
                    asyncio.create_task(run_workers(self.reach_queue, self.reconcile_reach, workers=1)),
                    asyncio.create_task(run_workers(self.work_queue, self.reconcile_work, workers=self.workers)),
                ]
            if self.registration:
                await self._start_registration()
                loops += [
                    asyncio.create_task(run_workers(self.agent_queue, self.reconcile_agent, workers=self.workers)),
                    asyncio.create_task(run_workers(self.hub_queue, self.reconcile_hub, workers=self.workers)),
                    asyncio.create_task(run_workers(self.set_queue, self.reconcile_set, workers=1)),
                    asyncio.create_task(run_workers(self.addon_queue, self.reconcile_addon, workers=self.workers)),
                    asyncio.create_task(run_workers(self.discovery_queue, self.reconcile_discovery, workers=1)),
                    asyncio.create_task(run_workers(self.cma_config_queue, self.reconcile_cma_configs, workers=1)),
                ]
            if ready is not None:
                ready.set()
            await stop.wait()
        finally:
            queues: list[WorkQueue[Any]] = [
                self.agent_queue, self.hub_queue, self.set_queue, self.work_queue, self.addon_queue, self.discovery_queue,
                self.cma_config_queue, self.reach_queue,
            ]  # fmt: skip
            for queue in queues:
                queue.shut_down()
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            await asyncio.gather(*watchers, return_exceptions=True)
            await self.templates.close()
            await self.configs.close()
            await self.renewer.close()


def _availability(cluster: JSON) -> tuple[str, str, str]:
    """The cluster's Available condition as (status, reason, message); empty when there is none."""
    for cond in (cluster.get("status") or {}).get("conditions") or []:
        if cond.get("type") == constants.CONDITION_MANAGED_CLUSTER_AVAILABLE:
            return (str(cond.get("status")), str(cond.get("reason") or ""), str(cond.get("message") or ""))
    return ("", "", "")


def _body(obj: JSON) -> JSON:
    """An object without apiVersion/kind (``Kube.create`` adds the resource's own)."""
    return {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
