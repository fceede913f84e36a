"""The ``verify`` step of a ClusterManagementAddOn (CMA) pass: validate the ManagedClusterAddOns
(MCAs) that applied their desired configurations, for the install-strategy placements whose
rollout strategy has checks or a plugin (docs/behaviour/validation.md).

For each such MCA (Succeeded by its conditions against the configurations its placement gives it)
the step

- takes the results of the calls that ended since the last pass (metric measurements, the
  plugin's ValidateRolloutCompletion answer) and adds them to the MCA's record;
- judges the MCA (``controllers.rollout.verification.judge``: the feedback checks over the MCA's
  conditions and its agent's works ``addon-<name>-deploy-<n>``, the metric checks on their
  measurements, the plugin's answer);
- starts the calls now due, in the background (a slow Prometheus or a hung plugin never holds the
  pass);
- writes the record on the MCA (annotation ``rollout.ocm-rollout.io/validation``) when it
  changed, fenced on the MCA's resourceVersion, so that an overlapping instance never loses or
  doubles a measurement and a restarted one finds every result.

The configuration rollout that follows reads the verdicts from the MCAs (``verified``). A
Validating MCA is in flight for the planner whatever happens here: a step that fails, a lost
write or a cache that lags only keep it Validating longer.

The plugin's requests carry the CMA's name in ``mwrs_name`` and the placement's namespace in
``mwrs_namespace``; a metric query's ``{{name}}`` is the add-on's name and ``{{namespace}}`` its
install namespace.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ocm_rollout.api.constants import ADDON_DEFAULT_INSTALL_NAMESPACE
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.addon.configrollout import SUCCEEDED, addon_rollout_status
from ocm_rollout.controllers.addon.configs import AddonEntry, PlacementNode, build_graph, placement_strategies
from ocm_rollout.controllers.addon.mca_steps import works_of
from ocm_rollout.controllers.addon.plugin_calls import plugin_call
from ocm_rollout.controllers.addon.verified import mca_record, started
from ocm_rollout.controllers.common.wire import as_str, mapping_at, meta, name_of, namespace_of
from ocm_rollout.controllers.rollout.checks import CompiledChecks, InvalidChecks
from ocm_rollout.controllers.rollout.checks.feedback import FeedbackVerdict, addon_variables
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE
from ocm_rollout.controllers.rollout.plugin.requests import RolloutContext, validate_request
from ocm_rollout.controllers.rollout.verification import (
    ANNOTATION_VALIDATION,
    FAILED,
    PluginAnswer,
    ValidationRecord,
    decided,
    judge,
    recorded_results,
    strategy_verifies,
)
from ocm_rollout.controllers.rollout.verification_pass import PlacementVerification, ValidationFailure
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.verifier import PLUGIN_POLL, PLUGIN_RELOAD

if TYPE_CHECKING:
    from ocm_rollout.controllers.addon.cma_steps import CmaPass
    from ocm_rollout.controllers.addon.operator import AddonController

log = logging.getLogger(__name__)

KIND = "ClusterManagementAddOn"
#: The add-on agent's works in the cluster's namespace (the feedback of its checks).
DEPLOY_WORK_PREFIX: Final = "addon-{}-deploy-"


def verifies(cma: Mapping[str, Any]) -> bool:
    """Whether some placement of the install strategy verifies its rollout (checks or a plugin)."""
    return any(strategy_verifies(item.get("rolloutStrategy")) for item in placement_strategies(cma))


def install_namespace(mca: Mapping[str, Any]) -> str:
    """Where the add-on's agent runs: the namespace its status reports, else the one its spec asks
    for, else the default."""
    return (
        as_str(mapping_at(mca, "status").get("namespace"))
        or as_str(mapping_at(mca, "spec").get("installNamespace"))
        or ADDON_DEFAULT_INSTALL_NAMESPACE
    )


def agent_works(ctl: AddonController, cluster: str, mca: JSON) -> list[JSON]:
    prefix = DEPLOY_WORK_PREFIX.format(name_of(mca))
    own, _hosted = works_of(ctl, f"{cluster}/{name_of(mca)}", mca)
    return [w for w in own if name_of(w).startswith(prefix)]


@dataclasses.dataclass(frozen=True)
class _Placement:
    """What every MCA of one verifying placement is judged with."""

    node: PlacementNode
    found: PlacementVerification
    compiled: CompiledChecks | None
    plugin: str
    blocked: str


def _placement(ctl: AddonController, p: CmaPass, node: PlacementNode) -> _Placement:
    """The placement's compiled checks and plugin, and why its MCAs cannot pass now ("" when
    they can): checks that do not compile or name an unregistered provider, a plugin not loaded."""
    strategy: Mapping[str, Any] = node.strategy
    found = p.verification.of(node.key)
    checks = ctl.verifier.compiled(strategy)
    compiled = checks if isinstance(checks, CompiledChecks) else None
    blocked = ""
    if isinstance(checks, InvalidChecks):
        found.invalid_checks, blocked = str(checks), f"the checks do not compile: {checks}"
    elif compiled is not None:
        unknown = ctl.runtime.context.metric_providers.unregistered((m.name, m.provider_name) for m in compiled.metrics)
        found.invalid_checks = blocked = "; ".join(unknown)
    if blocked:
        compiled = None
    plugin = as_str(strategy.get("plugin"))
    if plugin:
        found.plugin = plugin
        found.plugin_loaded = loaded = ctl.verifier.plugin_loaded(plugin, p.name, p.now)
        if loaded is None:
            blocked = blocked or f"plugin {plugin} is loading (Initialize)"
        elif loaded.reason != REASON_AVAILABLE:
            blocked = blocked or f"plugin {plugin} is not loaded: {loaded.message}"
            p.verification.due_at(p.now + PLUGIN_RELOAD)
    return _Placement(node, found, compiled, plugin, blocked)


async def verify(ctl: AddonController, p: CmaPass) -> None:
    """Run the step for every verifying placement of the CMA (see the module docstring)."""
    if not p.managed or not verifies(p.body):
        return
    graph = build_graph({**p.body, "status": p.status}, ctl.mcas(p.name), p.placements)
    for node in graph.nodes:
        if not strategy_verifies(node.strategy):
            continue
        placement = _placement(ctl, p, node)
        for cluster in sorted(node.children):
            await _verify_mca(ctl, p, placement, node.children[cluster])


def _measure_key(owner: str, mca: JSON, record: ValidationRecord, check: str) -> tuple[str, ...]:
    count = len(record.measurements.get(check, ()))
    return (owner, "measure", str(meta(mca).get("uid") or ""), record.revision, record.since, check, str(count))


def _plugin_key(owner: str, mca: JSON, record: ValidationRecord) -> tuple[str, ...]:
    return (owner, "validate", str(meta(mca).get("uid") or ""), record.revision, record.since)


def _take_results(
    ctl: AddonController, p: CmaPass, at: _Placement, mca: JSON, record: ValidationRecord
) -> tuple[ValidationRecord, str]:
    """``record`` with the measurements and the plugin answer that came since the last pass, and
    the error of the plugin's last call ("" when none)."""
    calls = ctl.verifier.calls
    for check in at.compiled.metrics if at.compiled is not None else ():
        done = calls.take(_measure_key(p.name, mca, record, check.name))
        if done is None:
            continue
        measurement = done.value if isinstance(done.value, Measurement) else Measurement(
            Phase.ERROR, p.now, p.now, "", f"measurement failed: {done.error}"
        )
        record = record.with_measurement(check.name, measurement)
    if not at.plugin:
        return record, ""
    key = _plugin_key(p.name, mca, record)
    errors = ctl.verifier.plugin_errors
    done = calls.take(key)
    if done is not None and done.ok and isinstance(done.value, PluginAnswer):
        errors.pop(key, None)
        if done.value.result != "INPROGRESS":
            record = dataclasses.replace(record, plugin=done.value)
    elif done is not None:
        errors[key] = str(done.error)
    return record, errors.get(key, "")


