"""The ``verify`` step of a ManifestWorkReplicaSet pass: validate the clusters whose work applied,
for the placementRefs whose rollout strategy has checks or a plugin (docs/behaviour/validation.md).

For each such cluster (its work holds the update revision and applied: ``Succeeded`` by its
conditions) the step

- takes the results of the calls that ended since the last pass (metric measurements, the
  plugin's ValidateRolloutCompletion answer) and adds them to the cluster's record;
- judges the cluster (``controllers.rollout.verification.judge``: the feedback checks on the
  work's status, the metric checks on their measurements, the plugin's answer);
- starts the calls now due, in the background (``BackgroundCalls``: a slow Prometheus or a hung
  plugin never holds the pass, nor other MWRSs' passes);
- writes the record on the work when it changed (a new measurement, a verdict, a new message),
  fenced on the work's resourceVersion, so that an overlapping instance never loses or doubles a
  measurement and a restarted one finds every result.

The plan that follows reads the verdicts from the works (``verified.verified_status``). A
Validating cluster is in flight for the planner whatever happens here: a step that fails, a lost
write or a cache that lags only keep it Validating longer.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ocm_rollout.api.constants import LABEL_PLACEMENT_NAME
from ocm_rollout.client.kube import JSON
from ocm_rollout.controllers.common.wire import annotations_of, generation_of, label_of, meta, namespace_of
from ocm_rollout.controllers.rollout.checks import CompiledChecks, InvalidChecks
from ocm_rollout.controllers.rollout.checks.feedback import work_variables
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase
from ocm_rollout.controllers.rollout.plugin.client import PluginError
from ocm_rollout.controllers.rollout.plugin.conditions import REASON_AVAILABLE
from ocm_rollout.controllers.rollout.plugin.requests import RolloutContext, validate_request
from ocm_rollout.controllers.rollout.verification import (
    ANNOTATION_VALIDATION,
    FAILED,
    Judgement,
    PluginAnswer,
    ValidationRecord,
    decided,
    judge,
    read_record,
    strategy_verifies,
)
from ocm_rollout.controllers.rollout.verification_pass import PlacementVerification, ValidationFailure
from ocm_rollout.controllers.runtime import metrics
from ocm_rollout.controllers.runtime.verifier import PLUGIN_POLL, PLUGIN_RELOAD
from ocm_rollout.controllers.workset.status_mapping import SUCCEEDED
from ocm_rollout.controllers.workset.verified import validating_since

if TYPE_CHECKING:
    from ocm_rollout.controllers.workset.operator import WorksetController
    from ocm_rollout.controllers.workset.steps import Pass

log = logging.getLogger(__name__)

KIND = "ManifestWorkReplicaSet"


def _check_key(owner: str, work: JSON, record: ValidationRecord, check: str) -> tuple[str, ...]:
    count = len(record.measurements.get(check, ()))
    uid = str(meta(work).get("uid") or "")
    return (owner, "measure", uid, str(record.generation), record.since, check, str(count))


def _plugin_key(owner: str, work: JSON, record: ValidationRecord) -> tuple[str, ...]:
    return (owner, "validate", str(meta(work).get("uid") or ""), str(record.generation), record.since)


async def verify(ctl: WorksetController, p: Pass) -> None:
    """Run the step for every verifying placementRef of the pass (see the module docstring)."""
    assert p.step is not None
    verifying = [
        ref for ref in p.spec.get("placementRefs") or []
        if isinstance(ref, Mapping) and isinstance(ref.get("rolloutStrategy"), Mapping)
        and strategy_verifies(ref["rolloutStrategy"])
    ]
    if not verifying:
        return
    matches = ctl.forms.spec_matcher(p.spec.get("manifestWorkTemplate") or {})
    works = ctl.works_io.owned(p.owner)
    for ref in verifying:
        strategy = ref["rolloutStrategy"]
        placement = str(ref.get("name") or "")
        found = p.verification.of(placement)
        blocked = ""
        compiled = ctl.verifier.compiled(strategy)
        if isinstance(compiled, InvalidChecks):
            found.invalid_checks = str(compiled)
            blocked = f"the checks do not compile: {compiled}"
            compiled = None
        elif compiled is not None:
            providers = ctl.runtime.context.metric_providers
            unknown = [
                f"check {m.name!r}: {providers.not_registered(m.provider_name)}"
                for m in compiled.metrics
                if m.provider_name is not None and m.provider_name not in providers
            ]
            if unknown:
                found.invalid_checks = "; ".join(unknown)
                blocked = found.invalid_checks
                compiled = None
        plugin = str(strategy.get("plugin") or "")
        if plugin:
            found.plugin = plugin
            found.plugin_loaded = ctl.verifier.plugin_loaded(plugin, p.key, p.now)
            if found.plugin_loaded is None:
                blocked = blocked or f"plugin {plugin} is loading (Initialize)"
            elif found.plugin_loaded.reason != REASON_AVAILABLE:
                blocked = blocked or f"plugin {plugin} is not loaded: {found.plugin_loaded.message}"
                p.verification.due_at(p.now + PLUGIN_RELOAD)
        mine = [
            w for w in works
            if label_of(w, LABEL_PLACEMENT_NAME) == placement and matches(w)
        ]
        for work in mine:
            await _verify_cluster(ctl, p, found, work, compiled, plugin, blocked)


async def _verify_cluster(
    ctl: WorksetController,
    p: Pass,
    found: PlacementVerification,
    work: JSON,
    compiled: CompiledChecks | None,
    plugin: str,
    blocked: str,
) -> None:
    status = ctl.memo.rollout_status(work)
    if status.status != SUCCEEDED:
        return
    since = validating_since(work, status)
    cluster = namespace_of(work)
    record = read_record(annotations_of(work), generation_of(work), since)
    if record.verdict is not None:
        return
    verifier = ctl.verifier
    if compiled is not None:
        for check in compiled.metrics:
            done = verifier.calls.take(_check_key(p.key, work, record, check.name))
            if done is not None:
                # (measure() makes every query failure an errored measurement; this is a bug's)
                measurement = done.value if isinstance(done.value, Measurement) else Measurement(
                    Phase.ERROR, p.now, p.now, "", f"measurement failed: {done.error}"
                )
                record = record.with_measurement(check.name, measurement)
    plugin_key = _plugin_key(p.key, work, record)
    plugin_error = ""
    if plugin:
        done = verifier.calls.take(plugin_key)
        if done is not None:
            if done.ok and isinstance(done.value, PluginAnswer):
                verifier.plugin_errors.pop(plugin_key, None)
                if done.value.result != "INPROGRESS":
                    record = ValidationRecord(
                        record.generation, record.since, record.measurements, done.value, None, record.message
                    )
            else:
                verifier.plugin_errors[plugin_key] = str(done.error)
        plugin_error = verifier.plugin_errors.get(plugin_key, "")
        if plugin_error:
            found.plugin_errors.append(f"{cluster}: {plugin_error}")
    judgement = judge(
        compiled=compiled, plugin=plugin or None, variables={}, record=record,
        since=since, now=p.now, plugin_error=plugin_error, blocked=blocked,
        feedback_verdicts=verifier.feedback(
            str(meta(work).get("uid") or ""), str(meta(work).get("resourceVersion") or ""), compiled,
            lambda: work_variables(work, cluster),
        ),
    )
    new_record = decided(record, judgement, p.now)
    if not blocked:
        _start_calls(ctl, p, work, new_record, judgement, compiled, plugin, plugin_key)
    p.verification.due_at(judgement.next_at)
    if new_record == read_record(annotations_of(work), generation_of(work), since):
        return
    patch = {"metadata": {"annotations": {ANNOTATION_VALIDATION: new_record.to_json()}}}
    written = await ctl.runtime.writes.patch_fenced(ctl.works, work, patch, via=ctl.writer)
    if written is None:
        log.info("validation record conflict: judging again", extra={"key": p.key, "cluster": cluster})
        p.verification.due_at(p.now)
        return
    _count_results(p, found, read_record(annotations_of(work), generation_of(work), since), new_record, judgement)
    if new_record.verdict is not None and new_record.verdict.status == FAILED:
        p.verification.failures.append(ValidationFailure(found.placement, cluster, _failure_text(judgement)))


def _count_results(
    p: Pass, found: PlacementVerification, old: ValidationRecord, new: ValidationRecord, judgement: Judgement
) -> None:
    """Count what this write recorded (ocm_rollout_validation_results_total): the new
    measurements, the plugin's final answer, and each check's phase once the verdict is reached."""
    def count(check: str, result: str) -> None:
        metrics.count_validation_result(KIND, p.namespace, p.name, found.placement, check, result)

    for check, taken in new.measurements.items():
        for measurement in taken[len(old.measurements.get(check, ())):]:
            count(check, str(measurement.phase))
    if new.plugin is not None and new.plugin != old.plugin:
        count(f"plugin:{found.plugin}", new.plugin.result)
    if new.verdict is not None and old.verdict is None:
        for result in judgement.checks:
            count(result.name, str(result.phase))



def _failure_text(judgement: Judgement) -> str:
    return judgement.message


def _start_calls(
    ctl: WorksetController,
    p: Pass,
    work: JSON,
    record: ValidationRecord,
    judgement: Judgement,
    compiled: CompiledChecks | None,
    plugin: str,
    plugin_key: tuple[str, ...],
) -> None:
    if record.verdict is not None:
        return
    verifier = ctl.verifier
    cluster = namespace_of(work)
    if compiled is not None:
        by_name = {m.name: m for m in compiled.metrics}
        for name in judgement.due:
            verifier.calls.start(
                _check_key(p.key, work, record, name), p.key,
                functools.partial(verifier.measure, by_name[name], cluster, p.name, p.namespace),
            )
    if plugin and judgement.ask_plugin and not verifier.calls.running(plugin_key):
        if verifier.may_ask(plugin_key, p.now):
            client = verifier.plugins.client(plugin)
            if client is not None:
                request = validate_request(_context(p, work), cluster)
                now = p.now

                async def ask() -> PluginAnswer:
                    try:
                        answer = await client.validate_rollout_completion(request)
                    except PluginError as exc:
                        raise RuntimeError(str(exc)) from None
                    return PluginAnswer(str(answer.result), answer.message, now)

                verifier.calls.start(plugin_key, p.key, ask)
        p.verification.due_at(p.now + PLUGIN_POLL)


def _context(p: Pass, work: JSON) -> RolloutContext:
    placement = label_of(work, LABEL_PLACEMENT_NAME) or ""
    return RolloutContext(mwrs_name=p.name, mwrs_namespace=p.namespace, placement_name=placement, total_cluster_count=0)


