"""Verified rollouts (ours, issue 24): the ``plugin``, ``validation`` and ``promotion`` fields of
a ``RolloutStrategy`` (``cluster_v1alpha1``), shared by ManifestWorkReplicaSet placementRefs and
ClusterManagementAddOn install-strategy placements.

- ``plugin`` (OCM enhancement 231): the name of a registered rollout plugin whose
  ``ValidateRolloutCompletion`` must also succeed before a cluster counts as done.
- ``validation.checks``: built-in checks run on every cluster once its work has applied
  (cluster state ``Validating``): a ``feedback`` check (CEL over the ManifestWork status
  feedback and conditions) or a ``metric`` check (a PromQL query to a Prometheus-compatible
  API, measured ``count`` times, ``interval`` apart, with Argo Rollouts' analysis semantics).
- ``promotion``: decision groups that wait for a manual promotion
  (``ocm-rollout rollout promote``) before any of their clusters is rolled out to.

The CEL expressions are only checked for presence here (the API package does not depend on the
controllers); ``ocm_rollout.controllers.rollout.checks`` compiles them and reports a check whose
expression does not compile. See docs/behaviour/validation.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, model_validator

from ocm_rollout.api.gosyntax import parse_go_duration
from ocm_rollout.api.meta import CRD, Int32, OCMModel

# --------------------------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------------------------

# A positive Go duration (time.ParseDuration's units), screened by the CRD; the model parses it.
CHECK_DURATION_PATTERN: Final = r"^([0-9]+(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$"
_CHECK_DURATION_RE = re.compile(CHECK_DURATION_PATTERN)


def _check_positive_duration(value: str) -> str:
    if not _CHECK_DURATION_RE.match(value):
        raise ValueError(f"{value!r} is not a positive Go duration such as 30s, 1m or 1h30m")
    if parse_go_duration(value) <= 0:
        raise ValueError(f"{value!r} must be longer than 0s")
    return value


CheckDuration = Annotated[
    str,
    Field(pattern=CHECK_DURATION_PATTERN),
    AfterValidator(_check_positive_duration),
]
"""A positive Go duration (``30s``, ``1m``, ``1h30m``)."""


# --------------------------------------------------------------------------------------------
# Query templates
# --------------------------------------------------------------------------------------------

# The placeholders a metric query may use; each is replaced by a double-quoted PromQL string
# literal (escaped), never by raw text:
# - cluster: the managed cluster's name;
# - clusterRegex: the cluster's name with every RE2 metacharacter escaped, for =~ / !~ matchers;
# - name: the ManifestWorkReplicaSet's (or the add-on's) name;
# - namespace: the ManifestWorkReplicaSet's namespace (an add-on: its install namespace).
QUERY_PLACEHOLDERS: Final = ("cluster", "clusterRegex", "name", "namespace")
PLACEHOLDER_RE: Final = re.compile(r"\{\{\s*([A-Za-z][A-Za-z0-9_]*)?\s*\}\}")


def placeholder_in_string(template: str) -> str | None:
    """The first placeholder written inside a PromQL string literal (double-, single- or
    back-quoted), where it would become a string literal inside a string; None when none is."""
    quote = ""
    i = 0
    while i < len(template):
        ch = template[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                quote = ""
            elif template.startswith("{{", i):
                match = PLACEHOLDER_RE.match(template, i)
                if match is not None:
                    return match.group(0)
        elif ch in "\"'`":
            quote = ch
        elif ch == "#":  # a comment, to the end of the line
            end = template.find("\n", i)
            i = len(template) if end < 0 else end
            continue
        i += 1
    return None


def _check_query_template(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    for match in PLACEHOLDER_RE.finditer(value):
        name = match.group(1)
        if name not in QUERY_PLACEHOLDERS:
            known = ", ".join("{{" + p + "}}" for p in QUERY_PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {match.group(0)!r}; the known ones are {known}")
    quoted = placeholder_in_string(value)
    if quoted is not None:
        raise ValueError(
            f"{quoted} is inside a string literal; a placeholder is replaced by a quoted PromQL string "
            'literal of its own: write cluster={{cluster}}, not cluster="{{cluster}}"'
        )
    return value


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------

_CEL_SOURCE = Annotated[str, Field(min_length=1, max_length=4096)]


class FeedbackCheck(OCMModel):
    """A CEL condition over the cluster's ManifestWork status (add-ons: the ManagedClusterAddOn's
    conditions and its agent's works), evaluated on every pass while the cluster is Validating.

    Variables: ``feedback`` (map ``"<group>/<Kind>/<namespace>/<name>"`` to the manifest's
    feedback values by name: int, string, bool or parsed JSON), ``manifests`` (list of
    ``{group, version, kind, resource, namespace, name, feedback, conditions}``), ``conditions``
    (the work's, or the ManagedClusterAddOn's, conditions by type:
    ``{type, status, reason, message}``) and ``cluster`` (the cluster name).
    """

    __crd_validations__ = (
        (
            "has(self.successCondition) || has(self.failureCondition)",
            "set successCondition, failureCondition or both",
        ),
    )

    success_condition: Annotated[
        _CEL_SOURCE | None,
        Field(
            description=(
                "CEL; true passes the check. A missing key (feedback not synced yet) or a false "
                "result keeps the cluster Validating."
            )
        ),
    ] = None
    failure_condition: Annotated[
        _CEL_SOURCE | None,
        Field(description="CEL; true fails the check, and the cluster, at once (it wins over successCondition)."),
    ] = None

    @model_validator(mode="after")
    def _some_condition(self) -> FeedbackCheck:
        if self.success_condition is None and self.failure_condition is None:
            raise ValueError("set successCondition, failureCondition or both")
        return self


class MetricProvider(OCMModel):
    """Where the metric query is sent: one of address or name."""

    __crd_validations__ = (
        ("has(self.address) != has(self.name)", "set exactly one of address and name"),
    )

    address: Annotated[
        str | None,
        Field(
            pattern=r"^https?://[^\s]+$",
            max_length=2048,
            description=(
                "Base URL of a Prometheus-compatible HTTP API (Prometheus, Thanos, Cortex, Mimir); "
                "the query goes to <address>/api/v1/query."
            ),
        ),
    ] = None
    name: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=253,
            description="A provider registered in the controllers' configuration, by name.",
        ),
    ] = None

    @model_validator(mode="after")
    def _exactly_one(self) -> MetricProvider:
        if (self.address is None) == (self.name is None):
            raise ValueError("set exactly one of address and name")
        return self


class MetricCheck(OCMModel):
    """A PromQL query measured ``count`` times, ``interval`` apart, judged with Argo Rollouts'
    analysis semantics (successCondition / failureCondition per measurement; failureLimit,
    inconclusiveLimit and consecutiveErrorLimit over the measurements).

    Variables of the conditions: ``result`` (an instant vector: the list of sample values; a
    scalar: the value; a range vector: the list of each series' values), ``series`` (vector:
    ``[{metric: {label: value}, value}]``; matrix: ``[{metric, values}]``), ``resultType`` and
    ``cluster``. Every value is a double (NaN and ±Inf included).
    """

    __crd_validations__ = (
        (
            "has(self.successCondition) || has(self.failureCondition)",
            "set successCondition, failureCondition or both",
        ),
        ("!has(self.count) || self.count <= 1 || has(self.interval)", "interval is required when count > 1"),
        (
            "!has(self.count) || !has(self.failureLimit) || self.count >= self.failureLimit",
            "count must be >= failureLimit",
        ),
        (
            "!has(self.count) || !has(self.inconclusiveLimit) || self.count >= self.inconclusiveLimit",
            "count must be >= inconclusiveLimit",
        ),
    )

    provider: Annotated[MetricProvider, Field(description="Where the query is sent.")]
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=8192,
            pattern=r"\S",
            description=(
                "A PromQL query template. {{cluster}}, {{clusterRegex}}, {{name}} and {{namespace}} "
                "are replaced by escaped, double-quoted PromQL string literals (write "
                "cluster={{cluster}}, never inside quotes); nothing else is substituted."
            ),
        ),
        AfterValidator(_check_query_template),
    ]
    success_condition: Annotated[
        _CEL_SOURCE | None,
        Field(
            description=(
                "CEL over result; true: the measurement succeeds. Alone, false fails it; with "
                "failureCondition, neither true makes it inconclusive."
            )
        ),
    ] = None
    failure_condition: Annotated[
        _CEL_SOURCE | None,
        Field(description="CEL over result; true: the measurement fails (it wins over successCondition)."),
    ] = None
    initial_delay: Annotated[
        CheckDuration | None,
        Field(description="How long after the cluster enters Validating the first measurement is taken."),
    ] = None
    interval: Annotated[
        CheckDuration | None,
        Field(description="Time between measurements; required when count > 1."),
    ] = None
    count: Annotated[
        Int32 | None,
        Field(ge=1, description="How many measurements; the check succeeds once they are all taken. Unset: 1."),
    ] = None
    failure_limit: Annotated[
        Int32 | None,
        Field(ge=0, description="The check fails once more measurements than this failed. Unset: 0."),
    ] = None
    inconclusive_limit: Annotated[
        Int32 | None,
        Field(ge=0, description="The check is inconclusive once more measurements than this were. Unset: 0."),
    ] = None
    consecutive_error_limit: Annotated[
        Int32 | None,
        Field(
            ge=0,
            description=(
                "The check errors (and fails the cluster) once more measurements than this in a row "
                "could not be taken or judged (query error, bad answer, condition error). Unset: 4."
            ),
        ),
    ] = None
    timeout: Annotated[
        CheckDuration | None,
        Field(description="How long one query may take before it counts as an error. Unset: 30s."),
    ] = None

    @model_validator(mode="after")
    def _consistent(self) -> MetricCheck:
        if self.success_condition is None and self.failure_condition is None:
            raise ValueError("set successCondition, failureCondition or both")
        count = self.count if self.count is not None else 1
        if count > 1 and self.interval is None:
            raise ValueError("interval is required when count > 1")
        if self.count is not None and self.failure_limit is not None and self.count < self.failure_limit:
            raise ValueError("count must be >= failureLimit")
        if self.count is not None and self.inconclusive_limit is not None and self.count < self.inconclusive_limit:
            raise ValueError("count must be >= inconclusiveLimit")
        return self


CHECK_NAME_PATTERN: Final = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class RolloutCheck(OCMModel):
    """One named check: exactly one of feedback and metric."""

    __crd_validations__ = (
        ("has(self.feedback) != has(self.metric)", "set exactly one of feedback and metric"),
    )

    name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=63,
            pattern=CHECK_NAME_PATTERN,
            description="The check's name (a DNS label), unique in the list; status and events name it.",
        ),
    ]
    feedback: Annotated[
        FeedbackCheck | None, Field(description="A CEL condition over the work's status feedback and conditions.")
    ] = None
    metric: Annotated[MetricCheck | None, Field(description="A measured PromQL query.")] = None

    @model_validator(mode="after")
    def _exactly_one(self) -> RolloutCheck:
        if (self.feedback is None) == (self.metric is None):
            raise ValueError(f"check {self.name!r}: set exactly one of feedback and metric")
        return self


class RolloutValidation(OCMModel):
    """Checks that must pass on a cluster, once its work has applied, before it counts as
    succeeded; meanwhile the cluster is Validating (in flight: it counts toward maxConcurrency,
    and progressDeadline still bounds it)."""

    checks: Annotated[
        list[RolloutCheck],
        CRD(list_type="map", list_map_keys=("name",)),
        Field(min_length=1, max_length=16, description="The checks; all of them must pass."),
    ]

    @model_validator(mode="after")
    def _unique_names(self) -> RolloutValidation:
        seen: set[str] = set()
        for check in self.checks:
            if check.name in seen:
                raise ValueError(f"duplicate check name {check.name!r}")
            seen.add(check.name)
        return self


class PromotionGroup(OCMModel):
    """A decision group, by name or by index."""

    __crd_validations__ = (
        ("has(self.groupName) || has(self.groupIndex)", "set groupName or groupIndex"),
    )

    group_name: Annotated[
        str | None,
        Field(min_length=1, description="Every decision group with this name (takes precedence over groupIndex)."),
    ] = None
    group_index: Annotated[Int32 | None, Field(ge=0, description="The decision group with this index.")] = None

    @model_validator(mode="after")
    def _some(self) -> PromotionGroup:
        if self.group_name is None and self.group_index is None:
            raise ValueError("set groupName or groupIndex")
        return self


class RolloutPromotion(OCMModel):
    """Manual promotion: the gated decision groups wait, before any of their clusters is rolled
    out to, until ``ocm-rollout rollout promote`` promotes them for the revision in progress; a
    waiting group also holds every group after it in rollout order."""

    type: Annotated[
        Literal["Manual"],
        Field(description="Manual: gated groups wait for `ocm-rollout rollout promote`."),
    ]
    decision_groups: Annotated[
        list[PromotionGroup],
        Field(
            max_length=64,
            description=(
                "The gated decision groups; unset or empty: every group after the first in "
                "rollout order (mandatory groups first, then by index)."
            ),
        ),
    ] = Field(default_factory=list)


PluginName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        description=(
            "A rollout plugin registered with the work controller (OCM enhancement 231): its "
            "ValidateRolloutCompletion must also succeed before a cluster counts as done."
        ),
    ),
]
