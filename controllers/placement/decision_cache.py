"""PlacementDecision pages held in the placement controller's cache with one string per cluster.

Every page lists its clusters as ``{"clusterName", "reason", "score"}`` entries, and Placements
over the same fleet name the same clusters: 25 Placements of every cluster in a fleet of 1,000
name each cluster 25 times. Decoded from JSON, each name is a string of its own (about 60 bytes):
2 of the 9 MB the decision cache held in ``bench/placement_compare.py``.

``intern_cluster_names`` is the cache's transform (``Runtime.watch(transform=...)``): it puts the
interned string (``sys.intern``) in each entry, so each cluster's name is held once however
many pages list it; an interned string goes when the last page holding it goes. The page is
changed in place, with equal values only, so a reader holding it sees no difference. (Sharing
whole entries saves no more: scores differ from Placement to Placement, and the table of shared
entries cost what it saved.) Pure: no I/O.
"""

from __future__ import annotations

import sys

from ocm_rollout.client.kube import JSON


def intern_cluster_names(page: JSON) -> JSON:
    """``page``, each decision's ``clusterName`` the interned equal string."""
    status = page.get("status")
    decisions = status.get("decisions") if isinstance(status, dict) else None
    if not isinstance(decisions, list):
        return page
    for entry in decisions:
        if isinstance(entry, dict):
            name = entry.get("clusterName")
            if type(name) is str:
                entry["clusterName"] = sys.intern(name)
    return page
