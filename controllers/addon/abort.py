"""Aborting and pausing the configuration rollout of a ClusterManagementAddOn (CMA): the record of
aborted rollouts, the user's requests on the CMA, and what an aborted placement returns to.

What flows through:

- ``parse`` / ``render`` / ``annotation_patch``: the abort record, the CMA annotation
  ``rollout.ocm-rollout.io/aborted`` (``ANNOTATION_ROLLOUT_ABORTED``), JSON
  ``{"<placement namespace>/<name>": {"time", "revision", "cause", "clusters", "failed"}}``;
- ``is_paused`` / ``abort_request`` / ``retry_request``: the annotations a user sets on the CMA
  (``rollout.ocm-rollout.io/paused: "true"``, ``.../abort: <revision>``, ``.../retry: <time>``);
- ``revision``: the short digest naming a placement's desired configurations (what an abort
  aborts; a change of the desired configurations ends it);
- ``abort_time``: the time (and retry token) of a new abort;
- ``revert_target``: an installProgressions entry and the configuration objects' current spec
  hashes -> the configurations the placement's add-ons return to (every item's
  ``lastKnownGoodConfig``), or why they cannot (no last known good configuration, or its content
  no longer exists: the object was changed in place or since, or deleted).

Why an annotation: the aborted state is a decision, not an observation (it holds when the failing
add-ons recover), so it cannot be recomputed from the fleet, and the CMA status is OCM's schema
(the API server prunes fields it does not define). Like the reservations of the rollout fence it
is written with the CMA's resourceVersion as read, before any ManagedClusterAddOn is reverted: a
pass that planned from an older CMA gets 409 Conflict on its own CMA write and plans again, and a
restart reads the record back, so a kill at any point converges on the same abort. (An
overlapping instance that reserved a cluster before the abort may still carry that reservation out;
the cluster was counted in flight before the abort, and the next pass returns it.)

The retry token is the abort's time with microseconds; a new abort never takes the time a present
retry annotation names, so a retry left on the CMA (or re-applied by a GitOps tool) never undoes a
later abort.

Pure: no I/O; ``now`` is an argument.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ocm_rollout.api.constants import (
    ADDON_DEPLOYMENT_CONFIG_RESOURCE,
    ADDON_TEMPLATE_RESOURCE,
    ANNOTATION_ROLLOUT_ABORT,
    ANNOTATION_ROLLOUT_ABORTED,
    ANNOTATION_ROLLOUT_PAUSED,
    ANNOTATION_ROLLOUT_RETRY,
)
from ocm_rollout.controllers.addon.configs import (
    Config,
    ConfigKey,
    DesiredConfigs,
    HashOf,
    last_known_good_desired,
    referent,
)
from ocm_rollout.controllers.common.wire import as_mapping, as_str, format_micro_time, mapping_at, mappings_in

ANNOTATION = ANNOTATION_ROLLOUT_ABORTED
CAUSE_MAX_FAILURES = "maxFailures"
CAUSE_REQUESTED = "requested"
CAUSES = (CAUSE_MAX_FAILURES, CAUSE_REQUESTED)
#: Failing clusters named in a record (the count is kept in full).
MAX_RECORDED_CLUSTERS = 20
REVISION_LENGTH = 16
SHORT_HASH = 12


class AbortRecordError(ValueError):
    """The annotation does not hold an abort record."""


@dataclass(frozen=True)
class Abort:
    """One aborted configuration rollout (of one placement)."""

    #: When it was aborted: RFC 3339 with microseconds; the value a retry names.
    time: str
    #: ``revision`` of the placement's desired configurations that were aborted.
    revision: str
    cause: str
    #: The failed and timed-out clusters at the time (at most MAX_RECORDED_CLUSTERS).
    clusters: tuple[str, ...] = ()
    #: How many there were.
    failed: int = 0

    def wire(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "revision": self.revision,
            "cause": self.cause,
            "clusters": list(self.clusters),
            "failed": self.failed,
        }


Aborts = Mapping[str, Abort]


def new_abort(time: str, revision_: str, cause: str, failing: Sequence[str]) -> Abort:
    ordered = sorted(failing)
    return Abort(time, revision_, cause, tuple(ordered[:MAX_RECORDED_CLUSTERS]), len(ordered))


def parse(text: str | None) -> dict[str, Abort]:
    """The record held by the annotation value ``text`` (None or "" is an empty record).

    Raises AbortRecordError for anything else than the documented shape."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AbortRecordError(f"annotation {ANNOTATION} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AbortRecordError(f"annotation {ANNOTATION} must be a JSON object keyed by placement")
    found: dict[str, Abort] = {}
    for key, item in data.items():
        where = f"annotation {ANNOTATION}: placement {key!r}"
        if not isinstance(item, dict):
            raise AbortRecordError(f"{where} must be an object")
        time, revision_, cause = item.get("time"), item.get("revision"), item.get("cause")
        clusters, failed = item.get("clusters", []), item.get("failed", 0)
        if not isinstance(time, str) or not time or not isinstance(revision_, str) or not revision_:
            raise AbortRecordError(f"{where} needs a time and a revision")
        if cause not in CAUSES:
            raise AbortRecordError(f"{where}: cause must be one of {', '.join(CAUSES)}")
        if not isinstance(clusters, list) or not all(isinstance(c, str) for c in clusters):
            raise AbortRecordError(f"{where}: clusters must be a list of cluster names")
        if not isinstance(failed, int) or isinstance(failed, bool) or failed < 0:
            raise AbortRecordError(f"{where}: failed must be a count")
        found[str(key)] = Abort(time, revision_, str(cause), tuple(clusters), failed)
    return found