async def _verify_mca(ctl: AddonController, p: CmaPass, at: _Placement, entry: AddonEntry) -> None:
    mca, cluster = dict(entry.mca), entry.cluster
    status, ltt = addon_rollout_status(mca, entry.desired)
    if status is not SUCCEEDED:
        return
    stored = mca_record(mca, entry.desired, ltt)
    if stored.verdict is not None:
        return
    record, since = started(stored, p.now)
    record, plugin_error = _take_results(ctl, p, at, mca, record)
    if plugin_error:
        at.found.plugin_errors.append(f"{cluster}: {plugin_error}")
    judgement = judge(
        compiled=at.compiled, plugin=at.plugin or None, variables={}, record=record, since=since, now=p.now,
        plugin_error=plugin_error, blocked=at.blocked, feedback_verdicts=_feedback(ctl, at, mca, cluster),
    )
    record = decided(record, judgement, p.now)
    if not at.blocked and record.verdict is None:
        _start_calls(ctl, p, at, mca, record, judgement.due, judgement.ask_plugin)
    p.verification.due_at(judgement.next_at)
    if record == stored:
        return
    patch = {"metadata": {"annotations": {ANNOTATION_VALIDATION: record.to_json()}}}
    if await ctl.runtime.writes.patch_fenced(ctl.mca_cache, mca, patch, via=ctl.writer) is None:
        log.info("validation record conflict: judging again", extra={"key": p.name, "cluster": cluster})
        p.verification.due_at(p.now)
        return
    for check, result in recorded_results(stored, record, judgement, at.plugin):
        metrics.count_validation_result(KIND, "", p.name, at.node.key, check, result)
    if record.verdict is not None and record.verdict.status == FAILED:
        p.verification.failures.append(ValidationFailure(at.node.key, cluster, judgement.message))


