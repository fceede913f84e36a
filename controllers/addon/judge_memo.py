"""Each MCA's rollout status (docs/behaviour/addons.md 7), kept between the passes of its CMA.

A CMA pass judges every MCA of the add-on (``configrollout._judge``: its conditions scanned, its
configuration references compared with the desired ones, a transition time parsed), though
between two passes only the MCAs that changed can judge differently: the judgement reads nothing
but the MCA's ``status`` and the desired configurations. ``JudgeMemo`` keeps, per cluster, the
``status`` object last judged, the desired configurations it was judged against and the answer,
and answers again without judging when both are the same: the very same ``status`` object (the
cache and the overlay never change a stored object in place: a new version is a new object, and
the memo holds a reference to the one it judged, so its identity cannot be taken by another) and
equal desired configurations (``DesiredConfigs`` compare by value). Anything else is judged
afresh and replaces the entry, so an answer is never older than the MCA it is given for.

One memo per CMA (the operator's ``judge_memos``); ``forget`` drops a cluster's entry when its MCA
goes, ``len`` tells how many are kept. ``configrollout.judge_direct`` is the reference: the same
signature, no memory.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocm_rollout.controllers.addon.configrollout import Judged, judge_direct
from ocm_rollout.controllers.addon.configs import DesiredConfigs


class JudgeMemo:
    """See the module docstring; call it as a ``configrollout.Judge``."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        # cluster -> (the status object judged, the desired configurations, the judgement)
        self._entries: dict[str, tuple[object, DesiredConfigs, Judged]] = {}

    def __call__(self, cluster: str, mca: Mapping[str, Any], desired: DesiredConfigs) -> Judged:
        status = mca.get("status")
        entry = self._entries.get(cluster)
        if entry is not None and entry[0] is status:
            kept = entry[1]
            if kept is desired or kept == desired:
                return entry[2]
        judged = judge_direct(cluster, mca, desired)
        self._entries[cluster] = (status, desired, judged)
        return judged

    def forget(self, cluster: str) -> None:
        self._entries.pop(cluster, None)

    def __len__(self) -> int:
        return len(self._entries)
