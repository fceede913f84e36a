"""What the scheduler ignores in a Placement's spec, as OCM does, said out loud (pure).

OCM schedules these Placements without a word; so do we, and each is reported: as a Warning
event on the Placement (the controller, once per situation), on stderr and in the explanation of
``ocm-rollout schedule``, and in the debug endpoint's answer.

- A toleration whose ``operator`` is neither ``Equal`` (or empty) nor ``Exists`` matches no taint
  (the CRD does not restrict the operator, so such a Placement is stored as written). With an
  empty key the Placement is also Misconfigured once a cluster reaches the filter.
- A built-in prioritizer named twice in ``prioritizerPolicy.configurations``: the last entry's
  weight counts, the earlier ones are ignored.
- An unknown built-in prioritizer whose weight is 0 is skipped (with another weight it makes the
  Placement Misconfigured).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ocm_rollout.api import constants
from ocm_rollout.api.cluster_v1beta1 import Placement
from ocm_rollout.controllers.placement.prioritizers import BUILTIN_PRIORITIZERS

KNOWN_OPERATORS = ("", constants.TOLERATION_OP_EQUAL, constants.TOLERATION_OP_EXISTS)


@dataclass(frozen=True)
class SpecWarning:
    """One ignored part of a spec: the event reason/action and the message."""

    reason_action: tuple[str, str]
    message: str


def toleration_warnings(placement: Placement) -> list[SpecWarning]:
    out = []
    for index, toleration in enumerate(placement.spec.tolerations):
        if toleration.operator in KNOWN_OPERATORS:
            continue
        out.append(
            SpecWarning(
                constants.EVENT_TOLERATION_IGNORED,
                f"spec.tolerations[{index}] (key {json.dumps(toleration.key or '')}) has operator "
                f"{json.dumps(toleration.operator)}, which is neither Equal nor Exists: it tolerates no taint",
            )
        )
    return out


def prioritizer_warnings(placement: Placement) -> list[SpecWarning]:
    policy = placement.spec.prioritizer_policy
    if policy is None:
        return []
    seen: dict[str, int] = {}
    final: dict[str, tuple[int, int]] = {}  # built-in name -> (last index, weight)
    out = []
    for index, config in enumerate(policy.configurations):
        coordinate = getattr(config, "score_coordinate", None)
        if coordinate is None or coordinate.type != constants.SCORE_COORDINATE_BUILTIN or coordinate.add_on is not None:
            continue
        name = coordinate.built_in or ""
        if name in seen:
            out.append(
                SpecWarning(
                    constants.EVENT_PRIORITIZER_IGNORED,
                    f"spec.prioritizerPolicy.configurations[{seen[name]}] (BuiltIn {json.dumps(name)}) is "
                    f"overridden by configurations[{index}]: only the last weight ({config.weight}) counts",
                )
            )
        seen[name] = index
        final[name] = (index, config.weight)
    for name, (index, weight) in final.items():
        if name not in BUILTIN_PRIORITIZERS and weight == 0:
            out.append(
                SpecWarning(
                    constants.EVENT_PRIORITIZER_IGNORED,
                    f"spec.prioritizerPolicy.configurations[{index}] names no built-in prioritizer "
                    f"({json.dumps(name)}); it is skipped because its weight is 0",
                )
            )
    return out


def spec_warnings(placement: Placement) -> list[SpecWarning]:
    """Every part of the Placement's spec the scheduler ignores, in spec order by kind."""
    return [*toleration_warnings(placement), *prioritizer_warnings(placement)]


def untold(found: list[SpecWarning], told: frozenset[str]) -> tuple[list[SpecWarning], frozenset[str]]:
    """Of the warnings that hold now, those not told already (``told``: their messages, kept by the
    caller between passes), and the memory to keep: each situation is told once, and again only
    after it went away and came back."""
    return [w for w in found if w.message not in told], frozenset(w.message for w in found)
