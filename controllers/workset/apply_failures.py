"""Works whose agent reports that applying them failed, and what the MWRS says about them
(improvement 9, docs/behaviour/mwrs.md 6): the ``ManifestworkApplied`` message naming the failing
clusters and the agents' errors, and the ``ManifestWorkApplyFailed`` Warning told once per
(cluster, error).

A work *failed to apply* when its ``Applied`` condition is False at the work's
``metadata.generation``. Its errors are the per-manifest ``Applied`` False conditions of
``status.resourceStatus.manifests`` (the agent's own words, with the manifest they are about),
else the work-level ``Applied`` message.

Pure: no I/O, no clock; works are the stored JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ocm_rollout.api.constants import CONDITION_FALSE, EVENT_MANIFESTWORK_APPLY_FAILED, WORK_CONDITION_APPLIED
from ocm_rollout.controllers.common.conditions import find_condition
from ocm_rollout.controllers.common.rollout_text import WARNING, RolloutEvent, cluster_list
from ocm_rollout.controllers.common.wire import conditions_of, generation_of, name_of, namespace_of

#: Clusters named in the condition message (the rest are counted).
LISTED_CLUSTERS: Final = 5
#: Failing manifests named per cluster (the rest are counted).
LISTED_MANIFESTS: Final = 2
#: The longest error text quoted for one manifest.
MAX_ERROR: Final = 240
# OCM's work agent writes "Failed to apply manifest: <error>"; the error alone says it.
_AGENT_PREFIX: Final = "Failed to apply manifest: "


@dataclass(frozen=True)
class ManifestFailure:
    """One manifest the agent could not apply."""

    ordinal: int | None
    what: str  # "example.com/v1 Widget default/w"
    error: str

    def text(self) -> str:
        where = "manifest" if self.ordinal is None else f"manifest {self.ordinal}"
        return f"{self.error} ({where}: {self.what})" if self.what else f"{self.error} ({where})"


@dataclass(frozen=True)
class ApplyFailure:
    """A work whose current generation failed to apply on its cluster."""

    cluster: str
    work: str
    #: The work-level ``Applied`` condition's message (else its reason).
    message: str
    manifests: tuple[ManifestFailure, ...] = ()

    @property
    def first_error(self) -> str:
        """The first error, with the manifest it is about (what ``ocm-rollout status`` shows)."""
        if self.manifests:
            return self.manifests[0].text()
        return self.message or "Applied is False"

    @property
    def error(self) -> str:
        """Every error of the cluster, bounded (what the condition and the event say)."""
        if not self.manifests:
            return self.message or "Applied is False"
        shown = [m.text() for m in self.manifests[:LISTED_MANIFESTS]]
        text = ", ".join(shown)
        more = len(self.manifests) - LISTED_MANIFESTS
        if more > 0:
            text += f" and {more} more manifest(s)"
        return text


def _short(text: str) -> str:
    text = text.removeprefix(_AGENT_PREFIX).strip()
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 3] + "..."


def _what(meta: Mapping[str, Any]) -> str:
    group, version, kind = (str(meta.get(k) or "") for k in ("group", "version", "kind"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    api_version = f"{group}/{version}" if group else version
    parts = [p for p in (api_version, kind) if p]
    if name:
        parts.append(f"{namespace}/{name}" if namespace else name)
    return " ".join(parts)


def _manifest_failures(work: Mapping[str, Any]) -> tuple[ManifestFailure, ...]:
    status = work.get("status")
    resource_status = status.get("resourceStatus") if isinstance(status, Mapping) else None
    manifests = resource_status.get("manifests") if isinstance(resource_status, Mapping) else None
    out = []
    for item in manifests if isinstance(manifests, list) else ():
        if not isinstance(item, Mapping):
            continue
        cond = find_condition(item.get("conditions"), WORK_CONDITION_APPLIED)
        if cond is None or cond.get("status") != CONDITION_FALSE:
            continue
        meta = item.get("resourceMeta")
        meta = meta if isinstance(meta, Mapping) else {}
        ordinal = meta.get("ordinal")
        error = _short(str(cond.get("message") or cond.get("reason") or "Applied is False"))
        out.append(ManifestFailure(ordinal if isinstance(ordinal, int) else None, _what(meta), error))
    return tuple(out)


def work_apply_failure(work: Mapping[str, Any]) -> ApplyFailure | None:
    """The apply failure ``work`` reports for its current generation, if any."""
    status = work.get("status")
    raw = find_condition(status.get("conditions") if isinstance(status, Mapping) else None, WORK_CONDITION_APPLIED)
    if raw is None or raw.get("status") != CONDITION_FALSE:
        return None  # the common case, decided without parsing every condition of a fleet's works
    applied = conditions_of(work).get(WORK_CONDITION_APPLIED)
    if applied is None or applied.status != CONDITION_FALSE or applied.observed_generation != generation_of(work):
        return None
    return ApplyFailure(
        cluster=namespace_of(work),
        work=name_of(work),
        message=_short(applied.message or applied.reason),
        manifests=_manifest_failures(work),
    )


def apply_failures(
    works: Iterable[Mapping[str, Any]],
    failure_of: Callable[[Mapping[str, Any]], ApplyFailure | None] = work_apply_failure,
) -> list[ApplyFailure]:
    """The apply failures of ``works``, one per cluster (the first work listed wins), by cluster
    (``failure_of`` may give each work's from a memo)."""
    found: dict[str, ApplyFailure] = {}
    for work in works:
        failure = failure_of(work)
        if failure is not None:
            found.setdefault(failure.cluster, failure)
    return [found[c] for c in sorted(found)]


def applied_message(failures: list[ApplyFailure], total: int) -> str:
    """``ManifestworkApplied``'s message: ``2 of 5 clusters failed to apply: c1: <errors>; c2: ...``
    (at most ``LISTED_CLUSTERS`` clusters, then ``and N more``); empty without failures."""
    if not failures:
        return ""
    parts = [f"{f.cluster}: {f.error}" for f in failures[:LISTED_CLUSTERS]]
    text = f"{len(failures)} of {max(total, len(failures))} clusters failed to apply: " + "; ".join(parts)
    more = len(failures) - LISTED_CLUSTERS
    if more > 0:
        text += f"; and {more} more"
    return text


def apply_failure_events(
    failures: list[ApplyFailure], told: frozenset[tuple[str, str]]
) -> tuple[list[RolloutEvent], frozenset[tuple[str, str]]]:
    """``ManifestWorkApplyFailed`` Warnings for the (cluster, error) pairs not in ``told``, one per
    distinct error naming its clusters; and the memory to keep (the pairs that hold now: a
    failure that went away and comes back is told again)."""
    holding = frozenset((f.cluster, f.error) for f in failures)
    by_error: dict[str, list[str]] = {}
    for cluster, error in sorted(holding - told):
        by_error.setdefault(error, []).append(cluster)
    events = [
        RolloutEvent(
            EVENT_MANIFESTWORK_APPLY_FAILED,
            f"ManifestWork failed to apply in {len(clusters)} cluster(s) {cluster_list(clusters)}: {error}",
            WARNING,
        )
        for error, clusters in sorted(by_error.items(), key=lambda item: item[1][0])
    ]
    return events, holding
