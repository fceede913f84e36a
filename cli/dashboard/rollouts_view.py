"""A rollout as the dashboard shows it: the JSON of one ManifestWorkReplicaSet's or one
ClusterManagementAddOn's configuration rollout, and its row in the rollouts list.

Computed with the same reports as ``ocm-rollout status`` (``controllers/workset/report.py``,
``controllers/addon/report.py``: the controllers' own planners, read-only), then shaped for the
page:

- the rollout's ``state``, one word a person reads first (``rollout_state``);
- per placement, its decision groups in rollout order, the one in flight marked ``current``;
- each cluster as a chip with its rollout status (ToApply, Progressing, Validating, Succeeded,
  Failed, TimeOut, Skip) and why. A group of more than ``CHIP_LIMIT`` clusters is aggregated: its
  counts per status, and chips only for the clusters that need attention (not Succeeded), up to
  the limit, unless the page asks for the whole group (``expand``);
- the clusters that failed, with their messages, first.

Pure: objects in, JSON out, ``now`` as an argument.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ocm_rollout.api.constants import (
    ANNOTATION_ROLLOUT_RETRY,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PROGRESSING,
    ROLLOUT_TYPE_ALL,
)
from ocm_rollout.cli.view.sim_view import natural_key
from ocm_rollout.controllers.addon import report as addon_report
from ocm_rollout.controllers.addon.inputs import PlacementInput
from ocm_rollout.controllers.common.wire import (
    JSON,
    annotations_of,
    mapping_at,
    mappings_in,
    meta,
    parse_time,
)
from ocm_rollout.controllers.workset import report as work_report
from ocm_rollout.controllers.workset.indexes import Forms
from ocm_rollout.controllers.workset.rollback import breached_clusters

CHIP_LIMIT = 120
FAILURE_LIMIT = 50
EVENT_LIMIT = 50

TO_APPLY, PROGRESSING, VALIDATING = "ToApply", "Progressing", "Validating"
SUCCEEDED, FAILED, TIME_OUT, SKIP = "Succeeded", "Failed", "TimeOut", "Skip"
CHIP_STATES = (TO_APPLY, PROGRESSING, VALIDATING, SUCCEEDED, FAILED, TIME_OUT, SKIP)
# The rollout's state, as the list and the page name it.
PENDING, COMPLETE, PAUSED, ABORTED = "Pending", "Complete", "Paused", "Aborted"
AWAITING_PROMOTION, ROLLOUT_FAILED, ROLLOUT_PROGRESSING = "Awaiting promotion", "Failed", "Progressing"
ROLLOUT_STATES = (ROLLOUT_PROGRESSING, COMPLETE, PAUSED, ABORTED, VALIDATING, AWAITING_PROMOTION, ROLLOUT_FAILED, PENDING)
ATTENTION = {FAILED: 0, TIME_OUT: 1, VALIDATING: 2, PROGRESSING: 3, TO_APPLY: 4, SKIP: 5, SUCCEEDED: 6}

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Expand = Collection[tuple[str, int]]
"""(placement, decision group index) whose chips are all wanted."""


def _chip_state(rollout_status: str, state: str) -> str:
    if state == work_report.VALIDATING_STATE:
        return VALIDATING
    if rollout_status in CHIP_STATES:
        return rollout_status
    return TO_APPLY if not rollout_status else PROGRESSING


def _chip(cluster: str, rollout_status: str, state: str, reason: str, *, applied: bool | None = None) -> JSON:
    chip: JSON = {"cluster": cluster, "state": _chip_state(rollout_status, state), "reason": reason}
    if state == work_report.APPLY_FAILED_STATE:
        chip["detail"] = "apply failed"
    elif state == work_report.WAITING_STATE and rollout_status not in ("", TO_APPLY):
        chip["detail"] = "returning"
    if applied is not None:
        chip["applied"] = applied
    return chip


def _group(placement: str, index: int, name: str, chips: list[JSON], expand: Expand) -> JSON:
    counts = {state: 0 for state in CHIP_STATES}
    for chip in chips:
        counts[chip["state"]] += 1
    total = len(chips)
    whole = total <= CHIP_LIMIT or (placement, index) in expand
    if whole:
        shown = sorted(chips, key=lambda c: natural_key(c["cluster"]))
    else:
        needing = [c for c in chips if c["state"] != SUCCEEDED]
        needing.sort(key=lambda c: (ATTENTION.get(c["state"], 9), natural_key(c["cluster"])))
        shown = needing[:CHIP_LIMIT]
    return {
        "index": index,
        "name": name,
        "total": total,
        "counts": {k: v for k, v in counts.items() if v},
        "aggregated": not whole,
        "clusters": shown,
        "current": False,
    }


def _mark_current(groups: list[JSON]) -> int | None:
    """The group in flight: the first with a cluster in progress; else the first still waiting."""
    for states in ((PROGRESSING, VALIDATING), (TO_APPLY,)):
        for group in groups:
            if any(group["counts"].get(s) for s in states):
                group["current"] = True
                return int(group["index"])
    return None


def _sum_counts(groups: Sequence[JSON]) -> dict[str, int]:
    out: dict[str, int] = {}
    for group in groups:
        for state, n in group["counts"].items():
            out[state] = out.get(state, 0) + n
    return out


def _failures(chips: Sequence[JSON]) -> list[JSON]:
    bad = [c for c in chips if c["state"] in (FAILED, TIME_OUT) or c.get("detail") == "apply failed"]
    bad.sort(key=lambda c: natural_key(c["cluster"]))
    return [{"cluster": c["cluster"], "state": c["state"], "reason": c["reason"] or "no reason reported"} for c in bad]


def _conditions(obj: Mapping[str, Any]) -> list[JSON]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    out = []
    for cond in found if isinstance(found, list) else ():
        if isinstance(cond, Mapping):
            out.append({k: cond.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")})
    return out


def events_json(events: Sequence[Mapping[str, Any]]) -> list[JSON]:
    """The newest ``EVENT_LIMIT`` events, oldest first (a timeline)."""

    def when(event: Mapping[str, Any]) -> str:
        return str(
            event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
            or meta(event).get("creationTimestamp") or ""
        )

    ordered = sorted(events, key=lambda e: (parse_time(when(e)) or EPOCH, when(e)))
    return [
        {
            "type": e.get("type") or "Normal",
            "reason": e.get("reason") or "",
            "message": e.get("message") or e.get("note") or "",
            "count": e.get("count") or 1,
            "time": when(e),
            "source": ((e.get("source") or {}).get("component") if isinstance(e.get("source"), Mapping) else "")
            or e.get("reportingComponent") or e.get("reportingController") or "",
        }
        for e in ordered[-EVENT_LIMIT:]
    ]


def rollout_state(*, aborted: bool, paused: bool, promotion: bool, breach: bool, counts: Mapping[str, int],
                  total: int, rolled_out: bool) -> str:
    """The one word for a rollout: Aborted, Paused, Awaiting promotion, Failed (maxFailures
    breached, or done with failures), Validating, Complete, Progressing, Pending (nothing
    decided yet)."""
    if aborted:
        return ABORTED
    if paused:
        return PAUSED
    if promotion:
        return AWAITING_PROMOTION
    if breach:
        return ROLLOUT_FAILED
    if counts.get(VALIDATING):
        return VALIDATING
    if total == 0:
        return COMPLETE if rolled_out else PENDING
    in_flight = counts.get(PROGRESSING, 0) + counts.get(TO_APPLY, 0)
    if in_flight == 0 and (counts.get(FAILED) or counts.get(TIME_OUT)):
        return ROLLOUT_FAILED
    if counts.get(SUCCEEDED, 0) == total or (rolled_out and in_flight == 0):
        return COMPLETE
    return ROLLOUT_PROGRESSING


def _age(obj: Mapping[str, Any], now: datetime) -> float | None:
    created = parse_time(str(meta(obj).get("creationTimestamp") or ""))
    return None if created is None else max((now - created).total_seconds(), 0.0)


def _finish(out: JSON, placements: list[JSON], *, aborted: bool, paused: bool, rolled_out: bool) -> JSON:
    counts: dict[str, int] = {}
    for placement in placements:
        for state, n in placement["counts"].items():
            counts[state] = counts.get(state, 0) + n
    total = sum(counts.values())
    out["placements"] = placements
    out["counts"] = counts
    out["total"] = total
    out["strategy"] = ", ".join(dict.fromkeys(p["strategy"] for p in placements)) or "-"
    out["state"] = rollout_state(
        aborted=aborted, paused=paused, promotion=any(p["promotion"] for p in placements),
        breach=any(p["breach"] for p in placements), counts=counts, total=total, rolled_out=rolled_out,
    )
    failures = [f for p in placements for f in p["failures"]]
    out["failuresTotal"] = len(failures)
    return out


# -- ManifestWorkReplicaSets ---------------------------------------------------------------------


def _abort_failures(mwrs: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """placement -> cluster -> why, from the abort's cause in PlacementRolledOut (else Progressing)."""
    status = mwrs.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    for kind in (CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_PROGRESSING):
        for cond in found if isinstance(found, list) else ():
            if isinstance(cond, Mapping) and cond.get("type") == kind:
                named = breached_clusters(str(cond.get("message") or ""))
                if named:
                    return named
    return {}


