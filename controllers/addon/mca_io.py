"""The add-on manager's writes and API reads, each recorded in the cache it reads.

In: the controller (its runtime, caches and writer) and what a step decided; out: the objects
as the API answered (None on a conflict, which the next watch event or a CONFLICT outcome
resolves). CMA writes go through the shared client, MCA writes through the writer pool;
every one is fenced with the resourceVersion as read (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ocm_rollout.client.kube import (
    CLUSTER_MANAGEMENT_ADDONS,
    JSON,
    MANAGED_CLUSTER_ADDONS,
    Conflict,
    KubeError,
)
from ocm_rollout.controllers.addon import install
from ocm_rollout.controllers.common.wire import name_of, namespace_of
from ocm_rollout.controllers.runtime import confirm as confirming
from ocm_rollout.controllers.runtime.events import WARNING

if TYPE_CHECKING:
    from ocm_rollout.controllers.addon.operator import AddonController

log = logging.getLogger(__name__)

EVENT_MCA_DELETED = "ManagedClusterAddOnDeleted"


def error_text(exc: BaseException) -> str:
    if isinstance(exc, KubeError):
        return exc.message
    return " ".join(str(exc).split()) or type(exc).__name__


async def patch_cma(ctl: AddonController, body: JSON, patch: JSON, *, subresource: str | None) -> JSON | None:
    """Patch the CMA with its resourceVersion as precondition; None on a conflict."""
    return await ctl.runtime.writes.patch_fenced(ctl.cma_cache, body, patch, subresource=subresource)


async def patch_mca(ctl: AddonController, mca: JSON, patch: JSON, *, subresource: str | None) -> JSON | None:
    """Patch one MCA with its resourceVersion as precondition; None on a conflict (the cache
    brings the newer object, which re-queues the pass)."""
    return await ctl.runtime.writes.patch_fenced(ctl.mca_cache, mca, patch, subresource=subresource, via=ctl.writer)


async def stored_cma(ctl: AddonController, name: str) -> JSON | None:
    """The CMA ``name`` as the API holds it now (None: there is none), not as the cache shows it
    (listed by name: the manager's role lists CMAs, it does not get them)."""
    for found in await ctl.runtime.list_objects(CLUSTER_MANAGEMENT_ADDONS, field_selector=f"metadata.name={name}"):
        if name_of(found) == name:
            return found
    return None


async def write_mca_statuses(ctl: AddonController, mcas: dict[str, JSON], statuses: dict[str, JSON]) -> tuple[set[str], bool]:
    """Write the planned MCA statuses at once; the clusters written and whether any write
    failed for another reason than a conflict (a cluster neither written nor failed met a
    conflict: the CMA pass looks again, its ``writes_conflicted``)."""
    semaphore = asyncio.Semaphore(ctl.write_concurrency)

    async def one(cluster: str, status: JSON) -> tuple[str, bool | None]:
        mca = mcas[cluster]
        try:
            async with semaphore:
                updated = await patch_mca(ctl, mca, {"status": status}, subresource="status")
        except Exception as exc:
            log.warning("cannot write MCA status", extra={"key": f"{cluster}/{name_of(mca)}", "error": error_text(exc)})
            return cluster, None
        return cluster, updated is not None

    results = await asyncio.gather(*(one(c, s) for c, s in sorted(statuses.items()) if c in mcas))
    return {cluster for cluster, ok in results if ok}, any(ok is None for _, ok in results)


async def create_mcas(ctl: AddonController, name: str, creates: list[install.McaCreate]) -> bool:
    """Create the MCAs the install strategy asks for; True if one failed (retry later)."""
    failed = False
    for create in creates:
        try:
            await ctl.runtime.writes.create(ctl.mca_cache, create.body, create.cluster, via=ctl.writer)
        except Conflict:
            continue  # AlreadyExists: the cache brings it
        except KubeError as exc:
            failed = True
            log.warning("cannot create MCA", extra={"key": f"{create.cluster}/{name}", "error": exc.message})
    return failed


async def delete_mcas(ctl: AddonController, body: JSON, deletes: list[install.McaDelete]) -> bool:
    """Delete the MCAs the install strategy no longer wants; True if one failed (retry later).
    The deletion of a hand-made (or adopted) MCA is told on the CMA."""
    name = name_of(body)
    failed = False
    for delete in deletes:
        target = {"metadata": {"name": name, "namespace": delete.cluster, "uid": delete.uid}}
        try:
            await ctl.runtime.writes.delete(ctl.mca_cache, target, via=ctl.writer, uid=delete.uid or None)
        except Conflict:
            continue
        except KubeError as exc:
            failed = True
            log.warning("cannot delete MCA", extra={"key": f"{delete.cluster}/{name}", "error": exc.message})
            continue
        if delete.user_created or delete.uid in ctl.adopted:
            ctl.adopted.discard(delete.uid)
            await ctl.tell_cma(
                body, EVENT_MCA_DELETED, f"deleted ManagedClusterAddOn {delete.cluster}/{name}: {delete.reason}", WARNING
            )
    return failed


async def confirm_mcas(ctl: AddonController, name: str, planned_from: dict[str, JSON]) -> dict[str, JSON] | None:
    """The MCAs of ``name`` as the API holds them, merged over the cache's (which may lag, e.g.
    right after a restart); None when the cache was up to date. The cache learns a listed MCA
    only if it shows nothing newer (the watch may have delivered a later version meanwhile).

    When the cache's watch reaches the MCAs' resourceVersion read from the API now, the MCAs as
    the cache shows them are the answer (``runtime.confirm.caught_up``). Otherwise the API is
    asked for the MCAs' metadata: when no version it lists is newer than the one planned from (the
    cache kept up), that is the answer, for a fraction of the bytes; otherwise the newer MCAs are
    read (``runtime.confirm``: one by one when they are few) and merged."""
    selector = f"metadata.name={name}"

    async def list_version() -> str:
        return await ctl.runtime.list_version(MANAGED_CLUSTER_ADDONS, field_selector=selector)

    if await confirming.caught_up(ctl.mca_cache, list_version):
        merged = dict(planned_from)
        # The cache and its index already hold these versions: nothing to teach them.
        if not confirming.merge_newer(ctl.mcas(name).values(), merged, namespace_of, lambda _mca: None):
            return None
        return dict(sorted(merged.items()))
    listed = await ctl.runtime.list_objects(MANAGED_CLUSTER_ADDONS, field_selector=selector, metadata_only=True)
    keys = confirming.newer_keys(listed, lambda key: planned_from.get(key[0]))

    async def read_one(namespace: str, _name: str) -> list[JSON]:
        return await ctl.runtime.kube.list_objects(MANAGED_CLUSTER_ADDONS, namespace, field_selector=selector)

    async def read_all() -> list[JSON]:
        return await ctl.runtime.list_objects(MANAGED_CLUSTER_ADDONS, field_selector=selector)

    stored = await confirming.read_newer(keys, len(listed), read_one, read_all)
    merged = dict(planned_from)
    if not confirming.merge_newer(stored, merged, namespace_of, ctl.mca_cache.learnt):
        return None
    log.info("MCA cache lagged behind the API; planned again", extra={"key": name})
    return dict(sorted(merged.items()))
