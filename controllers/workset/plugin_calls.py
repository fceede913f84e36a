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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ocm_rollout.controllers.common.wire import meta
from ocm_rollout.controllers.rollout.plugin.client import PluginError
from ocm_rollout.controllers.rollout.plugin.requests import ClusterEntry, RolloutContext, rollout_request
from ocm_rollout.controllers.rollout.verification_pass import PlacementVerification
from ocm_rollout.controllers.workset.plan import DeployPlan, RefPlan
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
    """``plan`` without the widening writes whose cluster's BeginRollout has not answered OK."""
    plugins = plugins_of(p.spec)
    if not plugins:
        return plan
    verifier = ctl.verifier
    uid = str(meta(p.body).get("uid") or "")
    revision = revision_name(p.name, p.planned()[1].decision.update.hash)
    refs = []
    for ref in plan.refs:
        plugin = plugins.get(ref.name)
        client = verifier.plugins.client(plugin) if plugin else None
        if plugin is None:
            refs.append(ref)
            continue
        found = _found(p, ref.name, plugin)
        kept = []
        for write in ref.writes:
            if not write.widens:
                kept.append(write)
                continue
            key = (p.key, "begin", uid, revision, ref.name, write.cluster)
            if key in verifier.begun:
                kept.append(write)
                continue
            done = verifier.calls.take(key)
            if done is not None and done.ok:
                verifier.remember_begun(key, MAX_BEGUN)
                kept.append(write)
                continue
            if done is not None:
                verifier.plugin_errors[key] = str(done.error)
            if key in verifier.plugin_errors:
                found.plugin_errors.append(f"{write.cluster}: BeginRollout: {verifier.plugin_errors[key]}")
            if client is None or (found.plugin_loaded is not None and found.plugin_loaded.reason != "Available"):
                continue  # not registered or not loaded: PluginLoaded says why
            if not verifier.may_ask(key, p.now):
                p.verification.due_at(verifier.next_ask(key))
                continue
            request = rollout_request(context(p, ref, revision), write.cluster)

            async def call(request: object = request, client: object = client) -> None:
                try:
                    await client.begin_rollout(request)  # type: ignore[attr-defined]
                except PluginError as exc:
                    raise RuntimeError(str(exc)) from None

            verifier.calls.start(key, p.key, call)
        refs.append(dataclasses.replace(ref, writes=kept))
    return dataclasses.replace(plan, refs=refs)


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