def _aborted_chip(chip: JSON, failed: str | None) -> None:
    """A chip of an aborted rollout: Failed with why when the abort names it; else, waiting for
    the aborted revision, it is marked aborted (it returns to, or stays on, the current one)."""
    if failed is not None:
        kind, _, why = failed.partition(": ")  # "Failed: <why>" or "TimeOut"
        state = TIME_OUT if kind == TIME_OUT else FAILED
        chip.update(state=state, reason=why or f"{state} when the rollout was aborted", detail="aborted, reverted")
    elif chip["state"] == TO_APPLY:
        chip["detail"] = "aborted"


def mwrs_rollout(
    *,
    mwrs: Mapping[str, Any],
    works: Sequence[JSON],
    placements: Mapping[str, JSON | None],
    decisions: Mapping[str, Sequence[JSON]],
    now: datetime,
    expand: Expand = (),
    forms: Forms | None = None,
) -> JSON:
    """One ManifestWorkReplicaSet's rollout (see the module docstring); ``forms`` keeps the works'
    canonical specs between calls."""
    report = work_report.build_report(
        mwrs=mwrs, works=works, placements=placements, decisions=decisions, now=now, forms=forms
    )
    revisions = report.revisions
    retried = bool(revisions.aborted_time) and annotations_of(mwrs).get(ANNOTATION_ROLLOUT_RETRY) == revisions.aborted_time
    aborted = revisions.aborted_time is not None and not retried
    # An aborted rollout's clusters return to the current revision; the ones that failed it are
    # named, with why, in the cause its conditions keep while it stays aborted.
    breached = _abort_failures(mwrs) if aborted else {}
    shown: list[JSON] = []
    for placement in report.placements:
        groups = []
        chips_all: list[JSON] = []
        failed_here = breached.get(placement.name, {})
        for group in placement.groups:
            chips = [_chip(c.cluster, c.rollout_status, c.state, c.reason, applied=c.applied) for c in group.clusters]
            if aborted:
                for chip in chips:
                    _aborted_chip(chip, failed_here.get(chip["cluster"]))
            chips_all.extend(chips)
            groups.append(_group(placement.name, group.index, group.name, chips, expand))
        current = None if aborted else _mark_current(groups)
        failures = _failures(chips_all)
        shown.append(
            {
                "name": placement.name,
                "namespace": report.namespace,
                "strategy": placement.strategy,
                "selected": placement.selected,
                "error": placement.error,
                "breach": placement.breach,
                "promotion": placement.promotion,
                "recheckAfter": placement.recheck_after,
                "groups": groups,
                "currentGroup": current,
                "counts": _sum_counts(groups),
                "applied": placement.applied,
                "failures": failures[:FAILURE_LIMIT],
                "failuresTotal": len(failures),
            }
        )
    out: JSON = {
        "kind": "mwrs",
        "namespace": report.namespace,
        "name": report.name,
        "key": f"mwrs/{report.namespace}/{report.name}",
        "age": _age(mwrs, now),
        "revisions": {
            "update": revisions.update,
            "current": revisions.current,
            "abortedTime": revisions.aborted_time if aborted else None,
            "paused": revisions.paused,
        },
        "summary": report.summary,
        "conditions": _conditions(mwrs),
    }
    rolled_out = revisions.update is not None and revisions.update == revisions.current
    return _finish(out, shown, aborted=aborted, paused=revisions.paused, rolled_out=rolled_out)