def render(aborts: Aborts) -> str | None:
    """The annotation value (compact, sorted JSON), or None for an empty record."""
    if not aborts:
        return None
    return json.dumps({k: aborts[k].wire() for k in sorted(aborts)}, separators=(",", ":"), sort_keys=True)


def annotation_patch(aborts: Aborts) -> dict[str, str | None]:
    """The ``metadata.annotations`` part of a merge patch writing ``aborts`` (null removes it)."""
    return {ANNOTATION: render(aborts)}


def _annotation(cma: Mapping[str, Any], key: str) -> str:
    return as_str(mapping_at(cma, "metadata", "annotations").get(key)).strip()


def of_owner(cma: Mapping[str, Any]) -> dict[str, Abort]:
    """The record on the CMA (raises AbortRecordError when it is damaged)."""
    return parse(_annotation(cma, ANNOTATION) or None)


def is_paused(cma: Mapping[str, Any]) -> bool:
    """``rollout.ocm-rollout.io/paused: "true"`` (any other value does not pause)."""
    return _annotation(cma, ANNOTATION_ROLLOUT_PAUSED).lower() == "true"


def abort_request(cma: Mapping[str, Any]) -> str:
    """The revision the user asks to abort ("" when none)."""
    return _annotation(cma, ANNOTATION_ROLLOUT_ABORT)


def retry_request(cma: Mapping[str, Any]) -> str:
    """The abort time the user asks to retry ("" when none)."""
    return _annotation(cma, ANNOTATION_ROLLOUT_RETRY)


def revision(desired: DesiredConfigs) -> str:
    """A short digest of desired configurations (group, resource, namespace, name and spec hash of
    each, in order): what `ocm-rollout status` shows and an abort request names."""
    text = json.dumps([[*c.key, c.spec_hash] for c in desired.configs], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:REVISION_LENGTH]


