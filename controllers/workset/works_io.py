"""Reading and writing an MWRS's ManifestWorks: what flows between a pass and the API for works.

In: a ``DeployPlan``'s creates, patches and deletes (``execute``), an owner whose works a pass
reads (``owned``), confirms from the API (``confirm``) or whose lost creates it looks for
(``resolve_uncertain``). Out: a ``DeployOutcome`` (which cluster got what, which writes failed and
how: ``failure_kind``), and every answer recorded in the works cache (``Cache``: read your writes;
a delete request keeps the work counted, marked as deleting, ``DeletePolicy.MARK``).
"""

from __future__ import annotations

import asyncio
import logging

from ocm_rollout.api.constants import LABEL_MANIFESTWORK_REPLICASET, LABEL_PLACEMENT_NAME
from ocm_rollout.client.kube import JSON, MANIFEST_WORKS, Conflict, Forbidden, Invalid, KubeError, NotFound
from ocm_rollout.controllers.common.wire import name_of, namespace_of
from ocm_rollout.controllers.runtime import confirm as confirming
from ocm_rollout.controllers.runtime.cache import Cache
from ocm_rollout.controllers.runtime.shell import Runtime
from ocm_rollout.controllers.runtime.writer import ConcurrentWriter
from ocm_rollout.controllers.workset import aggregation
from ocm_rollout.controllers.workset.aggregation import DeployOutcome, WriteFailure
from ocm_rollout.controllers.workset.indexes import ByOwner
from ocm_rollout.controllers.workset.plan import DeployPlan, WorkDelete, WorkWrite
from ocm_rollout.controllers.workset.workbuild import Owner, belongs_to

log = logging.getLogger(__name__)


# Answers that refuse a work's content (resending it cannot help): 400 BadRequest (e.g. OCM's
# ManifestWork webhook denying manifests over its size limit) and 413 RequestEntityTooLarge; 422
# Invalid is the Invalid exception.
_CONTENT_REFUSED = (400, 413)


def failure_kind(exc: BaseException, create: bool) -> str:
    """The ``ManifestworkApplied`` reason class of a refused write."""
    if isinstance(exc, NotFound) and create:
        return aggregation.NAMESPACE_NOT_FOUND
    if isinstance(exc, Invalid) or (isinstance(exc, KubeError) and exc.status in _CONTENT_REFUSED):
        return aggregation.INVALID
    if isinstance(exc, Forbidden):
        return aggregation.FORBIDDEN
    return aggregation.OTHER


def error_text(exc: BaseException) -> str:
    if isinstance(exc, KubeError):
        return exc.message
    return " ".join(str(exc).split()) or type(exc).__name__


def _selector(owner: Owner) -> str:
    return f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value}"


def _key(work: JSON) -> tuple[str, str]:
    return namespace_of(work), name_of(work)


def _by_place(works: list[JSON]) -> list[JSON]:
    return sorted(works, key=_key)


