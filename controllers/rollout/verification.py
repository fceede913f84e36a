"""A verified rollout's per-cluster state (docs/behaviour/validation.md): what is kept for one
cluster's validation of one revision, and the judgement of one pass over it.

A cluster whose workload has applied (it would be ``Succeeded``) is ``Validating`` until its
checks and its rollout plugin, if any, have all passed. What a pass learns is kept in a
``ValidationRecord``, stored by the controller next to the workload (an annotation of the
ManifestWork, or of the ManagedClusterAddOn), so that a restarted or another instance neither
measures again what was measured nor forgets a verdict:

- the metric measurements taken so far, per check;
- the plugin's last terminal answer to ValidateRolloutCompletion;
- the verdict, once there is one (``Succeeded`` or ``Failed``, and when): from then on the
  cluster is that, whatever the checks would say later (a feedback value that flaps back does
  not reopen a decided cluster).

A record belongs to one validation: the workload's generation, the moment it became Validating
(``since``) and, where the generation does not follow what rolls out, the revision validated (an
add-on's desired configurations: they live in the ManagedClusterAddOn's status, not its spec). A
record of another validation, or one that does not parse, is ignored: the cluster starts
validating afresh (which never widens: a Validating cluster is in flight).

Pure: no I/O; the clock is an argument.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal

from ocm_rollout.api.times import format_micro_time, parse_time
from ocm_rollout.controllers.rollout.checks import CompiledChecks
from ocm_rollout.controllers.rollout.checks.cluster import CheckResult, ClusterVerdict, evaluate_cluster
from ocm_rollout.controllers.rollout.checks.feedback import FeedbackVerdict, evaluate_feedback
from ocm_rollout.controllers.rollout.checks.metric import Measurement
from ocm_rollout.controllers.rollout.checks.phase import Phase

#: The annotation that holds a cluster's ``ValidationRecord`` (JSON).
ANNOTATION_VALIDATION: Final = "rollout.ocm-rollout.io/validation"
#: Measurements kept per check; beyond this the oldest errored one goes first (errors matter
#: only as the run of consecutive errors at the end), then the oldest.
MAX_MEASUREMENTS: Final = 48

VALIDATING: Final = "Validating"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
Status = Literal["Validating", "Succeeded", "Failed"]


def strategy_verifies(strategy: Mapping[str, Any] | None) -> bool:
    """Whether a rollout strategy (wire JSON) has checks or a plugin: its clusters validate."""
    if not isinstance(strategy, Mapping):
        return False
    return bool(strategy.get("plugin")) or strategy.get("validation") is not None


@dataclass(frozen=True)
class PluginAnswer:
    """The plugin's answer to ValidateRolloutCompletion: ``INPROGRESS``, ``SUCCEEDED`` or
    ``FAILED``, its message, and when it came."""

    result: str
    message: str
    at: datetime

    def to_dict(self) -> dict[str, str]:
        return {"result": self.result, "message": self.message, "at": format_micro_time(self.at)}

    @classmethod
    def from_dict(cls, data: Any) -> PluginAnswer:
        if not isinstance(data, Mapping) or data.get("result") not in ("INPROGRESS", "SUCCEEDED", "FAILED"):
            raise ValueError("not a plugin answer")
        return cls(str(data["result"]), str(data.get("message") or ""), parse_time(str(data["at"])))


@dataclass(frozen=True)
class Verdict:
    status: Literal["Succeeded", "Failed"]
    at: datetime
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "at": format_micro_time(self.at), "message": self.message}

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        if not isinstance(data, Mapping) or data.get("status") not in (SUCCEEDED, FAILED):
            raise ValueError("not a verdict")
        status: Literal["Succeeded", "Failed"] = SUCCEEDED if data["status"] == SUCCEEDED else FAILED
        return cls(status, parse_time(str(data["at"])), str(data.get("message") or ""))


@dataclass(frozen=True)
class ValidationRecord:
    """What is kept of one cluster's validation of one revision."""

    generation: int
    since: str  # format_micro_time of the moment the cluster became Validating
    measurements: Mapping[str, tuple[Measurement, ...]] = field(default_factory=dict)
    plugin: PluginAnswer | None = None
    verdict: Verdict | None = None
    #: The last judgement's message while Validating (what `ocm-rollout status` shows).
    message: str = ""
    #: The revision validated ("" when the generation says it: a ManifestWork's).
    revision: str = ""
    #: When the controller first judged this validation (``format_micro_time``; "" when ``since``
    #: says it). An add-on's ``since`` (its Completed transition) may predate the configurations
    #: it validates; its deadline and its checks' initialDelay count from this moment instead.
    started: str = ""

    def belongs_to(self, generation: int, since: datetime, revision: str = "") -> bool:
        return self.generation == generation and self.since == format_micro_time(since) and self.revision == revision

    def with_measurement(self, check: str, measurement: Measurement) -> ValidationRecord:
        kept = [*self.measurements.get(check, ()), measurement]
        while len(kept) > MAX_MEASUREMENTS:
            errored = next((i for i, m in enumerate(kept[:-1]) if m.phase is Phase.ERROR), 0)
            del kept[errored]
        return replace(self, measurements={**self.measurements, check: tuple(kept)})

    def to_json(self) -> str:
        doc: dict[str, Any] = {"generation": self.generation, "since": self.since}
        if self.measurements:
            doc["measurements"] = {k: [m.to_dict() for m in v] for k, v in sorted(self.measurements.items())}
        if self.plugin is not None:
            doc["plugin"] = self.plugin.to_dict()
        if self.verdict is not None:
            doc["verdict"] = self.verdict.to_dict()
        if self.message:
            doc["message"] = self.message
        if self.revision:
            doc["revision"] = self.revision
        if self.started:
            doc["started"] = self.started
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ValidationRecord:
        """Raises ValueError for anything ``to_json`` did not write."""
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            generation = doc["generation"]
            if not isinstance(generation, int) or isinstance(generation, bool):
                raise ValueError("generation is not an integer")
            since = str(doc["since"])
            parse_time(since)
            raw = doc.get("measurements") or {}
            if not isinstance(raw, dict):
                raise ValueError("measurements is not an object")
            measurements: dict[str, tuple[Measurement, ...]] = {}
            for k, v in raw.items():
                if not isinstance(v, list) or not all(isinstance(m, dict) for m in v):
                    raise ValueError(f"measurements of {k!r} are not a list of objects")
                measurements[str(k)] = tuple(Measurement.from_dict(m) for m in v)
            plugin = PluginAnswer.from_dict(doc["plugin"]) if "plugin" in doc else None
            verdict = Verdict.from_dict(doc["verdict"]) if "verdict" in doc else None
            message = str(doc.get("message") or "")
            revision = doc.get("revision") or ""
            started = doc.get("started") or ""
            if not isinstance(revision, str) or not isinstance(started, str):
                raise ValueError("revision or started is not a string")
            if started:
                parse_time(started)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a validation record: {exc}") from None
        return cls(generation, since, measurements, plugin, verdict, message, revision, started)


