"""Reading and writing an MWRS's template revisions (ControllerRevisions, OCM enhancement 229).

In: the ``HistoryStep`` a pass resolved (a revision to create or to renumber), the history limit
and the revisions a pass must keep. Out: the revisions as stored plus this controller's own writes
(``owned``; those whose deletion was requested are left out, ``DeletePolicy.HIDE``), whether the
pass may go on (``record``), the names found taken by objects that are not this template's revision
(``taken``: the next pass hashes again), and the RevisionCreated events.
"""

from __future__ import annotations

import logging
from datetime import datetime

from ocm_rollout.api.constants import (
    EVENT_REVISION_CREATED,
    LABEL_CONTROLLER_HASH,
    LABEL_MANIFESTWORK_REPLICASET,
)
from ocm_rollout.client.kube import CONTROLLER_REVISIONS, JSON, MANIFEST_WORK_REPLICA_SETS, Conflict, NotFound
from ocm_rollout.controllers.common.wire import is_deleting, meta, name_of, namespace_of
from ocm_rollout.controllers.runtime.cache import Cache
from ocm_rollout.controllers.runtime.events import EventRecorder
from ocm_rollout.controllers.runtime.shell import Runtime
from ocm_rollout.controllers.workset import history
from ocm_rollout.controllers.workset.history import HistoryStep
from ocm_rollout.controllers.workset.indexes import ByOwner
from ocm_rollout.controllers.workset.revisions import owned_by, template_of
from ocm_rollout.controllers.workset.template import spec_equals_template
from ocm_rollout.controllers.workset.workbuild import Owner

log = logging.getLogger(__name__)


class RevisionsIO:
    """The template revisions of MWRSs as the controller sees them, and its writes of them."""

    def __init__(self, runtime: Runtime, cache: Cache, index: ByOwner, recorder: EventRecorder) -> None:
        self.runtime = runtime
        self.cache = cache
        self.index = index
        self.recorder = recorder
        # MWRS key -> revision names taken by objects that are not its revisions (AlreadyExists).
        self.taken: dict[str, set[str]] = {}

    def owned(self, body: JSON, owner: Owner) -> list[JSON]:
        """The MWRS's revisions (controlled by it), as stored plus this controller's own writes."""
        uid = str(meta(body).get("uid") or "")
        namespace = namespace_of(body)
        found = []
        for rev in self.index.of(owner.label_value):
            shown = self.cache.shown(rev)
            if shown is not None and namespace_of(shown) == namespace and owned_by(shown, uid) and not is_deleting(shown):
                found.append(shown)
        return found

    async def _tell(self, body: JSON, message: str, now: datetime) -> None:
        await self.recorder.record(
            body, kind=MANIFEST_WORK_REPLICA_SETS, reason=EVENT_REVISION_CREATED, message=message, now=now
        )

    async def record(self, key: str, body: JSON, owner: Owner, step: HistoryStep, now: datetime) -> bool:
        """Create or renumber the update revision; False when the pass must start again (a
        conflict, or a name taken by an object that is not this template's revision)."""
        namespace = namespace_of(body)
        update = step.update
        if step.create is not None:
            try:
                await self.runtime.writes.create(self.cache, step.create, namespace)
            except Conflict:
                return await self._adopt(key, body, owner, step)
            self.taken.pop(key, None)
            await self._tell(body, f"revision {update.number} ({update.name}) records the new template", now)
        elif step.renumber is not None:
            try:
                await self.runtime.writes.replace(self.cache, step.renumber)
            except (Conflict, NotFound):
                return False
            await self._tell(
                body, f"the template of an earlier revision came back: {update.name} is revision {update.number} now", now
            )
        return True

    async def _adopt(self, key: str, body: JSON, owner: Owner, step: HistoryStep) -> bool:
        """A revision of the wanted name exists though the cache does not show it: adopt it when
        it is this MWRS's revision of this template (the cache lags), else remember the name as
        taken (the next pass raises collisionCount)."""
        update = step.update
        selector = f"{LABEL_MANIFESTWORK_REPLICASET}={owner.label_value},{LABEL_CONTROLLER_HASH}={update.hash}"
        found = await self.runtime.kube.list_objects(CONTROLLER_REVISIONS, namespace_of(body), label_selector=selector)
        for rev in found:
            held = template_of(rev)
            if (
                name_of(rev) == update.name
                and owned_by(rev, str(meta(body).get("uid") or ""))
                and held is not None
                and spec_equals_template(held, update.template)
            ):
                self.cache.learnt(rev)
                return False  # plan again with it
        self.taken.setdefault(key, set()).add(update.name)
        log.info("revision name taken: hashing again", extra={"key": key, "revision": update.name})
        return False

    async def prune(self, body: JSON, owner: Owner, limit: int, keep: set[str | None]) -> None:
        """Delete the revisions beyond the history limit (never one of ``keep``), each only in
        the version read (a revision renumbered meanwhile is decided again by the next pass)."""
        for rev in history.prune(self.owned(body, owner), limit=limit, keep=keep, mwrs_name=name_of(body)):
            preconditions = {"uid": meta(rev).get("uid"), "resourceVersion": meta(rev).get("resourceVersion")}
            try:
                await self.runtime.kube.delete(
                    CONTROLLER_REVISIONS, name_of(rev), namespace_of(rev), preconditions=preconditions
                )
            except Conflict:
                continue
            self.cache.delete_requested(dict(rev))