def _feedback(ctl: AddonController, at: _Placement, mca: JSON, cluster: str) -> dict[str, FeedbackVerdict]:
    """The feedback checks' verdicts on the MCA and its agent's works, evaluated once per version
    of them."""
    works = sorted(agent_works(ctl, cluster, mca), key=name_of)
    version = " ".join(f"{name_of(o)}@{meta(o).get('resourceVersion') or ''}" for o in [mca, *works])
    uid = str(meta(mca).get("uid") or f"{cluster}/{name_of(mca)}")
    return ctl.verifier.feedback(uid, version, at.compiled, lambda: addon_variables(mca, works, cluster))


def _start_calls(
    ctl: AddonController, p: CmaPass, at: _Placement, mca: JSON, record: ValidationRecord,
    due: tuple[str, ...], ask_plugin: bool,
) -> None:
    verifier = ctl.verifier
    cluster = namespace_of(mca)
    if at.compiled is not None:
        by_name = {m.name: m for m in at.compiled.metrics}
        namespace = install_namespace(mca)
        for name in due:
            verifier.calls.start(
                _measure_key(p.name, mca, record, name), p.name,
                functools.partial(verifier.measure, by_name[name], cluster, p.name, namespace),
            )
    key = _plugin_key(p.name, mca, record)
    if not (at.plugin and ask_plugin) or verifier.calls.running(key):
        return
    client = verifier.plugins.client(at.plugin)
    if client is not None and verifier.may_ask(key, p.now):
        context = RolloutContext(
            mwrs_name=p.name, mwrs_namespace=at.node.namespace, placement_name=at.node.name,
            total_cluster_count=len(at.node.clusters),
        )
        now = p.now
        verifier.calls.start(key, p.name, plugin_call(
            client, "validate_rollout_completion", validate_request(context, cluster),
            lambda answer: PluginAnswer(str(answer.result), answer.message, now),
        ))
    p.verification.due_at(p.now + PLUGIN_POLL)