def read_record(
    annotations: Mapping[str, str], generation: int, since: datetime, revision: str = ""
) -> ValidationRecord:
    """The record of this validation (generation, since, revision) from ``annotations``; an empty
    one when there is none, it is of another validation, or it does not parse."""
    raw = annotations.get(ANNOTATION_VALIDATION)
    if raw:
        try:
            record = ValidationRecord.from_json(raw)
        except ValueError:
            record = None
        if record is not None and record.belongs_to(generation, since, revision):
            return record
    return ValidationRecord(generation, format_micro_time(since), revision=revision)


@dataclass(frozen=True)
class Judgement:
    """A Validating cluster on one pass: its status (still Validating, or the verdict reached
    now), why, every check's result, the metric checks to measure now, whether to ask the
    plugin, and when to look again at the latest (a measurement falls due)."""

    status: Status
    message: str
    checks: tuple[CheckResult, ...] = ()
    due: tuple[str, ...] = ()
    ask_plugin: bool = False
    next_at: datetime | None = None


def judge(
    *,
    compiled: CompiledChecks | None,
    plugin: str | None,
    variables: Mapping[str, Any],
    record: ValidationRecord,
    since: datetime,
    now: datetime,
    plugin_error: str = "",
    blocked: str = "",
    feedback_verdicts: Mapping[str, FeedbackVerdict] | None = None,
) -> Judgement:
    """Judge one Validating cluster: ``compiled`` its checks (None: no checks, or checks that do
    not compile, which then never pass), ``plugin`` the plugin's name when the strategy has one,
    ``variables`` the feedback variables, ``record`` what is kept, ``plugin_error`` why the
    plugin's last call failed (shown while it is retried), ``blocked`` why the cluster cannot
    pass at all now (checks that do not compile, a plugin that is not loaded): it stays
    Validating, and its progressDeadline still applies."""
    if record.verdict is not None:
        return Judgement(record.verdict.status, record.verdict.message)
    if blocked:
        return Judgement(VALIDATING, blocked)
    verdict: ClusterVerdict | None = None
    if compiled is not None:
        verdict = evaluate_cluster(compiled, variables, record.measurements, since, now, feedback_verdicts)
    parts: list[str] = []
    if verdict is not None and verdict.phase is Phase.FAILED:
        return Judgement(FAILED, verdict.message, verdict.checks)
    answer = record.plugin
    if plugin and answer is not None and answer.result == "FAILED":
        message = f"plugin {plugin}: ValidateRolloutCompletion FAILED" + (f": {answer.message}" if answer.message else "")
        return Judgement(FAILED, message, () if verdict is None else verdict.checks)
    checks_done = verdict is None or verdict.phase is Phase.SUCCESSFUL
    plugin_done = not plugin or (answer is not None and answer.result == "SUCCEEDED")
    if checks_done and plugin_done:
        passed = [f"check {c.name!r} passed" for c in (verdict.checks if verdict is not None else ())]
        if plugin:
            passed.append(f"plugin {plugin} validated it")
        return Judgement(SUCCEEDED, "; ".join(passed), () if verdict is None else verdict.checks)
    if verdict is not None and verdict.message:
        parts.append(verdict.message)
    if plugin and not plugin_done:
        if plugin_error:
            parts.append(f"plugin {plugin}: {plugin_error}")
        else:
            parts.append(f"waiting for plugin {plugin} (ValidateRolloutCompletion)")
    return Judgement(
        VALIDATING,
        "; ".join(parts),
        () if verdict is None else verdict.checks,
        () if verdict is None else verdict.due,
        ask_plugin=bool(plugin) and not plugin_done,
        next_at=None if verdict is None else verdict.next_at,
    )


