"""Simulation profiles: how each simulated managed cluster behaves (``ocm-rollout up --profile``).

A profile is a YAML (or JSON) mapping with two keys, both optional::

    defaults:                    # every cluster and every ManifestWork, unless a rule says otherwise
      mode: rollout              # rollout | faithful (see below)
      applyDelay: 1s             # new generation seen -> first status write (Applied, Available,
                                 #   Progressing True "Applying")
      progressDuration: 2s       # first status write -> outcome (Progressing False "Completed",
                                 #   or Degraded True "ApplyFailed")
      outcome: Succeeded         # Succeeded | Degraded | ApplyFailed | Stuck
      message: ""                # failure message (Degraded condition / Applied False message)
      cleanupDelay: 0s           # deletion seen -> finalizer removed
      rawFeedbackJsonString: false   # the RawFeedbackJsonString feature gate of the work agent
      leaseDurationSeconds: 60   # ManagedCluster spec.leaseDurationSeconds (heartbeat period;
                                 #   the hub marks a silent cluster Unknown after 5 x this)
      metrics:                   # workload metrics `up` serves on its fleet /metrics endpoint
        http_error_ratio: 0.001  #   a gauge: any number (.nan, .inf, -.inf too)
        http_requests: {counter: 50}   # a counter (exposed as http_requests_total) that grows by
                                 #   50 per second while a rule sets this rate

    clusters:                    # rules, applied in order; a later matching rule overrides
    - name: cluster3             # glob, or a list of globs, on the cluster name
      outcome: Degraded
    - selector:                  # label selector on the cluster's labels (generated labels plus
        matchLabels:             #   the `labels` of earlier rules)
          environment: production
      applyDelay: 5s
    - name: "cluster1*"
      works: "web-*"             # only ManifestWorks whose name matches (glob or list)
      minGeneration: 2           # only from this work generation on (an update that goes wrong)
      contains: "web:2.0"        # only works whose spec contains this text (or any of a list):
                                 #   a bad version, wherever and whenever it is rolled out
      outcome: Degraded
      message: "image pull back-off"
      metrics: {http_error_ratio: 0.3}   # while such a work is applied on the cluster
    - name: [cluster4, cluster5]
      labels: {tier: edge}       # extra labels / clusterClaims / resources at registration
      claims: {example.com/gpu: "true"}
      capacity: {cpu: "96"}
      allocatable: {cpu: "95"}
      unreachable:               # the agent goes silent (no heartbeat, no work status)
      - {after: 30s, for: 2m}    #   30 s after start, for 2 minutes
      unavailable:               # the agent reports its API server down (Available False)
      - {after: 5m, for: 1m, every: 10m}   # repeating every 10 minutes

Matchers (``name``, ``selector``, ``works``, ``minGeneration``, ``contains``) are ANDed; a rule
without matchers applies to every cluster. Rules with ``works``, ``minGeneration`` or ``contains``
may only set work fields and ``metrics``.

``metrics`` maps Prometheus metric names (``[a-zA-Z_:][a-zA-Z0-9_:]*``) to a gauge's value (a
number) or to ``{counter: RATE}`` (a counter growing by RATE, a finite number >= 0, per second,
from 0 at the start of the simulation; its name gets ``_total`` unless it ends so). A name keeps one
type in the whole profile. ``ocm-rollout up`` serves them (``ocm_rollout.sandbox.sim_metrics``),
one series per registered, reachable cluster and metric, labelled ``cluster``. The rules apply in
order per metric name (a later one overrides an earlier one), a rule with work matchers only while
a ManifestWork it matches is applied on the cluster: its agent applied that generation and at least
one of its manifests is on the cluster.
Durations are seconds (a number) or Go/OCM forms such as ``500ms``, ``90s``, ``10m``, ``1h30m``.
Windows are measured from the start of the simulation.

Outcomes, as the hub sees them in ``rollout`` mode:

- ``Succeeded``: Applied True, Available True, Progressing True then False -> the rollout counts
  the cluster as Succeeded.
- ``Degraded``: Applied True, Available True, Progressing True and then Degraded True -> Failed
  (this is what makes a Progressive rollout stop at ``maxFailures``).
- ``ApplyFailed``: every manifest fails to apply (Applied False, Available False), Progressing True,
  then Degraded True. OCM's ManifestWorkReplicaSet treats ``Applied`` False as ToApply, not as a
  failure.
- ``Stuck``: applied, Progressing True forever (a rollout ``progressDeadline`` turns it TimeOut).

Whatever the outcome, a cluster refuses the manifests a real one refuses (an unserved kind, a
missing namespace, an invalid name: ``ocm_rollout.sandbox.agents.apply``); in ``rollout`` mode such a work
ends like ``ApplyFailed`` unless the profile already makes it fail.

In ``faithful`` mode the agent writes no Progressing/Degraded of its own (OCM's real agent); only
the work's ``conditionRules`` produce them, from the simulated resource state, whose workloads
become ready after ``progressDuration`` (Succeeded), never (Degraded, Stuck), or do not exist
(ApplyFailed).
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ocm_rollout.api.meta import DurationError, parse_go_duration
from ocm_rollout.sandbox.agents.registration import FleetMember, with_overrides
from ocm_rollout.sandbox.agents.selectors import SelectorError, selector_matches, validate_selector
from ocm_rollout.sandbox.agents.work import Mode, Outcome, WorkBehaviour
from ocm_rollout.sandbox.agents.workload_metrics import (
    MetricSetting,
    MetricType,
    exposed_name,
    valid_metric_name,
)


class ProfileError(ValueError):
    """An invalid profile; the message names the field (``clusters[1].outcome: ...``)."""


def parse_duration(value: Any, where: str) -> float:
    """Seconds from a number or a Go duration string (``90s``, ``1h30m``, ``500ms``)."""
    if isinstance(value, bool):
        raise ProfileError(f"{where}: expected a duration such as 30s, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ProfileError(f"{where}: must not be negative, got {value}")
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(f"{where}: expected a duration such as 30s, got {value!r}")
    try:
        nanoseconds = parse_go_duration(value.strip())
    except DurationError:
        raise ProfileError(f"{where}: {value!r} is not a duration (examples: 500ms, 90s, 10m, 1h30m)") from None
    if nanoseconds < 0:
        raise ProfileError(f"{where}: must not be negative, got {value!r}")
    return nanoseconds / 1e9


@dataclass(frozen=True)
class Window:
    """A period measured from the start of the simulation, optionally repeating."""

    after: float
    duration: float
    every: float | None = None

    def active(self, elapsed: float) -> bool:
        if elapsed < self.after:
            return False
        offset = elapsed - self.after
        if self.every:
            offset %= self.every
        return offset < self.duration

    def next_change(self, elapsed: float) -> float | None:
        """The next elapsed time at which ``active`` flips; None if it never does again."""
        if elapsed < self.after:
            return self.after
        offset = elapsed - self.after
        if self.every:
            cycle_start = elapsed - (offset % self.every)
            in_cycle = offset % self.every
            return cycle_start + (self.duration if in_cycle < self.duration else self.every)
        if offset < self.duration:
            return self.after + self.duration
        return None


_WORK_FIELDS = {
    "mode",
    "applyDelay",
    "progressDuration",
    "outcome",
    "message",
    "cleanupDelay",
    "rawFeedbackJsonString",
}
_CLUSTER_FIELDS = {
    "labels",
    "claims",
    "capacity",
    "allocatable",
    "leaseDurationSeconds",
    "unreachable",
    "unavailable",
}
_MATCHERS = {"name", "selector", "works", "minGeneration", "contains"}
_METRICS = "metrics"  # allowed in every rule and in the defaults


@dataclass(frozen=True)
class Rule:
    where: str
    names: tuple[str, ...] = ()
    selector: Mapping[str, Any] | None = None
    works: tuple[str, ...] = ()
    min_generation: int | None = None
    contains: tuple[str, ...] = ()
    work_fields: Mapping[str, Any] = field(default_factory=dict)
    cluster_fields: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, MetricSetting] = field(default_factory=dict)  # by exposed name

    def matches_cluster(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.names and not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names):
            return False
        return self.selector is None or selector_matches(self.selector, labels)

    @property
    def only_works(self) -> bool:
        """Whether the rule matches ManifestWorks (and so may only set work fields)."""
        return bool(self.works or self.contains) or self.min_generation is not None

    def matches_work(self, work_name: str, generation: int, spec_text: Callable[[], str] = str) -> bool:
        """Whether the rule's work matchers hold for a work (``spec_text``: its spec as JSON)."""
        if self.works and not any(fnmatch.fnmatchcase(work_name, pattern) for pattern in self.works):
            return False
        if self.min_generation is not None and generation < self.min_generation:
            return False
        return not self.contains or any(text in spec_text() for text in self.contains)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ProfileError(f"{where}: expected a name pattern or a list of them, got {value!r}")


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ProfileError(f"{where}: expected a text or a list of texts, got {value!r}")


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ProfileError(f"{where}: expected a mapping of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str | int | float) or isinstance(item, bool):
            raise ProfileError(f"{where}.{key}: expected a string value, got {item!r}")
        out[key] = str(item)
    return out


def _windows(value: Any, where: str) -> tuple[Window, ...]:
    if not isinstance(value, list):
        raise ProfileError(f"{where}: expected a list of {{after, for, every}} windows")
    out = []
    for index, raw in enumerate(value):
        path = f"{where}[{index}]"
        if not isinstance(raw, Mapping):
            raise ProfileError(f"{path}: expected a mapping with after and for")
        unknown = set(raw) - {"after", "for", "every"}
        if unknown:
            raise ProfileError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
        if "for" not in raw:
            raise ProfileError(f"{path}.for: required")
        after = parse_duration(raw.get("after", 0), f"{path}.after")
        duration = parse_duration(raw["for"], f"{path}.for")
        every = parse_duration(raw["every"], f"{path}.every") if "every" in raw else None
        if every is not None and every <= duration:
            raise ProfileError(f"{path}.every: must be longer than `for` ({raw['every']} <= {raw['for']})")
        out.append(Window(after, duration, every))
    return tuple(out)


def _work_fields(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "mode" in raw:
        try:
            out["mode"] = Mode(raw["mode"])
        except ValueError:
            raise ProfileError(f"{where}.mode: {raw['mode']!r} is not one of rollout, faithful") from None
    if "outcome" in raw:
        try:
            out["outcome"] = Outcome(raw["outcome"])
        except ValueError:
            allowed = ", ".join(o.value for o in Outcome)
            raise ProfileError(f"{where}.outcome: {raw['outcome']!r} is not one of {allowed}") from None
    for key, attr in (("applyDelay", "apply_delay"), ("progressDuration", "progress_duration"),
                      ("cleanupDelay", "cleanup_delay")):
        if key in raw:
            out[attr] = parse_duration(raw[key], f"{where}.{key}")
    if "message" in raw:
        if not isinstance(raw["message"], str):
            raise ProfileError(f"{where}.message: expected a string")
        out["message"] = raw["message"]
    if "rawFeedbackJsonString" in raw:
        if not isinstance(raw["rawFeedbackJsonString"], bool):
            raise ProfileError(f"{where}.rawFeedbackJsonString: expected true or false")
        out["raw_feedback_json"] = raw["rawFeedbackJsonString"]
    return out


def _cluster_fields(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("labels", "claims", "capacity", "allocatable"):
        if key in raw:
            out[key] = _string_map(raw[key], f"{where}.{key}")
    if "leaseDurationSeconds" in raw:
        value = raw["leaseDurationSeconds"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ProfileError(f"{where}.leaseDurationSeconds: expected a whole number of seconds >= 1")
        out["leaseDurationSeconds"] = value
    for key in ("unreachable", "unavailable"):
        if key in raw:
            out[key] = _windows(raw[key], f"{where}.{key}")
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _metric_setting(value: Any, where: str) -> MetricSetting:
    gauge = _number(value)
    if gauge is not None:
        return MetricSetting(MetricType.GAUGE, gauge)
    if isinstance(value, Mapping) and set(value) == {"counter"}:
        rate = _number(value["counter"])
        if rate is None or not math.isfinite(rate) or rate < 0:
            raise ProfileError(
                f"{where}.counter: expected a rate per second, a finite number >= 0, got {value['counter']!r}"
            )
        return MetricSetting(MetricType.COUNTER, rate)
    raise ProfileError(f"{where}: expected a number (a gauge) or {{counter: RATE}}, got {value!r}")


def _metrics(raw: Mapping[str, Any], where: str) -> dict[str, MetricSetting]:
    """The ``metrics`` of a rule or the defaults, by exposed name."""
    if _METRICS not in raw:
        return {}
    value = raw[_METRICS]
    if not isinstance(value, Mapping):
        raise ProfileError(f"{where}.{_METRICS}: expected a mapping of metric names to values")
    out: dict[str, MetricSetting] = {}
    for name, item in value.items():
        path = f"{where}.{_METRICS}.{name}"
        if not isinstance(name, str) or not valid_metric_name(name):
            raise ProfileError(f"{path}: {name!r} is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        setting = _metric_setting(item, path)
        exposed = exposed_name(name, setting.type)
        if exposed in out:
            raise ProfileError(f"{path}: names the same series as another entry ({exposed})")
        out[exposed] = setting
    return out


def _check_metric_types(sources: Sequence[tuple[str, Mapping[str, MetricSetting]]]) -> None:
    """A metric name keeps one type across the profile (a scrape with two is refused)."""
    seen: dict[str, tuple[MetricType, str]] = {}
    for where, metrics in sources:
        for name, setting in metrics.items():
            earlier = seen.setdefault(name, (setting.type, where))
            if earlier[0] is not setting.type:
                raise ProfileError(
                    f"{where}.{_METRICS}: {name} is a {setting.type} here and a {earlier[0]} in {earlier[1]}"
                    " (a metric has one type)"
                )


def _spec_text(spec: Any) -> Callable[[], str]:
    """The work spec as JSON, made at the first call only (``contains`` matchers read it)."""
    text: list[str] = []

    def get() -> str:
        if not text:
            text.append(json.dumps(spec, sort_keys=True))
        return text[0]

    return get


@dataclass(frozen=True)
class ClusterPlan:
    """The resolved behaviour of one simulated cluster."""

    member: FleetMember
    lease_duration_seconds: int
    unreachable: tuple[Window, ...]
    unavailable: tuple[Window, ...]
    work_defaults: WorkBehaviour
    work_rules: tuple[Rule, ...]
    metric_defaults: Mapping[str, MetricSetting] = field(default_factory=dict)
    metric_rules: tuple[Rule, ...] = ()  # the rules matching the cluster that set metrics, in order

    def reachable(self, elapsed: float) -> bool:
        return not any(w.active(elapsed) for w in self.unreachable)

    def api_server_healthy(self, elapsed: float) -> bool:
        return not any(w.active(elapsed) for w in self.unavailable)

    def next_change(self, elapsed: float) -> float | None:
        """When reachability or health next changes (elapsed seconds), if ever."""
        times = [t for w in (*self.unreachable, *self.unavailable) if (t := w.next_change(elapsed)) is not None]
        return min(times) if times else None

    def work_behaviour(self, work_name: str, generation: int, spec: Any = None) -> WorkBehaviour:
        """How the agent handles a work (``spec``: the work's spec, for ``contains`` rules)."""
        behaviour = self.work_defaults
        spec_text = _spec_text(spec)
        for rule in self.work_rules:
            if rule.matches_work(work_name, generation, spec_text):
                behaviour = replace(behaviour, **rule.work_fields)
        return behaviour

    @property
    def work_metrics(self) -> bool:
        """Whether some metric depends on the works applied on the cluster."""
        return any(rule.only_works for rule in self.metric_rules)

    def metric_rules_matching(self, work_name: str, generation: int, spec: Any = None) -> frozenset[int]:
        """The indices in ``metric_rules`` of the work rules that a work satisfies."""
        spec_text = _spec_text(spec)
        return frozenset(
            index
            for index, rule in enumerate(self.metric_rules)
            if rule.only_works and rule.matches_work(work_name, generation, spec_text)
        )

    def metrics(self, satisfied: frozenset[int] = frozenset()) -> dict[str, MetricSetting]:
        """The metric settings while the work rules ``satisfied`` hold (by index in
        ``metric_rules``): the defaults, then every rule in order, a later one overriding."""
        out = dict(self.metric_defaults)
        for index, rule in enumerate(self.metric_rules):
            if not rule.only_works or index in satisfied:
                out.update(rule.metrics)
        return out


@dataclass(frozen=True)
class Profile:
    defaults_work: WorkBehaviour = field(default_factory=WorkBehaviour)
    defaults_cluster: Mapping[str, Any] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    defaults_metrics: Mapping[str, MetricSetting] = field(default_factory=dict)

    def plan(self, member: FleetMember) -> ClusterPlan:
        """Apply the rules to one fleet member (in order; later rules override)."""
        cluster = dict(self.defaults_cluster)
        labels = dict(member.labels)
        extra_labels: dict[str, str] = dict(cluster.get("labels") or {})
        labels.update(extra_labels)
        claims: dict[str, str] = dict(cluster.get("claims") or {})
        capacity: dict[str, str] = dict(cluster.get("capacity") or {})
        allocatable: dict[str, str] = dict(cluster.get("allocatable") or {})
        work_rules: list[Rule] = []
        metric_rules: list[Rule] = []
        work_defaults = self.defaults_work
        for rule in self.rules:
            if not rule.matches_cluster(member.name, labels):
                continue
            if rule.metrics:
                metric_rules.append(rule)
            if rule.only_works:
                work_rules.append(rule)
                continue
            work_defaults = replace(work_defaults, **rule.work_fields)
            fields = rule.cluster_fields
            extra_labels.update(fields.get("labels") or {})
            labels.update(fields.get("labels") or {})
            claims.update(fields.get("claims") or {})
            capacity.update(fields.get("capacity") or {})
            allocatable.update(fields.get("allocatable") or {})
            for key in ("leaseDurationSeconds", "unreachable", "unavailable"):
                if key in fields:
                    cluster[key] = fields[key]
        resolved = with_overrides(member, extra_labels, claims, capacity, allocatable)
        return ClusterPlan(
            member=resolved,
            lease_duration_seconds=int(cluster.get("leaseDurationSeconds") or 60),
            unreachable=tuple(cluster.get("unreachable") or ()),
            unavailable=tuple(cluster.get("unavailable") or ()),
            work_defaults=work_defaults,
            work_rules=tuple(work_rules),
            metric_defaults=self.defaults_metrics,
            metric_rules=tuple(metric_rules),
        )


def _parse_rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where}: expected a mapping")
    unknown = set(raw) - _MATCHERS - _WORK_FIELDS - _CLUSTER_FIELDS - {_METRICS}
    if unknown:
        raise ProfileError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    names = _globs(raw["name"], f"{where}.name") if "name" in raw else ()
    selector = raw.get("selector")
    if "selector" in raw:
        try:
            validate_selector(selector, f"{where}.selector")
        except SelectorError as exc:
            raise ProfileError(str(exc)) from None
        if selector is None:
            raise ProfileError(f"{where}.selector: must not be null (omit it to match every cluster)")
    works = _globs(raw["works"], f"{where}.works") if "works" in raw else ()
    min_generation = raw.get("minGeneration")
    if "minGeneration" in raw and (
        not isinstance(min_generation, int) or isinstance(min_generation, bool) or min_generation < 1
    ):
        raise ProfileError(f"{where}.minGeneration: expected a whole number >= 1")
    contains = _texts(raw["contains"], f"{where}.contains") if "contains" in raw else ()
    cluster_fields = _cluster_fields(raw, where)
    if (works or contains or min_generation is not None) and cluster_fields:
        raise ProfileError(
            f"{where}: {', '.join(sorted(cluster_fields))} cannot be combined with works/minGeneration/contains "
            "(those rules only change how ManifestWorks are handled)"
        )
    return Rule(
        where=where,
        names=names,
        selector=selector,
        works=works,
        min_generation=min_generation,
        contains=contains,
        work_fields=_work_fields(raw, where),
        cluster_fields=cluster_fields,
        metrics=_metrics(raw, where),
    )


def parse_profile(data: Any, source: str = "profile") -> Profile:
    """A Profile from parsed YAML/JSON; ProfileError names the first bad field."""
    if data is None:
        return Profile()
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source}: expected a mapping with `defaults` and/or `clusters`")
    unknown = set(data) - {"defaults", "clusters"}
    if unknown:
        raise ProfileError(f"{source}: unknown top-level field(s) {', '.join(sorted(map(str, unknown)))}")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ProfileError(f"{source}.defaults: expected a mapping")
    unknown = set(defaults) - _WORK_FIELDS - _CLUSTER_FIELDS - {_METRICS}
    if unknown:
        raise ProfileError(f"{source}.defaults: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    work_defaults = replace(WorkBehaviour(), **_work_fields(defaults, f"{source}.defaults"))
    cluster_defaults = _cluster_fields(defaults, f"{source}.defaults")
    raw_rules = data.get("clusters") or []
    if not isinstance(raw_rules, Sequence) or isinstance(raw_rules, str):
        raise ProfileError(f"{source}.clusters: expected a list of rules")
    rules = tuple(_parse_rule(raw, f"{source}.clusters[{index}]") for index, raw in enumerate(raw_rules))
    metrics = _metrics(defaults, f"{source}.defaults")
    _check_metric_types([(f"{source}.defaults", metrics), *((rule.where, rule.metrics) for rule in rules)])
    return Profile(
        defaults_work=work_defaults, defaults_cluster=cluster_defaults, rules=rules, defaults_metrics=metrics
    )


def load_profile(path: str | Path | None) -> Profile:
    """Read a profile file (YAML or JSON); no path gives the default profile."""
    if path is None:
        return Profile()
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"{file}: cannot read the profile ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{file}: not valid YAML/JSON ({exc})") from None
    return parse_profile(data, source=file.name)
