"""The steps of one ManagedClusterAddOn pass (``MCA_PASS``), and the cluster pass.

What flows through an MCA pass is an ``McaPass``: the MCA as read (then as written), its CMA,
and the status being built. In order: adopt (the owner reference to a lifecycle-managed CMA,
docs/behaviour/addons.md 4.4) → report a namespace without a ManagedCluster → the hashes of the
MCA's own ``spec.configs`` (5.3) → ``Progressing`` from the add-on's ManifestWorks (9) → one
fenced status write. A step returns an ``Outcome`` to end the pass, or None to go on.

The cluster pass copies a ManagedCluster's ``addon.open-cluster-management.io*`` annotations onto
the MCAs of Placements-installed add-ons (4.5).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocm_rollout.api.constants import ANNOTATION_HOSTING_CLUSTER_NAME
from ocm_rollout.client.kube import JSON, MANAGED_CLUSTER_ADDONS
from ocm_rollout.controllers.addon import install, mca_io, progressing
from ocm_rollout.controllers.common.wire import annotations_of, is_deleting, meta, name_of, namespace_of
from ocm_rollout.controllers.runtime.events import WARNING
from ocm_rollout.controllers.runtime.outcome import CONFLICT, DONE, Outcome

if TYPE_CHECKING:
    from ocm_rollout.controllers.addon.operator import AddonController

log = logging.getLogger(__name__)

EVENT_CLUSTER_NOT_FOUND = "ManagedClusterNotFound"


@dataclass
class McaPass:
    """One pass over one MCA; see the module docstring."""

    key: str
    cluster: str
    mca: JSON
    cma: JSON
    managed: bool = True
    status: JSON = field(default_factory=dict)


Step = Callable[["AddonController", McaPass], Awaitable[Outcome | None]]


async def adopt(ctl: AddonController, p: McaPass) -> Outcome | None:
    """A lifecycle-managed CMA owns its MCAs; a hand-made one adopted here is remembered, so
    that its deletion is still told as that of a hand-made add-on.

    The owner is confirmed from the API first: a CMA deleted and created again under the same
    name may still be the one kopf's cache shows when the new MCA arrives through the faster MCA
    watch, and a controller reference to the deleted CMA's uid has the garbage collector delete
    the MCA. Until the cache shows the stored CMA, the MCA is looked at again (its CMA's next event
    re-queues it too). A CMA being deleted adopts nothing."""
    if not p.managed:
        return None
    owners = install.owner_references_update(p.mca, p.cma)
    if owners is None:
        return None
    if is_deleting(p.cma):
        return None  # a CMA being deleted adopts nothing
    stored = await mca_io.stored_cma(ctl, name_of(p.cma))
    if stored is None or meta(stored).get("uid") != meta(p.cma).get("uid"):
        log.info("the cached ClusterManagementAddOn is not the stored one: not adopting yet", extra={"key": p.key})
        return CONFLICT
    if is_deleting(stored):
        return None
    updated = await mca_io.patch_mca(ctl, p.mca, {"metadata": {"ownerReferences": owners}}, subresource=None)
    if updated is None:
        return CONFLICT
    if not any(ref.get("controller") for ref in meta(p.mca).get("ownerReferences") or []):
        ctl.adopted.add(str(meta(p.mca).get("uid") or ""))
    p.mca = updated
    return None


async def report_missing_cluster(ctl: AddonController, p: McaPass) -> Outcome | None:
    if ctl.cluster_cache.get(p.cluster) is not None:
        return None
    message = f"namespace {p.cluster!r} belongs to no ManagedCluster: this add-on has no cluster to run on"
    if ctl.told.once(p.key, "cluster", message):
        await ctl.recorder.record(
            p.mca, reason=EVENT_CLUSTER_NOT_FOUND, message=message, now=ctl.runtime.clock(),
            event_type=WARNING, kind=MANAGED_CLUSTER_ADDONS,
        )
    return None


async def config_hashes(ctl: AddonController, p: McaPass) -> Outcome | None:
    p.status = dict(p.mca.get("status") or {})
    refs = progressing.mca_config_hash_update(p.mca, ctl.configs.get, ctl.configs.served)
    if refs is not None:
        p.status["configReferences"] = refs
    return None


def works_of(ctl: AddonController, key: str, mca: JSON) -> tuple[list[JSON], list[JSON]]:
    """The add-on's works in the MCA's namespace, and (hosted mode) in its hosting cluster's."""
    hosting = annotations_of(mca).get(ANNOTATION_HOSTING_CLUSTER_NAME) or ""
    own: list[JSON] = []
    hosted: list[JSON] = []
    for (namespace, _name), work in ctl.indexes.works_of(key):
        if namespace == namespace_of(mca):
            own.append(work)
        elif hosting and namespace == hosting:
            hosted.append(work)
    return own, hosted


async def progressing_condition(ctl: AddonController, p: McaPass) -> Outcome | None:
    if not p.managed:
        return None
    works, hosted = works_of(ctl, p.key, p.mca)
    update = progressing.progressing_update({**p.mca, "status": p.status}, works, ctl.runtime.clock(), hosted_works=hosted)
    if update is not None:
        p.status = update
    return None


async def write_status(ctl: AddonController, p: McaPass) -> Outcome | None:
    if p.status == (p.mca.get("status") or {}):
        return DONE
    if await mca_io.patch_mca(ctl, p.mca, {"status": p.status}, subresource="status") is None:
        return CONFLICT
    return DONE


MCA_PASS: tuple[Step, ...] = (adopt, report_missing_cluster, config_hashes, progressing_condition, write_status)


async def sync_cluster_annotations(ctl: AddonController, cluster: str) -> Outcome:
    """The cluster pass (docs/behaviour/addons.md 4.5)."""
    obj = ctl.cluster_cache.get(cluster)
    if obj is None:
        return DONE
    conflict = False
    for name in list(ctl.indexes.mcas_by_name):
        mca = ctl.mca_cache.get(name, cluster)
        cma = ctl.cma_cache.get(name)
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
        if await mca_io.patch_mca(ctl, mca, {"metadata": {"annotations": patch}}, subresource=None) is None:
            conflict = True
    return CONFLICT if conflict else DONE