def feedback_verdicts(compiled: CompiledChecks | None, variables: Mapping[str, Any]) -> dict[str, FeedbackVerdict]:
    """Every feedback check's verdict on ``variables`` (to keep while the workload is unchanged)."""
    if compiled is None:
        return {}
    return {check.name: evaluate_feedback(check, variables) for check in compiled.feedback}


def decided(record: ValidationRecord, judgement: Judgement, now: datetime) -> ValidationRecord:
    """``record`` with the verdict of ``judgement``, or, while it is Validating, its message."""
    if record.verdict is not None:
        return record
    if judgement.status == VALIDATING:
        return record if record.message == judgement.message else replace(record, message=judgement.message)
    status: Literal["Succeeded", "Failed"] = SUCCEEDED if judgement.status == SUCCEEDED else FAILED
    return replace(record, verdict=Verdict(status, now, judgement.message))


def recorded_results(
    old: ValidationRecord, new: ValidationRecord, judgement: Judgement, plugin: str = ""
) -> list[tuple[str, str]]:
    """What writing ``new`` over ``old`` records, as (check, result) pairs for the results metric:
    each new measurement (its phase), the plugin's new final answer (check ``plugin:<name>``),
    and, when the verdict is reached now, each check's phase."""
    out = [
        (check, str(m.phase))
        for check, taken in new.measurements.items()
        for m in taken[len(old.measurements.get(check, ())):]
    ]
    if new.plugin is not None and new.plugin != old.plugin:
        out.append((f"plugin:{plugin}", new.plugin.result))
    if new.verdict is not None and old.verdict is None:
        out.extend((c.name, str(c.phase)) for c in judgement.checks)
    return out


def failed_checks(judgement: Judgement) -> Sequence[CheckResult]:
    """The checks that made a cluster fail (for the ValidationFailed event)."""
    return [c for c in judgement.checks if c.phase in (Phase.FAILED, Phase.ERROR)]