class WorksIO:
    """The works of MWRS owners as the controller sees them, and its writes of them."""

    def __init__(self, runtime: Runtime, cache: Cache, index: ByOwner, writer: ConcurrentWriter, concurrency: int) -> None:
        self.runtime = runtime
        self.cache = cache
        self.index = index
        self.writer = writer
        self.concurrency = concurrency
        # (namespace, owner label, placement) whose create may have succeeded unseen.
        self.uncertain: set[tuple[str, str, str]] = set()

    # -- reading -------------------------------------------------------------------------------
    def owned(self, owner: Owner) -> list[JSON]:
        """Works marked with ``owner``, as stored plus this controller's own recent writes."""
        found = []
        for key, work in self.index.sorted_items(owner.label_value):
            shown = self.cache.shown_at(work, key)
            if shown is None:
                continue
            # The index holds ``work`` under the owner's label; another object must be checked.
            if shown is not work or owner.annotation is not None:
                if not belongs_to(shown, owner):
                    continue
            found.append(shown)
        return found

    async def caught_up(self, owner: Owner) -> bool:
        """Whether the cache holds every change of the works the API made up to now
        (``runtime.confirm.caught_up``, the owner's works' resourceVersion read from the API)."""

        async def list_version() -> str:
            return await self.runtime.list_version(MANIFEST_WORKS, label_selector=_selector(owner))

        return await confirming.caught_up(self.cache, list_version)

    async def confirm(self, owner: Owner, planned_from: list[JSON]) -> list[JSON] | None:
        """The owner's works as the API has them now, merged with what the pass planned from
        (the newer copy of each); None when that adds nothing the plan did not already know.
        The cache learns a listed work only if it shows nothing newer: its watch may have
        delivered a later version while the list was read.

        When the cache's watch reaches the works' resourceVersion read from the API now, the
        owner's works as the cache shows them are the answer (``runtime.confirm.caught_up``).
        Otherwise the API is asked for the works' metadata: when no version it lists is newer than
        the one planned from (the cache kept up), that is the answer, for a fraction of the bytes;
        otherwise the newer works are read (``runtime.confirm``: one by one when they are few) and
        merged."""
        selector = _selector(owner)
        merged: dict[tuple[str, str], JSON] = {_key(w): w for w in planned_from}
        if await self.caught_up(owner):
            # The cache and its index already hold these versions: nothing to teach them.
            if not confirming.merge_newer(self.owned(owner), merged, _key, lambda _work: None):
                return None
            return _by_place(list(merged.values()))
        listed = await self.runtime.list_objects(MANIFEST_WORKS, label_selector=selector, metadata_only=True)
        keys = confirming.newer_keys((w for w in listed if belongs_to(w, owner)), merged.get)

        async def read_one(namespace: str, name: str) -> list[JSON]:
            return await self.runtime.kube.list_objects(
                MANIFEST_WORKS, namespace, label_selector=selector, field_selector=f"metadata.name={name}"
            )

        async def read_all() -> list[JSON]:
            return await self.runtime.list_objects(MANIFEST_WORKS, label_selector=selector)

        stored = await confirming.read_newer(keys, len(listed), read_one, read_all)
        def accept(work: JSON) -> bool:
            return belongs_to(work, owner)

        if not confirming.merge_newer(stored, merged, _key, self.cache.learnt, accept):
            return None
        log.info("work cache lagged behind the API; planned again", extra={"owner": owner.label_value})
        return _by_place(list(merged.values()))

    async def resolve_uncertain(self, owner: Owner) -> None:
        """After a create whose answer was lost, list the namespace before planning again."""
        for entry in [entry for entry in self.uncertain if entry[1] == owner.label_value]:
            namespace, value, placement = entry
            selector = f"{LABEL_MANIFESTWORK_REPLICASET}={value},{LABEL_PLACEMENT_NAME}={placement}"
            try:
                found = await self.runtime.kube.list_objects(MANIFEST_WORKS, namespace, label_selector=selector)
            except Exception as exc:
                log.warning("cannot list works", extra={"namespace": namespace, "error": error_text(exc)})
                continue
            for work in found:
                self.cache.learnt(work)
            self.uncertain.discard(entry)

    # -- writing -------------------------------------------------------------------------------
    async def execute(self, plan: DeployPlan, owner: Owner) -> DeployOutcome:
        """Stale deletes first, then per placement its creates and patches (concurrently) and
        its deletes."""
        outcome = DeployOutcome()
        for delete in plan.stale_deletes:
            failure = await self.delete(delete, None)
            if failure is not None:
                outcome.stale_failures.append(failure)
        semaphore = asyncio.Semaphore(self.concurrency)

        async def bounded(write: WorkWrite) -> WriteFailure | None:
            # The write's coroutine is made once a slot is free: a pass cancelled while waiting
            # leaves no coroutine that was never awaited.
            async with semaphore:
                return await self.write(write, owner)

        for ref in plan.refs:
            ref_outcome = outcome.ref(ref.name)
            results = await asyncio.gather(*(bounded(w) for w in ref.writes))
            for write, failure in zip(ref.writes, results, strict=True):
                if failure is None:
                    ref_outcome.applied.add(write.cluster)
                elif failure.kind != "":
                    ref_outcome.failures.append(failure)
            for delete in ref.deletes:
                failure = await self.delete(delete, None)
                if failure is None:
                    ref_outcome.deleted.add(delete.namespace)
                else:
                    ref_outcome.failures.append(failure)
        return outcome

    async def write(self, write: WorkWrite, owner: Owner) -> WriteFailure | None:
        """Create or patch one work. None on success; a failure with kind "" for a race that
        the next pass resolves (the work changed or vanished under us)."""
        if write.existing is None:
            return await self._create(write, owner)
        assert write.patch is not None
        try:
            await self._patch(write)
        except (NotFound, Conflict):
            return WriteFailure(write.cluster, write.placement, "", "changed concurrently", verb="patch")
        except KubeError as exc:
            return WriteFailure(
                write.cluster, write.placement, failure_kind(exc, False), error_text(exc), verb="patch",
                retry_after=exc.retry_after,
            )
        except Exception as exc:
            return WriteFailure(write.cluster, write.placement, aggregation.OTHER, error_text(exc), verb="patch")
        return None

    async def _patch(self, write: WorkWrite) -> None:
        assert write.existing is not None and write.patch is not None
        updated = await self.writer.patch(MANIFEST_WORKS, name_of(write.existing), write.patch, write.cluster)
        self.cache.wrote(updated)

    async def _create(self, write: WorkWrite, owner: Owner) -> WriteFailure | None:
        try:
            await self.runtime.writes.create(self.cache, write.desired, write.cluster, via=self.writer)
        except Conflict:
            return None  # AlreadyExists: a work of that name is there; the watch brings it to us.
        except KubeError as exc:
            return WriteFailure(
                write.cluster, write.placement, failure_kind(exc, True), error_text(exc), retry_after=exc.retry_after
            )
        except Exception as exc:
            # The create may have happened; look before creating again.
            self.uncertain.add((write.cluster, owner.label_value, write.placement))
            return WriteFailure(write.cluster, write.placement, aggregation.OTHER, error_text(exc))
        return None

    async def delete(self, delete: WorkDelete, work: JSON | None) -> WriteFailure | None:
        """Delete one work; the cache shows it deleting until the watch does."""
        shown = work or self.cache.stored(delete.name, delete.namespace)
        target = shown or {"metadata": {"name": delete.name, "namespace": delete.namespace}}
        try:
            await self.runtime.writes.delete(self.cache, target, via=self.writer)
        except KubeError as exc:
            return WriteFailure(
                delete.namespace, delete.placement or "", failure_kind(exc, False), error_text(exc), verb="delete",
                retry_after=exc.retry_after,
            )
        except Exception as exc:
            return WriteFailure(delete.namespace, delete.placement or "", aggregation.OTHER, error_text(exc), verb="delete")
        return None
