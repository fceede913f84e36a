"""A ManifestWorkReplicaSet pass's calls to a placementRef's rollout plugin besides validation
(OCM enhancement 231; ``verify.py`` asks ValidateRolloutCompletion):

- ``begin``: ``BeginRollout`` before a cluster gets the revision. A write that would put a cluster
  in flight (a new work, or a new spec) waits until the plugin answered OK for that cluster and
  revision: the pass starts the call in the background and leaves the write to a later pass (the
  cluster stays reserved, so in flight: nothing widens meanwhile). A failed call is shown in
  ``Progressing`` and tried again. An answer is remembered in memory only: a controller that
  stops between the answer and the write calls again (the enhancement asks plugins for
  idempotent calls); once the work is written nothing calls BeginRollout for it again.
- ``progress``: ``ProgressRollout`` on every pass of a placementRef with a plugin, with the
  clusters by rollout status; at most one call per placement at a time, its error shown in
  ``Progressing``.

No call is awaited by the pass: a slow or hung plugin delays only the clusters waiting on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final

from ocm_rollout.controllers.common.wire import meta
from ocm_rollout.controllers.rollout.plugin.client import PluginError
from ocm_rollout.controllers.rollout.plugin.requests import (
    ClusterEntry,
    RolloutContext,
    mutate_request,
    rollout_request,
)
from ocm_rollout.controllers.rollout.verification_pass import PlacementVerification
from ocm_rollout.controllers.workset import rollback
from ocm_rollout.controllers.workset.mutation import mutated_write
from ocm_rollout.controllers.workset.mutation_record import spec_hash
from ocm_rollout.controllers.workset.plan import DeployPlan, RefPlan, WorkWrite
from ocm_rollout.controllers.workset.revisions import revision_name
from ocm_rollout.controllers.workset.status_mapping import FAILED, SUCCEEDED, TIME_OUT

if TYPE_CHECKING:
    from ocm_rollout.controllers.workset.operator import WorksetController
    from ocm_rollout.controllers.workset.steps import Pass

#: BeginRollout answers remembered (cluster keys); the oldest are forgotten beyond this.
MAX_BEGUN: Final = 100_000


def plugins_of(spec: Mapping[str, object]) -> dict[str, str]:
    """placementRef name -> the plugin its strategy names."""
    out = {}
    for ref in spec.get("placementRefs") or []:  # type: ignore[attr-defined]
        strategy = ref.get("rolloutStrategy") if isinstance(ref, Mapping) else None
        if isinstance(strategy, Mapping) and strategy.get("plugin"):
            out[str(ref.get("name") or "")] = str(strategy["plugin"])
    return out


def context(p: Pass, ref: RefPlan, revision: str) -> RolloutContext:
    """The rollout status of one placement, as the plugin's requests carry it."""
    timed_out = {e.cluster_name for e in ref.rollout.clusters_timeout} if ref.rollout is not None else set()
    removed = [e.cluster_name for e in ref.rollout.clusters_removed] if ref.rollout is not None else []
    completed, progressing, late = [], [], []
    for cluster, status in sorted(ref.statuses.items()):
        entry = ClusterEntry(cluster, status.shown, revision)
        if cluster in timed_out:
            late.append(dataclasses.replace(entry, rollout_status=TIME_OUT))
        elif status.status in (SUCCEEDED, FAILED):
            completed.append(entry)
        else:
            progressing.append(entry)
    return RolloutContext(
        mwrs_name=p.name, mwrs_namespace=p.namespace, placement_name=ref.name, total_cluster_count=ref.selected,
        completed=completed, progressing=progressing, timed_out=late,
        removed=[ClusterEntry(c, "Removed", revision) for c in removed],
    )


def _found(p: Pass, placement: str, plugin: str) -> PlacementVerification:
    return p.verification.of(placement, plugin)


def begin(ctl: WorksetController, p: Pass, plan: DeployPlan) -> DeployPlan:
    """``plan`` with each widening write of a placementRef with a plugin either gone (its
    cluster's BeginRollout or MutateManifestWork has not answered OK yet: the calls run in the
    background) or carrying the plugin's mutation of its ManifestWork."""
    plugins = plugins_of(p.spec)
    if not plugins:
        return plan
    uid = str(meta(p.body).get("uid") or "")
    decision = p.planned()[1].decision
    digest = decision.current if decision.mode == rollback.REVERTING and decision.current else decision.update.hash
    revision = revision_name(p.name, digest)
    refs = []
    for ref in plan.refs:
        plugin = plugins.get(ref.name)
        if plugin is None:
            refs.append(ref)
            continue
        found = _found(p, ref.name, plugin)
        usable = ctl.verifier.plugins.client(plugin) is not None and (
            found.plugin_loaded is None or found.plugin_loaded.reason == "Available"
        )
        kept = []
        for write in ref.writes:
            if not write.widens:
                kept.append(write)
                continue
            ready = _prepared(ctl, p, found, ref, write, (uid, revision, ref.name, write.cluster), revision, usable)
            if ready is not None:
                kept.append(ready)
        refs.append(dataclasses.replace(ref, writes=kept))
    return dataclasses.replace(plan, refs=refs)


