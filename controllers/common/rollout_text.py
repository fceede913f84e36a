"""How the controllers tell users about a rollout, shared by the ManifestWorkReplicaSet controller
and the add-on manager: the ``RolloutEvent`` a pass records, cluster lists cut to a readable
length, and the stacked progress bar of ``ocm-rollout status`` and the live view. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NORMAL = "Normal"
WARNING = "Warning"
# Clusters named in one event message at most; the rest are counted.
LISTED = 20
BAR_WIDTH = 24


@dataclass(frozen=True)
class RolloutEvent:
    """An Event one pass of a rollout records on its owner."""

    reason: str
    message: str
    type: str = NORMAL


def cluster_list(clusters: Sequence[str], listed: int = LISTED) -> str:
    """``a, b, c`` with at most ``listed`` names, then ``and N more``."""
    text = ", ".join(clusters[:listed])
    if len(clusters) > listed:
        text += f" and {len(clusters) - listed} more"
    return text


def progress_bar(
    counts: Mapping[str, int], states: Sequence[str], chars: Mapping[str, str], width: int = BAR_WIDTH
) -> str:
    """A stacked bar of ``width`` cells: each state of ``states`` in order, drawn with its character
    of ``chars``, in proportion to its count."""
    total = sum(counts.get(s, 0) for s in states)
    if total == 0:
        return "[" + " " * width + "]"
    cells: list[str] = []
    used = 0
    acc = 0
    for state in states:
        acc += counts.get(state, 0)
        end = round(acc * width / total)
        cells.append(chars[state] * (end - used))
        used = end
    return "[" + "".join(cells) + "]"
