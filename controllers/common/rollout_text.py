"""How the controllers tell users about a rollout, shared by the ManifestWorkReplicaSet controller
and the add-on manager: the ``RolloutEvent`` a pass records, cluster lists cut to a readable
length, the stacked progress bar of ``ocm-rollout status`` and the live view, and the warning
about the older spelling ``rolloutType``. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocm_rollout.api.constants import EVENT_DEPRECATED_ROLLOUT_TYPE
from ocm_rollout.controllers.rollout.strategy import legacy_type_read

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


def marked_lines(lines: Sequence[str], mark: str, more: str, shown: int = 10, indent: str = "      ") -> list[str]:
    """At most ``shown`` of ``lines``, each behind ``indent`` and ``mark``, then ``and N more
    <more>`` for the rest."""
    out = [f"{indent}{mark} {line}" for line in lines[:shown]]
    if len(lines) > shown:
        out.append(f"{indent}{mark} and {len(lines) - shown} more {more}")
    return out


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


def legacy_type_warning(where: str, strategy: Any) -> RolloutEvent | None:
    """The Warning ``DeprecatedRolloutType`` for a rolloutStrategy (``where`` names its owner,
    e.g. ``placementRefs[1] (canary)``) that spells its type with the older key ``rolloutType``
    and is read that way; None when it does not (or when the spelling is an error, which is
    reported as an invalid strategy instead)."""
    read_as = legacy_type_read(strategy)
    if read_as is None:
        return None
    return RolloutEvent(
        EVENT_DEPRECATED_ROLLOUT_TYPE,
        f"{where}: rolloutStrategy.rolloutType is the older spelling of type; it is read as "
        f"type: {read_as}. Write type instead.",
        WARNING,
    )


def new_warnings(
    found: Iterable[RolloutEvent], told: frozenset[str]
) -> tuple[list[RolloutEvent], frozenset[str]]:
    """Of the warnings that hold now, those not told already (``told``: their messages, kept by
    the caller between passes), and the memory to keep: each distinct situation is told once,
    and again only after it went away and came back."""
    current = list(found)
    return [e for e in current if e.message not in told], frozenset(e.message for e in current)
