"""The dashboard's fleet page: every ManagedCluster, its state, and the rollouts touching it.

``fleet_page`` takes the hub's objects as the watch caches hold them (wire JSON) and returns one
page of clusters, in natural name order (cluster2 before cluster10), with the fleet's totals.
Each cluster row holds its labels, claims and taints, whether it is available (the
``ManagedClusterConditionAvailable`` condition: its status, reason, message and since when),
joined and accepted, and ``rollouts``: the ManifestWorkReplicaSets with a ManifestWork in the
cluster's namespace (``{"kind": "mwrs", "namespace", "name"}``) and the add-ons with a
ManagedClusterAddOn there (``{"kind": "addon", "name"}``).

The query: words separated by blanks, all of which must hold. A word ``key=value`` holds when
the cluster has the label ``key`` with exactly that value (``key=`` asks for an empty value);
any other word holds when it is part of the cluster's name, ignoring case.

A ManifestWork names its ManifestWorkReplicaSet by the value of the label
``work.open-cluster-management.io/manifestworkreplicaset`` (``owner_for(namespace,
name).label_value``, a hash for long names); it is mapped back through the given
ManifestWorkReplicaSets, so a work whose owner is not among them is not shown as a rollout.

The cost is linear in clusters + works + add-ons, plus sorting the cluster names; a row is built
only for the clusters of the page.

Pure: no I/O, the clock is ``now``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ocm_rollout.api import constants
from ocm_rollout.cli.dashboard.fast_wire import obj as _obj
from ocm_rollout.cli.dashboard.fast_wire import objs as _objs
from ocm_rollout.cli.view.sim_view import natural_key
from ocm_rollout.controllers.common.wire import as_str, format_time, parse_time
from ocm_rollout.controllers.workset.workbuild import owner_for

JSON = dict[str, Any]
AVAILABILITY = ("True", "False", "Unknown")
MAX_PER_PAGE = 1000


def fleet_page(
    clusters: Sequence[Mapping[str, Any]],
    works: Sequence[Mapping[str, Any]],
    replica_sets: Sequence[Mapping[str, Any]],
    addons: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    query: str = "",
    page: int = 0,
    per_page: int = 100,
) -> JSON:
    """One page of the fleet (see the module's docstring).

    ``page`` counts from 0 and is clamped to the pages there are; ``per_page`` to 1..1000.
    Totals: ``total`` clusters, ``available`` (how many of them report each of True, False and
    Unknown), ``matched`` by the query, ``page``, ``pages`` (at least 1) and ``perPage``.
    """
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    terms = parse_query(query)
    counts = dict.fromkeys(AVAILABILITY, 0)
    matched: list[tuple[str, Mapping[str, Any]]] = []
    for cluster in clusters:
        metadata = _obj(cluster.get("metadata"))
        name = as_str(metadata.get("name"))
        counts[availability_status(cluster)] += 1
        if matches(name, _obj(metadata.get("labels")), terms):
            matched.append((name, cluster))
    matched.sort(key=lambda item: natural_key(item[0]))
    pages = max(1, math.ceil(len(matched) / per_page))
    page = min(max(page, 0), pages - 1)
    shown = matched[page * per_page : (page + 1) * per_page]
    rollouts = rollouts_by_cluster({name for name, _ in shown}, works, replica_sets, addons)
    return {
        "clusters": [cluster_row(cluster, rollouts.get(name, []), now) for name, cluster in shown],
        "total": len(clusters),
        "available": counts,
        "matched": len(matched),
        "page": page,
        "pages": pages,
        "perPage": per_page,
        "query": query,
    }


# --------------------------------------------------------------------------------------------
# The query
# --------------------------------------------------------------------------------------------


def parse_query(query: str) -> list[tuple[str, str | None]]:
    """The query's words as ``(key, value)`` for a label word, ``(word, None)`` for a name word
    (lower-cased)."""
    out: list[tuple[str, str | None]] = []
    for word in query.split():
        key, equals, value = word.partition("=")
        out.append((key, value) if equals and key else (word.lower(), None))
    return out


def matches(name: str, labels: Mapping[str, Any], terms: Sequence[tuple[str, str | None]]) -> bool:
    """Whether a cluster satisfies every word of a parsed query (an empty query: every cluster)."""
    lowered = name.lower()
    for key, value in terms:
        if value is None:
            if key not in lowered:
                return False
        elif labels.get(key) != value:
            return False
    return True


# --------------------------------------------------------------------------------------------
# A cluster's row
# --------------------------------------------------------------------------------------------


def cluster_row(cluster: Mapping[str, Any], rollouts: list[JSON], now: datetime) -> JSON:
    """One cluster as the page shows it; ``rollouts`` come from ``rollouts_by_cluster``."""
    metadata, spec, status = _obj(cluster.get("metadata")), _obj(cluster.get("spec")), _obj(cluster.get("status"))
    joined = _condition(status, constants.CONDITION_MANAGED_CLUSTER_JOINED)
    return {
        "name": as_str(metadata.get("name")),
        "labels": _labels(metadata),
        "claims": [
            {"name": as_str(c.get("name")), "value": as_str(c.get("value"))} for c in _objs(status.get("clusterClaims"))
        ],
        "taints": [
            {"key": as_str(t.get("key")), "value": as_str(t.get("value")), "effect": as_str(t.get("effect"))}
            for t in _objs(spec.get("taints"))
        ],
        "available": availability(cluster, now),
        "joined": joined is not None and joined.get("status") == "True",
        "accepted": spec.get("hubAcceptsClient") is True,
        "deleting": metadata.get("deletionTimestamp") is not None,
        "rollouts": rollouts,
    }


def availability_status(cluster: Mapping[str, Any]) -> str:
    """True, False or Unknown: the status of the cluster's ManagedClusterConditionAvailable
    (Unknown when the condition is missing or says anything else)."""
    condition = _condition(_obj(cluster.get("status")), constants.CONDITION_MANAGED_CLUSTER_AVAILABLE)
    status = None if condition is None else condition.get("status")
    return status if isinstance(status, str) and status in AVAILABILITY else "Unknown"


def availability(cluster: Mapping[str, Any], now: datetime | None = None) -> JSON:
    """``{"status", "reason", "message", "since", "forSeconds"}`` from the cluster's
    ManagedClusterConditionAvailable: status True, False or Unknown (Unknown too when the
    condition is missing or says anything else); ``since`` its lastTransitionTime (RFC 3339, or
    None), ``forSeconds`` how long before ``now`` that was (None without ``now`` or a time)."""
    condition = _condition(_obj(cluster.get("status")), constants.CONDITION_MANAGED_CLUSTER_AVAILABLE)
    if condition is None:
        return {"status": "Unknown", "reason": "", "message": "", "since": None, "forSeconds": None}
    since = parse_time(condition.get("lastTransitionTime"))
    return {
        "status": availability_status(cluster),
        "reason": as_str(condition.get("reason")),
        "message": as_str(condition.get("message")),
        "since": None if since is None else format_time(since),
        "forSeconds": None if since is None or now is None else max(0, int((now - since).total_seconds())),
    }


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in _objs(status.get("conditions")):
        if condition.get("type") == type_:
            return condition
    return None


# --------------------------------------------------------------------------------------------
# Rollouts
# --------------------------------------------------------------------------------------------


def rollouts_by_cluster(
    names: set[str],
    works: Sequence[Mapping[str, Any]],
    replica_sets: Sequence[Mapping[str, Any]],
    addons: Sequence[Mapping[str, Any]],
) -> dict[str, list[JSON]]:
    """The rollouts touching each cluster of ``names``: ManifestWorkReplicaSets (by namespace and
    name) with a work in its namespace, then add-ons (by name) with a ManagedClusterAddOn there;
    each once."""
    owners: dict[str, tuple[str, str]] = {}
    for mwrs in replica_sets:
        metadata = _obj(mwrs.get("metadata"))
        namespace, name = as_str(metadata.get("namespace")), as_str(metadata.get("name"))
        owners[owner_for(namespace, name).label_value] = (namespace, name)
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for work in works:
        metadata = _obj(work.get("metadata"))
        cluster = as_str(metadata.get("namespace"))
        if cluster not in names:
            continue
        owner = owners.get(as_str(_obj(metadata.get("labels")).get(constants.LABEL_MANIFESTWORK_REPLICASET)))
        if owner is not None:
            found[cluster].add(owner)
    installed: dict[str, set[str]] = defaultdict(set)
    for addon in addons:
        metadata = _obj(addon.get("metadata"))
        cluster = as_str(metadata.get("namespace"))
        if cluster in names:
            installed[cluster].add(as_str(metadata.get("name")))
    out: dict[str, list[JSON]] = {}
    for cluster in names:
        rows: list[JSON] = [{"kind": "mwrs", "namespace": ns, "name": n} for ns, n in sorted(found.get(cluster, ()))]
        rows.extend({"kind": "addon", "name": n} for n in sorted(installed.get(cluster, ())))
        out[cluster] = rows
    return out


# --------------------------------------------------------------------------------------------
# Reading the wire form fast (these run once per cluster and per work)
# --------------------------------------------------------------------------------------------




def _labels(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in _obj(metadata.get("labels")).items()}