# -- add-ons ---------------------------------------------------------------------------------------


def _config_refs(found: Any, key: str) -> list[JSON]:
    out = []
    for item in found if isinstance(found, list) else ():
        if not isinstance(item, Mapping):
            continue
        config = item.get(key)
        if not isinstance(config, Mapping):
            continue
        out.append(
            {
                "group": item.get("group") or "",
                "resource": item.get("resource") or "",
                "namespace": config.get("namespace") or "",
                "name": config.get("name") or "",
                "specHash": config.get("specHash") or "",
            }
        )
    return out


def mca_configs(mcas: Mapping[str, Mapping[str, Any]], limit: int = CHIP_LIMIT) -> JSON:
    """Each ManagedClusterAddOn's desired and applied configuration hashes; those that differ first."""
    rows: list[JSON] = []
    for cluster, mca in mcas.items():
        status = mca.get("status")
        refs = status.get("configReferences") if isinstance(status, Mapping) else None
        desired = _config_refs(refs, "desiredConfig")
        applied = _config_refs(refs, "lastAppliedConfig")
        same = [d["specHash"] for d in desired] == [a["specHash"] for a in applied]
        rows.append({"cluster": cluster, "desired": desired, "applied": applied, "inSync": same})
    rows.sort(key=lambda r: (r["inSync"], natural_key(r["cluster"])))
    return {"total": len(rows), "outOfSync": sum(1 for r in rows if not r["inSync"]), "rows": rows[:limit]}