def _prepared(
    ctl: WorksetController, p: Pass, found: PlacementVerification, ref: RefPlan, write: WorkWrite,
    where: tuple[str, ...], revision: str, usable: bool,
) -> WorkWrite | None:
    """``write`` once the plugin began the cluster's rollout and mutated its ManifestWork; None
    while a call is due or running (started here when the plugin is usable)."""
    verifier = ctl.verifier
    client = verifier.plugins.client(found.plugin)
    begun = (p.key, "begin", *where)
    if begun not in verifier.begun:
        ok, error = verifier.last_error(begun)
        if ok:
            verifier.remember_begun(begun, MAX_BEGUN)
        else:
            if error:
                found.plugin_errors.append(f"{write.cluster}: BeginRollout: {error}")
            if usable and client is not None:
                request = rollout_request(context(p, ref, revision), write.cluster)
                _ask(ctl, p, begun, lambda: client.begin_rollout(request))
            return None
    template = write.desired.get("spec") or {}
    mutate = (p.key, "mutate", *where, spec_hash(template))
    done = verifier.calls.take(mutate)
    if done is not None and done.ok and isinstance(done.value, Mapping):
        verifier.plugin_errors.pop(mutate, None)
        return mutated_write(write, done.value, template)
    if done is not None:
        verifier.plugin_errors[mutate] = str(done.error)
    if mutate in verifier.plugin_errors:
        found.plugin_errors.append(f"{write.cluster}: MutateManifestWork: {verifier.plugin_errors[mutate]}")
    if usable and client is not None:
        request = mutate_request(context(p, ref, revision), write.cluster)
        _ask(ctl, p, mutate, lambda: client.mutate_manifest_work(request, write.desired))
    return None


def _ask(ctl: WorksetController, p: Pass, key: tuple[str, ...], call: Callable[[], Awaitable[object]]) -> None:
    """Start ``call`` in the background under ``key`` (at most every PLUGIN_POLL); a plugin's
    error becomes the call's error text."""
    verifier = ctl.verifier
    if verifier.calls.running(key):
        return
    if not verifier.may_ask(key, p.now):
        p.verification.due_at(verifier.next_ask(key))
        return

    async def run() -> object:
        try:
            return await call()
        except PluginError as exc:
            raise RuntimeError(str(exc)) from None

    verifier.calls.start(key, p.key, run)


def progress(ctl: WorksetController, p: Pass) -> None:
    """Start a ProgressRollout for every placementRef with a plugin (unless one runs)."""
    plugins = plugins_of(p.spec)
    if not plugins:
        return
    verifier = ctl.verifier
    _inputs, plans = p.planned()
    revision = revision_name(p.name, plans.decision.update.hash)
    for ref in plans.plan_u.refs:
        plugin = plugins.get(ref.name)
        if plugin is None or ref.error is not None:
            continue
        found = _found(p, ref.name, plugin)
        key = (p.key, "progress", ref.name)
        done = verifier.calls.take(key)
        if done is not None:
            if done.ok:
                verifier.plugin_errors.pop(key, None)
            else:
                verifier.plugin_errors[key] = str(done.error)
        if key in verifier.plugin_errors:
            found.plugin_errors.append(f"ProgressRollout: {verifier.plugin_errors[key]}")
        client = verifier.plugins.client(plugin)
        if client is None or verifier.calls.running(key):
            continue
        if found.plugin_loaded is not None and found.plugin_loaded.reason != "Available":
            continue
        request = rollout_request(context(p, ref, revision))

        async def call(request: object = request, client: object = client) -> None:
            try:
                await client.progress_rollout(request)  # type: ignore[attr-defined]
            except PluginError as exc:
                raise RuntimeError(str(exc)) from None

        # Its answer queues no pass: the next pass (whatever brings it) takes it.
        verifier.calls.start(key, p.key, call, requeue=False)
