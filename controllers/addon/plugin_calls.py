"""A ClusterManagementAddOn (CMA) pass's calls to a placement's rollout plugin besides validation
(OCM enhancement 231; ``verify.py`` asks ValidateRolloutCompletion):

- ``begin``: ``BeginRollout`` before an add-on is given the placement's new desired
  configurations. The MCA status write that would put it in flight waits until the plugin
  answered OK for that cluster and revision (of the desired configurations): the pass starts the
  call in the background and leaves the write to a later pass. The cluster is reserved on the CMA
  already, so it stays in flight: nothing widens meanwhile. A failed call is shown in the
  placement's ``installProgressions`` condition and tried again. An answer is remembered in memory
  only; once the MCA shows the configurations nothing calls BeginRollout for it again. Returning
  add-ons to the last known good configurations (an abort) waits for no plugin.
- ``progress``: ``ProgressRollout`` on every pass of a placement with a plugin, with the clusters
  by rollout status; at most one call per placement at a time, its error shown in the condition.

The requests carry the CMA's name in ``mwrs_name`` and the placement's namespace in
``mwrs_namespace``. No call is awaited by the pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ocm_rollout.api.constants import ROLLOUT_STATUS_VALIDATING
from ocm_rollout.controllers.addon.configrollout import FAILED, SUCCEEDED, TIME_OUT, TO_APPLY, NodeReport
from ocm_rollout.controllers.addon.configs import placement_ref, placement_strategies
from ocm_rollout.controllers.common.wire import as_mapping, as_str, meta
from ocm_rollout.controllers.rollout.plugin.client import PluginClient, PluginError
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE
from ocm_rollout.controllers.rollout.plugin.requests import ClusterEntry, RolloutContext, rollout_request
from ocm_rollout.controllers.rollout.verification_pass import PlacementVerification

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from ocm_rollout.controllers.addon.cma_steps import CmaPass
    from ocm_rollout.controllers.addon.operator import AddonController

#: BeginRollout answers remembered (cluster keys); the oldest are forgotten beyond this.
MAX_BEGUN: Final = 100_000


def plugins_of(cma: Mapping[str, object]) -> dict[str, str]:
    """Placement ``<namespace>/<name>`` -> the plugin its rollout strategy names."""
    out: dict[str, str] = {}
    for item in placement_strategies(cma):
        plugin = as_str(as_mapping(item.get("rolloutStrategy")).get("plugin"))
        if plugin:
            namespace, name = placement_ref(item)
            out.setdefault(f"{namespace}/{name}", plugin)
    return out


def context(cma_name: str, node: NodeReport) -> RolloutContext:
    """The rollout status of one placement, as the plugin's requests carry it (add-ons not given
    the configurations yet are in no list)."""
    completed, progressing, late = [], [], []
    for cluster, status in sorted(node.statuses.items()):
        if status == TO_APPLY:
            continue
        shown = ROLLOUT_STATUS_VALIDATING if cluster in node.validating else str(status)
        entry = ClusterEntry(cluster, shown, node.revision)
        if status == TIME_OUT:
            late.append(entry)
        elif status in (SUCCEEDED, FAILED):
            completed.append(entry)
        else:
            progressing.append(entry)
    return RolloutContext(
        mwrs_name=cma_name, mwrs_namespace=node.namespace, placement_name=node.name,
        total_cluster_count=node.total, completed=completed, progressing=progressing, timed_out=late,
    )


def _usable(ctl: AddonController, found: PlacementVerification, plugin: str) -> PluginClient | None:
    """The plugin's client, unless it is not registered or not loaded (PluginLoaded says why)."""
    client = ctl.verifier.plugins.client(plugin)
    if client is None or (found.plugin_loaded is not None and found.plugin_loaded.reason != REASON_AVAILABLE):
        return None
    return client


def plugin_call(
    client: PluginClient, rpc: str, request: Message, answer: Callable[[Any], Any] | None = None
) -> Callable[[], Awaitable[Any]]:
    """The background call of the client's ``rpc`` with ``request``: what ``answer`` makes of its
    answer (None without it); a plugin's error as a plain one (its text is shown)."""

    async def call() -> Any:
        try:
            got = await getattr(client, rpc)(request)
        except PluginError as exc:
            raise RuntimeError(str(exc)) from None
        return None if answer is None else answer(got)

    return call


def begin(ctl: AddonController, p: CmaPass) -> None:
    """Drop from the plan the MCA writes that put an add-on in flight before its BeginRollout
    answered OK, starting the calls due."""
    plugins = plugins_of(p.body)
    if not plugins:
        return
    verifier = ctl.verifier
    uid = str(meta(p.body).get("uid") or "")
    plan = p.planned
    for node in plan.nodes:
        plugin = plugins.get(node.key)
        if plugin is None:
            continue
        found = p.verification.of(node.key, plugin)
        client = _usable(ctl, found, plugin)
        for cluster in sorted(node.widening):
            key = (p.name, "begin", uid, node.revision, node.key, cluster)
            if key in verifier.begun:
                continue
            ok, error = verifier.last_error(key)
            if ok:
                verifier.remember_begun(key, MAX_BEGUN)
                continue
            plan.mca_status.pop(cluster, None)
            if error:
                found.plugin_errors.append(f"{cluster}: BeginRollout: {error}")
            if client is None or verifier.calls.running(key):
                continue
            if not verifier.may_ask(key, p.now):
                p.verification.due_at(verifier.next_ask(key))
                continue
            verifier.calls.start(key, p.name, plugin_call(client, "begin_rollout", rollout_request(context(p.name, node), cluster)))


def progress(ctl: AddonController, p: CmaPass) -> None:
    """Start a ProgressRollout for every placement with a plugin (unless one runs)."""
    plugins = plugins_of(p.body)
    if not plugins:
        return
    calls = ctl.verifier.calls
    rolling = [(node, plugins[node.key]) for node in p.planned.nodes if node.key in plugins and node.error is None]
    for node, plugin in rolling:
        found, key = p.verification.of(node.key, plugin), (p.name, "progress", node.key)
        _ok, error = ctl.verifier.last_error(key)
        if error:
            found.plugin_errors.append(f"ProgressRollout: {error}")
        client = _usable(ctl, found, plugin)
        if client is not None and not calls.running(key):
            request = rollout_request(context(p.name, node))
            # Its answer queues no pass: the next pass (whatever brings it) takes it.
            calls.start(key, p.name, plugin_call(client, "progress_rollout", request), requeue=False)