def addon_rollout(
    *,
    cma: Mapping[str, Any],
    mcas: Mapping[str, Mapping[str, Any]],
    placements: Mapping[tuple[str, str], PlacementInput],
    now: datetime,
    expand: Expand = (),
) -> JSON:
    """One ClusterManagementAddOn's configuration rollout (see the module docstring); placements
    are named ``<namespace>/<name>``."""
    report = addon_report.build_addon_report(cma=cma, mcas=mcas, placements=placements, now=now)
    shown: list[JSON] = []
    for placement in report.placements:
        groups = []
        chips_all: list[JSON] = []
        for group in placement.groups:
            chips = [_chip(c.cluster, c.rollout_status, c.state, c.reason) for c in group.clusters]
            chips_all.extend(chips)
            groups.append(_group(placement.key, group.index, group.name, chips, expand))
        current = _mark_current(groups)
        failures = _failures(chips_all)
        record = placement.aborted
        shown.append(
            {
                "name": placement.key,
                "namespace": placement.namespace,
                "strategy": placement.strategy,
                "selected": placement.selected,
                "error": placement.error or placement.unready,
                "breach": placement.breach,
                "promotion": placement.promotion,
                "recheckAfter": placement.recheck_after,
                "revision": placement.revision,
                "aborted": None if record is None else {
                    "time": record.time, "revision": record.revision,
                    "returnsTo": placement.returns_to, "blocked": placement.revert_blocked,
                },
                "condition": None if placement.condition is None else dict(
                    zip(("status", "reason", "message"), placement.condition, strict=True)
                ),
                "groups": groups,
                "currentGroup": current,
                "counts": _sum_counts(groups),
                "failures": failures[:FAILURE_LIMIT],
                "failuresTotal": len(failures),
            }
        )
    listed = {p["name"] for p in shown}
    for entry in mappings_in(mapping_at(cma, "spec", "installStrategy").get("placements")):
        ns, ref = str(entry.get("namespace") or ""), str(entry.get("name") or "")
        key = f"{ns}/{ref}"
        if not ns or not ref or key in listed:
            continue
        found = placements.get((ns, ref))
        missing = found is None or found.placement is None
        strategy = mapping_at(entry, "rolloutStrategy").get("type") or ROLLOUT_TYPE_ALL
        shown.append(_unplanned(key, ns, str(strategy), "Placement not found" if missing else "no decision yet"))
    name = str(meta(cma).get("name") or "")
    out: JSON = {
        "kind": "addon",
        "namespace": "",
        "name": name,
        "key": f"addon/{name}",
        "age": _age(cma, now),
        "installType": report.install_type,
        "paused": report.paused,
        "conditions": _conditions(cma),
        "mcas": mca_configs(mcas),
    }
    aborted = any(p["aborted"] is not None for p in shown)
    in_flight = any(p["counts"].get(s) for p in shown for s in (PROGRESSING, TO_APPLY, VALIDATING))
    return _finish(out, shown, aborted=aborted, paused=report.paused, rolled_out=not in_flight)


def _unplanned(name: str, namespace: str, strategy: str, why: str) -> JSON:
    """A placement of an add-on's install strategy that its rollout cannot plan yet, and why."""
    return {
        "name": name, "namespace": namespace, "strategy": strategy, "selected": 0, "error": why, "breach": False,
        "promotion": "", "recheckAfter": None, "revision": "", "aborted": None, "condition": None, "groups": [],
        "currentGroup": None, "counts": {}, "failures": [], "failuresTotal": 0,
    }


def list_row(rollout: Mapping[str, Any]) -> JSON:
    """A rollout's row in the list: what the list shows and filters on."""
    return {
        "kind": rollout["kind"],
        "namespace": rollout["namespace"],
        "name": rollout["name"],
        "key": rollout["key"],
        "strategy": rollout["strategy"],
        "state": rollout["state"],
        "counts": rollout["counts"],
        "total": rollout["total"],
        "age": rollout["age"],
        "failuresTotal": rollout["failuresTotal"],
    }