def abort_time(now: datetime, retry: str) -> str:
    """The time of an abort made at ``now``: never the value ``retry`` (the retry annotation
    present on the CMA), so that it cannot undo this abort."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    text = format_micro_time(now)
    while text == retry:
        now += timedelta(microseconds=1)
        text = format_micro_time(now)
    return text


# ------------------------------------------------------------------------------------------
# What an aborted placement returns to
# ------------------------------------------------------------------------------------------

_KINDS = {ADDON_DEPLOYMENT_CONFIG_RESOURCE: "AddOnDeploymentConfig", ADDON_TEMPLATE_RESOURCE: "AddOnTemplate"}


def config_text(config: Config, *, with_hash: bool = True) -> str:
    """``AddOnDeploymentConfig ns/name (spec hash 0123456789ab)``."""
    kind = _KINDS.get(config.resource) or (f"{config.resource}.{config.group}" if config.group else config.resource)
    where = f"{config.namespace}/{config.name}" if config.namespace else config.name
    if with_hash and config.spec_hash:
        return f"{kind} {where} (spec hash {config.spec_hash[:SHORT_HASH]})"
    return f"{kind} {where}"


def configs_text(configs: Sequence[Config], *, with_hash: bool = True) -> str:
    return ", ".join(config_text(c, with_hash=with_hash) for c in configs) or "no configuration"


@dataclass(frozen=True)
class RevertTarget:
    """The configurations an aborted placement returns to, or why it cannot."""

    #: The placement's configurations with every item its lastKnownGoodConfig (None: blocked).
    desired: DesiredConfigs | None
    #: Why the add-ons cannot be reverted (None when they can).
    blocked: str | None
    #: The desired items that differ from their last known good one (what was rolled out).
    changed: tuple[Config, ...] = ()
    #: Their last known good counterparts (what the add-ons return to).
    good: tuple[Config, ...] = ()


def _items(progression: Mapping[str, Any]) -> list[tuple[Config, Config | None]]:
    """(desired, last known good) of each configReferences item."""
    out: list[tuple[Config, Config | None]] = []
    for item in mappings_in(progression.get("configReferences")):
        group, resource = as_str(item.get("group")), as_str(item.get("resource"))
        wanted = referent(item.get("desiredConfig"))
        if wanted is None:
            continue
        desired_hash = as_str(as_mapping(item.get("desiredConfig")).get("specHash"))
        desired = Config(group, resource, wanted[0], wanted[1], desired_hash)
        good_ref = referent(item.get("lastKnownGoodConfig"))
        good = None
        if good_ref is not None and good_ref[1]:
            good_hash = as_str(as_mapping(item.get("lastKnownGoodConfig")).get("specHash"))
            good = Config(group, resource, good_ref[0], good_ref[1], good_hash)
        out.append((desired, good))
    return out


def revert_target(
    defaults: DesiredConfigs,
    progression: Mapping[str, Any],
    hash_of: HashOf | None,
    known: Mapping[ConfigKey, str],
    *,
    strict: bool = True,
) -> RevertTarget:
    """What an aborted placement (its installProgressions entry ``progression``) returns to.

    Every item must have a lastKnownGoodConfig whose object still has that spec hash: looked up
    with ``hash_of`` ("" = no such object, None = not hashed here), else in ``known`` (hashes the
    CMA status holds for objects it still names). An object neither can tell about blocks the
    revert when ``strict`` (the controller) and is taken as unchanged otherwise (a read-only
    report without the objects)."""
    items = _items(progression)
    if not items:
        return RevertTarget(None, "the placement has no configurations to return to")
    changed = [(d, g) for d, g in items if g is None or g != d]
    if not changed:
        return RevertTarget(
            None, "the desired configurations are the last known good ones: there is nothing to return to",
        )
    missing = [d for d, g in items if g is None]
    if missing:
        return RevertTarget(
            None,
            f"no last known good configuration is recorded for {configs_text(missing, with_hash=False)} "
            f"(the placement has not completed a rollout with it)",
            tuple(d for d, _ in changed),
        )
    desired_keys = {d.key for d, _ in items}
    for _, good in changed:
        assert good is not None
        current = hash_of(*good.key) if hash_of is not None else None
        if current is None:
            current = known.get(good.key)
        where = config_text(good, with_hash=False)
        if current is None:
            if strict:
                return RevertTarget(
                    None, f"the content of {where} cannot be checked against its last known good spec hash {good.spec_hash[:SHORT_HASH]}",
                    tuple(d for d, _ in changed),
                )
            continue
        if current == "":
            return RevertTarget(
                None, f"{where} (the last known good configuration) no longer exists",
                tuple(d for d, _ in changed),
            )
        if current != good.spec_hash:
            how = "was changed in place" if good.key in desired_keys else "was changed since"
            return RevertTarget(
                None,
                f"{where} {how}; its last known good content (spec hash {good.spec_hash[:SHORT_HASH]}) no longer exists",
                tuple(d for d, _ in changed),
            )
    target = last_known_good_desired(defaults, progression)
    return RevertTarget(target, None, tuple(d for d, _ in changed), tuple(g for _, g in changed if g is not None))


def known_hashes(configs: Sequence[DesiredConfigs]) -> dict[ConfigKey, str]:
    """The spec hash of every configuration object some desired configurations name (5.3 keeps
    them current for the CMA's own references)."""
    found: dict[ConfigKey, str] = {}
    for desired in configs:
        for config in desired.configs:
            if config.spec_hash:
                found.setdefault(config.key, config.spec_hash)
    return found

